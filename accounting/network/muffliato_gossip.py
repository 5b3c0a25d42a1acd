"""Muffliato's gossip protocol: the authors' weights, step count and Chebyshev constant, the gossip matrices' rows.

Cyffers, Even, Bellet and Massoulié, "Muffliato: Peer-to-Peer Privacy
Amplification for Decentralized Optimization and Averaging" (NeurIPS 2022):
every node adds Gaussian noise once, ``x(0) = x + sigma xi`` (their code
then clips to [0, 1]; the exact model of :mod:`.muffliato` does **not** clip, so it is
linear), and runs ``T`` gossip steps with a fixed symmetric doubly
stochastic ``W``:

* plain: ``x(t) = W x(t-1)``, so ``x(t) = W^t x(0)``;
* Chebyshev-accelerated: ``x(1) = W x(0)``,
  ``x(t+1) = gamma W x(t) + (1 - gamma) x(t-1)``, with
  ``gamma = 2 (1 - sqrt(l2 (1 - l2/4))) / (1 - l2/2)^2`` and ``l2`` the
  spectral gap (second-smallest eigenvalue of ``I - W``).

In both, ``x(t) = M_t x(0)`` with ``M_t`` a polynomial in ``W``
(``gossip_rows`` streams its rows; ``muffliato_schedule`` is the
same protocol as a :class:`~.schedule.LinearSchedule`).

Conventions of the authors' public code, as used here
(``muffliato_steps``, ``hamilton_weights``):

* weights: ``W_uv = 1 / (max(d_u, d_v) + 1)`` on edges (plain degrees),
  ``W_uu`` the rest of the row: the Metropolis rule of :mod:`topology.weights`;
* steps: ``T = ceil(log(n / sigma^2 * max(1/4, sigma^2)) / sqrt(l2))``
  accelerated, ``/ l2`` plain.

The per-pair values computed over these rows are in :mod:`.muffliato`.

Example:
    >>> W = hamilton_weights(nx.path_graph(4))
    >>> round(spectral_gap(W), 4), muffliato_steps(4, 1.0, spectral_gap(W))
    (0.1953, 4)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import networkx as nx
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from topology.weights import metropolis

from ..errors import AccountingError, PrivacyParameterError
from .schedule import LinearSchedule

__all__ = [
    "hamilton_weights",
    "spectral_gap",
    "chebyshev_gamma",
    "muffliato_steps",
    "gossip_rows",
    "muffliato_schedule",
]


def hamilton_weights(graph: nx.Graph) -> sp.csr_array:
    """The authors' "Hamilton" gossip weights: ``1 / (max(d_u, d_v) + 1)`` on edges, the rest on the diagonal.

    Their code adds self-loops and reads networkx degrees (a self-loop counts
    twice); in plain degrees this is the Metropolis rule, so this returns
    :func:`topology.weights.metropolis`.

    Args:
        graph: an undirected networkx graph on nodes ``0..n-1``.

    Returns:
        ``W``, symmetric and doubly stochastic (CSR).

    Raises:
        topology.errors.ParameterError: a directed pattern.

    Example:
        >>> hamilton_weights(nx.star_graph(2)).toarray().round(3).tolist()
        [[0.333, 0.333, 0.333], [0.333, 0.667, 0.0], [0.333, 0.0, 0.667]]
    """
    return sp.csr_array(metropolis(graph))


def spectral_gap(weights: Any) -> float:
    """``l2``: the second-smallest eigenvalue of ``I - W`` for a symmetric ``W`` (dense ``eigvalsh``).

    Args:
        weights: symmetric ``W`` (dense or scipy sparse), size >= 2.

    Returns:
        The spectral gap.

    Raises:
        AccountingError: ``W`` not square or not symmetric.

    Example:
        >>> round(spectral_gap(hamilton_weights(nx.hypercube_graph(3))), 12)
        0.5
    """
    w = weights.toarray() if sp.issparse(weights) else np.asarray(weights, dtype=float)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] < 2:
        raise AccountingError(f"weights must be a square matrix of size >= 2, got shape {w.shape}")
    if not np.allclose(w, w.T, atol=1e-12):
        raise AccountingError("weights must be symmetric for the spectral gap of I - W")
    ev = sla.eigvalsh(np.eye(w.shape[0]) - w, subset_by_index=[0, 1])
    return float(ev[1])


def chebyshev_gamma(gap: float) -> float:
    """Chebyshev acceleration constant ``gamma = 2 (1 - sqrt(l2 (1 - l2/4))) / (1 - l2/2)^2``.

    Args:
        gap: the spectral gap ``l2`` in (0, 1].

    Returns:
        ``gamma``.

    Raises:
        PrivacyParameterError: ``gap`` outside (0, 1].

    Example:
        >>> round(chebyshev_gamma(0.5), 6)  # 2 (1 - sqrt(0.4375)) / 0.5625
        1.203777
    """
    if not 0 < gap <= 1:
        raise PrivacyParameterError(f"spectral gap must lie in (0, 1], got {gap!r}")
    return 2.0 * (1.0 - math.sqrt(gap * (1.0 - gap / 4.0))) / (1.0 - gap / 2.0) ** 2


def muffliato_steps(n: int, sigma: float, gap: float, accelerated: bool = True) -> int:
    """The authors' step count ``ceil(log(n / sigma^2 * max(1/4, sigma^2)) / sqrt(l2))`` (``/ l2`` if plain).

    Args:
        n: number of nodes.
        sigma: noise standard deviation.
        gap: the spectral gap ``l2``.
        accelerated: Chebyshev (``True``) or plain gossip.

    Returns:
        ``T`` (at least 1).

    Raises:
        PrivacyParameterError: ``n < 1``, ``sigma <= 0`` or ``gap`` outside (0, 1].

    Example:
        >>> muffliato_steps(2048, 1.0, 1 / 6)
        19
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise PrivacyParameterError(f"n must be an integer >= 1, got {n!r}")
    if not (sigma > 0 and math.isfinite(sigma)):
        raise PrivacyParameterError(f"sigma must be a finite number > 0, got {sigma!r}")
    if not 0 < gap <= 1:
        raise PrivacyParameterError(f"spectral gap must lie in (0, 1], got {gap!r}")
    top = math.log(n / sigma**2 * max(0.25, sigma**2))
    return max(1, math.ceil(top / (math.sqrt(gap) if accelerated else gap)))


def _check_gamma(gamma: float | None) -> None:
    if gamma is not None and not (math.isfinite(gamma) and gamma > 0):
        raise PrivacyParameterError(f"gamma must be None (plain gossip) or a finite number > 0, got {gamma!r}")


def gossip_rows(weights: sp.csr_array, rows: Iterable[int], steps: int, gamma: float | None = None
                ) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(t, M_t[rows, :])`` for ``t = 0..steps`` (``M_0 = I``), plain or Chebyshev (``gamma``).

    Only ``len(rows) x n`` numbers are held per step (two steps for Chebyshev).

    Args:
        weights: symmetric ``W`` (CSR).
        rows: the row indices.
        steps: ``T >= 0``.
        gamma: ``None`` for plain gossip, else the Chebyshev constant.

    Yields:
        ``(t, M_t[rows, :])``, a fresh ``(len(rows), n)`` array per step.

    Raises:
        PrivacyParameterError: negative ``steps`` or a bad ``gamma``.

    Example:
        >>> W = sp.csr_array(np.full((2, 2), 0.5))
        >>> [r.tolist() for _, r in gossip_rows(W, [0], 2)]
        [[[1.0, 0.0]], [[0.5, 0.5]], [[0.5, 0.5]]]
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise PrivacyParameterError(f"steps must be an integer >= 0, got {steps!r}")
    _check_gamma(gamma)
    idx = np.asarray(list(rows), dtype=np.int64)
    n = weights.shape[0]
    wt = sp.csr_array(weights.T)
    prev = np.zeros((idx.size, n))
    prev[np.arange(idx.size), idx] = 1.0
    yield 0, prev
    if steps == 0:
        return
    cur = np.asarray((wt @ prev.T).T)
    yield 1, cur
    for t in range(2, steps + 1):
        nxt = np.asarray((wt @ cur.T).T)
        if gamma is not None:
            nxt = gamma * nxt + (1.0 - gamma) * prev
        prev, cur = cur, nxt
        yield t, cur


def muffliato_schedule(weights: Any, steps: int, sigma: float, gamma: float | None = None) -> LinearSchedule:
    """The same protocol as a :class:`~.schedule.LinearSchedule` (``steps + 1`` rounds; noise in round 1).

    Message ``y(t)`` is ``x(t - 1) = M_{t-1} (x + sigma xi)``: round 1 is the
    first exchange, rounds ``2..steps + 1`` carry ``M_1 .. M_steps``.

    Args:
        weights: ``W``.
        steps: ``T`` >= 1.
        sigma: noise standard deviation (round 1), > 0.
        gamma: ``None`` (plain) or the Chebyshev constant (as the own message of the previous round).

    Returns:
        The :class:`~.schedule.LinearSchedule`.

    Raises:
        PrivacyParameterError: bad ``steps``, ``sigma`` or ``gamma``.

    Example:
        >>> muffliato_schedule(np.full((2, 2), 0.5), 2, 1.0).horizon
        3
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise PrivacyParameterError(f"steps must be an integer >= 1, got {steps!r}")
    if not (sigma > 0 and math.isfinite(sigma)):
        raise PrivacyParameterError(f"sigma must be a finite number > 0, got {sigma!r}")
    _check_gamma(gamma)
    w = sp.csr_array(weights)
    n = w.shape[0]
    scale = np.zeros((steps + 1, n))
    scale[0] = sigma
    if gamma is None:
        return LinearSchedule.from_mixing([w] * (steps + 1), scale)
    mixing = [w] + [w * gamma] * steps
    lag2 = [np.zeros(n)] + [np.full(n, 1.0 - gamma)] * steps
    return LinearSchedule.from_mixing(mixing, scale, lag2=lag2)
