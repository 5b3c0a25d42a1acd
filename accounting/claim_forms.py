"""The forms a privacy claim can take, what each implies, and the conversions between them.

* :class:`PureDP` ``epsilon``: ``P[M(D) in S] <= e^epsilon P[M(D') in S]``.
* :class:`ApproxDP` ``(epsilon, delta)``: ``... + delta``; equivalently the
  privacy profile of every adjacent pair has ``delta(epsilon) <= delta``.
* :class:`RenyiDP` ``(alpha, epsilon)``: ``D_alpha(M(D) || M(D')) <= epsilon``
  for every adjacent pair (Mironov, CSF 2017).
* :class:`ZeroConcentratedDP` ``rho``: ``D_alpha <= rho alpha`` for every
  ``alpha > 1`` (Bun and Steinke, TCC 2016).

Every form answers the two questions a refutation needs (:mod:`accounting.refutation`):

* :meth:`delta_bound`: the largest ``delta(epsilon)`` the claim allows an
  adjacent pair at a given ``epsilon``. A certified lower bound on a pair's
  ``delta(epsilon)`` above it refutes the claim. Pure and approximate DP use
  the privacy region of Kairouz, Oh and Viswanath (ICML 2015, Thm 2.1):
  ``delta + (1 - delta) (e^epsilon_c - e^epsilon) / (1 + e^epsilon_c)`` below
  the claimed ``epsilon_c``; Rényi DP the improved conversion of Canonne,
  Kamath and Steinke (NeurIPS 2020, Prop. 12; also Asoodeh et al. 2021) and
  Mironov's standard one (Prop. 3), whichever is smaller; zCDP the same at
  ``epsilon_alpha = rho alpha``, minimized over ``alpha``, and Bun and
  Steinke's ``rho + 2 sqrt(rho log(1/delta))`` (Prop. 1.3).
* :meth:`renyi_bound`: the largest ``D_alpha`` the claim allows. Pure
  ``epsilon``: ``min(epsilon, alpha epsilon^2 / 2)`` (Rényi divergences grow
  with ``alpha`` up to ``D_inf <= epsilon``; Bun and Steinke, Prop. 3.3);
  approximate DP with ``delta > 0``: none (``inf``); Rényi ``(alpha_c,
  epsilon_c)``: ``epsilon_c`` for ``alpha <= alpha_c``; zCDP: ``rho alpha``.
  An exact Rényi divergence above it refutes the claim.

:meth:`epsilon_at` converts a claim to ``(epsilon, delta)``, and
:attr:`delta_meaning` says what the ``delta`` of a check means for the form.
Amplification by subsampling is out of scope: every claim is about the
mechanism run on the whole data set.

Example:
    >>> c = ZeroConcentratedDP(0.5)
    >>> round(c.epsilon_at(1e-5), 3), round(rdp_to_dp(2.0, 1.0, 1e-5, improved=False), 3)
    (4.728, 12.513)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from topology.validation import check_nonnegative, check_open_unit, check_positive, check_real

from .errors import PrivacyParameterError

__all__ = [
    "FORMS",
    "PureDP",
    "ApproxDP",
    "RenyiDP",
    "ZeroConcentratedDP",
    "ClaimForm",
    "DELTA_MEANING",
    "SUBSAMPLING_NOTE",
    "rdp_to_dp",
    "rdp_delta_bound",
    "zcdp_to_rdp",
    "zcdp_to_dp",
    "zcdp_delta_bound",
    "approx_delta_bound",
    "as_form",
]

_E = PrivacyParameterError

FORMS: tuple[str, ...] = ("pure", "approximate", "renyi", "zcdp")
"""The form names, as in reports and JSON."""

SUBSAMPLING_NOTE = ("amplification by subsampling is out of scope: every claim is about the mechanism run on the "
                    "whole data set")

DELTA_MEANING: dict[str, str] = {
    "pure": "the claim has delta = 0: any pair with delta(epsilon) > 0 at the claimed epsilon refutes it; "
            "the check's delta only sets where the accountant's own epsilon is reported",
    "approximate": "the claimed delta: every adjacent pair must have delta(epsilon) <= delta at the claimed epsilon",
    "renyi": "the claim has no delta: the check's delta is where the claim is converted to (epsilon, delta) "
             "(improved conversion) for the report and for sampled refutations; exact Renyi divergences are "
             "compared with the claim directly",
    "zcdp": "the claim has no delta: the check's delta is where the claim is converted to (epsilon, delta) "
            "(best of the improved RDP conversion over alpha and Bun-Steinke) for the report and for sampled "
            "refutations; exact Renyi divergences are compared with rho * alpha directly",
}
"""What the ``delta`` of a check (the CLI's ``--delta``) means for each form."""


def _exact(x: float, digits: int = 6) -> str:
    """``x`` with ``digits`` significant digits, more (up to 17) when those would state another number: a claim's
    description must name the claim, not a rounding of it (``0.2199999-zCDP`` is not ``0.22-zCDP``)."""
    for d in range(digits, 18):
        text = f"{x:.{d}g}"
        if float(text) == x:
            return text
    return text


def _alpha(alpha: Any) -> float:
    a = check_real(alpha, "alpha", error=_E)
    if not a > 1:
        raise PrivacyParameterError(f"alpha must be > 1, got {alpha!r}")
    return a


def approx_delta_bound(epsilon_claimed: float, delta_claimed: float, epsilon: float) -> float:
    """The largest ``delta(epsilon)`` an ``(epsilon_c, delta_c)``-DP mechanism allows a pair.

    ``delta_c`` for ``epsilon >= epsilon_c`` (profiles do not increase), and
    ``delta_c + (1 - delta_c)(e^epsilon_c - e^epsilon)/(1 + e^epsilon_c)`` below:
    the profile of the mechanism that dominates every ``(epsilon_c,
    delta_c)``-DP mechanism (Kairouz, Oh and Viswanath, ICML 2015, Thm 2.1).

    Args:
        epsilon_claimed: ``epsilon_c >= 0``.
        delta_claimed: ``delta_c`` in ``[0, 1)``.
        epsilon: where, ``>= 0``.

    Returns:
        The bound, in ``[0, 1]``.

    Raises:
        PrivacyParameterError: bad parameters (named).

    Example:
        >>> approx_delta_bound(1.0, 1e-5, 2.0), round(approx_delta_bound(1.0, 0.0, 0.0), 4)
        (1e-05, 0.4621)
    """
    ec = check_nonnegative(epsilon_claimed, "epsilon_claimed", error=_E)
    dc = check_real(delta_claimed, "delta_claimed", error=_E)
    if not 0 <= dc < 1:
        raise PrivacyParameterError(f"delta_claimed must lie in [0, 1), got {delta_claimed!r}")
    e = check_nonnegative(epsilon, "epsilon", error=_E)
    if e >= ec:
        return dc
    # (e^ec - e^e) / (1 + e^ec) = (1 - e^(e - ec)) / (1 + e^-ec), no overflow
    return dc + (1 - dc) * -math.expm1(e - ec) / (1 + math.exp(-ec))


def rdp_delta_bound(alpha: float, epsilon_alpha: float, epsilon: float) -> float:
    """The largest ``delta(epsilon)`` an ``(alpha, epsilon_alpha)``-RDP mechanism allows a pair.

    The smaller of the standard bound ``exp((alpha - 1)(epsilon_alpha - epsilon))``
    (Mironov, CSF 2017, Prop. 3) and the improved
    ``exp((alpha - 1)(epsilon_alpha - epsilon + log(1 - 1/alpha)) - log alpha)``
    (Canonne, Kamath and Steinke, NeurIPS 2020, Prop. 12), capped at 1.

    Args:
        alpha: the order, ``> 1``.
        epsilon_alpha: the Rényi bound, ``>= 0``.
        epsilon: ``>= 0``.

    Returns:
        The bound, in ``[0, 1]``.

    Raises:
        PrivacyParameterError: bad parameters (named).

    Example:
        >>> f"{rdp_delta_bound(10.0, 0.5, 3.0):.3e}"
        '6.555e-12'
    """
    a = _alpha(alpha)
    r = check_nonnegative(epsilon_alpha, "epsilon_alpha", error=_E)
    e = check_nonnegative(epsilon, "epsilon", error=_E)
    standard = (a - 1) * (r - e)
    improved = (a - 1) * (r - e + math.log1p(-1 / a)) - math.log(a)
    return math.exp(min(0.0, standard, improved))


def rdp_to_dp(alpha: float, epsilon_alpha: float, delta: float, *, improved: bool = True) -> float:
    """Convert ``(alpha, epsilon_alpha)``-RDP to an ``epsilon`` at ``delta``.

    Standard (Mironov, CSF 2017, Prop. 3): ``epsilon_alpha + log(1/delta)/(alpha - 1)``.
    Improved (Canonne, Kamath and Steinke, NeurIPS 2020, Prop. 12):
    ``epsilon_alpha + log((alpha - 1)/alpha) - (log delta + log alpha)/(alpha - 1)``,
    never larger than the standard one.

    Args:
        alpha: ``> 1``.
        epsilon_alpha: ``>= 0``.
        delta: in ``(0, 1)``.
        improved: the improved conversion (default) or the standard one.

    Returns:
        ``epsilon >= 0``.

    Raises:
        PrivacyParameterError: bad parameters (named).

    Example:
        >>> round(rdp_to_dp(10.0, 0.5, 1e-5), 4), round(rdp_to_dp(10.0, 0.5, 1e-5, improved=False), 4)
        (1.418, 1.7792)
    """
    a = _alpha(alpha)
    r = check_nonnegative(epsilon_alpha, "epsilon_alpha", error=_E)
    d = check_open_unit(delta, "delta", error=_E)
    standard = r + math.log(1 / d) / (a - 1)
    if not improved:
        return standard
    return max(0.0, min(standard, r + math.log1p(-1 / a) - (math.log(d) + math.log(a)) / (a - 1)))


def zcdp_to_rdp(rho: float, alpha: float) -> float:
    """``rho``-zCDP is ``(alpha, rho alpha)``-RDP for every ``alpha > 1`` (Bun and Steinke, TCC 2016, Def. 1.1).

    Example:
        >>> zcdp_to_rdp(0.5, 4.0)
        2.0
    """
    return check_positive(rho, "rho", error=_E) * _alpha(alpha)


def _best_alpha(objective: Any) -> float:
    """Minimize a function of ``alpha`` (convex in the uses here) over ``(1, 1e6]``; any alpha is valid."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda u: objective(1.0 + math.exp(u)), bounds=(-20.0, math.log(1e6)), method="bounded",
                          options={"xatol": 1e-10})
    return 1.0 + math.exp(float(res.x))


def zcdp_to_dp(rho: float, delta: float) -> float:
    """Convert ``rho``-zCDP to an ``epsilon`` at ``delta``: the best of two valid conversions.

    Bun and Steinke (TCC 2016, Prop. 1.3): ``rho + 2 sqrt(rho log(1/delta))``;
    and :func:`rdp_to_dp` (improved) at ``epsilon_alpha = rho alpha``, with
    ``alpha`` optimized numerically (any ``alpha`` gives a valid epsilon, so an
    inexact optimum only loosens the value).

    Args:
        rho: ``> 0``.
        delta: in ``(0, 1)``.

    Returns:
        ``epsilon``.

    Raises:
        PrivacyParameterError: bad parameters (named).

    Example:
        >>> round(zcdp_to_dp(0.5, 1e-5), 4), round(0.5 + 2 * math.sqrt(0.5 * math.log(1e5)), 4)
        (4.7284, 5.2985)
    """
    p = check_positive(rho, "rho", error=_E)
    d = check_open_unit(delta, "delta", error=_E)
    bun_steinke = p + 2 * math.sqrt(p * math.log(1 / d))
    a = _best_alpha(lambda x: rdp_to_dp(x, p * x, d))
    return min(bun_steinke, rdp_to_dp(a, p * a, d))


def zcdp_delta_bound(rho: float, epsilon: float) -> float:
    """The largest ``delta(epsilon)`` a ``rho``-zCDP mechanism allows a pair.

    The minimum over ``alpha`` of :func:`rdp_delta_bound` at ``rho alpha``,
    and Bun and Steinke's ``exp(-(epsilon - rho)^2 / (4 rho))`` for ``epsilon
    >= rho`` (the inverse of their Prop. 1.3). Every ``alpha`` gives a valid
    bound, so the numerical minimization can only loosen it.

    Args:
        rho: ``> 0``.
        epsilon: ``>= 0``.

    Returns:
        The bound, in ``[0, 1]``.

    Raises:
        PrivacyParameterError: bad parameters (named).

    Example:
        >>> round(zcdp_delta_bound(0.5, zcdp_to_dp(0.5, 1e-5)) / 1e-5, 6)
        1.0
    """
    p = check_positive(rho, "rho", error=_E)
    e = check_nonnegative(epsilon, "epsilon", error=_E)
    a = _best_alpha(lambda x: math.log(max(rdp_delta_bound(x, p * x, e), 1e-320)))
    best = rdp_delta_bound(a, p * a, e)
    if e >= p:
        gap = e - p
        best = min(best, math.exp(-(gap * gap) / (4 * p)))  # a product, not ** 2: inf (bound 0) where ** overflows
    return best


@dataclass(frozen=True)
class PureDP:
    """``epsilon``-DP.

    Raises:
        PrivacyParameterError: ``epsilon`` not ``> 0``.

    Example:
        >>> PureDP(1.0).describe(), PureDP(1.0).delta_bound(1.0)
        ('1-DP', 0.0)
    """

    epsilon: float
    form = "pure"

    def __post_init__(self) -> None:
        check_positive(self.epsilon, "epsilon", error=_E)

    def describe(self) -> str:
        """The claim in words, e.g. ``"1-DP"``."""
        return f"{_exact(self.epsilon)}-DP"

    def delta_bound(self, epsilon: float) -> float:
        """The largest ``delta(epsilon)`` allowed (:func:`approx_delta_bound` with ``delta = 0``)."""
        return approx_delta_bound(self.epsilon, 0.0, epsilon)

    def renyi_bound(self, alpha: float) -> float:
        """``min(epsilon, alpha epsilon^2 / 2)`` (Bun and Steinke, TCC 2016, Prop. 3.3)."""
        a = _alpha(alpha)
        return min(self.epsilon, a * (self.epsilon * self.epsilon) / 2)  # inf, not OverflowError, for epsilon ~1e155

    def epsilon_at(self, delta: float) -> float:
        """``epsilon`` at any ``delta``."""
        check_real(delta, "delta", error=_E)
        return float(self.epsilon)

    @property
    def delta_meaning(self) -> str:
        """What a check's ``delta`` means for this form (:data:`DELTA_MEANING`)."""
        return DELTA_MEANING[self.form]

    def to_dict(self) -> dict[str, Any]:
        """``{"form": "pure", "epsilon": ...}``."""
        return {"form": self.form, "epsilon": self.epsilon}


@dataclass(frozen=True)
class ApproxDP:
    """``(epsilon, delta)``-DP with ``delta`` in ``(0, 1)`` (``delta = 0`` is :class:`PureDP`).

    Raises:
        PrivacyParameterError: ``epsilon`` not ``>= 0`` or ``delta`` outside ``(0, 1)``.

    Example:
        >>> ApproxDP(1.0, 1e-5).describe(), ApproxDP(1.0, 1e-5).delta_bound(1.0)
        ('(1, 1e-05)-DP', 1e-05)
    """

    epsilon: float
    delta: float
    form = "approximate"

    def __post_init__(self) -> None:
        check_nonnegative(self.epsilon, "epsilon", error=_E)
        check_open_unit(self.delta, "delta", error=_E)

    def describe(self) -> str:
        """The claim in words."""
        return f"({_exact(self.epsilon)}, {_exact(self.delta, 3)})-DP"

    def delta_bound(self, epsilon: float) -> float:
        """The largest ``delta(epsilon)`` allowed (:func:`approx_delta_bound`)."""
        return approx_delta_bound(self.epsilon, self.delta, epsilon)

    def renyi_bound(self, alpha: float) -> float:
        """``inf``: approximate DP with ``delta > 0`` bounds no Rényi divergence."""
        _alpha(alpha)
        return math.inf

    def epsilon_at(self, delta: float) -> float:
        """The claimed ``epsilon`` for ``delta >= `` the claimed delta, ``inf`` below (nothing is implied)."""
        d = check_real(delta, "delta", error=_E)
        return float(self.epsilon) if d >= self.delta else math.inf

    @property
    def delta_meaning(self) -> str:
        """What a check's ``delta`` means for this form (:data:`DELTA_MEANING`)."""
        return DELTA_MEANING[self.form]

    def to_dict(self) -> dict[str, Any]:
        """``{"form": "approximate", "epsilon": ..., "delta": ...}``."""
        return {"form": self.form, "epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class RenyiDP:
    """``(alpha, epsilon)``-Rényi DP: ``D_alpha(M(D) || M(D')) <= epsilon`` for every adjacent pair.

    Raises:
        PrivacyParameterError: ``alpha`` not ``> 1`` and finite, ``epsilon`` not ``>= 0``.

    Example:
        >>> c = RenyiDP(10.0, 0.5)
        >>> c.describe(), c.renyi_bound(4.0), c.renyi_bound(20.0)
        ('(alpha=10, epsilon=0.5)-RDP', 0.5, inf)
    """

    alpha: float
    epsilon: float
    form = "renyi"

    def __post_init__(self) -> None:
        _alpha(self.alpha)
        check_nonnegative(self.epsilon, "epsilon", error=_E)

    def describe(self) -> str:
        """The claim in words."""
        return f"(alpha={_exact(self.alpha)}, epsilon={_exact(self.epsilon)})-RDP"

    def delta_bound(self, epsilon: float) -> float:
        """The largest ``delta(epsilon)`` allowed (:func:`rdp_delta_bound`)."""
        return rdp_delta_bound(self.alpha, self.epsilon, epsilon)

    def renyi_bound(self, alpha: float) -> float:
        """``epsilon`` for orders up to the claimed one (Rényi divergences grow with the order), ``inf`` above."""
        return float(self.epsilon) if _alpha(alpha) <= self.alpha else math.inf

    def epsilon_at(self, delta: float) -> float:
        """The improved conversion :func:`rdp_to_dp`."""
        return rdp_to_dp(self.alpha, self.epsilon, delta)

    @property
    def delta_meaning(self) -> str:
        """What a check's ``delta`` means for this form (:data:`DELTA_MEANING`)."""
        return DELTA_MEANING[self.form]

    def to_dict(self) -> dict[str, Any]:
        """``{"form": "renyi", "alpha": ..., "epsilon": ...}``."""
        return {"form": self.form, "alpha": self.alpha, "epsilon": self.epsilon}


@dataclass(frozen=True)
class ZeroConcentratedDP:
    """``rho``-zCDP: ``D_alpha(M(D) || M(D')) <= rho alpha`` for every ``alpha > 1`` and adjacent pair.

    Raises:
        PrivacyParameterError: ``rho`` not ``> 0``.

    Example:
        >>> ZeroConcentratedDP(0.125).describe(), ZeroConcentratedDP(0.125).renyi_bound(8.0)
        ('0.125-zCDP', 1.0)
    """

    rho: float
    form = "zcdp"

    def __post_init__(self) -> None:
        check_positive(self.rho, "rho", error=_E)

    def describe(self) -> str:
        """The claim in words."""
        return f"{_exact(self.rho)}-zCDP"

    def delta_bound(self, epsilon: float) -> float:
        """The largest ``delta(epsilon)`` allowed (:func:`zcdp_delta_bound`)."""
        return zcdp_delta_bound(self.rho, epsilon)

    def renyi_bound(self, alpha: float) -> float:
        """``rho alpha``."""
        return zcdp_to_rdp(self.rho, alpha)

    def epsilon_at(self, delta: float) -> float:
        """:func:`zcdp_to_dp`."""
        return zcdp_to_dp(self.rho, delta)

    @property
    def delta_meaning(self) -> str:
        """What a check's ``delta`` means for this form (:data:`DELTA_MEANING`)."""
        return DELTA_MEANING[self.form]

    def to_dict(self) -> dict[str, Any]:
        """``{"form": "zcdp", "rho": ...}``."""
        return {"form": self.form, "rho": self.rho}


ClaimForm = PureDP | ApproxDP | RenyiDP | ZeroConcentratedDP
"""Any of the four claim forms."""


def as_form(claim: Any) -> ClaimForm:
    """A claim form from a form, an ``(epsilon, delta)`` pair (the historical claim) or a :class:`~accounting.claims.Claim`.

    ``(epsilon, 0)`` is :class:`PureDP`, ``(epsilon, delta > 0)`` is :class:`ApproxDP`.

    Args:
        claim: a :data:`ClaimForm`, a pair ``(epsilon, delta)``, or an object
            with ``privacy_form()`` (a :class:`~accounting.claims.Claim`).

    Returns:
        The form.

    Raises:
        PrivacyParameterError: anything else, or bad numbers.

    Example:
        >>> as_form((1.0, 0.0)), as_form((1.0, 1e-5))
        (PureDP(epsilon=1.0), ApproxDP(epsilon=1.0, delta=1e-05))
    """
    if isinstance(claim, (PureDP, ApproxDP, RenyiDP, ZeroConcentratedDP)):
        return claim
    if hasattr(claim, "privacy_form"):
        return claim.privacy_form()
    if isinstance(claim, tuple) and len(claim) == 2:
        eps, delta = claim
        d = check_real(delta, "delta", error=_E)
        return PureDP(eps) if d == 0 else ApproxDP(eps, d)
    raise PrivacyParameterError(f"a claim must be a claim form, an (epsilon, delta) pair or a Claim, got {claim!r}")
