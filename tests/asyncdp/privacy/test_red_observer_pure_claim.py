"""``privacy check --observer node:V`` on a pure, Renyi or per-iteration claim: the observer line's verdict.

Truth: node 1 of the 6-node path (Muffliato, sigma 1, values in [0, 1]) combines ``y_0(2) = x_0 + xi_0`` in the
first exchange and solves the rest, so its view of agent 0 is Gaussian with ``mu = 1`` (``D_a = a / 2``):
``delta(epsilon) > 0`` for every finite epsilon, so no pure claim ``(epsilon, 0)`` holds against it, and
``D_2 = 1`` breaks a ``(2, 0.5)``-RDP claim. The line compared the claim's epsilon (or the form's conversion at
``--delta``, 12.93) with the view's epsilon at ``--delta`` (4.89 at 1e-6) and printed "holds against this
observer" for both.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

import numpy as np

from accounting.claim_forms import ApproxDP, PureDP, RenyiDP, ZeroConcentratedDP

from asyncdp.cli.privacy import _observer_section, observer_claim_holds
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy.observer_views import parse_observer
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.problem import Problem


@dataclass(frozen=True)
class _PureClaim(Muffliato):
    """Muffliato, claiming pure DP: false for Gaussian noise."""

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return 5.0, 0.0


@dataclass(frozen=True)
class _RenyiClaim(Muffliato):
    """Muffliato, claiming (2, 0.5)-RDP: one noisy release already has D_2 = 1."""

    def claimed_form(self, horizon: int) -> RenyiDP:
        return RenyiDP(2.0, 0.5)


def _line(rule: Muffliato) -> str:
    scenario = replace(Muffliato.example_scenario(), algorithm=rule)
    values = np.array(scenario.problem.costs.addresses)
    values[0] = 1.0 - values[0]
    adjacent = replace(scenario, problem=Problem(scenario.problem.domain, RendezvousQuadratic(values)))
    args = argparse.Namespace(seed=0, delta=1e-6, runs=10, confidence=0.95)
    return _observer_section(scenario, adjacent, parse_observer("node:1"), args)


def test_a_pure_claim_fails_against_a_node_whose_view_is_gaussian():
    text = _line(_PureClaim(sigma=1.0))
    assert "the claim (5, 0) fails against this observer" in text and "holds against" not in text


def test_a_renyi_claim_is_judged_by_the_views_renyi_divergence_not_its_conversion():
    text = _line(_RenyiClaim(sigma=1.0))
    assert "-RDP, as " in text and "fails against this observer" in text and "holds against" not in text
    assert "Renyi divergence of order 2 is 1," in text


def test_the_observer_verdict_reads_the_claims_delta_and_level():
    # pure: holds only for a view that carries nothing
    assert observer_claim_holds(PureDP(5.0), 5.0, 0.0, 0.0)[0] is True
    assert observer_claim_holds(PureDP(5.0), 5.0, 0.0, 1e-6)[0] is False
    assert observer_claim_holds(None, float("inf"), 0.0, 1.0)[0] is True  # no claim at all
    # approximate: mu = 1 has epsilon 4.887 at delta 1e-6, so delta(5) < 1e-6 < delta(4.8)
    assert observer_claim_holds(ApproxDP(5.0, 1e-6), 5.0, 1e-6, 1.0)[0] is True
    assert observer_claim_holds(ApproxDP(4.8, 1e-6), 4.8, 1e-6, 1.0)[0] is False
    # per iteration: the whole view above the claim says nothing about one iteration's part
    assert observer_claim_holds(ApproxDP(4.8, 1e-6), 4.8, 1e-6, 1.0, "iteration")[0] is None
    assert observer_claim_holds(ApproxDP(5.0, 1e-6), 5.0, 1e-6, 1.0, "iteration")[0] is True
    # Renyi and zCDP forms: mu = 1 gives D_3 = 1.5 and D_a / a = 0.5, whatever the conversion says
    assert observer_claim_holds(RenyiDP(3.0, 1.4), 14.0, 1e-6, 1.0)[0] is False
    assert observer_claim_holds(RenyiDP(3.0, 1.5), 14.0, 1e-6, 1.0)[0] is True
    assert observer_claim_holds(ZeroConcentratedDP(0.45), 14.0, 1e-6, 1.0)[0] is False
    assert observer_claim_holds(ZeroConcentratedDP(0.5), 14.0, 1e-6, 1.0)[0] is True


def test_a_pure_claim_per_iteration_fails_against_a_view_with_a_mean_shift():
    # each iteration (epsilon, 0)-DP would make the whole view (T epsilon, 0)-DP (pure guarantees compose), which no
    # Gaussian view with a mean shift is: the line said "no verdict"
    holds, why = observer_claim_holds(PureDP(5.0), 5.0, 0.0, 1.0, "iteration")
    assert holds is False and "horizon x epsilon" in why
    assert observer_claim_holds(PureDP(5.0), 5.0, 0.0, 0.0, "iteration")[0] is True
