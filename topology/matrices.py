"""Validation and conversion of single weight matrices and adjacency patterns.

Conventions used throughout the project:

* Nodes are ``0 .. N-1``.
* ``W[i, j]`` is the weight node ``i`` gives to the message it receives from
  node ``j`` (row ``i`` = receiver, column ``j`` = sender), so a positive
  off-diagonal entry ``W[i, j]`` is a directed link ``j -> i``.
* An *adjacency pattern* is a boolean sparse matrix with the same orientation
  (``A[i, j]`` true when ``i`` receives from ``j``); its diagonal is ignored,
  since every weight rule includes the node itself.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .errors import InvalidMatrixError, NodeCountMismatchError

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "as_weight_matrix",
    "as_pattern",
    "pattern_from_networkx",
    "to_networkx",
]


def _is_graph(obj: Any) -> bool:
    """Whether ``obj`` is a networkx graph; networkx is not imported for the check.

    No graph exists unless networkx has been imported, so the check needs only
    ``sys.modules`` (``import topology`` stays free of networkx's start-up cost).
    """
    nx = sys.modules.get("networkx")
    return nx is not None and isinstance(obj, (nx.Graph, nx.DiGraph))


def _where(round_index: int | None) -> str:
    return f"round {round_index}: " if round_index is not None else ""


def _refuse_imaginary(coo: sp.coo_array, round_index: int | None) -> None:
    """Raise on the first entry with a nonzero imaginary part (casting to float would drop it silently)."""
    bad = np.flatnonzero(coo.data.imag != 0)
    if bad.size:
        k = int(bad[0])
        raise InvalidMatrixError(f"{_where(round_index)}entry [{int(coo.row[k])}, {int(coo.col[k])}] is complex: "
                                 f"{complex(coo.data[k])!r} (weights are real numbers)")


def _to_sparse(matrix: Any, round_index: int | None) -> sp.csr_array:
    if _is_graph(matrix):
        raise InvalidMatrixError(
            f"{_where(round_index)}got a networkx graph where a weight matrix was expected; "
            "use topology.from_networkx(...) to attach a weight rule"
        )
    frame = sys.modules.get("pandas")
    if frame is not None and isinstance(matrix, frame.DataFrame) and list(matrix.index) != list(matrix.columns):
        # its values are read by position: rows and columns labelled in different orders would mislabel links
        raise InvalidMatrixError(
            f"{_where(round_index)}a DataFrame whose row labels {list(matrix.index)[:6]} and column labels "
            f"{list(matrix.columns)[:6]} differ (or are in another order): its values are read by position; "
            "reorder it (df.loc[labels, labels]) or pass an array")
    if sp.issparse(matrix):
        if np.issubdtype(matrix.dtype, np.complexfloating):
            _refuse_imaginary(sp.coo_array(matrix), round_index)
            matrix = sp.csr_array(matrix).real
        out = sp.csr_array(matrix, dtype=float, copy=True)
    else:
        try:
            raw = np.asarray(matrix)
            complex_entries = np.iscomplexobj(raw)
            arr = np.asarray(raw.real if complex_entries else raw, dtype=float)
        except (ValueError, TypeError) as exc:
            raise InvalidMatrixError(
                f"{_where(round_index)}weight matrix is ragged or not numeric ({exc})"
            ) from None
        if complex_entries and arr.ndim == 2:
            _refuse_imaginary(sp.coo_array(raw), round_index)
        if arr.ndim != 2:
            raise InvalidMatrixError(
                f"{_where(round_index)}weight matrix must be 2-D, got shape {arr.shape}"
            )
        out = sp.csr_array(arr)
    if out.shape[0] != out.shape[1]:
        raise InvalidMatrixError(
            f"{_where(round_index)}weight matrix must be square, got shape {out.shape}"
        )
    return out


def as_weight_matrix(
    matrix: Any, *, num_nodes: int | None = None, round_index: int | None = None
) -> sp.csr_array:
    """Validate a weight matrix and return it as a canonical CSR array.

    Args:
        matrix: a dense array, nested list or scipy sparse matrix.
        num_nodes: if given, the matrix must be ``num_nodes x num_nodes``.
        round_index: the round this matrix belongs to, used in error messages.

    Returns:
        A ``scipy.sparse.csr_array`` of floats with explicit zeros removed and
        sorted indices.

    Raises:
        InvalidMatrixError: ragged, non-2-D or non-square input; a NaN, an
            infinite, negative or complex entry (the message names row, column, value);
            a pandas DataFrame whose row and column labels are not the same sequence.
        NodeCountMismatchError: the size differs from ``num_nodes``.

    Example:
        >>> as_weight_matrix([[0.5, 0.5], [0.5, 0.5]]).shape
        (2, 2)
    """
    out = _to_sparse(matrix, round_index)
    if num_nodes is not None and out.shape[0] != num_nodes:
        raise NodeCountMismatchError(
            f"{_where(round_index)}matrix has {out.shape[0]} nodes, the sequence has {num_nodes}"
        )
    out.sum_duplicates()
    data = out.data
    bad = ~np.isfinite(data) | (data < 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        coo = out.tocoo()
        # tocoo keeps the CSR data order for canonical matrices
        i, j, v = int(coo.row[k]), int(coo.col[k]), float(coo.data[k])
        kind = "negative" if np.isfinite(v) else "non-finite"
        raise InvalidMatrixError(f"{_where(round_index)}entry [{i}, {j}] is {kind}: {v!r}")
    out.eliminate_zeros()
    out.sort_indices()
    return out


def as_pattern(adjacency: Any, *, round_index: int | None = None) -> sp.csr_array:
    """Return a boolean adjacency pattern (diagonal removed) from a matrix or graph.

    Args:
        adjacency: a networkx graph (see :func:`pattern_from_networkx`) or a
            square matrix whose nonzero entries ``A[i, j]`` mean ``j -> i``.
        round_index: used in error messages.

    Returns:
        A square boolean ``csr_array`` without diagonal entries.

    Raises:
        InvalidMatrixError: the matrix is not square or holds NaN/inf/negatives.
    """
    if _is_graph(adjacency):
        return pattern_from_networkx(adjacency)
    mat = as_weight_matrix(adjacency, round_index=round_index)
    mat = mat.astype(bool)
    mat.setdiag(False)
    mat.eliminate_zeros()
    return sp.csr_array(mat)


def _node_order(graph: nx.Graph) -> list[Any]:
    """The graph's nodes in agent order: integer labels sorted (in whatever order they were inserted; node ``k``
    is agent ``k`` when they are ``0 .. N-1``, agent ``k`` is the ``k``-th smallest label otherwise, e.g. the
    1-based labels ``1 .. N``), any other labels in ``graph.nodes`` order.

    Example:
        >>> import networkx as nx
        >>> _node_order(nx.Graph([(3, 1), (1, 0), (0, 2)])), _node_order(nx.Graph([(3, 1), (1, 2)]))
        ([0, 1, 2, 3], [1, 2, 3])
        >>> _node_order(nx.Graph([("b", "a")]))
        ['b', 'a']
    """
    nodes = list(graph.nodes)
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in nodes):
        # insertion order is an accident of how the graph was built (an edge list names its nodes as it goes):
        # 1-based labels 3, 1, 2 made node 3 agent 0
        return sorted(nodes)
    return nodes


def pattern_from_networkx(graph: nx.Graph) -> sp.csr_array:
    """Adjacency pattern of a networkx graph: integer labels are sorted (node ``k`` is row ``k`` when they are
    ``0 .. N-1``, in any insertion order), other labels are taken in ``graph.nodes`` order.

    A directed edge ``u -> v`` means ``v`` receives from ``u``; an undirected
    edge is a link both ways. Self-loops are ignored.

    Example:
        >>> import networkx as nx
        >>> pattern_from_networkx(nx.path_graph(3)).toarray().astype(int).tolist()
        [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    """
    import networkx as nx

    adj = nx.to_scipy_sparse_array(graph, nodelist=_node_order(graph), weight=None, format="csr")
    # networkx: adj[u, v] = 1 for edge u -> v; our orientation is the transpose.
    pat = sp.csr_array(adj.T.astype(bool))
    pat.setdiag(False)
    pat.eliminate_zeros()
    return pat


def to_networkx(weights: sp.csr_array) -> nx.DiGraph:
    """A ``networkx.DiGraph`` view of a weight matrix.

    Edge ``j -> i`` carries ``weight = W[i, j]``; diagonal weights become
    self-loops.

    Example:
        >>> g = to_networkx(as_weight_matrix([[0.5, 0.5], [0.0, 1.0]]))
        >>> g[1][0]["weight"]
        0.5
    """
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(weights.shape[0]))
    coo = weights.tocoo()
    graph.add_weighted_edges_from(
        (int(j), int(i), float(w)) for i, j, w in zip(coo.row, coo.col, coo.data)
    )
    return graph
