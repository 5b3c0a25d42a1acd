"""Exception hierarchy of :mod:`asyncdp`.

Every error raised for a bad scenario is a :class:`ScenarioError`, itself a
``ValueError``, so callers can catch one type for any input defect. Messages
name the offending parameter and its value (and, where known, the agent and
the round) so a user can locate the defect in their own data.

Hierarchy::

    ScenarioError (ValueError)
    +-- ProblemError                 domain, cost family or constants
    |   +-- CostValueError           a cost or gradient returned NaN/inf
    |   +-- ConstantViolationError   declared constants contradicted
    +-- AlgorithmParameterError
    +-- TopologyMismatchError
    +-- LinkModelError
    +-- TimingError
    +-- HorizonError
    +-- MessageLostError
    +-- NoiseError
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ScenarioError",
    "ProblemError",
    "CostValueError",
    "ConstantViolationError",
    "AlgorithmParameterError",
    "TopologyMismatchError",
    "LinkModelError",
    "TimingError",
    "HorizonError",
    "MessageLostError",
    "NoiseError",
    "SweepError",
]


class ScenarioError(ValueError):
    """Base class of every input error raised by :mod:`asyncdp`."""


class ProblemError(ScenarioError):
    """A feasible set, cost family or declared constant is invalid."""


class CostValueError(ProblemError):
    """A cost or gradient evaluated to NaN or infinity (message names agent, round, point)."""

    def __init__(
        self,
        message: str,
        *,
        agent: int | None = None,
        round_index: int | None = None,
        point: Any = None,
    ) -> None:
        super().__init__(message)
        self.agent = agent
        self.round_index = round_index
        self.point = point


class ConstantViolationError(ProblemError):
    """Declared constants are inconsistent or contradicted by the cost family."""


class AlgorithmParameterError(ScenarioError):
    """An algorithm parameter (step size, privacy level, decay, ...) is out of range."""


class TopologyMismatchError(ScenarioError):
    """The topology does not fit the problem or algorithm (node count, weight structure)."""


class LinkModelError(ScenarioError):
    """A communication link model (delay, loss, bandwidth) is misconfigured."""


class TimingError(ScenarioError):
    """Agent clocks, activation schedules or event times are invalid."""


class HorizonError(ScenarioError):
    """The horizon (number of rounds or simulated time) is missing or invalid."""


class MessageLostError(ScenarioError):
    """A message was lost although no missing-message policy was chosen."""


class NoiseError(ScenarioError):
    """A noise distribution or its scale schedule is invalid."""


class SweepError(ScenarioError):
    """A parameter sweep is misconfigured: grid, runs, executor, factory or output (:mod:`asyncdp.experiments.sweep`)."""

