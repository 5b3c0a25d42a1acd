"""The accuracy metrics of a run, written once for states with any leading axes.

A state array ``x`` has shape ``(..., N, n)``: agents on the second-to-last
axis, coordinates on the last. The leading axes are free: ``(N, n)`` is one
round of one run, ``(T + 1, N, n)`` a trajectory
(:attr:`asyncdp.result.Result.trajectory`), ``(R, T + 1, N, n)`` ``R``
stacked runs (:attr:`asyncdp.engine.batch_engine.BatchResult.trajectory`).
Every function reduces the last two axes and returns an array of the leading
shape (a 0-d array for one round).

* :func:`optimality_error` ``||xbar - x*||^2`` with ``xbar`` the agents' mean;
* :func:`deviation` ``max_i ||x_i - xbar||``;
* :func:`consensus_error` ``max_ij ||x_i - x_j||`` (exact; it lies between
  the deviation and twice the deviation).

:class:`MetricCurve` is the array type :class:`~asyncdp.result.Result` and
:class:`~asyncdp.engine.batch_engine.BatchResult` return for these metrics: a
plain ``numpy`` array that may also be called (``res.optimality_error()``),
so indexing and calling read the same numbers.

Example:
    >>> x = np.array([[[0.0, 0.0], [2.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]]])  # T + 1 = 2 rounds, N = 2, n = 2
    >>> optimality_error(x, np.array([1.0, 0.0])).tolist()
    [0.0, 1.0]
    >>> deviation(x).tolist(), consensus_error(x).tolist()
    ([1.0, 0.0], [2.0, 0.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["optimality_error", "deviation", "optimality_error_and_deviation", "consensus_error", "MetricCurve"]

_BLOCK = 1 << 22

_PRUNE_FLOOR = 1e-140
"""Below this farthest distance the squares approach the subnormal range and round-off can break the
triangle inequality the pruning relies on; ``_diameter`` then compares every pair."""
"""Largest number of pairwise differences :func:`consensus_error` holds at once (32 MiB of float64)."""


def _states(x: Any) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim < 2:
        raise ValueError(f"x must have shape (..., N, n) (agents, coordinates last), got shape {arr.shape}")
    return arr


def optimality_error(x: Any, optimum: Any) -> np.ndarray:
    """``||xbar - x*||^2``, the squared distance of the agents' mean from the optimum.

    Args:
        x: states, shape ``(..., N, n)``.
        optimum: ``x*``, shape ``(n,)`` (or broadcastable against ``(..., n)``).

    Returns:
        An array of shape ``x.shape[:-2]``.

    Raises:
        ValueError: ``x`` has fewer than two axes.

    Example:
        >>> float(optimality_error([[0.0], [2.0]], [0.0]))
        1.0
    """
    arr = _states(x)
    return _optimality_error(_agent_mean(arr), optimum)


def _squared_norms(d: np.ndarray) -> np.ndarray:
    """``(d ** 2).sum(-1)``, the squared norms of the rows of ``d``, to the bit.

    With at most two coordinates the two squares are added as two columns: the sum of two nonnegative
    numbers does not depend on the order numpy's reduction adds them in, and elementwise operations on
    the columns avoid the reduction's cost per row of two entries (several times the arithmetic).
    """
    if d.shape[-1] == 2:
        first, second = d[..., 0], d[..., 1]
        out = first * first
        out += second * second
        return out
    return (d**2).sum(-1)


def _agent_mean(arr: np.ndarray) -> np.ndarray:
    """``arr.mean(axis=-2)``, the agents' mean of states ``(..., N, n)``, to the bit.

    numpy sums a reduced axis that is not the innermost one agent after agent; in the plane (rows of two
    contiguous floats) each agent's point is added as one complex number instead (the same two additions,
    without numpy's cost per row of two entries), then divided by ``N`` as the mean does.
    """
    n_agents = arr.shape[-2]
    if arr.shape[-1] == 2 and arr.dtype == np.float64 and arr.strides[-1] == arr.itemsize and n_agents > 0:
        try:
            points = arr.view(np.complex128)[..., 0].reshape(-1, n_agents)  # (rows, N)
        except ValueError:  # a layout the view does not allow
            return arr.mean(axis=-2)
        total = points[:, 0].copy()
        for i in range(1, n_agents):
            total += points[:, i]
        mean = total.view(np.float64).reshape(arr.shape[:-2] + (2,))
        mean /= n_agents
        return mean
    return arr.mean(axis=-2)


def _optimality_error(xbar: np.ndarray, optimum: Any) -> np.ndarray:
    """``||xbar - x*||^2`` from the agents' mean ``xbar`` ``(..., n)``."""
    return _squared_norms(xbar - np.asarray(optimum, dtype=float))


def _deviation(arr: np.ndarray, xbar: np.ndarray) -> np.ndarray:
    """``max_i ||x_i - xbar||`` from the states ``(..., N, n)`` and their mean ``xbar`` ``(..., n)``."""
    if arr.shape[-1] == 2:  # coordinate by coordinate: (..., N) arrays instead of rows of two
        diff = arr[..., 0] - xbar[..., 0, None]
        other = arr[..., 1] - xbar[..., 1, None]
        diff *= diff
        other *= other
        diff += other
        return np.sqrt(diff).max(axis=-1)
    return np.sqrt(_squared_norms(arr - xbar[..., None, :])).max(axis=-1)


def optimality_error_and_deviation(x: Any, optimum: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(optimality_error(x, optimum), deviation(x))`` with the agents' mean computed once (the same numbers).

    Args:
        x: states, shape ``(..., N, n)``.
        optimum: ``x*``, shape ``(n,)`` (or broadcastable against ``(..., n)``).

    Returns:
        Two arrays of shape ``x.shape[:-2]``.

    Raises:
        ValueError: ``x`` has fewer than two axes.

    Example:
        >>> err, dev = optimality_error_and_deviation([[0.0, 0.0], [3.0, 4.0]], [0.0, 0.0])
        >>> float(err), float(dev)
        (6.25, 2.5)
    """
    arr = _states(x)
    xbar = _agent_mean(arr)
    return _optimality_error(xbar, optimum), _deviation(arr, xbar)


def deviation(x: Any) -> np.ndarray:
    """``max_i ||x_i - xbar||``, the largest distance of an agent from the agents' mean.

    Args:
        x: states, shape ``(..., N, n)``.

    Returns:
        An array of shape ``x.shape[:-2]``.

    Raises:
        ValueError: ``x`` has fewer than two axes.

    Example:
        >>> float(deviation([[0.0, 0.0], [3.0, 4.0]]))
        2.5
    """
    arr = _states(x)
    return _deviation(arr, _agent_mean(arr))


def consensus_error(x: Any) -> np.ndarray:
    """``max_ij ||x_i - x_j||``, the largest distance between two agents (exact).

    Few agents (``N^2 n`` up to about 4 * 10^6): all pairwise differences of
    whole rounds at once, in blocks of rounds so that memory stays bounded.
    More agents: one round at a time, comparing only the pairs that can still
    be the farthest (see ``_diameter``; the result is the same maximum, bit
    for bit), so that a round of 10^5 agents takes a fraction of a second
    instead of ``O(N^2)`` work.

    Args:
        x: states, shape ``(..., N, n)``.

    Returns:
        An array of shape ``x.shape[:-2]``.

    Raises:
        ValueError: ``x`` has fewer than two axes, or no agents.

    Example:
        >>> float(consensus_error([[0.0, 0.0], [3.0, 4.0], [0.0, 4.0]]))
        5.0
    """
    arr = _states(x)
    lead, (n_agents, dim) = arr.shape[:-2], arr.shape[-2:]
    if n_agents == 0:
        raise ValueError(f"x has no agents (shape {arr.shape}): the consensus error is undefined")
    flat = arr.reshape((-1, n_agents, dim))
    out = np.empty(flat.shape[0])
    per_round = n_agents * n_agents * max(dim, 1)
    if per_round <= _BLOCK:  # whole rounds at once
        step = max(1, _BLOCK // per_round)
        for s in range(0, flat.shape[0], step):
            b = flat[s:s + step]
            diff = b[:, :, None, :] - b[:, None, :, :]
            out[s:s + step] = np.sqrt((diff**2).sum(-1)).max(axis=(1, 2))
    else:  # many agents: one round at a time, pruned
        for k in range(flat.shape[0]):
            out[k] = _diameter(flat[k])
    return out.reshape(lead)


def _diameter(points: np.ndarray) -> float:
    """``max_ij ||p_i - p_j||`` for one round of many agents, exact, usually far below ``O(N^2)`` work.

    With ``c`` the centroid and ``r_i = ||p_i - c||``, a pair can only be
    farther apart than ``r_i + r_j``; so once some pair at distance ``best``
    is known, only points with ``r_i + r_max > best`` can be in a farther
    pair, and a point ``i`` need only be compared with the points ``j`` of
    ``r_j > best - r_i``; nor can a point at the centroid, since
    ``r_max <= best`` (the centroid is an average of the points). Points are
    taken in decreasing ``r``, in blocks of rows. The bound keeps a relative
    slack of ``1e-9`` (of ``best + r_max``, the same for every row) so that
    round-off in the radii never drops the farthest pair (below distances of
    ``_PRUNE_FLOOR``, where squares lose precision, every pair is compared):
    the result is bit for bit the maximum of the pairwise distances computed
    as ``sqrt(sum((p_i - p_j)^2))``. Equal states are merged first.
    Points spread evenly on a sphere around their centroid prune nothing (the
    work is then ``O(N^2)``, as without pruning); a noisy or uniform cloud
    keeps a handful of candidates (N = 10^5 Gaussian points in the plane:
    about 70 ms).
    """
    if not np.isfinite(points).all():  # NaN/inf: no geometry to prune with
        return _all_pairs(points)
    points = np.unique(points, axis=0)  # equal states (e.g. groups in exact agreement) count once
    dim = points.shape[1]
    center = points.mean(axis=0)
    radius = np.sqrt(((points - center) ** 2).sum(axis=1))
    order = np.argsort(-radius, kind="stable")
    pts, neg = points[order], -radius[order]  # neg ascending: radii descending
    best = float(np.sqrt(((pts - pts[0]) ** 2).sum(axis=1)).max())
    if not best >= _PRUNE_FLOOR:  # squares near the subnormal range (or NaN): no triangle inequality to trust
        return _all_pairs(pts)
    r_max = -float(neg[0])

    def partners(r_i: float) -> int:  # how many leading points j can beat best with point i
        # a point at the centroid (r_j = 0) cannot: its partner is at r_i <= r_max <= best
        bound = max(best - r_i - 1e-9 * (best + r_max), 0.0)
        return int(np.searchsorted(neg, -bound, side="left"))

    i, stop = 1, partners(r_max)
    while i < stop:
        m = partners(-float(neg[i]))  # the block's first row has its largest radius
        if m == 0:  # no partner left for this row, hence none for the rows after it
            break
        rows = max(1, _BLOCK // (m * max(dim, 1)))
        block = pts[i:min(i + rows, stop)]
        diff = block[:, None, :] - pts[None, :m, :]
        best = max(best, float(np.sqrt((diff**2).sum(-1)).max()))
        i += len(block)
        stop = min(stop, partners(r_max))
    return best


def _all_pairs(points: np.ndarray) -> float:
    """``max_ij ||p_i - p_j||`` over every pair, in blocks of rows (bounded memory)."""
    n_agents, dim = points.shape
    rows = max(1, _BLOCK // (n_agents * max(dim, 1)))
    maxima = [np.sqrt(((points[i:i + rows, None, :] - points[None, :, :]) ** 2).sum(-1)).max()
              for i in range(0, n_agents, rows)]
    return float(np.max(maxima))  # NaN if any distance is NaN, as one max over all pairs


class MetricCurve(np.ndarray):
    """A metric's values as a plain array that can also be called: ``c()`` is ``c`` as an ``ndarray``.

    :class:`~asyncdp.result.Result` and
    :class:`~asyncdp.engine.batch_engine.BatchResult` return metrics in this
    type, so that both spellings used so far read the same numbers:
    ``res.optimality_error()[-1]`` and ``res.optimality_error[..., -1]``.
    Arithmetic and reductions return plain arrays.

    Example:
        >>> c = MetricCurve.of(np.array([3.0, 1.0]))
        >>> bool(c()[-1] == c[-1] == 1.0)
        True
        >>> type(c.mean()).__name__, type(c * 2).__name__
        ('float64', 'ndarray')
    """

    @classmethod
    def of(cls, values: Any) -> MetricCurve:
        """``values`` (an array) viewed as a :class:`MetricCurve` (no copy)."""
        return np.asarray(values).view(cls)

    def __call__(self) -> np.ndarray:
        return self.view(np.ndarray)

    def __array_wrap__(self, obj: Any, context: Any = None, return_scalar: bool = False) -> Any:
        out = np.asarray(obj).view(np.ndarray)
        return out[()] if return_scalar else out

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))

    def __reduce__(self) -> Any:  # pickles as a plain array (loads without this class)
        return self.view(np.ndarray).__reduce__()
