"""Single-release privacy of the Laplace and Gaussian mechanisms, calibrated both ways.

Conventions: the Laplace mechanism adds i.i.d. ``Laplace(0, scale)`` noise to
every coordinate and its ``sensitivity`` is the L1 sensitivity of the whole
released vector; the Gaussian mechanism adds i.i.d. ``N(0, sigma^2)`` noise and
its ``sensitivity`` is the L2 sensitivity. The dimension therefore never enters.

* Laplace: ``epsilon = sensitivity / scale`` (pure DP, exact).
* Gaussian, classic (Dwork & Roth 2014, Thm A.1):
  ``sigma = sensitivity * sqrt(2 ln(1.25/delta)) / epsilon``, valid for epsilon < 1 only.
* Gaussian, analytic (Balle & Wang 2018, Thm 8): the exact
  ``delta(epsilon) = Phi(mu/2 - epsilon/mu) - e^epsilon Phi(-mu/2 - epsilon/mu)``
  with ``mu = sensitivity / sigma``, inverted by root finding.

Every function validates its inputs and raises :class:`PrivacyParameterError`
naming the parameter and the offending value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtr

from topology.validation import check_nonnegative, check_open_unit, check_positive

from .errors import PrivacyParameterError

_ERR = PrivacyParameterError  # what the argument checks raise

__all__ = [
    "laplace_epsilon",
    "laplace_scale",
    "gaussian_sigma_classic",
    "gaussian_epsilon_classic",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma",
]

_XTOL = 1e-13  # relative tolerance of the root finders (in epsilon, resp. mu)
_MAX_ITER = 2000  # cap on bracketing / bisection steps


# --------------------------------------------------------------------------- Laplace


def laplace_epsilon(sensitivity: float, scale: float) -> float:
    """Pure-DP epsilon of the Laplace mechanism.

    Args:
        sensitivity: L1 sensitivity, >= 0 (0 costs nothing).
        scale: Laplace scale ``b`` per coordinate, > 0.

    Returns:
        ``sensitivity / scale``.

    Raises:
        PrivacyParameterError: negative/NaN sensitivity or nonpositive scale.

    Example:
        >>> laplace_epsilon(1.0, 4.0)
        0.25
    """
    return check_nonnegative(sensitivity, "sensitivity", error=_ERR) / check_positive(scale, "scale", error=_ERR)


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Laplace scale achieving pure ``epsilon``-DP.

    Args:
        sensitivity: L1 sensitivity, > 0 (a zero-sensitivity value needs no noise).
        epsilon: target epsilon, > 0.

    Returns:
        ``sensitivity / epsilon``.

    Raises:
        PrivacyParameterError: nonpositive sensitivity or epsilon.

    Example:
        >>> laplace_scale(2.0, 0.5)
        4.0
    """
    return check_positive(sensitivity, "sensitivity", error=_ERR) / check_positive(epsilon, "epsilon", error=_ERR)


# --------------------------------------------------------------------------- classic Gaussian


def _classic_gaussian(sensitivity: float, delta: float, scale: float) -> float:
    """``sensitivity sqrt(2 ln(1.25/delta)) / scale``, the classic calibration of Dwork & Roth (2014), Theorem A.1,
    read either way: ``scale = epsilon`` gives sigma, ``scale = sigma`` gives epsilon (parameters unchecked)."""
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / scale


def gaussian_sigma_classic(sensitivity: float, epsilon: float, delta: float) -> float:
    """Classic Gaussian calibration ``sensitivity * sqrt(2 ln(1.25/delta)) / epsilon``.

    Dwork & Roth (2014), Theorem A.1; the theorem only covers ``epsilon < 1``.

    Args:
        sensitivity: L2 sensitivity, > 0.
        epsilon: target epsilon in (0, 1).
        delta: target delta in (0, 1).

    Returns:
        The noise standard deviation.

    Raises:
        PrivacyParameterError: invalid parameters, or ``epsilon >= 1`` (use
            :func:`gaussian_sigma` instead).

    Example:
        >>> round(gaussian_sigma_classic(1.0, 0.5, 1e-5), 4)
        9.6896
    """
    s = check_positive(sensitivity, "sensitivity", error=_ERR)
    e = check_positive(epsilon, "epsilon", error=_ERR)
    d = check_open_unit(delta, "delta", error=_ERR)
    if e >= 1:
        raise PrivacyParameterError(
            f"epsilon must be < 1 for the classic Gaussian calibration (Dwork-Roth Thm A.1), got {epsilon!r}; "
            "use gaussian_sigma (analytic) instead"
        )
    return _classic_gaussian(s, d, e)


def gaussian_epsilon_classic(sensitivity: float, sigma: float, delta: float) -> float:
    """Inverse of :func:`gaussian_sigma_classic`: ``sensitivity * sqrt(2 ln(1.25/delta)) / sigma``.

    Args:
        sensitivity: L2 sensitivity, >= 0.
        sigma: noise standard deviation, > 0.
        delta: delta in (0, 1).

    Returns:
        The epsilon the classic theorem certifies.

    Raises:
        PrivacyParameterError: invalid parameters, or a result ``>= 1``, outside
            the range where the classic theorem holds.

    Example:
        >>> round(gaussian_epsilon_classic(1.0, 9.6896, 1e-5), 4)
        0.5
    """
    s = check_nonnegative(sensitivity, "sensitivity", error=_ERR)
    sg = check_positive(sigma, "sigma", error=_ERR)
    d = check_open_unit(delta, "delta", error=_ERR)
    eps = _classic_gaussian(s, d, sg)
    if eps >= 1:
        raise PrivacyParameterError(
            f"the classic Gaussian bound gives epsilon = {eps!r} >= 1 (sensitivity={sensitivity!r}, "
            f"sigma={sigma!r}, delta={delta!r}), but Dwork-Roth Thm A.1 only holds for epsilon < 1; "
            "use gaussian_epsilon (analytic) instead"
        )
    return eps


# --------------------------------------------------------------------------- analytic Gaussian


_SMALL_MU = 0.5  # below it, h is integrated over [z1, z2] (the two log_ndtr terms cancel to ~1e-16 / mu^2)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)


def _small_mu_nodes(mu: Any, z1: Any) -> tuple[np.ndarray, np.ndarray]:
    """The 8 Gauss-Legendre nodes on ``[z1, z1 + mu]`` and their weights (last axis)."""
    half = np.asarray(mu / 2, dtype=float)[..., None]
    return (z1 + mu / 2)[..., None] + half * _GL_NODES, half * _GL_WEIGHTS


def _small_mu_log_tail(z1: Any, t: np.ndarray, w: np.ndarray) -> Any:
    """``log h`` for ``z1 > 0`` (the erfcx form of :func:`_log_gaussian_delta_small_mu`)."""
    u = t / math.sqrt(2.0)
    tail = np.sum(w * (2.0 - 2.0 * math.sqrt(math.pi) * u * erfcx(u)), axis=-1) / math.sqrt(2.0 * math.pi)
    return math.log(0.5) - z1 * z1 / 2 + np.log(tail)


def _small_mu_body(mu: Any, x: Any, z1: Any, t: np.ndarray, w: np.ndarray) -> Any:
    """``h`` itself for ``z1 <= 0`` (the other form of :func:`_log_gaussian_delta_small_mu`)."""
    return np.sum(w * np.exp(-t * t / 2), axis=-1) / math.sqrt(2.0 * math.pi) - np.expm1(x) * ndtr(-(z1 + mu))


def _log_gaussian_delta_small_mu(mu: Any, x: np.ndarray) -> np.ndarray:
    """``log h(x)`` for ``0 < mu < 1/2`` with no cancellation: the same value as the closed form, to ~1e-13.

    With ``z1 = x/mu - mu/2``, ``z2 = z1 + mu`` and ``Phi(-z) = erfcx(z/sqrt 2) e^(-z^2/2) / 2``,
    ``e^x e^(-z2^2/2) = e^(-z1^2/2)``, so ``h = e^(-z1^2/2)/2 (erfcx(z1/sqrt 2) - erfcx(z2/sqrt 2))`` and the
    difference is ``int_z1^z2 (1/sqrt(2 pi)) (2 - 2 sqrt(pi) (t/sqrt 2) erfcx(t/sqrt 2)) dt`` (the derivative of
    erfcx), taken by 8-point Gauss-Legendre (``z1 > 0``); for ``z1 <= 0``, ``h = int_z1^z2 phi - expm1(x) Phi(-z2)``
    (both terms of one sign or the second far smaller). The closed form subtracts two logarithms of size
    ``z^2/2`` that differ by ``~mu z``: at ``mu = 1e-6`` its delta was 1e-8 (relative) above the truth, above the
    refutation's tolerance. A 0-d ``x`` with a scalar ``mu`` computes only the branch it takes (the root finders
    call it one point at a time), with the same operations, so the same value.
    """
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        z1 = x / mu - mu / 2
        if np.ndim(z1) == 0:  # one point (the root finders): only the branch it takes
            if z1 == np.inf:
                return np.asarray(-np.inf)
            t, w = _small_mu_nodes(mu, z1)
            if z1 > 0:
                return np.asarray(_small_mu_log_tail(z1, t, w))
            body = _small_mu_body(mu, x, z1, t, w)
            return np.asarray(np.log(body) if body > 0 else -np.inf)
        # arrays: both branches everywhere; the one not taken may overflow (e^x at a large x) or be undefined
        t, w = _small_mu_nodes(mu, z1)
        body = _small_mu_body(mu, x, z1, t, w)
        return np.where(z1 == np.inf, -np.inf,
                        np.where(z1 > 0, _small_mu_log_tail(z1, t, w),
                                 np.where(body > 0, np.log(np.where(body > 0, body, 1.0)), -np.inf)))


def _log_gaussian_delta(mu: float, epsilon: float) -> float:
    """``log delta(epsilon)`` of the Gaussian mechanism with ``mu = sensitivity / sigma`` (mu > 0)."""
    if mu < _SMALL_MU:
        return float(_log_gaussian_delta_small_mu(mu, np.asarray(float(epsilon))))
    l1 = float(log_ndtr(mu / 2 - epsilon / mu))
    l2 = epsilon + float(log_ndtr(-mu / 2 - epsilon / mu))
    if l2 >= l1:  # only by rounding: delta is 0 to machine precision
        return -math.inf
    return l1 + math.log(-math.expm1(l2 - l1))


def _gaussian_delta_mu(mu: float, epsilon: float) -> float:
    return math.exp(_log_gaussian_delta(mu, epsilon))


def gaussian_delta(sensitivity: float, sigma: float, epsilon: float) -> float:
    """Exact delta of the Gaussian mechanism at ``epsilon`` (analytic Gaussian mechanism).

    ``delta = Phi(mu/2 - epsilon/mu) - e^epsilon Phi(-mu/2 - epsilon/mu)``, ``mu = sensitivity/sigma``
    (Balle & Wang 2018, Theorem 8); evaluated in log space with
    ``scipy.special.log_ndtr`` so large epsilon neither overflows ``e^epsilon``
    nor cancels catastrophically.

    Args:
        sensitivity: L2 sensitivity, >= 0 (0 gives delta = 0).
        sigma: noise standard deviation, > 0.
        epsilon: epsilon, > 0.

    Returns:
        The smallest delta for which the mechanism is (epsilon, delta)-DP.

    Raises:
        PrivacyParameterError: invalid parameters.

    Example:
        >>> round(gaussian_delta(1.0, 1.0, 1.0), 6)
        0.126937
    """
    s = check_nonnegative(sensitivity, "sensitivity", error=_ERR)
    sg = check_positive(sigma, "sigma", error=_ERR)
    e = check_positive(epsilon, "epsilon", error=_ERR)
    if s == 0:
        return 0.0
    return _gaussian_delta_mu(s / sg, e)


def gaussian_epsilon(sensitivity: float, sigma: float, delta: float) -> float:
    """Smallest epsilon for which the Gaussian mechanism is (epsilon, delta)-DP.

    Root of ``gaussian_delta(epsilon) = delta`` (Brent's method on ``log delta``,
    absolute tolerance 1e-13, the bracket end on the safe side is returned).
    Returns 0 when ``delta`` is already reached at epsilon = 0, i.e. when the
    total variation ``2 Phi(mu/2) - 1 <= delta``.

    Args:
        sensitivity: L2 sensitivity, >= 0 (0 gives epsilon = 0).
        sigma: noise standard deviation, > 0.
        delta: target delta in (0, 1).

    Returns:
        epsilon >= 0.

    Raises:
        PrivacyParameterError: invalid parameters.

    Example:
        >>> round(gaussian_epsilon(1.0, 1.0, 1e-5), 4)
        4.3772
        >>> round(gaussian_epsilon(1.0, 1.0, gaussian_delta(1.0, 1.0, 2.0)), 9)
        2.0
    """
    s = check_nonnegative(sensitivity, "sensitivity", error=_ERR)
    sg = check_positive(sigma, "sigma", error=_ERR)
    d = check_open_unit(delta, "delta", error=_ERR)
    if s == 0:
        return 0.0
    return _gaussian_epsilon_mu(s / sg, d)


def _safe_root(phi: Callable[[float], float], a: float, b: float) -> float:
    """A root of ``phi`` between ``a`` (``phi(a) > 0``) and ``b`` (``phi(b) <= 0``), on the ``phi <= 0`` side.

    ``phi`` is monotone between ``a`` and ``b``; ``phi(b)`` may be ``-inf``.
    """
    from scipy.optimize import brentq

    for _ in range(_MAX_ITER):  # brentq cannot interpolate with -inf: bisect until phi(b) is finite
        if math.isfinite(phi(b)):
            break
        m = 0.5 * (a + b)
        if phi(m) > 0:
            a = m
        else:
            b = m
    x = float(brentq(phi, min(a, b), max(a, b), xtol=_XTOL * max(1.0, min(abs(a), abs(b))),
                     rtol=4 * np.finfo(float).eps))
    direction = 1.0 if b > a else -1.0
    for _ in range(_MAX_ITER):  # brentq brackets the root; step to the safe side if needed
        if phi(x) <= 0:
            return x
        x += direction * max(_XTOL * abs(b - a), 4 * np.finfo(float).eps * abs(x))
    return b


def _gaussian_epsilon_mu(mu: float, delta: float) -> float:
    """Smallest epsilon of the Gaussian mechanism with ``mu = sensitivity / sigma`` at ``delta`` (safe side).

    ``inf`` where ``mu^2`` overflows: epsilon exceeds ``mu^2 / 2 - mu sqrt(2 ln(1/delta))``, beyond every float.
    """
    if not math.isfinite(mu * mu):
        return math.inf
    log_d = math.log(delta)
    if _log_gaussian_delta(mu, 0.0) <= log_d:
        return 0.0

    def f(e: float) -> float:  # decreasing in epsilon
        return _log_gaussian_delta(mu, e) - log_d

    hi = max(1.0, mu * mu)
    for _ in range(_MAX_ITER):
        if f(hi) <= 0:
            break
        hi *= 2.0
    return _safe_root(f, 0.0, hi)


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest sigma for which the Gaussian mechanism is (epsilon, delta)-DP (analytic, any epsilon).

    Solves ``gaussian_delta(sensitivity, sigma, epsilon) = delta`` for ``mu =
    sensitivity / sigma`` (delta increases with mu) by Brent's method on ``log
    delta``; the returned sigma is on the safe side of the root.

    Args:
        sensitivity: L2 sensitivity, > 0.
        epsilon: target epsilon, > 0.
        delta: target delta in (0, 1).

    Returns:
        sigma > 0.

    Raises:
        PrivacyParameterError: invalid parameters.

    Example:
        >>> round(gaussian_sigma(1.0, 1.0, 1e-5), 4)
        3.7306
        >>> round(gaussian_sigma(2.0, 1.0, gaussian_delta(2.0, 3.0, 1.0)), 9)
        3.0
    """
    s = check_positive(sensitivity, "sensitivity", error=_ERR)
    e = check_positive(epsilon, "epsilon", error=_ERR)
    d = check_open_unit(delta, "delta", error=_ERR)
    log_d = math.log(d)

    def g(mu: float) -> float:
        return _log_gaussian_delta(mu, e) - log_d

    hi = 1.0
    for _ in range(_MAX_ITER):  # delta -> 1 as mu -> infinity
        if g(hi) >= 0:
            break
        hi *= 2.0
    lo = hi / 2.0
    for _ in range(_MAX_ITER):  # delta -> 0 as mu -> 0
        if g(lo) <= 0:
            break
        lo /= 2.0
    sigma = s / lo if g(lo) == 0 else s / _safe_root(g, hi, lo)
    # sigma = s / mu rounds; where delta is steep one ulp of mu moves delta by ~1e-12
    # relative, so step sigma up by ulps until the target is met again
    for _ in range(64):
        if _log_gaussian_delta(s / sigma, e) <= log_d:
            break
        sigma = math.nextafter(sigma, math.inf)
    return sigma
