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

import functools
import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.mechanisms import gaussian_epsilon
from asyncdp import Scenario
from asyncdp.algorithms import Algorithm
from asyncdp.papers import RoundClass
from asyncdp.privacy import check_privacy
from asyncdp.problems.costs.function_class import FunctionClass
from asyncdp.problems.domains import Box
from asyncdp.problems.online import LinearRound, UserOnlineLoss, online_problem
from asyncdp.problems.problem import Problem

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, STEP, CLIP, B = noisy_dgd.SIGMA, noisy_dgd.STEP, noisy_dgd.CLIP, noisy_dgd.CurvedDGD.correction
DELTA, T, N, T0 = 1e-5, 4, 3, 1
E = np.full(N, 0.5)


@dataclass(frozen=True)
class OnlineCurv(noisy_dgd.CurvedDGD):
    """An online gradient step plus a correction that vanishes for linear losses (module docstring)."""

    name: ClassVar[str] = "test-online-curv"
    offset: ClassVar[np.ndarray] = E

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """The lemma composed over every node's releases of rounds ``2..T`` (round adjacency reaches every node),
        with 1% to spare."""
        return 1.01 * gaussian_epsilon(math.sqrt(N * (horizon - 1)) * 2 * STEP * CLIP, SIGMA, DELTA), DELTA


def _adjacency(sc: Any) -> RoundClass:
    """Round adjacency: each node's block of a changed gradient has norm at most ``L``, so the lemma's ``2 a L``
    per release from round 2 holds for linear losses."""
    return RoundClass(CLIP, "l2")


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper record, registered for this module's tests only."""
    with noisy_dgd.registered((OnlineCurv,), _adjacency, origin=__file__):
        yield


_TARGETS = np.random.default_rng(7).uniform(-1, 1, size=(T, N))
_DOMAIN = Box(-50.0, 50.0, dim=N)


@functools.cache
def _base() -> UserOnlineLoss:
    """``f_t(x) = ||x - a_t||^2 / 20`` (gradients of norm at most 1 on a neighbourhood of the targets).

    One object: both scenarios of a pair keep the same callables for every unchanged round, so the adjacency
    check sees from the structure that only the changed round differs."""
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
    """The witness names a kinked loss of round ``T0`` against its mirror image (the worst pair: a kinked loss
    against a linear one moves node 0's release by ``2 a L + b 2 L = 1.2``): node 0's release after the kinked
    round moves by ``2 a L + b 4 L = 2.2`` (the gradient's shift plus the correction's, the correction turned the
    other way under the mirror image; the other nodes' blocks of a loss along ``e_1`` are zero), a constructed
    Gaussian loss of ``2.2^2 / 2 = 2.42`` against the ``N (2 a L)^2 / 2 = 0.06`` the lemma allows the round's
    ``N`` releases."""
    report = check_privacy(_scenario(_linear([CLIP, 0.0, 0.0])), _scenario(_linear([-CLIP, 0.0, 0.0])), runs=1000)
    w = report.witness
    assert report.verdict == "violation" and w["kind"] == "sensitivity" and w["against"] == "lemma"
    assert w["agent"] is None and w["changed_round"] == T0 and w["round"] == T0 + 1
    assert w["pair"].startswith(f"round {T0}, kinked along coordinate 0") and w["kink"]["axis"] == 0
    assert w["pair"].endswith("vs its mirror image") and w["kink"]["mirrored"]
    assert w["kink"]["scale"] == CLIP and w["claimed"] == pytest.approx(N * (2 * STEP * CLIP) ** 2 / 2)
    assert w["value"] == pytest.approx((2 * STEP * CLIP + B * 4 * CLIP) ** 2 / 2, rel=1e-4)
    assert any(f"round {T0}'s loss the kinked f(x)" in r and "mirror image" in r for r in report.reasons)


@dataclass(frozen=True)
class OnlineClip(OnlineCurv):
    """The same online step without the correction: a clipped gradient step, whose lemma is right for every loss
    of the class (non-linear ones too)."""

    name: ClassVar[str] = "test-online-clip"
    update = noisy_dgd.NoisyDGD.update


def test_a_correct_online_rule_is_not_refuted_by_the_kinked_round_pairs(monkeypatch):
    """The kinked pairs are evaluated (a spy counts them) and none exceeds the lemma: a kinked loss's gradient
    norm is below ``L``, so a clipped step moves no node's release by more than ``2 a L``."""
    seen = noisy_dgd.spy_kinked(monkeypatch)
    with noisy_dgd.registered((OnlineClip,), _adjacency, origin=__file__):
        report = check_privacy(_scenario(_linear([CLIP, 0.0, 0.0]), OnlineClip()),
                               _scenario(_linear([-CLIP, 0.0, 0.0]), OnlineClip()), runs=1000)
    # two rounds (the user's changed round 1, then round 2), two coordinates, both signs, one kink each against a
    # linear loss; kinked losses against their mirror image (or a far kink) on top, of the mirrored kinks of every
    # round and (the others) of the user's changed round
    against_linear = [p for p in seen[0] if not p.kinked_first]
    assert len(against_linear) == 8 and len(seen[0]) > 8
    assert sorted({p.round_index for p in against_linear}) == [1, 2] and {p.axis for p in seen[0]} == {0, 1}
    assert {p.round_index for p in seen[0] if p.kinked_first and " vs its mirror image" not in p.label} == {T0}
    assert report.verdict == "pass", report.reasons


def test_the_published_online_rule_is_not_refuted_by_the_kinked_round_pairs(monkeypatch):
    """DPSDA-C (Cheng, Liao and Li, arXiv 2022) clips each node's signal, so no loss of its round class (kinked
    ones included) moves a release further than its Lemma 1: its example passes with the kinked pairs evaluated
    (the user's changed round 2 and round 1, two coordinates, both signs)."""
    from asyncdp.papers.dpsda.rule import DPSDAC
    from asyncdp.problems.online import adjacent_online_problem

    seen = noisy_dgd.spy_kinked(monkeypatch)
    sc = DPSDAC.example_scenario(seed=0)
    rng = np.random.default_rng(1)
    adjacent = sc.replace(problem=adjacent_online_problem(sc.problem, 2, features=rng.uniform(-0.1, 0.1, (5, 14)),
                                                          labels=rng.uniform(-0.1, 0.1, 5)))
    report = check_privacy(sc, adjacent, runs=1000)
    against_linear = [p for p in seen[0] if not p.kinked_first]
    assert len(against_linear) == 8 and sorted({p.round_index for p in against_linear}) == [1, 2]
    assert any(p.mirrored for p in seen[0]) and any(p.prime_position is not None for p in seen[0])
    assert report.verdict == "pass", report.reasons
