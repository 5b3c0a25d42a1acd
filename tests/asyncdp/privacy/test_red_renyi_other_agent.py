"""A Rényi claim false for a change of another agent than the user's pair's is never `pass`.

``AgentStepDGD`` is the clipped Gaussian gradient rule of ``tests/fixtures/noisy_dgd.py`` in which agent 3 takes
a step ``K = 2`` times larger than the others from round ``LATE = 5`` on (after the rounds the sensitivity prober
probes). Its lemma (``2 a C`` per release from round 2, the same for every
agent) is agent 0's; the user's pair changes agent 0. It claims ``(alpha, epsilon)``-RDP at ``alpha = 1.5`` with
``epsilon`` the accountant's own RDP of agent 0's releases, which the claim-form step confirms.

Independent truth (closed form): fix every earlier release; changing agent 3's cost between ``<g, x>`` and
``<-g, x>`` with ``||g|| = C`` (a pair of the class "gradients of L2 norm at most ``C``") moves agent 3's next
release by exactly ``2 K a C`` and no other agent's release by ``2 a C`` in rounds 2 to ``LATE`` and by exactly
``2 K a C`` from round ``LATE + 1`` on (the update of round ``t`` is masked by the release of round ``t + 1``),
and no other agent's release. The run is an adaptive composition of Gaussian mechanisms, so ``D_alpha = alpha
sum_t mu_t^2 / 2``: ``1.5 (4 * 0.04 + 7 * 0.16) / 2 = 0.96``, 2.9 times the claimed ``0.33``. The claim's conversion to ``(epsilon, 1e-6)``
(``epsilon = 26``) is far too loose for any delta witness, so only an exact Rényi divergence refutes it.

The worst-case search evaluates the other agents' extremal pairs, but keeps agent 3's worst one only when its
profile exceeds the claimed delta at the converted epsilon (``search_evidence._refutes``): it never compares its exact
Rényi divergence with a Rényi or zCDP claim. Before a fix: ``pass``. Now every other agent's evaluated extremal
pairs are compared with the lemma round by round too (``asyncdp.privacy.lemma_reach``): agent 3's constructed
loss from round ``LATE + 1`` on is ``K^2`` times the lemma's, an exact witness.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

import topology
from accounting.claim_forms import RenyiDP
from asyncdp import Scenario
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, STEP, CLIP = noisy_dgd.SIGMA, noisy_dgd.STEP, noisy_dgd.CLIP
K, FAST, LATE, HORIZON, ALPHA = 2.0, 3, 5, 12, 1.5
RHO_0 = (HORIZON - 1) * (2 * STEP * CLIP / SIGMA) ** 2 / 2
"""The zCDP of agent 0's releases (and the lemma's): ``(T - 1) mu_0^2 / 2`` with ``mu_0 = 2 a C / sigma``."""


@dataclass(frozen=True)
class AgentStepDGD(noisy_dgd.NoisyDGD):
    """Agent ``FAST`` steps ``K`` times further than the others from round ``LATE`` on; claims ``(1.5, 1.5
    RHO_0)``-RDP."""

    name: ClassVar[str] = "test-red-agent-step-dgd"

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return noisy_dgd.scaled_step(mixed, t, agents, problem, agent=FAST, factor=K, since=LATE)

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return RenyiDP(ALPHA, ALPHA * RHO_0).epsilon_at(1e-6), 1e-6

    def claimed_form(self, horizon: int) -> RenyiDP:
        return RenyiDP(ALPHA, ALPHA * RHO_0)


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper record, registered for this module's tests only."""
    with noisy_dgd.registered((AgentStepDGD,), lambda sc: GradientClass(CLIP, "l2"), origin=__file__):
        yield


def _pair() -> tuple[Scenario, Scenario]:
    return noisy_dgd.rendezvous_pair(AgentStepDGD(), topology.static(noisy_dgd.ring(5)), HORIZON)


def test_the_claim_is_false_in_closed_form():
    """Agent 3's D_1.5 is 2.9 times the claimed epsilon."""
    mu = 2 * STEP * CLIP / SIGMA
    d_alpha = ALPHA * ((LATE - 1) * mu**2 + (HORIZON - LATE) * (K * mu) ** 2) / 2
    assert d_alpha == pytest.approx(0.96) and d_alpha > 2.9 * ALPHA * RHO_0


def test_a_renyi_claim_false_for_another_agent_is_not_passed():
    scenario, adjacent = _pair()
    report = check_privacy(scenario, adjacent, runs=1000, delta=1e-6)
    form = next(e for e in report.evidence if e.method == "claim form")
    assert form.figures["claim_confirmed"] is True  # agent 0's releases: the accountant's own RDP is the claim
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert w["kind"] == "sensitivity" and w["against"] == "lemma" and w["agent"] == FAST and w["confidence"] == 1.0
    # a constructed Gaussian loss is ||shift||^2 / (2 sigma^2): 2 K a C against the lemma's 2 a C, from round LATE + 1
    assert w["round"] > LATE and w["ratio"] == pytest.approx(K**2)
