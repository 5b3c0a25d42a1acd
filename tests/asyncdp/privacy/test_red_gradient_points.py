"""A pair outside its relation class only where the rule evaluates its gradient, at a point that is neither a
release nor a decision, is refused, not a witness against the lemma.

``MixedPointDGD`` is the usual distributed gradient step, taken from the mixed point: ``x = P(z - a grad f(z))``
with ``z = sum_j w_ij y_j`` and ``y_j = x_j + s N(0, I)``. Its record declares a class of gradient differences,
``||grad f - grad f'||_2 <= B``, and the lemma ``a B`` per release from round 2 (the projection is nonexpansive):
right for every pair of the class. Agent 0's adjacent cost is its quadratic minus ``x_1``, the gradients differing
by ``(1, 0)`` (inside the class) except in a strip ``|x_1 - c| < 1e-4`` where they differ by ``(3, 0)`` (outside
it); ``c`` is agent 0's mixed point ``z`` in a late round of one run, away from every release and decision of the
runs (the noise is small, ``s = 0.01``: ``z`` averages the neighbours' states, ``x`` lies ``a |grad f(z)|`` from
it). That round's release moves by ``3 a`` (exact: ``x`` and ``x'`` differ by ``a (grad f(z) - grad f'(z))``).

Truth: the pair is not one the class (hence the claim) speaks of: the check must refuse it (exit 2). It said
``violation`` with a witness against the lemma: the class relation was evaluated at the releases and the
decisions only, and the prober's search (400 draws per round, the first rounds) does not land in the strip. The
relation is now evaluated where the replays evaluate the changed agent's gradient too.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import networkx as nx
import numpy as np
import pytest

import topology
from accounting.errors import AdjacencyError
from asyncdp import Scenario
from asyncdp.algorithms import NoiseDeclaration
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
from asyncdp.privacy.coverage import _class_points, check_coverage
from asyncdp.problems.costs.function_class import FunctionClass
from asyncdp.problems.costs.user import UserCost
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIG, STEP, BOUND, N, RUNS, HALF_WIDTH = 1e-2, 0.1, 1.0, 5, 50, 1e-4
A = np.random.default_rng(1).uniform(-1, 1, size=(N, 2))
FC = FunctionClass(gradient_bound=20.0, smoothness=2.0)
W = topology.metropolis(nx.cycle_graph(N)).toarray()


@dataclass(frozen=True)
class MixedPointDGD(noisy_dgd.NoisyDGD):
    """``x = P(z - a grad f(z))`` from the mixed point ``z``, little noise (module docstring)."""

    name: ClassVar[str] = "test-red-gradient-points-dgd"

    def noise(self, t: int, channel: str) -> Any:
        return NoiseDeclaration("gaussian", SIG, self.dim, 0.0 if t == 1 else STEP * BOUND)

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + SIG * noise["y"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = mixed["y"]
        return {"x": problem.domain.project(z - STEP * problem.costs.gradient(agents, z, round_index=t))}


def _lemma(sc: Any) -> np.ndarray:
    out = np.full(sc.horizon, STEP * BOUND)
    out[0] = 0.0
    return out


def _quad(a: np.ndarray) -> tuple[Any, Any]:
    return (lambda x: float((x - a) @ (x - a))), (lambda x: 2 * (x - a))


def _strip_pair(lo: float, hi: float) -> ScenarioPair:
    """Agent 0's gradients differ by (1, 0) except for ``lo < x_1 < hi``, where they differ by (3, 0)."""
    fv = [_quad(a) for a in A]
    problem = Problem(Box([-2, -2], [2, 2]), UserCost([f for f, _ in fv], [g for _, g in fv], FC, dim=2), FC)
    graph = topology.static(topology.metropolis(nx.cycle_graph(N)), directed=False)
    x0 = np.random.default_rng(0).uniform(-1, 1, size=(N, 2))
    sc = Scenario(problem, graph, MixedPointDGD(), horizon=10, seed=0, x0=x0)
    f, g = fv[0]

    def value(x: np.ndarray) -> float:
        return f(x) - x[0] - 2 * (min(max(x[0], lo), hi) - lo)

    def gradient(x: np.ndarray) -> np.ndarray:
        return g(x) - np.array([3.0 if lo < x[0] < hi else 1.0, 0.0])

    return ScenarioPair(sc, sc.replace(problem=sc.problem.adjacent(0, value_fn=value, gradient_fn=gradient)))


@pytest.fixture()
def registered():
    with noisy_dgd.registered((MixedPointDGD,), lambda sc: GradientClass(BOUND, "l2", kind="difference"),
                              origin=__file__, lemma=_lemma):
        yield


def _strip_centre() -> float:
    """Agent 0's mixed point (first coordinate) of rounds 4 .. 9 farthest from every release and decision of the
    runs (computed from the engine's messages and the weights, not by the check)."""
    base = _strip_pair(10.0, 10.0)  # an empty strip: inside the class everywhere
    ctx = prepare(base, CheckOptions(runs=RUNS))
    assert check_coverage(base, ctx).witness is None
    known = np.concatenate([_class_points(base, ctx, 0)[:, 0], ctx.replayed_decisions()[:, 0]])
    z = np.concatenate([np.einsum("j,rtjd->rtd", W[0], ctx.engine_runs(side).messages["y"])[:, 3:-1, 0].ravel()
                        for side in (0, 1)])
    gaps = np.array([np.abs(known - c).min() for c in z])
    assert gaps.max() > 10 * HALF_WIDTH  # the strip holds that mixed point and no release or decision
    return float(z[np.argmax(gaps)])


def test_a_pair_outside_the_class_only_at_a_mixed_point_is_refused_not_a_witness(registered):
    c = _strip_centre()
    pair = _strip_pair(c - HALF_WIDTH, c + HALF_WIDTH)
    with pytest.raises(AdjacencyError, match=r"outside the adjacency class of paper 'test-red-gradient-points-dgd'.*"
                                             r"where the replays evaluate its gradient.*differ by 3.*> the lemma"):
        check_coverage(pair, prepare(pair, CheckOptions(runs=RUNS)))
    with pytest.raises(AdjacencyError, match="outside the adjacency class"):  # the whole check stops (exit 2)
        check_privacy(pair.scenario, pair.adjacent, runs=RUNS, search_examples=0)


def test_the_same_rule_on_a_pair_of_the_class_passes_the_coverage(registered):
    pair = _strip_pair(10.0, 10.0)
    e = check_coverage(pair, prepare(pair, CheckOptions(runs=RUNS)))
    assert e.witness is None and e.figures["coverage_max_ratio"] <= 1 + 1e-9


def test_only_points_equal_to_the_decision_just_kept_are_skipped():
    """A call at exactly the decision just kept (``known``) or the points just recorded adds nothing; a point one
    ulp away is kept (the skip compares exactly, so a point outside the class is never left out)."""
    from asyncdp.privacy.behavior import _GradientPoints

    costs = _strip_pair(10.0, 10.0).scenario.problem.costs
    decision = np.array([[0.25, -0.5], [0.75, 0.125]])
    out: list[np.ndarray] = []
    points = _GradientPoints(costs, 0, out, [decision])
    x = np.zeros((2, N, 2))
    x[:, 0] = decision
    points.gradient(np.arange(N), x)
    assert out == []  # at the decision: kept already
    x[1, 0, 1] = np.nextafter(decision[1, 1], np.inf)
    points.gradient(np.arange(N), x)
    points.gradient(np.arange(N), x)  # the same points again: kept once
    assert len(out) == 1 and np.array_equal(out[0], x[:, 0])
    points.gradient(np.arange(1, N), x[:, 1:])  # no call at agent 0: nothing kept
    assert len(out) == 1


def test_a_rule_evaluating_its_gradient_at_its_decision_adds_no_point():
    """Wang and Basar's step evaluates the gradient at the decision, which the relation sees already: no point is
    kept beside the decisions (before: as many again, each one more gradient call of a UserCost per cost)."""
    from asyncdp.papers.wang_basar.rule import WangBasar

    sc = _strip_pair(10.0, 10.0).scenario.replace(algorithm=WangBasar(noise_variance=400.0))
    f, g = _quad(A[0])
    pair = ScenarioPair(sc, sc.replace(problem=sc.problem.adjacent(
        0, value_fn=lambda x: f(x) - x[0], gradient_fn=lambda x: g(x) - np.array([1.0, 0.0]))))
    ctx = prepare(pair, CheckOptions(runs=20))
    assert check_coverage(pair, ctx).witness is None
    assert len(ctx.replayed_decisions()) > 0 and ctx.replayed_gradient_points().shape == (0, 2)
