"""Constructed transcripts of candidate pairs on a fixed set of realized schedules, and their exact losses.

The worst-case search (:mod:`asyncdp.privacy.worst_case`) evaluates many
candidate pairs on the same few engine runs. What does not depend on the
candidate is computed once here (:class:`CandidateRuns`): the evaluated
runs' messages and, round by round, their dense schedules (the weights and
sender rounds every replay of every candidate reads). What does depend on
it, :func:`constructed_replay`, builds the candidate's constructed
transcript and its exact loss in the same replay passes: the construction
repeats a pinned replay until its output equals its input, and the pass that
finds it settled is, entry for entry, the replay of the settled transcript
(every value it writes is the value already there), so that pass, run under
both problems, gives the loss without a further replay.

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> from asyncdp.privacy.worst_case import candidate_scenarios
    >>> pair, ctx = small_example()
    >>> runs = CandidateRuns(ctx.engine_runs(0), [0, 1, 2])
    >>> p, q = candidate_scenarios(pair.scenario, 0, [1.0, 0.0], [-1.0, 0.0])
    >>> built, out = constructed_replay(runs.runs, p, q, 0)
    >>> out.losses.shape, bool((out.losses > 0).all())
    ((3,), True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from accounting.scheduled_replay import ScheduledReplay

from ..scenario import Scenario
from .behavior import EngineRuns, replay_runs

__all__ = ["DenseSchedules", "CandidateRuns", "constructed_replay", "DENSE_CACHE_ENTRIES"]

DENSE_CACHE_ENTRIES = 4_000_000
"""Largest ``T x R x N x N`` kept as dense rounds (above it the schedules are read as recorded, every time)."""


class DenseSchedules:
    """The realized schedules of a few runs, every round kept as dense ``(R, N, N)`` arrays once computed.

    A :class:`accounting.scheduled_replay.ScheduleBatch`: :meth:`dense_runs`
    gives what the replay would compute from the recorded schedules (the
    batch's ``dense_runs`` or each run's ``dense``), computed on the first
    call for a round and reused by every later replay; slicing gives the
    same rounds for fewer runs, sharing the cache.

    Args:
        schedules: the runs' schedules (a sequence of schedules, or a batch with ``dense_runs``).
        horizon: ``T``.

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.eye(2)], [np.eye(2, dtype=int)])
        >>> d = DenseSchedules([one, one], 1)
        >>> len(d), d.dense_runs(1)[0].shape, len(d[:1]), d[:1].dense_runs(1)[1].tolist()
        (2, (2, 2, 2), 1, [[[1, 0], [0, 1]]])
    """

    def __init__(self, schedules: Any, horizon: int, _cache: dict[Any, Any] | None = None,
                 _runs: slice | None = None) -> None:
        self._schedules = schedules
        self._horizon = horizon
        self._cache: dict[Any, Any] = {} if _cache is None else _cache  # rounds, and reads_ahead answers
        self._runs = slice(0, len(schedules)) if _runs is None else _runs

    def __len__(self) -> int:
        return len(range(len(self._schedules))[self._runs])

    def __getitem__(self, runs: slice) -> DenseSchedules:
        if not isinstance(runs, slice):
            raise TypeError("DenseSchedules is indexed by a slice of runs")
        picked = range(len(self._schedules))[self._runs][runs]
        return DenseSchedules(self._schedules, self._horizon, self._cache, slice(picked.start, picked.stop, picked.step))

    def dense_runs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        got = self._cache.get(t)
        if got is None:
            got = self._cache[t] = _dense(self._schedules, t)
        return got[0][self._runs], got[1][self._runs]

    def reads_ahead(self, written: np.ndarray) -> bool:
        """Whether some run's combination in round ``t`` uses another agent's message of a later round that a
        construction writes (``written[s - 1, j]``: sender ``j``'s round-``s`` message is written)."""
        key = ("reads_ahead", self._runs.start, self._runs.stop, self._runs.step, written.shape, written.tobytes())
        if key not in self._cache:
            self._cache[key] = self._reads_ahead(written)
        return bool(self._cache[key])

    def _reads_ahead(self, written: np.ndarray) -> bool:
        from accounting.scheduled_replay import reads_ahead

        return reads_ahead(self, self._horizon, written)


def _dense(schedules: Any, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Round ``t`` of every run, as the replay reads it (once per distinct schedule object)."""
    if hasattr(schedules, "dense_runs"):
        w, src = schedules.dense_runs(t)
        return np.asarray(w, dtype=float), np.asarray(src, dtype=np.int64)
    seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    ws, ss = [], []
    for s in schedules:
        got = seen.get(id(s))
        if got is None:
            w, src = s.dense(t)
            got = seen[id(s)] = (np.asarray(w, dtype=float), np.asarray(src, dtype=np.int64))
        ws.append(got[0])
        ss.append(got[1])
    return np.stack(ws), np.stack(ss)


class CandidateRuns:
    """The engine runs every candidate is evaluated on, with the schedules' dense rounds computed once.

    Args:
        runs: the engine runs of the user's scenario.
        rows: the runs evaluated, in order (a candidate evaluated on fewer runs uses a prefix).

    Attributes:
        rows: as given.
        runs: the :class:`~asyncdp.privacy.behavior.EngineRuns` of those rows (schedules as :class:`DenseSchedules`
            when they fit in :data:`DENSE_CACHE_ENTRIES`).
        known: the search's record of candidates already evaluated on these runs (each run's losses and
            per-round contributions, keyed by the candidate): a run's loss depends on that run alone, so a
            candidate met again on fewer runs (the Hypothesis search starts from the best extremal pairs) reads
            its first rows instead of replaying them.
    """

    def __init__(self, runs: EngineRuns, rows: Sequence[int]) -> None:
        self.rows = list(rows)
        picked = _picked(runs.schedules, self.rows)
        first = next(iter(runs.messages.values()))
        horizon, n_agents = first.shape[1], first.shape[2]
        if horizon * len(self.rows) * n_agents * n_agents <= DENSE_CACHE_ENTRIES:
            picked = DenseSchedules(picked, horizon)
        self.runs = EngineRuns(runs.engine, tuple(runs.seeds[r] for r in self.rows),
                               {c: m[self.rows] for c, m in runs.messages.items()}, picked, runs.unicast)
        self.known: dict[Any, tuple[np.ndarray, np.ndarray]] = {}

    def prefix(self, count: int) -> EngineRuns:
        """The first ``count`` evaluated runs (all of them if fewer)."""
        if count >= len(self.rows):
            return self.runs
        r = self.runs
        return EngineRuns(r.engine, r.seeds[:count], {c: m[:count] for c, m in r.messages.items()},
                          r.schedules[:count], r.unicast)


def _picked(schedules: Any, rows: list[int]) -> Any:
    """The schedules of ``rows``: a slice of the batch for consecutive rows, else one schedule per row."""
    if hasattr(schedules, "dense_runs") and rows == list(range(rows[0] if rows else 0, (rows[-1] + 1) if rows else 0)):
        return schedules[rows[0]:rows[-1] + 1] if rows else schedules[0:0]
    return tuple(schedules[r] for r in rows)


def _written(p: Scenario, pinned: int | Sequence[int]) -> np.ndarray:
    """``(T, N)``: the messages a construction under ``p`` writes (the pinned agents' every round, everyone's in a
    round some channel releases without noise)."""
    from .behavior import declared_noise

    out = np.zeros((p.horizon, p.problem.num_agents), dtype=bool)
    out[:, pinned] = True
    for ch in declared_noise(p.algorithm, p.horizon).values():
        out[np.ones(p.horizon, dtype=bool) if ch.mechanism is None else np.asarray(ch.scales) == 0] = True
    return out


def constructed_replay(runs: EngineRuns, p: Scenario, q: Scenario | None, pinned: int | Sequence[int]
                       ) -> tuple[dict[str, np.ndarray], ScheduledReplay]:
    """The constructed transcript of the pinned agent(s) under ``p``, and its replay under ``p`` and ``q``.

    The construction (:func:`asyncdp.privacy.worst_case.construct_transcript`)
    repeats a pinned replay on its own output until nothing changes, at most
    ``horizon + 1`` passes. In the pass that finds the transcript settled,
    every value written equals the one already there, so that pass computes
    exactly what a replay of the settled transcript under ``p`` computes;
    passes after the first therefore run under ``q`` too, and the settled
    pass's losses are the transcript's exact losses (no further replay).

    One pass is enough when no combination reads a written message before
    the pass writes it: the pass processes rounds in order and writes round
    ``t``'s messages (the pinned agents' on every channel, every agent's in a
    round some channel releases without noise) before round ``t``'s
    combinations, so if no combination of round ``t`` uses a written message
    of a later round (:meth:`DenseSchedules.reads_ahead`, from the schedules
    alone), every value the pass reads is final when read: its computations
    are those of a replay of its output, a second pass would reproduce it,
    and the first pass, run under ``p`` and ``q``, gives the losses. That
    holds on every lockstep or deadline schedule and on asynchronous ones
    without such reads; the others take the repeated passes.

    Args:
        runs: the runs (schedules and the other agents' messages).
        p: the problem whose noise-free values are pinned (the candidate's ``P``).
        q: the adjacent problem (``None``: the transcript only).
        pinned: the pinned agent, or agents.

    Returns:
        ``(transcript, replay)``: per channel the constructed messages, and the settled pass's
        :class:`~accounting.scheduled_replay.ScheduledReplay` (with ``losses`` when ``q`` is given).

    Raises:
        AccountingError: the construction does not settle within ``horizon + 1`` passes.
    """
    from accounting.errors import AccountingError

    once = isinstance(runs.schedules, DenseSchedules) and not runs.schedules.reads_ahead(_written(p, pinned))
    built: dict[str, np.ndarray] | None = None
    for _ in range(p.horizon + 1):
        out = replay_runs(runs, p, None if built is None and not once else q, algorithm=p.algorithm,
                          pin_agent=pinned, messages=built)  # type: ignore[arg-type]
        nxt = out.messages
        assert nxt is not None
        if once or (built is not None and all(np.array_equal(nxt[c], built[c], equal_nan=True) for c in nxt)):
            return nxt, out
        built = {c: np.array(m) for c, m in nxt.items()}
    raise AccountingError(f"the constructed transcript of agent(s) {pinned} did not settle within "
                          f"{p.horizon + 1} passes")
