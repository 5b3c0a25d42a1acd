"""Every round's dense schedule of a batch of runs at once, for the candidates' replays
(:class:`~asyncdp.privacy.constructed.DenseSchedules`).

A batch given by its columns (:class:`~asyncdp.engine.schedule.RealizedSchedules`: one entry per run, round,
receiver and sender used) gives one round at a time (``dense_runs(t)``: its entries grouped by round, on its first
call, then the round's scattered into ``(R, N, N)`` arrays). The search's replays read every round of the same
runs, so :func:`every_round` scatters every entry once into ``(T, R, N, N)`` arrays instead: round ``t``
is then ``W[t - 1]``, ``S[t - 1]``, the values ``dense_runs(t)`` gives (each entry written where ``dense_runs``
writes it, the entries of one round in the same order: the columns' own).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine.schedule import RealizedSchedules

__all__ = ["every_round"]


def every_round(schedules: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Every round's weights and sender rounds of a batch of runs given by its columns, or ``None`` for any
    other schedules (a sequence of per-run schedules, a shared schedule, another batch type whose ``dense_runs``
    this does not know: read round by round as before).

    Args:
        schedules: the runs' schedules (:class:`~asyncdp.engine.schedule.RealizedSchedules`).

    Returns:
        ``(W, S)``, ``(T, R, N, N)`` each (float weights, int64 sender rounds, 0 where unused): ``W[t - 1]`` and
        ``S[t - 1]`` are ``schedules.dense_runs(t)``.

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule, RealizedSchedules
        >>> one = RealizedSchedule.from_dense([np.eye(2), np.full((2, 2), 0.5)],
        ...                                   [np.eye(2, dtype=int), np.full((2, 2), 2)])
        >>> w, s = every_round(RealizedSchedules.stack([one, one]))
        >>> w.shape, s[1, 1].tolist() == one.dense(2)[1].tolist(), every_round([one, one]) is None
        ((2, 2, 2, 2), True, True)
    """
    if not isinstance(schedules, RealizedSchedules):
        return None
    n, runs, horizon = int(schedules.num_agents), len(schedules), int(schedules.horizon)
    run = np.repeat(np.arange(runs, dtype=np.int64), np.diff(schedules.offsets))
    at = ((np.asarray(schedules.round, dtype=np.int64) - 1) * runs + run) * (n * n) \
        + np.asarray(schedules.receiver, dtype=np.int64) * n + np.asarray(schedules.sender, dtype=np.int64)
    weights = np.zeros(horizon * runs * n * n)
    rounds = np.zeros(horizon * runs * n * n, dtype=np.int64)
    weights[at] = schedules.weight  # (one flat index per entry, in the columns' order)
    rounds[at] = schedules.sender_round
    return weights.reshape(horizon, runs, n, n), rounds.reshape(horizon, runs, n, n)
