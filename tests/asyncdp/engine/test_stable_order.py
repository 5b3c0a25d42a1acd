"""The plan's link sort (``batch_plan._stable_order``): LSD radix passes equal numpy's stable argsort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncdp.engine.batch_plan import _stable_order


@settings(max_examples=60, deadline=None)
@given(bits=st.integers(0, 50), size=st.integers(0, 3000), seed=st.integers(0, 2**32 - 1),
       repeats=st.booleans())
def test_radix_order_is_the_stable_argsort(bits, size, seed, repeats):
    rng = np.random.default_rng(seed)
    high = 1 << bits
    keys = rng.integers(0, high, size, dtype=np.int64)
    if repeats and size:  # many equal keys: the order of ties (message order) must be kept
        keys = keys[rng.integers(0, max(1, size // 10), size)]
    order = _stable_order(keys, bits, np.int32)
    assert order.dtype == np.int32
    assert np.array_equal(order, np.argsort(keys, kind="stable"))
