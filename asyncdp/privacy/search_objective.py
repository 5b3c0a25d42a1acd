"""What the worst-case search maximizes for a candidate, per claim form, from its constructed losses.

A pure claim: the largest constructed loss; a claim with ``delta > 0`` and Gaussian noise: the mean over the
evaluated schedules of the exact Gaussian profile at the claimed epsilon (:func:`profile_objective`, one candidate;
:func:`profile_objectives`, several at once); a per-iteration claim reads one round's loss of each run
(``_round_loss``). :mod:`asyncdp.privacy.worst_case` explains why the two objectives differ.

Example:
    >>> profile_objective([0.5, 2.0], 1.0, 0.0, True)  # a pure claim: the largest loss
    2.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..scenario import Scenario
from .behavior import declared_noise

__all__ = ["profile_objective", "profile_objectives"]


def profile_objective(losses: Any, epsilon: float, delta: float, gaussian: bool) -> float:
    """What the search maximizes for a candidate, from its constructed losses on the evaluated schedules.

    ``delta > 0``, finite ``epsilon`` and Gaussian noise: the average over the
    schedules of the exact Gaussian profile ``delta_(mu_S)(epsilon)`` with
    ``mu_S = sqrt(2 L_S)`` (:mod:`asyncdp.privacy.worst_case`; ``L_S = +inf``, a noise-free
    release that moves, gives 1). Otherwise the largest loss.

    Args:
        losses: the constructed losses, one per evaluated schedule.
        epsilon: the claim's epsilon (the check's, for Rényi and zCDP claims).
        delta: the claim's delta.
        gaussian: every noisy channel is Gaussian.

    Returns:
        The objective.

    Example:
        >>> spiky = [4.5] + [0.005] * 15  # a large loss on one schedule, small on the others
        >>> even = [1.125] * 16  # mu = 1.5 on every schedule
        >>> max(spiky) > max(even), profile_objective(spiky, 1.0, 1e-5, True) < profile_objective(even, 1.0, 1e-5, True)
        (True, True)
    """
    from accounting.profiles import _log_gaussian_delta_vec, gaussian_profile_delta

    loss = np.asarray(losses, dtype=float).ravel()
    if not (delta > 0 and gaussian and math.isfinite(epsilon)) or loss.size == 0:
        return float(loss.max()) if loss.size else -math.inf
    eps = max(epsilon, 0.0)
    if np.isnan(loss).any():  # gaussian_profile_delta names what is wrong
        vals = [1.0 if v == math.inf else gaussian_profile_delta(math.sqrt(2.0 * max(float(v), 0.0)), eps)
                for v in loss]
        return float(np.mean(vals))
    # gaussian_profile_delta of every schedule's mu at once (its own equation, elementwise: the same values)
    mu = np.sqrt(2.0 * np.maximum(loss, 0.0))
    moved = np.isfinite(mu) & (mu > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        vals = np.exp(_log_gaussian_delta_vec(np.where(moved, mu, 1.0), eps))
    return float(np.mean(np.where(moved, vals, np.where(mu == 0, 0.0, 1.0))))


def profile_objectives(losses: Any, epsilon: float, delta: float, gaussian: bool) -> np.ndarray:
    """:func:`profile_objective` of each row of ``losses`` (candidates by schedules), computed together.

    The same values as one call per row: the same elementwise operations on the same entries, each row's
    mean a reduction of that row alone; a row with a NaN gets its own call (which names what is wrong).

    Args:
        losses: ``(K, S)``: each candidate's constructed losses on the same ``S`` evaluated schedules.
        epsilon, delta, gaussian: as :func:`profile_objective`.

    Returns:
        ``(K,)`` objectives.

    Example:
        >>> rows = [[4.5] + [0.005] * 15, [1.125] * 16]
        >>> bool((profile_objectives(rows, 1.0, 1e-5, True)
        ...       == [profile_objective(r, 1.0, 1e-5, True) for r in rows]).all())
        True
    """
    from accounting.profiles import _log_gaussian_delta_vec

    loss = np.asarray(losses, dtype=float)
    if loss.ndim != 2 or loss.shape[1] == 0:
        return np.array([profile_objective(row, epsilon, delta, gaussian) for row in loss])
    if not (delta > 0 and gaussian and math.isfinite(epsilon)):  # the largest loss (NaN if any is NaN)
        return loss.max(axis=1)
    eps = max(epsilon, 0.0)
    mu = np.sqrt(2.0 * np.maximum(loss, 0.0))
    moved = np.isfinite(mu) & (mu > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        vals = np.exp(_log_gaussian_delta_vec(np.where(moved, mu, 1.0), eps))
    out = np.where(moved, vals, np.where(mu == 0, 0.0, 1.0)).mean(axis=1)
    for k in np.flatnonzero(np.isnan(loss).any(axis=1)).tolist():
        out[k] = profile_objective(loss[k], epsilon, delta, gaussian)
    return out


class _Objective:
    """``losses -> objective`` for the check's claim (:func:`profile_objective`); :meth:`many` scores several
    candidates' losses at once (:func:`profile_objectives`, the same values)."""

    def __init__(self, epsilon: float, delta: float, gaussian: bool) -> None:
        self.epsilon, self.delta, self.gaussian = epsilon, delta, gaussian

    def __call__(self, losses: Any) -> float:
        return profile_objective(losses, self.epsilon, self.delta, self.gaussian)

    def many(self, losses: Any) -> np.ndarray:
        return profile_objectives(losses, self.epsilon, self.delta, self.gaussian)


def _objective_of(ctx: Any, scenario: Scenario) -> Any:
    """``losses -> objective`` for the check's claim (:func:`profile_objective`)."""
    alg = scenario.algorithm.bind(scenario.problem)
    gaussian = all(ch.mechanism != "laplace" for ch in declared_noise(alg, scenario.horizon).values())
    return _Objective(ctx.epsilon_claimed, ctx.delta_claimed, gaussian)


def _round_loss(per_round: Any) -> np.ndarray:
    """A per-iteration claim's loss of each run: its largest round's (a claim per iteration bounds each round's
    releases given the past, not their sum over the run; a NaN round counts as largest)."""
    a = np.asarray(per_round, dtype=float)
    return a.reshape(a.shape[0], -1).max(axis=1) if a.size else np.zeros(a.shape[0])
