"""The additivity probe's Laplace sampler (asyncdp.privacy.additivity.standard_laplace).

It is numpy's own inverse-CDF formula on the same uniforms, vectorized: each value must be numpy's
``Generator.laplace`` value up to the rounding of ``log`` (a few ulps), the generator must end in the same
state, one call must give the values of consecutive calls, and a uniform of exactly 0 must be redrawn.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from asyncdp.privacy.additivity import standard_laplace


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numpy_laplace_values_up_to_log_rounding(seed: int) -> None:
    ours_rng, numpy_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    ours, theirs = standard_laplace(ours_rng, (1000, 5, 2)), numpy_rng.laplace(size=(1000, 5, 2))
    assert ours.shape == theirs.shape
    # both evaluate log at the same argument; a correctly rounded and a vectorized log differ by <= 4 ulps
    np.testing.assert_array_max_ulp(ours, theirs, maxulp=4)
    assert ours_rng.bit_generator.state == numpy_rng.bit_generator.state  # one uniform per value, as numpy


@given(st.lists(st.integers(0, 300), min_size=1, max_size=6), st.integers(0, 2**32 - 1))
def test_one_call_gives_consecutive_calls_values(sizes: list[int], seed: int) -> None:
    whole = standard_laplace(np.random.default_rng(seed), (sum(sizes),))
    rng = np.random.default_rng(seed)
    parts = np.concatenate([standard_laplace(rng, (n,)) for n in sizes])
    assert np.array_equal(whole.view(np.int64), parts.view(np.int64))


class _ZeroFirst:
    """A generator whose first uniform is exactly 0 (then a fixed sequence)."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def random(self, shape: object) -> np.ndarray:
        n = int(np.prod(shape))
        self.calls.append(n)
        if len(self.calls) == 1:
            return np.array([0.0, 0.75, 0.25][:n]).reshape(shape)
        return np.full(shape, 0.125)


def test_a_zero_uniform_is_redrawn() -> None:
    rng = _ZeroFirst()
    z = standard_laplace(rng, (3,))  # type: ignore[arg-type]
    assert rng.calls == [3, 1]
    # inverse CDF by hand: u = 0.125 -> log(0.25); 0.75 -> -log(0.5); 0.25 -> log(0.5)
    np.testing.assert_allclose(z, [np.log(0.25), -np.log(0.5), np.log(0.5)], rtol=1e-15)
    assert np.all(np.isfinite(z))
