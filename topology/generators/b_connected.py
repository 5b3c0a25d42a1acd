"""B-strongly-connected sequences whose single rounds are not connected.

A sequence is *B-strongly connected* when the union of the links of every
window of ``B`` consecutive rounds is strongly connected (Cheng, Liao and Li,
arXiv 2022, ask it for the fixed windows ``[kB+1, (k+1)B]``; the sequences here satisfy it for
sliding windows too). :func:`b_connected_sequence` builds such sequences that
are *minimal*: no window of ``B - 1`` consecutive rounds is strongly
connected, and for ``B >= 2`` no single round is. They exercise the
"connected only over time" regime of push-sum and consensus analyses.

Construction (directed). From the structure stream
``default_rng(SeedSequence([seed, 0]))``: a directed Hamiltonian cycle over a
random permutation of the nodes (``N`` edges; removing any edge leaves a
Hamiltonian path, which is not strongly connected), its edges split at random
into ``B`` nonempty groups; round ``t`` holds group ``(t - 1) mod B``
(period ``B``). Any ``B`` consecutive rounds hold every group, so their union
is the cycle; any ``B - 1`` consecutive rounds miss a whole group, hence at
least one cycle edge, so their union is not strongly connected.

Construction (undirected). An undirected cycle minus one edge is a path,
which is still connected, so splitting a cycle would not be minimal. We split
a random spanning *tree* instead (``N - 1`` edges; a tree minus any edge is
disconnected): any ``B`` consecutive rounds hold the whole tree (connected),
any ``B - 1`` miss an edge of it (disconnected). Hence ``B <= N - 1`` there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ParameterError
from .random_graphs import (
    _check_bool,
    _check_int,
    _check_length,
    _check_probability,
    _check_seed,
    _gnp_pattern,
    _pattern_from_links,
    _resolve_rule,
    round_rng,
)
from ..sequence import GraphSequence, periodic

__all__ = [
    "b_connected_edge_groups",
    "b_connected_sequence",
    "CHENG2022_FIG2_EDGE_GROUPS",
    "cheng2022_fig2_sequence",
]

Rule = str | Callable[[Any], sp.csr_array]

#: Edge groups (``(sender, receiver)``, 0-based) of :func:`cheng2022_fig2_sequence`.
#: In 1-based labels: E0 = {1→2, 3→4},
#: E1 = {2→3, 5→6}, E2 = {4→5, 6→7}, E3 = {7→1, 2→5}.
CHENG2022_FIG2_EDGE_GROUPS: tuple[tuple[tuple[int, int], ...], ...] = (
    ((0, 1), (2, 3)),
    ((1, 2), (4, 5)),
    ((3, 4), (5, 6)),
    ((6, 0), (1, 4)),
)


def _validate_structure(num_nodes: Any, B: Any, directed: Any) -> tuple[int, int, bool]:
    n = _check_int("num_nodes", num_nodes, minimum=2)
    b = _check_int("B", B, minimum=1)
    directed = _check_bool("directed", directed)
    num_edges = n if directed else n - 1
    if b > num_edges:
        what = (
            f"the directed Hamiltonian cycle on num_nodes={n} has {n} edges, so B <= num_nodes"
            if directed
            else f"the spanning tree on num_nodes={n} has {n - 1} edges, so B <= num_nodes - 1"
        )
        raise ParameterError(f"B={b} is too large: each of the B groups needs an edge and {what}")
    return n, b, directed


def b_connected_edge_groups(
    num_nodes: int, B: int, *, seed: int, directed: bool = True
) -> list[list[tuple[int, int]]]:
    """The ``B`` edge groups that :func:`b_connected_sequence` cycles through.

    Args:
        num_nodes: ``N >= 2``.
        B: number of groups, ``1 <= B <= N`` (directed) or ``<= N - 1`` (undirected).
        seed: nonnegative integer; the groups come from ``SeedSequence([seed, 0])``.
        directed: split a directed Hamiltonian cycle (else an undirected
            random spanning tree).

    Returns:
        ``B`` nonempty lists of edges ``(sender, receiver)`` (for an undirected
        edge the order is arbitrary); their union is the cycle (or tree).

    Raises:
        ParameterError: a bad parameter (named in the message).

    Example:
        >>> groups = b_connected_edge_groups(5, 2, seed=0)
        >>> len(groups), sum(len(g) for g in groups)
        (2, 5)
    """
    n, b, directed = _validate_structure(num_nodes, B, directed)
    seed = _check_seed(seed)
    rng = round_rng(seed, 0)
    perm = rng.permutation(n)
    if directed:
        edges = [(int(perm[k]), int(perm[(k + 1) % n])) for k in range(n)]
    else:
        # random recursive tree on a random node order: the k-th node joins a
        # uniformly chosen earlier one
        edges = [(int(perm[rng.integers(0, k)]), int(perm[k])) for k in range(1, n)]
    order = rng.permutation(len(edges))
    cuts = np.sort(rng.choice(np.arange(1, len(edges)), size=b - 1, replace=False))
    return [[edges[i] for i in chunk] for chunk in np.split(order, cuts)]


def b_connected_sequence(
    num_nodes: int,
    B: int,
    *,
    seed: int,
    rule: Rule | None = None,
    minimal: bool = True,
    extra_edge_prob: float = 0.0,
    directed: bool = True,
    length: int | None = None,
) -> GraphSequence:
    """A B-strongly-connected sequence whose rounds are not connected (see the module doc).

    Round ``t`` holds edge group ``(t - 1) mod B`` of
    :func:`b_connected_edge_groups` (period ``B``), weighted by ``rule``.
    Every window of ``B`` consecutive rounds (fixed or sliding) has a strongly
    connected union. With ``minimal=True`` (the default) every window of
    ``B - 1`` consecutive rounds, and for ``B >= 2`` every single round, is
    not strongly connected.

    With ``minimal=False``, round ``t`` also gets random extra links, each
    possible link independently with probability ``extra_edge_prob``, drawn
    from ``SeedSequence([seed, t])`` (so the sequence is no longer periodic).
    It stays B-strongly connected but may no longer be minimal.

    Args:
        num_nodes: ``N >= 2``.
        B: window length, ``1 <= B <= N`` (directed) or ``<= N - 1`` (undirected).
        seed: nonnegative integer seed.
        rule: weight rule name or callable; default ``"column-stochastic"``
            (push-sum) if directed, ``"metropolis"`` if undirected.
        minimal: no extra links (see above).
        extra_edge_prob: probability of each extra link when ``minimal=False``.
        directed: directed cycle construction (else undirected spanning tree;
            "strongly connected" then means connected).
        length: number of rounds, ``None`` for an infinite sequence.

    Returns:
        A :class:`GraphSequence` with ``period=B`` when there are no extra links.

    Raises:
        ParameterError: ``N < 2``, ``B <= 0``, ``B`` larger than the number of
            edges to split, ``extra_edge_prob > 0`` with ``minimal=True``, a
            symmetric-only rule with ``directed=True``, or another bad parameter.

    Example:
        >>> seq = b_connected_sequence(6, 3, seed=1)
        >>> seq.period, seq.dense(1).sum(axis=0).round(12).tolist()
        (3, [1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    """
    n, b, directed = _validate_structure(num_nodes, B, directed)
    seed = _check_seed(seed)
    minimal = _check_bool("minimal", minimal)
    extra_edge_prob = _check_probability("extra_edge_prob", extra_edge_prob)
    length = _check_length(length)
    if minimal and extra_edge_prob > 0.0:
        raise ParameterError(
            f"extra_edge_prob={extra_edge_prob} needs minimal=False: extra links can make "
            "a window of B-1 rounds strongly connected"
        )
    if rule is None:
        rule = "column-stochastic" if directed else "metropolis"
    fn, rule_name = _resolve_rule(rule, directed)

    groups = b_connected_edge_groups(n, b, seed=seed, directed=directed)
    group_patterns = []
    for group in groups:
        send = np.array([e[0] for e in group], dtype=np.int64)
        recv = np.array([e[1] for e in group], dtype=np.int64)
        if not directed:
            send, recv = np.concatenate([send, recv]), np.concatenate([recv, send])
        group_patterns.append(_pattern_from_links(n, recv, send))

    with_extra = extra_edge_prob > 0.0

    def round_function(t: int) -> sp.csr_array:
        pattern = group_patterns[(t - 1) % b]
        if with_extra:
            extra = _gnp_pattern(round_rng(seed, t), n, extra_edge_prob, directed)
            pattern = sp.csr_array(pattern + extra)
        return fn(pattern)

    kind = "directed cycle" if directed else "spanning tree"
    extra_txt = f", extra_edge_prob={extra_edge_prob}" if with_extra else ""
    return GraphSequence(
        n,
        round_function,
        length=length,
        period=None if with_extra else b,
        directed=directed,
        description=f"b_connected_sequence(N={n}, B={b}, {kind}{extra_txt}, seed={seed}, rule={rule_name})",
    )


def cheng2022_fig2_sequence(rule: Rule | None = None, directed: bool = True) -> GraphSequence:
    """Our 7-node, period-4 stand-in for the Fig. 2 graph of Cheng, Liao and Li (arXiv 2022), not the paper's.

    The paper's graph is only drawn, never listed, so we build our own: four
    edge groups used in turn, with 1-based labels mapped to ``0..6``:
    E0 = {1→2, 3→4}, E1 = {2→3, 5→6}, E2 = {4→5, 6→7}, E3 = {7→1, 2→5}
    (:data:`CHENG2022_FIG2_EDGE_GROUPS`), round ``t`` using ``E[(t-1) mod 4]``.
    The union contains the Hamiltonian cycle 1→2→…→7→1, so it is strongly
    connected (no edge needed adding); every round has 2 edges on 7 nodes and
    is disconnected, and every window of 3 consecutive rounds misses a group
    holding the only in- or out-link of some node (1→2, 5→6, 6→7 or 7→1), so
    the sequence is minimally 4-strongly connected. ``directed=False`` gives
    the undirected version (the paper's ``G1`` for DPSDA-C): the same edges without directions. Each of its rounds is
    disconnected too, but it is *not* minimal: the undirected union of any 3
    consecutive rounds is already connected (the union graph has 8 edges on
    7 nodes, so it is not a tree).

    Args:
        rule: weight rule; default ``"column-stochastic"`` (directed) or
            ``"metropolis"`` (undirected).
        directed: keep the edge directions.

    Returns:
        A periodic :class:`GraphSequence` with 7 nodes and period 4.

    Raises:
        ParameterError: an unknown rule or a symmetric-only rule when directed.

    Example:
        >>> seq = cheng2022_fig2_sequence()
        >>> seq.num_nodes, seq.period, float(seq.dense(4)[0, 6])
        (7, 4, 0.5)
    """
    directed = _check_bool("directed", directed)
    if rule is None:
        rule = "column-stochastic" if directed else "metropolis"
    fn, _ = _resolve_rule(rule, directed)
    mats = []
    for group in CHENG2022_FIG2_EDGE_GROUPS:
        send = np.array([e[0] for e in group], dtype=np.int64)
        recv = np.array([e[1] for e in group], dtype=np.int64)
        if not directed:
            send, recv = np.concatenate([send, recv]), np.concatenate([recv, send])
        mats.append(fn(_pattern_from_links(7, recv, send)))
    return periodic(
        mats,
        directed=directed,
        description=(f"Cheng-Liao-Li (arXiv 2022) Fig. 2 stand-in ({'directed' if directed else 'undirected'}, "
                     "period 4)"),
    )


paper004_fig2_sequence = cheng2022_fig2_sequence
"""Former name of :func:`cheng2022_fig2_sequence`, kept so that older scripts still run."""
