"""A shared round's layered combinations (every receiver's k-th sender at once) against the general gather.

:class:`accounting.shared_rounds.SharedRound` combines a sparse round (few senders per receiver) layer by
layer; the general path gathers ``R x N x N`` entries and sums them with :func:`numpy.einsum`. Both must give the
same combinations to the bit (the replay's losses and residuals depend on it), for any weights, including zero
weights on used links, negative weights, and messages with zeros of either sign.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounting.round_combinations import _mixed, _others, _own
from accounting.shared_rounds import SharedRound


def _general(w: np.ndarray, src: np.ndarray, y: np.ndarray, t: int) -> np.ndarray:
    """The general path's combinations of round ``t``: every run's ``(W, S)`` gathered, then the own term."""
    runs = y.shape[0]
    w_r = np.ascontiguousarray(np.broadcast_to(w, (runs,) + w.shape))
    src_r = np.ascontiguousarray(np.broadcast_to(src, (runs,) + src.shape))
    return _mixed(_others(y, w_r, src_r, t, False), _own(y[:, t - 1], y[:, t - 1], False), t)


def _ring(n: int) -> tuple[np.ndarray, np.ndarray]:
    w = 0.5 * np.eye(n)
    w[(np.arange(n) + 1) % n, np.arange(n)] += 0.5
    return w, np.where(w > 0, 2, 0)


def test_a_ring_round_is_combined_by_layers_exactly_as_the_general_path():
    """One sender per receiver: one layer instead of a column per sender, the same numbers."""
    w, src = _ring(5)
    one = SharedRound(w, src)
    assert one.layers is not None and len(one.layers) == 1
    y = np.random.default_rng(0).normal(size=(40, 3, 5, 2)) * 10.0 ** np.arange(-3, 3, 1.5)[:4, None, None, None][
        np.arange(40) % 4]
    got = one.mixed(y, 2)
    assert got is not None and got.tobytes() == _general(w, src, y, 2).tobytes()


def test_a_dense_round_keeps_the_columns():
    """Every receiver reads every sender: layers would take more operations than columns."""
    n = 4
    one = SharedRound(np.full((n, n), 1.0 / n), np.full((n, n), 1))
    assert one.layers is None


@st.composite
def _rounds(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    n = draw(st.integers(2, 6))
    d = draw(st.integers(2, 4))
    runs = draw(st.integers(1, 40))
    horizon = 3
    t = draw(st.integers(1, horizon))
    s = draw(st.integers(1, horizon))  # every used message is of one sender round
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    degree = draw(st.integers(0, n - 1))
    used = np.zeros((n, n), dtype=bool)
    for i in range(n):
        others = np.delete(np.arange(n), i)
        used[i, rng.choice(others, size=rng.integers(0, degree + 1), replace=False)] = True
    w = np.where(used, rng.choice([0.0, -0.0, 0.25, -1.5, 1e-300, 3.0], size=(n, n)), 0.0)
    w[np.arange(n), np.arange(n)] = rng.choice([0.0, 0.5, 1.0], size=n)
    src = np.where(used, s, 0)
    src[np.arange(n), np.arange(n)] = t
    y = rng.normal(size=(runs, horizon, n, d)) * 10.0 ** rng.uniform(-5, 5, size=(runs, horizon, n, 1))
    y[rng.random(y.shape) < 0.2] = 0.0
    y[rng.random(y.shape) < 0.2] = -0.0
    return w, src, y, t


@given(_rounds())
def test_shared_round_combinations_equal_the_general_gather_to_the_bit(case):
    w, src, y, t = case
    one = SharedRound(w, src)
    got = one.mixed(y, t)
    assert got is not None
    assert got.tobytes() == _general(w, src, y, t).tobytes()


@pytest.mark.parametrize("runs", [1, 7])
def test_combinations_reusing_a_work_dict_are_new_arrays_equal_to_those_without_it(runs):
    """The replay hands each round's combinations to the rule (which may keep them as its state) and reuses its
    arrays from round to round: a later round must not change an earlier round's combinations (one run
    included, where a transposed buffer is already contiguous)."""
    w, src = _ring(4)
    one = SharedRound(w, src)
    rng = np.random.default_rng(2)
    work: dict = {}
    ys = [rng.normal(size=(runs, 3, 4, 3)) for _ in range(3)]
    kept = [one.mixed(y, 2, work) for y in ys] + [one.others(ys[0], work)]
    for y, got in zip(ys, kept):
        assert got is not None and got.tobytes() == one.mixed(y, 2).tobytes()
    assert kept[3] is not None and kept[3].tobytes() == one.others(ys[0]).tobytes()
    assert not any(np.shares_memory(k, b) for k in kept if k is not None for b in work.values())


def test_later_reads_of_a_batch_sharing_its_rounds_are_those_of_each_run():
    """later_reads reads a round every run shares once (the batch's shared_round) and repeats its reads for each
    run: the same arrays, in the same order, as reading every run's schedule."""
    from accounting.schedule_reads import dense_round, later_reads
    from accounting.shared_rounds import shared_round

    horizon, runs = 4, 5

    class Ahead:  # receiver 1 reads sender 0's next round, receiver 2 sender 1's round after next
        def dense(self, t):
            w = np.full((3, 3), 1.0 / 3.0)
            src = np.full((3, 3), t)
            src[1, 0], src[2, 1] = min(t + 1, horizon), min(t + 2, horizon)
            return w, src

    one = Ahead()

    class Batch:
        def __len__(self):
            return runs

        def dense_runs(self, t):
            return dense_round([one] * runs, t)

        def shared_round(self, t):
            return shared_round(*one.dense(t))

    got, ref = later_reads(Batch(), horizon), later_reads([one] * runs, horizon)
    assert ref[0].size > runs  # reads ahead in several rounds, every run
    assert all(a.tobytes() == b.tobytes() and a.dtype == b.dtype for a, b in zip(got, ref))
