"""Batch operations on points of few coordinates, taken one coordinate at a time.

The engines and the replays hold points as ``(runs, agents, dim)`` arrays.
An operation between such an array and something per point (a factor of
shape ``(runs, agents, 1)``) or per coordinate (bounds of shape ``(dim,)``)
makes numpy broadcast the short last axis: its inner loops then run over
``dim`` entries, and for ``dim = 2`` the operation costs about 8x the same
operation over every entry. Taken one coordinate at a time, each loop runs
over every point (a strided view), with the same floating-point operations
on the same values, so the results are equal to the bit.

Example:
    >>> import numpy as np
    >>> v = np.arange(8.0).reshape(2, 2, 2)
    >>> bool((scale_points(v, np.array([[2.0, 3.0], [0.5, 1.0]])) == v * [[[2.0], [3.0]], [[0.5], [1.0]]]).all())
    True
"""

from __future__ import annotations

import numpy as np

__all__ = ["FEW_COORDINATES", "SCALED_COORDINATES", "few_coordinates", "scale_points", "clamp_coordinates"]

FEW_COORDINATES = 8
"""Batches of points with at most this many coordinates are clamped one coordinate at a time (two operations
per coordinate against numpy's broadcast of the bounds: 1.3-4x faster up to 8 coordinates, measured by
benchmarks/bench_coordinates.py)."""

SCALED_COORDINATES = 3
"""Batches of points with at most this many coordinates are scaled one coordinate at a time (one operation per
coordinate: from about 4 coordinates on the loop is no faster than the broadcast, benchmarks/bench_coordinates.py)."""


def few_coordinates(x: np.ndarray, most: int = FEW_COORDINATES) -> bool:
    """Whether ``x`` is a batch of points (two axes or more) with 2 to ``most`` coordinates.

    Example:
        >>> few_coordinates(np.zeros((5, 2))), few_coordinates(np.zeros(2)), few_coordinates(np.zeros((5, 40)))
        (True, False, False)
    """
    return x.ndim > 1 and 1 < x.shape[-1] <= most


def scale_points(v: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Each point of ``v`` (last axis) times its factor: ``v * factor[..., None]``, as a new array.

    Args:
        v: float points ``(..., dim)``.
        factor: one float per point, of shape ``v.shape[:-1]``.

    Returns:
        A new array of ``v``'s shape (the same values and dtype as ``v * factor[..., None]``).

    Example:
        >>> scale_points(np.array([[3.0, 4.0]]), np.array([0.5])).tolist()
        [[1.5, 2.0]]
    """
    if not few_coordinates(v, SCALED_COORDINATES):
        return v * factor[..., None]
    shape = v.shape if factor.shape == v.shape[:-1] else np.broadcast_shapes(v.shape, factor.shape + (1,))
    out = np.empty(shape, dtype=np.result_type(v.dtype, factor.dtype))
    for k in range(v.shape[-1]):
        np.multiply(v[..., k], factor, out=out[..., k])
    return out


def clamp_coordinates(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``min(max(x, low), high)`` for points ``x`` (last axis) and per-coordinate bounds ``(dim,)``, as a new array.

    Args:
        x: float points ``(..., dim)``.
        low, high: the bounds of each coordinate, ``(dim,)``.

    Returns:
        A new array of ``x``'s shape (the same values and dtype as ``np.minimum(np.maximum(x, low), high)``;
        NaN stays NaN).

    Example:
        >>> clamp_coordinates(np.array([[2.0, -3.0]]), np.array([-1.0, -1.0]), np.array([1.0, 0.5])).tolist()
        [[1.0, -1.0]]
    """
    # the minimum is taken in place, in the maximum's array (one array allocated, not two: for 10^4 points and
    # more each new array costs as much as the pass that fills it), when that array has the dtype of the minimum
    # (a box's float64 bounds; other bounds may need a wider one, e.g. float32 points and low, float64 high)
    if not few_coordinates(x):
        out = np.maximum(x, low)
        return np.minimum(out, high, out=out) if out.dtype == high.dtype else np.minimum(out, high)
    lo, hi = low.tolist(), high.tolist()  # (compared as Python floats: a tenth of numpy's calls on a few bounds)
    if lo.count(lo[0]) == len(lo) and hi.count(hi[0]) == len(hi):  # the same bounds everywhere: two numbers
        out = np.maximum(x, float(lo[0]))  # (Python floats, whatever the bounds' dtype: never a wider dtype)
        return np.minimum(out, float(hi[0]), out=out)
    out = np.empty(x.shape, dtype=np.result_type(x, low, high))
    for k in range(x.shape[-1]):
        column = out[..., k]
        np.maximum(x[..., k], low[k], out=column)
        np.minimum(column, high[k], out=column)
    return out
