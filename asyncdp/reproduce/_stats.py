"""Statistics shared by every reproduction: ``t95``, mean with a 95% confidence interval, log-log fits.

Each reproduction reports a Monte-Carlo mean with Student's ``t`` interval
``mean +- t95(R) * s / sqrt(R)`` (``s`` the sample standard deviation of the
``R`` values, ``t95(R)`` the 0.975 quantile of ``t`` with ``R - 1`` degrees of
freedom; exact for normal values, so it keeps 95% coverage with 2-5 runs where
the normal quantile does not) and fits slopes of ``log y`` on ``log x`` by
least squares; both are written once here. Runs that share a random draw (several noise
runs on each of a few random graphs) are not independent: their mean's
interval comes from the clusters' means (:func:`clustered_mean_ci`).

Example:
    >>> r = mean_ci([1.0, 2.0, 3.0])
    >>> r.mean, round(r.sem, 6), round(r.high - r.mean, 6)
    (2.0, 0.57735, 2.484138)
    >>> round(loglog_fit([1.0, 10.0, 100.0], [1.0, 0.01, 1e-4]).slope, 9)
    -2.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..errors import ScenarioError

__all__ = ["CI_METHOD", "MeanCI", "LogLogFit", "t95", "sem", "mean_ci", "clustered_mean_ci", "loglog_fit"]

CI_METHOD = ("95% Student t: mean +- t95(n) * s / sqrt(n), t95(n) = scipy.stats.t.ppf(0.975, n - 1), s the sample "
             "standard deviation of the n values; n = 1 gives the interval (-inf, inf)")
"""How every interval of :func:`mean_ci` is built, the text the summaries store."""


class MeanCI(NamedTuple):
    """A sample mean, its standard error and its 95% interval.

    The interval is ``mean +- t95(n) * sem`` over the ``n`` values (:func:`mean_ci`) or
    the ``n`` clusters (:func:`clustered_mean_ci`); with ``n = 1`` it is ``(-inf, inf)``
    (one value bounds nothing) and ``sem`` is NaN.
    """

    mean: float
    sem: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        """``{"mean", "sem", "ci_low", "ci_high"}``, the form the summaries store.

        Example:
            >>> sorted(mean_ci([0.0, 2.0]).as_dict())
            ['ci_high', 'ci_low', 'mean', 'sem']
        """
        return {"mean": self.mean, "sem": self.sem, "ci_low": self.low, "ci_high": self.high}


class LogLogFit(NamedTuple):
    """Least-squares line ``log y = slope * log x + intercept`` over ``points`` points.

    ``slope`` and ``intercept`` are None with fewer than two points (or a value
    ``<= 0``, which has no logarithm); ``slope_se`` (the slope's standard
    error) needs three points.
    """

    slope: float | None
    intercept: float | None
    slope_se: float | None
    points: int


def _values(x: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ScenarioError(f"{name} must be an array of numbers, got {x!r}") from None
    if arr.size == 0:
        raise ScenarioError(f"{name} must hold at least one value, got {x!r}")
    return arr


def t95(n: int) -> float:
    """Two-sided 95% quantile of Student's ``t`` for a mean of ``n`` values: ``t.ppf(0.975, n - 1)``.

    Args:
        n: the number of independent values (an integer ``>= 1``).

    Returns:
        The quantile; ``inf`` for ``n = 1`` (no degrees of freedom: no finite interval).

    Raises:
        ScenarioError: ``n`` not an integer ``>= 1``.

    Example:
        >>> round(t95(2), 4), round(t95(31), 4), t95(1)
        (12.7062, 2.0423, inf)
    """
    from scipy import stats

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ScenarioError(f"n (number of values) must be an integer >= 1, got {n!r}")
    return float(stats.t.ppf(0.975, int(n) - 1)) if n > 1 else math.inf


def _interval(m: float, s: float, n: int) -> MeanCI:
    half = t95(n) * s if n > 1 else math.inf
    return MeanCI(m, s, m - half, m + half)


def sem(x: Any, axis: int | None = None) -> Any:
    """Standard error of the mean: sample standard deviation (``ddof=1``) over ``sqrt(n)``.

    Args:
        x: the values (array-like of numbers, not empty).
        axis: the axis of the samples (None: all values).

    Returns:
        A float (``axis=None``) or an array over the other axes; NaN where there
        is a single sample.

    Raises:
        ScenarioError: ``x`` empty or not numeric.

    Example:
        >>> round(sem([1.0, 2.0, 3.0, 4.0]), 6)
        0.645497
        >>> sem([[1.0, 5.0], [3.0, 5.0]], axis=0).tolist()
        [1.0, 0.0]
    """
    arr = _values(x, "x")
    n = arr.size if axis is None else arr.shape[axis]
    if axis is None:
        return float(arr.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    if n < 2:
        return np.full(np.delete(arr.shape, axis), np.nan)
    return arr.std(axis, ddof=1) / math.sqrt(n)


def mean_ci(x: Any) -> MeanCI:
    """Mean of ``x`` with its standard error and 95% Student ``t`` interval (:data:`CI_METHOD`).

    Args:
        x: the values (array-like of numbers, not empty), treated as independent draws.

    Returns:
        :class:`MeanCI` ``(mean, sem, mean - t95(n) sem, mean + t95(n) sem)``, ``n = x.size``;
        for a single value NaN ``sem`` and the interval ``(-inf, inf)``.

    Raises:
        ScenarioError: ``x`` empty or not numeric.

    Example:
        >>> m = mean_ci([2.0, 4.0])
        >>> m.mean, m.sem, round(m.low, 4), round(m.high, 4)
        (3.0, 1.0, -9.7062, 15.7062)
        >>> mean_ci([2.0])
        MeanCI(mean=2.0, sem=nan, low=-inf, high=inf)
    """
    arr = _values(x, "x")
    return _interval(float(arr.mean()), sem(arr), int(arr.size))


def clustered_mean_ci(x: Any) -> MeanCI:
    """Mean of runs grouped in independent clusters (rows), its standard error and 95% interval over the clusters.

    Runs in one row share a random draw (e.g. one random graph, many noise
    runs), so they are not independent: the standard error is that of the
    ``G`` row means, ``std(ddof=1) / sqrt(G)``, and the interval uses
    Student's ``t`` with ``G - 1`` degrees of freedom. Treating all the runs
    as independent (:func:`mean_ci` on the flattened values) understates the
    error whenever the clusters differ.

    Args:
        x: the values, shape ``(G, R)``: ``G`` clusters of ``R`` runs each.

    Returns:
        :class:`MeanCI` ``(mean of all values, sem over rows, low, high)``; for a
        single cluster NaN ``sem`` and the interval ``(-inf, inf)``.

    Raises:
        ScenarioError: ``x`` empty, not numeric or not two-dimensional.

    Example:
        >>> m = clustered_mean_ci([[0.8, 1.2], [3.2, 2.8]])
        >>> m.mean, round(m.sem, 6), round(m.high - m.mean, 4)
        (2.0, 1.0, 12.7062)
    """
    arr = _values(x, "x")
    if arr.ndim != 2:
        raise ScenarioError(f"x must have shape (clusters, runs), got shape {arr.shape}")
    return _interval(float(arr.mean()), sem(arr.mean(axis=1)), int(arr.shape[0]))


def loglog_fit(x: Sequence[float], y: Sequence[float]) -> LogLogFit:
    """Least-squares slope (and intercept) of ``log y`` on ``log x``.

    Args:
        x, y: the points, of equal length.

    Returns:
        :class:`LogLogFit`; no line (None) with fewer than two points or a value
        ``<= 0``; ``slope_se`` from the residual variance with three or more points.

    Raises:
        ScenarioError: ``x`` and ``y`` of different lengths or not numeric.

    Example:
        >>> fit = loglog_fit([1.0, 2.0, 4.0], [8.0, 2.0, 0.5])
        >>> round(fit.slope, 9), round(fit.intercept, 6), round(fit.slope_se, 9), fit.points
        (-2.0, 2.079442, 0.0, 3)
    """
    try:
        ax, ay = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ScenarioError(f"x and y must be sequences of numbers, got {x!r} and {y!r}") from None
    if ax.size != ay.size:
        raise ScenarioError(f"x and y must have the same length, got {ax.size} and {ay.size}")
    if ax.size < 2 or (ax <= 0).any() or (ay <= 0).any():
        return LogLogFit(None, None, None, int(ax.size))
    lx, ly = np.log(ax), np.log(ay)
    slope, intercept = np.polyfit(lx, ly, 1)
    slope_se = None
    if lx.size > 2:
        resid = ly - (slope * lx + intercept)
        s2 = float(resid @ resid) / (lx.size - 2)
        slope_se = math.sqrt(s2 / float(((lx - lx.mean()) ** 2).sum()))
    return LogLogFit(float(slope), float(intercept), slope_se, int(lx.size))
