"""A correct rule whose step decays with an update counter kept in its state is not refuted by the prober.

``CountedDecayDGD`` is a user's private distributed gradient method: agent ``i`` releases ``x_i + b Lap`` (pure
claim) or ``x_i + sigma N`` (zCDP claim), and from the mixed release ``z`` steps ``x = z - a / sqrt(k) clip(g(z),
C)`` with ``k`` its own update counter, kept in its state (as a researcher writes it for asynchronous agents).
Independent truth (closed form): ``k`` is the number of updates, the same under both problems, so given the
released past release ``t >= 2`` moves by at most ``2 a C / sqrt(t - 1)`` (L2; ``sqrt(n)`` more in L1), the
lemma; the noise is calibrated to the composition of those bounds, so the claim holds.

The sensitivity prober started every probed round from ``initial_state(z)``, i.e. ``k = 0``: it probed round
2's update with the step ``a`` (that of round 1) against the lemma's ``a / sqrt(2)`` and reported a witness
(``kind`` ``sensitivity``, ``against`` ``declaration``): a false ``violation``, every realized method clean (the
replay's largest loss 0.9 against the claimed 3). Now a rule whose state after an update is not
``initial_state`` of its decision is probed in round ``t`` from its state after ``t - 1`` noise-free rounds
(``k = t - 1``), and the report says so.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.claim_forms import PureDP, ZeroConcentratedDP
from asyncdp import Async, Lockstep, Scenario, rendezvous_problem
from asyncdp.algorithms import Algorithm, Channel, NoiseDeclaration
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy
from asyncdp.privacy.sensitivity import state_beyond_decision, state_follows_history

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]

STEP, CLIP, T, EPS = 0.5, 1.0, 10, 3.0


def sens(t: int, dim: int, mechanism: str) -> float:
    """Release ``t`` masks ``x`` after ``t - 1`` updates, the last with step ``a / sqrt(t - 1)``."""
    if t == 1:
        return 0.0
    return (math.sqrt(dim) if mechanism == "laplace" else 1.0) * 2 * STEP * CLIP / math.sqrt(t - 1)


@dataclass(frozen=True)
class CountedDecayDGD(Algorithm):
    """Releases ``x + noise``; steps ``x = z - a / sqrt(k) clip(g(z), C)``, ``k`` its own update counter."""

    dim: int = 0
    name: ClassVar[str] = "test-counted-decay-dgd"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"),)

    def bind(self, problem: Any) -> CountedDecayDGD:
        return replace(self, dim=problem.dim)

    def scale(self) -> float:
        mech = self.channels[0].mechanism
        s = [sens(t, self.dim, mech) for t in range(1, T + 1)]
        return sum(s) / EPS if mech == "laplace" else math.sqrt(sum(v * v for v in s))  # rho = 1/2

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        x = np.array(x0, dtype=float, copy=True)
        return {"x": x, "k": np.zeros(x.shape[:-1] + (1,))}

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        mech = self.channels[0].mechanism
        return NoiseDeclaration(mech, self.scale(), self.dim, sens(t, self.dim, mech))

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + self.scale() * noise["y"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        k = state["k"] + 1
        g = clip_l2(problem.costs.gradient(agents, mixed["y"], round_index=t), CLIP)
        return {"x": problem.domain.project(mixed["y"] - STEP / np.sqrt(k) * g), "k": k}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]

    def claimed_form(self, horizon: int) -> Any:
        return PureDP(EPS) if self.channels[0].mechanism == "laplace" else ZeroConcentratedDP(0.5)


@dataclass(frozen=True)
class GaussianCountedDecayDGD(CountedDecayDGD):
    name: ClassVar[str] = "test-counted-decay-dgd-gaussian"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "gaussian"),)


def lemma(scenario: Any) -> np.ndarray:
    mech = scenario.algorithm.channels[0].mechanism
    return np.array([sens(t, scenario.problem.dim, mech) for t in range(1, scenario.horizon + 1)])


def adjacency(scenario: Any) -> GradientClass:
    return GradientClass(CLIP, "l1" if scenario.algorithm.channels[0].mechanism == "laplace" else "l2")


def make(rule: type, timing: Any) -> tuple[Scenario, Scenario]:
    ring = np.zeros((4, 4))
    for i in range(4):
        ring[i, [i, (i + 1) % 4, (i - 1) % 4]] = 1 / 3
    problem = rendezvous_problem(np.random.default_rng(7).uniform(-1.0, 1.0, size=(4, 2)), low=-50.0, high=50.0)
    sc = Scenario(problem, topology.static(ring), rule(), horizon=T, seed=7, timing=timing)
    return sc, sc.replace(problem=problem.adjacent(0, address=[-1.0, 1.0]))


@pytest.mark.parametrize("rule", [CountedDecayDGD, GaussianCountedDecayDGD], ids=["laplace-pure", "gaussian-zcdp"])
@pytest.mark.parametrize("timing", [Lockstep(), Async()], ids=["lockstep", "async"])
def test_a_correct_counted_decay_is_not_refuted_by_the_prober(rule, timing):
    sc, adj = make(rule, timing)
    with noisy_dgd.registered([rule], adjacency, origin=__file__, lemma=lemma):
        report = check_privacy(sc, adj, runs=200, search_examples=0)
    assert report.verdict == "pass", (report.witness, report.reasons)
    assert any("prober: state entry 'k'" in r and "t - 1 noise-free" in r for r in report.reasons), report.reasons


def test_a_rule_whose_state_is_its_decision_is_probed_in_every_round():
    sc, _ = make(CountedDecayDGD, Lockstep())
    assert "state entry 'k'" in state_beyond_decision(sc, 0)
    assert state_beyond_decision(sc.replace(algorithm=noisy_dgd.NoisyDGD()), 0) is None


# -- a state that follows the releases: the noise-free rounds are not every state of round t ---------------------
RESET, RESET_EPS, RESET_STEP = 3.0, 2.0, 0.1  # ||z - x|| resetting s to 1 (rare under the noise); claim; a


def halving(t: int, dim: int) -> float:
    """The wrong lemma: release ``t`` moves by ``2 a C sqrt(n) / 2^(t - 2)``, as if ``s`` always halved."""
    return 0.0 if t == 1 else math.sqrt(dim) * 2 * RESET_STEP * CLIP * 0.5 ** (t - 2)


@dataclass(frozen=True)
class ResetScaleDGD(CountedDecayDGD):
    """Steps ``x = z - a s clip(g(z), C)``; ``s`` (1 at first) halves each round, back to 1 when ``||z - x|| > 3``.

    Truth: ``s = 1`` in every round has positive probability (Laplace noise is unbounded), and then release
    ``t >= 2`` moves by ``2 a C sqrt(n)`` (opposite clipped gradients at ``z``): 2^(t-2) times the lemma, so the
    pure claim calibrated to the lemma is false. The noise-free rounds halve ``s`` (``z = x``): a probe from them
    agrees with the lemma; a probe from ``initial_state(z)`` (``s = 1``) refutes it; under the declared noise
    (scale 0.28) the runs of the scenario below and the worst-case search never reset ``s``.
    """

    name: ClassVar[str] = "test-reset-scale-dgd"

    def scale(self) -> float:
        return sum(halving(t, self.dim) for t in range(1, T + 1)) / RESET_EPS

    def claimed_form(self, horizon: int) -> Any:
        return PureDP(RESET_EPS)

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        x = np.array(x0, dtype=float, copy=True)
        return {"x": x, "s": np.ones(x.shape[:-1] + (1,))}

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        return NoiseDeclaration("laplace", self.scale(), self.dim, halving(t, self.dim))

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z, s = mixed["y"], state["s"]
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), CLIP)
        far = np.linalg.norm(z - state["x"], axis=-1, keepdims=True) > RESET
        return {"x": problem.domain.project(z - RESET_STEP * s * g), "s": np.where(far, 1.0, 0.5 * s)}


def halving_lemma(scenario: Any) -> np.ndarray:
    return np.array([halving(t, scenario.problem.dim) for t in range(1, scenario.horizon + 1)])


def reset_scenarios() -> tuple[Scenario, Scenario]:
    """Five agents on a ring keeping half, agent 0 at (1, 1) or (-1, -1): only the prober sees the wrong lemma."""
    w = 0.5 * np.eye(5)
    w[(np.arange(5) + 1) % 5, np.arange(5)] += 0.5
    addresses = np.random.default_rng(7).uniform(-1.0, 1.0, size=(5, 2))
    addresses[0] = [1.0, 1.0]
    problem = rendezvous_problem(addresses, low=-5.0, high=5.0)
    sc = Scenario(problem, topology.static(w), ResetScaleDGD(), horizon=T, seed=7)
    return sc, sc.replace(problem=problem.adjacent(0, address=[-1.0, -1.0]))


def test_a_wrong_lemma_at_a_reachable_first_round_state_is_still_refuted():
    # was pass: only the noise-free rounds' state (s = 1 / 2^(t-1)) was probed, and nothing else saw s = 1
    sc, adj = reset_scenarios()
    with noisy_dgd.registered([ResetScaleDGD], adjacency, origin=__file__, lemma=halving_lemma):
        report = check_privacy(sc, adj, runs=200, search_examples=0)
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert w["kind"] == "sensitivity" and w["step"] == "update step U (from initial_state(z))", w
    assert w["value"] > 1.9 * w["claimed"], w  # s = 1 where the lemma has s = 1/2 (round 2) or less


def test_a_counter_is_history_free_and_a_reset_scale_is_not():
    sc, _ = make(CountedDecayDGD, Lockstep())
    assert state_follows_history(sc, 0) is None
    assert "state entry 's'" in state_follows_history(reset_scenarios()[0], 0)


@dataclass(frozen=True)
class LateCounterDGD(CountedDecayDGD):
    """Counts its updates from round 2 on: after round 1 its state is ``initial_state`` of its decision."""

    name: ClassVar[str] = "test-late-counter-dgd"

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {**super().update(state, mixed, t, agents, problem), "k": state["k"] + (t >= 2)}


def test_a_counter_that_starts_late_is_seen_in_a_later_round():
    sc, _ = make(LateCounterDGD, Lockstep())
    assert "state entry 'k' after round 2's update" in state_beyond_decision(sc, 0)  # was None: round 1 only
    assert state_beyond_decision(sc, 0, rounds=1) is None
    assert state_follows_history(sc, 0) is None
