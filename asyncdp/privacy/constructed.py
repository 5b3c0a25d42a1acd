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
both problems, gives the loss without a further replay; and when no
combination reads a constructed message ahead, the first pass has settled.
A later pass starts where the previous one's values first change what a
combination reads (``resume`` of
:func:`accounting.scheduled_replay.scheduled_replay`), and the passes stop
as soon as no combination reads ahead a message the last pass changed.
:func:`constructed_replays` does the same for several candidates in one
replay per pass (each candidate on its own copy of the runs, every step of
the algorithm taken once for all of them: :mod:`asyncdp.privacy.stacked`),
and a candidate may be given by its cost families alone
(:class:`CandidateCosts`), so that its problems are never built when the
steps need nothing else of them. Where one pass settles the transcripts, the
stack takes both problems' steps in one call (``asyncdp.privacy.paired_rules.Paired``:
their runs one after the other); the candidates of one stack may each be
evaluated on their own first runs (``sizes``); and a round every evaluated
run shares is combined without gathering (:meth:`DenseSchedules.shared_round`).

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> from asyncdp.privacy.candidate_pairs import candidate_scenarios
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

from accounting.schedule_reads import dense_round, later_reads
from accounting.scheduled_replay import ScheduledReplay

from ..engine.schedule import RealizedSchedules
from ..scenario import Scenario
from .behavior import EngineRuns, SharedSchedule, schedule_batch
from .paired_rules import Paired
from .stack_runs import Blocks, Tiled, bounds
from .stacked import Stacked, same_algorithm

__all__ = ["DenseSchedules", "CandidateRuns", "CandidateCosts", "Replays", "constructed_replay", "constructed_replays",
           "constructed_transcripts",
           "DENSE_CACHE_ENTRIES", "STACK_ENTRIES", "STACK_HORIZON_ENTRIES"]

DENSE_CACHE_ENTRIES = 4_000_000
"""Largest ``T x R x N x N`` kept as dense rounds. Above it the schedules are read as recorded, every time; runs
that all share one schedule (``asyncdp.privacy.behavior.SharedSchedule``, which keeps its ``T x N x N``
rounds once) are then still read as :class:`DenseSchedules`, without its per-run rounds kept (``keep``)."""


STACK_ENTRIES = 1_000_000
"""Largest ``K R x N x N x d`` of ``K`` candidates replayed together (:func:`constructed_replays`: one round's
gather); below the replay's own chunk size, so the stack is one chunk."""

STACK_HORIZON_ENTRIES = 4_000_000
"""Largest ``K R x T x N x d`` of ``K`` candidates replayed together (their transcripts and residuals, every round
kept: 32 MB an array). Apart from :data:`STACK_ENTRIES`: each replay walks all ``T`` rounds at a fixed cost per
round, and with one budget for both the replays grow with ``T`` too (the search's cost with ``T^2``)."""


class DenseSchedules:
    """The realized schedules of a few runs, every round kept as dense ``(R, N, N)`` arrays once computed.

    A :class:`accounting.replay_inputs.ScheduleBatch`: :meth:`dense_runs`
    gives what the replay would compute from the recorded schedules (the
    batch's ``dense_runs`` or each run's ``dense``), computed on the first
    call for a round and reused by every later replay; slicing gives the
    same rounds for fewer runs, sharing the cache.

    Args:
        schedules: the runs' schedules (a sequence of schedules, or a batch with ``dense_runs``).
        horizon: ``T``.
        keep: keep each round's per-run arrays (its ``(W, S)``, copies and gather index; ``False``: computed on
            each call, the same values, e.g. when ``T x R x N x N`` does not fit in :data:`DENSE_CACHE_ENTRIES`).

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> one = RealizedSchedule.from_dense([np.eye(2)], [np.eye(2, dtype=int)])
        >>> d = DenseSchedules([one, one], 1)
        >>> len(d), d.dense_runs(1)[0].shape, len(d[:1]), d[:1].dense_runs(1)[1].tolist()
        (2, (2, 2, 2), 1, [[[1, 0], [0, 1]]])
    """

    def __init__(self, schedules: Any, horizon: int, _cache: dict[Any, Any] | None = None,
                 _runs: slice | None = None, keep: bool = True) -> None:
        self._schedules = schedules
        self._horizon = horizon
        self._keep = keep
        self._cache: dict[Any, Any] = {} if _cache is None else _cache  # rounds, and reads_ahead answers
        self._runs = slice(0, len(schedules)) if _runs is None else _runs

    def __len__(self) -> int:
        return len(range(len(self._schedules))[self._runs])

    def __getitem__(self, runs: slice) -> DenseSchedules:
        if not isinstance(runs, slice):
            raise TypeError("DenseSchedules is indexed by a slice of runs")
        picked = range(len(self._schedules))[self._runs][runs]
        return DenseSchedules(self._schedules, self._horizon, self._cache, slice(picked.start, picked.stop, picked.step),
                              self._keep)

    def dense_runs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """``(W, S)`` of round ``t`` for these runs, ``(R, N, N)`` each (computed on the first call for ``t``)."""
        got = self._every(t)
        return got[0][self._runs], got[1][self._runs]

    def _every(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Round ``t``'s ``(W, S)`` of every run of the schedules (kept when ``keep``; when kept, a batch given by
        its columns has every round's computed at once on the first call:
        :meth:`~asyncdp.engine.schedule.RealizedSchedules.dense_rounds`)."""
        got = self._cache.get(t)
        if got is None and self._keep and "every round" not in self._cache:
            batch = self._schedules
            every = self._cache["every round"] = batch.dense_rounds() if isinstance(batch, RealizedSchedules) else None
            if every is not None:
                self._cache.update({u + 1: (every[0][u], every[1][u]) for u in range(len(every[0]))})
                got = self._cache.get(t)
        if got is None:
            got = dense_round(self._schedules, t)
            if self._keep:
                self._cache[t] = got
        return got

    def shared_round(self, t: int) -> Any:
        """Round ``t`` as one :class:`~accounting.shared_rounds.SharedRound` when every one of these runs has
        the same ``(W, S)`` in it (e.g. lockstep runs on lossless links), else ``None`` (computed once per round
        for every replay of these runs). The replay then combines the messages without gathering them (the
        same numbers, :class:`~accounting.shared_rounds.SharedRound`), and a stack of copies of these runs
        (``asyncdp.privacy.stack_runs.Tiled``) needs no copied rounds."""
        from accounting.shared_rounds import shared_round

        if isinstance(self._schedules, SharedSchedule):  # one schedule of every run: its round, shared by any slice
            return self._schedules.shared_round(t)
        every = ("shared", t)  # every run of the schedules (any slice of runs that all share it shares it)
        if every not in self._cache:
            w, src = self._every(t)
            alike = len(w) > 0 and bool((src == src[:1]).all() and (w == w[:1]).all())
            self._cache[every] = shared_round(w[0], src[0]) if alike else None
        if self._cache[every] is not None or len(self) == len(self._schedules):  # (these runs are every run)
            return self._cache[every]
        key = ("shared", t, self._runs.start, self._runs.stop, self._runs.step)
        if key not in self._cache:
            w, src = self.dense_runs(t)
            alike = len(w) > 0 and bool((src == src[:1]).all() and (w == w[:1]).all())
            self._cache[key] = shared_round(w[0], src[0]) if alike else None
        return self._cache[key]

    def tiled_round(self, t: int, copies: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`dense_runs` of round ``t`` for ``copies`` copies of these runs one after the other
        (``numpy.concatenate([w] * copies)``, the same for ``S``; ``asyncdp.privacy.stack_runs.Tiled``). Kept
        for the most copies asked so far: fewer copies are its first rows (views), so the stacked replays of
        the search's batches concatenate each round once."""
        key = ("tiled", t, self._runs.start, self._runs.stop, self._runs.step)
        got = self._cache.get(key)
        if got is None or got[0] < copies:
            w, src = self.dense_runs(t)
            got = (copies, np.concatenate([w] * copies), np.concatenate([src] * copies))
            if self._keep:
                self._cache[key] = got
        rows = copies * len(self)
        return got[1][:rows], got[2][:rows]

    def gather_index(self, t: int) -> Any:
        """``accounting.round_gather.gather_index`` of round ``t``'s sender rounds for these runs (computed
        once, for every replay of them)."""
        from accounting.round_gather import gather_index

        key = ("index", t, self._runs.start, self._runs.stop, self._runs.step)
        got = self._cache.get(key)
        if got is None:
            got = gather_index(self.dense_runs(t)[1])
            if self._keep:
                self._cache[key] = got
        return got

    def reads_ahead(self, written: np.ndarray, readers: np.ndarray | None = None) -> bool:
        """Whether some run's combination in round ``t`` (of a receiver in ``readers``, default every agent) uses
        another agent's message of a later round that a construction writes (``written[s - 1, j]``: sender
        ``j``'s round-``s`` message is written)."""
        key = ("reads_ahead", self._runs.start, self._runs.stop, self._runs.step, written.shape, written.tobytes(),
               None if readers is None else np.asarray(readers, dtype=bool).tobytes())
        if key not in self._cache:
            self._cache[key] = self._reads_ahead(written, readers)
        return bool(self._cache[key])

    def ahead_entries(self) -> tuple[np.ndarray, ...]:
        """Every read of another agent's message of a later round: ``(t, r, s, j, i)`` arrays, receiver ``i`` of
        run ``r`` combining sender ``j``'s message of round ``s > t`` in round ``t`` (computed once for every
        run of the schedules, each slice's its runs' own: a run's reads are its own)."""
        key = ("ahead", self._runs.start, self._runs.stop, self._runs.step)
        if key not in self._cache and (self._runs.step or 1) < 0:  # runs read backwards: their own reads
            self._cache[key] = later_reads(self, self._horizon)
        if key not in self._cache:
            every = self._cache.get(("ahead", None))
            if every is None:
                every = self._cache[("ahead", None)] = later_reads(DenseSchedules(self._schedules, self._horizon,
                                                                                  self._cache, None, self._keep),
                                                                   self._horizon)
            t, r, s, j, i = every
            start, step = self._runs.start, self._runs.step or 1
            mine = (r >= start) & (r < self._runs.stop) & ((r - start) % step == 0)
            self._cache[key] = (t[mine], (r[mine] - start) // step, s[mine], j[mine], i[mine])
        return self._cache[key]

    def _reads_ahead(self, written: np.ndarray, readers: np.ndarray | None) -> bool:
        """:func:`accounting.schedule_reads.reads_ahead` of these runs, from :meth:`ahead_entries` (the same
        reads)."""
        _, _, s, j, i = self.ahead_entries()
        hit = written[s - 1, j]
        if readers is not None:
            hit = hit & np.asarray(readers, dtype=bool)[i]
        return bool(hit.any())


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
            per-round contributions, keyed by the changed agent, the scenario and the candidate): a run's loss depends on that run alone, so a
            candidate met again on fewer runs (the search starts from the best extremal pairs) reads
            its first rows instead of replaying them.
        bases: by the identity of a scenario the search evaluates candidates of, that scenario (so that the
            identity is not reused) and what every candidate keeps of it (its algorithm bound to its problem).
        kinked: the entries of ``known`` that are kinked pairs (``asyncdp.privacy.kinked.KinkedPair``, by
            their keys there), for whoever reports them.
        transcripts: by the keys of ``known``, the constructed transcripts (under ``P``) of some candidates on
            the first rows (:meth:`transcript`): what a later step that needs them reads instead of replaying
            them again.
        spare: by their keys, the losses of candidates evaluated ahead of the step that uses them (in a
            replay stacked with another step's candidates), kept apart from ``known`` until that step reads them
            (a step the check does not reach leaves nothing in ``known``).
        memo: what the search derives from these runs more than once (e.g. its kinked pairs), by what it is.
    """

    def __init__(self, runs: EngineRuns, rows: Sequence[int]) -> None:
        self.rows = list(rows)
        picked = _picked(runs.schedules, self.rows)
        first = next(iter(runs.messages.values()))
        horizon, n_agents = first.shape[1], first.shape[2]
        batch = schedule_batch(picked)  # (one schedule of every run: read once a round)
        if horizon * len(self.rows) * n_agents * n_agents <= DENSE_CACHE_ENTRIES:
            picked = DenseSchedules(batch, horizon)
        elif isinstance(batch, SharedSchedule) and horizon * n_agents * n_agents <= DENSE_CACHE_ENTRIES:
            picked = DenseSchedules(batch, horizon, keep=False)  # (its rounds kept once, by the shared schedule)
        self.runs = EngineRuns(runs.engine, tuple(runs.seeds[r] for r in self.rows),
                               {c: m[self.rows] for c, m in runs.messages.items()}, picked, runs.unicast,
                               batch_rows=None if runs.batch_rows is None else
                               tuple(runs.batch_rows[r] for r in self.rows))
        self.known: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
        self.bases: dict[int, tuple[Scenario, Scenario]] = {}
        self.kinked: dict[Any, Any] = {}
        self.transcripts: dict[Any, dict[str, np.ndarray]] = {}
        self.spare: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
        self.memo: dict[Any, Any] = {}

    def transcript(self, key: Any, count: int) -> dict[str, np.ndarray] | None:
        """The kept constructed transcript of ``key`` on the first ``count`` rows, or ``None`` (not kept, or kept on
        fewer rows)."""
        got = self.transcripts.get(key)
        if got is None or any(m.shape[0] < count for m in got.values()):
            return None
        return {c: m[:count] for c, m in got.items()}

    def prefix(self, count: int) -> EngineRuns:
        """The first ``count`` evaluated runs (all of them if fewer)."""
        if count >= len(self.rows):
            return self.runs
        r = self.runs
        return EngineRuns(r.engine, r.seeds[:count], {c: m[:count] for c, m in r.messages.items()},
                          r.schedules[:count], r.unicast,
                          batch_rows=None if r.batch_rows is None else r.batch_rows[:count])


def _picked(schedules: Any, rows: list[int]) -> Any:
    """The schedules of ``rows``: the batch itself for every row in order (e.g. the check's every run: its columns
    are not copied and checked again, and what the batch derived once, its entries by round, is reused), a slice of
    the batch for other consecutive rows, else one schedule per row."""
    if rows and hasattr(schedules, "dense_runs") and rows == list(range(rows[0], rows[-1] + 1)):
        return schedules if rows[0] == 0 and len(rows) == len(schedules) else schedules[rows[0]:rows[-1] + 1]
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


def _one_pass(runs: EngineRuns, p: Scenario, pinned: int | Sequence[int]) -> str | None:
    """Whether one construction pass gives the settled transcript's values: ``"settled"``, ``"pinned"`` or ``None``.

    ``"settled"``: no combination reads a written message ahead (every value the pass reads is final when
    read). ``"pinned"``: only the messages of the pinned agents are written and only other agents'
    combinations read them ahead. The pinned agents' computations then read final values only (the other
    agents' recorded messages and the pinned agents' messages already written), so the written messages
    and the pinned agents' release means are final after one pass; the other agents' states may differ
    from the settled ones, but a pure per-agent rule gives them the same means under both problems (only
    the pinned agents' costs differ), so their releases add nothing to the loss either way. The caller
    checks that last point on the pass (:func:`_others_unmoved`) and repeats the passes where it fails.
    """
    if not isinstance(runs.schedules, DenseSchedules):
        return None
    written = _written(p, pinned)
    if not runs.schedules.reads_ahead(written):
        return "settled"
    mask = np.zeros(written.shape[1], dtype=bool)
    mask[pinned] = True
    if written[:, ~mask].any() or runs.schedules.reads_ahead(written, mask):
        return None
    return "pinned"


class _RunChecks:
    """Per run of a stack of candidates pinned to different agents, the agent whose one pass
    :func:`_others_unmoved` checks as that candidate's own replay checks it (``-1``: a run whose own replay
    checks nothing, its one pass ``"settled"``); a type of its own, apart from ``pinned``'s agents.

    Attributes:
        agents: ``(R,)`` int.
    """

    __slots__ = ("agents",)

    def __init__(self, agents: np.ndarray) -> None:
        self.agents = np.asarray(agents, dtype=np.int64)


def _others_unmoved(out: ScheduledReplay, pinned: int | Sequence[int] | _RunChecks) -> bool:
    """Whether every release of the agents other than ``pinned`` has the same mean under both problems in the
    replay ``out`` (its residuals under ``P`` and ``P'`` are equal entry by entry), as a pure per-agent rule
    gives them. ``pinned`` as :class:`_RunChecks`: run ``r``'s pinned agent, or none (``-1``: a run not
    checked), each run's releases compared as its own replay compares them.

    Example:
        >>> from types import SimpleNamespace
        >>> r = np.zeros((2, 1, 3, 1)); rp = r.copy(); rp[1, 0, 2] = 1.0  # run 1, agent 2 moved
        >>> out = SimpleNamespace(residuals={"y": r}, residuals_prime={"y": rp})
        >>> _others_unmoved(out, 2), _others_unmoved(out, _RunChecks([0, 2])), _others_unmoved(out, _RunChecks([2, 0]))
        (True, True, False)
    """
    if out.residuals_prime is None:
        return False
    for name, r in out.residuals.items():
        rp = out.residuals_prime[name]
        if isinstance(pinned, _RunChecks):
            per_run = pinned.agents
            other = np.ones(r.shape[:1] + r.shape[2:3], dtype=bool)  # (R, N): the releases compared
            other[per_run < 0] = False
            other[np.flatnonzero(per_run >= 0), per_run[per_run >= 0]] = False
        else:
            other = np.ones((1, r.shape[2]), dtype=bool)
            other[0, pinned] = False
        differ = (r != rp) & other.reshape(other.shape[:1] + (1,) + other.shape[1:] + (1,) * (r.ndim - 3))
        if differ.any() and not (np.isnan(r[differ]) & np.isnan(rp[differ])).all():  # (NaN equal to NaN)
            return False
    return True


def constructed_replay(runs: EngineRuns, p: Scenario, q: Scenario | None, pinned: int | Sequence[int]
                       ) -> tuple[dict[str, np.ndarray], ScheduledReplay]:
    """The constructed transcript of the pinned agent(s) under ``p``, and its replay under ``p`` and ``q``.

    The construction (:func:`~asyncdp.privacy.candidate_evaluation.construct_transcript`)
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
    without such reads. On asynchronous schedules where only the other
    agents' combinations read a pinned agent's message ahead, one pass is
    enough too, when the pass shows that those agents' releases have the
    same means under both problems (:func:`_one_pass`); the others take
    the repeated passes (:func:`_settle`: each resumed where it first
    reads something the previous pass changed, the last one the first
    whose changes no combination reads ahead).

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
    from accounting.scheduled_replay import scheduled_replay

    from .behavior import AlgorithmChannelRule, declared_noise

    rule = AlgorithmChannelRule(p.algorithm, p.problem, p.initial_points())
    rule_q = None if q is None else AlgorithmChannelRule(p.algorithm, q.problem, q.initial_points())
    noise = declared_noise(p.algorithm, p.horizon)
    schedules = runs.schedules if hasattr(runs.schedules, "dense_runs") else list(runs.schedules)
    ahead = runs.schedules.ahead_entries if isinstance(runs.schedules, DenseSchedules) else None

    def replay(messages: Any, with_q: bool, resume: Any, record: bool) -> ScheduledReplay:
        return scheduled_replay(runs.messages if messages is None else messages, schedules, noise, rule,
                                rule_q if with_q else None, unicast=runs.unicast, pin_agent=pinned,
                                record=record and ahead is not None, resume=resume)

    out = _settle(runs.messages, replay, _one_pass(runs, p, pinned), q is not None, ahead, pinned, p.horizon)
    assert out.messages is not None
    return out.messages, out


def _changed(new: Any, old: Any) -> dict[str, np.ndarray]:
    """Per channel, which messages of ``new`` differ from ``old`` (any coordinate; NaN equal to NaN)."""
    return {c: ~((new[c] == old[c]) | (np.isnan(new[c]) & np.isnan(old[c]))).all(axis=-1) for c in new}


def _first_changed_read(ahead: tuple[np.ndarray, ...], changed: dict[str, np.ndarray], unicast: bool) -> int | None:
    """The first round in which some combination reads a changed message of a later round (``ahead``:
    :meth:`DenseSchedules.ahead_entries`), else ``None``."""
    t, r, s, j, i = ahead
    first = None
    for c in changed.values():
        hit = c[r, s - 1, j, i] if unicast else c[r, s - 1, j]
        if hit.any():
            k = int(t[hit].min())
            first = k if first is None else min(first, k)
    return first


def _settle(recorded: Any, replay: Any, plan: str | None, with_q: bool, ahead: Any, pinned: Any,
            horizon: int) -> ScheduledReplay:
    """The construction passes of :func:`constructed_replay` until the transcript settles; the settled pass.

    ``replay(messages, with_q, resume, record)`` is one pass (``messages`` ``None``: the recorded ones; ``record``:
    keep its states, asked of a pass with ``P'`` that may be followed by another). Where the passes
    record their states (``ahead``: the schedules' reads of later rounds, :meth:`DenseSchedules.ahead_entries`),
    a pass's rounds before the first one that reads ahead a message the previous pass changed are that pass's
    own (they read the same values), so the next pass resumes there
    (:func:`accounting.scheduled_replay.scheduled_replay`'s ``resume``); and when no combination reads ahead a
    changed message, every value the pass read is the one its output holds: its computations are those of a
    replay of its output, which has settled (a further pass would reproduce it entry for entry). The first pass
    keeps no states (so a stack takes both problems' steps in it at once, ``paired_rules.Paired``, where one pass
    is expected to settle: ``plan``); when it has not settled, the second pass starts at round 1 instead of
    resuming, with the same values (its rounds before the resumed one read what the first pass read).
    """
    from accounting.errors import AccountingError

    unicast = next(iter(recorded.values())).ndim == 5
    read = recorded  # what the pass read
    out = replay(None, with_q and plan is not None, None, False)
    for passes in range(1, horizon + 2):
        nxt = out.messages
        assert nxt is not None
        if plan is not None and (plan == "settled" or not with_q or _others_unmoved(out, pinned)):
            return out
        if isinstance(pinned, _RunChecks):  # (a stack's blocks: each its own replay's passes, so the caller's)
            raise ValueError("candidates pinned to different agents stack only when one pass settles each")
        plan = None
        resume = None
        if with_q and out.per_round is not None and ahead is not None:
            first = _first_changed_read(ahead(), _changed(nxt, read), unicast)
            if first is None:
                return out
            resume = (first, out) if out.states is not None else None  # (the first pass: from round 1)
        elif read is not recorded and all(np.array_equal(nxt[c], read[c], equal_nan=True) for c in nxt):
            return out
        if passes == horizon + 1:
            break
        read = nxt
        out = replay(nxt, with_q, resume, True)
    raise AccountingError(f"the constructed transcript of agent(s) {pinned} did not settle within "
                          f"{horizon + 1} passes")


class CandidateCosts:
    """A candidate pair given by its two cost families on a base scenario, its scenarios built only when asked.

    :func:`constructed_replays` replays stacked candidates with their cost families alone where it can; building
    a candidate's problems (validating them, deriving their constants) is left to :meth:`scenarios`.

    Args:
        base: the scenario whose domain, algorithm (bound to the user's problem), horizon and initial points
            the candidate keeps.
        costs, costs_prime: the candidate's cost families under ``P`` and ``P'`` (or
            ``asyncdp.privacy.stacked_gradients.LinearCosts``: built only if a step needs more than their gradients
            and their base's structure).
        build: ``() -> (p, q)``: the candidate's scenarios (with these costs, ``base``'s algorithm and initial
            points).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> from asyncdp.privacy.candidate_pairs import candidate_scenarios
        >>> from asyncdp.problems.costs import LinearOverride
        >>> sc = small_example()[0].scenario
        >>> sc = sc.replace(algorithm=sc.algorithm.bind(sc.problem))
        >>> c = CandidateCosts(sc, LinearOverride(sc.problem.costs, 0, [1.0, 0.0]),
        ...                    LinearOverride(sc.problem.costs, 0, [-1.0, 0.0]),
        ...                    lambda: candidate_scenarios(sc, 0, [1.0, 0.0], [-1.0, 0.0]))
        >>> c.scenarios()[1].problem.costs.linear_gradient.tolist()
        [-1.0, 0.0]
    """

    def __init__(self, base: Scenario, costs: Any, costs_prime: Any, build: Any) -> None:
        self.base, self.costs, self.costs_prime, self._build = base, costs, costs_prime, build
        self._built: tuple[Scenario, Scenario] | None = None

    def scenarios(self) -> tuple[Scenario, Scenario]:
        """``(p, q)`` (built once)."""
        if self._built is None:
            self._built = self._build()
        assert self._built is not None
        return self._built


def stack_size(runs: EngineRuns) -> int:
    """How many candidates :func:`constructed_replays` replays together on ``runs`` (:data:`STACK_ENTRIES`,
    :data:`STACK_HORIZON_ENTRIES`)."""
    first = next(iter(runs.messages.values()))
    horizon, n_agents = first.shape[1], first.shape[2]
    width = max(m.shape[-1] * (n_agents if runs.unicast else 1) for m in runs.messages.values())
    rounds = STACK_ENTRIES // max(1, runs.runs * n_agents * n_agents * width)
    kept = STACK_HORIZON_ENTRIES // max(1, runs.runs * horizon * n_agents * width)
    return max(1, min(rounds, kept))


class Replays(list):  # type: ignore[type-arg]
    """:func:`constructed_replays`' result: per candidate ``(losses, per_round)``, with the stacked replay's
    constructed messages (each candidate's transcript under its ``P``: :meth:`transcript`).

    Args:
        items: per candidate, its runs' losses and per-round contributions.
        messages: per channel, the settled pass's messages of every stacked run.
        rows: where each candidate's runs start in the stack, and where the last one's end.
    """

    def __init__(self, items: Sequence[tuple[np.ndarray, np.ndarray]], messages: dict[str, np.ndarray],
                 rows: Sequence[int]) -> None:
        super().__init__(items)
        self.messages, self.rows = messages, list(rows)

    def transcript(self, k: int, count: int | None = None) -> dict[str, np.ndarray]:
        """Candidate ``k``'s constructed transcript on its first ``count`` runs (default all): views of the stack's
        arrays."""
        start, stop = self.rows[k], self.rows[k + 1]
        stop = stop if count is None else min(stop, start + count)
        return {c: m[start:stop] for c, m in self.messages.items()}


def constructed_transcripts(runs: EngineRuns, pairs: Sequence[tuple[Scenario, Scenario] | CandidateCosts],
                            pinned: int | Sequence[int]) -> list[dict[str, np.ndarray]]:
    """The constructed transcripts of several candidates under their ``P`` (:func:`constructed_replays`' replay).

    Args:
        runs, pairs, pinned: as :func:`constructed_replays`.

    Returns:
        Per candidate, per channel its constructed messages (those of :func:`constructed_replay` under its ``P``).

    Raises:
        AccountingError, ValueError: as :func:`constructed_replays`.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> from asyncdp.privacy.candidate_pairs import candidate_scenarios
        >>> pair, ctx = small_example()
        >>> runs = CandidateRuns(ctx.engine_runs(0), [0, 1]).runs
        >>> p, q = candidate_scenarios(pair.scenario, 0, [1.0, 0.0], [-1.0, 0.0])
        >>> got = constructed_transcripts(runs, [(p, q)], 0)[0]
        >>> all(np.array_equal(got[c], m, equal_nan=True) for c, m in constructed_replay(runs, p, None, 0)[0].items())
        True
    """
    out, rows = _stacked_replay(runs, pairs, pinned)
    assert out.messages is not None
    return [{c: m[rows[k]:rows[k + 1]] for c, m in out.messages.items()} for k in range(len(rows) - 1)]


def constructed_replays(runs: EngineRuns, pairs: Sequence[tuple[Scenario, Scenario] | CandidateCosts],
                        pinned: int | Sequence[int], pins: Sequence[int] | None = None,
                        sizes: Sequence[int] | None = None) -> Replays:
    """:func:`constructed_replay` of several candidates ``(p, q)`` on the same runs, in one replay per pass.

    The candidates' runs are stacked (each candidate's rule on its own copy
    of the runs), so each pass costs one replay of the stack instead of one
    per candidate; the passes repeat until every candidate's transcript has
    settled (a settled transcript replays to itself, so a candidate that
    settled early gets the same values again). The candidates must share
    the algorithm's noise declaration (the worst-case search's do: it binds
    the user's algorithm to the user's problem). When they share the
    algorithm, the initial points and the domain, each step of the
    algorithm runs once for every candidate (:class:`Stacked`: each
    candidate's cost family answers for its runs), else once per candidate
    (:class:`Blocks`); the values are the same.

    Args:
        runs: the runs (as :func:`constructed_replay`; at most :func:`stack_size` candidates at a time).
        pairs: the candidates: their scenarios ``(p, q)``, or :class:`CandidateCosts` (whose scenarios are
            built only if the stacked steps need more than their cost families).
        pinned: the pinned agent, or agents.
        pins: per candidate, its own pinned agent instead (e.g. candidates changing different agents;
            :class:`~accounting.replay_inputs.RunPins`): only when one construction pass settles every
            candidate's transcript (:func:`_one_pass`; under ``"pinned"``, each block's other agents unmoved on
            the pass, checked as its own replay checks them), so each block's values are those of its own replay.
        sizes: per candidate, how many of the runs it is evaluated on (its first ones; default all): each
            candidate's values are those of its own replay of those runs (each run's values are its own).

    Returns:
        Per candidate, its runs' losses ``(R,)`` and per-round contributions ``(R, T)`` (a :class:`Replays`: the
        candidates' constructed transcripts too, those :func:`constructed_transcripts` gives).

    Raises:
        AccountingError: a candidate's construction does not settle, or its replay fails.
        ValueError: candidates with different noise declarations, or more than fit in one replay chunk;
            ``pins`` not one per candidate, or some candidate's transcript needing more than one pass.
    """
    out, rows = _stacked_replay(runs, pairs, pinned, pins, sizes)
    assert out.losses is not None and out.per_round is not None and out.messages is not None
    return Replays([(out.losses[rows[k]:rows[k + 1]], out.per_round[rows[k]:rows[k + 1]])
                    for k in range(len(rows) - 1)], out.messages, rows)


def _stacked_replay(runs: EngineRuns, pairs: Sequence[tuple[Scenario, Scenario] | CandidateCosts],
                    pinned: int | Sequence[int], pins: Sequence[int] | None = None,
                    sizes: Sequence[int] | None = None) -> tuple[ScheduledReplay, list[int]]:
    """The settled pass of :func:`constructed_replays`' stacked construction, and where each candidate's runs
    start in it (and the last one's end: ``asyncdp.privacy.stack_runs.bounds``)."""
    from accounting.replay_inputs import RunPins
    from accounting.scheduled_replay import scheduled_replay

    from .behavior import AlgorithmChannelRule, declared_noise

    bases: dict[int, tuple[Scenario, Any, Any]] = {}  # by base identity (the search's candidates share one)

    def sides(c: Any) -> tuple[Scenario, Any, Any, Any, Any]:
        """``(scenario, costs, costs', domain, x0 of both sides or None when they differ)``, without building
        a :class:`CandidateCosts`' problems."""
        if isinstance(c, CandidateCosts):
            got = bases.get(id(c.base))
            if got is None or got[0] is not c.base:
                got = bases[id(c.base)] = (c.base, c.base.problem.domain, c.base.initial_points())
            return c.base, c.costs, c.costs_prime, got[1], got[2]
        p, q = c
        x0 = p.initial_points()
        same = p.problem.domain is q.problem.domain and np.array_equal(q.initial_points(), x0)
        return p, p.problem.costs, q.problem.costs, p.problem.domain if same else None, x0 if same else None

    def scenarios_of(c: Any) -> tuple[Scenario, Scenario]:
        return c.scenarios() if isinstance(c, CandidateCosts) else c

    got = [sides(c) for c in pairs]
    p0 = got[0][0]
    noise = declared_noise(p0.algorithm, p0.horizon)
    for p, *_ in got[1:]:
        if same_algorithm(p.algorithm, p0.algorithm) and p.horizon == p0.horizon:
            continue
        other = declared_noise(p.algorithm, p.horizon)
        if other.keys() != noise.keys() or any(
                (a.mechanism, None if a.scales is None else a.scales.tobytes())
                != (b.mechanism, None if b.scales is None else b.scales.tobytes())
                for a, b in ((noise[c], other[c]) for c in noise)):
            raise ValueError("stacked candidates must share the noise declaration")
    count = len(pairs)
    size: Any = runs.runs  # every candidate's runs, or (sizes) each one's first runs
    if sizes is not None and any(int(v) != runs.runs for v in sizes):
        if len(sizes) != count or not all(0 < int(v) <= runs.runs for v in sizes):
            raise ValueError(f"sizes: {list(sizes)} for {count} candidates on {runs.runs} runs")
        size = [int(v) for v in sizes]
    rows = bounds(size, count)
    pin_arg: Any = pinned
    plan = None
    if pins is not None:
        if len(pins) != count:
            raise ValueError(f"pins: {len(pins)} agents for {count} candidates")
        plans = {int(j): _one_pass(runs, p0, int(j)) for j in sorted(set(pins))}
        if None in plans.values():
            raise ValueError("candidates pinned to different agents stack only when one pass settles each")
        per_run = np.repeat(np.asarray(pins, dtype=np.int64), np.diff(rows))
        pin_arg, plan = RunPins(per_run), "pinned" if "pinned" in plans.values() else "settled"
        checked = np.where([plans[int(j)] == "pinned" for j in pins], np.asarray(pins, dtype=np.int64), -1)
    rules: Any
    _, _, _, domain, x0 = got[0]
    equal: dict[int, bool] = {id(x0): bool(np.array_equal(x0, x0))} if x0 is not None else {}

    def same_x0(a: Any) -> bool:  # np.array_equal(a, x0), once per array object (candidates of a base share it)
        if id(a) not in equal:
            equal[id(a)] = bool(np.array_equal(a, x0))
        return equal[id(a)]

    if domain is not None and all(same_algorithm(g[0].algorithm, p0.algorithm) and g[3] is domain
                                  and g[4] is not None and same_x0(g[4]) for g in got):
        def problems(side: int) -> Any:
            return lambda: [scenarios_of(c)[side].problem for c in pairs]

        made: dict[Any, Any] = {}

        def rules(side: Any) -> Any:
            """Side 0's or 1's stacked rule, or ``"both"``: the :class:`Paired` rules of both (``None`` when the
            candidates' families under both do not stack as one), each built on first use."""
            if side not in made:
                if side == "both":  # both problems' steps at once, where their families stack as one
                    both = Stacked(p0.algorithm, [g[1] for g in got] + [g[2] for g in got], domain,
                                   lambda: problems(0)() + problems(1)(), x0,
                                   size if isinstance(size, int) else size + size)
                    costs = both.one.problem.costs
                    made[side] = Paired(both, rows[-1]) if (
                        costs._linear is not None or costs._kinked is not None or costs._groups is not None) else None
                else:
                    made[side] = Stacked(p0.algorithm, [g[1 + side] for g in got], domain, problems(side), x0, size)
            return made[side]
    else:
        scen = [scenarios_of(c) for c in pairs]
        apart = (Blocks([AlgorithmChannelRule(p.algorithm, p.problem, p.initial_points()) for p, _ in scen], size),
                 Blocks([AlgorithmChannelRule(p.algorithm, q.problem, q.initial_points()) for p, q in scen], size))

        def rules(side: Any) -> Any:
            return None if side == "both" else apart[side]

    uniform = isinstance(size, int)
    if not uniform:  # each candidate's first runs
        messages = {c: np.concatenate([m[:v] for v in size]) for c, m in runs.messages.items()}
    else:
        messages = {c: np.concatenate([m] * count) for c, m in runs.messages.items()} if count > 1 else runs.messages
    schedules = Tiled(runs.schedules, count, None if uniform else size) if count > 1 or not uniform else \
        runs.schedules
    if not hasattr(schedules, "dense_runs"):  # one schedule per run: read as the replay reads a list
        schedules = list(schedules)
    ahead = None
    if isinstance(runs.schedules, DenseSchedules):
        base = runs.schedules

        def ahead() -> tuple[np.ndarray, ...]:  # every copy's reads ahead: the runs' own, run k r + r in copy k
            t, r, s, j, i = base.ahead_entries()
            if not uniform:  # copy k: the reads of its own first runs, moved to where they start
                mine = [r < v for v in size]
                return (np.concatenate([t[m] for m in mine]), np.concatenate([r[m] + b for m, b in zip(mine, rows)]),
                        np.concatenate([s[m] for m in mine]), np.concatenate([j[m] for m in mine]),
                        np.concatenate([i[m] for m in mine]))
            shift = np.repeat(np.arange(count) * size, r.size)
            return (np.tile(t, count), np.tile(r, count) + shift, np.tile(s, count), np.tile(j, count),
                    np.tile(i, count))

    def replay(built: Any, with_q: bool, resume: Any, record: bool) -> ScheduledReplay:
        record = record and ahead is not None
        paired = rules("both") if with_q and not record and resume is None else None  # (its states: not recorded)
        first, second = (paired.p, paired.q) if paired is not None else (rules(0), rules(1) if with_q else None)
        return scheduled_replay(messages if built is None else built, schedules, noise, first, second,
                                unicast=runs.unicast, pin_agent=pin_arg, record=record, resume=resume)

    if plan is None:
        plan = _one_pass(runs, p0, pinned)
    return _settle(messages, replay, plan, True, ahead,
                   pinned if pins is None else _RunChecks(np.repeat(checked, np.diff(rows))), p0.horizon), rows
