"""The row space of a view streamed block by block: an orthonormal basis and its ambiguous directions.

``row_space_basis`` builds the basis batch by batch (block Gram-Schmidt
with a Householder QR of each batch's residual), so a view with many more rows
than columns (one observer's messages over all gossip steps, :mod:`.muffliato`)
is never stacked; it counts the directions whose singular value lies between
rounding and the rank tolerance, as :mod:`.gaussian_views` does for one SVD.

Example:
    >>> q, dropped = row_space_basis([np.eye(3)[:2], np.ones((1, 3))])
    >>> q.shape, dropped
    ((3, 3), 0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import scipy.linalg as sla
from scipy.linalg import blas, lapack

from ..errors import AccountingError
from .gaussian_views import RANK_RTOL

__all__ = ["row_space_basis"]


def row_space_basis(blocks: Iterable[np.ndarray], rank_rtol: float = RANK_RTOL, batch_rows: int = 256
                    ) -> tuple[np.ndarray, int]:
    """An orthonormal basis of the span of the rows of ``blocks``, built batch by batch (block Gram-Schmidt).

    Rows are gathered into batches of at least ``batch_rows``. Each batch
    ``R`` is projected once off the current basis ``Q`` (classical
    Gram-Schmidt, ``R - (R Q) Q^T``); its new directions are the right
    singular vectors of the residual, obtained from a blocked Householder QR
    of the residual's transpose and an SVD of the small triangular factor
    (the singular values and vectors of an SVD of the wide residual, for a
    fraction of the work), and kept if their singular value exceeds
    ``rank_rtol`` times the largest row norm seen so far. The kept directions
    are projected off ``Q`` once more, a second time only if that shrank one
    of them below ``1/sqrt(2)`` of its length (the reorthogonalization
    criterion of Daniel, Gragg, Kaufman and Stewart, Math. Comp. 1976), and
    re-orthonormalized through the eigendecomposition of their small Gram
    matrix (they are orthonormal up to rounding, so its condition is near
    1); one whose norm falls below 1/2 in that step was rounding, and is
    counted as dropped. The basis lives in one preallocated buffer (no copy
    per batch). Cost ``O(k n r)`` for ``k`` rows of length ``n`` and rank
    ``r``, against ``O(k n^2)`` for an SVD of the stacked rows.

    One projection of the batch suffices: it leaves a rounding-level
    component along ``Q`` in the residual (about ``sqrt(n) eps`` times the
    batch's norm, from the inner products ``R Q``), which moves the
    residual's singular values by that much (Weyl's inequality), many orders
    below the deflation threshold, and only tilts the kept directions
    towards ``Q``, which their own projection removes. What it could change
    is the count of ambiguous directions (singular values between rounding
    and the threshold), so those directions are projected off ``Q`` too and
    counted by the singular values of what lies outside ``Q`` (views whose
    weak directions are exact dependencies keep ``dropped == 0``). The
    orthonormality of the result is checked at the end.

    Where the view has ambiguous directions (``dropped > 0``), the kept
    subspace depends on how the rows are batched and on the rounding of the
    steps (a direction that is weak within one batch may be kept in another
    grouping; among the weakest directions the choice is not stable under
    rounding-level changes of the input): every result spans a subspace of
    the row space, so every value is a lower estimate, but the estimates
    differ. On the N = 2048 grid and random geometric graph, batches of 128
    rows instead of 256 keep 5 % more directions and raise single values by
    up to 0.6; replacing the SVD of the residual by the QR route above, and
    the second projection of each batch by the single one, moved single
    values by up to 0.3 with the same number of directions within 2 of
    1200. The default is fixed so that the values are reproducible.

    Args:
        blocks: arrays of shape ``(d_i, n)``.
        rank_rtol: relative tolerance of the deflation.
        batch_rows: rows per batch (larger batches use BLAS better), >= 1.

    Returns:
        ``(Q, dropped)``: ``Q`` of shape ``(n, r)`` with orthonormal columns, and the number of residual
        directions with a singular value above rounding level (``n * eps`` times the largest row norm)
        but at or below the tolerance, or lost to rounding in the re-orthonormalization.

    Raises:
        AccountingError: the basis lost orthogonality all the same (a squared row norm of ``Q`` above
            ``1 + 1e-6``, or more directions than ``n``); a LAPACK routine failed.

    Example:
        >>> q, dropped = row_space_basis([np.array([[1.0, 1.0, 0.0]]), np.array([[2.0, 2.0, 0.0], [0, 0, 3.0]])],
        ...                              batch_rows=1)
        >>> q.shape, np.round(np.sum(q**2, axis=1), 12).tolist()  # (2, 2, 0) adds no direction
        ((3, 2), [0.5, 0.5, 1.0])
    """
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer)) or batch_rows < 1:
        raise AccountingError(f"batch_rows must be an integer >= 1, got {batch_rows!r}")
    buf: np.ndarray | None = None  # (n, capacity), Fortran order: the basis is buf[:, :rank]
    rank = 0
    scale = 0.0
    dropped = 0
    eps = np.finfo(float).eps

    def subtract(x: np.ndarray, q: np.ndarray, coef: np.ndarray) -> None:
        """``x -= q coef`` in place (one BLAS call, no ``(n, k)`` temporary when ``x`` is in Fortran order)."""
        out = blas.dgemm(-1.0, q, coef, beta=1.0, c=x, overwrite_c=1)
        if not np.may_share_memory(out, x):  # BLAS worked on a copy (x not in Fortran order)
            x[...] = out

    def project(x: np.ndarray, q: np.ndarray) -> None:
        """``x -= q (q^T x)`` in place, ``x`` of shape ``(n, k)``, ``q`` in Fortran order."""
        subtract(x, q, blas.dgemm(1.0, q, x, trans_a=1))

    def absorb(r: np.ndarray) -> None:
        nonlocal buf, rank, dropped
        assert buf is not None
        q = buf[:, :rank]
        if rank:
            project(r.T, q)  # r^T is the Fortran view of the C-ordered batch: projected in place
        b, n = r.shape
        m = min(b, n)
        # r^T = H [R; 0] (blocked Householder QR, in place on the Fortran view r^T), R = U S Y^T:
        # r = Y S (H [U; 0])^T, so the right singular vectors of r are H [U; 0]
        qr, tfac, info = lapack.dgeqrt(min(32, m), r.T, overwrite_a=1)
        if info:
            raise AccountingError(f"row_space_basis: LAPACK dgeqrt failed (info={info})")
        u, sv, _ = sla.svd(np.triu(qr[:m]), full_matrices=False, check_finite=False)
        keep = sv > rank_rtol * scale
        band = ~keep & (sv > n * eps * scale)  # ambiguous: above rounding, at or below the tolerance
        k = int(keep.sum())
        # the single projection leaves rounding along Q in the residual; the band's directions are
        # projected off Q too, so that only what lies outside the basis is counted as ambiguous
        recheck = bool(rank and band.any())
        if not recheck:
            dropped += int(band.sum())
        cols = keep | band if recheck else keep
        if not cols.any():
            return
        c = np.zeros((n, int(cols.sum())), order="F")
        c[:m] = u[:, cols]  # the kept directions first (singular values in decreasing order)
        z, info = lapack.dgemqrt(qr[:, :m], tfac, c, side="L", trans="N", overwrite_c=1)
        if info:
            raise AccountingError(f"row_space_basis: LAPACK dgemqrt failed (info={info})")
        if rank:
            coef = blas.dgemm(1.0, q, z, trans_a=1)  # Q^T z, for the kept and the band directions
            if k:
                subtract(z[:, :k], q, coef[:, :k])
                if np.linalg.norm(z[:, :k], axis=0).min() < math.sqrt(0.5):
                    project(z[:, :k], q)
        if recheck:
            # the band's residual outside Q is Y_b S_b (P z_b)^T, with (P z_b)^T P z_b = z_b^T z_b - c_b^T c_b
            # (c_b = Q^T z_b): the subtraction loses about n eps of each entry of this Gram matrix, that is
            # n eps sv^2 <= n eps (rank_rtol scale)^2 of its eigenvalues, far below the rounding level squared
            zb, cb, sb = z[:, k:], coef[:, k:], sv[band]
            gram = (zb.T @ zb - cb.T @ cb) * sb[:, None] * sb[None, :]
            outside = sla.eigvalsh(gram, check_finite=False)
            dropped += int((outside > (n * eps * scale) ** 2).sum())
        if not k:
            return
        new = z[:, :k]
        # new = Z S Y^T: its Gram Y S^2 Y^T gives Z = new Y / S on the directions with S > 1/2
        s2, y = sla.eigh(new.T @ new, check_finite=False)
        good = s2 > 0.25
        dropped += int((~good).sum())
        if not good.any():
            return
        add = new @ (y[:, good] / np.sqrt(s2[good]))
        if rank + add.shape[1] > buf.shape[1]:
            grown = np.zeros((buf.shape[0], min(buf.shape[0] + 1, max(2 * buf.shape[1], rank + add.shape[1]))),
                             order="F")
            grown[:, :rank] = buf[:, :rank]
            buf = grown
        buf[:, rank:rank + add.shape[1]] = add
        rank += add.shape[1]

    def batch(parts: list[np.ndarray]) -> np.ndarray:
        """The rows stacked in C order (their transpose, the Fortran view, is what LAPACK factors in place)."""
        out = np.empty((sum(p.shape[0] for p in parts), parts[0].shape[1]))
        return np.concatenate(parts, axis=0, out=out)

    pending: list[np.ndarray] = []
    count = 0
    for block in blocks:
        r = np.asarray(block, dtype=float)
        if r.size == 0:
            continue
        scale = max(scale, float(np.linalg.norm(r, axis=1).max()))
        if buf is None:
            buf = np.zeros((r.shape[1], min(r.shape[1] + 1, max(64, 2 * batch_rows))), order="F")
        pending.append(r)
        count += r.shape[0]
        if count >= batch_rows:
            absorb(batch(pending))
            pending, count = [], 0
    if buf is None:
        return np.zeros((0, 0)), dropped
    if pending:
        absorb(batch(pending))
    q = buf[:, :rank]
    worst = float(np.max(np.einsum("ij,ij->i", q, q), initial=0.0))
    if rank > q.shape[0] or worst > 1 + 1e-6:
        raise AccountingError(f"row_space_basis: the basis lost orthogonality (rank {rank} for dimension "
                              f"{q.shape[0]}, largest squared row norm {worst:.6g}); rank_rtol={rank_rtol!r} is "
                              "too small for the rounding of these rows")
    return q, dropped
