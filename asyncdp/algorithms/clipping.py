"""L2 clipping of gradient-like rows, shared by the rules that clip.

``clip_l2(v, bound)`` scales every row (last axis) of ``v`` to L2 norm at most
``bound``: ``v * (bound / max(||v||, bound))``. A row inside the ball keeps
its exact values (the factor is exactly ``1.0`` there).

The SimPy engine calls rules on one point at a time (``v.ndim == 1``) and the
batch engine on ``(R, N, n)`` arrays. Both must give the same bits, so for
float64 input the one-point path computes exactly what the vectorized path
computes for that row. For ``n <= 7`` it adds the squares in Python floats,
in numpy's order (below 8 terms numpy's pairwise summation is a plain
left-to-right sum; ``tests/asyncdp/test_clipping.py`` checks the bits); a
row inside the ball is returned as is, which is what multiplying it by
``bound / bound = 1.0`` gives. For longer rows it uses a cheaper sum of
squares (``v @ v``) only to *decide* that the row is well inside the ball,
with a margin far above any rounding difference between the two sums.

Rows whose sum of squares overflows (entries beyond about ``1e154``) get the
scaled norm ``m * sqrt(sum((v / m)^2))`` with ``m = max |v_k|``, in both paths,
instead of an infinite norm that would silently clip them to zero (numpy may
warn about the overflow on the way).

A float64 batch whose rows all lie inside the ball is returned as a copy: the
same bits as multiplying each row by its factor ``1.0``, without computing it.
"""

from __future__ import annotations

import math

import numpy as np

from ..problems.coordinates import scale_points

__all__ = ["clip_l2"]

_UNIT = 2.0**-53  # unit roundoff of float64
_IN_ORDER = 7
"""numpy's sum (pairwise summation) adds up to this many terms one after the other, from 0."""


def _scaled_norms(rows: np.ndarray) -> np.ndarray:
    """L2 norms of the rows of ``rows`` (shape ``(k, n)``) without overflow: ``m * sqrt(sum((r / m)^2))``."""
    m = np.abs(rows).max(axis=-1, keepdims=True)
    q = rows / m
    return m * np.sqrt((q * q).sum(axis=-1, keepdims=True))


def clip_l2(v: np.ndarray, bound: float) -> np.ndarray:
    """Scale each row of ``v`` (last axis) to L2 norm at most ``bound``.

    Args:
        v: float array of shape ``(..., n)`` with finite entries.
        bound: the L2 bound, positive and finite (not checked: the calling
            rule validates its parameters once).

    Returns:
        ``v * (bound / max(||v||_2, bound))`` row by row: rows with norm at
        most ``bound`` keep their exact values (for one float64 point inside
        the ball, ``v`` itself may be returned).

    Example:
        >>> clip_l2(np.array([3.0, 4.0]), 1.0).tolist()
        [0.6000000000000001, 0.8]
        >>> clip_l2(np.array([[0.3, 0.4], [3.0, 4.0]]), 1.0)[0].tolist()
        [0.3, 0.4]
    """
    if v.ndim == 1 and v.dtype == np.float64:
        n = v.shape[0]
        if n <= _IN_ORDER:
            squares = 0.0
            for x in v.tolist():  # the batch path's sum, term by term (Python floats overflow to inf)
                squares += x * x
        else:
            # both sums of n nonnegative products are within about (n + 1) units of roundoff of
            # the exact one; below this threshold the exact row norm is certainly <= bound
            if float(v.dot(v)) < bound * bound * (1.0 - 8.0 * (n + 2) * _UNIT):
                return v
            squares = float(np.add.reduce(v * v))  # = (v * v).sum(), without its Python-level wrapper
        norm = math.sqrt(squares) if squares != math.inf else float(_scaled_norms(v[None, :])[0, 0])
        return v if norm <= bound else v * (bound / norm)
    if v.ndim == 1:  # another dtype: as a batch of one row
        return clip_l2(v[None, :], bound)[0]
    if v.shape[-1] == 2 and v.dtype == np.float64:
        # two coordinates: the two squares added as columns, the reduction's bits (a sum of two nonnegative
        # numbers does not depend on the order of addition) without its cost per row of two entries
        first, second = v[..., 0], v[..., 1]
        squares = first * first
        squares += second * second
        squares = squares[..., None]
    else:
        squares = np.add.reduce(v * v, axis=-1, keepdims=True)
    norm = np.sqrt(squares)
    if v.dtype == np.float64 and isinstance(bound, float) and 0.0 < bound < math.inf and bool((norm <= bound).all()):
        # every row inside the ball: its factor below is exactly bound / bound = 1.0 and x * 1.0 == x, so a copy
        # has the same bits without the factors (a NaN or infinite norm fails this test)
        return v.copy()
    overflow = np.isinf(squares[..., 0])
    if overflow.any():
        norm[overflow] = _scaled_norms(v[overflow])
    return scale_points(v, bound / np.maximum(norm[..., 0], bound))
