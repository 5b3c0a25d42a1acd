"""Certified lower bounds on ``delta(epsilon)`` from exact privacy losses.

Notation. ``L = log p_P(y) - log p_P'(y)`` is the privacy loss of an output
``y`` of a pair of adjacent problems ``(P, P')``. The pair's privacy profile
(hockey-stick divergence) is

    delta(epsilon) = E_P[(1 - e^(epsilon - L))_+],

so a mechanism that is ``(epsilon, delta)``-DP has ``delta(epsilon) <= delta``
for this pair, and a *certified lower bound* on ``delta(epsilon)`` above the
claimed ``delta`` refutes the claim (with the bound's confidence). Every
function here returns a :class:`DeltaLowerBound`; each one holds with
probability at least its ``confidence`` over the draw of the samples, and is
never above the true ``delta(epsilon)`` on that event.

Methods (all for i.i.d. samples; which one to use is measured in
``benchmarks/bench_refutation_floor.py``):

* :func:`hoeffding_delta_lower`: Hoeffding on the mean of the summand in
  ``[0, 1]`` (what :func:`accounting.auditors.plrv_audit` does). Floor about
  ``0.1`` at 1,000 samples.
* :func:`threshold_delta_lower`: one-sided Clopper–Pearson bounds on
  ``P[L > epsilon + g]`` over a grid of gaps ``g`` fixed in advance, summed
  as a staircase below the summand. Needs a few losses above ``epsilon`` to
  say anything; floor about ``1e-2`` at 1,000 samples (refuted in every
  seed), often down to ``1e-3``.
* :func:`bernstein_delta_lower`: Maurer and Pontil's empirical Bernstein
  bound on the same mean; adapts to a small variance but keeps a term
  ``7 ln(2/alpha) / (3 (n - 1))``, so its floor is about ``0.03``.
* :func:`importance_delta_lower`: samples drawn under a proposal ``Q`` (an
  exponential tilt toward the high-loss tail, :mod:`accounting.tilting`),
  reweighted by the exact likelihood ratio ``p_P / q``; the weighted summand
  is bounded by a cap known in advance, so the empirical Bernstein bound
  applies to it at the scale of ``delta`` itself: no floor but the cap.
* :func:`average_delta_lower`: the mean of per-schedule exact profiles
  (values in ``[0, 1]``), bounded from below as in the importance bound.

Example:
    >>> rng = np.random.default_rng(0)
    >>> losses = rng.normal(2.0, 2.0, 1000)  # Gaussian mechanism with mu = 2
    >>> b = threshold_delta_lower(losses, 1.0, confidence=0.95)
    >>> b.method, 0.3 < b.lower < 0.5099  # the true delta(1) is 0.50986
    ('clopper-pearson thresholds', True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topology.validation import check_nonnegative, check_open_unit, check_positive

from .auditors import clopper_pearson, hoeffding_half_width
from .errors import PrivacyParameterError

__all__ = [
    "DeltaLowerBound",
    "DEFAULT_GAPS",
    "DEFAULT_CAPS",
    "hockey_stick_terms",
    "hoeffding_delta_lower",
    "threshold_delta_lower",
    "bernstein_delta_lower",
    "bernstein_mean_lower",
    "nonnegative_mean_lower",
    "importance_delta_lower",
    "average_delta_lower",
    "best_delta_lower",
]

_E = PrivacyParameterError

DEFAULT_GAPS: tuple[float, ...] = tuple(float(g) for g in np.geomspace(1 / 32, 8.0, 17))
"""Gaps ``g`` of the threshold events ``{L > epsilon + g}`` (17 values from 1/32 to 8, ratio ``sqrt 2``).

Fixed before any data is seen; the union bound over them costs a factor 17 in
each Clopper–Pearson level."""

DEFAULT_CAPS: tuple[float, ...] = tuple(float(c) for c in 10.0 ** (-np.arange(0, 65) / 4))
"""Truncation levels ``1, 10^-0.25, ..., 10^-16`` tried (union bound) when no cap is known in advance.

The best level is within a factor ``10^0.25`` above the largest value; the
union over 65 levels costs ``ln 65`` inside the logarithm of the bound."""


@dataclass(frozen=True)
class DeltaLowerBound:
    """A certified lower bound on ``delta(epsilon)`` of one pair.

    Attributes:
        method: ``"hoeffding"``, ``"clopper-pearson thresholds"``,
            ``"empirical bernstein"``, ``"importance sampling"`` or
            ``"schedule average"``.
        epsilon: where ``delta`` is bounded.
        lower: the bound; ``delta(epsilon) >= lower`` with probability at least ``confidence``.
        estimate: the point estimate of ``delta(epsilon)`` from the same samples (not certified).
        confidence: the level of ``lower``.
        samples: the number of samples it rests on.
        details: method-specific figures (the best threshold, the cap, ...).
    """

    method: str
    epsilon: float
    lower: float
    estimate: float
    confidence: float
    samples: int
    details: dict[str, Any] = field(default_factory=dict)

    def refutes(self, delta: float) -> bool:
        """Whether the bound exceeds a claimed ``delta`` (a refutation at :attr:`confidence`).

        Example:
            >>> DeltaLowerBound("hoeffding", 1.0, 0.02, 0.05, 0.95, 1000).refutes(1e-2)
            True
        """
        return bool(self.lower > delta)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return {"method": self.method, "epsilon": self.epsilon, "lower": self.lower, "estimate": self.estimate,
                "confidence": self.confidence, "samples": self.samples, "details": dict(self.details)}


# --------------------------------------------------------------------------- checks


def _losses(losses: Any, name: str = "losses") -> np.ndarray:
    """A nonempty 1-D float array without NaN (``+inf`` and ``-inf`` losses are allowed)."""
    arr = np.asarray(losses, dtype=float).ravel()
    if arr.size == 0:
        raise PrivacyParameterError(f"{name} must be nonempty")
    if np.isnan(arr).any():
        raise PrivacyParameterError(f"{name} has NaN at index {int(np.flatnonzero(np.isnan(arr))[0])}")
    return arr


def _confidence(confidence: Any) -> float:
    return check_open_unit(confidence, "confidence", error=_E)


def _epsilon(epsilon: Any) -> float:
    return check_nonnegative(epsilon, "epsilon", error=_E)


def hockey_stick_terms(losses: Any, epsilon: float) -> np.ndarray:
    """The summands ``(1 - e^(epsilon - L))_+`` of ``delta(epsilon)``, in ``[0, 1]``.

    ``L = +inf`` gives 1, ``L = -inf`` gives 0.

    Args:
        losses: privacy losses (no NaN).
        epsilon: ``>= 0``.

    Returns:
        An array of the same length.

    Raises:
        PrivacyParameterError: NaN losses, empty losses, a negative epsilon.

    Example:
        >>> hockey_stick_terms([0.0, np.log(2.0) + 1.0, np.inf], 1.0).round(3).tolist()
        [0.0, 0.5, 1.0]
    """
    loss = _losses(losses)
    eps = _epsilon(epsilon)
    with np.errstate(invalid="ignore"):
        return 0.0 - np.expm1(np.minimum(eps - loss, 0.0))


# --------------------------------------------------------------------------- bounded means


def bernstein_mean_lower(values: Any, alpha: float, upper: float = 1.0) -> float:
    """Maurer–Pontil empirical Bernstein lower bound on the mean of i.i.d. values in ``[0, upper]``.

    Maurer and Pontil (COLT 2009), Theorem 4, applied to ``1 - X / upper``:
    with probability at least ``1 - alpha``,

        E X >= mean - sqrt(2 V ln(2/alpha) / n) - 7 upper ln(2/alpha) / (3 (n - 1)),

    with ``V`` the unbiased sample variance. The theorem needs only
    independence and the range; the result is clipped at 0.

    Args:
        values: ``n >= 2`` values, each in ``[0, upper]``.
        alpha: the failure probability, in ``(0, 1)``.
        upper: the known upper end of the range, ``> 0``.

    Returns:
        The lower bound (``>= 0``).

    Raises:
        PrivacyParameterError: fewer than 2 values, a value outside ``[0, upper]``, bad ``alpha`` or ``upper``.

    Example:
        >>> round(bernstein_mean_lower(np.full(1000, 0.5), 0.05), 4)
        0.4914
    """
    a = check_open_unit(alpha, "alpha", error=_E)
    b = check_positive(upper, "upper", error=_E)
    x = np.asarray(values, dtype=float).ravel()
    if x.size < 2:
        raise PrivacyParameterError(f"the empirical Bernstein bound needs at least 2 values, got {x.size}")
    bad = ~((x >= 0) & (x <= b))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PrivacyParameterError(f"values must lie in [0, {b!r}], got {float(x[i])!r} at index {i}")
    n = x.size
    log_term = math.log(2.0 / a)
    var = float(x.var(ddof=1))
    bound = float(x.mean()) - math.sqrt(2.0 * var * log_term / n) - 7.0 * b * log_term / (3.0 * (n - 1))
    return max(0.0, bound)


def nonnegative_mean_lower(values: Any, alpha: float, *, cap: float | None = None,
                           caps: Sequence[float] = DEFAULT_CAPS) -> tuple[float, float]:
    """Lower bound on the mean of i.i.d. nonnegative values by truncation, holding with probability ``1 - alpha``.

    For any level ``c > 0``, ``min(X, c) <= X``, so ``E X >= E min(X, c)``, and
    ``min(X, c)`` lies in ``[0, c]``: :func:`bernstein_mean_lower` bounds it.
    The level must not depend on the samples. With ``cap`` (a level fixed in
    advance, e.g. a proven upper bound on ``X``) one bound at ``alpha`` is
    computed; without it, every level of ``caps`` is tried at ``alpha /
    len(caps)`` (union bound) and the best is returned. Where ``X <= cap``
    always, the truncation changes nothing and the bound is as tight as the
    empirical Bernstein bound itself.

    Args:
        values: ``n >= 2`` values ``>= 0`` (``+inf`` allowed: it is truncated).
        alpha: the failure probability, in ``(0, 1)``.
        cap: a truncation level fixed before the samples were drawn, ``> 0``.
        caps: the levels tried when ``cap`` is ``None`` (each ``> 0``).

    Returns:
        ``(lower bound, the level that gave it)``.

    Raises:
        PrivacyParameterError: negative or NaN values, fewer than 2, bad ``alpha``, ``cap`` or ``caps``.

    Example:
        >>> x = np.random.default_rng(1).exponential(1e-4, 1000)
        >>> lo, c = nonnegative_mean_lower(x, 0.05)
        >>> 3e-5 < lo < 1e-4, round(c, 6)
        (True, 0.000316)
    """
    a = check_open_unit(alpha, "alpha", error=_E)
    x = np.asarray(values, dtype=float).ravel()
    if np.isnan(x).any() or (x < 0).any():
        i = int(np.flatnonzero(np.isnan(x) | (x < 0))[0])
        raise PrivacyParameterError(f"values must be >= 0, got {float(x[i])!r} at index {i}")
    if cap is not None:
        levels = [check_positive(cap, "cap", error=_E)]
    else:
        levels = [check_positive(c, "caps", error=_E) for c in caps]
        if not levels:
            raise PrivacyParameterError("caps must be nonempty")
    each = a / len(levels)
    best = (0.0, levels[0])
    for c in levels:
        lo = bernstein_mean_lower(np.minimum(x, c), each, c)
        if lo > best[0]:
            best = (lo, c)
    return best


# --------------------------------------------------------------------------- bounds on delta(epsilon)


def hoeffding_delta_lower(losses: Any, epsilon: float, *, confidence: float = 0.95) -> DeltaLowerBound:
    """Hoeffding lower bound on ``delta(epsilon)`` (the bound :func:`~accounting.auditors.plrv_audit` uses).

    The summands ``(1 - e^(epsilon - L_i))_+`` are i.i.d. in ``[0, 1]`` with
    mean ``delta(epsilon)``; by Hoeffding's inequality the mean minus
    ``sqrt(ln(1/(1 - confidence)) / (2 n))`` is below ``delta(epsilon)`` with
    probability at least ``confidence``.

    Args:
        losses: exact privacy losses of i.i.d. outputs drawn under ``P``.
        epsilon: ``>= 0``.
        confidence: in ``(0, 1)``.

    Returns:
        A :class:`DeltaLowerBound` (method ``"hoeffding"``).

    Raises:
        PrivacyParameterError: empty or NaN losses, bad epsilon or confidence.

    Example:
        >>> hoeffding_delta_lower(np.full(1000, 1.0), 0.5).lower
        0.3547670646853172
    """
    conf = _confidence(confidence)
    terms = hockey_stick_terms(losses, epsilon)
    est = float(terms.mean())
    half = hoeffding_half_width(terms.size, conf)
    return DeltaLowerBound("hoeffding", float(epsilon), max(0.0, est - half), est, conf, int(terms.size),
                           {"half_width": half})


def threshold_delta_lower(losses: Any, epsilon: float, *, confidence: float = 0.95,
                          gaps: Sequence[float] = DEFAULT_GAPS) -> DeltaLowerBound:
    """Lower bound on ``delta(epsilon)`` from nested threshold events and one-sided Clopper–Pearson bounds.

    For every ``t >= epsilon``, ``(1 - e^(epsilon - L))_+ >= (1 - e^(epsilon -
    t)) 1{L > t}``, hence ``delta(epsilon) >= P_P[L > t] (1 - e^(epsilon -
    t))``. With the gaps sorted, ``0 = g_0 < g_1 < ... < g_m`` and ``t_j =
    epsilon + g_j``, the staircase ``sum_j (e^(-g_(j-1)) - e^(-g_j)) 1{L > t_j}``
    equals ``1 - e^(-g_J)`` for the largest ``t_J < L``, so it lies below the
    summand, and (layer-cake)

        delta(epsilon) >= sum_j (e^(-g_(j-1)) - e^(-g_j)) P_P[L > t_j],

    which is at least the best single threshold's bound. The gaps are fixed
    in advance; the count ``k_j`` of losses above ``t_j`` is ``Binomial(n,
    P[L > t_j])``, and its one-sided Clopper–Pearson lower bound at level
    ``(1 - confidence) / m`` fails with at most that probability. All ``m``
    bounds hold together with probability at least ``confidence`` (union
    bound); on that event the sum with every probability replaced by its lower
    bound is a lower bound on ``delta(epsilon)``.

    Args:
        losses: exact privacy losses of i.i.d. outputs drawn under ``P`` (``+inf`` allowed).
        epsilon: ``>= 0``.
        confidence: in ``(0, 1)``.
        gaps: the gaps ``g > 0`` (distinct); they must not be chosen by looking at these losses.

    Returns:
        A :class:`DeltaLowerBound` (method ``"clopper-pearson thresholds"``); its
        details give the lowest threshold with a count, that count and its
        Clopper–Pearson bound (``threshold``, ``count``, ``p_lower``), and the number of gaps.

    Raises:
        PrivacyParameterError: empty or NaN losses, bad epsilon, confidence or gaps.

    Example:
        >>> b = threshold_delta_lower(np.r_[np.full(900, 0.0), np.full(100, 5.0)], 1.0)
        >>> round(b.lower, 4), round(b.details["threshold"], 6)
        (0.0742, 1.03125)
    """
    conf = _confidence(confidence)
    eps = _epsilon(epsilon)
    loss = _losses(losses)
    gs = sorted(check_positive(g, "gaps", error=_E) for g in gaps)
    if not gs:
        raise PrivacyParameterError("gaps must be nonempty")
    if len(set(gs)) != len(gs):
        raise PrivacyParameterError(f"gaps must be distinct, got {list(gaps)!r}")
    level = (1.0 - conf) / len(gs)
    n = int(loss.size)
    ordered = np.sort(loss)
    first: dict[str, Any] = {"threshold": None, "count": 0, "p_lower": 0.0}
    terms = []
    previous = 0.0
    for g in gs:
        t = eps + g
        weight = math.exp(-previous) - math.exp(-g)
        previous = g
        k = int(n - np.searchsorted(ordered, t, side="right"))
        if k == 0:
            break  # no count above: every higher threshold has none either
        p_lower, _ = clopper_pearson(k, n, 2.0 * level)  # two-sided at 2 level: each tail at level
        terms.append(weight * p_lower)
        if first["threshold"] is None:
            first = {"threshold": t, "count": k, "p_lower": p_lower}
    est = float(hockey_stick_terms(loss, eps).mean())
    first["gaps"] = len(gs)
    return DeltaLowerBound("clopper-pearson thresholds", eps, math.fsum(terms), est, conf, n, first)


def bernstein_delta_lower(losses: Any, epsilon: float, *, confidence: float = 0.95) -> DeltaLowerBound:
    """Empirical Bernstein lower bound on ``delta(epsilon)``.

    The summands ``(1 - e^(epsilon - L_i))_+`` are i.i.d. in ``[0, 1]`` with
    mean ``delta(epsilon)``; :func:`bernstein_mean_lower` (Maurer and Pontil,
    COLT 2009, Thm 4) at ``alpha = 1 - confidence`` bounds the mean from below.
    Tighter than Hoeffding when the summands have a small variance (small
    ``delta``), but never below ``7 ln(2/alpha) / (3 (n - 1))`` of slack.

    Args:
        losses: exact privacy losses of i.i.d. outputs drawn under ``P`` (at least 2).
        epsilon: ``>= 0``.
        confidence: in ``(0, 1)``.

    Returns:
        A :class:`DeltaLowerBound` (method ``"empirical bernstein"``).

    Raises:
        PrivacyParameterError: fewer than 2 losses, NaN, bad epsilon or confidence.

    Example:
        >>> round(bernstein_delta_lower(np.r_[np.zeros(900), np.full(100, np.inf)], 1.0).lower, 3)
        0.066
    """
    conf = _confidence(confidence)
    terms = hockey_stick_terms(losses, epsilon)
    lower = bernstein_mean_lower(terms, 1.0 - conf, 1.0)
    return DeltaLowerBound("empirical bernstein", float(epsilon), lower, float(terms.mean()), conf, int(terms.size))


def importance_delta_lower(losses: Any, log_weights: Any, epsilon: float, *, confidence: float = 0.95,
                           cap: float | None = None) -> DeltaLowerBound:
    """Lower bound on ``delta(epsilon)`` from outputs drawn under a proposal ``Q``, reweighted exactly.

    With ``y_i ~ Q`` i.i.d., ``L_i`` the exact privacy loss of ``y_i`` and
    ``log w_i = log p_P(y_i) - log q(y_i)`` the exact log likelihood ratio
    (``P`` absolutely continuous w.r.t. ``Q``),

        delta(epsilon) = E_P[(1 - e^(epsilon - L))_+] = E_Q[w (1 - e^(epsilon - L))_+].

    The weighted summands ``Z_i`` are i.i.d. and ``>= 0``;
    :func:`nonnegative_mean_lower` truncates them at ``cap`` (or at each level
    of :data:`DEFAULT_CAPS`, union bound) and applies the empirical Bernstein
    bound, so the result holds with probability at least ``confidence``
    whatever the cap. For the exponential tilts of :mod:`accounting.tilting`
    the cap is a proven bound on ``Z`` (a Chernoff-type bound on ``delta``),
    the truncation never bites and the slack is a small multiple of ``delta``
    itself: deltas of ``1e-8`` are certified from 1,000 samples.

    Args:
        losses: ``L_i`` (no NaN; ``+inf`` allowed).
        log_weights: ``log p_P(y_i) - log q(y_i)`` (``-inf`` allowed: weight 0).
        epsilon: ``>= 0``.
        confidence: in ``(0, 1)``.
        cap: a truncation level fixed before the draw (``> 0``), or ``None``.

    Returns:
        A :class:`DeltaLowerBound` (method ``"importance sampling"``); details
        give the cap used and the largest weighted summand.

    Raises:
        PrivacyParameterError: mismatched lengths, NaN, fewer than 2 samples, bad epsilon, confidence or cap.

    Example:
        >>> from accounting.tilting import tilted_sample
        >>> s = tilted_sample(gaussian_mus=[1.0], epsilon=4.0, runs=1000, rng=np.random.default_rng(0))
        >>> b = importance_delta_lower(s.losses, s.log_weights, 4.0, cap=s.cap)
        >>> 3e-5 < b.lower < 4.71e-5  # the true delta(4) of mu = 1 is 4.712e-5
        True
    """
    conf = _confidence(confidence)
    eps = _epsilon(epsilon)
    loss = _losses(losses)
    lw = np.asarray(log_weights, dtype=float).ravel()
    if lw.shape != loss.shape:
        raise PrivacyParameterError(f"log_weights has {lw.size} entries but losses has {loss.size}")
    if np.isnan(lw).any() or (lw == np.inf).any():
        i = int(np.flatnonzero(np.isnan(lw) | (lw == np.inf))[0])
        raise PrivacyParameterError(f"log_weights must be finite or -inf, got {float(lw[i])!r} at index {i}")
    terms = hockey_stick_terms(loss, eps)
    with np.errstate(divide="ignore", over="ignore"):  # an overflowing weight is +inf, truncated at the cap
        z = np.where(terms > 0, np.exp(lw + np.log(np.where(terms > 0, terms, 1.0))), 0.0)
    lower, used = nonnegative_mean_lower(z, 1.0 - conf, cap=cap)
    return DeltaLowerBound("importance sampling", eps, lower, float(z.mean()), conf, int(loss.size),
                           {"cap": used, "cap_given": cap is not None, "max_term": float(z.max())})


def average_delta_lower(deltas: Any, epsilon: float, *, confidence: float = 0.95) -> DeltaLowerBound:
    """Lower bound on the mean of per-schedule exact profiles ``delta_S(epsilon)`` over sampled schedules.

    Under deadline or asynchronous timing the output is the schedule ``S``
    together with the messages; ``S`` is drawn from the link and clock streams,
    independently of the data and the noise
    (:mod:`accounting.scheduled_replay`), so the pair's profile is the
    average over schedules: ``delta(epsilon) = E_S[delta_S(epsilon)]``, where
    ``delta_S`` is the profile given ``S`` (e.g.
    :meth:`accounting.profiles.PrivacyProfile.delta`, exact or a lower bound).
    The values are i.i.d. in ``[0, 1]``; :func:`nonnegative_mean_lower` with
    the levels ``1, 10^-0.25, ..., 10^-16`` (union bound) bounds their mean at
    the scale of the values themselves, so schedule sampling is the only
    error. (Were the schedule hidden from the observer, the profile of the
    messages alone would be at most this average, by data processing: this
    bound then no longer applies.)

    Args:
        deltas: one ``delta_S(epsilon)`` per sampled schedule, in ``[0, 1]`` (at least 2).
        epsilon: the epsilon they are evaluated at (recorded in the result).
        confidence: in ``(0, 1)``.

    Returns:
        A :class:`DeltaLowerBound` (method ``"schedule average"``).

    Raises:
        PrivacyParameterError: a value outside ``[0, 1]``, fewer than 2 values, bad confidence.

    Example:
        >>> round(average_delta_lower(np.full(200, 1e-6), 1.0).lower, 8)
        9.1e-07
    """
    conf = _confidence(confidence)
    eps = _epsilon(epsilon)
    d = np.asarray(deltas, dtype=float).ravel()
    bad = ~((d >= 0) & (d <= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PrivacyParameterError(f"deltas must lie in [0, 1], got {float(d[i])!r} at schedule {i}")
    lower, used = nonnegative_mean_lower(d, 1.0 - conf)
    return DeltaLowerBound("schedule average", eps, lower, float(d.mean()), conf, int(d.size), {"cap": used})


def best_delta_lower(losses: Any, epsilon: float, *, confidence: float = 0.95) -> DeltaLowerBound:
    """The best of the threshold and empirical Bernstein bounds, each at half the failure probability.

    Both hold with probability at least ``1 - (1 - confidence) / 2`` each, so
    both (and their maximum) hold together with probability at least
    ``confidence``. Use it on plain samples under ``P`` (engine runs).

    Args:
        losses: exact privacy losses of i.i.d. outputs drawn under ``P`` (at least 2).
        epsilon: ``>= 0``.
        confidence: in ``(0, 1)``.

    Returns:
        The larger :class:`DeltaLowerBound`, with ``confidence`` set to the joint level.

    Raises:
        PrivacyParameterError: as the two bounds.

    Example:
        >>> best_delta_lower(np.r_[np.zeros(990), np.full(10, np.inf)], 1.0).method
        'clopper-pearson thresholds'
    """
    conf = _confidence(confidence)
    half = 1.0 - (1.0 - conf) / 2.0
    a = threshold_delta_lower(losses, epsilon, confidence=half)
    b = bernstein_delta_lower(losses, epsilon, confidence=half)
    best = a if a.lower >= b.lower else b
    return DeltaLowerBound(best.method, best.epsilon, best.lower, best.estimate, conf, best.samples,
                           {**best.details, "combined_with": (b if best is a else a).method})
