"""Red team: the observer's line of ``privacy check --observer`` when its exact loss is infinite.

A researcher's Muffliato variant exchanges raw values in round 1 (the static path, ``W`` from round 1 on) and noises
only from round 2: node 1 receives agent 0's value itself, ``y_0(1) = x_0``. Its view's mean moves outside the range
of its noise (exact: ``D_alpha = inf``), and no finite claim holds against it. The line said ``exact: no verdict
against this observer from this figure`` (``claim_holds: null`` in ``--json``): the exact branch read finite
epsilons only. A coalition that holds the changed agent's datum (``nodes:0,1``) still gets no verdict: DP does not
protect a datum from its holder. On a random schedule one run's infinity is no verdict either (one schedule).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

import numpy as np
import pytest

import topology
from asyncdp.cli.privacy import _observer_section
from asyncdp.engine.timing import Async
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy.observer_views import parse_observer
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.problem import Problem


@dataclass(frozen=True)
class _RawFirstExchange(Muffliato):
    """Muffliato noised in round 2 only: round 1 exchanges the raw values (on a topology with links in round 1)."""

    def noise_scale(self, t: int) -> float:
        return float(self.sigma) if t == 2 else 0.0


def _section(observer: str, **changes) -> tuple[str, dict]:
    base = Muffliato.example_scenario()
    scenario = replace(base, algorithm=_RawFirstExchange(sigma=1.0), topology=topology.static(base.topology.weights(2)),
                       **changes)
    values = np.array(scenario.problem.costs.addresses)
    values[0] = 1.0 - values[0]
    adjacent = replace(scenario, problem=Problem(scenario.problem.domain, RendezvousQuadratic(values)))
    record: dict = {}
    args = argparse.Namespace(seed=0, delta=1e-6, runs=10, confidence=0.95)
    return _observer_section(scenario, adjacent, parse_observer(observer), args, record), record


def test_an_exact_infinite_loss_fails_the_claim():
    text, record = _section("node:1")
    assert "D_alpha=inf" in text and "[exact]" in text
    assert "fails against this observer" in text and "no verdict" not in text, text
    assert record["claim_holds"] is False


@pytest.mark.parametrize(("observer", "changes"), [("nodes:0,1", {}), ("node:1", {"timing": Async()})],
                         ids=["holds-the-datum", "random-schedule"])
def test_no_verdict_for_the_datums_holder_or_one_random_schedule(observer, changes):
    text, record = _section(observer, **changes)
    assert "D_alpha=inf" in text and "fails against" not in text and record["claim_holds"] is None, text


def test_an_infinite_lower_estimate_stays_no_verdict():
    """Review of the exact branch: only an infinity labelled exact fails the claim. The faint-link path
    (tests/asyncdp/privacy/test_red_faint_link.py, ``W[0, 1] = 1e-17``) noised in round 2 only: node 2's computed
    loss from agent 0 is infinite, a lower estimate (the truth is 1), and the line stays no verdict."""
    from ..privacy.test_red_faint_link import _faint_path

    scenario = _faint_path().replace(algorithm=_RawFirstExchange(sigma=1.0))  # W[0, 1] faint, identity in round 1
    values = np.array(scenario.problem.costs.addresses)
    values[0] = 1.0 - values[0]
    adjacent = replace(scenario, problem=Problem(scenario.problem.domain, RendezvousQuadratic(values)))
    record: dict = {}
    args = argparse.Namespace(seed=0, delta=1e-6, runs=10, confidence=0.95)
    text = _observer_section(scenario, adjacent, parse_observer("node:2"), args, record)
    assert "D_alpha=inf" in text and "[lower estimate]" in text and record["claim_holds"] is None, text
