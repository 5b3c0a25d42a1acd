"""``all_finite`` is exactly ``numpy.isfinite(x).all()``: on points, small batches (summed as Python floats) and
larger arrays, with NaN, infinities and finite entries whose sum overflows."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from asyncdp.problems.finite import SHORT, all_finite

entries = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.sampled_from([1e308, -1e308]))


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5), elements=entries))
def test_all_finite_is_numpys_test(x):
    assert all_finite(x) is bool(np.isfinite(x).all())


def test_small_batches_take_the_python_sum_and_overflow_stays_finite():
    batch = np.full((1, SHORT // 2, 2), 1e308)  # SHORT entries: summed in Python floats, the sum overflows
    assert all_finite(batch)
    for bad in (np.nan, np.inf, -np.inf):
        moved = batch.copy()
        moved[0, -1, 1] = bad
        assert not all_finite(moved)
        assert not all_finite(moved.transpose(2, 1, 0))  # a non-contiguous view
