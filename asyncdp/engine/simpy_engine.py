"""The event-driven reference engine: every agent is a SimPy process.

It is the only engine that models time. Each directed link samples a loss
and a latency per message (:mod:`asyncdp.engine.links`); the timing policy
(:mod:`asyncdp.engine.timing`) decides when agents send and when they combine:

* :class:`~asyncdp.engine.timing.Lockstep` — round ``t`` starts for every agent when
  round ``t - 1`` has ended; agents combine once every round-``t`` message has
  been delivered or lost (a barrier). With zero latency and no loss this is
  exactly the synchronous model of the papers.
* :class:`~asyncdp.engine.timing.Deadline` — agents follow their own clocks and
  combine at their deadline whatever round-``t`` messages have arrived.
* :class:`~asyncdp.engine.timing.Async` — agents wake at their own Poisson times and
  combine the freshest value received from each neighbour.

Deliveries: no message is a SimPy event of its own; the result is that of
one delivery event per message, for less work and an event queue that does
not grow with the number of links (see BENCHMARKS.md). Under lockstep timing
every round-``t`` message is combined only after the barrier, so it is filed
for its receiver when sent, and the barrier opens one event later at the
last arrival of the round (send time plus the largest latency, the time the
last delivery event would have had). Under deadline and async timing only an
agent's combine step reads what has arrived, so a message waits in its
receiver's in-flight list and is applied when the receiver wakes up to
combine, if a delivery event would have run first: it arrived earlier, or at
the same time and was sent before the wake-up was scheduled (SimPy runs
equal times in scheduling order).

A message that is missing when an agent combines is handled by the explicit
policy of the timing object: ``None`` (lockstep only: raise
:class:`~asyncdp.errors.MessageLostError`), ``"renormalize"`` (drop the
missing senders and rescale the remaining weights to the row's original
total: 1 for a row-stochastic matrix, the row's own mass for e.g. push-sum
weights) or ``"stale"`` (reuse the last value received from that neighbour;
if none was ever received the row is renormalized). The weights actually
used are recorded as the *realized mixing sequence*, and with the round of
each message used as the run's :class:`~asyncdp.engine.schedule.RealizedSchedule`.

The per-agent rule is the algorithm object (:mod:`asyncdp.algorithms.base`);
this module contains no paper's equations.

Which engine: this engine is the reference, one run at a time (about 15-20
ms of CPU per run of ``examples/async_lossy_links.py``, deadline or async
timing; BENCHMARKS.md). The batch engine (:mod:`asyncdp.engine.batch_engine`)
runs every timing policy for many runs at once, its run 0 being this
engine's run of the seed bit for bit, at a fraction of the cost per run
(for 10^4 runs of that example about 0.3 ms of CPU per run under its
deadline timing, 50-70x less, and about 0.33 ms with ``Async(rate=1.0)``,
about 50x less); the privacy checker and sweeps use it for every timing.

Garbage collection: by default (``freeze_gc=True``) a run (start-up included) starts with
:func:`gc.freeze` and ends with :func:`gc.unfreeze`, even on error, and
raises the collector's young-generation threshold to
``min(YOUNG_OBJECTS_PER_AGENT * N, YOUNG_OBJECTS_MAX)`` objects for ``N``
agents (never lowering it, and leaving a threshold of 0, i.e. collection
disabled, alone; the previous thresholds are restored after the run). The objects that existed before the run (mostly imported modules) are
then left out of the cyclic collector's scans, and the objects a round keeps
alive for a while (per-link random streams, messages waiting for their
combine: a number proportional to ``N``) die young instead of being promoted
and rescanned by full collections, whose number otherwise grows with ``N``
and made the run's cost per agent grow with ``N`` (x3.6 from 10^3 to 10^5
agents; BENCHMARKS.md). The engine itself makes no reference cycles
(reference counting frees everything it creates per message); the collector
keeps collecting cyclic garbage made by user code (e.g. a cost function),
holding at most about one young generation of it. If the process has
already frozen objects (e.g. a server that froze its heap before forking),
the run does not freeze or unfreeze anything. Runs in several threads at
once (e.g. a threaded Dask worker) share the policy: the last one to end
restores the collector. Pass ``freeze_gc=False`` to leave the collector
alone.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
import simpy

from accounting.ledger import Ledger, Release
from topology.sequence import GraphSequence, generated

from ..algorithms.base import claimed_pair, rule_messages, rule_noise, rule_update
from ..errors import AsyncdpError, MessageLostError, ScenarioError
from .links import LinkChannel
from .schedule import RealizedSchedule, check_rows_nonempty
from ..noise import engine_noise
from ..result import Result
from .timing import (Async, Deadline, Lockstep, agent_clock_rng, check_clock_draws, check_clock_times,
                     deadline_times)
from .transcript import Transcript

__all__ = ["run_simpy", "PROGRESS_REPORTS", "YOUNG_OBJECTS_PER_AGENT", "YOUNG_OBJECTS_MAX"]

PROGRESS_REPORTS = 200
"""A run with a progress callback reports about this many times (plus once at the start)."""

YOUNG_OBJECTS_PER_AGENT = 20
"""Young-generation GC threshold per agent during a run (``freeze_gc=True``; module docstring)."""

YOUNG_OBJECTS_MAX = 10**6
"""Cap of that threshold: at most about this many objects of user code's cyclic garbage wait for a collection."""


_collector_lock = threading.RLock()  # re-entrant: a finalizer run by the collector may start a run
_collector_runs = 0  # runs in progress with the collector tuned (threads may run several at once)
_collector_saved: tuple[tuple[int, ...], bool] = ((700, 10, 10), False)  # thresholds before, whether we froze


@contextlib.contextmanager
def _tuned_collector(n_agents: int) -> Iterator[None]:
    """The garbage-collection policy of a run (module docstring), safe when threads run several at once.

    The first run to start saves the collector's thresholds and freezes the
    heap (unless the process froze objects itself); each run raises the young
    threshold to what its ``n_agents`` needs; the last run to end unfreezes
    and restores the saved thresholds.
    """
    global _collector_runs, _collector_saved
    entered = False
    try:
        with _collector_lock:
            current = gc.get_threshold()
            if _collector_runs == 0:
                froze = gc.get_freeze_count() == 0
                if froze:
                    gc.freeze()
                _collector_saved = (current, froze)
            _collector_runs += 1
            entered = True
            if current[0] > 0:  # 0 means the user disabled automatic collection: leave it so
                young = max(current[0], min(YOUNG_OBJECTS_PER_AGENT * n_agents, YOUNG_OBJECTS_MAX))
                gc.set_threshold(young, *current[1:])
        yield
    finally:
        if entered:
            with _collector_lock:
                _collector_runs -= 1
                if _collector_runs == 0:
                    thresholds, froze = _collector_saved
                    if froze:
                        gc.unfreeze()
                    gc.set_threshold(*thresholds)


class _RoundView:
    """Adjacency lists of one weight matrix.

    Attributes:
        receivers: per sender, the agents it sends to.
        rows: per receiver, ``(senders, weights)`` as tuples of Python numbers.
        factors: per receiver, the same weights as 0-d float arrays (the
            mixing's products: numpy multiplies by a 0-d array faster than by
            a Python float, with the same result).
    """

    __slots__ = ("matrix", "receivers", "rows", "factors")

    def __init__(self, w: sp.csr_array) -> None:
        self.matrix = w
        n = w.shape[0]
        ind, ptr, data = w.indices.tolist(), w.indptr.tolist(), w.data.tolist()
        self.rows = [(tuple(ind[ptr[i]:ptr[i + 1]]), tuple(data[ptr[i]:ptr[i + 1]])) for i in range(n)]
        self.factors = [_factors(weights) for _, weights in self.rows]
        receivers: list[list[int]] = [[] for _ in range(n)]
        for i, (cols, _) in enumerate(self.rows):
            for j in cols:
                if j != i:
                    receivers[j].append(i)
        self.receivers = receivers


def _factors(weights: tuple[float, ...]) -> tuple[np.ndarray, ...]:
    """Weights as 0-d float arrays."""
    return tuple(np.array(w, dtype=np.float64) for w in weights)


class _RoundContext:
    """Per-round data shared by the agents, built once by the round's first sender.

    Attributes:
        declared: ``(channel index, channel, NoiseDeclaration)`` per noisy channel.
        view: the round's adjacency lists.
        records: indices into ``_Run.records`` of the round's validated ledger
            records, one per channel whose noise is on; every release of the
            round is a :meth:`~accounting.ledger.Release.copy_for` of one.
        blocks: per agent, its rows of the round's broadcast noise blocks (drawn on first use).
        combiners_left: agents that have not combined this round yet (the
            context is dropped when it reaches 0).
    """

    __slots__ = ("declared", "view", "records", "blocks", "combiners_left")

    def __init__(self, declared: list, view: _RoundView, records: list[int], num_agents: int) -> None:
        self.declared = declared
        self.view = view
        self.records = records
        self.blocks: list[dict[str, np.ndarray]] | None = None
        self.combiners_left = num_agents


class _Run:
    """One execution of a scenario (internal; use :func:`run_simpy`)."""

    def __init__(self, scenario: Any) -> None:
        s = scenario
        self.s = s
        self.problem = s.problem
        self.alg = s.algorithm.bind(s.problem)
        self.topology = s.topology
        self.timing = s.timing
        self.N = s.problem.num_agents
        self.n = s.problem.dim
        self.T = s.horizon
        self.unicast = s.mode == "unicast"
        self.noise = engine_noise(s.noise, s.seed)
        self.env = simpy.Environment()
        self.channels = self.alg.channels
        self.channel_names = tuple(ch.name for ch in self.channels)
        self.state = [self.alg.initial_state(x0_i, i, self.problem) for i, x0_i in enumerate(s.initial_points())]
        self.traj = np.empty((self.T + 1, self.N, self.n))
        self.traj[0] = [self.alg.decision(st) for st in self.state]
        self.times = np.zeros((self.T + 1, self.N))
        self.rows: list[list[tuple[tuple[int, ...], tuple[float, ...]] | None]] = [[None] * self.N for _ in range(self.T)]
        self.sources: list[list[tuple[int, ...] | None]] = [[None] * self.N for _ in range(self.T)]
        self.staleness = np.zeros((self.T, self.N), dtype=np.int64)
        self.arrived: dict[tuple[int, int], dict[int, Mapping[str, np.ndarray]]] = {}
        self.freshest: list[dict[int, tuple[int, Mapping[str, np.ndarray]]]] = [{} for _ in range(self.N)]
        self.closed = [0] * self.N  # last round each agent has combined
        self._combined = 0  # combine steps done (agent-rounds), for progress
        self._progress: Any = None
        self._report_at = -1
        self.records: list[Release] = []  # validated ledger records, one per round and noisy channel
        # one (record index, agent, time, receiver or -1) per release; numbers only, so the GC
        # stops tracking them (see Ledger.from_columns)
        self.releases: list[tuple[int, int, float, int]] = []
        self.transcript = Transcript() if s.record_transcript else None
        # every released message per channel, (T, N, d) or per link (T, N, N, d), NaN where none: the
        # papers' observation map (a broadcast counts even when no link carries it; the transcript
        # holds the transmissions on links)
        self.released: dict[str, np.ndarray] = {}
        self._transmissions: list[tuple] | None = [] if s.record_transcript else None  # rows for the transcript
        self.sent = 0
        self.lost = 0
        self._links: dict[tuple[int, int], LinkChannel] = {}
        self._rounds: dict[int, _RoundContext] = {}
        self._views: dict[int, _RoundView] = {}
        self._message_ids = itertools.count()
        # lockstep barrier bookkeeping
        self._senders_left = [self.N] * (self.T + 1)
        self._last_delay = [0.0] * (self.T + 1)  # largest latency of a delivered round-t message
        self._done = [0] * (self.T + 1)
        self._barrier = isinstance(self.timing, Lockstep)
        self._by_round = not isinstance(self.timing, Async)  # file messages under their round for the combine
        # deadline and async: messages in flight per receiver, (arrival, creation index, sender,
        # round, message), applied when the receiver wakes up to combine (see _receive)
        self._inflight: list[list[tuple]] | None = None if self._barrier else [[] for _ in range(self.N)]

    # -- helpers ------------------------------------------------------------
    def _new_link(self, i: int, j: int) -> LinkChannel:
        ch = self._links[(i, j)] = self.s.links.channel(self.s.seed, i, j)
        return ch

    def _view(self, t: int) -> _RoundView:
        """Per-round adjacency lists, cached by the identity of the round's matrix."""
        w = self.topology.weights(t)
        view = self._views.get(id(w))
        if view is None or view.matrix is not w:
            check_rows_nonempty(w, t)
            view = _RoundView(w)
            if len(self._views) >= 64:
                self._views.pop(next(iter(self._views)))
            self._views[id(w)] = view
        return view

    def _round(self, t: int, agent: int) -> _RoundContext:
        """What every agent needs in round ``t``, built once (by ``agent``, the round's first sender)."""
        ctx = self._rounds.get(t)
        if ctx is None:
            declared = [(c, ch, rule_noise(self.alg, t, ch.name)) for c, ch in enumerate(self.channels) if ch.noisy]
            records = []
            for _, ch, d in declared:
                record = d.to_release(agent, t, self.env.now, ch.name)
                if record is not None:
                    records.append(len(self.records))
                    self.records.append(record)
            ctx = _RoundContext(declared, self._view(t), records, self.N)
            self._rounds[t] = ctx
        return ctx

    def _broadcast_noise(self, i: int, t: int, ctx: _RoundContext) -> dict[str, np.ndarray]:
        """Agent ``i``'s rows of round ``t``'s noise blocks (drawn, and split per agent, on first use)."""
        if ctx.blocks is None:
            names = [ch.name for _, ch, _ in ctx.declared]
            blocks = [self.noise.broadcast(t, c, ch.mechanism, (self.N, d.dimension)) for c, ch, d in ctx.declared]
            ctx.blocks = [dict(zip(names, rows)) for rows in zip(*blocks)] if blocks else [{} for _ in range(self.N)]
        return ctx.blocks[i]

    def _unicast_noise(self, i: int, t: int, declared) -> dict[str, np.ndarray]:
        return {
            ch.name: self.noise.unicast(t, c, ch.mechanism, i, (self.N, d.dimension))
            for c, ch, d in declared
        }

    # -- sending and receiving --------------------------------------------------
    def _send(self, i: int, t: int, now: float) -> Mapping[str, np.ndarray]:
        """R step and transmissions at time ``now``; returns the agent's own message (its self term)."""
        check_clock_times(now, agent=i, round=t)
        ctx = self._rounds.get(t) or self._round(t, i)
        receivers = ctx.view.receivers[i]
        if not self.unicast:
            own = self._as_sent(i, rule_messages(self.alg, self.state[i], t, self._broadcast_noise(i, t, ctx), i,
                                                 self.problem))
            if self._transmissions is not None:
                for name, payload in own.items():
                    payload.setflags(write=False)  # the transcript stores it without a copy
                    self._released_array(name, payload.shape[-1])[t - 1, i] = payload
            for k in ctx.records:
                self.releases.append((k, i, now, -1))
            self._transmit(i, receivers, t, own, next(self._message_ids), now)
            return own
        blocks = self._unicast_noise(i, t, ctx.declared)
        sent = []
        for j in receivers:
            msg = self._as_sent(i, rule_messages(self.alg, self.state[i], t, {k: v[j] for k, v in blocks.items()}, i,
                                                 self.problem))
            if self._transmissions is not None:
                for name, payload in msg.items():
                    payload.setflags(write=False)
                    self._released_array(name, payload.shape[-1])[t - 1, i, j] = payload
            for k in ctx.records:
                self.releases.append((k, i, now, j))
            self._transmit(i, (j,), t, msg, next(self._message_ids), now)
            sent.append(msg)
        if not sent:  # nobody to send to: the self term is the noise-free message
            return rule_messages(self.alg, self.state[i], t, {k: np.zeros_like(v[i]) for k, v in blocks.items()}, i,
                                 self.problem)
        # the self term is the average of the copies just released, so the agent's
        # combination depends on released values only (as in broadcast mode)
        return {name: sum(m[name] for m in sent) / len(sent) for name in sent[0]}

    def _as_sent(self, i: int, msg: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
        """``msg`` as it leaves agent ``i``: a payload that is one of the agent's state arrays, or a view of any
        array, is copied, so that an update writing into the state in place cannot change what the receivers
        combine later or what the transcript holds (the batch engine copies every message into its arrays)."""
        state = self.state[i].values()

        def held(p: Any) -> bool:  # memory the rule may write into after the send
            return isinstance(p, np.ndarray) and (not p.flags.owndata or any(p is v for v in state))

        if not any(held(p) for p in msg.values()):
            return msg
        return {k: p.copy() if held(p) else p for k, p in msg.items()}

    def _released_array(self, name: str, width: int) -> np.ndarray:
        """The array of ``name``'s released messages (allocated, NaN, on the channel's first message)."""
        arr = self.released.get(name)
        if arr is None:
            shape = (self.T, self.N, self.N, width) if self.unicast else (self.T, self.N, width)
            arr = self.released[name] = np.full(shape, np.nan)
        return arr

    def _transmit(self, i: int, receivers: Sequence[int], t: int, msg: Mapping[str, np.ndarray], mid: int,
                  now: float) -> None:
        """Send message ``mid`` from ``i`` over the link to each of ``receivers``."""
        links, rows, inflight = self._links, self._transmissions, self._inflight
        for j in receivers:
            arrival = (links.get((i, j)) or self._new_link(i, j)).transmit(now)
            self.sent += 1
            if rows is not None:
                lost = arrival is None
                received = math.nan if lost else arrival
                for name, payload in msg.items():
                    rows.append((t, i, j, name, now, received, lost, payload, mid))
            if arrival is None:
                self.lost += 1
            elif inflight is not None:
                inflight[j].append((arrival, self.sent, i, t, msg))
            else:  # lockstep: combined after the barrier, which opens at the round's last arrival
                self._store(j, i, t, msg)
                if arrival - now > self._last_delay[t]:
                    self._last_delay[t] = arrival - now

    def _store(self, j: int, i: int, t: int, msg: Mapping[str, np.ndarray]) -> None:
        """Deliver ``i``'s round-``t`` message to ``j``.

        Keeps the freshest value per sender (what async timing and the stale
        policy combine) and, under lockstep and deadline timing, files the
        message under its round unless ``j`` has combined that round already.
        """
        fresh = self.freshest[j]
        prev = fresh.get(i)
        if prev is None or prev[0] <= t:
            fresh[i] = (t, msg)
        if self._by_round and t > self.closed[j]:
            self.arrived.setdefault((j, t), {})[i] = msg

    def _receive(self, j: int, mark: int) -> None:
        """Deliver the messages to ``j`` that SimPy would have delivered before ``j``'s current wake-up.

        A delivery event at time ``a`` precedes the wake-up at time ``now`` if
        ``a < now``, or if ``a == now`` and it was scheduled first: SimPy
        orders equal times by scheduling order. The wake-up was scheduled
        after ``mark`` messages had been sent.
        """
        now = self.env.now
        store = self._store
        inflight = self._inflight[j]
        later = None
        for item in inflight:
            arrival, k, i, t, msg = item
            if arrival < now or (arrival == now and k <= mark):
                store(j, i, t, msg)
            elif later is None:
                later = [item]
            else:
                later.append(item)
        if later is None:
            inflight.clear()
        else:
            self._inflight[j] = later

    # -- combining (F) and updating (U) ----------------------------------------
    def _combine_and_update(self, i: int, t: int, own: Mapping[str, np.ndarray],
                            available: Mapping[int, tuple[int, Mapping[str, np.ndarray]]], policy: str | None,
                            now: float) -> None:
        check_clock_times(now, agent=i, round=t)
        ctx = self._rounds[t]
        ctx.combiners_left -= 1
        if ctx.combiners_left == 0:
            del self._rounds[t]  # every agent has combined round t
        row = ctx.view.rows[i]
        values: list[Mapping[str, np.ndarray] | None] = []
        sources: list[int] = []  # the round of each value's message
        age_max = 0
        missing = False
        for j in row[0]:
            if j == i:
                values.append(own)
                sources.append(t)
                continue
            got = available.get(j)
            if got is None:
                if policy is None:
                    raise MessageLostError(
                        f"round {t}: the message from agent {j} to agent {i} was lost and the timing policy "
                        f"has no missing-message policy (use missing='renormalize' or 'stale')"
                    )
                if policy == "stale":
                    got = self.freshest[i].get(j)
                if got is None:
                    values.append(None)
                    sources.append(0)
                    missing = True
                    continue
            if t - got[0] > age_max:
                age_max = t - got[0]
            values.append(got[1])
            sources.append(got[0])
        if missing:
            sources = [k for k in sources if k]
            row, values = self._renormalized(i, t, row, values)
            weights = _factors(row[1])
        else:
            weights = ctx.view.factors[i]
        mixed = {}
        for name in self.channel_names:  # eq. F, in column order (as the batch engine's sparse product)
            acc = weights[0] * values[0][name]
            for k in range(1, len(weights)):
                acc += weights[k] * values[k][name]
            mixed[name] = acc
        state = self.state[i] = rule_update(self.alg, self.state[i], mixed, t, i, self.problem)
        self.traj[t, i] = self.alg.decision(state)
        self.times[t, i] = now
        self.rows[t - 1][i] = row  # tuples of numbers: not tracked by the GC
        self.sources[t - 1][i] = tuple(sources)
        if age_max:
            self.staleness[t - 1, i] = age_max
        self.closed[i] = t
        self._combined += 1
        if self._combined == self._report_at:
            self._report()

    @staticmethod
    def _renormalized(i: int, t: int, row: tuple[tuple[int, ...], tuple[float, ...]],
                      values: list) -> tuple[tuple[tuple[int, ...], tuple[float, ...]], list]:
        """Row ``i`` of round ``t`` over the messages present (``values[k] is None``: missing).

        The kept weights are rescaled to the row's original total (1 for a
        row-stochastic matrix; e.g. push-sum rows keep their mass).
        """
        keep = [k for k, v in enumerate(values) if v is not None]
        if not keep:
            raise MessageLostError(
                f"round {t}: agent {i} has nothing to combine (its weight matrix row has no self weight and "
                f"every in-neighbour's message is missing)"
            )
        cols, vals = row
        kept = [vals[k] for k in keep]
        row_total, kept_total = sum(vals), sum(kept)
        scaled = tuple(w / kept_total * row_total for w in kept)  # exact w / kept_total when row_total == 1
        return (tuple(cols[k] for k in keep), scaled), [values[k] for k in keep]

    # -- lockstep -------------------------------------------------------------------
    def _maybe_open_barrier(self, t: int) -> None:
        """After round ``t``'s last send: open the barrier at the round's last arrival.

        All agents send at the same time ``now``, so ``now + max(arrival - now)``
        is the time the last delivery event would have had.
        """
        if self._senders_left[t] == 0:
            delay = self._last_delay[t]
            if delay > 0:
                self.env.timeout(delay).callbacks.append(lambda _ev: self._delivered[t].succeed())
            else:
                self._delivered[t].succeed()

    def _lockstep_agent(self, i: int):
        for t in range(1, self.T + 1):
            yield self._start[t]
            own = self._send(i, t, float(self.env.now))
            self._senders_left[t] -= 1
            self._maybe_open_barrier(t)
            yield self._delivered[t]
            available = {j: (t, m) for j, m in self.arrived.pop((i, t), {}).items()}
            self._combine_and_update(i, t, own, available, self.timing.missing, self.env.now)
            self._done[t] += 1
            if self._done[t] == self.N:
                self._end[t].succeed()

    def _lockstep_clock(self):
        for t in range(1, self.T + 1):
            self._start[t].succeed()
            yield self._end[t]

    # -- deadline and async ------------------------------------------------------
    def _deadline_agent(self, i: int):
        timing: Deadline = self.timing
        rng = agent_clock_rng(self.s.seed, i)
        drift = timing.sample_drift(rng)
        check_clock_draws(timing, "sample_drift", drift, agent=i)
        for t in range(1, self.T + 1):
            jitter = timing.sample_jitter(rng)
            check_clock_draws(timing, "sample_jitter", jitter, agent=i, round=t)
            start, combine = deadline_times(timing, t, drift, jitter, agent=i)
            if start > self.env.now:
                yield self.env.timeout(start - self.env.now)
            own = self._send(i, t, float(self.env.now))
            mark = self.sent  # messages sent before the combine wake-up is scheduled
            yield self.env.timeout(max(0.0, combine - self.env.now))
            if self._inflight[i]:
                self._receive(i, mark)
            available = {j: (t, m) for j, m in self.arrived.pop((i, t), {}).items()}
            self._combine_and_update(i, t, own, available, timing.missing, self.env.now)

    def _async_agent(self, i: int):
        timing: Async = self.timing
        rng = agent_clock_rng(self.s.seed, i)
        fresh = self.freshest[i]
        timeout, wait, limit = self.env.timeout, timing.sample_wait, timing.staleness
        inflight = self._inflight
        for t in range(1, self.T + 1):
            mark = self.sent  # messages sent before this wake-up is scheduled
            delay = wait(rng)
            check_clock_draws(timing, "sample_wait", delay, agent=i, round=t)  # a subclass's own waits
            yield timeout(delay)
            if inflight[i]:
                self._receive(i, mark)
            now = float(self.env.now)
            own = self._send(i, t, now)
            available = fresh if limit is None else {j: v for j, v in fresh.items() if t - v[0] <= limit}
            self._combine_and_update(i, t, own, available, "renormalize", now)

    # -- run ----------------------------------------------------------------------
    def _report(self) -> None:
        """Call the progress callback; schedule the next report."""
        total = self.N * self.T
        self._progress(self._combined, total)
        self._report_at = min(self._combined + max(1, total // PROGRESS_REPORTS), total)

    def run(self, progress: Any = None) -> Result:
        if progress is not None:
            self._progress = progress
            self._report_at = 0
            self._report()
        return self._run()

    def _run(self) -> Result:
        if isinstance(self.timing, Lockstep):
            self._start = [self.env.event() for _ in range(self.T + 1)]
            self._delivered = [self.env.event() for _ in range(self.T + 1)]
            self._end = [self.env.event() for _ in range(self.T + 1)]
            self.env.process(self._lockstep_clock())
            agent = self._lockstep_agent
        elif isinstance(self.timing, Deadline):
            agent = self._deadline_agent
        else:
            agent = self._async_agent
        for i in range(self.N):
            self.env.process(agent(i))
        try:
            self.env.run()
        except AsyncdpError as exc:
            # SimPy re-raises a process's exception as type(e)(*e.args), which drops the
            # structured fields (agent, round, point); raise the original instead.
            if type(exc.__cause__) is type(exc):
                raise exc.__cause__ from None
            raise
        return self._result()

    def _realized(self) -> GraphSequence:
        """The realized mixing sequence: row ``i`` of round ``t`` holds the weights agent ``i`` used.

        Each round's matrix is built from the recorded rows (and validated, as
        every graph sequence's rounds are) when it is first asked for.
        """
        rows, n = self.rows, self.N

        def round_matrix(t: int) -> sp.csr_array:
            indptr, indices, data = [0], [], []
            for cols, weights in rows[t - 1]:
                indices.extend(cols)
                data.extend(weights)
                indptr.append(len(indices))
            return sp.csr_array((np.asarray(data, dtype=float), np.asarray(indices, dtype=np.int64),
                                 np.asarray(indptr, dtype=np.int64)), shape=(n, n))

        return generated(n, round_matrix, length=self.T, description="realized mixing")

    def _ledger(self) -> Ledger:
        """The run's releases, in the order they were made."""
        if not self.releases:
            return Ledger()
        record, agent, time, receiver = zip(*self.releases)
        return Ledger.from_columns(self.records, record=record, agent=agent, time=time, receiver=receiver)

    def _result(self) -> Result:
        if self.transcript is not None:
            self.transcript.extend_trusted(self._transmissions)
        eps, delta = claimed_pair(self.alg, self.T)
        return Result(
            trajectory=self.traj, times=self.times, optimum=np.asarray(self.problem.optimum, dtype=float),
            ledger=self._ledger(), transcript=self.transcript, realized=self._realized(),
            schedule=RealizedSchedule.from_rows(self.N, self.rows, self.sources),
            messages=self.released if self.transcript is not None else None,
            staleness=self.staleness, messages_sent=self.sent, messages_lost=self.lost,
            claimed_epsilon=eps, claimed_delta=delta, metadata=self.s.describe(),
        )


def run_simpy(scenario: Any, *, freeze_gc: bool = True,
              progress: Callable[[int, int], object] | None = None) -> Result:
    """Run ``scenario`` on the SimPy engine (see the module docstring).

    Args:
        scenario: a validated :class:`~asyncdp.scenario.Scenario`.
        freeze_gc: keep the objects that exist before the run out of the
            cyclic garbage collector's scans during the run and scale its
            young generation with the number of agents (see the module
            docstring).
        progress: called as ``progress(done, total)`` with the number of
            combine steps (agent-rounds) done and ``N * T``: once before the
            run, then about every ``1 / PROGRESS_REPORTS`` of the run, and at
            its end (e.g. to drive a progress bar).

    Returns:
        A :class:`~asyncdp.result.Result`.

    Raises:
        MessageLostError: a message was lost under a lockstep timing with no
            missing-message policy, or (any timing) an agent has nothing to
            combine: its row has no self weight and every in-neighbour's
            message is missing.
        CostValueError: a cost returned NaN/inf (names agent and round).
        ScenarioError: ``freeze_gc`` is not a bool, or ``progress`` is not
            callable.

    Example:
        >>> from asyncdp import Huang2015
        >>> result = run_simpy(Huang2015.example_scenario(seed=1))
        >>> len(result.ledger), result.trajectory.shape
        (150, (26, 6, 2))
    """
    if not isinstance(freeze_gc, bool):
        raise ScenarioError(f"freeze_gc must be True or False, got {freeze_gc!r}")
    if progress is not None and not callable(progress):
        raise ScenarioError(f"progress must be a callable progress(done, total) or None, got {progress!r}")
    if not freeze_gc:
        return _Run(scenario).run(progress)
    with _tuned_collector(scenario.problem.num_agents):  # start-up included: it allocates O(N) objects too
        return _Run(scenario).run(progress)
