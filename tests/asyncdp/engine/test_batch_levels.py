"""The level-order path's mixing and row writes (``batch_levels``): the fast paths equal the general ones bit for bit.

``_mix_rows`` forms each row's sum as the row-order sparse product does (from 0, adding each used entry's
product in slot order); its mask-free path (every slot used) must give the bits of its masked path and of
that sum written out entry by entry. ``_put_rows`` writes rows through a view of each row as one opaque
element; it must leave the same bytes as numpy's fancy assignment. Tolerance: none (bitwise equality,
compared as bytes so that the sign of zero and NaN payloads count).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncdp.engine.batch_levels import _mix_rows, _put_rows, _row_view


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _reference(store: np.ndarray, col: np.ndarray, weight: np.ndarray, used: np.ndarray) -> np.ndarray:
    """Each row's sum entry by entry, in slot order, from 0.0 (the row-order sparse product's sum)."""
    slots, k = col.shape
    out = np.zeros((k, store.shape[1]))
    for row in range(k):
        for p in range(slots):
            if used[p, row, 0]:
                out[row] = out[row] + weight[p, row, 0] * store[col[p, row]]
    return out


def _case(seed: int, slots: int, rows: int, width: int, signed_zeros: bool):
    rng = np.random.default_rng(seed)
    store = rng.standard_normal((40, width))
    if signed_zeros:  # -0.0 entries and weights: a sum of -0.0 terms from +0.0 is +0.0
        store[rng.random(store.shape) < 0.3] = -0.0
    col = rng.integers(0, store.shape[0], (slots, rows))
    weight = rng.uniform(-1.0, 1.0, (slots, rows, 1))
    if signed_zeros:
        weight[rng.random(weight.shape) < 0.2] = -0.0
    return store, col, weight


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), slots=st.integers(0, 6), rows=st.integers(0, 30), width=st.integers(1, 5),
       signed_zeros=st.booleans())
def test_mask_free_mixing_equals_the_masked_path_and_the_entrywise_sum(seed, slots, rows, width, signed_zeros):
    store, col, weight = _case(seed, slots, rows, width, signed_zeros)
    every = np.ones((slots, rows, 1), dtype=bool)
    fast = _mix_rows(store, col, weight, None)
    assert fast.shape == (rows, width)
    assert _bits(fast) == _bits(_mix_rows(store, col, weight, every))
    assert _bits(fast) == _bits(_reference(store, col, weight, every))


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), slots=st.integers(1, 6), rows=st.integers(1, 30), width=st.integers(1, 5),
       signed_zeros=st.booleans())
def test_masked_mixing_skips_unused_slots_even_if_their_rows_hold_nan(seed, slots, rows, width, signed_zeros):
    store, col, weight = _case(seed, slots, rows, width, signed_zeros)
    rng = np.random.default_rng(seed + 1)
    used = rng.random((slots, rows, 1)) < 0.6
    store[0] = np.nan  # an unused slot points at a row never written (NaN in the unicast store)
    col[used[:, :, 0]] = rng.integers(1, store.shape[0], int(used.sum()))
    col[~used[:, :, 0]] = 0
    weight[~used] = 7.0  # ignored: an unused slot contributes nothing
    got = _mix_rows(store, col, weight, used)
    assert not np.isnan(got).any()
    assert _bits(got) == _bits(_reference(store, col, weight, used))


@pytest.mark.parametrize("shape, dtype", [((7,), np.float64), ((7, 3), np.float64), ((7, 2, 2), np.int32),
                                          ((7, 1), np.bool_)])
def test_put_rows_through_row_views_equals_fancy_assignment(shape, dtype):
    rng = np.random.default_rng(3)
    arr = (rng.standard_normal(shape) * 5).astype(dtype)
    rows = np.array([5, 0, 3])
    values = (rng.standard_normal((3,) + shape[1:]) * 5).astype(dtype)
    expected = arr.copy()
    expected[rows] = values
    kept = arr.copy()
    _put_rows(arr, rows, values)  # the view made on the call
    _put_rows(kept, rows, values, _row_view(kept))  # the view kept by the caller
    assert _bits(arr) == _bits(expected) and _bits(kept) == _bits(expected)


def test_put_rows_falls_back_to_fancy_assignment_when_layouts_differ():
    arr = np.zeros((4, 3))[:, :2]  # not C-contiguous: no row view
    assert _row_view(arr) is None
    _put_rows(arr, np.array([1, 2]), np.array([[1, 2], [3, 4]], dtype=np.int64))  # another dtype
    assert arr.tolist() == [[0.0, 0.0], [1.0, 2.0], [3.0, 4.0], [0.0, 0.0]]
