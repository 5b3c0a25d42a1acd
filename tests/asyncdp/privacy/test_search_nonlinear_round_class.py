"""Round adjacency: a sensitivity above the lemma that only a non-linear loss of the round class shows.

``OnlineCurv`` is an online gradient step (each node its block of ``grad f_t``, as in the rule of Cheng, Liao and
Li, arXiv 2022) plus a correction that vanishes for linear losses: ``x = z - a clip(g(z)) - b d 1{||d|| > 1/2}``
with ``d = clip(g(z)) - clip(g(z + e))``, ``g`` the node's block of ``grad f_t`` and ``e = (1/2, ..., 1/2)``.
For every linear loss ``d = 0``: the user's lemma (``2 a L = 0.2`` per release) holds for every pair the
worst-case search draws (linear losses in one round) and for the user's pair (opposite linear losses in round
``t0``), so nothing else sees the correction. The round class (round ``t0``'s losses with gradients of L2 norm
at most ``L``) also holds ``f(x) = L sqrt((x_1 - c)^2 + 1e-4)``: where node 0's ``z_1`` lies within ``1/2``
below the kink ``c``, ``||d|| ~ 2 L`` and its release moves by about ``b 2 L = 1``, five times the lemma (the
check on that pair finds it: a coverage violation). The worst-case search therefore evaluates kinked losses of
the class in the changed rounds too, placed at the states the nodes read there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.mechanisms import gaussian_epsilon
from asyncdp import Scenario
from asyncdp.algorithms import Algorithm, Channel, NoiseDeclaration
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import Paper, RoundClass, register, unregister
from asyncdp.privacy import check_privacy
from asyncdp.problems.costs.function_class import FunctionClass
from asyncdp.problems.domains import Box
from asyncdp.problems.online import LinearRound, UserOnlineLoss, online_problem
from asyncdp.problems.problem import Problem

SIGMA, STEP, CLIP, B, DELTA, T, N, T0 = 1.0, 0.1, 1.0, 0.5, 1e-5, 4, 3, 1
E = np.full(N, 0.5)


@dataclass(frozen=True)
class OnlineCurv(Algorithm):
    """An online gradient step plus a correction that vanishes for linear losses (module docstring)."""

    dim: int = 0
    name: ClassVar[str] = "test-online-curv"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "gaussian"),)

    def bind(self, problem: Any) -> OnlineCurv:
        return replace(self, dim=problem.dim)

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {"x": np.array(x0, dtype=float, copy=True)}

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        return NoiseDeclaration("gaussian", SIGMA, self.dim, 0.0 if t == 1 else 2 * STEP * CLIP)

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + SIGMA * noise["y"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = mixed["y"]
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), CLIP)
        d = g - clip_l2(problem.costs.gradient(agents, z + E, round_index=t), CLIP)
        d = np.where(np.linalg.norm(d, axis=-1, keepdims=True) > 0.5, d, 0.0)
        return {"x": problem.domain.project(z - STEP * g - B * d)}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """The lemma composed over every node's releases of rounds ``2..T`` (round adjacency reaches every node),
        with 1% to spare."""
        return 1.01 * gaussian_epsilon(math.sqrt(N * (horizon - 1)) * 2 * STEP * CLIP, SIGMA, DELTA), DELTA


def _lemma(sc: Any) -> np.ndarray:
    """``2 a L`` per release from round 2: each node's block of a changed gradient has norm at most ``L``."""
    out = np.full(sc.horizon, 2 * STEP * CLIP)
    out[0] = 0.0
    return out


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper record, registered for this module's tests only (the registry is process-wide: other
    tests enumerate every registered rule)."""
    register(Paper(OnlineCurv.name, (OnlineCurv,), lemma=_lemma, reference="a test's own lemma",
                   adjacency=lambda sc: RoundClass(CLIP, "l2")))
    yield
    unregister(OnlineCurv.name)


_TARGETS = np.random.default_rng(7).uniform(-1, 1, size=(T, N))
_DOMAIN = Box(-50.0, 50.0, dim=N)


def _base() -> UserOnlineLoss:
    """``f_t(x) = ||x - a_t||^2 / 20`` (gradients of norm at most 1 on a neighbourhood of the targets)."""
    return UserOnlineLoss(lambda t, x: float((x - _TARGETS[t - 1]) @ (x - _TARGETS[t - 1])) / 20,
                          lambda t, x: (x - _TARGETS[t - 1]) / 10, FunctionClass(gradient_bound=CLIP), dim=N,
                          num_rounds=T, num_nodes=N)


def _linear(g: list[float]) -> Problem:
    return online_problem(LinearRound(_base(), T0, g), _DOMAIN)


def _kinked(c: float) -> Problem:
    """Round ``T0``'s loss ``L sqrt((x_1 - c)^2 + 1e-4)`` (gradient norm below ``L``), the other rounds kept."""
    def value(t: int, x: np.ndarray) -> float:
        return CLIP * math.sqrt((x[0] - c) ** 2 + 1e-4)

    def grad(t: int, x: np.ndarray) -> np.ndarray:
        out = np.zeros(N)
        out[0] = CLIP * (x[0] - c) / math.sqrt((x[0] - c) ** 2 + 1e-4)
        return out

    return online_problem(_base().with_round(T0, value_fn=value, gradient_fn=grad), _DOMAIN)


def _scenario(problem: Problem, algorithm: Algorithm | None = None) -> Scenario:
    return Scenario(problem, topology.static(np.full((N, N), 1 / N)), algorithm or OnlineCurv(), horizon=T, seed=3)


def test_the_kinked_loss_of_the_round_class_moves_a_release_five_times_the_lemma():
    report = check_privacy(_scenario(_kinked(0.3)), _scenario(_kinked(40.0)), runs=1000)
    assert report.verdict == "violation" and report.witness["kind"] == "coverage", report.reasons


def test_a_leak_only_nonlinear_losses_show_is_not_passed_on_a_linear_round_pair():
    report = check_privacy(_scenario(_linear([CLIP, 0.0, 0.0])), _scenario(_linear([-CLIP, 0.0, 0.0])), runs=1000)
    assert report.verdict != "pass", report.reasons


def test_the_kinked_round_pair_is_an_exact_witness_against_the_lemma():
    """The witness names a kinked loss of round ``T0`` and its round's loss is the kink's: node 0's release after
    the kinked round moves by ``2 a L + b 2 L = 1.2`` (the linear shift plus the correction; the other nodes'
    blocks of a loss along ``e_1`` are zero), a constructed Gaussian loss of ``1.2^2 / 2 = 0.72`` against the
    ``N (2 a L)^2 / 2 = 0.06`` the lemma allows the round's ``N`` releases."""
    report = check_privacy(_scenario(_linear([CLIP, 0.0, 0.0])), _scenario(_linear([-CLIP, 0.0, 0.0])), runs=1000)
    w = report.witness
    assert report.verdict == "violation" and w["kind"] == "sensitivity" and w["against"] == "lemma"
    assert w["agent"] is None and w["changed_round"] == T0 and w["round"] == T0 + 1
    assert w["pair"].startswith(f"round {T0}, kinked along coordinate 0") and w["kink"]["axis"] == 0
    assert w["kink"]["scale"] == CLIP and w["claimed"] == pytest.approx(N * (2 * STEP * CLIP) ** 2 / 2)
    assert w["value"] == pytest.approx((2 * STEP * CLIP + B * 2 * CLIP) ** 2 / 2, rel=1e-4)
    assert any(f"round {T0}'s loss f(x) = <g, x>" in r and "kinked" in r for r in report.reasons)


@dataclass(frozen=True)
class OnlineClip(OnlineCurv):
    """The same online step without the correction: a clipped gradient step, whose lemma is right for every loss
    of the class (non-linear ones too)."""

    name: ClassVar[str] = "test-online-clip"

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = mixed["y"]
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), CLIP)
        return {"x": problem.domain.project(z - STEP * g)}


def test_a_correct_online_rule_is_not_refuted_by_the_kinked_round_pairs(monkeypatch):
    """The kinked pairs are evaluated (a spy counts them) and none exceeds the lemma: a kinked loss's gradient
    norm is below ``L``, so a clipped step moves no node's release by more than ``2 a L``."""
    from asyncdp.privacy import worst_case

    seen: list[list[Any]] = []
    real = worst_case._evaluate_kinked

    def spy(fam: Any, evaluated: Any, scenario: Any, **kw: Any) -> None:
        real(fam, evaluated, scenario, **kw)
        seen.append(list(evaluated.kinked.values()))

    monkeypatch.setattr(worst_case, "_evaluate_kinked", spy)
    register(Paper(OnlineClip.name, (OnlineClip,), lemma=_lemma, reference="a test's own lemma",
                   adjacency=lambda sc: RoundClass(CLIP, "l2")))
    try:
        report = check_privacy(_scenario(_linear([CLIP, 0.0, 0.0]), OnlineClip()),
                               _scenario(_linear([-CLIP, 0.0, 0.0]), OnlineClip()), runs=1000)
    finally:
        unregister(OnlineClip.name)
    # two rounds (the user's changed round 1, then round 2), two coordinates, both signs, one kink each
    assert seen and len(seen[0]) == 8
    assert sorted({p.round_index for p in seen[0]}) == [1, 2] and {p.axis for p in seen[0]} == {0, 1}
    assert report.verdict == "pass", report.reasons


def test_the_published_online_rule_is_not_refuted_by_the_kinked_round_pairs(monkeypatch):
    """DPSDA-C (Cheng, Liao and Li, arXiv 2022) clips each node's signal, so no loss of its round class (kinked
    ones included) moves a release further than its Lemma 1: its example passes with the kinked pairs evaluated
    (the user's changed round 2 and round 1, two coordinates, both signs)."""
    from asyncdp.papers.dpsda.rule import DPSDAC
    from asyncdp.problems.online import adjacent_online_problem
    from asyncdp.privacy import worst_case

    seen: list[list[Any]] = []
    real = worst_case._evaluate_kinked

    def spy(fam: Any, evaluated: Any, scenario: Any, **kw: Any) -> None:
        real(fam, evaluated, scenario, **kw)
        seen.append(list(evaluated.kinked.values()))

    monkeypatch.setattr(worst_case, "_evaluate_kinked", spy)
    sc = DPSDAC.example_scenario(seed=0)
    rng = np.random.default_rng(1)
    adjacent = sc.replace(problem=adjacent_online_problem(sc.problem, 2, features=rng.uniform(-0.1, 0.1, (5, 14)),
                                                          labels=rng.uniform(-0.1, 0.1, 5)))
    report = check_privacy(sc, adjacent, runs=1000)
    assert seen and len(seen[0]) == 8 and sorted({p.round_index for p in seen[0]}) == [1, 2]
    assert report.verdict == "pass", report.reasons
