"""A paper's privacy statement (:class:`Claim`) and the verifier that compares it with a recomputation.

These records are generic: every paper module in :mod:`accounting.papers`
builds its :class:`Claim` from its own theorem and recomputes the privacy loss
from plain numbers (the noise scales actually used and a sensitivity derived
independently); :func:`verify` compares the two at the same level (per
iteration, per round, or for the whole run).

Example:
    >>> c = Claim("Cheng, Liao and Li (arXiv 2022)", "Theorem 2", 0.5, 0.0, "round")
    >>> verify(c, 0.5).holds
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING

from topology.validation import check_nonnegative, check_positive, check_real

from .errors import PrivacyParameterError

if TYPE_CHECKING:
    from .claim_forms import ClaimForm

__all__ = ["LEVELS", "Claim", "Verdict", "verify"]

_E = PrivacyParameterError

LEVELS = ("run", "iteration", "round")
"""The level a claim is made at: the whole run, one iteration, one round."""


@dataclass(frozen=True)
class Claim:
    """A paper's privacy statement.

    Attributes:
        paper: the citation of the paper, e.g. ``"Huang, Mitra and Vaidya (ICDCN 2015)"``.
        statement: the theorem and what it asserts.
        epsilon: the claimed epsilon, ``> 0``.
        delta: the claimed delta, in ``[0, 1)``.
        per: ``"run"``, ``"iteration"`` or ``"round"`` (see :data:`LEVELS`).
        notes: conditions, caveats and known problems.
        form: the claim's form when it is not plain ``(epsilon, delta)``: a
            :class:`~accounting.claim_forms.RenyiDP` or
            :class:`~accounting.claim_forms.ZeroConcentratedDP` (``epsilon`` and
            ``delta`` then hold the paper's ``(epsilon, delta)`` statement or
            the form's conversion, which :func:`verify` compares), or ``None``
            for the form given by ``(epsilon, delta)`` (:meth:`privacy_form`).

    Raises:
        PrivacyParameterError: ``epsilon <= 0``, ``delta`` outside ``[0, 1)``, an unknown ``per``, a
            ``form`` that is not a claim form, or a pure/approximate ``form`` that disagrees with
            ``(epsilon, delta)``.

    Example:
        >>> Claim("Huang, Mitra and Vaidya (ICDCN 2015)", "Theorem 5", 1.0, 0.0, "run", "").per
        'run'
    """

    paper: str
    statement: str
    epsilon: float
    delta: float
    per: str
    notes: str = ""
    form: ClaimForm | None = None

    def __post_init__(self) -> None:
        check_positive(self.epsilon, "epsilon", error=_E)
        d = check_real(self.delta, "delta", error=_E)
        if not 0 <= d < 1:
            raise PrivacyParameterError(f"delta must lie in [0, 1), got {self.delta!r}")
        if self.per not in LEVELS:
            raise PrivacyParameterError(f"per must be one of {LEVELS}, got {self.per!r}")
        if self.form is not None:
            from .claim_forms import ApproxDP, PureDP, RenyiDP, ZeroConcentratedDP, as_form

            if not isinstance(self.form, (PureDP, ApproxDP, RenyiDP, ZeroConcentratedDP)):
                raise PrivacyParameterError(f"form must be a claim form (accounting.claim_forms), got {self.form!r}")
            if isinstance(self.form, (PureDP, ApproxDP)) and self.form != as_form((self.epsilon, self.delta)):
                raise PrivacyParameterError(
                    f"form {self.form!r} disagrees with (epsilon, delta) = ({self.epsilon!r}, {self.delta!r})")

    def privacy_form(self) -> ClaimForm:
        """The claim's form: :attr:`form` if given, else pure (``delta = 0``) or approximate DP.

        Example:
            >>> Claim("Huang, Mitra and Vaidya (ICDCN 2015)", "Theorem 5", 1.0, 0.0, "run").privacy_form()
            PureDP(epsilon=1.0)
        """
        if self.form is not None:
            return self.form
        from .claim_forms import as_form

        return as_form((self.epsilon, self.delta))


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`verify`.

    Attributes:
        holds: whether the computed ``(epsilon, delta)`` is within the claim.
        gap: computed epsilon minus claimed epsilon (positive = the claim is too optimistic).
        message: a one-line human-readable verdict.
        delta_gap: computed delta minus claimed delta.
        claim: the claim that was checked.
    """

    holds: bool
    gap: float
    message: str
    delta_gap: float = 0.0
    claim: Claim | None = None


def verify(claim: Claim, computed_epsilon: float, computed_delta: float = 0.0, *, rtol: float = 1e-9) -> Verdict:
    """Compare a claim with an independently computed ``(epsilon, delta)`` at the same level.

    The claim holds if ``computed_epsilon <= claim.epsilon * (1 + rtol)`` and
    ``computed_delta <= claim.delta * (1 + rtol)``; ``rtol`` absorbs rounding
    in closed forms that are mathematically equal (default ``1e-9``).

    Args:
        claim: the paper's claim.
        computed_epsilon: the recomputed epsilon, ``>= 0`` (``inf`` allowed).
        computed_delta: the recomputed delta, in ``[0, 1]``.
        rtol: relative tolerance, ``>= 0``.

    Returns:
        A :class:`Verdict`.

    Raises:
        PrivacyParameterError: a negative or NaN epsilon, a delta outside ``[0, 1]``, a negative ``rtol``.

    Example:
        >>> v = verify(Claim("Huang, Mitra and Vaidya (ICDCN 2015)", "Theorem 5", 1.0, 0.0, "run"), 1.25)
        >>> v.holds, v.gap
        (False, 0.25)
    """
    if isinstance(computed_epsilon, bool) or not isinstance(computed_epsilon, Real) or (
        math.isnan(computed_epsilon) or computed_epsilon < 0
    ):
        raise PrivacyParameterError(f"computed_epsilon must be a number >= 0, got {computed_epsilon!r}")
    cd = check_real(computed_delta, "computed_delta", error=_E)
    if not 0 <= cd <= 1:
        raise PrivacyParameterError(f"computed_delta must lie in [0, 1], got {computed_delta!r}")
    rtol = check_nonnegative(rtol, "rtol", error=_E)
    ce = float(computed_epsilon)
    holds = ce <= claim.epsilon * (1 + rtol) and cd <= claim.delta * (1 + rtol)
    gap, dgap = ce - claim.epsilon, cd - claim.delta
    word = "holds" if holds else "VIOLATED"
    message = (
        f"{claim.paper}, {claim.statement}: claimed ({claim.epsilon:.6g}, {claim.delta:.3g}) per {claim.per}, "
        f"computed ({ce:.6g}, {cd:.3g}): {word} (epsilon gap {gap:+.3g}, delta gap {dgap:+.3g})"
    )
    return Verdict(holds=bool(holds), gap=gap, message=message, delta_gap=dgap, claim=claim)
