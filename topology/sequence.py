"""Time-indexed sequences of weighted digraphs on a fixed node set.

A :class:`GraphSequence` maps a round ``t = 1, 2, ...`` (rounds are 1-based,
as in the papers' ``A_t``) to an ``N x N`` weight matrix stored as a
``scipy.sparse.csr_array`` (see :mod:`topology.matrices` for the orientation:
row = receiver, column = sender). A sequence is *finite* (``length`` rounds),
*periodic* (a list cycled for ever) or *generated* (a deterministic function
of the round, e.g. a seeded random graph per round).
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .errors import (EmptySequenceError, InvalidMatrixError, NodeCountMismatchError, ParameterError, RoundIndexError,
                     TopologyError)
from .matrices import _is_graph, _node_order, as_pattern, as_weight_matrix, to_networkx

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "GraphSequence",
    "static",
    "periodic",
    "from_matrices",
    "from_networkx",
    "generated",
]

RoundFunction = Callable[[int], Any]


class GraphSequence:
    """A sequence of weight matrices indexed by round ``t >= 1``.

    Use the constructors (:func:`static`, :func:`periodic`, :func:`from_matrices`,
    :func:`from_networkx`, :func:`generated` and those in
    :mod:`topology.generators.random_graphs` / :mod:`topology.generators.b_connected`) rather than
    this class directly.

    Args:
        num_nodes: number of nodes ``N``.
        round_function: maps a round ``t`` (1-based) to a weight matrix; it must be a deterministic
            function of ``t``. It is called again for a round that has left a small cache, its output is
            validated (square, ``N`` nodes, finite, nonnegative), and a round whose matrix differs from
            the first one it gave is an error (a function drawing from a generator shared across calls
            would give the audit, the engines and each rerun other graphs).
        length: number of rounds for a finite sequence, ``None`` if infinite.
        period: the period if the sequence repeats, else ``None``.
        directed: whether links may be one-way (informational; checks never
            rely on it).
        description: a short human-readable description.

    Example:
        >>> seq = static([[0.5, 0.5], [0.5, 0.5]])
        >>> seq.dense(3).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
    """

    _CACHE_SIZE = 16
    _PRINT_BLOCK = 4096

    def __init__(
        self,
        num_nodes: int,
        round_function: RoundFunction,
        *,
        length: int | None = None,
        period: int | None = None,
        directed: bool = True,
        description: str = "",
    ) -> None:
        if not isinstance(num_nodes, (int, np.integer)) or num_nodes < 1:
            raise ParameterError(f"num_nodes must be a positive integer, got {num_nodes!r}")
        if not callable(round_function):
            raise ParameterError(f"round_function must be a callable t -> weight matrix of round t, got "
                                 f"{type(round_function).__name__} {round_function!r}"[:300])
        for name, value in (("length", length), ("period", period)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
                raise ParameterError(f"{name} must be a positive integer or None, got {value!r}")
        if length is not None and length < 1:
            raise EmptySequenceError(f"a graph sequence needs at least one round, got length={length}")
        if period is not None and period < 1:
            raise ParameterError(f"period must be a positive integer, got {period!r}")
        self._num_nodes = int(num_nodes)
        self._round_function = round_function
        self._length = None if length is None else int(length)
        self._period = None if period is None else int(period)
        self.directed = bool(directed)
        self.description = description
        self._cache: OrderedDict[int, sp.csr_array] = OrderedDict()
        # _fingerprint of each round's first matrix (0: not asked yet), in blocks of _PRINT_BLOCK rounds; None for
        # a sequence over matrices validated once (:func:`_over_validated`), deterministic by construction
        self._prints: dict[int, np.ndarray] | None = {}

    # -- basic properties -------------------------------------------------
    @property
    def num_nodes(self) -> int:
        """Number of nodes ``N``."""
        return self._num_nodes

    @property
    def length(self) -> int | None:
        """Number of rounds of a finite sequence; ``None`` for an infinite one."""
        return self._length

    @property
    def period(self) -> int | None:
        """Period of a periodic sequence (1 for a static one), else ``None``."""
        return self._period

    @property
    def is_finite(self) -> bool:
        return self._length is not None

    def __repr__(self) -> str:
        extent = f"length={self._length}" if self._length is not None else "infinite"
        per = f", period={self._period}" if self._period is not None else ""
        desc = f" ({self.description})" if self.description else ""
        return f"GraphSequence(N={self._num_nodes}, {extent}{per}){desc}"

    # -- access ------------------------------------------------------------
    def _check_round(self, t: int) -> int:
        if not isinstance(t, (int, np.integer)) or isinstance(t, bool):
            raise RoundIndexError(f"round must be an integer, got {t!r}")
        if t < 1:
            raise RoundIndexError(f"rounds start at 1, got round {t}")
        if self._length is not None and t > self._length:
            raise RoundIndexError(f"round {t} is past the last round ({self._length}) of this sequence")
        return int(t)

    def weights(self, t: int) -> sp.csr_array:
        """The validated weight matrix of round ``t`` (CSR, do not modify).

        Raises:
            RoundIndexError: ``t < 1`` or past the end of a finite sequence.
            InvalidMatrixError, NodeCountMismatchError: the round's matrix is bad.
            ParameterError: the round function raised (naming the round and its exception), or gave another
                matrix for this round than on its first call (it is not a deterministic function of the round).
        """
        t = self._check_round(t)
        key = t if self._period is None else (t - 1) % self._period + 1
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        try:
            raw = self._round_function(key)
        except TopologyError as exc:
            raise type(exc)(f"round {t}: {exc}") from exc
        except MemoryError:
            raise
        except Exception as exc:  # a user's function: name the round, not the audit step or engine that asked
            raise ParameterError(f"round {t}: the sequence's round function raised {type(exc).__name__}: {exc} "
                                 "(rounds are 1-based: round t is round_function(t), t = 1, 2, ...)") from exc
        mat = as_weight_matrix(raw, num_nodes=self._num_nodes, round_index=t)
        if not self._same_as_first_call(key, mat):
            raise ParameterError(
                f"round {t}: the sequence's round function gave another weight matrix than on its first call for "
                "this round: it must be a deterministic function of the round (e.g. draw round t's graph from "
                "numpy.random.default_rng([seed, t]), not from a generator shared across calls); the audit, the "
                "engines and every rerun would each see other graphs")
        self._cache[key] = mat
        if len(self._cache) > self._CACHE_SIZE:
            self._cache.popitem(last=False)
        return mat

    def _same_as_first_call(self, key: int, mat: sp.csr_array) -> bool:
        """Whether ``mat`` is the matrix round ``key`` gave on its first call (recorded then: 8 bytes a round);
        always for a sequence over validated matrices (``_prints`` is ``None``: nothing to fingerprint)."""
        if self._prints is None:
            return True
        block = self._prints.get(key // self._PRINT_BLOCK)
        if block is None:
            block = self._prints[key // self._PRINT_BLOCK] = np.zeros(self._PRINT_BLOCK, dtype=np.uint64)
        now, k = _fingerprint(mat), key % self._PRINT_BLOCK
        if block[k] == 0:
            block[k] = now
        return bool(block[k] == now)

    def dense(self, t: int) -> np.ndarray:
        """Round ``t``'s weight matrix as a dense ``numpy`` array."""
        return self.weights(t).toarray()

    def graph(self, t: int) -> nx.DiGraph:
        """Round ``t`` as a ``networkx.DiGraph`` (edge ``j -> i`` with ``weight = W[i, j]``)."""
        return to_networkx(self.weights(t))

    def pattern(self, t: int) -> sp.csr_array:
        """Round ``t``'s boolean link pattern without the diagonal (``[i, j]``: ``j -> i``)."""
        return as_pattern(self.weights(t), round_index=t)

    def resolve_horizon(self, horizon: int | None) -> int:
        """The number of rounds to examine: ``horizon``, or the length if finite.

        Raises:
            ParameterError: ``horizon`` is not a positive integer, or is missing
                for an infinite sequence.
            RoundIndexError: ``horizon`` exceeds a finite sequence's length.
        """
        if horizon is None:
            if self._length is None:
                if self._period is not None:
                    return self._period
                raise ParameterError("horizon is required for an infinite sequence")
            return self._length
        if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise ParameterError(f"horizon must be a positive integer, got {horizon!r}")
        if self._length is not None and horizon > self._length:
            raise RoundIndexError(
                f"horizon {horizon} exceeds the sequence's {self._length} rounds"
            )
        return int(horizon)

    def rounds(self, horizon: int | None = None) -> Iterator[tuple[int, sp.csr_array]]:
        """Iterate ``(t, W_t)`` for ``t = 1 .. horizon`` (see :meth:`resolve_horizon`)."""
        for t in range(1, self.resolve_horizon(horizon) + 1):
            yield t, self.weights(t)

    def take(self, horizon: int) -> GraphSequence:
        """A finite sequence holding the first ``horizon`` rounds of this one."""
        mats = [w for _, w in self.rounds(horizon)]
        return from_matrices(mats, directed=self.directed, description=self.description)


def _fingerprint(mat: sp.csr_array) -> np.uint64:
    """A nonzero checksum (CRC-32, flagged by bit 32) of a canonical CSR matrix: its index arrays read as int32 (as
    int64 past 2^31 entries, a choice fixed by the shape and nnz) and its float64 data.

    The same weights give the same value in any index width; a round function that draws another graph is caught
    but for a chance of 2^-32. One pass over the arrays: about 1 ms for a 100k-node ring's 300k entries (CRC-32 with
    Adler-32 over 64-bit indices took 3 ms, more than the matrix's validation).

    Example:
        >>> import numpy as np
        >>> bool(_fingerprint(as_weight_matrix(np.eye(2))) == _fingerprint(as_weight_matrix([[1, 0], [0, 1]])))
        True
    """
    width = np.int32 if max(mat.nnz, mat.shape[0]) < 2**31 else np.int64
    crc = 0
    for part in (np.asarray(mat.indptr, dtype=width), np.asarray(mat.indices, dtype=width),
                 np.asarray(mat.data, dtype=np.float64)):
        crc = zlib.crc32(np.ascontiguousarray(part).data, crc)  # a memoryview of the array
    return np.uint64(crc | 1 << 32)


def _listed(items: Iterable[Any], what: str) -> list[Any]:
    """``items`` as a list; an iterator is refused by name (``list`` of an endless generator filled the memory).

    Example:
        >>> try:
        ...     _listed(iter([np.eye(2)]), "from_matrices")
        ... except ParameterError as exc:
        ...     print(str(exc)[:60])
        from_matrices: got an iterator (list_iterator), which may ne
    """
    if isinstance(items, Iterator):
        raise ParameterError(
            f"{what}: got an iterator ({type(items).__name__}), which may never end: pass a list (list(...) of a "
            "finite one), or for rounds without end generated(num_nodes, round_function) with round t's matrix a "
            "function of t")
    return list(items)


def _is_row(item: Any) -> bool:
    """Whether ``item`` is a 1-D list or array of numbers (a matrix's row, not a matrix)."""
    if sp.issparse(item) or _is_graph(item):
        return False
    try:
        return bool(np.ndim(item) == 1 and np.asarray(item).dtype.kind in "biuf")
    except (ValueError, TypeError):  # ragged: as_weight_matrix names it
        return False


def _validated_list(matrices: Iterable[Any], what: str) -> list[sp.csr_array]:
    mats = _listed(matrices, what)
    if not mats:
        raise EmptySequenceError("a graph sequence needs at least one round, got an empty list")
    if _is_row(mats[0]):  # one matrix given where a list of rounds was expected: its rows read as rounds
        raise InvalidMatrixError(
            f"{what}: round 1 is a row of numbers, not a matrix: {what} takes one N x N matrix per round (a "
            f"list of {len(mats)} rows looks like one matrix; for the same matrix at every round use static(W))")
    first = as_weight_matrix(mats[0], round_index=1)
    out = [first]
    for t, m in enumerate(mats[1:], start=2):
        out.append(as_weight_matrix(m, num_nodes=first.shape[0], round_index=t))
    return out


def static(matrix: Any, *, directed: bool = True, description: str = "static") -> GraphSequence:
    """The same weight matrix at every round (infinite, period 1).

    Example:
        >>> static(np.eye(3)).weights(100).nnz
        3
    """
    mat = as_weight_matrix(matrix, round_index=1)
    return _over_validated([mat], period=1, directed=directed, description=description)


def periodic(matrices: Sequence[Any], *, directed: bool = True, description: str = "periodic") -> GraphSequence:
    """A list of weight matrices cycled for ever: round ``t`` uses ``matrices[(t-1) % P]``.

    Raises:
        EmptySequenceError: the list is empty.
        NodeCountMismatchError: the matrices do not all have the same size.
        ParameterError: ``matrices`` is an iterator (e.g. a generator, which may never end).
    """
    return _cycled(_validated_list(matrices, "periodic"), directed=directed, description=description)


def _cycled(mats: list[sp.csr_array], *, directed: bool, description: str) -> GraphSequence:
    return _over_validated(mats, period=len(mats), directed=directed, description=description)


def _over_validated(mats: list[sp.csr_array], *, length: int | None = None, period: int | None = None,
                    directed: bool, description: str) -> GraphSequence:
    """The sequence whose round ``t`` is ``mats[t - 1]``, matrices :func:`_validated_list` made (private copies).

    Its round function is deterministic by construction, so its rounds are not fingerprinted (a round that
    leaves the cache is asked again on every pass of an audit or an engine: the checksum cost more than the
    matrix's validation, a fifth of a 1000-round audit).
    """
    seq = GraphSequence(mats[0].shape[0], lambda t: mats[t - 1], length=length, period=period, directed=directed,
                        description=description)
    seq._prints = None
    return seq


def from_matrices(
    matrices: Sequence[Any], *, periodic: bool = False, directed: bool = True, description: str = "from matrices"
) -> GraphSequence:
    """A finite sequence (round ``t`` = ``matrices[t-1]``), or a periodic one.

    Raises:
        EmptySequenceError: the list is empty.
        InvalidMatrixError, NodeCountMismatchError: a bad matrix, or matrices of different sizes.
        ParameterError: ``matrices`` is an iterator (e.g. a generator, which may never end).

    Example:
        >>> seq = from_matrices([np.eye(2), [[0.5, 0.5], [0.5, 0.5]]])
        >>> seq.length, float(seq.dense(2)[0, 1])
        (2, 0.5)
    """
    mats = _validated_list(matrices, "from_matrices")
    if periodic:
        return _cycled(mats, directed=directed, description=description)
    return _over_validated(mats, length=len(mats), directed=directed, description=description)


def from_networkx(
    graphs: Sequence[nx.Graph],
    rule: str | Callable[[sp.csr_array], sp.csr_array] | None = None,
    *,
    periodic: bool = False,
) -> GraphSequence:
    """A sequence from networkx graphs, weighted by a rule or by edge attributes.

    Args:
        graphs: one graph per round, all on the same node set: integer labels are sorted, in whatever order they
            were inserted (node ``k`` is agent ``k`` when they are ``0 .. N-1``; with labels ``1 .. N`` node
            ``k`` is agent ``k - 1``), other labels are taken in the first graph's order.
        rule: a weight rule name or callable from :mod:`topology.weights`
            (e.g. ``"metropolis"``). If ``None``, each edge ``u -> v`` must carry
            a ``weight`` attribute, used as ``W[v, u]``; a self-loop gives ``W[v, v]``. A graph made by
            ``networkx.from_numpy_array(W, create_using=nx.DiGraph)`` has edge ``i -> j`` of weight ``W[i, j]``
            and reads back as ``W`` transposed: give a matrix to :func:`from_matrices` instead.
        periodic: cycle the list for ever instead of stopping after it.

    Raises:
        EmptySequenceError: no graphs.
        ParameterError: ``graphs`` is an iterator (e.g. a generator, which may never end).
        NodeCountMismatchError: graphs on different node sets.
        ParameterError: an unknown rule name; without a rule, an edge whose ``weight`` attribute is missing
            (networkx would read it as 1) or is not an int or float (a boolean, a string, a Fraction), or
            parallel edges of a multigraph (networkx would add their weights).

    Example:
        >>> import networkx as nx
        >>> seq = from_networkx([nx.cycle_graph(4)], rule="metropolis")
        >>> float(seq.dense(1)[0, 1])
        0.3333333333333333
    """
    import networkx as nx

    from .weights import get_rule  # local import: weights depends on matrices only

    graphs = _listed(graphs, "from_networkx")
    if not graphs:
        raise EmptySequenceError("from_networkx needs at least one graph")
    nodes = _node_order(graphs[0])
    mats = []
    for t, g in enumerate(graphs, start=1):
        if set(g.nodes) != set(nodes):
            raise NodeCountMismatchError(
                f"round {t}: graph has nodes {sorted(g.nodes, key=str)[:10]}..., expected the node set of round 1 "
                f"({len(nodes)} nodes)"
            )
        if rule is None:
            if g.is_multigraph():
                twice = next(((u, v) for u, v in g.edges() if g.number_of_edges(u, v) > 1), None)
                if twice is not None:  # networkx would add the parallel edges' weights into one entry
                    u, v = twice
                    raise ParameterError(
                        f"round {t}: edge {u!r} -> {v!r} appears {g.number_of_edges(u, v)} times (a multigraph); "
                        "without a rule each pair of nodes needs one weight: merge the parallel edges first")
            bad = next(((u, v, w) for u, v, w in g.edges(data="weight") if not _is_weight(w)), None)
            if bad is not None:  # networkx reads a missing weight as 1 (and True as 1, "0.5" as text)
                u, v, w = bad
                what = "has no 'weight' attribute" if w is None else f"has weight {w!r}, not an int or float"
                raise ParameterError(
                    f"round {t}: edge {u!r} -> {v!r} {what}; without a rule every edge must carry its weight as a "
                    "number (or pass a rule, e.g. rule='metropolis')")
            adj = nx.to_scipy_sparse_array(g, nodelist=nodes, weight="weight", format="csr")
            mats.append(sp.csr_array(adj.T))
        else:
            sub = nx.relabel_nodes(g, {v: k for k, v in enumerate(nodes)}, copy=True)
            sub = sub.subgraph(range(len(nodes)))
            ordered = sub.__class__()
            ordered.add_nodes_from(range(len(nodes)))
            ordered.add_edges_from(sub.edges)
            mats.append(get_rule(rule)(as_pattern(ordered, round_index=t)))
    directed = any(g.is_directed() for g in graphs)
    return from_matrices(mats, periodic=periodic, directed=directed, description="from networkx")


def _is_weight(w: Any) -> bool:
    """Whether an edge attribute is a weight: a real number, not a boolean."""
    return isinstance(w, (int, float, np.integer, np.floating)) and not isinstance(w, (bool, np.bool_))


def generated(
    num_nodes: int,
    round_function: RoundFunction,
    *,
    length: int | None = None,
    directed: bool = True,
    description: str = "generated",
) -> GraphSequence:
    """A sequence whose round ``t`` is ``round_function(t)`` (must be deterministic in ``t``)."""
    return GraphSequence(
        num_nodes, round_function, length=length, directed=directed, description=description
    )
