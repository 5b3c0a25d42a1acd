"""The kinked members of a one-agent gradient class (asyncdp.privacy.kinked): in the class, and placed at the states."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from asyncdp.engine.schedule import RealizedSchedule
from asyncdp.errors import ProblemError
from asyncdp.privacy.kinked import (KINK_OFFSET, KinkedOverride, SawtoothOverride, kink_positions, kinked_pairs,
                                    mirrored_pairs, sawtooth_pairs)
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.domains import Box

BASE = RendezvousQuadratic([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
BASE2 = RendezvousQuadratic([[0.0, 0.0], [1.0, 1.0]])
coords = st.floats(-1e3, 1e3, allow_nan=False)


@given(st.lists(coords, min_size=3, max_size=3), coords, st.integers(0, 2), st.floats(1e-3, 10.0),
       st.floats(1e-6, 1.0))
@example([1.00001, 0.0, 0.0], 550.85986097675, 0, 7.4609375, 1e-06)  # sqrt(t^2 + eta^2) rounds below |t|
def test_the_gradient_is_within_the_class_bound_in_the_l1_and_the_l2_norm(x, c, axis, scale, width):
    g = KinkedOverride(BASE, 1, axis, c, scale, width).gradient(1, np.array(x))
    assert np.linalg.norm(g, 1) <= scale and np.linalg.norm(g) <= scale  # one non-zero entry: both the same
    assert np.count_nonzero(np.delete(g, axis)) == 0


@given(st.lists(st.floats(-5.0, 5.0), min_size=3, max_size=3), st.floats(-5.0, 5.0), st.integers(0, 2))
def test_the_gradient_is_the_values_derivative(x, c, axis):
    """Central differences of the value (step 1e-6, width 0.1: the second derivative is at most 10, so the
    difference is within 1e-5 of the derivative, plus round-off 1e-16 * 6 / 1e-6)."""
    fam = KinkedOverride(BASE, 0, axis, c, 2.0, 0.1)
    x = np.array(x)
    h = 1e-6 * np.eye(3)[axis]
    numeric = (float(fam.value(0, x + h)) - float(fam.value(0, x - h))) / 2e-6
    assert fam.gradient(0, x)[axis] == pytest.approx(numeric, abs=1e-5 + 1e-8)


def test_the_other_agents_costs_are_kept():
    fam = KinkedOverride(BASE, 0, 0, 0.0, 1.0, 1e-3)
    x = np.ones((2, 3))
    assert fam.gradient(np.arange(2), x)[1].tolist() == BASE.gradient(1, x[1]).tolist()
    assert float(fam.value(1, x[1])) == float(BASE.value(1, x[1]))


@pytest.mark.parametrize("kwargs, match", [({"axis": 3}, "axis"), ({"position": np.nan}, "position"),
                                           ({"scale": 0.0}, "scale"), ({"width": -1.0}, "width"),
                                           ({"agent": 5}, "agent"), ({"sign": 0.5}, "sign"),
                                           ({"sign": True}, "sign")])
def test_bad_parameters_are_named(kwargs, match):
    args = {"agent": 0, "axis": 0, "position": 0.0, "scale": 1.0, "width": 1e-3} | kwargs
    with pytest.raises(ProblemError, match=match):
        KinkedOverride(BASE, **args)


@given(st.lists(st.floats(-5.0, 5.0), min_size=3, max_size=3), st.floats(-5.0, 5.0), st.integers(0, 2))
def test_the_mirror_image_is_the_opposite_cost(x, c, axis):
    """``sign = -1``: value and gradient the negation of the kinked cost's, at every point."""
    f, g = (KinkedOverride(BASE, 0, axis, c, 2.0, 0.1, sign) for sign in (1.0, -1.0))
    x = np.array(x)
    assert float(g.value(0, x)) == -float(f.value(0, x)) and np.array_equal(g.gradient(0, x), -f.gradient(0, x))
    assert g.differing_agents(f) == frozenset({0})
    box = Box(-10.0, 10.0, dim=3)
    assert f.function_class(box).mu == 0.0 and g.function_class(box).mu is None  # concave: no mu = 0


def test_a_mirrored_pair_is_kinked_between_the_own_message_and_the_combination():
    """Round 1: agent 0 sends (1, 0) and combines (2.5, 3.0): the kink midway along each axis, ``P`` the kinked
    cost (gradient ``-C`` at the own message, ``+C`` at the combination) and ``P'`` its mirror image."""
    y = {"y": np.array([[[[1.0, 0.0], [3.0, 4.0]]]])}
    sched = [_one_round([[0.25, 0.75], [0.5, 0.5]])]
    for axis, own, mixed in ((0, 1.0, 2.5), (1, 0.0, 3.0)):
        (pair,) = mirrored_pairs(y, sched, 0, axis, np.eye(2)[axis], 2.0)
        assert pair.mirrored and pair.position == (own + mixed) / 2 and pair.scale == 2.0
        p, q = pair.first_costs(BASE2, 0), pair.costs(BASE2, 0)
        for point, side in ((own, -1.0), (mixed, 1.0)):
            x = np.zeros(2)
            x[axis] = point
            assert p.gradient(0, x)[axis] == pytest.approx(side * 2.0, rel=1e-5)
            assert np.array_equal(q.gradient(0, x), -p.gradient(0, x))
    with pytest.raises(ValueError, match="linear"):
        kinked_pairs({(0, 1.0): y}, sched, 0, 2.0, 2, 1)[0].first_costs(BASE2, 0)
    # a channel of other values than points (a round counter, one wide) gets none, along any axis
    both = {"c": np.array([[[[1.0], [1.0]]]]), **y}
    assert [p.position for p in mirrored_pairs(both, sched, 0, 1, np.eye(2)[1], 2.0)] == [1.5]


def _one_round(w):
    return RealizedSchedule.from_dense([np.array(w)], [np.ones((2, 2), dtype=int)])


def test_the_positions_are_the_agents_combination_and_own_message():
    y = {"y": np.array([[[[1.0, 0.0], [3.0, 4.0]]]])}  # run 0, round 1: agent 0 sends (1, 0), agent 1 (3, 4)
    got = [(w, t, p.tolist()) for w, t, p in kink_positions(y, [_one_round([[0.25, 0.75], [0.5, 0.5]])], 0, 0, 1)]
    assert got == [("mixed", 1, [2.5, 3.0]), ("own", 1, [1.0, 0.0])]


def test_each_kink_lies_beyond_a_visited_state_on_the_side_opposite_the_linear_cost():
    """Reference ``+C e_k``: the kink above the state, where the kinked gradient is ``-C e_k``; ``-C e_k``: below."""
    y = {"y": np.array([[[[1.0, 0.0], [3.0, 4.0]]]])}
    sched = [_one_round([[0.25, 0.75], [0.5, 0.5]])]
    pairs = kinked_pairs({(1, 1.0): y, (1, -1.0): y}, sched, 0, 2.0, 2, 2)
    assert [(p.gradient, p.axis, p.position) for p in pairs] == [
        ((0.0, 2.0), 1, 3.0 + KINK_OFFSET), ((0.0, 2.0), 1, 0.0 + KINK_OFFSET),
        ((0.0, -2.0), 1, 3.0 - KINK_OFFSET), ((0.0, -2.0), 1, 0.0 - KINK_OFFSET)]
    for p in pairs:
        fam = p.costs(RendezvousQuadratic([[0.0, 0.0], [1.0, 1.0]]), 0)
        at_state = fam.gradient(0, np.array([0.0, p.position - np.sign(p.gradient[1]) * KINK_OFFSET]))
        assert at_state[1] == pytest.approx(-p.gradient[1], rel=1e-5)  # the opposite extremal gradient


def test_stacked_kinked_families_give_each_familys_own_gradients():
    """The stacked replay's fast path for kinked families (one base call for the stack) returns, run block by run
    block, exactly what each family's own call returns."""
    from asyncdp.privacy.stacked_costs import StackedCosts

    fams = [KinkedOverride(BASE, 1, axis, c, 1.5, 1e-3, sign) for axis, c, sign in ((0, 0.3, 1.0), (2, -1.0, -1.0),
                                                                                     (1, 7.0, 1.0))]
    stacked = StackedCosts(fams, 4)
    x = np.random.default_rng(0).normal(size=(12, 2, 3)) * 3
    got = stacked.gradient(np.arange(2), x)
    want = np.concatenate([f.gradient(np.arange(2), x[4 * k:4 * (k + 1)]) for k, f in enumerate(fams)])
    assert stacked._kinked is not None and np.array_equal(got, want)



def test_groups_of_linear_and_kinked_candidates_over_one_base_share_its_gradients_and_get_their_own():
    """Consecutive groups of one agent's linear costs, each run's own agent's linear costs and one agent's kinked
    costs over one base (the search's first batch with the kinked pairs riding along, both problems paired): the
    base's gradients are computed once for the whole stack, and every run block gets exactly its family's own
    call; a base gradient that is not finite leaves the call to the families (which raise their error)."""
    from asyncdp.errors import CostValueError
    from asyncdp.privacy.stacked_costs import StackedCosts
    from asyncdp.problems.costs import LinearOverride

    base = RendezvousQuadratic([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
    fams = [LinearOverride(base, 1, [1.0, 0.0, -2.0]), LinearOverride(base, 1, [0.5, 0.5, 0.5]),
            KinkedOverride(base, 1, 0, 0.3, 1.5, 1e-3), KinkedOverride(base, 1, 2, -1.0, 1.5, 1e-3, -1.0),
            LinearOverride(base, 2, [3.0, 1.0, 0.0]), LinearOverride(base, 0, [0.0, -1.0, 1.0]),
            KinkedOverride(base, 1, 1, 7.0, 0.5, 1e-2), KinkedOverride(base, 1, 0, 1.0, 0.5, 1e-2, -1.0)]
    sizes = [3, 3, 2, 2, 1, 2, 3, 1]
    stacked = StackedCosts(fams, sizes)
    assert stacked._shared is base and len(stacked._groups) == 4  # (linear, kinked, linear of two agents, kinked)
    x = np.random.default_rng(3).normal(size=(sum(sizes), 3, 3)) * 3
    agents = np.arange(3)
    starts = np.cumsum([0] + sizes)
    want = np.concatenate([f.gradient(agents, x[starts[k]:starts[k + 1]], round_index=2) for k, f in enumerate(fams)])
    np.testing.assert_array_equal(stacked.gradient(agents, x, round_index=2), want)
    bad = x.copy()
    bad[5, 0, 1] = np.inf  # (the base's gradient of run 5, agent 0: not finite)
    with pytest.raises(CostValueError):
        stacked.gradient(agents, bad, round_index=2)

# -- round adjacency: kinked losses of one round (KinkedRound) --------------------------------------------------

def _online() -> object:
    from asyncdp.problems.online import synthetic_olr

    return synthetic_olr(num_nodes=3, dim=4, num_rounds=5, seed=2)[0]


@given(st.lists(coords, min_size=4, max_size=4), coords, st.integers(0, 3), st.floats(1e-3, 10.0),
       st.floats(1e-6, 1.0))
@example([1.00001, 0.0, 0.0, 0.0], 550.85986097675, 0, 7.4609375, 1e-06)  # sqrt(t^2 + eta^2) rounds below |t|
def test_the_kinked_round_loss_is_in_the_round_class_and_each_node_reads_its_block(x, c, axis, scale, width):
    from asyncdp.privacy.kinked import KinkedRound

    loss = _online()
    fam = KinkedRound(loss, 2, axis, c, scale, width)
    g = fam.round_gradient(2, np.array(x))
    assert np.linalg.norm(g, 1) <= scale and np.linalg.norm(g) <= scale
    assert np.count_nonzero(np.delete(g, axis)) == 0
    blocks = fam.gradient(np.arange(3), np.array([x] * 3), round_index=2)
    assert np.array_equal(blocks.sum(axis=0), g)  # the blocks partition the coordinates
    other = fam.gradient(np.arange(3), np.array([x] * 3), round_index=3)
    assert np.array_equal(other, loss.gradient(np.arange(3), np.array([x] * 3), round_index=3))


def test_bad_kinked_round_parameters_are_named():
    from asyncdp.privacy.kinked import KinkedRound

    with pytest.raises(ProblemError, match="round_index"):
        KinkedRound(_online(), 9, 0, 0.0, 1.0, 1e-3)
    with pytest.raises(ProblemError, match="axis"):
        KinkedRound(_online(), 1, 4, 0.0, 1.0, 1e-3)
    with pytest.raises(ProblemError, match="OnlineLoss"):
        KinkedRound(BASE, 1, 0, 0.0, 1.0, 1e-3)


def test_stacked_kinked_rounds_give_each_familys_own_gradients():
    """The stacked fast path for kinked loss sequences of different rounds returns, run block by run block and
    round by round, exactly what each sequence's own call returns."""
    from asyncdp.privacy.kinked import KinkedRound
    from asyncdp.privacy.stacked_costs import StackedCosts

    loss = _online()
    fams = [KinkedRound(loss, t0, axis, c, 1.5, 1e-3) for t0, axis, c in ((1, 0, 0.3), (2, 3, -1.0), (1, 1, 7.0))]
    stacked = StackedCosts(fams, 4)
    x = np.random.default_rng(0).normal(size=(12, 3, 4)) * 3
    assert stacked._kinked is not None
    for t in (1, 2, 3):
        got = stacked.gradient(np.arange(3), x, round_index=t)
        want = np.concatenate([f.gradient(np.arange(3), x[4 * k:4 * (k + 1)], round_index=t)
                               for k, f in enumerate(fams)])
        assert np.array_equal(got, want), t


def test_kinks_are_read_from_the_channels_of_points_only():
    """A one-coordinate channel (a reported loss ``v``) next to the points ``y``: the kinks along coordinate 1 are
    read from ``y`` alone, as without ``v`` (it has no coordinate 1: an IndexError stopped the check)."""
    from asyncdp.privacy.kinked import kinked_pairs, kinked_round_pairs

    y = np.array([[[[1.0, 0.0], [3.0, 4.0]], [[2.0, 2.0], [6.0, 8.0]]]])  # run 0, rounds 1 and 2
    v = np.array([[[[5.0], [7.0]], [[9.0], [11.0]]]])
    w = np.array([[0.5, 0.5], [0.25, 0.75]])
    sched = [RealizedSchedule.from_dense([w, w], [np.ones((2, 2), dtype=int)] * 2)]
    for name, pairs, alone in (
            ("round", kinked_round_pairs({2: {"v": v, "y": y}}, sched, {1: 1}, 2.0, 1, 2),
             kinked_round_pairs({2: {"y": y}}, sched, {1: 1}, 2.0, 1, 2)),
            ("agent", kinked_pairs({(1, 1.0): {"v": v, "y": y}}, sched, 1, 2.0, 2, 4),
             kinked_pairs({(1, 1.0): {"y": y}}, sched, 1, 2.0, 2, 4))):
        assert pairs and [(p.gradient, p.position) for p in pairs] == [(p.gradient, p.position) for p in alone], name


def test_a_transcript_without_a_channel_of_points_has_no_kinks():
    """Only a one-coordinate channel beside a 2-D state (no channel is as wide as the state): no kink position, so
    no pairs (a RuntimeError 'generator raised StopIteration' stopped the check)."""
    from asyncdp.privacy.kinked import kink_positions, kinked_pairs, kinked_round_pairs

    v = np.array([[[[5.0], [7.0]], [[9.0], [11.0]]]])
    w = np.array([[0.5, 0.5], [0.25, 0.75]])
    sched = [RealizedSchedule.from_dense([w, w], [np.ones((2, 2), dtype=int)] * 2)]
    assert list(kink_positions({}, sched, 1, 0, 2)) == []
    assert kinked_pairs({(1, 1.0): {"v": v}}, sched, 1, 2.0, 2, 4) == []
    assert kinked_round_pairs({2: {"v": v}}, sched, {1: 1}, 2.0, 1, 2) == []


def test_the_round_kinks_lie_beyond_the_owning_nodes_reads_in_the_changed_round():
    """Round 2's kinks are at node 1's combination of round 2 (the owner of coordinate 1), round 1 is not read."""
    from asyncdp.privacy.kinked import kinked_round_pairs

    y = {"y": np.array([[[[1.0, 0.0], [3.0, 4.0]], [[2.0, 2.0], [6.0, 8.0]]]])}  # run 0, rounds 1 and 2
    w = np.array([[0.5, 0.5], [0.25, 0.75]])
    sched = [RealizedSchedule.from_dense([w, w], [np.ones((2, 2), dtype=int)] * 2)]
    pairs = kinked_round_pairs({2: y}, sched, {1: 1}, 2.0, 1, 2)
    # in round 2 node 1 reads node 0's round-1 message (the schedule's sender round 1) and its own round-2 one:
    # 0.25 * (1, 0) + 0.75 * (6, 8) = (4.75, 6)
    assert [(p.round_index, p.gradient, p.position) for p in pairs] == [
        (2, (0.0, 2.0), 6.0 + KINK_OFFSET), (2, (0.0, -2.0), 6.0 - KINK_OFFSET)]


def test_the_mirrored_round_loss_is_the_opposite_at_every_point_and_a_bad_sign_is_named():
    from asyncdp.privacy.kinked import KinkedRound

    x = np.random.default_rng(1).normal(size=(3, 4))
    f, g = KinkedRound(_online(), 2, 1, 0.3, 1.5, 1e-3), KinkedRound(_online(), 2, 1, 0.3, 1.5, 1e-3, sign=-1)
    assert np.array_equal(g.gradient(np.arange(3), x, round_index=2), -f.gradient(np.arange(3), x, round_index=2))
    assert float(g.value(0, x[0], round_index=2)) == -float(f.value(0, x[0], round_index=2))
    assert g.to_dict()["sign"] == -1.0 and g.with_round(3, features=np.zeros((1, 4)), labels=np.zeros(1)).signed_scale \
        == -1.5
    with pytest.raises(ProblemError, match="sign"):
        KinkedRound(_online(), 2, 1, 0.3, 1.5, 1e-3, sign=2)


def test_the_mirrored_round_pairs_read_the_changed_round_on():
    """Round adjacency: the mirrored, vanishing and offset pairs of round 2's loss are placed at what node 1 reads
    from round 2 on (round 1 does not read that loss), and are pairs of round 2's loss."""
    from asyncdp.privacy.kinked import offset_pairs, vanishing_pairs

    y = {"y": np.array([[[[1.0, 0.0], [3.0, 4.0]], [[2.0, 2.0], [6.0, 8.0]]]])}  # run 0, rounds 1 and 2
    w = np.array([[0.5, 0.5], [0.25, 0.75]])
    sched = [RealizedSchedule.from_dense([w, w], [np.ones((2, 2), dtype=int)] * 2)]
    g = np.array([0.0, 2.0])
    # node 1 in round 2: mixed (4.75, 6), own (6, 8)
    mirrored = mirrored_pairs(y, sched, 1, 1, g, 2.0, changed_round=2)
    assert [(p.round_index, p.position, p.mirrored) for p in mirrored] == [(2, 7.0, True)]
    assert mirrored[0].label.startswith("round 2, mirrored kink")
    assert {(p.round_index, p.position) for p in vanishing_pairs(y, sched, 1, 1, g, 2.0, changed_round=2)} == {
        (2, 6.0), (2, 8.0)}
    assert [(p.round_index, p.position + 1e6) for p in offset_pairs(y, sched, 1, 1, g, 2.0, changed_round=2)] == [
        (2, 6.0)]


def test_a_stack_at_an_infinite_point_leaves_the_error_to_each_familys_own_call():
    """A kinked entry at an infinite point is inf / inf: the stack answers ``None`` (each candidate's own call
    then raises its cost error), never NaN, which a per-round comparison would read as no excess."""
    from asyncdp.errors import CostValueError
    from asyncdp.privacy.stacked_gradients import _KinkedStack
    from asyncdp.problems.costs import UserCost
    from asyncdp.problems.costs.function_class import FunctionClass

    base = UserCost([lambda x: float(np.log(np.cosh(x)).sum())] * 2, [np.tanh] * 2,
                    FunctionClass(gradient_bound=1.0), dim=2)  # bounded gradient, finite at infinity
    fams = [KinkedOverride(base, 1, 0, 0.3, 1.0, 1e-4), KinkedOverride(base, 1, 0, -0.2, 1.0, 1e-4)]
    x = np.zeros((2, 2, 2))
    x[0, 1, 0] = np.inf
    stack = _KinkedStack.of(fams, 1)
    assert stack is not None and stack.gradient(np.arange(2), x, {}) is None
    with pytest.raises(CostValueError, match="agent 1: gradient is not finite"):
        fams[0].gradient(np.arange(2), x[:1])
    assert stack.gradient(np.arange(2), np.zeros((2, 2, 2)), {}) is not None  # finite points: the stack answers


kinks = st.lists(st.floats(-50.0, 50.0), min_size=2, max_size=6, unique=True).map(sorted).filter(
    lambda c: min(np.diff(c)) > 0.5)


@given(st.lists(coords, min_size=3, max_size=3), kinks, st.integers(0, 2), st.floats(1e-3, 10.0), st.floats(1e-6, 0.02))
def test_the_sawtooth_gradient_is_within_the_class_bound_and_alternates(x, c, axis, scale, width):
    """Every point: norm at most ``scale`` (one non-zero entry); midway between kinks ``j - 1`` and ``j``: the sign
    ``(-1)^j`` (``-`` below the first kink), of size ``scale`` up to ``(width / half gap)^2 / 2 < 0.0032``."""
    fam = SawtoothOverride(BASE, 1, axis, c, scale, width)
    g = fam.gradient(1, np.array(x))
    assert np.linalg.norm(g, 1) <= scale and np.count_nonzero(np.delete(g, axis)) == 0
    mids = [c[0] - 1.0, *((a + b) / 2 for a, b in zip(c[:-1], c[1:])), c[-1] + 1.0]
    for j, m in enumerate(mids):
        got = fam.gradient(1, np.eye(3)[axis] * m)[axis]
        assert got == pytest.approx((-1.0) ** (j + 1) * scale, rel=1e-2)


@given(st.floats(-60.0, 60.0), kinks, st.integers(0, 2))
def test_the_sawtooth_gradient_is_its_values_derivative_and_the_mirror_image_its_negation(u, c, axis):
    """Central differences (step 1e-6, width 0.1: second derivative at most 20, error within 2e-5, plus round-off
    1e-16 * 1e3 / 1e-6); the mirror image (``sign = -1``) is ``-f`` at every point, concave pieces included."""
    f, g = (SawtoothOverride(BASE, 0, axis, c, 2.0, 0.1, sign) for sign in (1.0, -1.0))
    x, h = u * np.eye(3)[axis], 1e-6 * np.eye(3)[axis]
    numeric = (float(f.value(0, x + h)) - float(f.value(0, x - h))) / 2e-6
    assert f.gradient(0, x)[axis] == pytest.approx(numeric, abs=2e-5 + 1e-7)
    assert float(g.value(0, x)) == -float(f.value(0, x)) and np.array_equal(g.gradient(0, x), -f.gradient(0, x))
    assert f.function_class(Box(-100.0, 100.0, dim=3)).mu is None  # not convex


@pytest.mark.parametrize("positions", [[0.0], [1.0, 0.0], [0.0, 1e-4], [0.0, np.inf]])
def test_bad_sawtooth_positions_are_named(positions):
    with pytest.raises(ProblemError, match="positions"):
        SawtoothOverride(BASE, 0, 0, positions, 1.0, 1e-3)


@pytest.mark.parametrize("width", [np.nan, -1.0, 0.0])
def test_a_bad_sawtooth_width_is_named_as_the_width_not_the_positions(width):
    """The width is checked before the kinks' spacing is measured in it (``>= 2 nan`` is false for any spacing)."""
    with pytest.raises(ProblemError, match="^width must be finite and > 0"):
        SawtoothOverride(BASE, 0, 0, [0.0, 1.0], 1.0, width)


def test_the_sawtooth_is_kinked_along_every_step_the_agent_takes():
    """Agent 0 at 0, 1, 3 combining 1, 2.5, 3.5 (self weight 1/2): kinks midway along each step, in order."""
    one = RealizedSchedule.from_dense([np.full((2, 2), 0.5)] * 3, [np.full((2, 2), t, dtype=int) for t in (1, 2, 3)])
    y = {"x": np.array([[[[0.0], [2.0]], [[1.0], [4.0]], [[3.0], [4.0]]]])}
    (pair,) = sawtooth_pairs(y, [one], 0, 0, np.ones(1), 1.0)
    assert pair.positions == (0.5, 1.75, 3.25) and pair.mirrored
    f, g = pair.first_costs(BASE2, 0), pair.costs(BASE2, 0)
    for u in (0.0, 1.0, 3.0):  # P's gradient alternates along the points read, P' its opposite
        x = np.array([u, 0.0])
        assert np.array_equal(g.gradient(0, x), -f.gradient(0, x))
    assert [round(float(f.gradient(0, np.array([u, 0.0]))[0])) for u in (0.0, 1.0, 3.0)] == [-1, 1, -1]
