"""Regret of online runs (Cheng, Liao and Li, arXiv 2022, eqs. 3 and 19) from a trajectory.

Round ``t`` (``1..T``) plays ``x(t) = (y_i^{S_i}(t))_i``: node ``i``'s own
block of its own estimate *before* round ``t``. These are rows ``t - 1`` of
the engines' trajectories, which hold ``y_i`` after each round, with row 0
the initial estimate (the paper leaves ``y_i(0)`` undefined). Then ``f_t`` is revealed.

* **Regret** (eq. 3): ``R(T) = sum_{t<=T} f_t(x(t)) - min_{v in X^d} sum_{t<=T} f_t(v)``.
* **Running-average regret** (eq. 19): the same with
  ``x~(t) = (1/t) sum_{s<=t} x(s)`` in place of ``x(t)``.

The paper's pseudo-regret is an expectation. Average :attr:`RegretCurve.regret`
over runs (``BatchResult``, :meth:`RegretCurve.mean`) to estimate it.

Comparator: ``comparator="prefix"`` (the default) solves
``min_v sum_{t<=T'} f_t(v)`` for every prefix ``T'``, warm-started from the
previous prefix. ``"final"`` evaluates every prefix at the full-horizon
minimizer, which is cheaper. That comparator can only be larger, so the regret it gives is
smaller (the paper does not say which comparator it uses).

Example:
    >>> from asyncdp.papers.dpsda.rule import DPSDAC
    >>> sc = DPSDAC.example_scenario(seed=0).replace(horizon=5)
    >>> curve = regret_curve(sc.run(), sc.problem)
    >>> curve.regret.shape, curve.horizon
    ((5,), 5)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..problems.online import OnlineLoss

__all__ = ["played_decisions", "running_average", "comparator_values", "RegretCurve", "regret_curve",
           "COMPARATORS"]

COMPARATORS = ("prefix", "final")


def _loss_of(problem: Any) -> OnlineLoss:
    costs = getattr(problem, "costs", None)
    if not isinstance(costs, OnlineLoss):
        raise ScenarioError(f"regret needs an online problem (OnlineLoss costs), got {type(costs).__name__}")
    return costs


def _trajectory(run: Any) -> np.ndarray:
    traj = getattr(run, "trajectory", run)
    if traj is None:
        raise ScenarioError("the result kept no trajectory (batch keep='final'); rerun with keep='all'")
    traj = np.asarray(traj, dtype=float)
    if traj.ndim < 3 or traj.shape[-3] < 2:
        raise ScenarioError(f"a trajectory must have shape (..., T + 1, N, d) with T >= 1, got {traj.shape}")
    return traj


def played_decisions(trajectory: Any, loss: OnlineLoss) -> np.ndarray:
    """``x(t) = (y_i^{S_i}(t))_i`` for ``t = 1..T`` from a trajectory ``(..., T + 1, N, d)``.

    Returns:
        ``(..., T, d)``: row ``t - 1`` assembles node ``i``'s block ``S_i`` of
        row ``t - 1`` of the trajectory (its estimate before round ``t``).

    Raises:
        ScenarioError: shapes that do not match ``loss``.

    Example:
        >>> from asyncdp.problems.online import synthetic_olr
        >>> loss, _ = synthetic_olr(num_nodes=2, dim=2, num_rounds=3)
        >>> traj = np.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]])
        >>> played_decisions(traj, loss).tolist()
        [[1.0, 4.0]]
    """
    traj = _trajectory(trajectory)
    if traj.shape[-2:] != loss.mask.shape:
        raise ScenarioError(f"trajectory nodes x dim {traj.shape[-2:]} differ from the loss's {loss.mask.shape}")
    return (traj[..., :-1, :, :] * loss.mask).sum(axis=-2)


def running_average(x: np.ndarray) -> np.ndarray:
    """``x~(t) = (1/t) sum_{s<=t} x(s)`` along the round axis ``-2`` of ``(..., T, d)`` (eq. 19)."""
    x = np.asarray(x, dtype=float)
    return np.cumsum(x, axis=-2) / np.arange(1, x.shape[-2] + 1)[:, None]


def comparator_values(problem: Any, horizon: int, comparator: str = "prefix") -> tuple[np.ndarray, np.ndarray]:
    """``min_v sum_{t<=T'} f_t(v)`` for ``T' = 1..horizon``, and the minimizers.

    Returns:
        ``(values (horizon,), minimizers (horizon, d))``.

    Raises:
        ScenarioError: an unknown comparator, or a horizon outside ``1..T``.
    """
    loss = _loss_of(problem)
    if comparator not in COMPARATORS:
        raise ScenarioError(f"comparator must be one of {COMPARATORS}, got {comparator!r}")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or not 1 <= horizon <= loss.num_rounds:
        raise ScenarioError(f"horizon must be an integer in [1, {loss.num_rounds}], got {horizon!r}")
    domain = problem.domain
    if comparator == "final":
        v = loss.best_fixed(domain, int(horizon))
        per_round = np.array([loss.round_value(t, v) for t in range(1, horizon + 1)])
        return np.cumsum(per_round), np.broadcast_to(v, (horizon, v.size)).copy()
    values, points, v = np.empty(horizon), np.empty((horizon, loss.dim)), None
    for h in range(1, horizon + 1):
        v = loss.best_fixed(domain, h, x0=v)
        points[h - 1] = v
        values[h - 1] = loss.cumulative_value(v, h)
    return values, points


@dataclass(frozen=True)
class RegretCurve:
    """Regret of one or several runs over every prefix ``T' = 1..T``.

    Attributes:
        losses: ``f_t(x(t))`` (or ``f_t(x~(t))``), shape ``(..., T)``; leading axes are runs.
        comparator: ``min_v sum_{t<=T'} f_t(v)``, ``(T,)``.
        regret: ``R(T') = cumsum(losses) - comparator``, ``(..., T)``.
        kind: ``"played"`` (eq. 3) or ``"running-average"`` (eq. 19).
    """

    losses: np.ndarray
    comparator: np.ndarray
    regret: np.ndarray
    kind: str

    @property
    def horizon(self) -> int:
        return int(self.comparator.size)

    @property
    def per_round(self) -> np.ndarray:
        """``R(T') / T'``: the curves of Cheng, Liao and Li, arXiv 2022, Fig. 3."""
        return self.regret / np.arange(1, self.horizon + 1)

    def mean(self) -> RegretCurve:
        """The average over runs (all leading axes): the pseudo-regret estimate."""
        lead = tuple(range(self.losses.ndim - 1))
        return RegretCurve(self.losses.mean(axis=lead), self.comparator, self.regret.mean(axis=lead), self.kind)


def regret_curve(run: Any, problem: Any, *, running: bool = False, comparator: str = "prefix",
                 comparator_values_: tuple[np.ndarray, np.ndarray] | None = None) -> RegretCurve:
    """The regret curve of a run against the best fixed decision in hindsight.

    Args:
        run: a :class:`~asyncdp.result.Result`, a :class:`~asyncdp.engine.batch_engine.BatchResult`
            (``keep="all"``) or a trajectory array ``(..., T + 1, N, d)``.
        problem: the online problem the run solved.
        running: use the running average ``x~(t)`` (eq. 19) instead of ``x(t)``.
        comparator: ``"prefix"`` or ``"final"`` (module docstring).
        comparator_values_: precomputed :func:`comparator_values`, to reuse
            across runs and epsilons.

    Returns:
        A :class:`RegretCurve`.

    Raises:
        ScenarioError: not an online problem, shapes that do not match, or a
            run longer than the loss sequence.
    """
    loss = _loss_of(problem)
    x = played_decisions(run, loss)
    horizon = x.shape[-2]
    if horizon > loss.num_rounds:
        raise ScenarioError(f"the run has {horizon} rounds but the loss sequence only {loss.num_rounds}")
    if running:
        x = running_average(x)
    losses = np.stack([np.asarray(loss.round_value(t, x[..., t - 1, :])) for t in range(1, horizon + 1)], axis=-1)
    comp = comparator_values(problem, horizon, comparator) if comparator_values_ is None else comparator_values_
    values = np.asarray(comp[0], dtype=float)
    if values.shape != (horizon,):
        raise ScenarioError(f"comparator values must have shape ({horizon},), got {values.shape}")
    return RegretCurve(losses, values, np.cumsum(losses, axis=-1) - values,
                       "running-average" if running else "played")
