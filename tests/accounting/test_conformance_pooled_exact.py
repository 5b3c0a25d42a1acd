"""The pooled KS statistics of noise_conformance equal a plain sort's on adversarial residuals.

Reference: each group's residuals gathered from the input array, their declared CDF values
sorted explicitly (and scipy.stats.kstest for the two-sided statistic, to a rounding
tolerance). The binned search of the maxima must never report a smaller statistic.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from accounting.conformance import _cdfs, _group_tests, _ks_extremes, noise_conformance

SPECIAL = [0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-300, 1e-17, -1e-17, 0.5, -0.5, 1.0, -1.0,
           40.0, -40.0, 1e300, -1e300, math.inf, -math.inf, math.nan]


def _reference(z: np.ndarray, mechanism: str) -> tuple[int, float, float]:
    z = z[~np.isnan(z)]
    cdf, cdf_abs = _cdfs(z, mechanism)
    cdf, cdf_abs = np.sort(cdf), np.sort(cdf_abs)
    n = cdf.size
    i = np.arange(1, n + 1)
    d = max(float((i / n - cdf).max()), float((cdf - (i - 1) / n).max()))
    d_under = max(0.0, float((i / n - cdf_abs).max()))
    return n, d, d_under


values = st.one_of(st.sampled_from(SPECIAL), st.floats(-6, 6), st.floats(allow_nan=True, allow_infinity=True))


@st.composite
def residual_arrays(draw):
    runs, rounds, agents, dim = (draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 3)),
                                 draw(st.integers(1, 3)))
    size = runs * rounds * agents * dim
    pool = draw(st.lists(values, min_size=1, max_size=8))  # few distinct values: ties across releases
    flat = draw(st.lists(st.one_of(st.sampled_from(pool), values), min_size=size, max_size=size))
    return np.array(flat, dtype=float).reshape(runs, rounds, agents, dim)


@settings(max_examples=150, deadline=None)
@given(r=residual_arrays(), mechanism=st.sampled_from(["laplace", "gaussian"]))
def test_pooled_statistics_equal_an_explicit_sort(r, mechanism):
    rounds = r.shape[1]
    tests = _group_tests("x", np.moveaxis(r, 2, 0), np.arange(rounds), np.ones(rounds), mechanism, 2)
    report = noise_conformance({"x": r}, {"x": (mechanism, np.ones(rounds))}, min_samples=2)
    assert report.tests == 2 * len(tests)
    for t in tests:
        if t.round is not None and t.agent is not None:
            z = r[:, t.round - 1, t.agent]
        elif t.round is not None:
            z = r[:, t.round - 1]
        else:
            z = r[:, :, t.agent]
        n, d, d_under = _reference(z.ravel(), mechanism)
        assert t.samples == n
        assert t.statistic == d, (t, d)
        assert t.p_under == min(1.0, math.exp(-2.0 * n * d_under * d_under)), (t, d_under)
        ks = stats.kstest(z.ravel()[~np.isnan(z.ravel())],
                          stats.laplace.cdf if mechanism == "laplace" else stats.norm.cdf).statistic
        assert t.statistic >= ks - 1e-12


@settings(max_examples=200, deadline=None)
@given(data=st.data(), groups=st.integers(1, 4), width=st.integers(1, 40))
def test_ks_extremes_equal_a_sort(data, groups, width):
    """Direct check of the binned maxima on CDF-like values in [0, 1] (bin edges, 0, -0.0, 1, ties)."""
    rows = data.draw(st.integers(1, 6))
    edges = [0.0, -0.0, 1.0, 0.5, 0.25, 0.75, 1 / 3, 2 ** -16, 1 - 2 ** -53, 5e-324, 2 ** -10, 3 * 2 ** -10]
    v = st.one_of(st.sampled_from(edges), st.floats(0, 1))
    x = np.array(data.draw(st.lists(v, min_size=rows * width, max_size=rows * width)),
                 dtype=float).reshape(rows, width)
    missing = np.array(data.draw(st.lists(st.booleans(), min_size=rows * width, max_size=rows * width))
                       ).reshape(rows, width) if data.draw(st.booleans()) else None
    row_group = np.array(data.draw(st.lists(st.integers(0, groups - 1), min_size=rows, max_size=rows)))
    # the caller's layout: each row sorted, missing entries NaN and last
    if missing is not None:
        x[missing] = np.nan
    x.sort(axis=1)
    missing = np.isnan(x) if missing is not None and missing.any() else None
    counts = (~np.isnan(x)).sum(axis=1)
    sizes = np.bincount(row_group, weights=counts, minlength=groups).astype(np.int64)
    plus, low = _ks_extremes(x.copy(), missing, row_group, sizes, minus=True)
    for g in range(groups):
        vals = np.sort(x[row_group == g].ravel())
        vals = vals[~np.isnan(vals)]
        n = vals.size
        if n == 0:
            assert plus[g] == -np.inf and low[g] == -np.inf
            continue
        i = np.arange(1, n + 1)
        assert plus[g] == (i / n - vals).max()
        assert low[g] == (vals - (i - 1) / n).max()


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_large_pooled_groups_of_one_value_and_many_ties(mechanism):
    """Thousands of values in one bin (every value equal) and tie blocks across releases."""
    rng = np.random.default_rng(0)
    r = np.zeros((200, 2, 3, 4))
    r[:, 1] = rng.choice([-1e-9, 0.0, 1e-9, 2.0], size=r[:, 1].shape)
    tests = _group_tests("x", np.moveaxis(r, 2, 0), np.arange(2), np.ones(2), mechanism, 2)
    for t in tests:
        z = r[:, t.round - 1] if t.agent is None else (r[:, :, t.agent] if t.round is None
                                                        else r[:, t.round - 1, t.agent])
        assert t.statistic == _reference(z.ravel(), mechanism)[1]
