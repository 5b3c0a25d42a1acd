"""Property checks of weight matrices and graph sequences, with witnesses.

Every check returns a structured result rather than a bare boolean: whether
the property holds, the measured quantity (e.g. the worst row-sum deviation)
and, when it fails, a *witness* sentence naming the offending row, column,
node, round or window, e.g. ``"column 3 sums to 0.83"`` or
``"window [9, 12]: node 4 unreachable from node 1"``.

Orientation (see :mod:`topology.matrices`): ``W[i, j] > 0`` off the diagonal
is a link ``j -> i`` (node ``i`` receives from node ``j``). "Node ``u``
unreachable from node ``v``" means there is no directed path ``v -> ... -> u``.

Per-matrix checks accept anything :func:`topology.matrices.as_weight_matrix`
accepts, and additionally matrices with negative entries (so that
:func:`check_nonnegative` and the stochasticity checks can report them instead
of raising). Non-finite entries raise :class:`~topology.errors.InvalidMatrixError`.
All per-matrix checks are ``O(nnz)``; only the spectral quantities densify,
and only for ``N <= 500``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import breadth_first_order, connected_components

from ..errors import InvalidMatrixError, ParameterError, TopologyError
from ..matrices import _to_sparse
from ..sequence import GraphSequence

__all__ = [
    "CheckResult",
    "SequenceCheck",
    "check_nonnegative",
    "check_row_stochastic",
    "check_column_stochastic",
    "check_doubly_stochastic",
    "check_symmetric",
    "check_strongly_connected",
    "check_connected_undirected",
    "check_positive_diagonal",
    "min_positive_weight",
    "check_weights_at_least_inverse_n",
    "min_self_weight",
    "second_eigenvalue_modulus",
    "mixing_norm",
    "check_each_round",
    "check_b_strongly_connected",
    "minimal_b",
]

#: Matrices up to this size use dense LAPACK routines in the spectral functions.
DENSE_SPECTRAL_LIMIT = 500
#: Above this size a non-converging ARPACK call is not retried densely.
_DENSE_FALLBACK_LIMIT = 5000

_WINDOW_KINDS = ("fixed", "sliding")


# ---------------------------------------------------------------------------
# result types
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckResult:
    """Outcome of a property check on one matrix.

    Attributes:
        name: the property checked, e.g. ``"column_stochastic"``.
        holds: whether the property holds (within the check's tolerance).
        value: the measured quantity (see each check), or ``None``.
        witness: when the property fails, a sentence naming the offending
            row/column/node and value; ``None`` when it holds.
    """

    name: str
    holds: bool
    value: float | None = None
    witness: str | None = None

    def __bool__(self) -> bool:
        return self.holds


@dataclass(frozen=True)
class SequenceCheck:
    """Outcome of a property check over the rounds (or windows) of a sequence.

    Attributes:
        name: the property checked.
        holds: whether it holds on every examined round/window.
        first_failure_round: the first failing round (for windows: the first
            round of the first failing window); ``None`` if it holds.
        witness: the failure, prefixed by ``"round t: "`` or ``"window [a, b]: "``.
        value: the worst measured value over the examined rounds/windows,
            where meaningful, else ``None``.
    """

    name: str
    holds: bool
    first_failure_round: int | None
    witness: str | None
    value: float | None = None

    def __bool__(self) -> bool:
        return self.holds


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return f"{float(x):.12g}"


def _matrix(W: Any) -> sp.csr_array:
    """Canonical CSR copy of ``W``; negatives allowed, non-finite entries rejected."""
    out = _to_sparse(W, None)
    if sp.issparse(W):
        out = out.copy()  # never mutate the caller's matrix
    out.sum_duplicates()
    bad = ~np.isfinite(out.data)
    if bad.any():
        coo = out.tocoo()
        k = int(np.flatnonzero(bad)[0])
        raise InvalidMatrixError(
            f"entry [{int(coo.row[k])}, {int(coo.col[k])}] is non-finite: {float(coo.data[k])!r}"
        )
    if out.shape[0] == 0:
        raise InvalidMatrixError("weight matrix has no nodes (shape (0, 0))")
    out.eliminate_zeros()
    out.sort_indices()
    return out


def _check_tol(tol: float) -> float:
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)):
        raise ParameterError(f"tol must be a nonnegative finite number, got {tol!r}")
    if not math.isfinite(tol) or tol < 0:
        raise ParameterError(f"tol must be a nonnegative finite number, got {tol!r}")
    return float(tol)


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _structure(W: sp.csr_array) -> sp.csr_array:
    """Integer 0/1 pattern of the stored (positive) entries; shares index arrays."""
    return sp.csr_array(
        (np.ones(W.nnz, dtype=np.int32), W.indices, W.indptr), shape=W.shape
    )


def _unreachable_pair(pattern: sp.csr_array) -> tuple[int, int] | None:
    """A pair ``(u, v)`` with no directed path ``v -> u``, or ``None`` if strongly connected.

    ``pattern[i, j] != 0`` means ``j -> i``; explicit zeros must have been removed.
    csgraph reads ``M[a, b]`` as an edge ``a -> b``, so forward reachability in
    our orientation is a BFS on the transpose and backward reachability a BFS
    on the pattern itself.
    """
    n = pattern.shape[0]
    forward = breadth_first_order(
        sp.csr_array(pattern.T), 0, directed=True, return_predecessors=False
    )
    if forward.size < n:
        seen = np.zeros(n, dtype=bool)
        seen[forward] = True
        return int(np.flatnonzero(~seen)[0]), 0
    backward = breadth_first_order(pattern, 0, directed=True, return_predecessors=False)
    if backward.size < n:
        seen = np.zeros(n, dtype=bool)
        seen[backward] = True
        return 0, int(np.flatnonzero(~seen)[0])
    return None


def _strong_components(pattern: sp.csr_array) -> int:
    n_comp, _ = connected_components(pattern, directed=True, connection="strong")
    return int(n_comp)


def _sum_check(W: sp.csr_array, axis: int, tol: float) -> tuple[float, str | None]:
    """Worst deviation of the row (axis=1) or column (axis=0) sums from 1, and a witness."""
    sums = np.asarray(W.sum(axis=axis)).ravel()
    dev = np.abs(sums - 1.0)
    k = int(np.argmax(dev))
    worst = float(dev[k])
    if worst <= tol:
        return worst, None
    label = "row" if axis == 1 else "column"
    return worst, f"{label} {k} sums to {_fmt(sums[k])}"


def _negative_witness(W: sp.csr_array, tol: float) -> tuple[float, str | None]:
    n = W.shape[0]
    lowest = float(W.data.min()) if W.nnz else 0.0
    if W.nnz < n * n:
        lowest = min(lowest, 0.0)
    neg = W.data < -tol
    if not neg.any():
        return lowest, None
    coo = W.tocoo()  # canonical CSR: same data order
    k = int(np.flatnonzero(neg)[0])
    return lowest, f"entry [{int(coo.row[k])}, {int(coo.col[k])}] is negative: {_fmt(coo.data[k])}"


def _stochastic(name: str, W: Any, tol: float, axes: tuple[int, ...]) -> CheckResult:
    """``W`` nonnegative with its sums along each of ``axes`` (1: rows, 0: columns) 1 within ``tol``.

    ``value`` is the worst deviation over the axes; the witness names a negative entry if any, else the worst
    row or column of the axis with the largest deviation (the first of ``axes`` on ties).
    """
    tol = _check_tol(tol)
    mat = _matrix(W)
    worst, witness = max((_sum_check(mat, axis, tol) for axis in axes), key=lambda found: found[0])
    _, neg = _negative_witness(mat, 0.0)
    if neg is not None:
        witness = neg
    return CheckResult(name, witness is None, worst, witness)


# ---------------------------------------------------------------------------
# per-matrix checks
# ---------------------------------------------------------------------------
def check_nonnegative(W: Any, *, tol: float = 0.0) -> CheckResult:
    """Check that every entry is ``>= -tol``.

    Args:
        W: a square matrix (dense, nested list or scipy sparse); negative
            entries are allowed here, they are what is being checked.
        tol: allowed negative slack (default 0: strictly nonnegative).

    Returns:
        ``CheckResult("nonnegative", ...)``; ``value`` is the smallest entry
        (implicit zeros count); the witness names the first negative entry in
        row-major order.

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.
        ParameterError: a negative or non-finite ``tol``.

    Example:
        >>> check_nonnegative([[1.2, -0.2], [0.0, 1.0]]).witness
        'entry [0, 1] is negative: -0.2'
    """
    tol = _check_tol(tol)
    mat = _matrix(W)
    lowest, witness = _negative_witness(mat, tol)
    return CheckResult("nonnegative", witness is None, lowest, witness)


def check_row_stochastic(W: Any, *, tol: float = 1e-9) -> CheckResult:
    """Check that ``W`` is nonnegative and every row sums to 1 within ``tol``.

    Returns:
        ``CheckResult("row_stochastic", ...)``; ``value`` is the worst
        ``|row sum - 1|``; the witness names the worst row, e.g.
        ``"row 3 sums to 0.91"``, or a negative entry.

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.
        ParameterError: a bad ``tol``.

    Example:
        >>> check_row_stochastic([[0.5, 0.5], [0.2, 0.7]]).witness
        'row 1 sums to 0.9'
    """
    return _stochastic("row_stochastic", W, tol, (1,))


def check_column_stochastic(W: Any, *, tol: float = 1e-9) -> CheckResult:
    """Check that ``W`` is nonnegative and every column sums to 1 within ``tol``.

    Returns:
        ``CheckResult("column_stochastic", ...)``; ``value`` is the worst
        ``|column sum - 1|``; the witness names the worst column, e.g.
        ``"column 3 sums to 0.83"``, or a negative entry.

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.
        ParameterError: a bad ``tol``.

    Example:
        >>> check_column_stochastic([[1.0, 0.5], [0.0, 0.5]]).holds
        True
    """
    return _stochastic("column_stochastic", W, tol, (0,))


def check_doubly_stochastic(W: Any, *, tol: float = 1e-9) -> CheckResult:
    """Check that ``W`` is nonnegative with all row and column sums 1 within ``tol``.

    Returns:
        ``CheckResult("doubly_stochastic", ...)``; ``value`` is the worst
        deviation over rows and columns; the witness names a negative entry if
        any, else the row or column with the larger deviation (rows on ties).

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.
        ParameterError: a bad ``tol``.

    Example:
        >>> check_doubly_stochastic([[1.0, 0.5], [0.0, 0.5]]).witness
        'row 0 sums to 1.5'
    """
    return _stochastic("doubly_stochastic", W, tol, (1, 0))


def check_symmetric(W: Any, *, tol: float = 1e-9) -> CheckResult:
    """Check that ``|W[i, j] - W[j, i]| <= tol`` for all ``i, j``, and that ``W[i, j] > 0`` iff ``W[j, i] > 0``.

    A one-way link is an asymmetry of the graph whatever its weight: a weight lighter than ``tol`` with no
    reverse link fails (the graph is not undirected, and consensus may never be reached).

    Returns:
        ``CheckResult("symmetric", ...)``; ``value`` is ``max |W - W^T|``; the
        witness names the worst pair, e.g. ``"W[0, 1] = 0.3 but W[1, 0] = 0.2"``.

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.
        ParameterError: a bad ``tol``.

    Example:
        >>> check_symmetric([[0.7, 0.3], [0.2, 0.8]]).witness
        'W[0, 1] = 0.3 but W[1, 0] = 0.2'
    """
    tol = _check_tol(tol)
    mat = _matrix(W)
    diff = sp.csr_array(mat - mat.T).tocoo()
    if diff.nnz == 0:
        return CheckResult("symmetric", True, 0.0, None)
    absd = np.abs(diff.data)
    k = int(np.argmax(absd))
    worst = float(absd[k])
    if worst <= tol:
        # a link one way only is structure, not round-off, however light: it is never within tol
        pat = _structure(mat)
        one_way = sp.csr_array(pat - pat.T).tocoo()
        one_way.eliminate_zeros()
        if one_way.nnz == 0:
            return CheckResult("symmetric", True, worst, None)
        i, j = sorted((int(one_way.row[0]), int(one_way.col[0])))
        witness = f"W[{i}, {j}] = {_fmt(mat[i, j])} but W[{j}, {i}] = {_fmt(mat[j, i])}"
        return CheckResult("symmetric", False, worst, witness)
    i, j = sorted((int(diff.row[k]), int(diff.col[k])))
    witness = f"W[{i}, {j}] = {_fmt(mat[i, j])} but W[{j}, {i}] = {_fmt(mat[j, i])}"
    return CheckResult("symmetric", False, worst, witness)


def check_strongly_connected(W: Any) -> CheckResult:
    """Check that the digraph of ``W`` (link ``j -> i`` when ``W[i, j] > 0``) is strongly connected.

    Returns:
        ``CheckResult("strongly_connected", ...)``; ``value`` is the number of
        strongly connected components; the witness names a genuinely
        unreachable pair, e.g. ``"node 0 unreachable from node 1"`` (no
        directed path ``1 -> ... -> 0``).

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.

    Example:
        >>> check_strongly_connected([[1, 0, 0], [1, 1, 0], [0, 1, 1]]).witness
        'node 0 unreachable from node 1'
    """
    mat = _matrix(W)
    pat = _structure(mat)
    n_comp = _strong_components(pat)
    if n_comp == 1:
        return CheckResult("strongly_connected", True, 1.0, None)
    pair = _unreachable_pair(pat)
    assert pair is not None  # more than one strong component
    return CheckResult(
        "strongly_connected", False, float(n_comp), f"node {pair[0]} unreachable from node {pair[1]}"
    )


def check_connected_undirected(W: Any) -> CheckResult:
    """Check weak connectivity: the pattern of ``W + W^T`` is connected.

    Returns:
        ``CheckResult("connected_undirected", ...)``; ``value`` is the number
        of connected components ignoring link directions; the witness names a
        node not connected to node 0.

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.

    Example:
        >>> check_connected_undirected([[1, 0], [0, 1]]).witness
        'node 1 is not connected to node 0, even ignoring link directions'
    """
    mat = _matrix(W)
    n_comp, labels = connected_components(_structure(mat), directed=False)
    if n_comp == 1:
        return CheckResult("connected_undirected", True, 1.0, None)
    u = int(np.flatnonzero(labels != labels[0])[0])
    return CheckResult(
        "connected_undirected",
        False,
        float(n_comp),
        f"node {u} is not connected to node 0, even ignoring link directions",
    )


def check_positive_diagonal(W: Any) -> CheckResult:
    """Check that every self-weight ``W[i, i]`` is strictly positive.

    Returns:
        ``CheckResult("positive_diagonal", ...)``; ``value`` is the smallest
        self-weight; the witness names the first node without one.

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.

    Example:
        >>> check_positive_diagonal([[1, 0], [1, 0]]).witness
        'node 1 has self-weight 0'
    """
    mat = _matrix(W)
    diag = mat.diagonal()
    lowest = float(diag.min())
    if lowest > 0:
        return CheckResult("positive_diagonal", True, lowest, None)
    i = int(np.flatnonzero(diag <= 0)[0])
    return CheckResult("positive_diagonal", False, lowest, f"node {i} has self-weight {_fmt(diag[i])}")


def min_positive_weight(W: Any) -> float:
    """The smallest strictly positive entry of ``W`` (diagonal included).

    This is the largest ``eta`` for which Assumption 2 of Huang, Mitra and Vaidya
    (ICDCN 2015; every
    positive weight, including self-weights, is ``>= eta``) can hold for ``W``.

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.
        ParameterError: ``W`` has no positive entry.

    Example:
        >>> min_positive_weight([[0.75, 0.25], [0.25, 0.75]])
        0.25
    """
    mat = _matrix(W)
    pos = mat.data[mat.data > 0]
    if pos.size == 0:
        raise ParameterError("W has no positive entry, so it has no smallest positive weight")
    return float(pos.min())


def check_weights_at_least_inverse_n(W: Any, *, tol: float = 1e-9) -> CheckResult:
    """Check that every self-weight and every positive weight is at least ``1/N`` (within ``tol``).

    The uniform push-sum weighting ``A_ij = 1/deg_j^out`` (Cheng, Liao and Li, arXiv 2022, Algorithm 2;
    ``deg_j^out <= N``, self included) has this property, and the consensus constant
    ``lambda = (1 - 1/N**(N B))**(1/B)`` of Nedić and Olshevsky (IEEE TAC 2015) used by Lemma 6 of Cheng, Liao
    and Li rests on it: a column-stochastic matrix with smaller positive weights mixes more slowly than that
    ``lambda`` promises.

    Returns:
        ``CheckResult("weights_at_least_1_over_n", ...)``; ``value`` is the smallest self-weight or positive
        weight; the witness names the first (row-major) offending entry, e.g.
        ``"entry [0, 1] = 1e-06 is below 1/N = 0.5"``.

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.
        ParameterError: a bad ``tol``.

    Example:
        >>> check_weights_at_least_inverse_n([[0.999, 0.5], [0.001, 0.5]]).witness
        'entry [1, 0] = 0.001 is below 1/N = 0.5'
        >>> check_weights_at_least_inverse_n([[1.0, 0.5], [0.0, 0.5]]).holds
        True
    """
    tol = _check_tol(tol)
    mat = _matrix(W)
    n = mat.shape[0]
    floor = 1.0 / n
    diag = mat.diagonal()
    coo = mat.tocoo()  # canonical CSR: row-major order
    positive = coo.data > 0
    lowest = float(min(diag.min(), coo.data[positive].min() if positive.any() else np.inf))
    if lowest >= floor - tol:
        return CheckResult("weights_at_least_1_over_n", True, lowest, None)
    low_diag = np.flatnonzero(diag < floor - tol)
    low_entry = np.flatnonzero(positive & (coo.data < floor - tol))
    cands = [(int(i), int(i), float(diag[i])) for i in low_diag[:1]]
    cands += [(int(coo.row[k]), int(coo.col[k]), float(coo.data[k])) for k in low_entry[:1]]
    i, j, v = min(cands)
    return CheckResult("weights_at_least_1_over_n", False, lowest,
                       f"entry [{i}, {j}] = {_fmt(v)} is below 1/N = {_fmt(floor)}")


def min_self_weight(W: Any) -> float:
    """The smallest diagonal entry ``min_i W[i, i]`` (0 if some node has none).

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.

    Example:
        >>> min_self_weight([[0.75, 0.25], [0.5, 0.5]])
        0.5
    """
    return float(_matrix(W).diagonal().min())


# ---------------------------------------------------------------------------
# spectral quantities
# ---------------------------------------------------------------------------
def _mixing_is_exactly_one(mat: sp.csr_array) -> bool:
    """Whether a nonnegative doubly stochastic ``mat`` (within 1e-9) has, by its link structure alone, an
    eigenvalue ``1`` of a second invariant block or an eigenvalue ``-1``, so that ``max(|lambda_2|,
    |lambda_N|)`` and ``||W - 1 1^T / N||_2`` are exactly 1.

    That is the case when the undirected graph of ``W + W^T`` is disconnected (each block keeps its own mass)
    or bipartite with no self weight (the alternating-sign vector is flipped), by Perron-Frobenius. Deciding
    it combinatorially keeps the verdict ``< 1`` independent of ARPACK's round-off, which on large matrices
    (e.g. a 6000-node bipartite ring) lands near ``1 - 2e-12``.
    """
    if not check_doubly_stochastic(mat).holds:
        return False
    n = mat.shape[0]
    if n == 1:
        return False
    sym = sp.csr_array(_structure(mat) + _structure(mat).T)
    n_comp, _ = connected_components(sym, directed=False)
    if n_comp > 1:
        return True
    if (mat.diagonal() > 0).any():
        return False
    order, pred = breadth_first_order(sym, 0, directed=False, return_predecessors=True)
    side = np.zeros(n, dtype=np.int8)
    for v in order[1:]:
        side[v] = 1 - side[pred[v]]
    coo = sym.tocoo()
    return bool((side[coo.row] != side[coo.col]).all())


def second_eigenvalue_modulus(W: Any, *, tol: float = 1e-9) -> float:
    """``max(|lambda_2|, |lambda_N|)`` of a symmetric ``W`` (eigenvalues sorted decreasingly).

    For a symmetric doubly stochastic ``W`` this is the consensus contraction
    factor and equals :func:`mixing_norm`. Uses dense ``eigvalsh`` for
    ``N <= 500`` and ``scipy.sparse.linalg.eigsh`` from a fixed start vector otherwise (falling back to
    dense if ARPACK does not converge and ``N <= 5000``). Returns 0 for ``N = 1``, and exactly 1 for a
    nonnegative doubly stochastic ``W`` whose graph is disconnected or bipartite without self weights (its
    eigenvalue ``1`` repeats or ``-1`` is one), whatever the eigensolver's round-off.

    Args:
        W: a symmetric square matrix.
        tol: symmetry tolerance, as in :func:`check_symmetric`.

    Raises:
        ParameterError: ``W`` is not symmetric within ``tol`` (the message
            carries the witness).
        InvalidMatrixError: non-square, ragged or non-finite input.

    Example:
        >>> round(second_eigenvalue_modulus([[0.75, 0.25], [0.25, 0.75]]), 12)
        0.5
    """
    mat = _matrix(W)
    sym = check_symmetric(mat, tol=tol)
    if not sym.holds:
        raise ParameterError(f"second_eigenvalue_modulus needs a symmetric W: {sym.witness}")
    n = mat.shape[0]
    if n == 1:
        return 0.0
    if _mixing_is_exactly_one(mat):
        return 1.0
    if n > DENSE_SPECTRAL_LIMIT:
        sym_mat = sp.csr_array((mat + mat.T) * 0.5)
        try:
            v0 = np.random.default_rng(0).standard_normal(n)  # ARPACK's default start is random: not reproducible
            vals = np.sort(spla.eigsh(sym_mat, k=3, which="BE", v0=v0, return_eigenvectors=False))
            return float(max(abs(vals[-2]), abs(vals[0])))
        except spla.ArpackNoConvergence:
            if n > _DENSE_FALLBACK_LIMIT:
                raise
    dense = mat.toarray()
    vals = np.linalg.eigvalsh((dense + dense.T) * 0.5)  # ascending
    return float(max(abs(vals[-2]), abs(vals[0])))


def mixing_norm(W: Any) -> float:
    """The spectral norm ``||W - 1 1^T / N||_2``.

    Uses a dense SVD for ``N <= 500``; otherwise ``scipy.sparse.linalg.svds``
    on the operator ``x -> W x - mean(x) 1`` (adjoint ``y -> W^T y - mean(y) 1``),
    falling back to dense if ARPACK does not converge and ``N <= 5000``. Exactly 1 for a nonnegative doubly
    stochastic ``W`` whose graph is disconnected or bipartite without self weights, whatever the round-off.

    Raises:
        InvalidMatrixError: non-square, ragged or non-finite input.

    Example:
        >>> round(mixing_norm([[0.75, 0.25], [0.25, 0.75]]), 12)
        0.5
    """
    mat = _matrix(W)
    n = mat.shape[0]
    if _mixing_is_exactly_one(mat):
        return 1.0
    if n > DENSE_SPECTRAL_LIMIT:
        mat_t = sp.csr_array(mat.T)

        def matvec(x: np.ndarray) -> np.ndarray:
            x = np.asarray(x).reshape(-1)
            return mat @ x - x.mean()

        def rmatvec(y: np.ndarray) -> np.ndarray:
            y = np.asarray(y).reshape(-1)
            return mat_t @ y - y.mean()

        op = spla.LinearOperator((n, n), matvec=matvec, rmatvec=rmatvec, dtype=float)
        try:
            s = spla.svds(op, k=1, return_singular_vectors=False, random_state=0)
            return float(s[0])
        except spla.ArpackNoConvergence:
            if n > _DENSE_FALLBACK_LIMIT:
                raise
    return float(np.linalg.norm(mat.toarray() - 1.0 / n, 2))


# ---------------------------------------------------------------------------
# sequence-level checks
# ---------------------------------------------------------------------------
# How to aggregate CheckResult.value over rounds, per built-in check name.
_WORST: dict[str, Callable[[float, float], float]] = {
    "nonnegative": min,
    "row_stochastic": max,
    "column_stochastic": max,
    "doubly_stochastic": max,
    "symmetric": max,
    "strongly_connected": max,
    "connected_undirected": max,
    "positive_diagonal": min,
    "weights_at_least_1_over_n": min,
}


def check_each_round(
    seq: GraphSequence,
    check: Callable[[sp.csr_array], CheckResult],
    horizon: int | None = None,
    name: str | None = None,
    first: int = 1,
) -> SequenceCheck:
    """Run a per-matrix check on rounds ``first .. horizon``, stopping at the first failure.

    Args:
        seq: the sequence.
        check: a per-matrix check returning a :class:`CheckResult` (e.g.
            :func:`check_doubly_stochastic`, or a ``functools.partial`` of one
            with another ``tol``).
        horizon: rounds to examine; see :meth:`GraphSequence.resolve_horizon`.
        name: the result's name; default the check's own result name.
        first: the first round examined (e.g. 2 for a property of the gossip rounds after a local noising
            round); a horizon before it examines nothing, so the property holds.

    Returns:
        A :class:`SequenceCheck`; the witness is the failing round's witness
        prefixed by ``"round t: "``. ``value`` is the worst value over the
        examined rounds for the built-in checks (largest deviation / number of
        components, smallest entry / self-weight), ``None`` for other checks.

    Raises:
        ParameterError, RoundIndexError: a bad ``horizon`` or ``first``; a check that raises (naming it and the
            round) or returns something else than a :class:`CheckResult`.

    Example:
        >>> from topology.sequence import from_matrices
        >>> seq = from_matrices([[[0.5, 0.5], [0.5, 0.5]], [[1.0, 0.5], [0.0, 0.5]]])
        >>> res = check_each_round(seq, check_doubly_stochastic)
        >>> res.first_failure_round, res.witness
        (2, 'round 2: row 0 sums to 1.5')
    """
    if not callable(check):
        raise ParameterError(f"check must be callable, got {check!r}")
    if not _is_int(first) or first < 1:
        raise ParameterError(f"first must be an integer >= 1, got {first!r}")
    horizon = seq.resolve_horizon(horizon)
    result_name = name
    worst: float | None = None
    aggregate: Callable[[float, float], float] | None = None
    for t in range(int(first), horizon + 1):
        w = seq.weights(t)
        try:
            res = check(w)
        except TopologyError as exc:  # the check refused this round's matrix: its own class, with check and round
            raise type(exc)(f"check {name or getattr(check, '__name__', check)!r} at round {t}: {exc}") from exc
        except Exception as exc:  # a user's check: one line naming it and the round, not a traceback
            raise ParameterError(f"check {name or getattr(check, '__name__', check)!r} raised at round {t}: "
                                 f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(res, CheckResult):
            raise ParameterError(
                f"check must return a CheckResult, got {type(res).__name__} at round {t}"
            )
        if result_name is None:
            result_name = res.name
        if t == first:
            aggregate = _WORST.get(res.name)
        if aggregate is not None and res.value is not None:
            worst = res.value if worst is None else aggregate(worst, res.value)
        if not res.holds:
            witness = f"round {t}: {res.witness}" if res.witness else f"round {t}: check failed"
            return SequenceCheck(str(result_name), False, t, witness, worst)
    return SequenceCheck(str(result_name), True, None, None, worst)


def _validate_b(B: Any, horizon: int, windows: Any) -> int:
    if not _is_int(B) or B <= 0:
        raise ParameterError(f"B must be a positive integer, got {B!r}")
    if windows not in _WINDOW_KINDS:
        raise ParameterError(f"windows must be 'fixed' or 'sliding', got {windows!r}")
    if B > horizon:
        raise ParameterError(f"B={B} exceeds the horizon of {horizon} rounds")
    return int(B)


def _whole_period_horizon(seq: GraphSequence, B: int, windows: str) -> int:
    """Rounds whose windows of ``B`` rounds are every window of an infinite periodic sequence (period ``P``).

    Fixed windows ``[kB+1, (k+1)B]`` meet the period at every offset only over ``lcm(P, B)`` rounds; sliding
    windows need ``P + B - 1`` rounds (the last ones wrap around into the next period).
    """
    period = int(seq.period or 1)
    return math.lcm(period, B) if windows == "fixed" else period + B - 1


def _is_whole_periodic(seq: GraphSequence, horizon: int | None) -> bool:
    """Whether the caller asks about an infinite periodic sequence as a whole (no horizon given)."""
    return horizon is None and seq.length is None and seq.period is not None


class _Patterns:
    """Per-round 0/1 patterns of a sequence; with ``keep`` each is fetched only once."""

    def __init__(self, seq: GraphSequence, keep: bool) -> None:
        self._seq = seq
        self._keep = keep
        self._cache: dict[int, sp.csr_array] = {}

    def __call__(self, t: int) -> sp.csr_array:
        pat = self._cache.get(t)
        if pat is None:
            pat = _structure(self._seq.weights(t))
            if self._keep:
                self._cache[t] = pat
        return pat


def _union(patterns: list[sp.csr_array]) -> sp.csr_array:
    """Count matrix of the union of several patterns, built in one COO pass."""
    if len(patterns) == 1:
        return patterns[0]
    n = patterns[0].shape[0]
    rows = np.concatenate([np.repeat(np.arange(n), np.diff(p.indptr)) for p in patterns])
    cols = np.concatenate([p.indices for p in patterns])
    data = np.ones(cols.size, dtype=np.int32)
    return sp.csr_array(sp.coo_array((data, (rows, cols)), shape=(n, n)).tocsr())


def _window_result(B: int, union: sp.csr_array, start: int) -> tuple[int, str | None]:
    n_comp = _strong_components(union)
    if n_comp == 1:
        return 1, None
    pair = _unreachable_pair(union)
    assert pair is not None
    return n_comp, f"window [{start}, {start + B - 1}]: node {pair[0]} unreachable from node {pair[1]}"


def _b_check(patterns: _Patterns, B: int, horizon: int, windows: str) -> SequenceCheck:
    name = f"{B}-strongly_connected ({windows} windows)"
    worst = 0
    if windows == "fixed":
        for k in range(horizon // B):
            start = k * B + 1
            union = _union([patterns(t) for t in range(start, start + B)])
            n_comp, witness = _window_result(B, union, start)
            worst = max(worst, n_comp)
            if witness is not None:
                return SequenceCheck(name, False, start, witness, float(worst))
        return SequenceCheck(name, True, None, None, float(worst))
    # sliding: keep a count matrix of the rounds in the window, add one, drop one
    window: deque[sp.csr_array] = deque()
    counts: sp.csr_array | None = None
    for t in range(1, horizon + 1):
        pat = patterns(t)
        window.append(pat)
        counts = pat if counts is None else sp.csr_array(counts + pat)
        if len(window) > B:
            counts = sp.csr_array(counts - window.popleft())
            counts.eliminate_zeros()  # csgraph treats explicit zeros as edges
        if len(window) == B:
            start = t - B + 1
            n_comp, witness = _window_result(B, counts, start)
            worst = max(worst, n_comp)
            if witness is not None:
                return SequenceCheck(name, False, start, witness, float(worst))
    return SequenceCheck(name, True, None, None, float(worst))


def check_b_strongly_connected(
    seq: GraphSequence, B: int, horizon: int | None = None, windows: str = "fixed"
) -> SequenceCheck:
    """Check B-strong connectivity: the union of the links of every window of ``B`` rounds is strongly connected.

    Windows are ``"fixed"`` — ``[kB+1, (k+1)B]`` for ``k = 0, 1, ...`` while the
    window fits in the horizon (the definition of Cheng, Liao and Li, arXiv 2022; trailing rounds that do
    not fill a window are not examined) — or ``"sliding"`` — every
    ``[s, s+B-1]`` inside ``1 .. horizon``. The sliding check updates a count
    matrix incrementally (one addition and one subtraction per round).

    Args:
        seq: the sequence.
        B: the window length, a positive integer ``<= horizon``.
        horizon: rounds to examine; see :meth:`GraphSequence.resolve_horizon`. For an infinite periodic
            sequence without a horizon, every window of the sequence: ``lcm(period, B)`` rounds for fixed
            windows (every offset of a window in the period), ``period + B - 1`` for sliding ones.
        windows: ``"fixed"`` or ``"sliding"``.

    Returns:
        A :class:`SequenceCheck`; on failure the witness reads e.g.
        ``"window [9, 12]: node 4 unreachable from node 1"`` and
        ``first_failure_round`` is the first round of that window. ``value`` is
        the largest number of strong components over the examined windows.

    Raises:
        ParameterError: ``B`` not a positive integer, ``B > horizon``, an unknown
            ``windows``, or a bad ``horizon``.

    Example:
        >>> from topology.sequence import periodic
        >>> seq = periodic([[[1, 0], [1, 0]], [[0, 1], [0, 1]]])  # 0 -> 1, then 1 -> 0
        >>> check_b_strongly_connected(seq, 1, horizon=4).witness
        'window [1, 1]: node 0 unreachable from node 1'
        >>> check_b_strongly_connected(seq, 2, horizon=4).holds
        True
    """
    if _is_whole_periodic(seq, horizon):
        if not _is_int(B) or B <= 0:
            raise ParameterError(f"B must be a positive integer, got {B!r}")
        if windows not in _WINDOW_KINDS:
            raise ParameterError(f"windows must be 'fixed' or 'sliding', got {windows!r}")
        horizon = _whole_period_horizon(seq, int(B), windows)
    horizon = seq.resolve_horizon(horizon)
    B = _validate_b(B, horizon, windows)
    return _b_check(_Patterns(seq, keep=False), B, horizon, windows)


def _minimal_b_whole_period(seq: GraphSequence, windows: str, max_b: int | None) -> int | None:
    """:func:`minimal_b` of an infinite periodic sequence as a whole: ``B = 1, 2, ...`` up to ``max_b``
    (default the period, whose windows are unions of whole periods, if only fixed ones), each over
    :func:`_whole_period_horizon` rounds."""
    period = int(seq.period or 1)
    if max_b is None:
        max_b = period
    elif not _is_int(max_b) or max_b < 1:
        raise ParameterError(f"max_b must be a positive integer, got {max_b!r}")
    patterns = _Patterns(seq, keep=True)
    if _strong_components(_union([patterns(t) for t in range(1, period + 1)])) > 1:
        return None
    for b in range(1, int(max_b) + 1):
        if _b_check(patterns, b, _whole_period_horizon(seq, b, windows), windows).holds:
            return b
    return None


def minimal_b(
    seq: GraphSequence,
    horizon: int | None = None,
    windows: str = "fixed",
    max_b: int | None = None,
) -> int | None:
    """The smallest ``B`` for which :func:`check_b_strongly_connected` holds.

    With ``"fixed"`` windows the property is **not monotone** in ``B`` (e.g.
    it can hold for ``B = 3`` and fail for ``B = 4``, whose windows are
    aligned differently), so ``B = 1, 2, ...`` are tried in turn and the first
    that holds is returned. With ``"sliding"`` windows it is monotone (every
    window of ``B + 1`` rounds contains one of ``B`` rounds), and a binary
    search is used (``B = 1, 2, 4, ...`` until one holds, then bisection).
    Round patterns are fetched once and reused across ``B``. If the union of
    all rounds ``1 .. horizon`` is not strongly connected, ``None`` is returned
    at once. Worst case (fixed windows, no small ``B`` works) the cost is
    ``O(max_b^2 nnz)``.

    Args:
        seq: the sequence.
        horizon: rounds to examine; see :meth:`GraphSequence.resolve_horizon`. For an infinite periodic
            sequence without a horizon, every window of the sequence (as :func:`check_b_strongly_connected`)
            for ``B`` up to ``max_b`` (default the period).
        windows: ``"fixed"`` or ``"sliding"``.
        max_b: largest ``B`` to try (default: the horizon); ``1 <= max_b <= horizon``.

    Returns:
        The smallest such ``B``, or ``None`` if none up to ``max_b`` works.

    Raises:
        ParameterError: a bad ``windows``, ``max_b`` or ``horizon``.

    Example:
        >>> from topology.sequence import periodic
        >>> seq = periodic([[[1, 0], [1, 0]], [[0, 1], [0, 1]]])
        >>> minimal_b(seq, horizon=4)
        2
    """
    whole = _is_whole_periodic(seq, horizon)
    horizon = seq.resolve_horizon(horizon)
    if windows not in _WINDOW_KINDS:
        raise ParameterError(f"windows must be 'fixed' or 'sliding', got {windows!r}")
    if whole:
        return _minimal_b_whole_period(seq, windows, max_b)
    if max_b is None:
        max_b = horizon
    elif not _is_int(max_b) or max_b < 1:
        raise ParameterError(f"max_b must be a positive integer, got {max_b!r}")
    elif max_b > horizon:
        raise ParameterError(f"max_b={max_b} exceeds the horizon of {horizon} rounds")
    max_b = int(max_b)
    patterns = _Patterns(seq, keep=True)
    # quick exit: if even the union of all examined rounds is not strongly
    # connected, no window can be
    total = _union([patterns(t) for t in range(1, horizon + 1)])
    if _strong_components(total) > 1:
        return None
    if windows == "sliding":
        # exponential search for a B that holds, then bisection below it
        lo, hi = 1, 1
        while not _b_check(patterns, hi, horizon, windows).holds:
            if hi == max_b:
                return None
            lo, hi = hi + 1, min(2 * hi, max_b)
        while lo < hi:  # the property holds at hi and fails below lo
            mid = (lo + hi) // 2
            if _b_check(patterns, mid, horizon, windows).holds:
                hi = mid
            else:
                lo = mid + 1
        return lo
    for B in range(1, max_b + 1):
        if _b_check(patterns, B, horizon, windows).holds:
            return B
    return None
