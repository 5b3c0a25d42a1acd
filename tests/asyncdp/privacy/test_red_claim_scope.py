"""The accountant's confirmation of a claim covers a change of every agent, not only the user's pair's agent.

``UnicastDGD`` is the clipped Gaussian gradient rule of ``tests/fixtures/noisy_dgd.py`` run in unicast mode on a
digraph where agent 0 sends to one neighbour and agent 3 to four: each copy carries its own noise, so every round
agent 3 releases four Gaussian values to agent 0's one. The lemma (``2 a C`` per release from round 2) is right
for every copy. The rule claims ``(alpha, epsilon)``-RDP at ``alpha = 1.5`` with ``epsilon`` the RDP of agent 0's
releases: over the run, and (``IterationUnicastDGD``) per iteration.

Independent truth (closed form): fix every earlier release; changing agent 3's cost between ``<g, x>`` and
``<-g, x>`` with ``||g|| = C`` moves each of its four copies by exactly ``2 a C`` from round 2 on (no other agent's
release moves). The run is an adaptive composition of ``4 (T - 1)`` Gaussian mechanisms with ``mu = 2 a C /
sigma``, so ``D_1.5 = 1.5 * 4 (T - 1) mu^2 / 2``, four times the claim (one round: ``1.5 * 4 mu^2 / 2``, four
times the per-iteration claim). The conversions to ``(epsilon, 1e-6)`` (``epsilon`` about 26) are far too loose
for a delta witness.

The claim-form step confirmed the claim with the accountant's RDP of agent 0's releases only (and a per-iteration
claim's compositions read agent 0's rounds only), so both checks said ``pass``. On a digraph where every agent
sends to the same number of neighbours the claim is true, and the check still passes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.claim_forms import RenyiDP
from asyncdp import Scenario
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, STEP, CLIP = noisy_dgd.SIGMA, noisy_dgd.STEP, noisy_dgd.CLIP
HORIZON, ALPHA, DELTA = 12, 1.5, 1e-6
MU = 2 * STEP * CLIP / SIGMA
"""The ``mu`` of one release from round 2 on (the lemma's shift over the noise's standard deviation)."""


@dataclass(frozen=True)
class UnicastDGD(noisy_dgd.NoisyDGD):
    """Claims the RDP of agent 0's releases over the run: ``(1.5, 1.5 (T - 1) mu^2 / 2)``."""

    name: ClassVar[str] = "test-red-unicast-dgd"

    def claimed_form(self, horizon: int) -> RenyiDP:
        return RenyiDP(ALPHA, ALPHA * (horizon - 1) * MU**2 / 2)

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.claimed_form(horizon).epsilon_at(DELTA), DELTA


@dataclass(frozen=True)
class IterationUnicastDGD(noisy_dgd.NoisyDGD):
    """Claims the RDP of one release of agent 0 per iteration: ``(1.5, 1.5 mu^2 / 2)``."""

    name: ClassVar[str] = "test-red-unicast-iteration-dgd"
    claim_level: ClassVar[str] = "iteration"

    def claimed_form(self, horizon: int) -> RenyiDP:
        return RenyiDP(ALPHA, ALPHA * MU**2 / 2)

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.claimed_form(horizon).epsilon_at(DELTA), DELTA


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper records, registered for this module's tests only."""
    with noisy_dgd.registered((UnicastDGD, IterationUnicastDGD), lambda sc: GradientClass(CLIP, "l2"),
                              origin=__file__):
        yield


def _hub_weights(n: int = 5, hub: int = 3) -> np.ndarray:
    """Row-stochastic: agent ``i`` hears ``i - 1`` and the hub; the hub hears only ``hub - 1``.

    Out-neighbours: agent 0 sends to agent 1 only, the hub to every other agent.
    """
    w = np.zeros((n, n))
    for i in range(n):
        w[i, i] = 0.5
        w[i, (i - 1) % n] += 0.25
        w[i, hub] += 0.25
    w[hub] = 0.0
    w[hub, hub] = w[hub, hub - 1] = 0.5
    return w


def _pair(rule: type, weights: np.ndarray) -> tuple[Scenario, Scenario]:
    return noisy_dgd.rendezvous_pair(rule(), topology.static(weights, directed=True), HORIZON, mode="unicast")


def test_the_digraph_gives_agent_3_four_receivers_and_agent_0_one():
    w = _hub_weights()
    out_degree = (w > 0).sum(axis=0) - 1  # column j: who hears j, less j itself
    assert out_degree[0] == 1 and out_degree[3] == 4


def test_the_claims_are_false_in_closed_form():
    """Agent 3's D_1.5 is four times each claim (over the run and per iteration)."""
    run = UnicastDGD().claimed_form(HORIZON).epsilon
    assert ALPHA * 4 * (HORIZON - 1) * MU**2 / 2 == pytest.approx(4 * run)
    one = IterationUnicastDGD().claimed_form(HORIZON).epsilon
    assert ALPHA * 4 * MU**2 / 2 == pytest.approx(4 * one)


@pytest.mark.parametrize("rule", [UnicastDGD, IterationUnicastDGD])
def test_a_renyi_claim_that_only_the_pairs_agent_meets_is_not_confirmed(rule):
    scenario, adjacent = _pair(rule, _hub_weights())
    report = check_privacy(scenario, adjacent, runs=1000, delta=DELTA)
    assert report.verdict != "pass"
    form = next(e for e in report.evidence if e.method == "claim form")
    assert form.figures["claim_confirmed"] is False and form.doubt is not None and "agent 3" in form.doubt


def test_the_claim_passes_when_every_agent_sends_as_many_copies():
    """A directed ring: one receiver each, so agent 0's releases are every agent's; the claim is true."""
    n = 5
    w = 0.5 * np.eye(n)
    w[np.arange(n), (np.arange(n) - 1) % n] = 0.5
    scenario, adjacent = _pair(UnicastDGD, w)
    report = check_privacy(scenario, adjacent, runs=1000, delta=DELTA)
    assert report.verdict == "pass"
