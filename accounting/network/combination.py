"""Combining per-schedule Renyi divergences over a data-independent schedule the observer sees.

If the schedule ``S`` is drawn independently of the data and the observer
sees it, the view is ``(S, y)`` with ``p(S, y) = p(S) p(y | S)`` under both
inputs, and the Renyi divergence of order ``alpha > 1`` of the pair is

    D_alpha = 1/(alpha - 1) * log E_S exp((alpha - 1) D_alpha(. | S))

(the integral over ``y`` for fixed ``S`` is ``exp((alpha - 1) D_alpha(.|S))``;
``p(S)`` factors out). Only samples of ``S`` are available, so
:func:`combine_renyi` returns the plug-in estimate and a one-sided upper
confidence bound.

The bound. Put ``X = exp((alpha - 1) D_alpha(. | S))``. With a number
``D_max`` that bounds ``D_alpha(. | S)`` for *every* schedule (e.g. the
eavesdropper's exact divergence when it does not depend on the schedule, or
any valid worst-case bound: by data processing every observer is below the
eavesdropper), ``X`` lies in ``[1, B]``, ``B = exp((alpha - 1) D_max)``, and
with probability at least ``1 - confidence_gap`` over the ``n`` i.i.d.
samples, ``E X`` is at most the smaller of

* Hoeffding (1963), one-sided: ``mean + (B - 1) sqrt(ln(1/g) / (2 n))``;
* the empirical Bernstein bound of Maurer and Pontil (COLT 2009, Theorem 4):
  ``mean + sqrt(2 V ln(2/g) / n) + 7 (B - 1) ln(2/g) / (3 (n - 1))``,
  ``V`` the unbiased sample variance,

each at ``g = confidence_gap / 2`` (a union bound, so both hold together), then
clipped to ``B`` (``E X <= B`` always). The divergence bound is
``log(that) / (alpha - 1)``. Both bounds need the range ``[1, B]``: a sample
above ``D_max`` means the stated ``D_max`` is not a bound, and is an error.
When ``B`` is huge (large ``alpha`` or ``D_max``) the bound is loose but
valid; it never exceeds ``D_max``.

Example:
    >>> est = combine_renyi([0.5, 0.5, 0.5, 0.5], alpha=2.0, d_max=1.0)
    >>> round(est.estimate, 12), est.upper <= 1.0, est.upper > est.estimate
    (0.5, True, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ..errors import AccountingError, PrivacyParameterError

__all__ = ["CombinedRenyi", "combine_renyi"]


@dataclass(frozen=True)
class CombinedRenyi:
    """The combined Renyi divergence over sampled schedules.

    Attributes:
        alpha: the order.
        estimate: ``1/(alpha-1) log mean exp((alpha-1) D_i)``: consistent, biased low (Jensen).
        upper: the one-sided upper confidence bound (module docstring).
        confidence: ``1 - confidence_gap``.
        samples: number of schedules.
        d_max: the per-schedule bound used.
        bound: which bound gave ``upper``: ``"hoeffding"``, ``"empirical-bernstein"`` or ``"d_max"``.
    """

    alpha: float
    estimate: float
    upper: float
    confidence: float
    samples: int
    d_max: float
    bound: str


def combine_renyi(divergences: Sequence[float] | np.ndarray, alpha: float, d_max: float,
                  confidence_gap: float = 0.05) -> CombinedRenyi:
    """Estimate and upper-bound ``1/(alpha-1) log E_S exp((alpha-1) D_alpha(.|S))`` from sampled schedules.

    Args:
        divergences: ``D_alpha(. | S_i)`` for i.i.d. sampled schedules ``S_i`` (finite, >= 0).
        alpha: the order, > 1.
        d_max: a bound on ``D_alpha(. | S)`` valid for every schedule, >= every sample.
        confidence_gap: the bound holds with probability >= 1 - confidence_gap, in (0, 1).

    Returns:
        The :class:`CombinedRenyi`.

    Raises:
        PrivacyParameterError: ``alpha <= 1``, ``confidence_gap`` outside (0, 1), ``d_max`` negative or
            not finite.
        AccountingError: no samples, a non-finite or negative sample, or a sample above ``d_max`` (naming it).

    Example:
        >>> r = combine_renyi([0.1] * 1000, alpha=2.0, d_max=2.0)
        >>> round(r.estimate, 12), round(r.upper, 3), r.bound
        (0.1, 0.157, 'empirical-bernstein')
    """
    if isinstance(alpha, bool) or not (alpha > 1 and math.isfinite(alpha)):
        raise PrivacyParameterError(f"alpha must be a finite number > 1, got {alpha!r}")
    if not (0 < confidence_gap < 1):
        raise PrivacyParameterError(f"confidence_gap must lie in (0, 1), got {confidence_gap!r}")
    if not (d_max >= 0 and math.isfinite(d_max)):
        raise PrivacyParameterError(f"d_max must be a finite number >= 0, got {d_max!r}")
    d = np.asarray(divergences, dtype=float).ravel()
    if d.size == 0:
        raise AccountingError("divergences: no sampled schedules")
    bad = np.flatnonzero(~np.isfinite(d) | (d < 0))
    if bad.size:
        raise AccountingError(f"divergences: sample {int(bad[0])} is {d[bad[0]]!r}; each must be finite and >= 0 "
                              "(an infinite per-schedule divergence makes the combination infinite)")
    over = np.flatnonzero(d > d_max * (1 + 1e-12) + 1e-15)
    if over.size:
        raise AccountingError(f"divergences: sample {int(over[0])} = {d[over[0]]!r} exceeds d_max = {d_max!r}, "
                              "so d_max does not bound every schedule")
    a1 = alpha - 1.0
    n = d.size
    log_mean = float(logsumexp(a1 * d) - math.log(n))
    estimate = log_mean / a1
    # bounds on E X, X = exp(a1 D) in [1, B]; work with X - 1 scaled by (B - 1) to avoid overflow
    log_b = a1 * d_max
    if log_b == 0.0:
        return CombinedRenyi(alpha, estimate, 0.0, 1 - confidence_gap, n, d_max, "d_max")
    span = math.expm1(log_b) if log_b < 700 else math.inf  # B - 1
    g = confidence_gap / 2
    if math.isinf(span):
        return CombinedRenyi(alpha, estimate, d_max, 1 - confidence_gap, n, d_max, "d_max")
    x = np.exp(a1 * d)
    mean = float(x.mean())
    hoeff = mean + span * math.sqrt(math.log(1 / g) / (2 * n))
    if n > 1:
        var = float(x.var(ddof=1))
        bern = mean + math.sqrt(2 * var * math.log(2 / g) / n) + 7 * span * math.log(2 / g) / (3 * (n - 1))
    else:
        bern = math.inf
    ub, name = (hoeff, "hoeffding") if hoeff <= bern else (bern, "empirical-bernstein")
    if ub >= 1 + span:
        return CombinedRenyi(alpha, estimate, d_max, 1 - confidence_gap, n, d_max, "d_max")
    return CombinedRenyi(alpha, estimate, math.log(ub) / a1, 1 - confidence_gap, n, d_max, name)
