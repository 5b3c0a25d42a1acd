"""Certification of one event: one-sided Clopper–Pearson bounds and the union bound.

For an event ``E`` fixed *before* the certification samples are looked at,
``k ~ Binomial(n, P[E])`` and ``k' ~ Binomial(n', P'[E])`` independently. With
one-sided Clopper–Pearson bounds at level ``alpha`` each (via
:func:`accounting.auditors.clopper_pearson`, two-sided at ``2 alpha``),

* ``P[E] >= lower(k, n)`` and ``P'[E] <= upper(k', n')`` fail with
  probability at most ``alpha`` each.

If the mechanism is ``(epsilon, delta)``-DP, ``P[E] <= exp(epsilon) P'[E] +
delta``, so on the event that both bounds hold

* ``log((lower - delta) / upper) <= epsilon`` (the certified epsilon bound) and
* ``lower - exp(epsilon) upper <= delta`` (the certified delta bound).

**Union bound.** The auditor certifies one event per order of the pair
(``P`` vs ``P'`` and ``P'`` vs ``P``): four one-sided bounds, each at
``alpha = (1 - confidence) / 4`` (:func:`per_bound_alpha`), so all reported
bounds hold together with probability at least ``confidence``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from typing import Any

import numpy as np

from ..auditors import clopper_pearson, clopper_pearson_bound_many

__all__ = ["BOUNDS_PER_ORDER", "ORDERS", "CertifiedEvent", "per_bound_alpha", "one_sided_bounds", "certify_event",
           "projected_epsilon", "projected_epsilons"]

ORDERS = 2
"""Orders of the pair certified: ``P/P'`` and ``P'/P``."""

BOUNDS_PER_ORDER = 2
"""One-sided bounds per certified event: a lower bound on the numerator, an upper bound on the denominator."""


def per_bound_alpha(confidence: float) -> float:
    """Level of each one-sided bound so that all of them hold together with probability ``confidence``.

    Example:
        >>> round(per_bound_alpha(0.95), 6)
        0.0125
    """
    return (1.0 - confidence) / (ORDERS * BOUNDS_PER_ORDER)


def one_sided_bounds(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper–Pearson lower and upper bounds on a binomial probability, each at level ``alpha``.

    Args:
        k: successes, ``0 <= k <= n``.
        n: trials, ``>= 1``.
        alpha: probability that the lower (resp. upper) bound is wrong, in ``(0, 0.5)``.

    Returns:
        ``(lower, upper)``.

    Raises:
        PrivacyParameterError: bad counts or level (from :func:`~accounting.auditors.clopper_pearson`).

    Example:
        >>> lo, hi = one_sided_bounds(0, 10, 0.025)
        >>> lo, round(hi, 4)
        (0.0, 0.3085)
    """
    return clopper_pearson(int(k), int(n), 2.0 * alpha)


@dataclass(frozen=True)
class CertifiedEvent:
    """The certified bounds of one event in one order (numerator ``P``, denominator ``P'``).

    Attributes:
        epsilon_lower_bound: ``max(0, log((p_lower - delta) / p_prime_upper))`` (0 when ``p_lower <= delta``).
        delta_lower_bound: ``max(0, p_lower - exp(epsilon) * p_prime_upper)``.
        p_lower, p_prime_upper: the one-sided bounds.
        k, n, k_prime, n_prime: the counts they come from.
    """

    epsilon_lower_bound: float
    delta_lower_bound: float
    p_lower: float
    p_prime_upper: float
    k: int
    n: int
    k_prime: int
    n_prime: int


def _bounds(p_lower: float, p_prime_upper: float, epsilon: float, delta: float) -> tuple[float, float]:
    eps_lb = math.log((p_lower - delta) / p_prime_upper) if p_lower - delta > 0 and p_prime_upper > 0 else 0.0
    # e^epsilon overflows a float beyond epsilon ~ 709: then any p' > 0 leaves no delta to certify
    factor = math.exp(epsilon) * p_prime_upper if epsilon < 700.0 else (math.inf if p_prime_upper > 0 else 0.0)
    delta_lb = p_lower - factor
    return max(0.0, eps_lb), max(0.0, delta_lb)


def certify_event(k: int, n: int, k_prime: int, n_prime: int, *, epsilon: float, delta: float,
                  alpha: float) -> CertifiedEvent:
    """Certified epsilon and delta lower bounds from the counts of one event (see the module docstring).

    Args:
        k, n: event count and samples under the numerator distribution ``P``.
        k_prime, n_prime: the same under the denominator ``P'``.
        epsilon: the claimed epsilon (for the delta bound).
        delta: the claimed delta (for the epsilon bound).
        alpha: level of each of the two one-sided bounds.

    Returns:
        A :class:`CertifiedEvent`.

    Example:
        >>> c = certify_event(500, 1000, 100, 1000, epsilon=1.0, delta=0.0, alpha=0.0125)
        >>> 1.0 < c.epsilon_lower_bound < 1.6094
        True
    """
    p_lower, _ = one_sided_bounds(k, n, alpha)
    _, p_prime_upper = one_sided_bounds(k_prime, n_prime, alpha)
    eps_lb, delta_lb = _bounds(p_lower, p_prime_upper, epsilon, delta)
    return CertifiedEvent(eps_lb, delta_lb, p_lower, p_prime_upper, int(k), int(n), int(k_prime), int(n_prime))


def projected_epsilon(p_hat: float, p_prime_hat: float, n: int, n_prime: int, *, epsilon: float, delta: float,
                      alpha: float) -> tuple[float, float]:
    """The bounds :func:`certify_event` would give if the certification counts matched estimated probabilities.

    Used only to *choose* an event on training samples (never to certify):
    the event with the best projected bound balances a large probability ratio
    against the width of the intervals at the certification sample size.

    Returns:
        ``(epsilon bound or -inf when p_lower <= delta, p_lower - exp(epsilon) p_prime_upper)``.

    Example:
        >>> e, _ = projected_epsilon(0.5, 0.1, 1000, 1000, epsilon=1.0, delta=0.0, alpha=0.0125)
        >>> round(e, 3) == round(certify_event(500, 1000, 100, 1000, epsilon=1.0, delta=0.0,
        ...                                    alpha=0.0125).epsilon_lower_bound, 3)
        True
    """
    return projected_epsilons([p_hat], [p_prime_hat], n, n_prime, epsilon=epsilon, delta=delta, alpha=alpha)[0]


def projected_epsilons(p_hat: Any, p_prime_hat: Any, n: int, n_prime: int, *, epsilon: float, delta: float,
                       alpha: float) -> list[tuple[float, float]]:
    """:func:`projected_epsilon` of many candidate events at once (one Clopper–Pearson call for all of them).

    Returns:
        One ``(epsilon bound, margin)`` per candidate, in order.

    Example:
        >>> [round(e, 3) for e, _ in projected_epsilons([0.5, 0.1], [0.1, 0.5], 1000, 1000, epsilon=1.0,
        ...                                               delta=0.0, alpha=0.0125)]
        [1.326, -1.905]
    """
    # the counts the estimates project to (round half to even, as Python's round), within [0, n]
    k = np.clip(np.rint(np.asarray(p_hat, dtype=float) * n), 0, n).astype(np.int64)
    kp = np.clip(np.rint(np.asarray(p_prime_hat, dtype=float) * n_prime), 0, n_prime).astype(np.int64)
    p_lower = clopper_pearson_bound_many(k, int(n), 2.0 * alpha, upper=False)
    p_prime_upper = clopper_pearson_bound_many(kp, int(n_prime), 2.0 * alpha, upper=True)
    huge = epsilon >= 700.0  # e^epsilon overflows a float: e^epsilon * p' is infinite when p' > 0 (certify_event)
    factor = math.inf if huge else math.exp(epsilon)
    out = []
    for lo, hi in zip(np.asarray(p_lower, dtype=float).tolist(), np.asarray(p_prime_upper, dtype=float).tolist()):
        eps = math.log((lo - delta) / hi) if lo - delta > 0 else -math.inf
        out.append((eps, lo - (factor * hi if hi > 0 else 0.0)))
    return out
