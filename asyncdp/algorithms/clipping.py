"""L2 clipping of gradient-like rows, shared by the rules that clip.

``clip_l2(v, bound)`` scales every row (last axis) of ``v`` to L2 norm at most
``bound``: ``v * (bound / max(||v||, bound))``. A row inside the ball is
returned unchanged, bit for bit (the factor is exactly ``1.0`` there).

The SimPy engine calls rules on one point at a time (``v.ndim == 1``) and the
batch engine on ``(R, N, n)`` arrays. Both must give the same bits, so the
one-point path computes exactly what the vectorized path computes for that
row; it only uses a cheaper sum of squares (``v @ v``) to *decide* that the
row is well inside the ball, with a margin far above any rounding
difference between the two sums.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["clip_l2"]

_UNIT = 2.0**-53  # unit roundoff of float64


def clip_l2(v: np.ndarray, bound: float) -> np.ndarray:
    """Scale each row of ``v`` (last axis) to L2 norm at most ``bound``.

    Args:
        v: float array of shape ``(..., n)``.
        bound: the L2 bound, positive and finite (not checked: the calling
            rule validates its parameters once).

    Returns:
        ``v * (bound / max(||v||_2, bound))`` row by row: rows with norm at
        most ``bound`` keep their exact values (for one point well inside
        the ball, ``v`` itself is returned).

    Example:
        >>> clip_l2(np.array([3.0, 4.0]), 1.0).tolist()
        [0.6000000000000001, 0.8]
        >>> clip_l2(np.array([[0.3, 0.4], [3.0, 4.0]]), 1.0)[0].tolist()
        [0.3, 0.4]
    """
    if v.ndim == 1:
        n = v.shape[0]
        # both sums of n nonnegative products are within about (n + 1) units of roundoff of
        # the exact one; below this threshold the exact row norm is certainly <= bound
        if float(v.dot(v)) < bound * bound * (1.0 - 8.0 * (n + 2) * _UNIT):
            return v
        norm = math.sqrt(float((v * v).sum()))
        return v * (bound / max(norm, bound))
    norm = np.sqrt((v * v).sum(axis=-1, keepdims=True))
    return v * (bound / np.maximum(norm, bound))
