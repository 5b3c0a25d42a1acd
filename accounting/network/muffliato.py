"""Muffliato's pairwise privacy loss: the authors' per-pair values and the exact values, streamed per observer.

Cyffers, Even, Bellet and Massoulié, "Muffliato: Peer-to-Peer Privacy
Amplification for Decentralized Optimization and Averaging" (NeurIPS 2022),
plot the pairwise network-DP loss from node ``u`` to node ``v`` against their
shortest-path distance. Their protocol: every node adds Gaussian noise once,
``x(0) = x + sigma xi``, and runs ``T`` gossip steps with a fixed symmetric
doubly stochastic ``W``, plain or Chebyshev-accelerated, so that
``x(t) = M_t x(0)`` with ``M_t`` a polynomial in ``W`` (the protocol, the
authors' weights and step count: :mod:`.muffliato_gossip`; the figure's
graphs: ``muffliato_graphs``).

Conventions of the authors' public code, as used here
(:func:`authors_pairwise_loss`):

* per pair, order ``alpha``: ``min(eps_local, alpha / (2 sigma^2) * sum over
  t = 1..T and neighbours w != v of v of (M_t[w, u] / ||M_t[w, :]||)^2)``:
  every message counted as a separate Gaussian mechanism and the results
  added; the first exchange (``t = 0``, the raw noisy values) is left out.

Other quirks of that code, kept out of the functions here: it clips the
noisy value to [0, 1] (the exact model cannot: it is linear); its grid curve
is for ``u = 0`` (a ``u = 1035`` is set but not passed); its "trials" of the
Erdős–Rényi graph rerun one graph and one seed; its figure draws the local
budget (1) as a line, on a log axis from 1e-5 to 1.2.

The exact value (:func:`exact_pairwise_loss`): ``v`` sees the messages
``x_w(t)`` of its neighbours ``w != v`` for ``t = 1..T`` (the authors'
convention) or ``t = 0..T`` (``include_first_exchange=True``: what ``v``
actually receives), knows its own noise ``xi_v`` and its datum, and no
clipping. Its view is ``B (x + sigma xi)`` with ``B`` the stacked rows
``M_t[w, :]``; conditioned on ``xi_v`` the covariance is ``sigma^2 B' B'^T``
(``B'``: ``B`` without column ``v``), the shift for ``u`` is ``B[:, u]``, so
``D_alpha(u -> v) = alpha / (2 sigma^2) * ||P e_u||^2`` with ``P`` the
projection on the row space of ``B'`` (by ``row_space_basis`` of
``row_space``, or by :func:`~.gaussian_views.gaussian_view_losses` with
``method="svd"``).
Including the first exchange gives every neighbour of ``u`` the full
``alpha / (2 sigma^2)``.

Numerical caveat. The rows ``M_t[w, :]`` converge to the consensus row, so
long views (large ``T``: the random geometric graph and the grid) have a
smoothly decaying spectrum, and how many weak directions count depends on
the rank tolerance; every direction counts fully in exact arithmetic. The
values are then lower estimates of the exact-arithmetic loss
(``ObserverRow.dropped > 0``, see :mod:`.gaussian_views`): an exact value
above the authors' is a witness against their figure, one below it is no
certificate. Views whose weak directions are exact dependencies (the
hypercube's ``W`` has 12 distinct eigenvalues, so each neighbour's rows span
at most 12 dimensions) are exact.

Cost: per observer, ``T`` sparse products for its ``d_v`` rows, orthogonalized
batch by batch against the basis built so far (``row_space_basis``,
``O(d_v T n r)`` for a view of rank ``r``; the one-SVD route costs
``O(d_v T n^2)`` when ``d_v T > n``); observers are streamed one at a time
(:func:`pairwise_rows`), so memory is one observer's basis, and they are
independent, so ``pairwise_rows(..., workers=k)`` spreads them over ``k``
processes (same rows, same order).
Where the exact value exceeds the authors', :func:`witness_round` names the
first step from which it does.

Example:
    >>> import networkx as nx
    >>> from accounting.network.muffliato_gossip import hamilton_weights
    >>> W = hamilton_weights(nx.path_graph(4))
    >>> row = observer_row(W, 3, steps=2, gamma=None)  # v = 3 sees x_2(1), x_2(2)
    >>> row.exact.round(4).tolist(), row.authors.round(4).tolist()
    ([0.6667, 0.6667, 0.6667, inf], [0.0435, 0.5072, 0.7246, 0.7246])

Here the node 3 sees ``x_2(1) = (x_1 + x_2 + x_3)/3`` and ``x_2(2) = (x_0 +
2 x_1 + 3 x_2 + 3 x_3)/9`` (noisy inputs), knows its own noise, and the
view's rows ``(0, 1, 1)/3`` and ``(1, 2, 3)/9`` on ``(x_0, x_1, x_2)`` span
the plane orthogonal to ``(1, 1, -1)``: every ``||P e_u||^2 = 1 - 1/3``. The
authors' value for ``u = 0`` is ``(1/9)^2 / (1 + 4 + 9 + 9)/81 = 1/23``:
their sum is below the exact loss here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import AccountingError, PrivacyParameterError
from .gaussian_views import RANGE_RTOL, RANK_RTOL, count_outside, gaussian_view_losses, renyi_from_mu
from .muffliato_gossip import gossip_rows
from .row_space import row_space_basis

__all__ = [
    "WITNESS_MARGIN",
    "witness_margin",
    "authors_pairwise_loss",
    "exact_pairwise_loss",
    "ObserverRow",
    "observer_row",
    "pairwise_rows",
    "witness_round",
]


WITNESS_MARGIN = 1e-6
"""An exact value counts as above a claimed one only when it exceeds it by more than this fraction of the
local budget ``alpha Delta^2 / (2 sigma^2)`` (:func:`witness_margin`; the values' unit).

The rounding of a long view's basis reaches about 1e-8 of the budget (a loss that cannot exceed the local
budget 1 came out as 1 + 7e-9 on a 128-node random geometric graph), so a smaller margin would report
rounding as a witness against a claim that equals the budget.
"""


def witness_margin(local_budget: float) -> float:
    """How far an exact value must exceed a claimed one to be a witness: :data:`WITNESS_MARGIN` times the local
    budget (every pairwise value lies in ``[0, local_budget]``, and its rounding is relative to it); an absolute
    :data:`WITNESS_MARGIN` if the budget is not a positive finite number.

    Args:
        local_budget: ``alpha Delta^2 / (2 sigma^2)``, the loss of the raw noisy release.

    Returns:
        The margin.

    Example:
        >>> witness_margin(1.0), witness_margin(1e-6)
        (1e-06, 1e-12)
    """
    return WITNESS_MARGIN * local_budget if 0 < local_budget < math.inf else WITNESS_MARGIN


def _neighbours(weights: sp.csr_array, v: int) -> np.ndarray:
    n = weights.shape[0]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < n:
        raise AccountingError(f"observer node must be an integer in [0, {n}), got {v!r}")
    row = weights[[v], :].tocoo()
    cols = np.unique(row.col[row.data != 0])
    return cols[cols != v]


def _check_privacy(alpha: float, sigma: float) -> None:
    if not (alpha > 1 and math.isfinite(alpha)):
        raise PrivacyParameterError(f"alpha must be a finite number > 1, got {alpha!r}")
    if not (sigma > 0 and math.isfinite(sigma)):
        raise PrivacyParameterError(f"sigma must be a finite number > 0, got {sigma!r}")


def authors_pairwise_loss(weights: sp.csr_array, v: int, steps: int, gamma: float | None = None, *,
                          alpha: float = 2.0, sigma: float = 1.0, eps_local: float = 1.0) -> np.ndarray:
    """The authors' per-pair Renyi value for observer ``v`` and every source ``u``, as their code computes it.

    ``min(eps_local, alpha/(2 sigma^2) sum_{t=1..T} sum_{w ~ v, w != v} (M_t[w, u] / ||M_t[w, :]||)^2)``
    (module docstring). The entry ``u = v`` follows the same formula (the code does not single it out).

    Args:
        weights: ``W`` (CSR, symmetric).
        v: the observer.
        steps: ``T``.
        gamma: ``None`` (plain) or the Chebyshev constant.
        alpha: Renyi order, > 1.
        sigma: noise standard deviation, > 0.
        eps_local: the cap (the local budget), > 0.

    Returns:
        ``(n,)`` array.

    Raises:
        AccountingError, PrivacyParameterError: bad node or parameters.

    Example:
        >>> import networkx as nx
        >>> from accounting.network.muffliato_gossip import hamilton_weights
        >>> W = hamilton_weights(nx.path_graph(3))
        >>> authors_pairwise_loss(W, 2, 1).round(4).tolist()  # one row (1, 1, 1)/3: 1/3 each
        [0.3333, 0.3333, 0.3333]
    """
    _check_privacy(alpha, sigma)
    _check_eps_local(eps_local)
    nb = _neighbours(weights, v)
    total = np.zeros(weights.shape[0])
    for t, rows in gossip_rows(weights, nb, steps, gamma):
        if t > 0:
            _add_authors_terms(total, rows)
    return _authors_cap(total, alpha, sigma, eps_local)


def _check_eps_local(eps_local: float) -> None:
    if not (eps_local > 0 and math.isfinite(eps_local)):
        raise PrivacyParameterError(f"eps_local must be a finite number > 0, got {eps_local!r}")


def _add_authors_terms(total: np.ndarray, rows: np.ndarray) -> None:
    """``total += sum over the rows of (M_t[w, :] / ||M_t[w, :]||)^2``: one step of the authors' sum."""
    total += ((rows / np.linalg.norm(rows, axis=1, keepdims=True)) ** 2).sum(axis=0)


def _authors_cap(total: np.ndarray, alpha: float, sigma: float, eps_local: float) -> np.ndarray:
    """The authors' value from their sum: ``min(eps_local, alpha / (2 sigma^2) * total)``."""
    return np.minimum(eps_local, alpha / (2 * sigma**2) * total)


@dataclass(frozen=True)


class ObserverRow:
    """One observer's row of the pairwise matrices.

    Attributes:
        v: the observer.
        authors: the authors' values (``(n,)``), or ``None`` if not asked for.
        exact: the exact Renyi divergences ``u -> v`` (``(n,)``, ``inf`` at ``u = v``).
        rank: numerical rank of the view's covariance.
        dropped: ambiguous directions, above rounding level but at or below the rank tolerance, or carried by
            entries at or below it outside the kept row space (:func:`~.gaussian_views.faint_directions`); when
            positive, ``exact`` is a lower estimate of the exact-arithmetic values (see
            :mod:`.gaussian_views`): entries above the authors' values remain witnesses, entries below them
            certify nothing.
        view_dim: number of messages ``v`` sees.
    """

    v: int
    authors: np.ndarray | None
    exact: np.ndarray
    rank: int
    dropped: int
    view_dim: int


def _faint_streamed(blocks: Iterable[np.ndarray], level: float, q: np.ndarray) -> int:
    """The row half of :func:`~.gaussian_views.faint_directions` for a streamed view ``B`` (blocks of rows) whose
    kept row space has the orthonormal basis ``q``: how many rows' parts at or below ``level`` (entries with
    ``0 < |b_ij| <= level``) lie outside ``span(q)``, an upper bound on the directions they add (the column half
    needs the column space, which the stream does not form: this bound may count a faint part that the column
    space already holds). One more pass over the blocks, only when some entry is faint."""
    count = 0
    for block in blocks:
        faint = (block != 0) & (np.abs(block) <= level)
        rows = np.flatnonzero(faint.any(axis=1))
        if rows.size:
            count += count_outside(np.where(faint[rows], block[rows], 0.0).T, q, RANGE_RTOL)
    return count


def _streamed_exact(weights: sp.csr_array, v: int, steps: int, gamma: float | None, alpha: float, sigma: float,
                    include_first_exchange: bool, rank_rtol: float, authors_total: np.ndarray | None = None
                    ) -> ObserverRow:
    """The exact values by ``row_space_basis`` over the streamed view (parameters checked by the caller).

    With ``authors_total`` (zeros of shape ``(n,)``), the authors' sum is accumulated into it from the same
    gossip rows (one pass over the steps for both values).
    """
    nb = _neighbours(weights, v)
    n = weights.shape[0]
    others = np.delete(np.arange(n), v)
    count = 0
    least = math.inf  # smallest nonzero |entry| of the view
    top = 0.0  # largest row norm: row_space_basis's scale

    def blocks() -> Iterator[np.ndarray]:
        for t, rows in gossip_rows(weights, nb, steps, gamma):
            if t > 0 or include_first_exchange:
                yield rows[:, others]

    def stream() -> Iterator[np.ndarray]:
        nonlocal count, top, least
        for t, rows in gossip_rows(weights, nb, steps, gamma):
            if t > 0 and authors_total is not None:
                _add_authors_terms(authors_total, rows)
            if t > 0 or include_first_exchange:
                count += rows.shape[0]
                block = rows[:, others]
                top = max(top, float(np.linalg.norm(block, axis=1).max(initial=0.0)))
                least = min(least, float(np.abs(block[block != 0]).min(initial=math.inf)))
                yield block

    q, dropped = row_space_basis(stream(), rank_rtol)
    if not dropped and least <= rank_rtol * top:  # a second pass only when faint entries could change "exact"
        dropped = _faint_streamed(blocks(), rank_rtol * top, q)
    exact = np.full(n, np.inf)
    # the shift for u is the noise column u: mu^2 = ||P e_u||^2 / sigma^2, D = alpha mu^2 / 2
    exact[others] = alpha / (2 * sigma**2) * (np.einsum("ij,ij->i", q, q) if q.size else 0.0)
    return ObserverRow(int(v), None, exact, int(q.shape[1]) if q.size else 0, dropped, count)


def exact_pairwise_loss(weights: sp.csr_array, v: int, steps: int, gamma: float | None = None, *,
                        alpha: float = 2.0, sigma: float = 1.0, include_first_exchange: bool = False,
                        rank_rtol: float = RANK_RTOL, method: str = "gram-schmidt") -> ObserverRow:
    """Exact Renyi divergence of order ``alpha`` from every ``u`` to observer ``v`` (no clipping).

    ``v`` sees its neighbours' messages ``M_t[w, :] (x + sigma xi)`` for
    ``t = 1..T`` (``0..T`` with ``include_first_exchange``), knows ``xi_v``
    and ``x_v`` (module docstring).

    Args:
        weights: ``W`` (CSR, symmetric).
        v: the observer.
        steps: ``T``.
        gamma: ``None`` (plain) or the Chebyshev constant.
        alpha: Renyi order, > 1.
        sigma: noise standard deviation, > 0.
        include_first_exchange: count the raw noisy values ``x_w(0)``.
        rank_rtol: rank tolerance (:data:`~.gaussian_views.RANK_RTOL`).
        method: ``"gram-schmidt"`` (default): ``||P e_u||^2`` as the squared row norms of the basis of
            ``row_space_basis``, the rows streamed step by step; ``"svd"``: the general
            :func:`~.gaussian_views.gaussian_view_losses` on the stacked view (one SVD; slower when the view
            has more rows than ``n``; the two agree up to the rank decisions of their tolerances; with ambiguous
            directions both give the kept directions' value, a lower estimate, and ``dropped > 0``).

    Returns:
        An :class:`ObserverRow` with ``authors = None``.

    Raises:
        AccountingError, PrivacyParameterError: bad node or parameters.

    Example:
        >>> import networkx as nx
        >>> from accounting.network.muffliato_gossip import hamilton_weights
        >>> W = hamilton_weights(nx.path_graph(3))
        >>> exact_pairwise_loss(W, 2, 1, include_first_exchange=True).exact.round(4).tolist()
        [1.0, 1.0, inf]

    (Node 2 sees ``x_1 + xi_1`` and ``(x_0 + x_1 + x_2 + xi_0 + xi_1 + xi_2)/3`` and knows ``xi_2``: it
    can solve for ``x_0 + xi_0``, the full local loss.)
    """
    _check_privacy(alpha, sigma)
    if method not in ("gram-schmidt", "svd"):
        raise AccountingError(f"method must be 'gram-schmidt' or 'svd', got {method!r}")
    nb = _neighbours(weights, v)
    n = weights.shape[0]
    others = np.delete(np.arange(n), v)
    if method == "gram-schmidt":
        return _streamed_exact(weights, v, steps, gamma, alpha, sigma, include_first_exchange, rank_rtol)
    blocks = [rows for t, rows in gossip_rows(weights, nb, steps, gamma) if t > 0 or include_first_exchange]
    b = np.vstack(blocks) if blocks else np.zeros((0, n))
    b_other = b[:, others]
    losses = gaussian_view_losses(b_other, b_other / sigma, noise=1.0, rank_rtol=rank_rtol, range_rtol=RANGE_RTOL)
    exact = np.full(n, np.inf)
    for u, loss in zip(others, losses):
        if loss.in_range:
            exact[u] = loss.renyi(alpha)
        elif loss.exact:  # the shift is a column of the noise map: in range by construction, up to ambiguity
            raise AccountingError(f"observer {v}, source {int(u)}: {loss.reason} with no ambiguous direction, "
                                  "though the shift is a column of the view's noise map")
        else:  # along ambiguous directions (a faint weight): the kept directions' value, a lower estimate as the
            exact[u] = renyi_from_mu(loss.kept_mu, alpha)  # default method's (the row's ``dropped`` says so)
    first = losses[0] if losses else None
    return ObserverRow(int(v), None, exact, first.rank if first else 0, first.dropped if first else 0, b.shape[0])


def observer_row(weights: sp.csr_array, v: int, steps: int, gamma: float | None = None, *, alpha: float = 2.0,
                 sigma: float = 1.0, eps_local: float = 1.0, include_first_exchange: bool = False,
                 rank_rtol: float = RANK_RTOL, method: str = "gram-schmidt") -> ObserverRow:
    """Both values for observer ``v``: :func:`authors_pairwise_loss` and :func:`exact_pairwise_loss`.

    Args:
        weights, v, steps, gamma, alpha, sigma: as :func:`exact_pairwise_loss`.
        eps_local: the authors' cap.
        include_first_exchange, rank_rtol, method: for the exact values.

    Returns:
        The :class:`ObserverRow` with both arrays.

    Raises:
        AccountingError, PrivacyParameterError: bad node or parameters.

    Example:
        >>> import networkx as nx
        >>> from accounting.network.muffliato_gossip import hamilton_weights
        >>> row = observer_row(hamilton_weights(nx.path_graph(3)), 0, 1)
        >>> row.authors.round(4).tolist(), row.exact.round(4).tolist()
        ([0.3333, 0.3333, 0.3333], [inf, 0.5, 0.5])
    """
    if method == "gram-schmidt":  # both values from one pass over the gossip steps
        _check_privacy(alpha, sigma)
        _check_eps_local(eps_local)
        total = np.zeros(weights.shape[0])
        ex = _streamed_exact(weights, v, steps, gamma, alpha, sigma, include_first_exchange, rank_rtol, total)
        return ObserverRow(ex.v, _authors_cap(total, alpha, sigma, eps_local), ex.exact, ex.rank, ex.dropped,
                           ex.view_dim)
    ex = exact_pairwise_loss(weights, v, steps, gamma, alpha=alpha, sigma=sigma,
                             include_first_exchange=include_first_exchange, rank_rtol=rank_rtol, method=method)
    au = authors_pairwise_loss(weights, v, steps, gamma, alpha=alpha, sigma=sigma, eps_local=eps_local)
    return ObserverRow(ex.v, au, ex.exact, ex.rank, ex.dropped, ex.view_dim)


def witness_round(weights: sp.csr_array, u: int, v: int, steps: int, gamma: float | None = None, *,
                  alpha: float = 2.0, sigma: float = 1.0, eps_local: float = 1.0,
                  rank_rtol: float = RANK_RTOL) -> int | None:
    """The first step ``t <= steps`` after which the exact loss ``u -> v`` already exceeds the authors' value.

    The authors' value is taken at the full ``steps`` (what their figure
    plots); the exact loss over steps ``1..t`` grows with ``t`` (a larger view
    never lowers the loss), so a binary search finds the first such ``t``
    (``log2(steps)`` SVDs). First exchange excluded, as in their convention.

    Args:
        weights, steps, gamma, alpha, sigma, eps_local, rank_rtol: as :func:`observer_row`.
        u: the source.
        v: the observer (``!= u``).

    Returns:
        The step, or ``None`` if the exact loss at ``steps`` does not exceed the authors' value (by more
        than :func:`witness_margin` of the local budget ``alpha / (2 sigma^2)``).

    Raises:
        AccountingError: ``u == v`` or a node out of range.

    Example:
        >>> import networkx as nx
        >>> from accounting.network.muffliato_gossip import hamilton_weights
        >>> witness_round(hamilton_weights(nx.path_graph(4)), 0, 3, 2)  # exact 2/3 vs 1/23 at step 2
        2
    """
    n = weights.shape[0]
    if isinstance(u, bool) or not isinstance(u, (int, np.integer)) or not 0 <= u < n or u == v:
        raise AccountingError(f"source must be a node in [0, {n}) other than the observer {v}, got {u!r}")
    claim = authors_pairwise_loss(weights, v, steps, gamma, alpha=alpha, sigma=sigma, eps_local=eps_local)[u]
    margin = witness_margin(alpha / (2 * sigma**2))

    def exceeds(t: int) -> bool:
        ex = exact_pairwise_loss(weights, v, t, gamma, alpha=alpha, sigma=sigma, rank_rtol=rank_rtol).exact[u]
        return bool(ex > claim + margin)

    if not exceeds(steps):
        return None
    lo, hi = 1, steps  # exceeds(hi) holds
    while lo < hi:
        mid = (lo + hi) // 2
        if exceeds(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


_WORKER_PROBLEM: tuple[Any, ...] = ()


def _init_worker(weights: sp.csr_array, steps: int, gamma: float | None, kwargs: dict[str, Any]) -> None:
    """Worker initializer: the problem once per process; BLAS on one thread (the parallelism is across
    observers, not inside an SVD)."""
    global _WORKER_PROBLEM
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    _WORKER_PROBLEM = (weights, steps, gamma, kwargs)


def _row_task(v: int) -> ObserverRow:
    weights, steps, gamma, kwargs = _WORKER_PROBLEM
    return observer_row(weights, v, steps, gamma, **kwargs)


def pairwise_rows(weights: sp.csr_array, observers: Iterable[int] | None, steps: int, gamma: float | None = None,
                  *, workers: int = 1, **kwargs: Any) -> Iterator[ObserverRow]:
    """Stream ``observer_row`` over observers (default: all), in order, one observer's matrices at a time.

    Observers are independent (each has its own view), so ``workers > 1``
    computes them in that many processes (``concurrent.futures``, BLAS on
    one thread each); the rows are still yielded in the order of
    ``observers``, and each process holds one observer's basis at a time.
    With ``workers=1`` BLAS runs on one thread too, so the values do not
    depend on ``workers`` (a multithreaded BLAS changed them by ~1e-13, and on
    2 shared cores it ran a 128-node row about 30x slower).

    Args:
        weights, steps, gamma: as ``observer_row``.
        observers: the nodes ``v`` (``None``: ``0..n-1``).
        workers: processes (1: in this process), >= 1.
        **kwargs: passed to ``observer_row``.

    Yields:
        One ``ObserverRow`` per observer.

    Raises:
        AccountingError: ``workers`` not an integer >= 1; as ``observer_row``.

    Example:
        >>> import networkx as nx
        >>> from accounting.network.muffliato_gossip import hamilton_weights
        >>> W = hamilton_weights(nx.path_graph(3))
        >>> [r.v for r in pairwise_rows(W, None, 1)]
        [0, 1, 2]
    """
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise AccountingError(f"workers must be an integer >= 1, got {workers!r}")
    obs = list(range(weights.shape[0]) if observers is None else observers)
    if workers == 1 or len(obs) < 2:
        from threadpoolctl import threadpool_limits

        for v in obs:
            with threadpool_limits(1):  # as in the workers: a multithreaded BLAS sums in another order
                row = observer_row(weights, v, steps, gamma, **kwargs)
            yield row
        return
    from concurrent.futures import ProcessPoolExecutor

    w = sp.csr_array(weights)
    chunk = max(1, min(16, len(obs) // (4 * workers)))
    with ProcessPoolExecutor(max_workers=int(workers), initializer=_init_worker,
                             initargs=(w, steps, gamma, kwargs)) as pool:
        yield from pool.map(_row_task, obs, chunksize=chunk)
