"""A rule that moves another agent's releases further than the lemma allows never passes, however many agents.

``AgentStepDGD`` is the clipped Gaussian gradient rule of ``tests/fixtures/noisy_dgd.py`` on a ring of 20 agents
in which agent 2 takes a step ``K = 2`` times larger than the others. Its lemma (``2 a C`` per release from round 2,
the same for every agent) is the other agents'; the user's pair changes agent 0. It claims the exact ``(epsilon,
1e-6)`` of agent 0's releases: ``epsilon`` with ``delta(epsilon) = 1e-6`` for one Gaussian pair of ``mu_0 = 2 a C
sqrt(T - 1) / sigma`` (2% above it).

Independent truth (closed form): changing agent 2's cost between ``<g, x>`` and ``<-g, x>`` (``||g|| = C``, a pair
of the class "gradients of L2 norm at most ``C``") moves its release of every round from 2 on by exactly ``2 K a
C`` given the earlier releases, and no other agent's: one Gaussian pair of ``mu = K mu_0``, whose ``delta(epsilon)
= 0.016``, 16,000 times the claimed ``1e-6``.

The worst-case search evaluates the extremal pairs of at most eight other agents (spread over the indices: here
1, 4, 6, 9, 11, 14, 16 and 19), so agent 2's were never evaluated, and the compositions use the lemma: ``pass``.
The sensitivity prober now probes every agent's steps with the class's first extremal pair, against the lemma,
and the agents the search does not evaluate get their first extremal pairs' constructed losses compared with the
lemma on every round (``asyncdp.privacy.lemma_reach``): a late step is a witness too.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from scipy.stats import norm

import topology
from accounting.profiles import gaussian_profile_epsilon
from asyncdp import Scenario
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy
from asyncdp.privacy.other_agent_pairs import other_agents

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, STEP, CLIP = noisy_dgd.SIGMA, noisy_dgd.STEP, noisy_dgd.CLIP
K, FAST, N, HORIZON, DELTA = 2.0, 2, 20, 12, 1e-6
MU_0 = 2 * STEP * CLIP / SIGMA * math.sqrt(HORIZON - 1)
EPSILON = 1.02 * gaussian_profile_epsilon(MU_0, DELTA)


@dataclass(frozen=True)
class UniformDGD(noisy_dgd.NoisyDGD):
    """Every agent steps alike; claims ``(EPSILON, 1e-6)`` (true)."""

    name: ClassVar[str] = "test-red-uniform-dgd"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return EPSILON, DELTA


@dataclass(frozen=True)
class AgentStepDGD(UniformDGD):
    """Agent ``FAST`` steps ``K`` times further than the others; claims ``(EPSILON, 1e-6)`` (false)."""

    name: ClassVar[str] = "test-red-fast-agent-dgd"

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return noisy_dgd.scaled_step(mixed, t, agents, problem, agent=FAST, factor=K, since=1)


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper record, registered for this module's tests only."""
    with noisy_dgd.registered((UniformDGD, AgentStepDGD), lambda sc: GradientClass(CLIP, "l2"), origin=__file__):
        yield


def _pair(rule: type = AgentStepDGD, n: int = N) -> tuple[Scenario, Scenario]:
    w = 0.5 * np.eye(n)
    w[np.arange(n), (np.arange(n) - 1) % n] = 0.25
    w[np.arange(n), (np.arange(n) + 1) % n] = 0.25
    return noisy_dgd.rendezvous_pair(rule(), topology.static(w), HORIZON)


def test_the_claim_is_false_in_closed_form_and_agent_2_is_not_among_the_searched_agents():
    mu = K * MU_0
    delta = norm.cdf(-EPSILON / mu + mu / 2) - math.exp(EPSILON) * norm.cdf(-EPSILON / mu - mu / 2)
    assert delta > 1e4 * DELTA
    assert FAST not in other_agents(N, 0)


def test_an_agent_whose_step_exceeds_the_lemma_is_a_witness_though_the_search_skips_it():
    scenario, adjacent = _pair()
    report = check_privacy(scenario, adjacent, runs=1000, delta=DELTA)
    assert report.verdict == "violation"
    w = report.witness
    assert w["kind"] == "sensitivity" and w["against"] == "lemma" and w["agent"] == FAST and w["confidence"] == 1.0
    # the agents the search skips get their extremal pairs replayed and compared with the lemma: a constructed
    # Gaussian loss is ||shift||^2 / (2 sigma^2), 2 K a C against the lemma's 2 a C
    assert w["ratio"] == pytest.approx(K**2)


def test_a_rule_that_treats_every_agent_alike_still_passes():
    """The same claim without the fast agent: true, and the check passes."""
    scenario, adjacent = _pair(UniformDGD)
    report = check_privacy(scenario, adjacent, runs=1000, delta=DELTA)
    assert report.verdict == "pass"


LATE = 5
"""``LateAgentStepDGD``'s agent 2 steps ``K`` times further from this round on (after the prober's rounds)."""


@dataclass(frozen=True)
class LateAgentStepDGD(UniformDGD):
    """Agent ``FAST`` steps ``K`` times further than the others from round ``LATE`` on; claims ``(EPSILON, 1e-6)``."""

    name: ClassVar[str] = "test-red-late-fast-agent-dgd"

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return noisy_dgd.scaled_step(mixed, t, agents, problem, agent=FAST, factor=K, since=LATE)


def test_the_late_claim_is_false_in_closed_form():
    """Releases 2..LATE move by 2aC, releases LATE+1..T by 2KaC: mu^2 = 4 * 0.04 + 7 * 0.16."""
    mu = math.sqrt((LATE - 1) * (2 * STEP * CLIP) ** 2 + (HORIZON - LATE) * (2 * K * STEP * CLIP) ** 2) / SIGMA
    delta = norm.cdf(-EPSILON / mu + mu / 2) - math.exp(EPSILON) * norm.cdf(-EPSILON / mu - mu / 2)
    assert delta > 3e3 * DELTA


def test_an_agent_whose_late_steps_exceed_the_lemma_is_not_passed():
    with noisy_dgd.registered((LateAgentStepDGD,), lambda sc: GradientClass(CLIP, "l2"), origin=__file__):
        scenario, adjacent = _pair(LateAgentStepDGD)
        report = check_privacy(scenario, adjacent, runs=1000, delta=DELTA)
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert w["kind"] == "sensitivity" and w["against"] == "lemma" and w["agent"] == FAST and w["confidence"] == 1.0
    # a constructed Gaussian loss is ||shift||^2 / (2 sigma^2): 2 K a C against the lemma's 2 a C, from round LATE + 1
    assert w["round"] > LATE and w["ratio"] == pytest.approx(K**2)


@dataclass(frozen=True)
class DecayingStepDGD(noisy_dgd.NoisyDGD):
    """Every agent steps ``a / k`` in its ``k``-th update, counted in its state: release ``t`` moves by at most
    ``2 a C / (t - 1)`` (the lemma below). The prober starts each probed round from ``initial_state`` (``k = 1``),
    so it sees ``2 a C`` in every round, more than the lemma, for every agent alike: no witness. The claim is the
    exact ``(epsilon, 1e-6)`` of one Gaussian pair of ``mu^2 = sum_t (2 a C / ((t - 1) sigma))^2`` (2% above it)."""

    name: ClassVar[str] = "test-red-decaying-step-dgd"

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        x = np.array(x0, dtype=float, copy=True)
        return {"x": x, "k": np.ones(x.shape[:-1] + (1,))}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = mixed["y"]
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), CLIP)
        return {"x": problem.domain.project(z - STEP / state["k"] * g), "k": state["k"] + 1.0}

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        mu = math.sqrt(sum((2 * STEP * CLIP / ((t - 1) * SIGMA)) ** 2 for t in range(2, horizon + 1)))
        return 1.02 * gaussian_profile_epsilon(mu, DELTA), DELTA


def _decaying_lemma(sc: Any) -> np.ndarray:
    t = np.arange(1, sc.horizon + 1, dtype=float)
    return np.where(t >= 2, 2 * STEP * CLIP / np.maximum(t - 1, 1.0), 0.0)


def test_a_rule_whose_lemma_rests_on_its_state_is_not_a_witness_when_it_treats_every_agent_alike():
    with noisy_dgd.registered((DecayingStepDGD,), lambda sc: GradientClass(CLIP, "l2"), origin=__file__,
                              lemma=_decaying_lemma):
        scenario, adjacent = _pair(DecayingStepDGD, n=5)
        report = check_privacy(scenario, adjacent, runs=1000, delta=DELTA)
    assert report.verdict == "pass", report.reasons
