"""Exception hierarchy of :mod:`asyncdp`.

Every exception :mod:`asyncdp` defines is an :class:`AsyncdpError`, so callers
can catch one type for any defect the library reports. Errors raised for a bad
scenario are :class:`ScenarioError`; a misconfigured sweep
(:class:`SweepError`) and an invalid transcript entry or file
(:class:`TranscriptError`) are not scenario defects and sit beside it. Each
also keeps the builtin base it has always had (``ValueError``), so
``except ValueError`` keeps working. Messages name the offending parameter and
its value (and, where known, the agent and the round) so a user can locate the
defect in their own data.

Hierarchy::

    AsyncdpError
    +-- SweepError (ValueError)      grid, runs, executor, factory or output of a sweep
    +-- TranscriptError (ValueError) transcript entry, file or query
    +-- ScenarioError (ValueError)
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

(:mod:`asyncdp.problems.datasets` adds ``DatasetError`` under ``ProblemError``
and ``OptionalDependencyError``, an ``AsyncdpError`` and ``ImportError``.)

Example:
    >>> issubclass(SweepError, AsyncdpError) and not issubclass(SweepError, ScenarioError)
    True
    >>> issubclass(TranscriptError, ValueError)
    True
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AsyncdpError",
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
    "TranscriptError",
]


class AsyncdpError(Exception):
    """Root of every exception defined by :mod:`asyncdp` (the CLI reports any of them in one line)."""


class ScenarioError(AsyncdpError, ValueError):
    """Base class of every error raised for a bad scenario (problem, algorithm, topology, links, timing, ...)."""


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


class SweepError(AsyncdpError, ValueError):
    """A parameter sweep is misconfigured: grid, runs, executor, factory or output (:mod:`asyncdp.experiments.sweep`).

    Not a :class:`ScenarioError`: a factory's own scenario error reaches the
    caller as the ``__cause__`` of the ``SweepError`` naming the grid point.
    """


class TranscriptError(AsyncdpError, ValueError):
    """A transcript entry, file or query is invalid (bad value, unknown format, unicast where broadcast expected).

    Also importable from :mod:`asyncdp.engine.transcript`, where it was defined before.
    """

