"""What the replay reads of the runs' schedules: a round's weights and sender rounds of every run
(:func:`dense_round`), and the combinations that read another agent's message of a later round
(:func:`reads_ahead`, :func:`later_reads`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .replay_inputs import ScheduleBatch, ScheduleLike

__all__ = ["dense_round", "reads_ahead", "later_reads"]


def dense_round(schedules: Sequence[ScheduleLike] | ScheduleBatch, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Round ``t``'s ``(W, S)`` of every run, ``(R, N, N)`` each, as the replay reads them (a batch's
    ``dense_runs``, else each run's ``dense``, computed once per distinct schedule object).

    Example:
        >>> class One:
        ...     def dense(self, t): return np.eye(2), np.eye(2, dtype=int) * t
        >>> w, src = dense_round([One(), One()], 3)
        >>> w.shape, src[1].tolist()
        ((2, 2, 2), [[3, 0], [0, 3]])
    """
    if hasattr(schedules, "dense_runs"):
        w, src = schedules.dense_runs(t)
        return np.asarray(w, dtype=float), np.asarray(src, dtype=np.int64)
    alive = list(schedules)  # schedules made on access stay alive while they are read, so that no id is reused
    if not alive:
        raise ValueError("need at least one schedule")
    ids = np.fromiter(map(id, alive), dtype=np.int64, count=len(alive))
    _, first, which = np.unique(ids, return_index=True, return_inverse=True)  # each distinct schedule, once
    order = np.argsort(first)  # the distinct schedules in the order they first occur
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    ws, ss = [], []
    for k in first[order].tolist():
        w, src = alive[k].dense(t)
        ws.append(np.asarray(w, dtype=float))
        ss.append(np.asarray(src, dtype=np.int64))
    if len(ws) == len(alive):  # every run its own schedule, in order
        return np.stack(ws), np.stack(ss)
    runs = rank[which.ravel()]
    return np.stack(ws)[runs], np.stack(ss)[runs]


def reads_ahead(schedules: Sequence[ScheduleLike] | ScheduleBatch, horizon: int, written: np.ndarray,
                readers: np.ndarray | None = None) -> bool:
    """Whether some run's combination in round ``t`` uses another agent's message of a later round that a
    construction writes (``written[s - 1, j]``: sender ``j``'s round-``s`` message is written).

    ``readers`` (``(N,)`` booleans) restricts the question to the combinations of those receivers (default:
    every agent's).

    A replay with ``pin_agent`` processes rounds in order and writes round
    ``t``'s messages (the pinned agents', every agent's in a round released
    without noise) before round ``t``'s combinations. Without such a read,
    every value the pass reads is final when read, so its computations are
    those of a replay of its output: the construction has settled after one
    pass.

    Example:
        >>> class Ahead:  # receiver 1 combines sender 0's message of round 2 in round 1
        ...     def dense(self, t): return np.full((2, 2), 0.5), np.array([[t, t], [min(t + 1, 2), t]])
        >>> written = np.array([[True, False], [True, False]])  # agent 0's messages are constructed
        >>> reads_ahead([Ahead()], 2, written), reads_ahead([Ahead()], 2, ~written)
        (True, False)
        >>> reads_ahead([Ahead()], 2, written, readers=np.array([True, False]))  # only agent 0's combinations
        False
    """
    keep = None if readers is None else np.asarray(readers, dtype=bool)
    for t in range(1, horizon + 1):
        r, i, s, j = _later_round(dense_round(schedules, t)[1], t)
        if keep is not None:
            r, i, s, j = (a[keep[i]] for a in (r, i, s, j))
        if r.size and written[s - 1, j].any():
            return True
    return False


def _later_round(src: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Round ``t``'s reads of another agent's message of a later round, from its sender rounds ``src``
    ``(R, N, N)``: ``(run, receiver, sender round, sender)`` arrays (the self term is the own round-``t`` message)."""
    later = src > t
    n = src.shape[1]
    later[:, np.arange(n), np.arange(n)] = False
    r, i, j = np.nonzero(later)
    return r, i, src[r, i, j], j


def later_reads(schedules: Sequence[ScheduleLike] | ScheduleBatch, horizon: int) -> tuple[np.ndarray, ...]:
    """Every read of another agent's message of a later round: ``(t, r, s, j, i)`` arrays, receiver ``i`` of run
    ``r`` combining sender ``j``'s message of round ``s > t`` in round ``t`` (what :func:`reads_ahead` asks about).
    A round the batch's runs share (``shared_round(t)``) is read once, not run by run.

    Example:
        >>> class Ahead:  # receiver 1 combines sender 0's message of round 2 in round 1
        ...     def dense(self, t): return np.full((2, 2), 0.5), np.array([[t, t], [min(t + 1, 2), t]])
        >>> [a.tolist() for a in later_reads([Ahead()], 2)]
        [[1], [0], [2], [0], [1]]
    """
    parts = []
    shared = getattr(schedules, "shared_round", None)
    for t in range(1, horizon + 1):
        one = shared(t) if shared is not None else None
        if one is not None:  # every run reads what the shared round reads: its reads, repeated for each run
            _, i, s, j = _later_round(one.src[None], t)
            runs = len(schedules)
            r, i, s, j = np.repeat(np.arange(runs), i.size), np.tile(i, runs), np.tile(s, runs), np.tile(j, runs)
        else:
            r, i, s, j = _later_round(dense_round(schedules, t)[1], t)
        parts.append((np.full(r.size, t), r, s, j, i))
    if not parts:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(5))
    return tuple(np.concatenate(c) for c in zip(*parts))
