"""The verdict of a privacy check, from the steps' evidence: :func:`decide`.

* ``"violation"``: some evidence carries a witness (a transcript with loss
  above epsilon, a probed sensitivity above the claim, a black-box lower
  bound above epsilon, ...). The first witness, in step order, is reported.
* ``"no-claim"``: no witness, and the claimed epsilon is infinite (e.g. a
  theorem whose condition the parameters miss: any run would "pass").
* ``"pass"``: no witness, and the accountant's epsilon (the smallest
  :attr:`~asyncdp.privacy.evidence.Evidence.bound` of the evidence, bounds
  at the claimed delta) is within the claimed epsilon.
* ``"inconclusive"``: otherwise (nothing refutes the claim, and no composed
  bound implies it), or when some evidence doubts the bounds
  (:attr:`~asyncdp.privacy.evidence.Evidence.doubt`: e.g. the released noise
  is not the declared noise, or could not be verified).

Example:
    >>> from asyncdp.privacy.evidence import Evidence
    >>> decide([Evidence("basic composition", "declaration", {}, bound=0.9)], 1.0).verdict
    'pass'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topology.validation import check_real

from ..errors import ScenarioError
from .evidence import Evidence

__all__ = ["VERDICTS", "Decision", "decide"]

VERDICTS: tuple[str, ...] = ("violation", "pass", "no-claim", "inconclusive")
"""The possible verdicts."""

_RTOL = 1e-9
"""Relative tolerance of the comparisons with the claimed epsilon."""


@dataclass(frozen=True)
class Decision:
    """The verdict and what stands behind it.

    Attributes:
        verdict: one of :data:`VERDICTS`.
        reasons: every evidence's reasons in step order, then the verdict's own.
        witness: the first witness in step order (a plain dict), or ``None``.
        epsilon_accountant: the smallest bound of the evidence (``inf`` if none).
    """

    verdict: str
    reasons: tuple[str, ...]
    witness: dict[str, Any] | None
    epsilon_accountant: float


def _describe(bound: Evidence) -> str:
    """The bound's method, with the delta it holds at when the evidence states it (``delta_claimed``)."""
    delta = bound.figures.get("delta_claimed")
    return bound.method if delta is None else f"{bound.method} {delta:.3g}"


def decide(evidence: Iterable[Evidence], epsilon_claimed: float) -> Decision:
    """Combine the steps' evidence into the verdict (see the module docstring for the rule).

    Args:
        evidence: the evidence of every step, in step order.
        epsilon_claimed: the claimed epsilon (``inf`` for no claim). The
            claimed delta enters through the evidence: each bound holds at it.

    Returns:
        The :class:`Decision`. Its reasons add, when the accountant's epsilon
        exceeds the claim, which bounds it is the best of, and for
        ``"no-claim"`` why nothing can pass.

    Raises:
        ScenarioError: ``epsilon_claimed`` is not a real number (or is NaN),
            or an item is not an :class:`Evidence`.

    Example:
        >>> from asyncdp.privacy.evidence import Evidence
        >>> refuted = Evidence("exact replay", "declaration", {}, witness={"kind": "replay", "run": 3})
        >>> d = decide([Evidence("basic composition", "declaration", {}, bound=0.5), refuted], 1.0)
        >>> d.verdict, d.witness
        ('violation', {'kind': 'replay', 'run': 3})
    """
    eps_claimed = check_real(epsilon_claimed, "epsilon_claimed", error=ScenarioError, where="decide", finite=False)
    items = list(evidence)
    for e in items:
        if not isinstance(e, Evidence):
            raise ScenarioError(f"decide: evidence must hold Evidence items, got {e!r}")
    reasons = [r for e in items for r in e.reasons]
    witness: Mapping[str, Any] | None = next((e.witness for e in items if e.witness is not None), None)
    bounds = [e for e in items if e.bound is not None]
    eps_accountant = min((e.bound for e in bounds), default=math.inf)  # type: ignore[type-var]
    if eps_accountant > eps_claimed * (1 + _RTOL):
        if not bounds:
            how = "no composed bound"
        elif len(bounds) == 1:
            how = _describe(bounds[0])
        else:
            how = "best of " + " and ".join(_describe(e) for e in bounds)
        reasons.append(f"the accountant's epsilon {eps_accountant:.6g} ({how}, independent sensitivity) "
                       f"exceeds the claimed {eps_claimed:.6g}")
    if witness is not None:
        verdict = "violation"
    elif math.isinf(eps_claimed):
        verdict = "no-claim"
        reasons.append("the algorithm claims no finite epsilon with these parameters: there is nothing to pass")
    elif eps_accountant <= eps_claimed * (1 + _RTOL):
        doubts = [e.doubt for e in items if e.doubt is not None]
        verdict = "inconclusive" if doubts else "pass"
        reasons.extend(f"the bound is not trusted: {d}" for d in doubts)
    else:
        verdict = "inconclusive"
    return Decision(verdict, tuple(reasons), None if witness is None else dict(witness), float(eps_accountant))
