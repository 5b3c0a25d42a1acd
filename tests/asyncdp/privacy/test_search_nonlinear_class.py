"""A sensitivity above the lemma that only a non-linear cost of the class shows.

``CurvDGD`` steps ``x = z - a clip(g(z)) - b d 1{||d|| > 1/2}`` with ``d = clip(g(z)) - clip(g(z + e))``,
``e = (1/2, 0)``. For every linear cost ``d = 0``: the user's lemma (``2 a C = 0.2`` per release) holds for
every pair the worst-case search draws (linear costs only) and for the user's pair (opposite linear costs),
so the prober and coverage see nothing either and the check says ``pass``. The class ("gradients of L2 norm
at most ``C``") also holds ``f(x) = C sqrt((x_1 - c)^2 + 1e-4)``: where ``z_1`` lies within ``1/2`` below the
kink ``c``, ``||d|| ~ 2 C`` and the release moves by about ``b 2 C = 1``, five times the lemma (the check on
that pair finds it: a coverage violation). The worst-case search therefore also evaluates kinked members of the
class placed at the states the runs visit (:mod:`asyncdp.privacy.kinked`): on the linear pair their exact
constructed loss exceeds what the lemma allows, and a correct clipped-gradient rule is not refuted by them.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.mechanisms import gaussian_epsilon
from asyncdp import Scenario, rendezvous_problem
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy
from asyncdp.problems.costs.function_class import FunctionClass
from asyncdp.problems.costs.override import LinearOverride
from asyncdp.problems.costs.user import UserCost
from asyncdp.problems.problem import Problem

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, STEP, CLIP, B = noisy_dgd.SIGMA, noisy_dgd.STEP, noisy_dgd.CLIP, noisy_dgd.CurvedDGD.correction
DELTA, T = 1e-5, 10
E = np.array([0.5, 0.0])


@dataclass(frozen=True)
class CurvDGD(noisy_dgd.CurvedDGD):
    """A gradient step plus a correction that vanishes for linear costs (module docstring)."""

    name: ClassVar[str] = "test-curv-dgd"
    offset: ClassVar[np.ndarray] = E

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """The PLD of ``horizon - 1`` Gaussian releases of the lemma's shift, with 1% to spare."""
        return 1.01 * gaussian_epsilon(math.sqrt(horizon - 1) * 2 * STEP * CLIP, SIGMA, DELTA), DELTA


def _adjacency(sc: Any) -> GradientClass:
    return GradientClass(CLIP, "l2")


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper record, registered for this module's tests only."""
    with noisy_dgd.registered((CurvDGD,), _adjacency, origin=__file__):
        yield

N = 5
_W = noisy_dgd.ring(N)
_ADDRESSES = np.random.default_rng(7).uniform(-1, 1, size=(N, 2))
_BASE = rendezvous_problem(_ADDRESSES, low=-50.0, high=50.0)


def _linear(g: list[float]) -> Problem:
    return Problem(_BASE.domain, LinearOverride(_BASE.costs, 0, g))


def _kinked(c: float) -> Problem:
    """Agent 0's cost ``C sqrt((x_1 - c)^2 + 1e-4)`` (gradient norm below ``C``), the others' rendezvous costs."""
    def value(x: np.ndarray) -> float:
        return CLIP * math.sqrt((x[0] - c) ** 2 + 1e-4)

    def grad(x: np.ndarray) -> np.ndarray:
        return np.array([CLIP * (x[0] - c) / math.sqrt((x[0] - c) ** 2 + 1e-4), 0.0])

    values = [value] + [(lambda a: lambda x: 0.5 * float((x - a) @ (x - a)))(_ADDRESSES[i]) for i in range(1, N)]
    grads = [grad] + [(lambda a: lambda x: x - a)(_ADDRESSES[i]) for i in range(1, N)]
    return Problem(_BASE.domain, UserCost(values, grads, FunctionClass(gradient_bound=100.0), dim=2))


def _scenario(problem: Problem) -> Scenario:
    return Scenario(problem, topology.static(_W), CurvDGD(), horizon=T, seed=3)


def test_the_kinked_pair_of_the_class_moves_a_release_five_times_the_lemma():
    report = check_privacy(_scenario(_kinked(0.3)), _scenario(_kinked(40.0)), runs=1000)
    assert report.verdict == "violation" and report.witness["kind"] == "coverage"
    assert any("shift 0.99" in r and "> bound 0.2" in r for r in report.reasons)


def test_a_leak_only_nonlinear_costs_show_is_not_passed_on_a_linear_pair():
    report = check_privacy(_scenario(_linear([CLIP, 0.0])), _scenario(_linear([-CLIP, 0.0])), runs=1000)
    assert report.verdict != "pass"


def test_the_kinked_pair_is_an_exact_witness_against_the_lemma():
    """The witness names a kinked pair of the class, and its per-round loss is the kink's. Against a linear cost
    the release after the kinked round moves by ``2 a C + b 2 C = 1.2`` (the linear shift plus the correction);
    the largest excess is a kinked cost against its mirror image, whose corrections are opposite: ``2 a C + b 4 C
    = 2.2``, a constructed Gaussian loss of ``2.2^2 / 2 = 2.42`` against the lemma's ``0.2^2 / 2 = 0.02``."""
    report = check_privacy(_scenario(_linear([CLIP, 0.0])), _scenario(_linear([-CLIP, 0.0])), runs=1000)
    w = report.witness
    assert report.verdict == "violation" and w["kind"] == "sensitivity" and w["against"] == "lemma"
    assert w["pair"].startswith("mirrored kink along coordinate 0") and w["kink"]["axis"] == 0
    assert w["kink"]["mirrored"] and w["gradient"] is None
    assert w["kink"]["scale"] == CLIP and w["claimed"] == pytest.approx((2 * STEP * CLIP) ** 2 / 2)
    assert w["value"] == pytest.approx((2 * STEP * CLIP + B * 4 * CLIP) ** 2 / 2, rel=1e-4)


@dataclass(frozen=True)
class ClipDGD(CurvDGD):
    """The same step without the correction: a clipped gradient step, whose lemma is right for every cost of the
    class (non-linear ones too)."""

    name: ClassVar[str] = "test-clip-dgd"
    update = noisy_dgd.NoisyDGD.update


def test_a_correct_clipped_rule_is_not_refuted_by_the_kinked_pairs(monkeypatch):
    """The kinked pairs are evaluated (a spy counts them) and none exceeds the lemma: a kinked cost's gradient
    norm is below ``C``, so a clipped step moves no release by more than ``2 a C`` (its mirror image's too)."""
    seen = noisy_dgd.spy_kinked(monkeypatch)
    with noisy_dgd.registered((ClipDGD,), _adjacency, origin=__file__):
        sc = [Scenario(_linear([s * CLIP, 0.0]), topology.static(_W), ClipDGD(), horizon=T, seed=3) for s in (1, -1)]
        report = check_privacy(*sc, runs=1000)
    # two coordinates, both signs, two kinks each; the + signs' kinks again against their mirror image, and per
    # coordinate a mirrored kink between the own message and the combination, and four on round 1's combination and
    # own message (the gradient vanishing there: a narrow and a wide kink each), and two kinked costs far away on
    # either side along coordinate 0 (large values)
    assert seen and len(seen[0]) == 23 and sum(p.mirrored for p in seen[0]) == 14
    assert report.verdict == "pass", report.reasons
