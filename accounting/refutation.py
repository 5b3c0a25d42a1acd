"""Decide whether evidence about one adjacent pair refutes a privacy claim of any form.

Evidence is of two kinds:

* an exact privacy profile of a constructed pair
  (:class:`accounting.profiles.PrivacyProfile`): no sampling error. Its
  ``delta(epsilon)`` is compared with what the claim allows at the check's
  epsilon (:meth:`~accounting.claim_forms.PureDP.delta_bound`), and its exact
  Rényi divergences with what the claim allows at each order
  (:meth:`~accounting.claim_forms.PureDP.renyi_bound`);
* certified lower bounds on ``delta(epsilon)`` from samples
  (:class:`accounting.delta_bounds.DeltaLowerBound`), each compared with what
  the claim allows at its own epsilon; a refutation then holds at the bound's
  confidence.

Where a check's epsilon comes from (:func:`check_epsilon`): a pure or
approximate claim is checked at its own epsilon; a Rényi or zCDP claim at its
conversion to ``(epsilon, delta)`` at the check's ``delta`` (what ``delta``
means per form: :data:`accounting.claim_forms.DELTA_MEANING`).

Example:
    >>> from accounting.claim_forms import ZeroConcentratedDP
    >>> from accounting.profiles import PrivacyProfile
    >>> r = refute(ZeroConcentratedDP(0.5), profile=PrivacyProfile(1.1))
    >>> r.refuted, r.method, r.alpha is not None
    (True, 'exact renyi divergence', True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.validation import check_nonnegative, check_open_unit

from .claim_forms import SUBSAMPLING_NOTE, ClaimForm, as_form
from .delta_bounds import DeltaLowerBound
from .errors import PrivacyParameterError
from .profiles import PrivacyProfile, RenyiLowerBound

__all__ = ["DEFAULT_ALPHAS", "Refutation", "check_epsilon", "refute"]

DEFAULT_ALPHAS: tuple[float, ...] = tuple(float(a) for a in 1.0 + np.geomspace(1e-2, 1e4, 121))
"""Orders at which exact Rényi divergences are compared with zCDP and pure claims (RDP claims: their own order)."""


@dataclass(frozen=True)
class Refutation:
    """Whether a claim is refuted, by what, and what the numbers mean.

    Attributes:
        refuted: the claim is refuted (at ``confidence``).
        form: the claim's form (``"pure"``, ``"approximate"``, ``"renyi"``, ``"zcdp"``).
        claim: the claim as a dict (:meth:`~accounting.claim_forms.PureDP.to_dict`).
        method: what refutes it (``"exact profile (<how>)"``, ``"exact renyi
            divergence"`` or a bound's method), ``None`` when not refuted.
        confidence: 1.0 for exact evidence, the bound's level otherwise; ``None`` when not refuted.
        epsilon, delta_allowed, delta_witness: for a delta witness: the epsilon,
            what the claim allows there, and the certified (or exact) delta.
        alpha, renyi_allowed, renyi_witness: for a Rényi witness.
        reason: one line for the report.
        delta_meaning: what the check's ``delta`` means for this form.
        scope: the note that amplification by subsampling is out of scope.
    """

    refuted: bool
    form: str
    claim: dict[str, Any]
    method: str | None
    confidence: float | None
    reason: str
    delta_meaning: str
    epsilon: float | None = None
    delta_allowed: float | None = None
    delta_witness: float | None = None
    alpha: float | None = None
    renyi_allowed: float | None = None
    renyi_witness: float | None = None
    scope: str = SUBSAMPLING_NOTE

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field (infinite values as strings ``"inf"``)."""
        out = dict(self.__dict__)
        for k, v in out.items():
            if isinstance(v, float) and math.isinf(v):
                out[k] = "inf" if v > 0 else "-inf"
        return out


def check_epsilon(claim: Any, delta: float | None = None) -> float:
    """The epsilon at which ``delta(epsilon)`` evidence is compared with a claim.

    Pure and approximate claims: their own epsilon. Rényi and zCDP claims:
    their conversion to ``(epsilon, delta)`` at the check's ``delta``.

    Args:
        claim: a claim form, an ``(epsilon, delta)`` pair or a :class:`~accounting.claims.Claim`.
        delta: the check's delta, in ``(0, 1)``; required for Rényi and zCDP claims.

    Returns:
        ``epsilon``.

    Raises:
        PrivacyParameterError: a Rényi or zCDP claim without ``delta``, or bad values.

    Example:
        >>> from accounting.claim_forms import RenyiDP
        >>> check_epsilon((1.0, 1e-5)), round(check_epsilon(RenyiDP(10.0, 0.5), 1e-5), 3)
        (1.0, 1.418)
    """
    form = as_form(claim)
    if form.form in ("pure", "approximate"):
        return float(form.epsilon)  # type: ignore[union-attr]
    if delta is None:
        raise PrivacyParameterError(f"a {form.form} claim ({form.describe()}) is checked at a delta: pass delta")
    return form.epsilon_at(check_open_unit(delta, "delta", error=PrivacyParameterError))


def _apart(witness: float, allowed: float, digits: int = 6) -> tuple[str, str]:
    """The two numbers with enough significant digits (6 to 17) that the text shows the witness above the allowed."""
    for d in range(digits, 18):
        a, b = f"{witness:.{d}g}", f"{allowed:.{d}g}"
        if a != b:
            return a, b
    return a, b


def _exceeds(witness: float, allowed: float, rtol: float) -> bool:
    """``witness`` above ``allowed`` by more than the relative round-off ``rtol`` of the witness."""
    return witness * (1.0 - rtol) > allowed


def refute(claim: Any, *, profile: PrivacyProfile | None = None, bounds: Sequence[DeltaLowerBound] = (),
           delta: float | None = None, alphas: Sequence[float] = DEFAULT_ALPHAS, rtol: float = 1e-9,
           renyi_bounds: Sequence[RenyiLowerBound] = ()) -> Refutation:
    """Whether an exact profile or certified delta bounds refute a claim of any form.

    Order of evidence (the first that refutes is reported): the profile's
    ``delta`` at :func:`check_epsilon`; the profile's exact Rényi divergences
    (the claimed order for a Rényi claim, every order of ``alphas`` for zCDP
    and pure claims; approximate claims bound no divergence); then each
    bound in ``bounds``, at its own epsilon; then each certified Rényi bound in
    ``renyi_bounds``, at its own order (e.g.
    :func:`accounting.profiles.schedule_renyi_lower`). A witness must exceed what the
    claim allows by more than ``rtol`` (relative round-off of the closed forms).

    Several bounds are several tests: if they rest on the same samples, give
    each a share of the failure probability (e.g.
    :func:`accounting.delta_bounds.best_delta_lower`).

    Args:
        claim: a claim form, an ``(epsilon, delta)`` pair or a :class:`~accounting.claims.Claim`.
        profile: the pair's exact (or certified-lower) profile, if known.
        bounds: certified lower bounds on the pair's ``delta(epsilon)``.
        delta: the check's delta (needed for a profile's delta test of a Rényi or zCDP claim; else skipped).
        alphas: orders for the Rényi test of zCDP and pure claims (each ``> 1``).
        rtol: ``>= 0``.

    Returns:
        A :class:`Refutation`.

    Raises:
        PrivacyParameterError: a bad claim, profile, bound, delta, order or rtol.

    Example:
        >>> from accounting.delta_bounds import DeltaLowerBound
        >>> b = DeltaLowerBound("clopper-pearson thresholds", 1.0, 2e-3, 9e-3, 0.99, 1000)
        >>> r = refute((1.0, 1e-3), bounds=[b])
        >>> r.refuted, r.method, r.confidence, r.delta_allowed
        (True, 'clopper-pearson thresholds', 0.99, 0.001)
    """
    form: ClaimForm = as_form(claim)
    tol = check_nonnegative(rtol, "rtol", error=PrivacyParameterError)
    base: dict[str, Any] = {"form": form.form, "claim": form.to_dict(), "delta_meaning": form.delta_meaning}
    notes: list[str] = []
    if profile is not None and not isinstance(profile, PrivacyProfile):
        raise PrivacyParameterError(f"profile must be an accounting.profiles.PrivacyProfile, got {profile!r}")
    if profile is not None:
        if form.form in ("pure", "approximate") or delta is not None:
            eps = check_epsilon(form, delta)
            allowed = form.delta_bound(eps)
            got = profile.delta(eps)
            if _exceeds(got, allowed, tol):
                how = "exact" if profile.exact else "certified lower bound"
                return Refutation(
                    True, method=f"exact profile ({profile.method})", confidence=1.0, epsilon=eps,
                    delta_allowed=allowed, delta_witness=got,
                    reason=(f"the pair's privacy profile ({how}, {profile.method}) has delta({eps:.6g}) = {got:.4g} "
                            f"> {allowed:.4g} allowed by the claim {form.describe()}"), **base)
            notes.append(f"profile delta({eps:.6g}) = {got:.4g} <= allowed {allowed:.4g}")
        if form.form != "approximate":
            orders = [form.alpha] if form.form == "renyi" else list(alphas)  # type: ignore[union-attr]
            for a in orders:
                if not a > 1:
                    raise PrivacyParameterError(f"alphas must be > 1, got {a!r}")
                allowed_r, got_r = form.renyi_bound(a), profile.renyi(a)
                if _exceeds(got_r, allowed_r, tol):
                    got_t, allowed_t = _apart(got_r, allowed_r)
                    return Refutation(
                        True, method="exact renyi divergence", confidence=1.0, alpha=float(a),
                        renyi_allowed=allowed_r, renyi_witness=got_r,
                        reason=(f"the pair's Renyi divergence of order {a:.6g} is {got_t} > {allowed_t} "
                                f"allowed by the claim {form.describe()} (exact, {profile.method})"), **base)
            notes.append(f"exact Renyi divergences within the claim at {len(orders)} order(s)")
    for b in bounds:
        if not isinstance(b, DeltaLowerBound):
            raise PrivacyParameterError(f"bounds must hold DeltaLowerBound items, got {b!r}")
        allowed = form.delta_bound(b.epsilon)
        if b.lower > 0 and _exceeds(b.lower, allowed, tol):
            return Refutation(
                True, method=b.method, confidence=b.confidence, epsilon=b.epsilon, delta_allowed=allowed,
                delta_witness=b.lower,
                reason=(f"delta({b.epsilon:.6g}) >= {b.lower:.4g} ({b.method}, confidence {b.confidence:.6g}, "
                        f"{b.samples} samples) > {allowed:.4g} allowed by the claim {form.describe()}"), **base)
        notes.append(f"{b.method}: delta({b.epsilon:.6g}) >= {b.lower:.4g} <= allowed {allowed:.4g}")
    for rb in renyi_bounds:
        if not isinstance(rb, RenyiLowerBound):
            raise PrivacyParameterError(f"renyi_bounds must hold RenyiLowerBound items, got {rb!r}")
        allowed_r = form.renyi_bound(rb.alpha)
        if _exceeds(rb.lower, allowed_r, tol):
            got_t, allowed_t = _apart(rb.lower, allowed_r)
            return Refutation(
                True, method=rb.method, confidence=rb.confidence, alpha=rb.alpha, renyi_allowed=allowed_r,
                renyi_witness=rb.lower,
                reason=(f"the pair's Renyi divergence of order {rb.alpha:.6g} is at least {got_t} ({rb.method}, "
                        f"confidence {rb.confidence:.6g}, {rb.samples} samples) > {allowed_t} allowed by the claim "
                        f"{form.describe()}"), **base)
    if renyi_bounds:
        near = max(renyi_bounds, key=lambda rb: rb.lower / form.renyi_bound(rb.alpha))  # the nearest to refuting
        notes.append(f"{renyi_bounds[0].method}: within the claim at {len(renyi_bounds)} order(s); nearest at order "
                     f"{near.alpha:.6g}: at least {near.lower:.6g} (confidence {near.confidence:.6g}, {near.samples} "
                     f"samples) <= {form.renyi_bound(near.alpha):.6g} allowed")
    reason = "not refuted: " + ("; ".join(notes) if notes else "no evidence given")
    return Refutation(False, method=None, confidence=None, reason=reason, **base)
