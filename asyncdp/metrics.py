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

__all__ = ["optimality_error", "deviation", "consensus_error", "MetricCurve"]

_BLOCK = 1 << 22
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
    return ((arr.mean(axis=-2) - np.asarray(optimum, dtype=float)) ** 2).sum(-1)


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
    xbar = arr.mean(axis=-2)
    return np.sqrt(((arr - xbar[..., None, :]) ** 2).sum(-1)).max(axis=-1)


def consensus_error(x: Any) -> np.ndarray:
    """``max_ij ||x_i - x_j||``, the largest distance between two agents (exact).

    The pairwise differences are formed in blocks of rows so that memory stays
    bounded (``O(N^2 n)`` work per round, never ``O(N^2 n)`` memory per batch).

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
    else:  # one round at a time, in blocks of rows i
        rows = max(1, _BLOCK // (n_agents * max(dim, 1)))
        for k in range(flat.shape[0]):
            b = flat[k]
            best = -np.inf
            for i in range(0, n_agents, rows):
                diff = b[i:i + rows, None, :] - b[None, :, :]
                best = max(best, float(np.sqrt((diff**2).sum(-1)).max()))
            out[k] = best
    return out.reshape(lead)


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
