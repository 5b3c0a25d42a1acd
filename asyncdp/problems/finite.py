"""Whether a float array holds only finite numbers: exact, warning-free, fast for a single point.

The SimPy engine checks one small vector at a time (a gradient, a point to
project), millions of times per run, and the replays of asynchronous runs small batches of a few points, where
``numpy.isfinite(x).all()`` costs two numpy calls. For a short array the sum of its entries, taken in Python
floats, is non-finite whenever an entry is NaN or infinite; Python floats
overflow to ``inf`` silently, so a sum that overflows from finite entries is
never reported as a problem: it falls back to the exact numpy test.
(``x @ x`` would be cheaper still, but numpy warns when it overflows.)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["all_finite", "SHORT"]

SHORT = 16
"""Arrays with at most this many entries are summed in Python floats first."""


def all_finite(x: np.ndarray) -> bool:
    """``True`` iff every entry of the float array ``x`` is finite (no NaN, no +-inf).

    Args:
        x: a float ndarray of any shape.

    Returns:
        Exactly ``bool(numpy.isfinite(x).all())``, without overflow warnings.

    Example:
        >>> all_finite(np.array([1e300, 1e300])), all_finite(np.array([0.0, np.nan]))
        (True, False)
    """
    if x.ndim == 1:
        if x.shape[0] <= SHORT and math.isfinite(sum(x.tolist())):
            return True
    elif x.ndim and x.size <= SHORT and math.isfinite(sum(x.ravel().tolist())):  # a small batch (a replay's)
        return True
    return bool(np.isfinite(x).all())
