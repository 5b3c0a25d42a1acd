"""The replay's deferred density ratios: the observed releases' log densities, summed in fewer passes, are those of
``nan_to_num`` of the residuals to the bit (NaN: nothing observed; infinities and overflowing sums included)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accounting.replay_densities import _deferred_densities, _log_density_observed, _log_density_rounds, _nan_to_num
from accounting.replay_inputs import ChannelNoise

shapes = st.one_of(hnp.array_shapes(min_dims=4, max_dims=4, max_side=4),  # (R, T', N, d)
                   hnp.array_shapes(min_dims=5, max_dims=5, max_side=3))  # unicast (R, T', N, N, d)
entries = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e200, -1e200]))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True) and \
        np.array_equal(np.signbit(a), np.signbit(b))


@given(shapes.flatmap(lambda s: hnp.arrays(np.float64, s, elements=entries)), st.sampled_from(["laplace", "gaussian"]),
       st.floats(1e-3, 1e3))
def test_observed_log_densities_are_those_of_the_nan_to_num_residuals(resid, mechanism, scale):
    scales = [scale * (k + 1) for k in range(resid.shape[1])]
    with np.errstate(over="ignore"):
        want = _log_density_rounds(_nan_to_num(resid), mechanism, scales)
        got = _log_density_observed(resid, mechanism, scales)
    assert _same(got, want)


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_a_round_with_an_infinite_residual_is_computed_as_nan_to_num_computes_it(mechanism):
    resid = np.full((2, 3, 2, 2), 0.5)
    resid[0, 1, 1, 0], resid[1, 2, 0, 1] = np.inf, np.nan
    with np.errstate(over="ignore"):
        got = _log_density_observed(resid, mechanism, [1.0, 2.0, 4.0])
        want = _log_density_rounds(_nan_to_num(resid), mechanism, [1.0, 2.0, 4.0])
    assert _same(got, want) and np.isfinite(got[1]).all() and got[1, 2] > got[0, 2]


@given(hnp.array_shapes(min_dims=4, max_dims=4, max_side=4).flatmap(
           lambda s: st.tuples(*[hnp.arrays(np.float64, s, elements=entries)] * 3)),
       st.sampled_from(["laplace", "gaussian"]), st.data())
def test_deferred_densities_are_the_two_problems_log_densities_of_the_observed_entries(arrays, mechanism, data):
    y, resid, resid_p = arrays  # (a NaN of resid_p where y is observed stays NaN: a mean that is not a number)
    horizon = y.shape[1]
    scales = data.draw(st.lists(st.sampled_from([0.0, 0.5, 2.0]), min_size=horizon, max_size=horizon))
    start = data.draw(st.integers(1, horizon))
    got = np.zeros(y.shape[:2])
    with np.errstate(over="ignore", invalid="ignore"):
        _deferred_densities(y, resid, resid_p, ChannelNoise(mechanism, np.array(scales)), scales, start, got)
        want = np.zeros(y.shape[:2])
        for t in range(start, horizon + 1):  # round by round, as the replay's per-round densities
            if scales[t - 1] > 0:
                sel = slice(t - 1, t)
                want[:, sel] += (_log_density_rounds(_nan_to_num(resid[:, sel]), mechanism, [scales[t - 1]])
                                 - _log_density_rounds(np.where(np.isnan(y[:, sel]), 0.0, resid_p[:, sel]),
                                                       mechanism, [scales[t - 1]]))
    assert _same(got, want)


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_a_mean_that_is_not_a_number_under_the_adjacent_problem_stays_in_its_run_s_loss(mechanism):
    y, resid, resid_p = np.ones((3, 2, 2, 2)), np.full((3, 2, 2, 2), 0.25), np.full((3, 2, 2, 2), 0.5)
    y[0, 1, 0, 0] = resid[0, 1, 0, 0] = resid_p[0, 1, 0, 0] = np.nan  # not observed: no term
    resid_p[1, 0, 1, 1] = np.nan  # observed, but y - mu_P' is NaN
    got = np.zeros((3, 2))
    _deferred_densities(y, resid, resid_p, ChannelNoise(mechanism, np.array([1.0, 2.0])), [1.0, 2.0], 1, got)
    assert np.isnan(got[1, 0]) and np.isfinite(np.delete(got.ravel(), 2)).all()
    assert got[0, 1] != got[2, 1]  # the unobserved entry's terms are left out under both problems
