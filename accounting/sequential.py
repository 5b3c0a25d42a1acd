"""Run a pair as many times as a certified bound needs, up to a budget, without losing the confidence.

Looking at a growing sample after every batch and stopping as soon as the
lower bound on ``delta(epsilon)`` exceeds the claim is optional stopping: a
bound valid at a fixed sample size is not valid at a data-chosen one. The
plan here fixes the looks in advance, at sample sizes ``first, 2 first, 4
first, ...`` up to ``budget``; each look's bound
(:func:`accounting.delta_bounds.threshold_delta_lower`) is computed at level
``(1 - confidence) / looks``, so all of them hold together with probability at
least ``confidence`` (union bound) and a refutation at any look is certified
at ``confidence``, whenever the caller stops. Stopping early for futility (the
estimate is far below the claim) never creates a refutation, so it costs no
confidence.

Example:
    >>> plan = SequentialPlan(epsilon=1.0, delta_claimed=1e-3, confidence=0.95, budget=8000, first=1000)
    >>> plan.looks
    (1000, 2000, 4000, 8000)
    >>> rng = np.random.default_rng(0)
    >>> losses = rng.normal(0.5 * 0.92**2, 0.92, 8000)  # true delta(1) = 1e-2
    >>> step = plan.decide(losses[:1000])
    >>> step.decision, step.runs, step.bound.confidence
    ('refuted', 1000, 0.9875)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.validation import check_integer, check_nonnegative, check_open_unit

from .delta_bounds import DeltaLowerBound, threshold_delta_lower
from .errors import PrivacyParameterError

__all__ = ["SequentialPlan", "SequentialStep"]

_E = PrivacyParameterError


@dataclass(frozen=True)
class SequentialStep:
    """The decision at one look.

    Attributes:
        decision: ``"refuted"`` (certified at the plan's confidence), ``"continue"``
            (draw up to the next look) or ``"not refuted"`` (budget spent, or futile).
        runs: the sample size looked at.
        next_runs: the next look's sample size (``None`` when the decision is final).
        bound: the look's certified bound (its ``confidence`` is the per-look level).
        reason: one line for the report.
    """

    decision: str
    runs: int
    next_runs: int | None
    bound: DeltaLowerBound
    reason: str


@dataclass(frozen=True)
class SequentialPlan:
    """Looks at ``first, 2 first, ...`` up to ``budget`` runs, each bound at ``(1 - confidence) / looks``.

    Attributes:
        epsilon: where ``delta`` is bounded (``>= 0``).
        delta_claimed: what the claim allows there (``>= 0``; use
            :meth:`~accounting.claim_forms.PureDP.delta_bound` for any claim form).
        confidence: the joint level of every look, in ``(0, 1)``.
        budget: the most runs, ``>= first``.
        first: the first look, ``>= 2``.
        futility: stop with ``"not refuted"`` once the estimate of ``delta(epsilon)``
            is below ``delta_claimed / futility`` at a look after the first (``> 1``;
            ``inf`` never stops early).

    Raises:
        PrivacyParameterError: a bad parameter (named).
    """

    epsilon: float
    delta_claimed: float
    confidence: float
    budget: int
    first: int = 1000
    futility: float = 10.0

    def __post_init__(self) -> None:
        check_nonnegative(self.epsilon, "epsilon", error=_E)
        check_nonnegative(self.delta_claimed, "delta_claimed", error=_E)
        check_open_unit(self.confidence, "confidence", error=_E)
        first = check_integer(self.first, "first", minimum=2, error=_E)
        check_integer(self.budget, "budget", minimum=first, error=_E)
        if not self.futility > 1:
            raise PrivacyParameterError(f"futility must be > 1, got {self.futility!r}")

    @property
    def looks(self) -> tuple[int, ...]:
        """The planned sample sizes: doubling from ``first``, the last one ``budget``."""
        out = [int(self.first)]
        while out[-1] * 2 < self.budget:
            out.append(out[-1] * 2)
        if out[-1] != self.budget:
            out.append(int(self.budget))
        return tuple(out)

    @property
    def per_look_confidence(self) -> float:
        """``1 - (1 - confidence) / looks``."""
        return 1.0 - (1.0 - self.confidence) / len(self.looks)

    def decide(self, losses: Any) -> SequentialStep:
        """The decision after the first ``n`` runs, ``n`` a planned look.

        Args:
            losses: the exact losses of the first ``n`` runs, i.i.d. under ``P``, ``n`` in :attr:`looks`.

        Returns:
            A :class:`SequentialStep`.

        Raises:
            PrivacyParameterError: a sample size that is not a planned look, or bad losses.
        """
        loss = np.asarray(losses, dtype=float).ravel()
        looks = self.looks
        if loss.size not in looks:
            raise PrivacyParameterError(f"{loss.size} runs is not a planned look; the looks are {looks}")
        k = looks.index(loss.size)
        bound = threshold_delta_lower(loss, self.epsilon, confidence=self.per_look_confidence)
        nxt = looks[k + 1] if k + 1 < len(looks) else None
        if bound.refutes(self.delta_claimed):
            return SequentialStep("refuted", loss.size, None, bound,
                                  f"delta({self.epsilon:.6g}) >= {bound.lower:.4g} > {self.delta_claimed:.4g} after "
                                  f"{loss.size} runs (look {k + 1} of {len(looks)}, joint confidence "
                                  f"{self.confidence:.6g})")
        if nxt is None:
            return SequentialStep("not refuted", loss.size, None, bound,
                                  f"budget of {self.budget} runs spent: delta({self.epsilon:.6g}) >= "
                                  f"{bound.lower:.4g}, not above {self.delta_claimed:.4g}")
        if k > 0 and bound.estimate < self.delta_claimed / self.futility:
            return SequentialStep("not refuted", loss.size, None, bound,
                                  f"futile after {loss.size} runs: the estimate {bound.estimate:.4g} is below "
                                  f"{self.delta_claimed:.4g} / {self.futility:g}")
        return SequentialStep("continue", loss.size, nxt, bound,
                              f"not yet: delta({self.epsilon:.6g}) >= {bound.lower:.4g} after {loss.size} runs; "
                              f"next look at {nxt}")
