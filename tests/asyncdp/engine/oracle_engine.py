"""A plain SimPy engine with one event per delivery: the oracle of :mod:`asyncdp.engine.simpy_engine`.

The real engine has fast paths: under deadline and async timing a message
waits in its receiver's in-flight list and is applied at the receiver's next
wake-up in SimPy's tie order, which the engine reproduces by hand; the
mixing multiplies by 0-d weight arrays; ``clip_l2`` sums squares in Python
floats; the Huang et al. rule and the rendezvous gradient multiply by 0-d
factors. This module runs the same scenario the slow, obvious way, so that
a test can check that the fast engine computes exactly the same run:

* every agent is a SimPy process;
* every message that is not lost is its own SimPy event: at send time the
  sender schedules ``env.timeout(arrival - send_time)``, and when that event
  runs the message is appended to the receiver's inbox. So at equal times
  SimPy itself decides what happens first (events run in scheduling order);
  nothing here orders ties by hand;
* at a combine an agent reads its inbox: under lockstep and deadline timing
  the round-``t`` messages that have arrived, under async timing the freshest
  message of each sender;
* the mixing is a plain sparse matrix-vector product, ``w_i @ X`` with the
  weights the agent used (its realized row) and the stacked messages;
* with ``plain_arithmetic=True`` (the default) the rules' fast arithmetic is
  replaced while the oracle runs: ``clip_l2`` by ``v * (bound / max(norm,
  bound))`` with ``np.linalg.norm``, the 0-d factors by Python floats.

What it shares with the real engine, because that *is* the scenario: the
algorithm rule (:mod:`asyncdp.algorithms.base`: ``noise``, ``message``,
``update``, ``decision``), the noise source and its layout (round ``t``,
channel index ``c`` of :mod:`asyncdp.noise`), the link draws (one uniform for
the loss, then one latency, per message, from
:func:`asyncdp.engine.links.link_rng`), and the clocks
(:func:`asyncdp.engine.timing.agent_clock_rng` and the timing object's
samplers). It shares no code of the engine itself.

Semantics (the engine's documented choices, written out):

* Lockstep: round ``t`` starts for everyone when round ``t - 1`` has ended;
  agents combine when every round-``t`` message has been delivered or lost.
* Deadline: agent ``i`` sends at ``round_start`` (at once if that time has
  passed) and combines at ``combine_time``, over the round-``t`` messages
  delivered by then; a message delivered exactly at the deadline counts iff
  its delivery event was scheduled (i.e. it was sent) before the combine
  wake-up was scheduled, which is SimPy's rule for equal times.
* Async: agent ``i`` waits ``sample_wait``, then sends round ``t`` and
  combines the freshest message of each in-neighbour (those older than
  ``staleness`` rounds count as missing; missing ones are renormalized).
* Missing messages: ``None`` raises :class:`~asyncdp.errors.MessageLostError`;
  ``"renormalize"`` drops them and rescales the kept weights ``w`` of the row
  to the row's total, ``w / kept_total * row_total`` (sums in column order);
  ``"stale"`` uses the freshest message received from that sender, if any.
* The agent's own term is its own message (broadcast) or, in unicast mode,
  the mean of the copies it released (with no receiver, its noise-free
  message).
* Link ``i -> j``: lost iff ``u < loss``; delivery at ``send + latency``,
  on a FIFO link no earlier than the link's previous delivery.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
import simpy

from accounting.ledger import Ledger
from asyncdp.engine.links import link_rng
from asyncdp.engine.timing import Async, Deadline, Lockstep, agent_clock_rng
from asyncdp.errors import MessageLostError
from asyncdp.noise import SeededNoise

__all__ = ["OracleResult", "run_oracle", "plain_clip_l2", "plain_arithmetic"]


class Delivery(NamedTuple):
    """A message in a receiver's inbox."""

    sender: int
    round: int
    payloads: dict  # channel name -> array


class Row(NamedTuple):
    """One transcript row, as the real engine's :class:`~asyncdp.engine.transcript.Transmission`."""

    round: int
    sender: int
    receiver: int
    channel: str
    send_time: float
    receive_time: float
    lost: bool
    payload: np.ndarray
    message_id: int


@dataclass
class OracleResult:
    """What the oracle computed.

    Attributes:
        trajectory: ``(T + 1, N, n)`` decisions, row ``t`` after round ``t``.
        times: ``(T + 1, N)`` time of each agent's round-``t`` combine.
        realized: ``(T, N, N)``: row ``i`` of entry ``t - 1`` holds the weights
            agent ``i`` used in round ``t``.
        staleness: ``(T, N)`` largest age (in rounds) of a message combined.
        messages_sent, messages_lost: counts.
        transcript: one :class:`Row` per transmission and channel, in send order.
        ledger: the releases, in the order they were made.
    """

    trajectory: np.ndarray
    times: np.ndarray
    realized: np.ndarray
    staleness: np.ndarray
    messages_sent: int
    messages_lost: int
    transcript: list
    ledger: Ledger


# --------------------------------------------------------------------------- plain arithmetic


def plain_clip_l2(v: np.ndarray, bound: float) -> np.ndarray:
    """Rows of ``v`` scaled to L2 norm at most ``bound``: ``v * (bound / max(||v||, bound))``.

    Example:
        >>> plain_clip_l2(np.array([3.0, 4.0]), 1.0).tolist()
        [0.6000000000000001, 0.8]
    """
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v * (bound / np.maximum(norm, bound))


def _huang_round_factors(self: Any, t: int) -> tuple[float, float]:
    return self.noise_scale(t), self.step(t)


@contextlib.contextmanager
def plain_arithmetic() -> Iterator[None]:
    """While active, the rules' fast arithmetic is the plain one.

    * every ``asyncdp`` module that imported ``clip_l2`` sees :func:`plain_clip_l2`;
    * ``Huang2015._round_factors`` returns Python floats instead of 0-d arrays;
    * the rendezvous gradient multiplies by the float ``2.0`` instead of a 0-d array.

    Raises:
        AttributeError: if one of these fast paths no longer exists (the oracle
            must then be updated, not silently skip the replacement).
    """
    from asyncdp.algorithms import clipping

    fast_clip = clipping.clip_l2
    patches: list[tuple[Any, str, Any]] = []
    for name, module in list(sys.modules.items()):
        if name.startswith("asyncdp.") and module is not None and getattr(module, "clip_l2", None) is fast_clip:
            patches.append((module, "clip_l2", plain_clip_l2))
    from asyncdp import Huang2015 as huang
    from asyncdp.problems.costs import RendezvousQuadratic

    quadratics = sys.modules[RendezvousQuadratic.__module__]  # wherever the module lives
    for owner, attr in ((huang, "_round_factors"), (quadratics, "_TWO")):
        if not hasattr(owner, attr):
            raise AttributeError(f"oracle: fast path {owner.__name__}.{attr} is gone; update plain_arithmetic()")
    patches += [(huang, "_round_factors", _huang_round_factors), (quadratics, "_TWO", 2.0)]
    saved = [(owner, attr, owner.__dict__[attr]) for owner, attr, _ in patches]
    try:
        for owner, attr, value in patches:
            setattr(owner, attr, value)
        yield
    finally:
        for owner, attr, value in saved:
            setattr(owner, attr, value)


# --------------------------------------------------------------------------- the engine


class _Oracle:
    def __init__(self, scenario: Any) -> None:
        s = self.s = scenario
        self.problem = s.problem
        self.alg = s.algorithm.bind(s.problem)
        self.timing = s.timing
        self.N, self.n, self.T = s.problem.num_agents, s.problem.dim, s.horizon
        self.noise = s.noise if s.noise is not None else SeededNoise(s.seed)
        self.env = simpy.Environment()
        x0 = s.initial_points()
        self.state = [self.alg.initial_state(x0[i], i, self.problem) for i in range(self.N)]
        self.trajectory = np.zeros((self.T + 1, self.N, self.n))
        self.trajectory[0] = [self.alg.decision(st) for st in self.state]
        self.times = np.zeros((self.T + 1, self.N))
        self.realized = np.zeros((self.T, self.N, self.N))
        self.staleness = np.zeros((self.T, self.N), dtype=np.int64)
        self.inbox: list[list[Delivery]] = [[] for _ in range(self.N)]
        self.transcript: list[Row] = []
        self.releases: list = []
        self.sent = self.lost = 0
        self.message_ids = itertools.count()
        self.link_state: dict[tuple[int, int], list] = {}  # (i, j) -> [rng, last delivery time]
        self.deliveries: dict[int, list[simpy.Event]] = {t: [] for t in range(1, self.T + 1)}

    # -- sending ------------------------------------------------------------------
    def weights(self, t: int) -> np.ndarray:
        return self.s.topology.weights(t).toarray()

    def send(self, i: int, t: int) -> dict:
        """Agent ``i``'s round-``t`` messages, released and transmitted now; returns its own term."""
        now = float(self.env.now)
        W = self.weights(t)
        receivers = [j for j in range(self.N) if j != i and W[j, i] != 0]
        declared = [(c, ch, self.alg.noise(t, ch.name)) for c, ch in enumerate(self.alg.channels) if ch.noisy]
        if self.s.mode == "broadcast":
            noise = {ch.name: self.noise.broadcast(t, c, ch.mechanism, (self.N, d.dimension))[i]
                     for c, ch, d in declared}
            msg = self.alg.message(self.state[i], t, noise, i, self.problem)
            self.release(declared, i, t, now, None)
            mid = next(self.message_ids)
            for j in receivers:
                self.transmit(i, j, t, msg, mid, now)
            return msg
        blocks = {ch.name: self.noise.unicast(t, c, ch.mechanism, i, (self.N, d.dimension)) for c, ch, d in declared}
        copies = []
        for j in receivers:
            msg = self.alg.message(self.state[i], t, {name: b[j] for name, b in blocks.items()}, i, self.problem)
            self.release(declared, i, t, now, j)
            self.transmit(i, j, t, msg, next(self.message_ids), now)
            copies.append(msg)
        if not copies:
            return self.alg.message(self.state[i], t, {name: np.zeros(b.shape[1]) for name, b in blocks.items()}, i,
                                    self.problem)
        return {name: np.mean([m[name] for m in copies], axis=0) for name in copies[0]}

    def release(self, declared: list, i: int, t: int, now: float, receiver: int | None) -> None:
        for _, ch, d in declared:
            record = d.to_release(i, t, now, ch.name, receiver)
            if record is not None:
                self.releases.append(record)

    def transmit(self, i: int, j: int, t: int, msg: dict, mid: int, now: float) -> None:
        """One message over link ``i -> j``: draws, transcript rows, and its delivery event."""
        if (i, j) not in self.link_state:
            self.link_state[(i, j)] = [link_rng(self.s.seed, i, j), -math.inf]
        rng, last = self.link_state[(i, j)]
        model = self.s.links.model(i, j)
        lost = bool(rng.random() < model.loss)
        latency = float(model.latency.sample(rng))
        self.sent += 1
        arrival = now + latency
        if not lost and not model.reorder:
            arrival = max(arrival, last)  # FIFO: no overtaking
        if not lost:
            self.link_state[(i, j)][1] = max(last, arrival)
        for name, payload in msg.items():
            self.transcript.append(Row(t, i, j, name, now, math.nan if lost else arrival, lost, payload, mid))
        if lost:
            self.lost += 1
            return
        event = self.env.timeout(arrival - now, value=Delivery(i, t, msg))
        event.callbacks.append(lambda ev, j=j: self.inbox[j].append(ev.value))
        self.deliveries[t].append(event)

    # -- receiving and combining ----------------------------------------------------
    def freshest(self, i: int, j: int) -> Delivery | None:
        """The highest-round message agent ``i`` has received from ``j``, or None."""
        got = [d for d in self.inbox[i] if d.sender == j]
        return max(got, key=lambda d: d.round) if got else None

    def combine(self, i: int, t: int, own: dict, available: dict, policy: str | None) -> None:
        """F and U of agent ``i``'s round ``t``; ``available[j]`` is the :class:`Delivery` to use from ``j``."""
        row = self.weights(t)[i]
        cols = [j for j in range(self.N) if row[j] != 0]
        values, kept, ages = {}, [], [0]
        for j in cols:
            if j == i:
                values[j] = own
                kept.append(j)
                continue
            got = available.get(j)
            if got is None and policy is None:
                raise MessageLostError(
                    f"round {t}: the message from agent {j} to agent {i} was lost and the timing policy "
                    f"has no missing-message policy (use missing='renormalize' or 'stale')"
                )
            if got is None and policy == "stale":
                got = self.freshest(i, j)
            if got is not None:
                values[j] = got.payloads
                kept.append(j)
                ages.append(t - got.round)
        used = np.zeros(self.N)
        if len(kept) == len(cols):
            used[cols] = row[cols]
        else:
            if not kept:
                raise MessageLostError(
                    f"round {t}: agent {i} has nothing to combine (its weight matrix row has no self weight and "
                    f"every in-neighbour's message is missing)"
                )
            row_total = sum(row[j] for j in cols)
            kept_total = sum(row[j] for j in kept)
            for j in kept:
                used[j] = row[j] / kept_total * row_total
        w = sp.csr_array(used[None, :])
        mixed = {}
        for ch in self.alg.channels:
            X = np.zeros((self.N, np.shape(own[ch.name])[-1]))
            for j in kept:
                X[j] = values[j][ch.name]
            mixed[ch.name] = (w @ X)[0]
        self.state[i] = self.alg.update(self.state[i], mixed, t, i, self.problem)
        self.trajectory[t, i] = self.alg.decision(self.state[i])
        self.times[t, i] = self.env.now
        self.realized[t - 1, i] = used
        self.staleness[t - 1, i] = max(ages)

    def by_round(self, i: int, t: int) -> dict:
        return {d.sender: d for d in self.inbox[i] if d.round == t}

    # -- agents -------------------------------------------------------------------------
    def lockstep_agent(self, i: int):
        for t in range(1, self.T + 1):
            yield self.started[t]
            own = self.send(i, t)
            self.has_sent[t][i].succeed()
            yield self.all_delivered[t]
            self.combine(i, t, own, self.by_round(i, t), self.timing.missing)
            self.has_combined[t][i].succeed()

    def lockstep_clock(self):
        for t in range(1, self.T + 1):
            self.started[t].succeed()
            yield self.env.all_of(self.has_sent[t])
            yield self.env.all_of(self.deliveries[t])
            self.all_delivered[t].succeed()
            yield self.env.all_of(self.has_combined[t])

    def deadline_agent(self, i: int):
        timing = self.timing
        rng = agent_clock_rng(self.s.seed, i)
        drift = timing.sample_drift(rng)
        for t in range(1, self.T + 1):
            jitter = timing.sample_jitter(rng)
            start = timing.round_start(t, drift, jitter)
            if start > self.env.now:
                yield self.env.timeout(start - self.env.now)
            own = self.send(i, t)
            yield self.env.timeout(max(0.0, timing.combine_time(t, drift, jitter) - self.env.now))
            self.combine(i, t, own, self.by_round(i, t), timing.missing)

    def async_agent(self, i: int):
        timing = self.timing
        rng = agent_clock_rng(self.s.seed, i)
        for t in range(1, self.T + 1):
            yield self.env.timeout(timing.sample_wait(rng))
            own = self.send(i, t)
            available = {}
            for j in range(self.N):
                got = self.freshest(i, j)
                if got is not None and (timing.staleness is None or t - got.round <= timing.staleness):
                    available[j] = got
            self.combine(i, t, own, available, "renormalize")

    def run(self) -> OracleResult:
        if isinstance(self.timing, Lockstep):
            T, N = self.T, self.N
            self.started = {t: self.env.event() for t in range(1, T + 1)}
            self.all_delivered = {t: self.env.event() for t in range(1, T + 1)}
            self.has_sent = {t: [self.env.event() for _ in range(N)] for t in range(1, T + 1)}
            self.has_combined = {t: [self.env.event() for _ in range(N)] for t in range(1, T + 1)}
            self.env.process(self.lockstep_clock())
            agent = self.lockstep_agent
        elif isinstance(self.timing, Deadline):
            agent = self.deadline_agent
        elif isinstance(self.timing, Async):
            agent = self.async_agent
        else:
            raise TypeError(f"oracle: unknown timing {self.timing!r}")
        for i in range(self.N):
            self.env.process(agent(i))
        try:
            self.env.run()
        except MessageLostError as exc:
            # SimPy re-raises a process's exception as a copy whose __cause__ is the original
            raise (exc.__cause__ if type(exc.__cause__) is type(exc) else exc) from None
        return OracleResult(self.trajectory, self.times, self.realized, self.staleness, self.sent, self.lost,
                            self.transcript, Ledger(self.releases))


def run_oracle(scenario: Any, *, plain: bool = True) -> OracleResult:
    """Run ``scenario`` on the oracle engine (see the module docstring).

    Args:
        scenario: a :class:`~asyncdp.scenario.Scenario`.
        plain: run under :func:`plain_arithmetic` (else the rules' own arithmetic).

    Returns:
        An :class:`OracleResult`.

    Raises:
        MessageLostError: as the real engine (a loss under lockstep without a
            policy, or nothing to combine).

    Example:
        >>> from asyncdp import Huang2015
        >>> out = run_oracle(Huang2015.example_scenario(seed=1).replace(horizon=3))
        >>> out.trajectory.shape, len(out.ledger)
        ((4, 6, 2), 18)
    """
    with plain_arithmetic() if plain else contextlib.nullcontext():
        return _Oracle(scenario).run()
