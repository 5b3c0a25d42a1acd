"""Hypothesis strategies for graphs, weight matrices and graph sequences.

Public strategies for property-based tests of consensus, push-sum and
gradient-tracking code. Each draws the number of nodes first (from a small
range) and then the links as independent booleans on top of a connected
backbone, so Hypothesis shrinks a failing example toward few nodes and few
links. Parameters are validated when the strategy is created (not when it is
drawn from), raising :class:`~topology.errors.ParameterError`.

Orientation as everywhere in :mod:`topology`: a pattern or matrix entry
``[i, j]`` is the link ``j -> i`` (``i`` receives from ``j``).

Example:
    >>> from hypothesis import given
    >>> @given(connected_undirected_graphs(max_nodes=5))
    ... def test_symmetric(pattern):
    ...     assert (pattern != pattern.T).nnz == 0
    >>> test_symmetric()
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

from .errors import ParameterError
from .generators.random_graphs import _check_bool, _check_int, _resolve_rule
from .sequence import GraphSequence, from_matrices

__all__ = [
    "strongly_connected_digraphs",
    "connected_undirected_graphs",
    "doubly_stochastic_matrices",
    "b_connected_sequences",
    "column_stochastic_sequences",
    "metropolis_sequences",
]


def _check_node_range(min_nodes: Any, max_nodes: Any) -> tuple[int, int]:
    lo = _check_int("min_nodes", min_nodes, minimum=1)
    hi = _check_int("max_nodes", max_nodes, minimum=1)
    if lo > hi:
        raise ParameterError(f"min_nodes={lo} exceeds max_nodes={hi}")
    return lo, hi


def _draw_strongly_connected(draw: Callable[..., Any], n: int) -> np.ndarray:
    """Dense boolean pattern: a Hamiltonian cycle on a random order plus random links."""
    pattern = np.zeros((n, n), dtype=bool)
    if n == 1:
        return pattern
    order = draw(st.permutations(range(n)))
    for k in range(n):
        pattern[order[(k + 1) % n], order[k]] = True  # order[k] -> order[k+1]
    off = ~np.eye(n, dtype=bool)
    extra = draw(st.lists(st.booleans(), min_size=n * (n - 1), max_size=n * (n - 1)))
    pattern[off] |= np.array(extra, dtype=bool)
    return pattern


def _draw_connected_undirected(draw: Callable[..., Any], n: int) -> np.ndarray:
    """Dense symmetric boolean pattern: a random spanning tree plus random links."""
    pattern = np.zeros((n, n), dtype=bool)
    if n == 1:
        return pattern
    order = draw(st.permutations(range(n)))
    for k in range(1, n):
        parent = order[draw(st.integers(0, k - 1))]
        pattern[order[k], parent] = pattern[parent, order[k]] = True
    iu = np.triu_indices(n, 1)
    extra = draw(st.lists(st.booleans(), min_size=len(iu[0]), max_size=len(iu[0])))
    pattern[iu] |= np.array(extra, dtype=bool)
    return pattern | pattern.T


@st.composite
def _strongly_connected_digraphs(draw: Callable[..., Any], lo: int, hi: int) -> sp.csr_array:
    n = draw(st.integers(lo, hi))
    return sp.csr_array(_draw_strongly_connected(draw, n))


def strongly_connected_digraphs(min_nodes: int = 2, max_nodes: int = 8) -> st.SearchStrategy[sp.csr_array]:
    """Strongly connected digraphs as boolean adjacency patterns.

    A directed Hamiltonian cycle over a random node order, plus each other
    link independently; shrinks toward ``min_nodes`` nodes and the bare cycle.

    Args:
        min_nodes: smallest number of nodes, ``>= 1``.
        max_nodes: largest number of nodes, ``>= min_nodes``.

    Returns:
        A strategy of square boolean ``scipy.sparse.csr_array`` without
        diagonal (``[i, j]`` true: link ``j -> i``).

    Raises:
        ParameterError: a bad node range.

    Example:
        >>> import networkx as nx
        >>> from hypothesis import given
        >>> @given(strongly_connected_digraphs(max_nodes=5))
        ... def test_sc(pattern):
        ...     assert nx.is_strongly_connected(nx.from_scipy_sparse_array(pattern.T, create_using=nx.DiGraph))
        >>> test_sc()
    """
    lo, hi = _check_node_range(min_nodes, max_nodes)
    return _strongly_connected_digraphs(lo, hi)


@st.composite
def _connected_undirected_graphs(draw: Callable[..., Any], lo: int, hi: int) -> sp.csr_array:
    n = draw(st.integers(lo, hi))
    return sp.csr_array(_draw_connected_undirected(draw, n))


def connected_undirected_graphs(min_nodes: int = 2, max_nodes: int = 8) -> st.SearchStrategy[sp.csr_array]:
    """Connected undirected graphs as symmetric boolean adjacency patterns.

    A random spanning tree (a random node order, each node joining an earlier
    one) plus each other pair independently; shrinks toward ``min_nodes``
    nodes and a star.

    Args:
        min_nodes: smallest number of nodes, ``>= 1``.
        max_nodes: largest number of nodes, ``>= min_nodes``.

    Returns:
        A strategy of symmetric boolean ``csr_array`` patterns without diagonal.

    Raises:
        ParameterError: a bad node range.

    Example:
        >>> from hypothesis import given
        >>> from topology.weights import metropolis
        >>> @given(connected_undirected_graphs())
        ... def test_metropolis_doubly_stochastic(pattern):
        ...     assert np.allclose(metropolis(pattern).sum(axis=0), 1.0)
        >>> test_metropolis_doubly_stochastic()
    """
    lo, hi = _check_node_range(min_nodes, max_nodes)
    return _connected_undirected_graphs(lo, hi)


@st.composite
def _doubly_stochastic_matrices(
    draw: Callable[..., Any], lo: int, hi: int, min_weight: float, irreducible: bool
) -> np.ndarray:
    n = draw(st.integers(lo, hi))
    max_terms = int(np.floor(1.0 / min_weight))
    while max_terms * min_weight > 1.0:  # guard against 1/min_weight rounding up
        max_terms -= 1
    min_perms = 1 if irreducible and n > 1 else 0
    num_perms = draw(st.integers(min_perms, min(max_terms - 1, 4)))
    perms = []
    if min_perms:
        order = draw(st.permutations(range(n)))
        cycle = np.empty(n, dtype=np.int64)
        cycle[np.array(order)] = np.roll(np.array(order), -1)  # order[k] <-> order[k+1]
        perms.append(cycle)
    while len(perms) < num_perms:
        perms.append(np.array(draw(st.permutations(range(n))), dtype=np.int64))
    terms = 1 + num_perms
    raw = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=terms, max_size=terms)))
    shares = raw / raw.sum() if raw.sum() > 0 else np.full(terms, 1.0 / terms)
    # terms * min_weight <= 1, so every weight is >= min_weight and they sum to 1 (up to rounding)
    weights = min_weight + (1.0 - terms * min_weight) * shares
    out = weights[0] * np.eye(n)
    rows = np.arange(n)
    for w, perm in zip(weights[1:], perms):
        out[rows, perm] += w
    return out


def doubly_stochastic_matrices(
    min_nodes: int = 2, max_nodes: int = 8, min_weight: float = 0.05, *, irreducible: bool = False
) -> st.SearchStrategy[np.ndarray]:
    """Doubly stochastic matrices with a positive diagonal and no tiny positive entry.

    A convex combination ``w_0 I + sum_k w_k P_k`` of the identity and up to 4
    random permutation matrices (Birkhoff) with every ``w_k >= min_weight``,
    so every positive entry is ``>= min_weight`` and the diagonal is
    ``>= min_weight``. Rows and columns sum to one up to rounding (``1e-15``).
    Shrinks toward the identity.

    Args:
        min_nodes: smallest size, ``>= 1``.
        max_nodes: largest size, ``>= min_nodes``.
        min_weight: lower bound of every positive entry, in ``(0, 1]``
            (``1`` gives only identities).
        irreducible: include a permutation that is one ``N``-cycle, so the
            matrix's graph is strongly connected (needs ``min_weight <= 1/2``).

    Returns:
        A strategy of dense ``N x N`` ``numpy`` float arrays.

    Raises:
        ParameterError: a bad node range, ``min_weight`` outside ``(0, 1]``,
            or ``irreducible=True`` with ``min_weight > 1/2``.

    Example:
        >>> from hypothesis import given
        >>> @given(doubly_stochastic_matrices(min_weight=0.1))
        ... def test_rows(w):
        ...     assert np.allclose(w.sum(axis=1), 1.0) and w.diagonal().min() >= 0.1
        >>> test_rows()
    """
    lo, hi = _check_node_range(min_nodes, max_nodes)
    if (
        isinstance(min_weight, (bool, np.bool_))
        or not isinstance(min_weight, Real)
        or not 0.0 < float(min_weight) <= 1.0
    ):
        raise ParameterError(f"min_weight must be in (0, 1], got {min_weight!r}")
    irreducible = _check_bool("irreducible", irreducible)
    if irreducible and hi > 1 and float(min_weight) > 0.5:
        raise ParameterError(
            f"irreducible=True needs min_weight <= 0.5 (identity plus a cycle), got {min_weight!r}"
        )
    return _doubly_stochastic_matrices(lo, hi, float(min_weight), irreducible)


@st.composite
def _b_sequences(
    draw: Callable[..., Any],
    lo: int,
    hi: int,
    B: int,
    directed: bool,
    rule: Callable[[Any], sp.csr_array],
    rule_name: str,
    max_windows: int,
) -> GraphSequence:
    n = draw(st.integers(lo, hi))
    union = _draw_strongly_connected(draw, n) if directed else _draw_connected_undirected(draw, n)
    recv, send = np.nonzero(union if directed else np.triu(union, 1))
    windows = draw(st.integers(1, max_windows))
    cycled = draw(st.booleans())
    mats = []
    for _ in range(windows):
        slot = np.array(draw(st.lists(st.integers(0, B - 1), min_size=len(recv), max_size=len(recv))), dtype=int)
        for r in range(B):
            pattern = np.zeros((n, n), dtype=bool)
            chosen = slot == r
            pattern[recv[chosen], send[chosen]] = True
            if not directed:
                pattern |= pattern.T
            mats.append(rule(sp.csr_array(pattern)))
    kind = "periodic" if cycled else "finite"
    return from_matrices(
        mats,
        periodic=cycled,
        directed=directed,
        description=f"hypothesis {kind} {B}-{'strongly ' if directed else ''}connected sequence ({rule_name})",
    )


def b_connected_sequences(
    B: int,
    min_nodes: int = 2,
    max_nodes: int = 8,
    *,
    rule: str | Callable[[Any], sp.csr_array] = "row-stochastic",
    max_windows: int = 3,
) -> st.SearchStrategy[GraphSequence]:
    """Directed sequences that are B-strongly connected over the fixed windows.

    Draws a strongly connected union graph (as
    :func:`strongly_connected_digraphs`), then for each of 1..``max_windows``
    windows assigns every union link to one of the window's ``B`` rounds, so
    the union over rounds ``[kB+1, (k+1)B]`` is exactly that graph. The
    sequence is finite (``windows * B`` rounds) or periodic with period
    ``windows * B``. Single rounds may be empty or already connected;
    shrinking moves every link into the first round of its window.

    Args:
        B: window length, ``>= 1``.
        min_nodes: smallest number of nodes, ``>= 1``.
        max_nodes: largest number of nodes, ``>= min_nodes``.
        rule: weight rule for each round (default ``"row-stochastic"``);
            symmetric-only rules are rejected.
        max_windows: largest number of windows drawn, ``>= 1``.

    Returns:
        A strategy of :class:`GraphSequence`.

    Raises:
        ParameterError: a bad ``B``, node range, ``max_windows`` or rule.

    Example:
        >>> from hypothesis import given
        >>> @given(b_connected_sequences(3, max_nodes=5))
        ... def test_rows(seq):
        ...     assert np.allclose(seq.dense(3).sum(axis=1), 1.0)
        >>> test_rows()
    """
    B = _check_int("B", B, minimum=1)
    lo, hi = _check_node_range(min_nodes, max_nodes)
    max_windows = _check_int("max_windows", max_windows, minimum=1)
    fn, name = _resolve_rule(rule, True)
    return _b_sequences(lo, hi, B, True, fn, name, max_windows)


def column_stochastic_sequences(
    B: int, min_nodes: int = 2, max_nodes: int = 8, *, max_windows: int = 3
) -> st.SearchStrategy[GraphSequence]:
    """Push-sum sequences: B-strongly connected (fixed windows) with column-stochastic weights.

    Same as :func:`b_connected_sequences` with ``rule="column-stochastic"``:
    ``A[i, j] = 1/|N_j^out ∪ {j}|`` per round, so columns sum to one.

    Raises:
        ParameterError: a bad ``B``, node range or ``max_windows``.

    Example:
        >>> from hypothesis import given
        >>> @given(column_stochastic_sequences(2))
        ... def test_mass(seq):
        ...     assert np.allclose(seq.dense(1).sum(axis=0), 1.0)
        >>> test_mass()
    """
    return b_connected_sequences(
        B, min_nodes, max_nodes, rule="column-stochastic", max_windows=max_windows
    )


def metropolis_sequences(
    min_nodes: int = 2, max_nodes: int = 8, *, B: int = 1, max_windows: int = 3
) -> st.SearchStrategy[GraphSequence]:
    """Time-varying symmetric doubly stochastic (Metropolis) sequences.

    Undirected counterpart of :func:`b_connected_sequences`: the union over
    every fixed window of ``B`` rounds is a connected undirected graph, and
    each round carries Metropolis weights (symmetric, doubly stochastic,
    positive diagonal). With the default ``B=1`` every round is connected.

    Args:
        min_nodes: smallest number of nodes, ``>= 1``.
        max_nodes: largest number of nodes, ``>= min_nodes``.
        B: window length, ``>= 1``.
        max_windows: largest number of windows drawn, ``>= 1``.

    Returns:
        A strategy of finite or periodic :class:`GraphSequence`.

    Raises:
        ParameterError: a bad ``B``, node range or ``max_windows``.

    Example:
        >>> from hypothesis import given
        >>> @given(metropolis_sequences())
        ... def test_symmetric(seq):
        ...     w = seq.dense(1)
        ...     assert np.allclose(w, w.T)
        >>> test_symmetric()
    """
    B = _check_int("B", B, minimum=1)
    lo, hi = _check_node_range(min_nodes, max_nodes)
    max_windows = _check_int("max_windows", max_windows, minimum=1)
    fn, name = _resolve_rule("metropolis", False)
    return _b_sequences(lo, hi, B, False, fn, name, max_windows)
