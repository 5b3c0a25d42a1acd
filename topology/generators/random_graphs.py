"""Seeded random graph sequences: one random graph per round, random access.

Every constructor here returns a :class:`~topology.sequence.GraphSequence`
whose round ``t`` (1-based) is built from its own random stream

.. code-block:: python

    rng_t = numpy.random.default_rng(numpy.random.SeedSequence([seed, t]))

so round ``t``'s graph depends only on ``(seed, t)``: rounds can be accessed
in any order, a finite and an infinite sequence with the same seed agree on
their common rounds, and results are reproducible across runs and machines
(given the same numpy version). Round ``t``'s link pattern is then turned into
weights by a rule from :mod:`topology.weights` (``rule``: a name or a
callable). The default rule is ``"metropolis"`` (symmetric, doubly
stochastic) for undirected graphs and ``"row-stochastic"`` for directed ones;
asking for a rule that needs symmetric links (``"metropolis"``,
``"lazy-max-degree"``) on a directed sequence raises
:class:`~topology.errors.ParameterError` at construction.

Orientation as everywhere in :mod:`topology`: ``W[i, j] > 0`` off the
diagonal means a link ``j -> i``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..errors import ParameterError
from ..matrices import as_pattern, pattern_from_networkx
from ..sequence import GraphSequence
from ..weights import get_rule, lazy_max_degree, metropolis

__all__ = [
    "round_rng",
    "erdos_renyi",
    "link_failures",
    "random_geometric",
]

Rule = str | Callable[[Any], sp.csr_array]

_SYMMETRIC_ONLY_NAMES = frozenset({"metropolis", "lazy-max-degree"})


# -- parameter validation (shared with topology.generators.b_connected) -----------------
def _check_int(name: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_probability(name: str, value: Any) -> float:
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, Real)
        or not 0.0 <= float(value) <= 1.0  # also rejects NaN
    ):
        raise ParameterError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def _check_positive_real(name: str, value: Any) -> float:
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, Real)
        or not math.isfinite(float(value))
        or float(value) <= 0.0
    ):
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParameterError(f"seed must be a nonnegative integer, got {seed!r}")
    return int(seed)


def _check_length(length: Any) -> int | None:
    if length is None:
        return None
    return _check_int("length", length, minimum=1)


def _resolve_rule(rule: Any, directed: bool) -> tuple[Callable[[Any], sp.csr_array], str]:
    """The weight-rule callable and a printable name; reject symmetric-only rules on digraphs."""
    if rule is None:
        rule = "row-stochastic" if directed else "metropolis"
    if not (isinstance(rule, str) or callable(rule)):
        raise ParameterError(f"rule must be a weight-rule name or a callable, got {rule!r}")
    fn = get_rule(rule)  # ParameterError for an unknown name
    name = rule if isinstance(rule, str) else getattr(rule, "__name__", repr(rule))
    if directed and (
        (isinstance(rule, str) and rule in _SYMMETRIC_ONLY_NAMES) or fn in (metropolis, lazy_max_degree)
    ):
        raise ParameterError(
            f"rule {name!r} needs undirected (symmetric) links but directed=True; "
            "use 'row-stochastic', 'column-stochastic' or 'laplacian'"
        )
    return fn, name


# -- random streams and samplers ---------------------------------------------
def round_rng(seed: int, t: int) -> np.random.Generator:
    """The random generator of round ``t``: ``default_rng(SeedSequence([seed, t]))``.

    Args:
        seed: nonnegative integer seed of the sequence.
        t: the round (``t >= 1``; :mod:`topology.generators.b_connected` uses ``t = 0`` for
            its fixed structure).

    Returns:
        A fresh ``numpy.random.Generator``; two calls with equal arguments give
        identical streams.

    Raises:
        ParameterError: a negative or non-integer seed or round.

    Example:
        >>> float(round_rng(7, 3).random()) == float(round_rng(7, 3).random())
        True
    """
    seed = _check_seed(seed)
    t = _check_int("t", t, minimum=0)
    return np.random.default_rng(np.random.SeedSequence([seed, t]))


def _empty_pattern(n: int) -> sp.csr_array:
    return sp.csr_array((n, n), dtype=bool)


def _pattern_from_links(n: int, receivers: np.ndarray, senders: np.ndarray) -> sp.csr_array:
    data = np.ones(len(receivers), dtype=bool)
    pat = sp.csr_array((data, (receivers, senders)), shape=(n, n))
    pat.sum_duplicates()
    pat.sort_indices()
    return pat


def _gnp_pattern(rng: np.random.Generator, n: int, p: float, directed: bool) -> sp.csr_array:
    """G(n, p) link pattern in O(n + #edges): draw the edge count, then which edges.

    Each of the ``n(n-1)`` ordered pairs (directed) or ``n(n-1)/2`` unordered
    pairs (undirected) is present independently with probability ``p``: the
    number of edges is Binomial(M, p) and, given it, the edge set is a uniform
    subset of that size, which is the same distribution.
    """
    if n < 2 or p == 0.0:
        return _empty_pattern(n)
    m = n * (n - 1) if directed else n * (n - 1) // 2
    k = int(rng.binomial(m, p))
    idx = rng.choice(m, size=k, replace=False).astype(np.int64)
    if directed:
        # idx = sender * (n - 1) + r, receiver = r if r < sender else r + 1
        senders = idx // (n - 1)
        r = idx % (n - 1)
        receivers = r + (r >= senders)
        return _pattern_from_links(n, receivers, senders)
    # unordered pairs (a > b) listed row by row: idx = a(a-1)/2 + b, 0 <= b < a
    a = np.floor((1.0 + np.sqrt(1.0 + 8.0 * idx.astype(np.float64))) / 2.0).astype(np.int64)
    a -= (a * (a - 1) // 2) > idx  # repair float rounding in either direction
    a += ((a + 1) * a // 2) <= idx
    b = idx - a * (a - 1) // 2
    return _pattern_from_links(n, np.concatenate([a, b]), np.concatenate([b, a]))


def _is_connected(pattern: sp.csr_array, directed: bool) -> bool:
    n = pattern.shape[0]
    if n <= 1:
        return True
    ncomp, _ = connected_components(pattern, directed=directed, connection="strong")
    return ncomp == 1


# -- public constructors -------------------------------------------------------
def erdos_renyi(
    num_nodes: int,
    p: float,
    *,
    seed: int,
    directed: bool = False,
    rule: Rule | None = None,
    length: int | None = None,
    connected: bool = False,
    max_tries: int = 1000,
) -> GraphSequence:
    """A fresh Erdős–Rényi graph ``G(N, p)`` at every round.

    Each possible link (an unordered pair if undirected, an ordered pair if
    directed) is present independently with probability ``p``. Sampling
    draws the number of edges and then the edge set, so a sparse round costs
    ``O(N + #edges)`` (1000 rounds of ``N = 1000``, ``p = 5/N`` take about a
    second).

    Args:
        num_nodes: number of nodes ``N >= 1``.
        p: link probability in ``[0, 1]``.
        seed: nonnegative integer; round ``t`` uses ``SeedSequence([seed, t])``.
        directed: sample one-way links independently.
        rule: weight rule name or callable; default ``"metropolis"``
            (undirected) or ``"row-stochastic"`` (directed).
        length: number of rounds, ``None`` (default) for an infinite sequence.
        connected: resample round ``t`` (continuing its own stream) until the
            graph is connected (strongly connected if directed). The result is
            then ``G(N, p)`` conditioned on connectivity.
        max_tries: samples allowed per round when ``connected=True``.

    Returns:
        A :class:`GraphSequence` (``directed`` as given).

    Raises:
        ParameterError: a bad parameter (the message names it and its value),
            a symmetric-only rule with ``directed=True``, ``connected=True``
            with ``p = 0`` and ``N >= 2``, or - when round ``t`` is accessed -
            ``max_tries`` samples of round ``t`` all disconnected (the message
            names the round).

    Example:
        >>> seq = erdos_renyi(10, 0.5, seed=1, connected=True)
        >>> seq.weights(4).shape
        (10, 10)
        >>> bool((seq.dense(4) != erdos_renyi(10, 0.5, seed=1, connected=True).dense(4)).any())
        False
    """
    n = _check_int("num_nodes", num_nodes, minimum=1)
    p = _check_probability("p", p)
    seed = _check_seed(seed)
    directed = _check_bool("directed", directed)
    connected = _check_bool("connected", connected)
    max_tries = _check_int("max_tries", max_tries, minimum=1)
    length = _check_length(length)
    fn, rule_name = _resolve_rule(rule, directed)
    if connected and p == 0.0 and n >= 2:
        raise ParameterError(f"connected=True is impossible with p=0.0 and num_nodes={n}")

    def round_function(t: int) -> sp.csr_array:
        rng = round_rng(seed, t)
        pattern = _gnp_pattern(rng, n, p, directed)
        if connected:
            tries = 1
            while not _is_connected(pattern, directed):
                if tries >= max_tries:
                    kind = "strongly connected" if directed else "connected"
                    raise ParameterError(
                        f"round {t}: no {kind} G(N={n}, p={p}) graph in max_tries={max_tries} samples "
                        f"(seed={seed}); increase p or max_tries"
                    )
                pattern = _gnp_pattern(rng, n, p, directed)
                tries += 1
        return fn(pattern)

    kind = "directed " if directed else ""
    cond = ", connected" if connected else ""
    return GraphSequence(
        n,
        round_function,
        length=length,
        directed=directed,
        description=f"{kind}erdos_renyi(N={n}, p={p}{cond}, seed={seed}, rule={rule_name})",
    )


def link_failures(
    base: Any,
    failure_prob: float,
    *,
    seed: int,
    rule: Rule | None = None,
    length: int | None = None,
    keep_self: bool = True,
    directed: bool | None = None,
) -> GraphSequence:
    """A fixed base graph whose links fail independently at every round.

    At round ``t`` each link of ``base`` is absent with probability
    ``failure_prob``, independently of other links and rounds. An undirected
    link fails in both directions together; a directed link (including each
    direction of a two-way pair in a directed base) fails on its own.

    Args:
        base: a networkx graph (nodes in the order of
            :func:`~topology.matrices.pattern_from_networkx`: integer labels
            sorted; directed iff ``base.is_directed()``) or an
            adjacency pattern (``[i, j]`` nonzero: ``j -> i``; the diagonal is
            ignored).
        failure_prob: per-round failure probability of each link, in ``[0, 1]``.
        seed: nonnegative integer; round ``t`` uses ``SeedSequence([seed, t])``.
        rule: weight rule name or callable; default ``"metropolis"``
            (undirected) or ``"row-stochastic"`` (directed).
        length: number of rounds, ``None`` for an infinite sequence.
        keep_self: self-links never fail. Every rule in :mod:`topology.weights`
            gives each node a positive self-weight, so only ``True`` is
            supported.
        directed: override the orientation inferred from ``base`` (a pattern
            is taken as undirected iff it is symmetric). ``directed=True`` on a
            symmetric base lets the two directions fail independently.

    Returns:
        A :class:`GraphSequence`.

    Raises:
        ParameterError: a bad parameter, ``keep_self=False``,
            ``directed=False`` with a non-symmetric base, or a symmetric-only
            rule on a directed sequence.
        InvalidMatrixError: ``base`` is not a valid square pattern.

    Example:
        >>> seq = link_failures(nx.cycle_graph(6), 0.2, seed=3)
        >>> w = seq.dense(5)
        >>> bool((w == w.T).all())
        True
    """
    failure_prob = _check_probability("failure_prob", failure_prob)
    seed = _check_seed(seed)
    length = _check_length(length)
    if not _check_bool("keep_self", keep_self):
        raise ParameterError(
            "keep_self=False is not supported: every weight rule gives each node a positive self-weight"
        )
    if isinstance(base, (nx.Graph, nx.DiGraph)):
        if base.number_of_nodes() == 0:
            raise ParameterError("base graph has no nodes")
        pattern = pattern_from_networkx(base)
        inferred = base.is_directed()
    else:
        pattern = as_pattern(base)
        if pattern.shape[0] == 0:
            raise ParameterError("base pattern has no nodes (shape (0, 0))")
        inferred = bool((pattern != pattern.T).nnz)
    symmetric = not (pattern != pattern.T).nnz
    if directed is None:
        directed = inferred
    else:
        directed = _check_bool("directed", directed)
        if not directed and not symmetric:
            raise ParameterError("directed=False needs a symmetric base, but base has one-way links")
    fn, rule_name = _resolve_rule(rule, directed)
    n = pattern.shape[0]
    if directed:
        coo = pattern.tocoo()
        recv, send = coo.row.astype(np.int64), coo.col.astype(np.int64)
    else:
        coo = sp.triu(pattern, k=1).tocoo()
        recv, send = coo.row.astype(np.int64), coo.col.astype(np.int64)
    num_links = len(recv)

    def round_function(t: int) -> sp.csr_array:
        rng = round_rng(seed, t)
        alive = rng.random(num_links) >= failure_prob
        r, s = recv[alive], send[alive]
        if not directed:
            r, s = np.concatenate([r, s]), np.concatenate([s, r])
        return fn(_pattern_from_links(n, r, s))

    kind = "directed" if directed else "undirected"
    return GraphSequence(
        n,
        round_function,
        length=length,
        directed=directed,
        description=(
            f"link_failures({kind} base, N={n}, {num_links} links, failure_prob={failure_prob}, "
            f"seed={seed}, rule={rule_name})"
        ),
    )


def random_geometric(
    num_nodes: int,
    radius: float,
    *,
    seed: int,
    dim: int = 2,
    rule: Rule | None = None,
    length: int | None = None,
    mobile: bool = True,
) -> GraphSequence:
    """Random geometric graphs: uniform points in ``[0, 1)^dim``, linked within ``radius``.

    Positions are ``round_rng(seed, t).random((num_nodes, dim))``; two nodes
    are linked (undirected) iff their Euclidean distance is ``<= radius``.
    With ``mobile=True`` positions are redrawn every round; with
    ``mobile=False`` they are drawn once from round 1's stream
    (``SeedSequence([seed, 1])``) and the graph is the same every round
    (period 1).

    Args:
        num_nodes: number of nodes ``N >= 1``.
        radius: link radius, ``> 0`` (``>= sqrt(dim)`` gives the complete graph).
        seed: nonnegative integer seed.
        dim: dimension of the unit cube, ``>= 1``.
        rule: weight rule name or callable, default ``"metropolis"``.
        length: number of rounds, ``None`` for an infinite sequence.
        mobile: redraw positions every round.

    Returns:
        An undirected :class:`GraphSequence`.

    Raises:
        ParameterError: a bad parameter (named in the message).

    Example:
        >>> seq = random_geometric(20, 0.4, seed=0)
        >>> w = seq.dense(2)
        >>> bool(np.allclose(w.sum(axis=0), 1.0) and np.allclose(w, w.T))
        True
    """
    n = _check_int("num_nodes", num_nodes, minimum=1)
    radius = _check_positive_real("radius", radius)
    seed = _check_seed(seed)
    dim = _check_int("dim", dim, minimum=1)
    mobile = _check_bool("mobile", mobile)
    length = _check_length(length)
    fn, rule_name = _resolve_rule(rule, False)

    def round_function(t: int) -> sp.csr_array:
        # with mobile=False the sequence has period 1, so t is always 1 here
        points = round_rng(seed, t).random((n, dim))
        pairs = cKDTree(points).query_pairs(radius, output_type="ndarray").astype(np.int64)
        a, b = pairs[:, 0], pairs[:, 1]
        return fn(_pattern_from_links(n, np.concatenate([a, b]), np.concatenate([b, a])))

    return GraphSequence(
        n,
        round_function,
        length=length,
        period=None if mobile else 1,
        directed=False,
        description=(
            f"random_geometric(N={n}, radius={radius}, dim={dim}, {'mobile' if mobile else 'static'}, "
            f"seed={seed}, rule={rule_name})"
        ),
    )
