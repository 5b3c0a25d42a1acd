"""The batch engine's SimPy event ranks against their definition, computed by sorting the explicit keys.

An agent's event key (``asyncdp.engine.batch_clocks._event_ranks``): its
``Initialize`` event is ``((0, 0, agent),)``; every later valid slot is
``((time, 1),)`` followed by the key of the agent's previous valid slot (the
event that scheduled it). SimPy processes events in the lexicographic order
of these keys; the ranks must be the positions in that order, exactly. Times
are drawn on a coarse grid so that many events tie and the ties are broken by
the ancestors (the case the prefix doubling refines).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncdp.engine.batch_clocks import _event_ranks


def reference_ranks(times: np.ndarray, valid: np.ndarray) -> np.ndarray:
    n, slots = times.shape
    keys: dict[tuple[int, int], tuple] = {}
    for i in range(n):
        prev: tuple = ((0.0, 0, i),)
        keys[(i, 0)] = prev
        for s in range(1, slots):
            if valid[i, s]:
                prev = ((float(times[i, s]), 1),) + prev
                keys[(i, s)] = prev
    ordered = sorted(keys, key=lambda e: keys[e])
    out = np.full((n, slots), -1, dtype=np.int64)
    for k, (i, s) in enumerate(ordered):
        out[i, s] = k
    return out


@st.composite
def event_tables(draw):
    n = draw(st.integers(1, 6))
    slots = draw(st.integers(1, 9))
    steps = draw(st.lists(st.lists(st.integers(0, 2), min_size=slots - 1, max_size=slots - 1), min_size=n,
                          max_size=n))
    times = np.zeros((n, slots))
    if slots > 1:
        times[:, 1:] = np.cumsum(np.array(steps, dtype=float) * 0.5, axis=1)  # nondecreasing, ties frequent
    valid = np.array(draw(st.lists(st.lists(st.booleans(), min_size=slots, max_size=slots), min_size=n,
                                   max_size=n)), dtype=bool).reshape(n, slots)
    valid[:, 0] = True  # every agent has its Initialize event
    return times, valid


@settings(max_examples=200, deadline=None)
@given(event_tables())
def test_event_ranks_are_the_positions_of_the_explicit_keys(table):
    times, valid = table
    assert np.array_equal(_event_ranks(times, valid), reference_ranks(times, valid))


def test_ties_broken_by_ancestors_several_levels_up():
    # agents 0 and 1 have equal times at slots 1..3; they differ only at the Initialize events (agent order), and
    # agent 2 ties with them from slot 2 on but was scheduled by an earlier event at slot 1
    times = np.array([[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], [0.0, 0.5, 2.0, 3.0]])
    valid = np.ones(times.shape, dtype=bool)
    ranks = _event_ranks(times, valid)
    assert ranks[:, 0].tolist() == [0, 1, 2]
    assert ranks[2, 1] < ranks[0, 1] < ranks[1, 1]
    assert ranks[2, 2] < ranks[0, 2] < ranks[1, 2] and ranks[2, 3] < ranks[0, 3] < ranks[1, 3]
    assert np.array_equal(ranks, reference_ranks(times, valid))
