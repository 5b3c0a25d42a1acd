"""Which agents' (rounds') costs differ between two cost families, read from their structure.

``CostFamily.compare_agents`` / ``differing_agents`` and ``OnlineLoss.compare_rounds``: parametric families
compare each agent's parameters exactly, user callables by identity (another object: unknown), and families of
different kinds leave every agent unknown.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from asyncdp.errors import ProblemError
from asyncdp.privacy.kinked import KinkedOverride
from asyncdp.problems.costs import (
    FunctionClass,
    LinearOverride,
    RendezvousQuadratic,
    UserCost,
    WeightedQuadratic,
)
from asyncdp.problems.nonconvex import ICAQuartic, NonconvexEstimation
from asyncdp.problems.online import BatchLoss, LinearRound, UserOnlineLoss

FC = FunctionClass(gradient_bound=10.0)


def _quad(a):
    return (lambda x: float((x - a) @ (x - a))), (lambda x: 2.0 * (x - a))


def _user(addresses):
    fns = [_quad(np.asarray(a, dtype=float)) for a in addresses]
    return UserCost([f for f, _ in fns], [g for _, g in fns], FC, dim=len(addresses[0])), fns


# ----------------------------------------------------------------------------- parametric families: a property
_N, _D = 4, 2
_row = hnp.arrays(np.float64, (_D,), elements=st.floats(-1.0, 1.0, allow_subnormal=False))
_rows = hnp.arrays(np.float64, (_N, _D), elements=st.floats(-1.0, 1.0, allow_subnormal=False))
_weights = hnp.arrays(np.float64, (_N, _D), elements=st.floats(0.5, 3.0))


def _family(kind: str, rows: np.ndarray, weights: np.ndarray):
    if kind == "rendezvous":
        return RendezvousQuadratic(rows)
    if kind == "weighted":
        return WeightedQuadratic(rows, weights[:, 0])
    if kind == "diagonal":
        return WeightedQuadratic(rows, weights)
    if kind == "nonconvex":
        return NonconvexEstimation(np.concatenate([rows, rows[:, :1]], axis=1))  # measurements of length 3
    return ICAQuartic(np.stack([rows, -rows], axis=1))  # two samples per agent


def _change(kind: str, fam, agent: int, row: np.ndarray, weight: np.ndarray):
    if kind == "rendezvous":
        return fam.with_agent(agent, address=row)
    if kind == "weighted":
        return fam.with_agent(agent, weight=float(weight[0]))
    if kind == "diagonal":
        return fam.with_agent(agent, center=row, weight=weight)
    if kind == "nonconvex":
        return fam.with_agent(agent, measurement=np.concatenate([row, row[:1]]))
    return fam.with_agent(agent, samples=np.stack([row, -row]))


def _params(kind: str, fam, agent: int) -> np.ndarray:
    """Agent ``agent``'s parameters read from the family's public data (flattened; a scalar weight repeated)."""
    if kind == "rendezvous":
        return fam.addresses[agent]
    if kind in ("weighted", "diagonal"):
        w = np.broadcast_to(np.asarray(fam.weights, dtype=float).reshape(_N, -1), (_N, _D))
        return np.concatenate([fam.centers[agent], w[agent]])
    if kind == "nonconvex":
        return np.asarray(fam.to_dict()["measurements"][agent])
    return fam.samples[agent].ravel()


_KINDS = st.sampled_from(["rendezvous", "weighted", "diagonal", "nonconvex", "ica"])


@given(kind=_KINDS, rows=_rows, weights=_weights, agent=st.integers(0, _N - 1), row=_row, w=_weights)
def test_one_changed_row_is_exactly_the_differing_agent(kind, rows, weights, agent, row, w):
    fam = _family(kind, rows, weights)
    other = _change(kind, fam, agent, row, w[agent])
    truth = frozenset(i for i in range(_N) if not np.array_equal(_params(kind, fam, i), _params(kind, other, i)))
    assert truth <= {agent}  # with_agent changes nothing but the agent's row
    assert fam.differing_agents(other) == truth and other.differing_agents(fam) == truth
    d = fam.compare_agents(other)
    assert d.unknown == frozenset() and d.differ == truth


@given(kind=_KINDS, rows=_rows, weights=_weights,
       changes=st.lists(st.tuples(st.integers(0, _N - 1), _row, _weights), min_size=1, max_size=3))
def test_several_changed_rows_are_exactly_the_differing_agents(kind, rows, weights, changes):
    fam = _family(kind, rows, weights)
    other = fam
    for agent, row, w in changes:
        other = _change(kind, other, agent, row, w[agent])
    truth = frozenset(i for i in range(_N) if not np.array_equal(_params(kind, fam, i), _params(kind, other, i)))
    assert truth <= {a for a, _, _ in changes}
    assert fam.differing_agents(other) == truth and other.differing_agents(fam) == truth


@given(kind=_KINDS, rows=_rows, weights=_weights, agent=st.integers(0, _N - 1), row=_row, w=_weights)
def test_a_family_rebuilt_from_the_changed_rows_is_compared_by_its_rows_not_its_object(kind, rows, weights, agent,
                                                                                     row, w):
    """A fresh family object with the same rows is as good as with_agent's (e.g. an example that builds the
    adjacent problem from modified data)."""
    fam = _family(kind, rows, weights)
    changed = _change(kind, fam, agent, row, w[agent])
    new_rows = np.array(rows)
    new_weights = np.array(weights)
    if kind in ("rendezvous", "nonconvex", "ica", "diagonal"):
        new_rows[agent] = row
    if kind == "weighted":
        new_weights[agent] = w[agent][0]
    if kind == "diagonal":
        new_weights[agent] = w[agent]
    rebuilt = _family(kind, new_rows, new_weights)
    assert rebuilt.differing_agents(changed) == frozenset()
    assert fam.differing_agents(rebuilt) == fam.differing_agents(changed)


def test_scalar_weights_and_their_diagonal_are_the_same_costs():
    c = np.array([[0.0, 1.0], [2.0, 3.0]])
    assert WeightedQuadratic(c, [2.0, 3.0]).differing_agents(WeightedQuadratic(c, [[2.0, 2.0], [3.0, 3.5]])) == {1}


def test_shared_parameters_that_differ_change_every_agent():
    y = np.zeros((3, 3))
    d = NonconvexEstimation(y, kappa=0.1).compare_agents(NonconvexEstimation(y, kappa=0.2))
    assert d.differ == {0, 1, 2} and not d.unknown and "shared parameters differ" in d.why


def test_families_of_different_kinds_cannot_be_compared():
    a = np.array([[0.0, 0.0], [1.0, 1.0]])
    d = RendezvousQuadratic(a).compare_agents(WeightedQuadratic(a, 2.0))  # the same costs, another family
    assert d.differ == frozenset() and d.unknown == {0, 1} and "different kinds" in d.why
    assert RendezvousQuadratic(a).differing_agents(WeightedQuadratic(a, 2.0)) is None


def test_a_subclass_describes_no_structure():
    class Shifted(RendezvousQuadratic):
        def _gradient(self, a, x, round_index):
            return super()._gradient(a, x, round_index) + 1.0

    a = np.array([[0.0, 0.0], [1.0, 1.0]])
    d = RendezvousQuadratic(a).compare_agents(Shifted(a))
    assert d.unknown == {0, 1} and "describes no parameters" in d.why


def test_compare_agents_needs_a_family_of_as_many_agents():
    fam = RendezvousQuadratic([[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ProblemError, match="2 and 1 agents"):
        fam.compare_agents(RendezvousQuadratic([[0.0, 0.0]]))
    with pytest.raises(ProblemError, match="must be a CostFamily"):
        fam.compare_agents("costs")


# ----------------------------------------------------------------------------- user callables: identity
def test_user_costs_are_the_same_only_in_the_same_objects():
    fam, fns = _user([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert fam.compare_agents(fam.with_agent(1, value_fn=fns[1][0], gradient_fn=fns[1][1])).differ == frozenset()
    vf, gf = _quad(np.array([1.0, 0.0]))
    adj = fam.with_agent(1, value_fn=vf, gradient_fn=gf)
    d = fam.compare_agents(adj)  # a fresh callable computing the same cost: the structure cannot tell
    assert d.differ == frozenset() and d.unknown == {1} and fam.differing_agents(adj) is None
    same_objects = UserCost([f for f, _ in fns], [g for _, g in fns], FunctionClass(gradient_bound=20.0), dim=2)
    assert fam.differing_agents(same_objects) == frozenset()  # other constants: the same costs
    fresh, _ = _user([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    d = fam.compare_agents(fresh)
    assert d.unknown == {0, 1, 2} and "by identity" in d.why


def test_one_callable_replaced_is_unknown_too():
    fam, fns = _user([[0.0, 0.0], [1.0, 0.0]])
    other = UserCost([fns[0][0], fns[1][0]], [fns[0][1], _quad(np.array([1.0, 0.0]))[1]], FC, dim=2)
    assert fam.compare_agents(other).unknown == {1}


# ----------------------------------------------------------------------------- overrides: the base and the own entry
def test_overrides_compare_their_own_parameters_and_the_bases_rows():
    base = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    a, b = LinearOverride(base, 1, [1.0, 0.0]), LinearOverride(base, 1, [1.0, 0.0])
    assert a.differing_agents(b) == frozenset()
    assert a.differing_agents(LinearOverride(base, 1, [0.0, 1.0])) == {1}
    assert a.differing_agents(base) == {1} and base.differing_agents(a) == {1}  # a linear cost is no quadratic
    assert a.differing_agents(LinearOverride(base.with_agent(2, address=[0.5, 0.5]), 1, [1.0, 0.0])) == {2}
    assert a.differing_agents(LinearOverride(base, 0, [1.0, 0.0])) == {0, 1}
    k = KinkedOverride(base, 1, 0, 0.5, 1.0, 1e-3)
    assert k.differing_agents(KinkedOverride(base, 1, 0, 0.5, 1.0, 1e-3)) == frozenset()
    assert k.differing_agents(k.with_agent(1, position=0.25)) == {1}
    assert k.differing_agents(a) == {1}


def test_an_override_of_user_costs_leaves_its_agent_unknown_against_the_base():
    fam, _ = _user([[0.0, 0.0], [1.0, 0.0]])
    d = fam.compare_agents(LinearOverride(fam, 0, [1.0, 1.0]))
    assert d.differ == frozenset() and d.unknown == {0}


# ----------------------------------------------------------------------------- rounds of online losses
def test_batch_losses_compare_each_rounds_batch():
    loss = BatchLoss("logistic", [[[1.0, 0.0]]] * 4, [[1.0]] * 4, num_nodes=2)
    adj = loss.with_round(3, features=[[0.0, 1.0]], labels=[-1.0])
    assert loss.compare_rounds(adj).differ == {3} and not loss.compare_rounds(adj).unknown
    rebuilt = BatchLoss("logistic", adj.features, adj.labels, num_nodes=2)
    assert adj.compare_rounds(rebuilt).differ == frozenset()
    other_kind = BatchLoss("hinge", loss.features, loss.labels, num_nodes=2)
    assert loss.compare_rounds(other_kind).differ == {1, 2, 3, 4}
    lin = LinearRound(loss, 2, [1.0, 1.0])
    assert loss.compare_rounds(lin).differ == {2} and lin.compare_rounds(LinearRound(adj, 2, [1.0, 1.0])).differ == {3}


def test_user_online_losses_compare_rounds_by_identity():
    vf, gf = (lambda t, x: float(x @ x)), (lambda t, x: 2 * x)
    loss = UserOnlineLoss(vf, gf, FC, dim=2, num_rounds=3, num_nodes=2)
    same = loss.with_round(2, value_fn=vf, gradient_fn=gf)
    assert loss.compare_rounds(same).differ == frozenset() and not loss.compare_rounds(same).unknown
    assert loss.compare_rounds(loss.with_round(2, value_fn=lambda t, x: 0.0, gradient_fn=gf)).unknown == {2}
    fresh = UserOnlineLoss(lambda t, x: float(x @ x), gf, FC, dim=2, num_rounds=3, num_nodes=2)
    assert loss.compare_rounds(fresh).unknown == {1, 2, 3}
    with pytest.raises(ProblemError, match="differ in"):
        loss.compare_rounds(UserOnlineLoss(vf, gf, FC, dim=2, num_rounds=4, num_nodes=2))
