"""Auditors: empirical evidence about a privacy claim from samples.

* :func:`plrv_audit` — white-box. Given exact privacy losses ``L`` of
  transcripts sampled under ``P`` (see :mod:`accounting.replay`): for pure DP
  any ``L > epsilon`` (beyond float tolerance) *proves* a violation, and is
  returned as a witness; for approximate DP it estimates
  ``delta(epsilon) = E_P[(1 - exp(epsilon - L))_+]`` with a one-sided upper and
  lower confidence bound (Hoeffding: the summand lies in ``[0, 1]``).
* :func:`blackbox_audit` — when no replay exists. For a scalar statistic of
  the output sampled under ``P`` and ``P'``, a threshold event is chosen on the
  first half of the samples; on the second half its probabilities under both
  problems get Clopper–Pearson intervals, giving a lower bound on epsilon that
  holds with confidence ``1 - alpha`` (the approach of DP-Sniper and StatDP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import PrivacyParameterError

__all__ = ["LOWER_BOUNDS", "PLRVReport", "plrv_audit", "BlackBoxReport", "blackbox_audit", "clopper_pearson", "clopper_pearson_many",
           "clopper_pearson_bound_many", "hoeffding_half_width"]

FLOAT_TOLERANCE = 1e-9
"""Relative slack before ``L > epsilon`` counts as a violation (round-off in the replay)."""

LOWER_BOUNDS: tuple[str, ...] = ("hoeffding", "thresholds", "bernstein", "best")
"""The lower bounds on ``delta(epsilon)`` :func:`plrv_audit` can use (see :mod:`accounting.delta_bounds`)."""


def _check_epsilon(epsilon: float, delta: float = 0.0) -> float:
    """``epsilon > 0``, or ``>= 0`` for a claim with ``delta > 0`` (``delta(0)``: the total variation distance)."""
    real = isinstance(epsilon, (int, float, np.floating)) and not isinstance(epsilon, bool) and not math.isnan(epsilon)
    approximate = isinstance(delta, (int, float, np.floating)) and delta > 0
    if approximate and not (real and epsilon >= 0):
        raise PrivacyParameterError(f"epsilon must be >= 0 for a claim with delta > 0, got {epsilon!r}")
    if not approximate and not (real and epsilon > 0):
        raise PrivacyParameterError(f"epsilon must be > 0, got {epsilon!r}")
    return float(epsilon)


def _check_level(name: str, value: float) -> float:
    if not (isinstance(value, (int, float, np.floating)) and 0 < value < 1):
        raise PrivacyParameterError(f"{name} must be in (0, 1), got {value!r}")
    return float(value)


@dataclass(frozen=True)
class PLRVReport:
    """Outcome of :func:`plrv_audit`.

    Attributes:
        epsilon, delta: the claim audited.
        runs: number of transcripts.
        max_loss: the largest privacy loss observed.
        exceed_fraction: fraction of transcripts with ``L > epsilon``.
        violation: ``True`` if the claim is refuted (pure DP: some
            ``L > epsilon``; approximate DP: the lower confidence bound on
            ``delta(epsilon)`` exceeds ``delta``).
        witness: index of the worst transcript when a pure-DP violation is found.
        delta_estimate, delta_lower, delta_upper: the estimate of
            ``delta(epsilon)`` and its confidence bounds.
        confidence: the level of those bounds.
        lower_method: the method of ``delta_lower`` (see :func:`plrv_audit`).
    """

    epsilon: float
    delta: float
    runs: int
    max_loss: float
    exceed_fraction: float
    violation: bool
    witness: int | None
    delta_estimate: float
    delta_lower: float
    delta_upper: float
    confidence: float
    lower_method: str = "hoeffding"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def plrv_audit(losses: np.ndarray, epsilon: float, delta: float = 0.0, *, confidence: float = 0.95,
               lower_bound: str = "hoeffding") -> PLRVReport:
    """Audit an (epsilon, delta) claim from exact privacy losses sampled under ``P``.

    The upper bound on ``delta(epsilon)`` is Hoeffding's. The lower bound,
    which decides a violation of a claim with ``delta > 0``, is Hoeffding's
    (``lower_bound="hoeffding"``, the default) or one of
    :mod:`accounting.delta_bounds`: ``"thresholds"``
    (:func:`~accounting.delta_bounds.threshold_delta_lower`, about 20x
    tighter for small deltas), ``"bernstein"`` or ``"best"`` (thresholds and
    Bernstein at half the failure probability each); all at ``confidence``.

    Args:
        losses: ``L`` of each sampled transcript (from :func:`accounting.replay.replay_loss`).
        epsilon: the claimed epsilon (> 0; 0 allowed with ``delta > 0``: then ``delta(0)``, the total
            variation distance, is audited).
        delta: the claimed delta (0 for pure DP).
        confidence: level of the bounds on ``delta(epsilon)``.
        lower_bound: ``"hoeffding"``, ``"thresholds"``, ``"bernstein"`` or ``"best"`` (:data:`LOWER_BOUNDS`).

    Returns:
        A :class:`PLRVReport`.

    Raises:
        PrivacyParameterError: a bad epsilon, delta, confidence or lower bound method, or no losses.

    Example:
        >>> plrv_audit(np.array([0.1, 0.4]), epsilon=0.5).violation
        False
        >>> losses = np.r_[np.zeros(970), np.full(30, 9.0)]  # delta(1) is 0.03
        >>> plrv_audit(losses, 1.0, 1e-3).violation, plrv_audit(losses, 1.0, 1e-3, lower_bound="thresholds").violation
        (False, True)
    """
    eps = _check_epsilon(epsilon, delta)
    if not (0 <= delta < 1):
        raise PrivacyParameterError(f"delta must be in [0, 1), got {delta!r}")
    conf = _check_level("confidence", confidence)
    if lower_bound not in LOWER_BOUNDS:
        raise PrivacyParameterError(f"lower_bound must be one of {LOWER_BOUNDS}, got {lower_bound!r}")
    loss = np.asarray(losses, dtype=float).ravel()
    if loss.size == 0 or not np.isfinite(loss).all():
        raise PrivacyParameterError("losses must be a nonempty array of finite values")
    over = loss > eps * (1 + FLOAT_TOLERANCE) + FLOAT_TOLERANCE
    terms = -np.expm1(np.minimum(eps - loss, 0.0))  # (1 - e^(eps - L))_+ in [0, 1)
    est = float(terms.mean())
    half = hoeffding_half_width(loss.size, conf)
    lower, upper = max(0.0, est - half), min(1.0, est + half)
    if lower_bound != "hoeffding" and loss.size >= 2:
        from . import delta_bounds

        bound = {"thresholds": delta_bounds.threshold_delta_lower, "bernstein": delta_bounds.bernstein_delta_lower,
                 "best": delta_bounds.best_delta_lower}[lower_bound]
        lower = float(bound(loss, eps, confidence=conf).lower)
    if delta == 0:
        violation = bool(over.any())
    else:
        violation = bool(lower > delta)
    return PLRVReport(
        epsilon=eps, delta=float(delta), runs=int(loss.size), max_loss=float(loss.max()),
        exceed_fraction=float(over.mean()), violation=violation,
        witness=int(np.argmax(loss)) if (delta == 0 and violation) else None,
        delta_estimate=est, delta_lower=lower, delta_upper=upper, confidence=conf,
        lower_method=lower_bound if loss.size >= 2 else "hoeffding",
    )


def hoeffding_half_width(samples: int, confidence: float) -> float:
    """One-sided Hoeffding half-width for the mean of ``samples`` i.i.d. values in ``[0, 1]``.

    ``P[mean - E >= t] <= exp(-2 n t^2)`` (Hoeffding 1963), so with probability
    at least ``confidence`` the mean exceeds the expectation by less than
    ``sqrt(ln(1 / (1 - confidence)) / (2 n))`` (and likewise in the other direction).

    Args:
        samples: ``n >= 1``.
        confidence: in ``(0, 1)``.

    Returns:
        The half-width.

    Raises:
        PrivacyParameterError: ``samples < 1`` or a confidence outside ``(0, 1)``.

    Example:
        >>> round(hoeffding_half_width(1000, 0.9875), 4)
        0.0468
    """
    conf = _check_level("confidence", confidence)
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise PrivacyParameterError(f"samples must be an integer >= 1, got {samples!r}")
    return math.sqrt(math.log(1.0 / (1.0 - conf)) / (2.0 * int(samples)))


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval at level ``1 - alpha`` (exact binomial).

    Example:
        >>> lo, hi = clopper_pearson(0, 10, 0.05)
        >>> lo, round(hi, 4)
        (0.0, 0.3085)
    """
    a = _check_level("alpha", alpha)
    if trials < 1 or not 0 <= successes <= trials:
        raise PrivacyParameterError(f"need 0 <= successes <= trials and trials >= 1, got {successes}/{trials}")
    lo, hi = _beta_quantiles(successes, trials, a)
    return float(lo), float(hi)


def clopper_pearson_many(successes: Any, trials: Any, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`clopper_pearson` of many counts at once (arrays of the same shape, or broadcast).

    Each interval is the one :func:`clopper_pearson` gives for its count (the
    same inverse incomplete beta function, elementwise).

    Raises:
        PrivacyParameterError: a bad ``alpha``, a count outside ``[0, trials]`` or ``trials < 1``.

    Example:
        >>> lo, hi = clopper_pearson_many([0, 5], [10, 10], 0.05)
        >>> [lo[0], round(float(hi[0]), 4)] == list(clopper_pearson(0, 10, 0.05)[:1]) + [0.3085]
        True
    """
    k, n, a = _checked_counts(successes, trials, alpha)
    return _beta_quantiles(k, n, a)


def clopper_pearson_bound_many(successes: Any, trials: Any, alpha: float, *, upper: bool) -> np.ndarray:
    """One side of :func:`clopper_pearson_many`: its lower (``upper=False``) or upper bounds alone, the same
    numbers (a caller that needs one side skips the other's inverse beta function).

    Raises:
        PrivacyParameterError: as :func:`clopper_pearson_many`.

    Example:
        >>> lo, hi = clopper_pearson_many([0, 5], [10, 10], 0.05)
        >>> bool((clopper_pearson_bound_many([0, 5], 10, 0.05, upper=True) == hi).all())
        True
    """
    k, n, a = _checked_counts(successes, trials, alpha)
    return _beta_upper(k, n, a) if upper else _beta_lower(k, n, a)


def _checked_counts(successes: Any, trials: Any, alpha: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``(k, n, alpha)`` broadcast and checked for :func:`clopper_pearson_many`."""
    a = _check_level("alpha", alpha)
    k, n = np.broadcast_arrays(np.asarray(successes), np.asarray(trials))
    if k.size and ((n < 1).any() or (k < 0).any() or (k > n).any()):
        bad = int(np.argmax((n < 1) | (k < 0) | (k > n)))
        raise PrivacyParameterError(f"need 0 <= successes <= trials and trials >= 1, got "
                                    f"{k.ravel()[bad]}/{n.ravel()[bad]}")
    return k, n, a


def _beta_quantiles(k: Any, n: Any, a: float) -> tuple[Any, Any]:
    """The Clopper–Pearson bounds of ``k`` successes in ``n`` trials at level ``1 - a`` (scalars or arrays).

    The beta quantiles as the inverse regularized incomplete beta function
    (what scipy.stats.beta.ppf evaluates, without its per-call argument
    handling: the auditors ask for hundreds of intervals); ``0`` below
    ``k = 0`` and ``1`` above ``k = n``.
    """
    from scipy import special

    if np.ndim(k) == 0:
        lo = 0.0 if k == 0 else special.betaincinv(k, n - k + 1, a / 2)
        hi = 1.0 if k == n else special.betaincinv(k + 1, n - k, 1 - a / 2)
        return lo, hi
    return _beta_lower(k, n, a), _beta_upper(k, n, a)


def _beta_lower(k: Any, n: Any, a: float) -> np.ndarray:
    """The lower Clopper–Pearson bounds of :func:`_beta_quantiles` (arrays)."""
    from scipy import special

    k, n = np.asarray(k), np.asarray(n)
    return np.where(k == 0, 0.0, special.betaincinv(np.maximum(k, 1), n - k + 1, a / 2))


def _beta_upper(k: Any, n: Any, a: float) -> np.ndarray:
    """The upper Clopper–Pearson bounds of :func:`_beta_quantiles` (arrays)."""
    from scipy import special

    k, n = np.asarray(k), np.asarray(n)
    return np.where(k == n, 1.0, special.betaincinv(k + 1, np.maximum(n - k, 1), 1 - a / 2))


@dataclass(frozen=True)
class BlackBoxReport:
    """Outcome of :func:`blackbox_audit`.

    Attributes:
        epsilon_lower_bound: holds with probability at least ``confidence``
            (0 when the samples show nothing).
        confidence: ``1 - alpha``.
        threshold, direction: the event ``{s > threshold}`` (direction ``+1``)
            or ``{s < threshold}`` (``-1``), chosen on the first half.
        p_hat, p_prime_hat: its empirical probabilities on the second half.
        samples: samples per problem used for estimation.
    """

    epsilon_lower_bound: float
    confidence: float
    threshold: float
    direction: int
    p_hat: float
    p_prime_hat: float
    samples: int
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _best_threshold(a: np.ndarray, b: np.ndarray, delta: float, min_count: int) -> tuple[float, int]:
    """Threshold event maximizing log((P_a - delta)/P_b) with both counts >= min_count (first half)."""
    best = (-np.inf, 0.0, 1)
    grid = np.unique(np.quantile(np.concatenate([a, b]), np.linspace(0.01, 0.99, 99)))
    sa, sb = np.sort(a), np.sort(b)
    for direction in (1, -1):
        for thr in grid:
            if direction == 1:
                ca = sa.size - np.searchsorted(sa, thr, side="right")
                cb = sb.size - np.searchsorted(sb, thr, side="right")
            else:
                ca = np.searchsorted(sa, thr, side="left")
                cb = np.searchsorted(sb, thr, side="left")
            if ca < min_count:
                continue
            pa = ca / sa.size - delta
            pb = max(cb, 1) / sb.size  # smoothed, so an empty event is not infinitely good
            if pa <= 0:
                continue
            score = math.log(pa / pb)
            if score > best[0]:
                best = (score, float(thr), direction)
    return best[1], best[2]


def blackbox_audit(
    samples: np.ndarray,
    samples_prime: np.ndarray,
    *,
    delta: float = 0.0,
    alpha: float = 0.05,
    min_count: int = 10,
) -> BlackBoxReport:
    """A lower bound on epsilon from a scalar statistic of the output under ``P`` and ``P'``.

    Both sample arrays are split in halves. On the first halves a threshold
    event ``E`` is chosen (in both directions, and both orders of the
    problems); on the second halves ``P[E]`` and ``P'[E]`` get Clopper–Pearson
    intervals (each one-sided tail at ``alpha/4``: two tails per order, two
    orders), and
    ``epsilon >= log((lower(P[E]) - delta) / upper(P'[E]))`` holds with
    probability at least ``1 - alpha`` (union bound).

    Args:
        samples, samples_prime: 1-D arrays of the statistic under ``P`` and ``P'``.
        delta: the claimed delta (0 for pure DP).
        alpha: 1 - confidence.
        min_count: smallest first-half count of the event under the heavier problem.

    Returns:
        A :class:`BlackBoxReport`.

    Raises:
        PrivacyParameterError: fewer than 20 samples per side, bad alpha or delta.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> r = blackbox_audit(rng.laplace(0, 1, 20000), rng.laplace(1, 1, 20000))
        >>> 0.5 < r.epsilon_lower_bound <= 1.0
        True
    """
    a_all = np.asarray(samples, dtype=float).ravel()
    b_all = np.asarray(samples_prime, dtype=float).ravel()
    if min(a_all.size, b_all.size) < 20:
        raise PrivacyParameterError(f"need at least 20 samples per problem, got {a_all.size} and {b_all.size}")
    al = _check_level("alpha", alpha)
    if not (0 <= delta < 1):
        raise PrivacyParameterError(f"delta must be in [0, 1), got {delta!r}")
    ha, hb = a_all.size // 2, b_all.size // 2
    results = []
    for first, second, swapped in ((a_all, b_all, False), (b_all, a_all, True)):
        hf, hs = (ha, hb) if not swapped else (hb, ha)
        thr, direction = _best_threshold(first[:hf], second[:hs], delta, min_count)
        fa, fb = first[hf:], second[hs:]
        ca = int((fa > thr).sum() if direction == 1 else (fa < thr).sum())
        cb = int((fb > thr).sum() if direction == 1 else (fb < thr).sum())
        lo_a, _ = clopper_pearson(ca, fa.size, al / 2)
        _, hi_b = clopper_pearson(cb, fb.size, al / 2)
        bound = math.log((lo_a - delta) / hi_b) if lo_a - delta > 0 else 0.0
        results.append((max(0.0, bound), thr, direction, ca / fa.size, cb / fb.size, swapped))
    best = max(results, key=lambda r: r[0])
    # Union bound: each interval above is two-sided at level 1 - alpha/2, so each one-sided
    # tail used has probability alpha/4; two tails per order, two orders: alpha in total.
    return BlackBoxReport(
        epsilon_lower_bound=best[0], confidence=1 - al, threshold=best[1], direction=best[2],
        p_hat=best[3] if not best[5] else best[4], p_prime_hat=best[4] if not best[5] else best[3],
        samples=int(min(a_all.size - ha, b_all.size - hb)), details={"order_swapped": best[5]},
    )
