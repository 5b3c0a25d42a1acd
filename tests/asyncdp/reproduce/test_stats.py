"""asyncdp.reproduce._stats: t95, the mean with its 95% interval and the log-log fit, against scipy and numpy."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import asyncdp.reproduce
from asyncdp.errors import ScenarioError
from asyncdp.reproduce._stats import LogLogFit, MeanCI, clustered_mean_ci, loglog_fit, mean_ci, sem, t95

DATA = np.array([0.31, 1.7, 0.05, 2.2, 0.9, 1.15, 0.62, 3.4, 0.27, 1.01])


def test_t95_is_the_student_t_quantile_and_rejects_bad_n():
    for n in (2, 3, 5, 30, 1000):
        assert t95(n) == stats.t.ppf(0.975, n - 1)
    assert t95(np.int64(4)) == stats.t.ppf(0.975, 3) and t95(1) == math.inf
    for bad in (0, -3, 2.0, True, "3"):
        with pytest.raises(ScenarioError, match=rf"n \(number of values\) must be an integer >= 1, got {bad!r}"):
            t95(bad)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 10])
def test_mean_ci_bounds_equal_scipys_t_interval(n):
    """Bitwise the bounds of scipy.stats.t.interval(0.95, n - 1) at the sample mean and standard error."""
    for x in np.random.default_rng(n).normal(3.0, 2.0, size=(50, n)):
        r = mean_ci(x)
        low, high = stats.t.interval(0.95, n - 1, loc=np.mean(x), scale=stats.sem(x))
        assert (r.mean, r.sem, r.low, r.high) == (np.mean(x), stats.sem(x), low, high)


def test_mean_ci_covers_95_percent_with_three_runs():
    """4000 intervals of 3 N(0, 1) values (seed 11) cover 0 in 0.95 +- 4 binomial sigmas (sigma = 0.0034).

    The normal 1.96 interval covers about 0.83 here; a false failure has probability < 1e-4.
    """
    trials = 4000
    hits = sum(r.low <= 0.0 <= r.high for r in map(mean_ci, np.random.default_rng(11).standard_normal((trials, 3))))
    tol = 4 * math.sqrt(0.95 * 0.05 / trials)
    assert abs(hits / trials - 0.95) <= tol, (hits / trials, tol)


def test_mean_ci_against_scipy():
    r = mean_ci(DATA)
    assert isinstance(r, MeanCI)
    assert r.mean == pytest.approx(float(np.mean(DATA)), rel=1e-15)
    assert r.sem == pytest.approx(float(stats.sem(DATA)), rel=1e-13)
    low, high = stats.t.interval(0.95, DATA.size - 1, loc=np.mean(DATA), scale=stats.sem(DATA))
    assert (r.low, r.high) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
    assert r.as_dict() == {"mean": r.mean, "sem": r.sem, "ci_low": r.low, "ci_high": r.high}
    m, s, lo, hi = r  # unpacks as a tuple
    assert lo < m < hi and s > 0


def test_mean_ci_of_one_value_is_the_whole_line_and_empty_input_is_rejected():
    """One value bounds nothing: the interval is (-inf, inf), never a zero-width or NaN one."""
    r = mean_ci([2.5])
    assert r.mean == 2.5 and math.isnan(r.sem) and (r.low, r.high) == (-math.inf, math.inf)
    with pytest.raises(ScenarioError, match=r"x must hold at least one value, got \[\]"):
        mean_ci([])
    with pytest.raises(ScenarioError, match="x must be an array of numbers"):
        mean_ci(["a", "b"])


def test_sem_along_an_axis_against_scipy():
    x = DATA.reshape(5, 2)
    np.testing.assert_allclose(sem(x, axis=0), stats.sem(x, axis=0), rtol=1e-13)
    np.testing.assert_allclose(sem(x, axis=1), stats.sem(x, axis=1), rtol=1e-13)
    assert sem(DATA) == pytest.approx(float(stats.sem(DATA)), rel=1e-13)
    assert np.isnan(sem(x[:1], axis=0)).all() and sem(x[:1], axis=0).shape == (2,)


def test_loglog_fit_against_polyfit_and_linregress():
    x = np.array([0.5, 1.0, 2.0, 5.0, 10.0, 20.0])
    y = 3.0 * x**-1.7 * np.array([1.05, 0.97, 1.02, 0.99, 1.04, 0.96])
    fit = loglog_fit(x, y)
    assert isinstance(fit, LogLogFit) and fit.points == 6
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    assert fit.slope == pytest.approx(slope, rel=1e-12) and fit.intercept == pytest.approx(intercept, rel=1e-12)
    lr = stats.linregress(np.log(x), np.log(y))
    assert fit.slope_se == pytest.approx(lr.stderr, rel=1e-10)
    assert fit.slope == pytest.approx(-1.7, abs=0.05)


def test_loglog_fit_without_a_line():
    assert loglog_fit([1.0], [2.0]) == LogLogFit(None, None, None, 1)
    assert loglog_fit([1.0, 2.0, 4.0], [1.0, 0.0, 2.0]) == LogLogFit(None, None, None, 3)  # log 0 undefined
    two = loglog_fit([1.0, 10.0], [1.0, 0.1])
    assert two.slope == pytest.approx(-1.0, rel=1e-12) and two.slope_se is None  # no residual variance
    with pytest.raises(ScenarioError, match="same length, got 2 and 3"):
        loglog_fit([1.0, 2.0], [1.0, 2.0, 3.0])


def test_every_reproduction_uses_the_shared_interval_and_save_figure():
    """No reproduction module hard-codes a normal quantile or calls savefig: _stats and _outputs hold them once."""
    package = Path(asyncdp.reproduce.__file__).parent.parent
    paths = [*(package / "reproduce").rglob("*.py"), *(package / "papers").glob("*/reproduce/*.py")]
    assert len(paths) > 10
    for path in paths:
        text = path.read_text()
        assert not re.search(r"\b1\.96|\bZ95\b|norm\.ppf", text), path
        if path.name != "_outputs.py":
            assert ".savefig(" not in text, path


def test_clustered_mean_ci_is_over_the_cluster_means_with_student_t():
    """Independent computation: scipy's t interval of the row means; one row has no interval."""
    x = np.random.default_rng(3).standard_normal((5, 40)) + np.arange(5)[:, None]  # clusters differ
    r = clustered_mean_ci(x)
    means = x.mean(axis=1)
    low, high = stats.t.interval(0.95, 4, loc=means.mean(), scale=stats.sem(means))
    assert math.isclose(r.mean, x.mean(), rel_tol=1e-15) and math.isclose(r.sem, stats.sem(means), rel_tol=1e-14)
    assert math.isclose(r.low, low, rel_tol=1e-12) and math.isclose(r.high, high, rel_tol=1e-12)
    assert r.sem > 5 * stats.sem(x.ravel())  # the flattened runs' sem is far too small here
    one = clustered_mean_ci(x[:1])
    assert math.isnan(one.sem) and (one.low, one.high) == (-math.inf, math.inf)
    with pytest.raises(ScenarioError, match=r"shape \(clusters, runs\)"):
        clustered_mean_ci(x.ravel())
