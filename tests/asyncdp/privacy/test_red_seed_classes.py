"""A pair outside Wang and Basar's gradient adjacency (Automatica 2023, eq. 30: ``||grad f - grad f'||_1 <= 1``)
only where few runs go is refused, not read as a witness against the lemma.

Agent 0's adjacent cost is its quadratic minus ``x_1`` (the gradients differ by ``(1, 0)``, inside the class)
where ``x_1 < T``, and minus ``3 x_1`` beyond ``T`` (a difference of 3 in L1: outside it). Algorithm 2's message
``v = x - lam^k (grad f(x) + noise)`` then moves by ``lam^k |d(x)|_2``: by the lemma's ``lam^k`` inside the class,
by ``3 lam^k`` beyond ``T``. The truth is plain: the pair is not one the claim speaks of, so the check must
refuse it (exit 2), never report that the lemma fails to cover a pair of its class.

* ``T`` just above every point of the scenario's first 20 runs (where the class relation was evaluated), below
  points of later runs: the class relation at the first runs' points sees nothing, later runs' releases move by
  3 times the lemma, and the coverage step reported them as a witness against the lemma (``violation``); with a
  difference of ``(0.6, 0.6)`` beyond ``T`` (L1 1.2, L2 0.85: every shift within the lemma) the check said
  ``pass`` (the class relation is now evaluated at every run of both scenarios);
* ``T`` beyond every run: no release moves past the lemma, but the sensitivity prober, which searches the state
  ``z`` everywhere, found the message step R moving by 3 times the rule's declared sensitivity at ``z`` beyond
  ``T`` and reported it as a witness against the declaration (``violation``); with ``(0.6, 0.6)`` beyond ``T``
  the probe's largest change (0.85 of the declaration) lay there and the check said ``pass``.

Theorem 4 (sample adjacency, eq. 28) had no class at all: a pair changing agent 0's measurement by 3 in L1
(three times what the theorem speaks of) moved every release by 1.5 times the lemma and got ``violation``
("the pair is not shown to lie outside the class"). Eq. (28) bounds the gradients' difference of a pair of the
class by ``nu / n_i`` in L1: the paper record's ``relation`` now says so, and the pair is refused. The relation is
no class to draw pairs from (linear costs differing by ``nu / n_i`` need not be sample changes, and drawing them
turned a true Theorem 4 claim in unicast with 3 copies into a ``violation``): the worst-case search still has none.

The opposite, a false refusal: a pair whose gradients (near ``1e8``) differ by exactly the bound was refused,
since their computed difference carries round-off of the gradients' magnitude (1.5e-8), not of the bound's
(``CLASS_RTOL = 1e-9``); the class measure now allows it (:func:`~asyncdp.privacy.coverage.class_roundoff`).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import topology
from accounting.errors import AdjacencyError
from asyncdp import Scenario
from asyncdp.papers.wang_basar.rule import WangBasar
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
from asyncdp.privacy.coverage import _class_points, check_coverage, class_outside_at, class_relation
from asyncdp.privacy.steps import probe_update
from asyncdp.privacy.candidate_pairs import adjacency_class
from asyncdp.problems.costs.function_class import FunctionClass
from asyncdp.problems.costs.user import UserCost
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem

RUNS = 200
FIRST_RUNS = 20
N = 5
A = np.random.default_rng(1).uniform(-1, 1, size=(N, 2))
FC = FunctionClass(gradient_bound=20.0, smoothness=2.0)


def _quad(a):
    return (lambda x: float((x - a) @ (x - a))), (lambda x: 2 * (x - a))


def _scenario():
    fv = [_quad(a) for a in A]
    problem = Problem(Box([-2, -2], [2, 2]), UserCost([f for f, _ in fv], [g for _, g in fv], FC, dim=2), FC)
    graph = topology.static(topology.metropolis(nx.cycle_graph(N)), directed=False)
    x0 = np.random.default_rng(0).uniform(-1, 1, size=(N, 2))
    return Scenario(problem, graph, WangBasar(noise_variance=400.0), horizon=20, seed=0, x0=x0)


def _pair(threshold, inside=(1.0, 0.0), outside=(3.0, 0.0)):
    """The scenario and its adjacent pair: agent 0's gradients differ by ``inside`` below ``threshold`` (on the first
    coordinate), by ``outside`` above (only the first coordinate jumps, so they are the gradients of a cost)."""
    sc = _scenario()
    f, g = _quad(A[0])
    d_in, d_out = np.array(inside), np.array(outside)
    assert d_in[1] == d_out[1]

    def value(x):
        return f(x) - (d_in @ x if x[0] < threshold else d_out @ x - (d_out[0] - d_in[0]) * threshold)

    def gradient(x):
        return g(x) - (d_in if x[0] < threshold else d_out)

    return ScenarioPair(sc, sc.replace(problem=sc.problem.adjacent(0, value_fn=value, gradient_fn=gradient)))


def _threshold():
    """Just above the first coordinate of every point at which the first runs' class relation is evaluated."""
    inside = _pair(np.inf)
    ctx = prepare(inside, CheckOptions(runs=RUNS))
    return float(_class_points(inside, ctx, 0, runs=FIRST_RUNS, sides=(0,))[:, 0].max()) + 1e-3


def test_a_pair_outside_the_class_only_in_later_runs_is_refused_not_a_witness():
    pair = _pair(_threshold())
    ctx = prepare(pair, CheckOptions(runs=RUNS))
    first = _class_points(pair, ctx, 0, runs=FIRST_RUNS, sides=(0,))
    assert class_outside_at(pair, ctx, first, "a point of the first runs") is None  # the first runs do not show it
    released = np.concatenate([ctx.engine_runs(side).messages["v"][:, :, 0, 0] for side in (0, 1)])
    assert (released >= _threshold()).any()  # later runs go beyond T, where the pair breaks the class
    with pytest.raises(AdjacencyError, match=r"outside the adjacency class of paper 'wang-basar'.*differ by 3.*"
                                             r"> the lemma's bound"):
        check_coverage(pair, ctx)


def test_the_same_pair_inside_the_class_is_covered():
    pair = _pair(np.inf)
    e = check_coverage(pair, prepare(pair, CheckOptions(runs=RUNS)))
    assert e.witness is None and e.figures["coverage_max_ratio"] <= 1 + 1e-9


def test_a_pair_outside_the_class_only_in_later_runs_with_covered_shifts_is_refused_never_pass():
    # issue 23 item 0: agent 0's gradients differ by (0.4, 0.6) (L1 1: in eq. 30's class) below T, by (0.6, 0.6)
    # beyond (L1 1.2 > 1: outside); the message moves by lam^k 0.85 < the lemma's lam^k there (L2), so no shift
    # exceeds the lemma and the coverage step found nothing: the check said `pass` to a pair the claim says nothing of
    pair = _pair(_threshold(), inside=(0.4, 0.6), outside=(0.6, 0.6))
    ctx = prepare(pair, CheckOptions(runs=RUNS))
    with pytest.raises(AdjacencyError, match=r"outside the adjacency class of paper 'wang-basar' \(gradients differing "
                                             r"by at most 1 in l1\).*differ by 1\.2.*within the lemma's bound, no pass"):
        check_coverage(pair, ctx)


def test_a_prober_point_outside_the_class_with_a_covered_step_is_refused_never_pass():
    # beyond every run (T = 3) the gradients differ by (0.6, 0.6) (L1 1.2, L2 0.85), below by (0.2, 0.6) (L2 0.63):
    # the prober's largest change (0.85 lam, within the declared lam) lies where the pair breaks the class
    pair = _pair(3.0, inside=(0.2, 0.6), outside=(0.6, 0.6))
    ctx = prepare(pair, CheckOptions(runs=RUNS))
    assert check_coverage(pair, ctx).witness is None  # no run goes beyond T
    with pytest.raises(AdjacencyError, match=r"outside the adjacency class.*point the prober found for the message "
                                             r"step R.*differ by 1\.2.*within the rule's declared sensitivity"):
        probe_update(pair, ctx)


def test_a_prober_point_outside_the_class_is_refused_not_a_witness_against_the_declaration():
    pair = _pair(3.0)  # beyond every run (the domain is [-2, 2]^2, released values stay below 2.5)
    ctx = prepare(pair, CheckOptions(runs=RUNS))
    assert check_coverage(pair, ctx).witness is None  # no release of the runs moves past the lemma
    with pytest.raises(AdjacencyError, match=r"outside the adjacency class.*point the prober found for the message "
                                             r"step R.*differ by 3.*> the rule's declared sensitivity"):
        probe_update(pair, ctx)


def _sample_pair(change):
    """Theorem 4 (sample adjacency, eq. 28: one sample changes by ``||s - s'||_1 <= 1``) on the paper's problem;
    agent 0's measurement changes by ``change`` on its first coordinate (row 0 of ``M`` sums to 1 in L1, so the
    gradient moves by ``2 |change|`` in L1; ``nu / n_i = 4``)."""
    base = WangBasar.example_scenario()
    sc = base.replace(algorithm=WangBasar(noise_variance=4000.0, privacy_kind="sample"))
    y = np.array(sc.problem.costs.measurements[0], dtype=float)
    y[0] += change
    return ScenarioPair(sc, sc.replace(problem=sc.problem.adjacent(0, measurement=y)))


def test_a_pair_changing_a_sample_by_more_than_one_is_refused_not_a_witness_against_theorem_4():
    # ||Y - Y'||_1 = 3: outside eq. 28's class; every release of agent 0 moves by 6 lam > the lemma's 4 lam
    pair = _sample_pair(3.0)
    ctx = prepare(pair, CheckOptions(runs=20))
    with pytest.raises(AdjacencyError, match=r"outside the adjacency class of paper 'wang-basar' \(gradients "
                                             r"differing by at most 4 in l1\).*differ by 6.*> the lemma's bound"):
        check_coverage(pair, ctx)


def test_a_sample_changed_by_one_is_inside_theorem_4s_class_and_the_search_draws_nothing_from_it():
    pair = _sample_pair(1.0)  # the gradient moves by 2 in L1, inside the class
    ctx = prepare(pair, CheckOptions(runs=20))
    assert class_relation(pair, ctx) is None
    assert check_coverage(pair, ctx).witness is None
    assert adjacency_class(pair.scenario) is None


def test_a_paper_relation_must_be_callable():
    from asyncdp.papers import Paper, PaperError

    with pytest.raises(PaperError, match="relation must be callable"):
        Paper("x", (WangBasar,), lemma=len, relation=3)


def _large_gradient_pair(d):
    """Agent 0's gradient ``1e8 (x - a)`` against ``1e8 (x - a) - d`` (the other agents' ``1e8 (x - a_i)``)."""
    sc = _scenario()
    k = 1e8
    fc = FunctionClass(gradient_bound=1e9, smoothness=k)
    grads = [lambda x, a=a: k * (x - a) for a in A]
    costs = UserCost([lambda x: 0.0] * N, grads, fc, dim=2)
    sc = sc.replace(problem=Problem(sc.problem.domain, costs, fc))
    return ScenarioPair(sc, sc.replace(problem=sc.problem.adjacent(0, value_fn=lambda x: 0.0,
                                                                     gradient_fn=lambda x: grads[0](x) - d)))


def test_gradients_near_1e8_differing_by_the_bound_are_inside_the_class():
    # an L1 difference of exactly 1, eq. 30's bound; computed near 1e8 the subtraction rounds it up to
    # 1 + 1.5e-8, which CLASS_RTOL (1e-9) alone refused
    pair = _large_gradient_pair(np.array([1 / 3, 2 / 3]))
    ctx = prepare(pair, CheckOptions(runs=2))
    pts = np.random.default_rng(0).uniform(-1, 1, size=(400, 2))
    g, g2 = (p.problem.costs.gradient(0, pts) for p in (pair.scenario, pair.adjacent))
    assert np.abs(g - g2).sum(axis=1).max() > 1 + 1e-9  # round-off, not the pair: mathematically 1 everywhere
    assert class_outside_at(pair, ctx, pts, "a test point") is None
    # the allowance is a few spacings of 1e8 (below 2e-7): a difference of 1 + 1e-6 is still outside
    outside = _large_gradient_pair(np.array([1 / 3, 2 / 3 + 1e-6]))
    assert "differ by 1" in class_outside_at(outside, prepare(outside, CheckOptions(runs=2)), pts, "a test point")


def test_a_pair_outside_the_class_only_where_the_agent_evaluates_its_cost_is_refused_not_a_witness():
    # with little noise agent 0's releases v = x - lam (grad f(x) + noise) stay lam |grad f| away from its states x,
    # where its gradient is evaluated: a strip of x_1 around one state, away from every release, where the gradients
    # differ by (3, 0) moves the release of that round by 3 lam. The releases alone never show the pair outside the
    # class, and the coverage step reported the shift as a witness against the lemma (`violation`)
    sc = _scenario().replace(algorithm=WangBasar(noise_variance=1e-2))
    f, g = _quad(A[0])

    def strip_pair(lo, hi):
        def value(x):
            return f(x) - x[0] - 2 * (min(max(x[0], lo), hi) - lo)

        def gradient(x):
            return g(x) - np.array([3.0 if lo < x[0] < hi else 1.0, 0.0])

        return ScenarioPair(sc, sc.replace(problem=sc.problem.adjacent(0, value_fn=value, gradient_fn=gradient)))

    base = strip_pair(10.0, 10.0)  # an empty strip: inside the class everywhere
    ctx = prepare(base, CheckOptions(runs=RUNS))
    check_coverage(base, ctx)
    released = _class_points(base, ctx, 0)[:, 0]
    states = np.unique(ctx.replayed_decisions()[:, 0])
    gaps = np.array([np.abs(released - s).min() for s in states])
    c, gap = states[np.argmax(gaps)], gaps.max()
    assert gap > 1e-3  # the strip (c - gap / 2, c + gap / 2) holds a state and no release
    pair = strip_pair(c - gap / 2, c + gap / 2)
    ctx = prepare(pair, CheckOptions(runs=RUNS))
    assert class_outside_at(pair, ctx, _class_points(pair, ctx, 0), "a release") is None
    with pytest.raises(AdjacencyError, match=r"outside the adjacency class of paper 'wang-basar'.*\(a state of the "
                                             r"replayed runs, where its cost is evaluated\).*differ by 3.*> the lemma"):
        check_coverage(pair, ctx)


@pytest.mark.xfail(strict=True, reason="known limit: Theorem 4's class is stated on the samples (one sample changed by "
                   "at most 1 in L1, eq. 28), and the check sees only its consequence on the gradients (nu / n_i): a "
                   "measurement changed by 2 along row 0 of M (L1 row sum 1, nu = 2 * 2 = 4) moves the gradient by 4 "
                   "= nu / n_i, inside the relation, and the check says pass to a pair the claim says nothing of. A fix "
                   "compares the changed agent's samples themselves (the family's private field) with the class")
def test_a_sample_changed_by_two_within_the_gradient_relation_is_refused():
    pair = _sample_pair(2.0)
    ctx = prepare(pair, CheckOptions(runs=20))
    assert class_relation(pair, ctx) is None  # the gradient relation holds: 2 |M^T dY|_1 = 4 = nu / n_i
    with pytest.raises(AdjacencyError, match="outside"):
        check_coverage(pair, ctx)
