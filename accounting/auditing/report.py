"""The result record of the sample auditor (:func:`accounting.auditing.audit_samples`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SampleAuditReport"]


@dataclass(frozen=True)
class SampleAuditReport:
    """What :func:`~accounting.auditing.audit_samples` certified about a claimed ``(epsilon, delta)``.

    Every bound below holds *simultaneously* with probability at least
    ``confidence`` over the samples (union bound over both orders of the pair,
    see :func:`~accounting.auditing.certify.certify_event`).

    Attributes:
        epsilon, delta: the claim audited.
        epsilon_lower_bound: certified lower bound on the mechanism's epsilon
            at the claimed ``delta``: ``log((lower(P[E]) - delta) / upper(P'[E]))``
            for the best certified event ``E`` and order; ``0.0`` when nothing
            was found.
        delta_lower_bound: certified lower bound on the delta the mechanism
            needs at the claimed ``epsilon``:
            ``lower(P[E]) - exp(epsilon) * upper(P'[E])``, at least ``0.0``;
            also reported for pure claims (``delta = 0``), where any positive
            value is a violation.
        violation: ``True`` when the claim is refuted at ``confidence``:
            ``epsilon_lower_bound > epsilon * (1 + 1e-9)`` for a pure claim,
            ``delta_lower_bound > delta`` otherwise.
        confidence: the level of the bounds.
        method: ``"classifier"`` (threshold event on a learned score) or
            ``"exact"`` (event made of exact output values).
        event: human-readable description of the certified event.
        order: ``"P/P'"`` when the bound is on ``P[E] / P'[E]`` (``P``: the
            distribution of ``samples``), ``"P'/P"`` for the reverse order.
        counts: ``n`` and ``n_prime`` (certification samples of ``samples``
            and ``samples_prime``), ``k`` and ``k_prime`` (how many of them lie
            in the event), ``n_train`` and ``n_train_prime`` (samples used to
            choose the event).
        details: per-order bounds and method-specific information.
    """

    epsilon: float
    delta: float
    epsilon_lower_bound: float
    delta_lower_bound: float
    violation: bool
    confidence: float
    method: str
    event: str
    order: str
    counts: dict[str, int]
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (plain floats, ints, strings; non-finite floats as strings).

        Example:
            >>> r = SampleAuditReport(1.0, 0.0, 0.5, 0.0, False, 0.95, "exact", "{1}", "P/P'",
            ...                       {"n": 10, "n_prime": 10, "k": 5, "k_prime": 3})
            >>> r.to_dict()["epsilon_lower_bound"]
            0.5
        """
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "delta_lower_bound": self.delta_lower_bound,
            "violation": bool(self.violation),
            "confidence": self.confidence,
            "method": self.method,
            "event": self.event,
            "order": self.order,
            "counts": {k: int(v) for k, v in self.counts.items()},
            "details": _jsonable(self.details),
        }

    def summary(self) -> str:
        """A few lines for a terminal: the verdict, the bounds, the event and the counts."""
        verdict = "VIOLATION" if self.violation else "no violation found"
        c = self.counts
        return "\n".join([
            f"verdict: {verdict} (claim epsilon={self.epsilon:g}, delta={self.delta:g}; "
            f"confidence {self.confidence:g})",
            f"certified epsilon lower bound: {self.epsilon_lower_bound:.6g}",
            f"certified delta lower bound at epsilon={self.epsilon:g}: {self.delta_lower_bound:.6g}",
            f"method: {self.method}; order {self.order}; event: {self.event}",
            f"counts: k={c.get('k')}/{c.get('n')} (P), k'={c.get('k_prime')}/{c.get('n_prime')} (P')",
        ])


def _jsonable(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers and non-finite floats as strings (JSON has neither)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
