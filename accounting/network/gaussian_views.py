"""Exact privacy loss of a linear Gaussian view under a mean shift.

An observer's view is ``y = A z + b`` with ``z ~ N(0, Sigma_z)`` the stacked
noise and ``b`` a deterministic mean that carries the private inputs. Under two
adjacent inputs the view's mean moves by a known vector ``m`` (e.g. ``m =
A_data e_u`` times the sensitivity) while its covariance ``C = A Sigma_z A^T``
stays the same. The two views are then ``N(b, C)`` and ``N(b + m, C)``:

* If ``m`` lies in ``range(C)``, the pair is the one-dimensional Gaussian
  mechanism with ``mu = sqrt(m^T C^+ m)`` (whiten on ``range(C)``, rotate the
  shift onto one axis; the directions orthogonal to the shift carry the same
  law under both inputs). Hence the exact Renyi divergence of every order
  ``D_alpha = alpha mu^2 / 2``, the KL divergence ``mu^2 / 2``, the privacy
  loss random variable ``N(mu^2/2, mu^2)`` and the exact privacy profile
  ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` (Balle and
  Wang, ICML 2018, Theorem 8; the mu-GDP of Dong, Roth and Su, JRSS-B 2022).
* If ``m`` has a component outside ``range(C)``, the two laws live on
  different affine subspaces: every divergence is ``+inf`` and ``delta(eps) =
  1`` for every ``eps``. This is reported (``in_range=False``), never dropped.

Numerics. ``Sigma_z = L L^T`` is factored (a vector of standard deviations or
a covariance matrix, possibly singular) and ``G = A L`` goes through one thin
SVD ``G = U S V^T``; ``C^+ = U_r S_r^-2 U_r^T`` on the numerical range. The
rank ``r`` counts singular values above ``rank_rtol * s_max`` (default
:data:`RANK_RTOL`); the range test compares the shift's residual outside
``span(U_r)`` with ``range_rtol * ||m||`` (default :data:`RANGE_RTOL`).

What the rank decision means for the value. A direction of ``range(C)``
counts fully, however weak: with ``m`` in the range, its share of ``mu^2``
does not shrink with its singular value. Singular values at rounding level
(at most ``max(k, m) * eps * s_max``, numpy's ``matrix_rank`` threshold) are
indistinguishable from exact dependencies and are treated as such, unless
entries of ``G`` at or below the tolerance (a tiny weight, not rounding) carry
a direction outside the kept range: :func:`faint_directions`. Those, and the
singular values between rounding level and the tolerance (``dropped``), are
*ambiguous*:
exact arithmetic may count them. So ``mu`` is exact (to rounding) when
``dropped == 0`` (:attr:`GaussianViewLoss.exact`). Otherwise it is not
certified: if the shift lies (within ``range_rtol``) in the kept range, the
dropped directions' share is missing and ``mu`` is a lower estimate; if the
shift has a larger component along them, the range test fails and ``mu`` is
reported infinite, unless it moves observed values that no noise reaches
(rows of ``G`` exactly zero, where no ambiguous direction lies): that
infinity is exact (:attr:`GaussianViewLoss.noise_free`). A finite value above a claimed bound is still a witness
against the claim; a value below it certifies nothing. Long gossip views are typically of the second
kind (their rows converge to the consensus and their spectrum decays
smoothly): there the value depends on the tolerance, and callers must say so.

Vector data: if every agent's input is a vector mixed coordinate-wise by the
same weights with i.i.d. noise per coordinate, the view factorizes over
coordinates and ``mu^2`` is the scalar value times the squared L2 norm of the
input change; pass that norm as the sensitivity.

Example:
    >>> import numpy as np
    >>> loss = gaussian_view_loss(np.eye(2), [1.0, 0.0], noise=1.0)
    >>> loss.mu, loss.renyi(2.0), loss.in_range
    (1.0, 1.0, True)
    >>> gaussian_view_loss(np.array([[1.0], [1.0]]), [1.0, 0.0]).renyi(2.0)
    inf
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.special import ndtr

from ..errors import AccountingError, PrivacyParameterError
from ..mechanisms import gaussian_delta

__all__ = [
    "RANK_RTOL",
    "RANGE_RTOL",
    "GaussianViewLoss",
    "gaussian_view_loss",
    "gaussian_view_losses",
    "faint_directions",
    "count_outside",
    "renyi_from_mu",
    "delta_from_mu",
]

RANK_RTOL = 1e-10
"""Singular values of ``A L`` at or below ``RANK_RTOL * s_max`` count as zero (numerical rank of ``C``)."""

RANGE_RTOL = 1e-8
"""A shift whose component outside ``range(C)`` exceeds ``RANGE_RTOL * ||m||`` is outside the range."""


def renyi_from_mu(mu: float, alpha: float) -> float:
    """Renyi divergence of order ``alpha`` between ``N(0, 1)`` and ``N(mu, 1)``: ``alpha mu^2 / 2``.

    Args:
        mu: the Gaussian-mechanism parameter, >= 0 (``inf`` allowed: the laws are singular).
        alpha: the order, >= 1 (1 is the KL divergence).

    Returns:
        The divergence (``inf`` when ``mu`` is infinite).

    Raises:
        PrivacyParameterError: ``mu`` negative or NaN, ``alpha`` < 1 or not finite.

    Example:
        >>> renyi_from_mu(2.0, 3.0)
        6.0
    """
    a = _check_alpha(alpha)
    if not mu >= 0:  # also NaN
        raise PrivacyParameterError(f"mu must be >= 0, got {mu!r}")
    return math.inf if math.isinf(mu) else a * mu * mu / 2.0


def delta_from_mu(mu: float, epsilon: float) -> float:
    """Exact privacy profile ``delta(epsilon)`` of the Gaussian mechanism with parameter ``mu``.

    ``delta = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` (Balle and Wang
    2018, Theorem 8), evaluated in log space by
    :func:`accounting.mechanisms.gaussian_delta` (sensitivity ``mu``, sigma 1)
    for ``epsilon > 0``; at ``epsilon = 0`` it is the total variation
    ``2 Phi(mu/2) - 1``. ``mu = 0`` gives 0 and ``mu = inf`` gives 1.

    Args:
        mu: >= 0 or ``inf``.
        epsilon: >= 0.

    Returns:
        delta in [0, 1].

    Raises:
        PrivacyParameterError: negative or NaN ``mu`` or ``epsilon``.

    Example:
        >>> round(delta_from_mu(1.0, 1.0), 6)
        0.126937
    """
    if not mu >= 0:
        raise PrivacyParameterError(f"mu must be >= 0, got {mu!r}")
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise PrivacyParameterError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    if math.isinf(mu):
        return 1.0
    if mu == 0:
        return 0.0
    if epsilon == 0:
        return float(2.0 * ndtr(mu / 2.0) - 1.0)
    return gaussian_delta(mu, 1.0, epsilon)


def _epsilon_by_bisection(mu: float, delta: float) -> float:
    """The exact epsilon at ``delta`` of the Gaussian mechanism with parameter ``mu`` (bisection on
    :func:`delta_from_mu`).

    0 when the total variation ``delta_from_mu(mu, 0)`` is at most ``delta``; else 100 halvings of ``[0, hi]``,
    ``hi`` the first power of two with ``delta_from_mu(mu, hi) <= delta``, and the upper end (the safe side).
    """
    if delta_from_mu(mu, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while delta_from_mu(mu, hi) > delta:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if delta_from_mu(mu, mid) > delta else (lo, mid)
    return hi


def _check_alpha(alpha: Any) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)):
        raise PrivacyParameterError(f"alpha must be a real number >= 1, got {alpha!r}")
    a = float(alpha)
    if not (a >= 1 and math.isfinite(a)):
        raise PrivacyParameterError(f"alpha must be a finite number >= 1, got {alpha!r}")
    return a


@dataclass(frozen=True)
class GaussianViewLoss:
    """The exact loss of one Gaussian view under one mean shift.

    Attributes:
        mu: ``sqrt(m^T C^+ m)``; ``inf`` when the shift leaves ``range(C)``
            or the observer holds the changed input itself.
        in_range: whether the shift lies in ``range(C)`` (within ``range_rtol``).
        range_residual: ``||m - P_C m|| / ||m||`` (0 for a zero shift).
        rank: numerical rank of ``C``.
        dropped: singular values of ``A L`` above rounding level but at or below the
            rank tolerance, or the directions entries at or below it may add outside the kept range
            (:func:`faint_directions`): ambiguous directions, treated as absent (module docstring).
        view_dim: dimension of the view (rows of ``A``).
        reason: why ``mu`` is infinite, ``""`` otherwise.
        kept_mu: ``mu`` of the view's kept directions (its projection on them, a function of the view):
            ``mu`` when the shift is in range; otherwise a lower bound of the exact-arithmetic ``mu``, the lower
            estimate when the shift left the range along ambiguous directions (``dropped > 0``).
        noise_free: the shift moves observed values that no noise reaches (rows of ``G`` exactly zero: no
            ambiguous direction can lie there) by more than ``range_rtol`` of its norm: ``mu = inf`` in exact
            arithmetic too, whatever ``dropped`` is (e.g. a raw value in a view that also has a faint link). A row
            zeroed by cancellation (weights of both signs) hides noise at rounding level at most: the loss is then
            finite but about ``(range_rtol / eps)^2 ~ 1e15`` times ``(shift / noise scale)^2``: beyond any claim.
    """

    mu: float
    in_range: bool
    range_residual: float
    rank: int
    dropped: int
    view_dim: int
    reason: str = ""
    kept_mu: float = math.nan
    noise_free: bool = False

    @property
    def exact(self) -> bool:
        """``True`` when no ambiguous direction was dropped (``dropped == 0``): ``mu`` is exact to rounding; or
        when the shift moves noise-free observed values (:attr:`noise_free`): ``mu = inf`` exactly.

        Otherwise a finite ``mu`` is a lower estimate of the exact-arithmetic value (module docstring).
        """
        return self.dropped == 0 or self.noise_free

    def renyi(self, alpha: float) -> float:
        """Exact Renyi divergence of order ``alpha`` (>= 1; 1 is KL): ``alpha mu^2 / 2``.

        Example:
            >>> GaussianViewLoss(2.0, True, 0.0, 1, 0, 1).renyi(2)
            4.0
        """
        return renyi_from_mu(self.mu, alpha)

    def kl(self) -> float:
        """KL divergence ``mu^2 / 2``, the mean of the privacy loss random variable ``N(mu^2/2, mu^2)``."""
        return renyi_from_mu(self.mu, 1.0)

    def delta(self, epsilon: float) -> float:
        """Exact ``delta(epsilon)`` (see :func:`delta_from_mu`)."""
        return delta_from_mu(self.mu, epsilon)

    def pld(self, value_discretization_interval: float = 1e-4) -> Any:
        """The privacy loss distribution (dp_accounting, pessimistic) of the pair: the Gaussian mechanism ``mu``.

        The privacy loss random variable is exactly ``N(mu^2/2, mu^2)``; dp_accounting discretizes it
        pessimistically, so composing it with other PLDs stays an upper bound.

        Raises:
            AccountingError: ``mu`` infinite or 0 (no PLD to build: delta is 1, resp. 0, at every epsilon).

        Example:
            >>> round(float(GaussianViewLoss(0.5, True, 0.0, 1, 0, 1).pld().get_delta_for_epsilon(1.0)), 6)
            0.00683
        """
        from dp_accounting.pld import privacy_loss_distribution

        if math.isinf(self.mu) or self.mu == 0:
            raise AccountingError(f"no PLD for mu = {self.mu}: delta(epsilon) is {1 if self.mu else 0} everywhere")
        return privacy_loss_distribution.from_gaussian_mechanism(
            1.0 / self.mu, sensitivity=1.0, value_discretization_interval=value_discretization_interval)

    def dp_event(self) -> Any:
        """The pair as a dp_accounting event: ``GaussianDpEvent(1 / mu)`` (``NonPrivateDpEvent`` if infinite).

        Example:
            >>> GaussianViewLoss(0.5, True, 0.0, 1, 0, 1).dp_event().noise_multiplier
            2.0
        """
        from dp_accounting import dp_event

        if math.isinf(self.mu):
            return dp_event.NonPrivateDpEvent()
        if self.mu == 0:
            return dp_event.NoOpDpEvent()
        return dp_event.GaussianDpEvent(noise_multiplier=1.0 / self.mu)


def _as_matrix(a: Any, name: str) -> np.ndarray:
    arr = np.asarray(a, dtype=float)
    if arr.ndim != 2:
        raise AccountingError(f"{name} must be a 2-D matrix, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise AccountingError(f"{name} has non-finite entries")
    return arr


def _noise_factor(noise: Any, m: int) -> np.ndarray | float:
    """``L`` with ``Sigma_z = L L^T``: a scalar, a vector of standard deviations, or a factor of a covariance."""
    arr = np.asarray(noise, dtype=float)
    if arr.ndim == 0:
        s = float(arr)
        if not (s >= 0 and math.isfinite(s)):
            raise PrivacyParameterError(f"noise (a standard deviation) must be finite and >= 0, got {noise!r}")
        return s
    if arr.ndim == 1:
        if arr.shape != (m,):
            raise AccountingError(f"noise: {arr.shape[0]} standard deviations for {m} noise columns")
        if not (np.isfinite(arr).all() and (arr >= 0).all()):
            bad = int(np.flatnonzero(~(np.isfinite(arr) & (arr >= 0)))[0])
            raise PrivacyParameterError(f"noise: standard deviation {bad} must be finite and >= 0, got {arr[bad]!r}")
        return arr
    if arr.shape != (m, m):
        raise AccountingError(f"noise covariance must be {m} x {m}, got shape {arr.shape}")
    if not np.isfinite(arr).all() or not np.allclose(arr, arr.T, rtol=1e-12, atol=1e-12 * max(1.0, abs(arr).max())):
        raise AccountingError("noise covariance must be finite and symmetric")
    w, v = sla.eigh(arr)
    if w.min(initial=0.0) < -1e-10 * max(1.0, w.max(initial=0.0)):
        raise AccountingError(f"noise covariance is not positive semidefinite (eigenvalue {w.min():.3g})")
    return np.asarray(v * np.sqrt(np.clip(w, 0.0, None)))


def count_outside(vectors: np.ndarray, basis: np.ndarray, range_rtol: float = RANGE_RTOL) -> int:
    """How many nonzero columns of ``vectors`` lie outside ``span(basis)``: residual above ``range_rtol`` of their norm.

    Args:
        vectors: ``(k, p)``; zero columns are skipped.
        basis: ``(k, r)``, orthonormal columns (``r`` may be 0).
        range_rtol: relative residual above which a column is outside.

    Returns:
        The number of such columns.

    Example:
        >>> count_outside(np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]]), np.array([[1.0], [0.0]]))
        1
    """
    norms = np.linalg.norm(vectors, axis=0)
    cols = np.flatnonzero(norms > 0)
    if not cols.size:
        return 0
    x = vectors[:, cols] / norms[cols]
    resid = np.linalg.norm(x - basis @ (basis.T @ x), axis=0) if basis.size else np.ones(cols.size)
    return int((resid > range_rtol).sum())


def faint_directions(g: np.ndarray, u: np.ndarray, v: np.ndarray, level: float,
                     range_rtol: float = RANGE_RTOL) -> int:
    """An upper bound on the directions of ``G`` that entries at or below ``level`` add to the kept ones.

    Write ``G = S + E``, ``E`` the entries with ``0 < |g_ij| <= level`` (the rank threshold). Their directions
    have singular values at most ``||E||``: the rank decision drops them, at rounding level without counting
    them, yet in exact arithmetic they count fully (a link weight ``1e-17`` lets a neighbour of its end solve for
    the other end's noisy value, however strongly that value also reaches the view mixed with others).
    ``range(G)`` lies in ``range(S) + span(E's columns)`` and its row space in ``rowspace(S) + span(E's rows)``;
    ``S`` has no direction the kept ones miss beyond rounding (the rounding policy, module docstring). So no
    direction is missed when every column part of ``E`` lies in ``span(u)`` or every row part in ``span(v)``
    (:func:`count_outside`); else the smaller count of those outside bounds the missed ones.

    Args:
        g: ``(k, m)``: the noise map times the noise factor.
        u, v: ``(k, r)``, ``(m, r)``: orthonormal bases of the kept column and row spaces.
        level: the rank threshold (``rank_rtol`` times the largest singular value).
        range_rtol: relative residual above which a part is outside the kept space.

    Returns:
        0 when no faint entry can add a direction, else that bound (each an ambiguous direction,
        :attr:`GaussianViewLoss.dropped`).

    Example:
        >>> g = np.array([[1.0, 0.0], [0.5, 1e-17]])  # the second variable is seen at 1e-17 only
        >>> u, v = np.array([[1.0], [0.5]]) / np.sqrt(1.25), np.array([[1.0], [0.0]])
        >>> faint_directions(g, u, v, 1e-10)
        1
    """
    faint = (g != 0) & (np.abs(g) <= level)
    if not faint.any():
        return 0
    e = np.where(faint, g, 0.0)
    cols = count_outside(e, u, range_rtol)
    return min(cols, count_outside(e.T, v, range_rtol)) if cols else 0


def gaussian_view_losses(noise_map: Any, shifts: Any, *, noise: Any = 1.0, rank_rtol: float = RANK_RTOL,
                         range_rtol: float = RANGE_RTOL) -> list[GaussianViewLoss]:
    """Exact losses of the view ``y = noise_map z + b`` under several mean shifts (one SVD for all).

    Args:
        noise_map: ``A``, shape ``(k, m)``: how the ``m`` noise variables enter the ``k`` observed values.
        shifts: shape ``(k,)`` or ``(k, s)``: the mean shifts (columns), e.g. ``A_data[:, u] * sensitivity``.
        noise: the law of ``z``: a standard deviation (scalar, i.i.d.), ``m`` standard deviations
            (independent), or an ``m x m`` covariance (positive semidefinite, possibly singular).
        rank_rtol: relative singular-value tolerance of the rank decision (:data:`RANK_RTOL`).
        range_rtol: relative tolerance of the range test (:data:`RANGE_RTOL`).

    Returns:
        One :class:`GaussianViewLoss` per shift.

    Raises:
        AccountingError: shapes that do not match, non-finite entries, a covariance that is not
            positive semidefinite, a tolerance outside (0, 1).

    Example:
        >>> import numpy as np
        >>> A = np.array([[1.0, 1.0], [1.0, 1.0]])  # two copies of z0 + z1: rank 1
        >>> [round(x.mu ** 2, 12) for x in gaussian_view_losses(A, np.array([[1.0, 1.0], [1.0, -1.0]]))]
        [0.5, inf]

    (``C = 2 [[1, 1], [1, 1]]`` has eigenvalue 4 on ``(1, 1)/sqrt(2)``, so ``(1, 1)`` gives ``2 / 4``; the
    shift ``(1, -1)`` is orthogonal to ``range(C)``.)
    """
    for name, tol in (("rank_rtol", rank_rtol), ("range_rtol", range_rtol)):
        if not (isinstance(tol, (int, float)) and 0 < tol < 1):
            raise AccountingError(f"{name} must lie in (0, 1), got {tol!r}")
    a = _as_matrix(noise_map, "noise_map")
    k, m = a.shape
    sh = np.asarray(shifts, dtype=float)
    single = sh.ndim == 1
    if single:
        sh = sh[:, None]
    if sh.ndim != 2 or sh.shape[0] != k:
        raise AccountingError(f"shifts must have {k} rows (one per observed value), got shape {np.shape(shifts)}")
    if not np.isfinite(sh).all():
        raise AccountingError("shifts have non-finite entries")
    factor = _noise_factor(noise, m)
    g = a * factor if np.ndim(factor) <= 1 else a @ factor
    if g.size == 0 or not np.any(g):
        u = np.zeros((k, 0))
        s = np.zeros(0)
        rank, dropped = 0, 0
    else:
        if k < m:  # LAPACK is much faster on the tall orientation: G^T = V S U^T
            v, s_all, ut = sla.svd(g.T, full_matrices=False, lapack_driver="gesdd", check_finite=False)
            u = ut.T
        else:
            u, s_all, vt = sla.svd(g, full_matrices=False, lapack_driver="gesdd", check_finite=False)
            v = vt.T
        keep = s_all > rank_rtol * s_all[0]
        rank = int(keep.sum())
        rounding = max(k, m) * np.finfo(float).eps * s_all[0]
        dropped = int((s_all[~keep] > rounding).sum())
        u, s = u[:, :rank], s_all[:rank]
        if not dropped:  # already ambiguous otherwise; faint entries may carry directions it missed
            dropped = faint_directions(g, u, v[:, :rank], rank_rtol * s_all[0], range_rtol)
    coef = u.T @ sh  # (r, s)
    norms = np.linalg.norm(sh, axis=0)
    resid = np.linalg.norm(sh - u @ coef, axis=0)
    free = np.linalg.norm(sh[~np.any(g != 0, axis=1)], axis=0)  # the shift on values no noise reaches
    mu2 = np.sum((coef / s[:, None]) ** 2, axis=0) if rank else np.zeros(sh.shape[1])
    out = []
    for j in range(sh.shape[1]):
        rel = float(resid[j] / norms[j]) if norms[j] > 0 else 0.0
        inside = rel <= range_rtol
        out.append(GaussianViewLoss(
            mu=float(math.sqrt(mu2[j])) if inside else math.inf, in_range=bool(inside), range_residual=rel,
            rank=rank, dropped=dropped, view_dim=k,
            reason="" if inside else f"the mean shift leaves range(C) (relative residual {rel:.3g})",
            kept_mu=float(math.sqrt(mu2[j])), noise_free=bool(free[j] > range_rtol * norms[j])))
    return out


def gaussian_view_loss(noise_map: Any, shift: Sequence[float] | np.ndarray, *, noise: Any = 1.0,
                       rank_rtol: float = RANK_RTOL, range_rtol: float = RANGE_RTOL) -> GaussianViewLoss:
    """Exact loss of the view ``y = noise_map z + b`` under one mean shift (see :func:`gaussian_view_losses`).

    Args:
        noise_map: ``A``, shape ``(k, m)``.
        shift: shape ``(k,)``.
        noise: standard deviation(s) or covariance of ``z`` (as in :func:`gaussian_view_losses`).
        rank_rtol: rank tolerance.
        range_rtol: range-test tolerance.

    Returns:
        The :class:`GaussianViewLoss`.

    Raises:
        AccountingError: as :func:`gaussian_view_losses`; a shift that is not one vector.

    Example:
        >>> round(gaussian_view_loss([[2.0, 0.0]], [1.0], noise=[0.5, 3.0]).mu, 12)
        1.0
    """
    sh = np.asarray(shift, dtype=float)
    if sh.ndim != 1:
        raise AccountingError(f"shift must be one vector, got shape {sh.shape}")
    return gaussian_view_losses(noise_map, sh, noise=noise, rank_rtol=rank_rtol, range_rtol=range_rtol)[0]
