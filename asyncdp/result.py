"""The result of one simulated run: trajectories, metrics, transcript, ledger, realized mixing."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from accounting.ledger import Ledger
from topology.checks.properties import check_doubly_stochastic, check_each_round
from topology.sequence import GraphSequence

from . import metrics
from .metrics import MetricCurve

__all__ = ["Result", "summary_json", "summary_table"]


def summary_json(summary: dict[str, Any], metadata: Any, indent: int | None = 2) -> str:
    """``summary`` plus ``metadata`` as strict JSON: infinities as ``"inf"``/``"-inf"``, NaN as ``null``.

    (``json.dumps`` alone writes the tokens ``Infinity`` and ``NaN``, which strict parsers reject.)

    Example:
        >>> summary_json({"epsilon_claimed": "inf"}, {"params": {"epsilon": float("inf")}}, indent=None)
        '{"epsilon_claimed": "inf", "metadata": {"params": {"epsilon": "inf"}}}'
    """
    from .reproduce._outputs import to_strict_json

    return json.dumps(to_strict_json({**summary, "metadata": metadata}), indent=indent, default=str, allow_nan=False)


def summary_table(summary: dict[str, Any]) -> str:
    """A summary (:meth:`Result.summary`, :meth:`~asyncdp.engine.batch_engine.BatchResult.summary`) as aligned lines.

    Args:
        summary: names and values; floats are shown with 6 significant digits.

    Returns:
        One ``key  value`` line per entry, keys padded to the longest.

    Example:
        >>> print(summary_table({"runs": 3, "error": 0.1234567}))
        runs   3
        error  0.123457
    """
    w = max(len(k) for k in summary)
    return "\n".join(f"{k:<{w}}  {v:.6g}" if isinstance(v, float) else f"{k:<{w}}  {v}" for k, v in summary.items())


@dataclass
class Result:
    """Everything one run produced.

    Its metric API is shared with :class:`~asyncdp.engine.batch_engine.BatchResult`
    (``R`` stacked runs, the same names with a leading run axis): ``trajectory``,
    ``final``, ``optimum``, ``horizon``, ``optimality_error``, ``deviation``,
    ``consensus_error``, ``ledger``, ``claimed_epsilon``, ``claimed_delta``,
    ``metadata``; the metrics are computed by :mod:`asyncdp.metrics`.

    Attributes:
        trajectory: ``x_i(t)`` for ``t = 0..T``, shape ``(T + 1, N, n)``
            (round-indexed: row ``t`` holds each agent's state after its round ``t``).
        times: simulated time at which each agent finished round ``t``, shape ``(T + 1, N)``.
        optimum: ``x*``, the minimizer of ``sum_i f_i`` over the domain.
        ledger: one record per noisy release.
        transcript: the eavesdropper's view (``None`` if not recorded).
        realized: the weights each agent actually used, as a finite
            :class:`~topology.sequence.GraphSequence` (row ``i`` of round ``t`` is
            agent ``i``'s round-``t`` combination).
        staleness: for each round and agent, the largest age (in rounds) of a
            neighbour value it combined, shape ``(T, N)`` (0 in lockstep).
        messages_sent, messages_lost: transmission counts.
        claimed_epsilon, claimed_delta: the algorithm's claimed guarantee.
        metadata: scenario description (algorithm parameters, timing, links, seed ...).
        schedule: who combined which message (sender and the sender's round)
            with which weight, as a :class:`~asyncdp.engine.schedule.RealizedSchedule`
            (``None`` when the engine did not record it).
        messages: every released message per channel, ``(T, N, d)`` (unicast:
            ``(T, N, N, d)`` per link), NaN where none was released; recorded
            with the transcript. Unlike the transcript (transmissions on
            links) it holds a broadcast that no link carried, as the papers'
            observation maps and the ledger count it.
    """

    trajectory: np.ndarray
    times: np.ndarray
    optimum: np.ndarray
    ledger: Ledger
    transcript: Any
    realized: GraphSequence | None
    staleness: np.ndarray
    messages_sent: int
    messages_lost: int
    claimed_epsilon: float
    claimed_delta: float
    metadata: dict[str, Any] = field(default_factory=dict)
    schedule: Any = None
    messages: dict[str, np.ndarray] | None = None

    @property
    def horizon(self) -> int:
        """``T``, the number of rounds."""
        return self.trajectory.shape[0] - 1

    @property
    def final(self) -> np.ndarray:
        """``x_i(T)``, shape ``(N, n)``."""
        return self.trajectory[-1]

    @property
    def consensus_error(self) -> MetricCurve:
        """``max_ij ||x_i(t) - x_j(t)||`` for ``t = 0..T``, shape ``(T + 1,)`` (:func:`asyncdp.metrics.consensus_error`).

        Read it as ``res.consensus_error()`` or ``res.consensus_error`` (a
        :class:`~asyncdp.metrics.MetricCurve`); the same holds for the other metrics.
        """
        return MetricCurve.of(metrics.consensus_error(self.trajectory))

    @property
    def optimality_error(self) -> MetricCurve:
        """``||xbar(t) - x*||^2`` for ``t = 0..T``, shape ``(T + 1,)`` (:func:`asyncdp.metrics.optimality_error`)."""
        return MetricCurve.of(metrics.optimality_error(self.trajectory, self.optimum))

    @property
    def deviation(self) -> MetricCurve:
        """``max_i ||x_i(t) - xbar(t)||`` for ``t = 0..T``, shape ``(T + 1,)`` (:func:`asyncdp.metrics.deviation`)."""
        return MetricCurve.of(metrics.deviation(self.trajectory))

    def realized_doubly_stochastic(self, tol: float = 1e-9) -> bool:
        """Whether every realized mixing matrix was doubly stochastic."""
        if self.realized is None:
            return True
        return bool(check_each_round(self.realized, lambda w: check_doubly_stochastic(w, tol=tol)).holds)

    def summary(self) -> dict[str, Any]:
        """The headline numbers (JSON-ready)."""
        eps = self.claimed_epsilon
        return {
            "consensus_error": float(self.consensus_error()[-1]),
            "optimality_error": float(self.optimality_error()[-1]),
            "releases": len(self.ledger),
            "messages_sent": int(self.messages_sent),
            "messages_lost": int(self.messages_lost),
            "realized_doubly_stochastic": self.realized_doubly_stochastic(),
            "epsilon_claimed": eps if math.isfinite(eps) else "inf",
            "delta_claimed": float(self.claimed_delta),
            # "iteration": the claim bounds each round's releases, not the run (e.g. Wang and Basar's Theorems 4-6)
            "claim_level": str(self.metadata.get("claim_level", "run")) if isinstance(self.metadata, dict) else "run",
            "horizon": self.horizon,
            "final_time": float(np.max(self.times[-1])),
        }

    def summary_table(self) -> str:
        """:meth:`summary` as aligned ``key  value`` lines."""
        return summary_table(self.summary())

    def __repr__(self) -> str:
        """One line: algorithm, size, horizon and the final errors (never the arrays).

        Example:
            >>> from asyncdp import Huang2015
            >>> repr(Huang2015.example_scenario().run())  # doctest: +ELLIPSIS
            'Result(huang2015: 6 agents in 2-d, 25 rounds, optimality_error=..., consensus_error=..., epsilon=1)'
        """
        name = self.metadata.get("algorithm", "run") if isinstance(self.metadata, dict) else "run"
        n_agents, dim = self.trajectory.shape[1], self.trajectory.shape[2] if self.trajectory.ndim > 2 else 1
        eps = self.claimed_epsilon
        return (f"Result({name}: {n_agents} agents in {dim}-d, {self.horizon} rounds, "
                f"optimality_error={float(self.optimality_error()[-1]):.4g}, "
                f"consensus_error={float(self.consensus_error()[-1]):.4g}, "
                f"epsilon={eps:g})")

    def __str__(self) -> str:
        """The one-line :meth:`__repr__`, then :meth:`summary_table` (``print(result)``).

        The arrays (``trajectory``, ``times``, ...) stay attributes; they are not printed.
        """
        return f"{self!r}\n{self.summary_table()}"

    def to_json(self, indent: int | None = 2) -> str:
        """Summary plus metadata as strict JSON (infinities as ``"inf"``/``"-inf"``, NaN as ``null``)."""
        return summary_json(self.summary(), self.metadata, indent)
