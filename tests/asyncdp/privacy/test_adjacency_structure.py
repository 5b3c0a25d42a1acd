"""Adjacency read from the cost families' structure, not only from gradients at probe points.

Gradients compared at finitely many points can show that a cost differs, never that it is the same. A pair built
with ``Problem.adjacent`` (or reusing the scenario's cost objects) differs by construction in one agent only and
is checked as before; an agent whose cost the structure cannot show unchanged (a user's callable that is another
object) is a doubt: the verdict is ``inconclusive`` with that reason, never ``pass``; parameters that differ
are a change even where no probe sees it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from accounting.errors import AdjacencyError
from asyncdp.papers.dpsda.rule import DPSDAC
from asyncdp.privacy import check_privacy
from asyncdp.privacy.adjacency import Adjacency, check_adjacency, find_changed_agent, find_changed_round
from asyncdp.privacy.context import small_example
from asyncdp.problems.costs.function_class import FunctionClass
from asyncdp.problems.costs.user import UserCost
from asyncdp.problems.nonconvex import NonconvexEstimation
from asyncdp.problems.online import BatchLoss, UserOnlineLoss, online_problem
from asyncdp.problems.problem import Problem

RUNS = 200
C2 = 4 * math.sqrt(2)
V = np.array([4.0, 4.0])
A2 = np.array([-0.5, 0.0])
FC = FunctionClass(gradient_bound=C2)


def _lin(g):
    return (lambda x: float(x @ g)), (lambda x: np.array(g, dtype=float))


def _quad(a):
    return (lambda x: float((x - a) @ (x - a))), (lambda x: 2 * (x - a))


def _user_scenario():
    """Huang, Mitra and Vaidya (ICDCN 2015) on three agents with user costs: two linear, one quadratic."""
    base = small_example(runs=RUNS)[0].scenario
    fv = [_lin(-V), _lin(-V), _quad(A2)]
    problem = Problem(base.problem.domain, UserCost([f for f, _ in fv], [g for _, g in fv], FC, dim=2), FC)
    return base.replace(problem=problem), fv


def test_a_rendezvous_pair_built_with_problem_adjacent_passes_as_before():
    pair, ctx = small_example(runs=RUNS)
    assert ctx.adjacency == Adjacency(agent=0, round=None, unverified=(), doubt=None)
    report = check_privacy(pair.scenario, pair.adjacent, runs=RUNS, search_examples=5)
    assert report.verdict == "pass"
    assert "adjacency" not in [e.method for e in report.evidence]


def test_a_user_cost_pair_built_with_problem_adjacent_passes():
    sc, _ = _user_scenario()
    vf, gf = _lin(V)  # agent 0's linear cost flips sign: an honest pair of the paper's class
    adj = sc.replace(problem=sc.problem.adjacent(0, value_fn=vf, gradient_fn=gf))
    assert check_adjacency(sc, adj) == Adjacency(0, None)
    report = check_privacy(sc, adj, runs=RUNS, search_examples=5)
    assert report.verdict == "pass", report.reasons


def test_fresh_but_identical_lambdas_for_an_unchanged_agent_are_inconclusive_with_the_reason():
    sc, fv = _user_scenario()
    vf, gf = _lin(V)
    same2 = _quad(A2)  # agent 2's cost computed by new function objects: the same cost, not shown to be
    costs = UserCost([vf, fv[1][0], same2[0]], [gf, fv[1][1], same2[1]], FC, dim=2)
    adj = sc.replace(problem=Problem(sc.problem.domain, costs, FC))
    found = check_adjacency(sc, adj)
    assert (found.agent, found.unverified) == (0, (2,))
    assert find_changed_agent(sc, adj) == 0  # the probes still find the changed agent
    report = check_privacy(sc, adj, runs=RUNS, search_examples=5)
    assert report.verdict == "inconclusive"
    assert report.witness is None
    [line] = [r for r in report.reasons if r.startswith("adjacency:")]
    assert "agent(s) [2] could not be shown unchanged" in line and "Problem.adjacent" in line
    assert report.evidence[0].doubt == line and report.evidence[0].figures["adjacency_unverified_agents"] == [2]


def test_a_parametric_family_with_two_differing_rows_is_refused_naming_both_agents():
    pair, _ = small_example(runs=RUNS)
    problem = pair.adjacent.problem.adjacent(2, address=[0.5, 0.5])  # agents 0 and 2 moved
    with pytest.raises(AdjacencyError, match=r"more than one agent's cost: agents \[0, 2\] \(agents \[0, 2\] by "
                                             r"their parameters"):
        check_privacy(pair.scenario, pair.scenario.replace(problem=problem), runs=RUNS)


def test_parameters_that_differ_count_where_no_probe_sees_the_change():
    """NonconvexEstimation's third measurement coordinate meets a zero row of M: changing it moves no gradient,
    so the probes see one changed agent; the parameters show two."""
    sc = small_example(runs=RUNS)[0].scenario
    y = np.array([[0.1, 0.2, 0.0], [0.3, -0.1, 0.0], [0.0, 0.1, 0.0]])
    box = (np.array([-1.0, -1.0]), np.array([1.0, 1.0]))
    fam = NonconvexEstimation(y, kappa=0.0, box=box)
    assert not np.abs(fam.gradient(1, np.array([0.3, 0.4])) -
                      fam.with_agent(1, measurement=[0.3, -0.1, 5.0]).gradient(1, np.array([0.3, 0.4]))).any()
    problem = Problem(sc.problem.domain, fam, FunctionClass(gradient_bound=100.0))
    base = sc.replace(problem=problem)
    adj_costs = fam.with_agent(0, measurement=[-0.5, 0.5, 0.0]).with_agent(1, measurement=[0.3, -0.1, 5.0])
    adj = base.replace(problem=Problem(sc.problem.domain, adj_costs, problem.constants))
    with pytest.raises(AdjacencyError, match=r"agents \[0, 1\] \(agents \[0, 1\] by their parameters\)"):
        find_changed_agent(base, adj)


# ----------------------------------------------------------------------------- round adjacency
def test_round_adjacency_reads_the_batches():
    sc = DPSDAC.example_scenario()
    loss = sc.problem.costs
    assert isinstance(loss, BatchLoss)
    a, b = loss.features, loss.labels
    one = loss.with_round(4, features=-a[3], labels=b[3])
    adj = sc.replace(problem=online_problem(one, sc.problem.domain, sc.problem.constants))
    assert check_adjacency(sc, adj) == Adjacency(None, 4)
    two = one.with_round(7, features=-a[6], labels=b[6])
    with pytest.raises(AdjacencyError, match=r"more than one round's loss: rounds \[4, 7\] \(rounds \[4, 7\] by "
                                             r"their parameters"):
        find_changed_round(sc, sc.replace(problem=online_problem(two, sc.problem.domain, sc.problem.constants)))


def test_fresh_but_identical_round_callables_are_a_doubt():
    sc = DPSDAC.example_scenario()
    horizon, fc = sc.horizon, FunctionClass(gradient_bound=4.0, smoothness=2.0)

    def make():
        return (lambda t, x: float(x @ x) / 100), (lambda t, x: x / 50)

    vf, gf = make()
    loss = UserOnlineLoss(vf, gf, fc, dim=14, num_rounds=12, num_nodes=7)
    base = sc.replace(problem=online_problem(loss, sc.problem.domain, fc))
    changed = loss.with_round(3, value_fn=lambda t, x: 0.0, gradient_fn=lambda t, x: np.zeros(14))
    assert check_adjacency(base, base.replace(problem=online_problem(changed, sc.problem.domain, fc))) == \
        Adjacency(None, 3)
    fresh = UserOnlineLoss(*make(), fc, dim=14, num_rounds=12, num_nodes=7).with_round(
        3, value_fn=lambda t, x: 0.0, gradient_fn=lambda t, x: np.zeros(14))
    found = check_adjacency(base, base.replace(problem=online_problem(fresh, sc.problem.domain, fc)))
    assert (found.round, found.unverified) == (3, tuple(t for t in range(1, horizon + 1) if t != 3))
    assert found.doubt is not None and "adjacent_online_problem" in found.doubt
    assert found.evidence().doubt == found.doubt


def test_sequences_of_other_lengths_are_refused():
    sc = DPSDAC.example_scenario()
    loss = sc.problem.costs
    longer = BatchLoss(loss.kind, loss.features + loss.features[:1], loss.labels + loss.labels[:1], num_nodes=7)
    adj = sc.replace(problem=online_problem(longer, sc.problem.domain, sc.problem.constants))
    with pytest.raises(AdjacencyError, match=r"cannot be compared round by round: .*\(7, 14, 12\) vs \(7, 14, 13\)"):
        check_adjacency(sc, adj)


# ------------------------------------------------------- families that compute their costs otherwise than their class
def test_a_method_replaced_on_the_object_leaves_every_entry_unknown():
    """The class's parameters describe the costs the class computes; an object whose ``gradient`` (or
    ``round_gradient``) is replaced computes others, so none of its entries is shown unchanged."""
    pair, _ = small_example(runs=RUNS)
    fam = pair.adjacent.problem.costs
    assert sorted(pair.scenario.problem.costs.compare_agents(fam).unknown) == []
    fam.gradient = lambda agents, x, *, round_index=None: type(fam).gradient(fam, agents, x, round_index=round_index)
    diff = pair.scenario.problem.costs.compare_agents(fam)
    assert sorted(diff.unknown) == [0, 1, 2] and "whose gradient the object replaces" in diff.why
    loss = DPSDAC.example_scenario().problem.costs
    one = loss.with_round(4, features=-loss.features[3], labels=loss.labels[3])
    one.round_gradient = lambda t, x: type(one).round_gradient(one, t, x)
    diff = loss.compare_rounds(one)
    assert sorted(diff.unknown) == list(range(1, loss.num_rounds + 1)) and "round_gradient" in diff.why


@pytest.mark.parametrize("name", ["gradient", "value", "_check_finite", "_agent_structure", "base"])
def test_an_override_subclass_that_redefines_more_than_its_hooks_has_no_structure(name):
    """A subclass of ``AgentOverride`` keeps its structure when it defines the replaced agent's hooks only; one that
    redefines anything else of the class (the public ``gradient`` every engine calls, ...) may compute every
    agent's cost otherwise."""
    from asyncdp.problems.costs.override import LinearOverride

    pair, _ = small_example(runs=RUNS)
    base = pair.scenario.problem.costs

    class Hooked(LinearOverride):
        def _own_gradient(self, x):
            return 2 * self.linear_gradient

    diff = base.compare_agents(Hooked(base, 0, V))
    assert (sorted(diff.differ), sorted(diff.unknown)) == ([0], [])  # its own agent's row is its own; others known
    other = type("Other", (LinearOverride,), {name: getattr(LinearOverride, name)})
    assert sorted(base.compare_agents(other(base, 0, V)).unknown) == [0, 1, 2]
