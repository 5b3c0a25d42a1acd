"""asyncdp.reproduce._stats: Z95, the mean with its 95% interval and the log-log fit, against scipy and numpy."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import asyncdp.reproduce
from asyncdp.errors import ScenarioError
from asyncdp.reproduce._stats import Z95, LogLogFit, MeanCI, clustered_mean_ci, loglog_fit, mean_ci, sem

DATA = np.array([0.31, 1.7, 0.05, 2.2, 0.9, 1.15, 0.62, 3.4, 0.27, 1.01])


def test_z95_is_the_normal_quantile():
    assert Z95 == pytest.approx(stats.norm.ppf(0.975), rel=1e-15)


def test_mean_ci_against_scipy():
    r = mean_ci(DATA)
    assert isinstance(r, MeanCI)
    assert r.mean == pytest.approx(float(np.mean(DATA)), rel=1e-15)
    assert r.sem == pytest.approx(float(stats.sem(DATA)), rel=1e-13)
    low, high = stats.norm.interval(0.95, loc=np.mean(DATA), scale=stats.sem(DATA))
    assert (r.low, r.high) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
    assert r.as_dict() == {"mean": r.mean, "sem": r.sem, "ci_low": r.low, "ci_high": r.high}
    m, s, lo, hi = r  # unpacks as a tuple
    assert lo < m < hi and s > 0


def test_mean_ci_of_one_value_has_no_interval_and_empty_input_is_rejected():
    r = mean_ci([2.5])
    assert r.mean == 2.5 and math.isnan(r.sem) and math.isnan(r.low) and math.isnan(r.high)
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


def test_every_reproduction_uses_the_shared_z95_and_save_figure():
    """No reproduction module defines its own Z95 or calls savefig: _stats and _outputs hold them once."""
    root = Path(asyncdp.reproduce.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        if path.name != "_stats.py":
            assert not re.search(r"^Z95\s*=", text, flags=re.M), path
            assert "1.95996" not in text, path
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
    assert math.isnan(clustered_mean_ci(x[:1]).sem) and math.isnan(clustered_mean_ci(x[:1]).high)
    with pytest.raises(ScenarioError, match=r"shape \(clusters, runs\)"):
        clustered_mean_ci(x.ravel())
