"""One method's contribution to a privacy check: :class:`Evidence`.

Every step of :func:`asyncdp.privacy.check_privacy` (a composition, the
prober, exact replay, the black-box audit, ...) returns one :class:`Evidence`;
:func:`asyncdp.privacy.verdict.decide` combines the list into the verdict.
An :class:`Evidence` states what its method compared the claim with
(``checked_against``):

* ``"declaration"``: what the algorithm declares (its noise scales, its claim
  level), e.g. composing the ledger of declared scales, or sampling
  transcripts from the accountant's sampler at the declared scales;
* ``"realized behavior"``: what the run actually did;
* ``"constructed worst case"``: inputs the accountant built to make the
  method look as bad as possible (e.g. the sensitivity prober's search).

Example:
    >>> e = Evidence("prober", "constructed worst case", {"sensitivity_probe_max": 0.5})
    >>> e.figures["sensitivity_probe_max"], e.witness, e.reasons
    (0.5, None, ())
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
import dataclasses
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ..errors import ScenarioError

__all__ = ["CHECKED_AGAINST", "Evidence", "find_figure", "set_aside_witnesses"]

CheckedAgainst = Literal["declaration", "realized behavior", "constructed worst case"]
CHECKED_AGAINST: tuple[str, ...] = ("declaration", "realized behavior", "constructed worst case")
"""The allowed values of :attr:`Evidence.checked_against`."""


def _json(x: Any) -> Any:
    """``x`` as strict JSON allows it (the report's :meth:`to_dict` uses it too): ``inf``, ``-inf`` and ``nan`` as
    strings, in nested dicts and lists too (:func:`asyncdp.reproduce._outputs.to_strict_json`).

    Example:
        >>> _json({"a": [1.0, float("nan")], "b": {"c": -float("inf")}, "d": "x"})
        {'a': [1.0, 'nan'], 'b': {'c': '-inf'}, 'd': 'x'}
    """
    from ..reproduce._outputs import to_strict_json

    return to_strict_json(x, nan="nan")


@dataclass(frozen=True)
class Evidence:
    """What one method of the privacy check found.

    Attributes:
        method: the method's name (e.g. ``"basic composition"``, ``"exact replay"``).
        checked_against: what the method compared the claim with; one of
            :data:`CHECKED_AGAINST` (see the module docstring).
        figures: the method's numbers by name (a read-only mapping; ``None``
            where the method did not apply). The names are the report's field
            names (e.g. ``"epsilon_ledger"``), so a figure is looked up by
            name alone (:func:`find_figure`).
        witness: a reproducible counterexample to the claim (JSON-ready), or
            ``None``. Any witness makes the verdict ``"violation"``.
        reasons: human-readable findings, in the order they were made.
        bound: an upper bound on epsilon at the claimed delta that this
            method certifies (composition methods), or ``None``. The verdict
            passes when the smallest bound is within the claim.
        doubt: why the bounds cannot be trusted for this run (e.g. the
            released noise does not match the declared noise, or it could not
            be verified), or ``None``. Any doubt turns a ``"pass"`` into
            ``"inconclusive"``; it does not refute the claim.

    Raises:
        ScenarioError: ``checked_against`` is not one of :data:`CHECKED_AGAINST`,
            or ``method`` is empty.

    Example:
        >>> e = Evidence("basic composition", "declaration", {"epsilon_ledger": 0.8}, bound=0.8)
        >>> e.to_dict()["figures"]
        {'epsilon_ledger': 0.8}
        >>> Evidence("x", "guess", {})
        Traceback (most recent call last):
        ...
        asyncdp.errors.ScenarioError: Evidence: checked_against must be one of ('declaration', \
'realized behavior', 'constructed worst case'), got 'guess'
    """

    method: str
    checked_against: CheckedAgainst
    figures: Mapping[str, Any] = field(default_factory=dict)
    witness: Mapping[str, Any] | None = None
    reasons: tuple[str, ...] = ()
    bound: float | None = None
    doubt: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.method, str) or not self.method:
            raise ScenarioError(f"Evidence: method must be a nonempty string, got {self.method!r}")
        if self.checked_against not in CHECKED_AGAINST:
            raise ScenarioError(f"Evidence: checked_against must be one of {CHECKED_AGAINST}, "
                                f"got {self.checked_against!r}")
        object.__setattr__(self, "figures", MappingProxyType(dict(self.figures)))
        if self.witness is not None:
            object.__setattr__(self, "witness", MappingProxyType(dict(self.witness)))
        object.__setattr__(self, "reasons", tuple(self.reasons))

    def set_aside(self, why: str) -> Evidence:
        """This evidence with its witness set aside as a doubt: no witness, ``why`` appended to the reasons and kept
        as the doubt (unless the evidence already had one).

        Args:
            why: the sentence saying why the witness is no evidence against the claim.

        Returns:
            A copy without the witness.

        Example:
            >>> e = Evidence("x", "realized behavior", {}, witness={"kind": "replay"}).set_aside("not modelled")
            >>> e.witness, e.doubt, e.reasons
            (None, 'not modelled', ('not modelled',))
        """
        return dataclasses.replace(self, witness=None, doubt=self.doubt or why, reasons=(*self.reasons, why))

    def to_dict(self) -> dict[str, Any]:
        """The evidence as JSON-ready data (non-finite floats as strings).

        Returns:
            ``{"method", "checked_against", "figures", "witness", "reasons", "bound", "doubt"}``.
        """
        return {
            "method": self.method,
            "checked_against": self.checked_against,
            "figures": {k: _json(v) for k, v in self.figures.items()},
            "witness": None if self.witness is None else {k: _json(v) for k, v in self.witness.items()},
            "reasons": list(self.reasons),
            "bound": _json(self.bound),
            "doubt": self.doubt,
        }


def find_figure(evidence: Iterable[Evidence], name: str, default: Any = None) -> Any:
    """The figure ``name`` from the first evidence that has it, else ``default``.

    Args:
        evidence: the evidence list, in step order.
        name: the figure's name (a report field name, e.g. ``"epsilon_tight"``).
        default: returned when no evidence has the figure.

    Returns:
        The figure's value, or ``default``.

    Example:
        >>> find_figure([Evidence("a", "declaration", {"x": 1.0})], "x")
        1.0
        >>> find_figure([], "x", default=0)
        0
    """
    for e in evidence:
        if name in e.figures:
            return e.figures[name]
    return default


def set_aside_witnesses(evidence: Sequence[Evidence], applies: Callable[[Evidence], bool],
                        why: Callable[[Evidence], str]) -> list[Evidence]:
    """Every evidence whose witness ``applies`` to, with that witness set aside (:meth:`Evidence.set_aside`).

    Args:
        evidence: the check's evidence.
        applies: whether an evidence's witness is to be set aside (called only on evidence with a witness).
        why: the sentence saying why, for that evidence.

    Returns:
        A new list, in the same order; evidence without a witness, or one ``applies`` spares, unchanged.

    Example:
        >>> ev = [Evidence("a", "realized behavior", {}, witness={"kind": "replay"}), Evidence("b", "declaration", {})]
        >>> [(e.witness, e.doubt) for e in set_aside_witnesses(ev, lambda e: True, lambda e: f"{e.method}: set aside")]
        [(None, 'a: set aside'), (None, None)]
    """
    return [e.set_aside(why(e)) if e.witness is not None and applies(e) else e for e in evidence]
