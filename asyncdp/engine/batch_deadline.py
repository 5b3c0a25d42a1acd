"""The batch engine's timed runs: ``R`` runs with clocks and lossy links as arrays.

Timed runs: :class:`~asyncdp.engine.timing.Deadline` and
:class:`~asyncdp.engine.timing.Async` timing (end of this docstring), and
:class:`~asyncdp.engine.timing.Lockstep` rounds over lossy or delaying links
or in unicast mode (every round starts when the previous one ended: see
``batch_schedule._lockstep_schedule``; ``missing=None`` raises the SimPy engine's
:class:`~asyncdp.errors.MessageLostError` for the first lost message).

Under deadline timing which messages an agent combines is decided by the
clocks (drift, jitter) and the links (loss, latency) alone, never by the
states: the engine therefore draws every run's clocks and links first,
computes the realized schedule of every run (who combines which sender's
message of which round, with which weight) as arrays, and then runs the
rounds as in lockstep: round ``t`` computes every agent's round-``t``
message, mixes each channel with that round's realized weights (one sparse
product over all runs) and calls the rule's update.

The timing is the SimPy engine's to the bit (:mod:`asyncdp.engine.simpy_engine`):

* an agent's clock: round ``t`` starts at ``Deadline.round_start`` unless the
  agent is already later, and the agent combines at ``combine_time`` (times
  advance as SimPy's ``now + delay``, computed elementwise in the same order);
* a message on link ``i -> j`` arrives at ``send + latency`` (FIFO links:
  never before the link's previous delivery); it is combined by ``j`` at its
  round-``u`` deadline if it arrived earlier, or at the same time and was
  sent before ``j`` scheduled that combine (SimPy's order of equal times: the
  engine ranks every SimPy event of the run when such an exact tie occurs);
* ``missing="renormalize"`` drops the missing senders and rescales the row to
  its original total (sums added in row order, as the SimPy engine does);
  ``missing="stale"`` uses the freshest message that arrived on the link by
  the combine, else renormalizes;
* unicast: each link carries its own noised copy, and the sender's own term
  is the average of the copies it released (in receiver order).

Equality with the SimPy engine: times, schedules, ledgers, message counts
and transcript rows are equal to the bit; states and messages too, as long
as the rule computes the same bits for an array of agents as for one agent
(Huang et al., Showkatbakhsh et al., Wang-Basar; DPSDA's update, a prox of
``z / w`` with norms over 14 coordinates, has differed by 4e-16 after a
renormalized push-sum row). ``tests/asyncdp/engine/test_batch_deadline.py``
checks both.

Noise: the batch engine's; round ``t``'s block for channel ``c`` is ``(R, N, n)`` (broadcast;
run ``r`` uses row ``r``), and for unicast sender ``i``'s block is
``noise.unicast(t, c, mechanism, i, (R, N, n))`` (run ``r``, receiver ``j``:
``[r, j]``). The clocks and links are drawn per run in the SimPy or the
vectorized stream layout (``layout=``; :mod:`asyncdp.engine.batch_draws`).

Cost: the draws of each layout cost what :mod:`asyncdp.engine.batch_draws`
says. Unicast noise is drawn as the seed layout defines it, a block
``(R, N, n)`` per sender and round (``O(N^2)`` draws per round). Memory is
``O(R (N + M) n)`` for ``M`` messages per run, never ``O(N^2)`` (except the
unicast transcript ``(R, T, N, N, d)``, when asked for).

``missing="stale"`` with a sender whose clock runs ahead: a receiver may
reuse a message of a round *later* than its own, computed from a state the
round-by-round recursion has not reached yet. The schedule is known before
any state, so this is detected before the run, and such batches run their
combines in dependency order instead (:mod:`asyncdp.engine.batch_levels`),
with the same numbers.

Async timing (:class:`~asyncdp.engine.timing.Async` and its subclasses)
runs on the same path: agent ``i``'s wake-up ``t`` is the sum of its first
``t`` waits (``numpy.cumsum``, the same additions as SimPy's ``now + wait``),
at which it sends its round-``t`` message and combines round ``t``; a message
is delivered at the receiver's first wake-up after its arrival (at an equal
time: if it was sent before that wake-up was scheduled, by the same event
ranks as deadline ties), and a combine uses per in-neighbour the latest round
delivered so far, unless older than ``staleness`` rounds (renormalized).
Since senders are often rounds ahead of their receivers, async batches run
their combines in dependency order (:mod:`asyncdp.engine.batch_levels`).

Where each part lives: the rounds, messages and links as index arrays in
``asyncdp.engine.batch_plan``; the clock and link draws per stream layout in
:mod:`asyncdp.engine.batch_draws`; the send and combine times and SimPy's
event order in ``asyncdp.engine.batch_clocks``; the realized schedule of
every run (arrivals, combined entries, renormalized weights) in
``asyncdp.engine.batch_schedule``; what the batch keeps per run and each run
rebuilt from it (schedule, ledger, transcript) in
:mod:`asyncdp.engine.batch_detail`. This module runs the rounds,
:func:`run_deadline_batch`.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import scipy.sparse as sp

from accounting.ledger import Release

from ..algorithms.base import claimed_pair, rule_messages, rule_noise, rule_update
from .batch_clocks import _clock
from .batch_detail import DeadlineRuns, _Detail, _ledger
from .batch_draws import _check_clock, _check_delays, _draws_run, _draws_run0, _resolve_layout
from .batch_plan import _Plan
from .batch_schedule import (_async_schedule, _check_nothing_to_combine, _lockstep_schedule, _raise_first_loss,
                             _realized_weights, _schedule)
from .timing import Async, Deadline, check_clock_times

__all__ = ["run_deadline_batch"]


def run_deadline_batch(scenario: Any, runs: int, keep: str, transcripts: bool, result_type: Any,
                       layout: str = "simpy") -> Any:
    """``runs`` timed runs of ``scenario`` (module docstring); the batch engine's timed path.

    Called by :func:`asyncdp.engine.batch_engine.run_batch`, which checks the arguments.

    Args:
        scenario: a scenario with deadline timing, or lockstep timing over lossy or delaying links or in unicast mode.
        runs: ``R`` (>= 1).
        keep: ``"all"`` or ``"final"`` (as :func:`~asyncdp.engine.batch_engine.run_batch`).
        transcripts: keep the messages per channel.
        result_type: the result class (:class:`~asyncdp.engine.batch_engine.BatchResult`).
        layout: the random-stream layout of run 0: ``"simpy"`` (the SimPy engine's per-agent and per-link
            streams), ``"vectorized"`` (stream ``(6, 0)``, drawn as runs ``r >= 1`` draw theirs) or ``"auto"``
            (``"vectorized"`` above :data:`~asyncdp.engine.batch_draws.VECTORIZED_ABOVE_LINKS` links, with a
            warning; :mod:`asyncdp.engine.batch_draws`).

    Returns:
        A ``result_type`` with the per-run times, staleness, loss counts and
        the data :meth:`~asyncdp.engine.batch_engine.BatchResult.run` and
        :meth:`~asyncdp.engine.batch_engine.BatchResult.schedule` rebuild a run from.

    Raises:
        MessageLostError: lockstep with ``missing=None`` lost a message, or an
            agent has nothing to combine (the SimPy engine's errors).

    Example:
        >>> from asyncdp import Deadline, Huang2015, LinkModel, Links
        >>> from asyncdp.engine.batch_engine import BatchResult
        >>> sc = Huang2015.example_scenario(seed=1).replace(timing=Deadline(), links=Links(LinkModel(loss=0.3)))
        >>> batch = run_deadline_batch(sc, 2, "all", False, BatchResult)
        >>> bool((batch.trajectory[0] == sc.run().trajectory).all()), batch.messages_lost.shape
        (True, (2,))
    """
    timing = scenario.timing
    lockstep = not isinstance(timing, (Deadline, Async))
    asynchronous = isinstance(timing, Async)
    plan = _Plan(scenario)
    n_agents, horizon = plan.N, plan.T
    unicast = scenario.mode == "unicast"
    drift, jitter = np.zeros((runs, n_agents)), np.zeros((runs, horizon, n_agents))
    lost = np.empty((runs, plan.M), dtype=bool)
    layout = _resolve_layout(layout, plan)
    # one vectorized run over default links: the latencies are the model's own array (_draws_run; memory)
    own_delay = runs == 1 and layout == "vectorized" and not plan.override_links
    delay = None if own_delay else np.empty((runs, plan.M))
    if layout == "simpy":
        drift[0], jitter[0], lost[0], delay[0] = _draws_run0(scenario, plan)
    loss = plan.msg_loss()
    for r in range(0 if layout == "vectorized" else 1, runs):
        delay = _draws_run(scenario, plan, r, (drift, jitter, lost, delay), loss)
    _check_clock(timing, drift, jitter)
    _check_delays(plan, scenario.links, delay)
    if lockstep:
        send, comb, arrival, present, freshest = _lockstep_schedule(timing, plan, lost, delay)
        check_clock_times(comb)
        later = np.zeros(send.shape, dtype=bool)
        if timing.missing is None and lost.any():
            _raise_first_loss(plan, lost)
    elif asynchronous:  # agent i's wake-up t: the sum of its first t waits, added in order (SimPy's now + wait)
        send = np.cumsum(jitter, axis=1, out=jitter)  # in place: the waits are not needed again
        check_clock_times(send)
        comb, later = send, np.zeros(send.shape, dtype=bool)
        arrival, freshest, _ = _async_schedule(plan, send, lost, delay)
        present = None
    else:
        send, comb, later = _clock(timing, drift, jitter)
        check_clock_times(comb)  # a round's combine comes after its send
        arrival, present, freshest, _ = _schedule(timing, plan, send, comb, later, lost, delay)
    stale = freshest is not None
    link_round = plan.link_round_msg() if stale else None

    # per round: the entries combined and the rounds of their messages (known before any state)
    used_rounds, source_rounds, max_age, ahead = [], [], 0, False
    stype = np.int16 if horizon < 2**15 - 2 else np.int64  # message rounds (memory of large runs)
    for t in range(1, horizon + 1):
        indptr, rows, cols, data, entry_msg = plan.rounds[t - 1]
        edge = entry_msg >= 0
        used = np.ones((runs, cols.size), dtype=bool)
        source = np.full((runs, cols.size), t, dtype=stype)
        if asynchronous:  # the freshest message of each in-neighbour, if any and not too old
            fresh = np.take(freshest[t], plan.m_link[entry_msg[edge]], axis=1).astype(np.int64)
            ok = fresh > 0
            if timing.staleness is not None:
                ok &= t - fresh <= timing.staleness
            used[:, edge] = ok
            source[:, edge] = np.where(ok, fresh, 0)
            ahead = ahead or bool((fresh[ok] > t).any())
            max_age = max(max_age, int((t - source[used]).max(initial=0)))
        else:
            used[:, edge] = present[:, entry_msg[edge]]
        if stale and not asynchronous:
            links = plan.m_link[entry_msg[edge]]
            fresh = np.take(freshest[t], links, axis=1)  # (R, edges)
            miss = ~used[:, edge]
            src = np.where(miss, fresh, t)
            ahead = ahead or bool((miss & (fresh > t)).any())
            used[:, edge] |= miss & (fresh > 0)
            source[:, edge] = np.where(used[:, edge], src, 0)
            max_age = max(max_age, int((t - source[used]).max(initial=0)))
        source = np.where(used, source, 0)
        used_rounds.append(used)
        source_rounds.append(source)

    lost_counts = lost.sum(axis=1)
    del delay, present, freshest  # the schedule is in used_rounds and source_rounds now
    # keep="final": the messages' draws and arrivals are not kept, and are freed before the rounds (large runs)
    kept = (lost, arrival) if keep == "all" else (None, None)
    del lost, arrival
    detail = DeadlineRuns(plan=plan, send=send, comb=comb, later=later, lost=kept[0], arrival=kept[1],
                          used=used_rounds, source=source_rounds)
    del kept

    from .batch_engine import start_runs

    problem = scenario.problem
    alg, noise, agents, state, curves = start_runs(scenario, runs, keep)
    traj, opt_err, dev, optimum, record = curves.traj, curves.opt_err, curves.dev, curves.optimum, curves.record
    recorded: dict[str, np.ndarray] | None = {} if transcripts else None
    staleness = np.zeros((runs, horizon, n_agents), dtype=np.int64)
    noisy = [(c, ch) for c, ch in enumerate(alg.channels) if ch.noisy]
    records: list[Release] = []
    round_records: list[list[int]] = []
    for t in range(1, horizon + 1):  # one validated ledger record per round and noisy channel
        ids = []
        for _, ch in noisy:
            released = rule_noise(alg, t, ch.name).to_release(0, t, 0.0, ch.name)
            if released is not None:
                ids.append(len(records))
                records.append(released)
        round_records.append(ids)
    if ahead:  # stale messages of rounds ahead: the combines in dependency order (asyncdp.engine.batch_levels)
        from .batch_levels import run_levels

        weights_all = []
        for t in range(1, horizon + 1):
            weights, counts = _realized_weights(plan.rounds[t - 1], used_rounds[t - 1])
            _check_nothing_to_combine(counts, np.diff(plan.rounds[t - 1][0]), t, comb)
            weights_all.append(weights)
        traj_all, state, every, staleness = run_levels(
            alg, problem, noise, plan, {k: np.array(v) for k, v in state.items()}, used_rounds, source_rounds,
            weights_all, unicast, link_round, np.asarray(alg.decision(state)), with_staleness=keep == "all",
            with_messages=recorded is not None)
        curves.record_rounds(1, traj_all[1:], round_major=True)
        if recorded is not None:
            recorded.update(every)
    history: deque = deque(maxlen=max_age + 1)  # per round: (value blocks per channel, rows per run)
    for t in range(1, horizon + 1) if not ahead else ():
        indptr, rows, cols, data, entry_msg = plan.rounds[t - 1]
        decls = {ch.name: alg.noise(t, ch.name) for _, ch in noisy}
        lo, hi = plan.round_start[t - 1], plan.round_start[t]
        if not unicast:
            std = {ch.name: noise.broadcast(t, c, ch.mechanism, (runs, n_agents, decls[ch.name].dimension))
                   for c, ch in noisy}
            messages = rule_messages(alg, state, t, std, agents, problem)
            if recorded is not None:
                for name, arr in messages.items():
                    recorded.setdefault(name, np.empty((runs, horizon) + arr.shape[1:]))[:, t - 1] = arr
            blocks = {name: np.asarray(arr).reshape(runs * n_agents, -1) for name, arr in messages.items()}
            history.append((t, blocks, n_agents, None))
        else:
            e_send, e_recv = plan.m_send[lo:hi].astype(np.int64), plan.m_recv[lo:hi].astype(np.int64)
            std = {}
            for c, ch in noisy:
                dim = decls[ch.name].dimension
                buf = np.empty((runs, e_send.size, dim))
                for i in np.unique(e_send):
                    sel = np.flatnonzero(e_send == i)
                    block = noise.unicast(t, c, ch.mechanism, int(i), (runs, n_agents, dim))
                    buf[:, sel] = np.asarray(block)[:, e_recv[sel]]
                std[ch.name] = buf
            sub = {k: v[:, e_send] for k, v in state.items()}
            copies = rule_messages(alg, sub, t, std, e_send, problem) if e_send.size else {}
            own = _own_terms(alg, state, t, noisy, decls, copies, e_send, runs, n_agents, problem)
            if recorded is not None:
                for name, arr in copies.items():
                    out = recorded.get(name)
                    if out is None:
                        out = recorded[name] = np.full((runs, horizon, n_agents, n_agents) + arr.shape[2:], np.nan)
                    out[:, t - 1, e_send, e_recv] = arr
            blocks = {name: np.concatenate([own[name].reshape(runs * n_agents, -1),
                                            np.asarray(copies[name]).reshape(runs * e_send.size, -1)])
                      if e_send.size else own[name].reshape(runs * n_agents, -1) for name in own}
            history.append((t, blocks, e_send.size, lo))
        # the realized mixing of round t over all runs: one sparse matrix over the value blocks
        used, source = used_rounds[t - 1], source_rounds[t - 1]
        weights, counts = _realized_weights(plan.rounds[t - 1], used)
        _check_nothing_to_combine(counts, np.diff(indptr), t, comb)
        base = np.zeros(horizon + 2, dtype=np.int64)  # per round in the window: first row of its value block
        width = np.zeros(horizon + 2, dtype=np.int64)  # unicast: the round's number of copies
        first = np.zeros(horizon + 2, dtype=np.int64)  # unicast: the round's first message number
        offset = 0
        for s, blk, wid, lo_s in history:
            base[s], width[s], first[s] = offset, wid, lo_s or 0
            offset += next(iter(blk.values())).shape[0]
        rr = np.arange(runs)[:, None]
        src = np.where(used, source, t)
        if not unicast:
            vcol = base[src] + rr * n_agents + cols[None, :]
        else:
            vcol = np.empty(used.shape, dtype=np.int64)
            diag = entry_msg < 0
            vcol[:, diag] = base[t] + rr * n_agents + rows[diag][None, :]
            edge = ~diag
            src_e = src[:, edge]
            if stale:
                msg = link_round[plan.m_link[entry_msg[edge]][None, :], src_e]
            else:
                msg = np.broadcast_to(entry_msg[edge][None, :], src_e.shape)
            vcol[:, edge] = base[src_e] + runs * n_agents + rr * width[src_e] + (msg - first[src_e])
        if stale:
            age = np.where(used, t - source, 0)
            staleness[:, t - 1] = np.maximum(_row_max(indptr, age), 0)
        counts_flat = counts.astype(np.int64).ravel()
        matrix = sp.csr_array((weights[used], vcol[used], np.concatenate(([0], np.cumsum(counts_flat)))),
                              shape=(runs * n_agents, offset))
        mixed = {}
        for name in blocks:
            values = np.concatenate([blk[name] for _, blk, _, _ in history]) if len(history) > 1 else blocks[name]
            shape = (messages if not unicast else own)[name].shape
            mixed[name] = (matrix @ values).reshape(shape)
        state = rule_update(alg, state, mixed, t, agents, problem)
        record(t, alg.decision(state))
    eps, delta = claimed_pair(alg, horizon)
    detail_records = (records, round_records)
    ledger = _ledger(detail, 0, detail_records, unicast,
                     _Detail(detail, detail_records, unicast, lockstep, asynchronous=asynchronous).ranks(0))
    times = None
    if keep == "all":
        times = np.zeros((runs, horizon + 1, n_agents))
        times[:, 1:] = comb
    else:  # nothing to rebuild runs from (run(r) and schedule(r) need keep="all")
        detail = DeadlineRuns(plan=None, send=send[:1], comb=comb[:1], later=later[:1], lost=None, arrival=None,
                              used=None, source=None)
    return result_type(
        trajectory=traj, final=np.array(alg.decision(state)), optimality_error=opt_err, deviation=dev,
        optimum=optimum, ledger=ledger, messages=recorded, claimed_epsilon=eps, claimed_delta=delta,
        topology=scenario.topology,
        metadata={**scenario.describe(), "runs": int(runs), "engine": "batch", "stream_layout": layout},
        times=times, staleness=staleness if keep == "all" else None,
        messages_lost=lost_counts, messages_sent=plan.M,
        detail=_Detail(detail, detail_records, unicast, lockstep, lockstep and not plan.lossy(),
                       asynchronous),
    )


def _row_max(indptr: np.ndarray, values: np.ndarray) -> np.ndarray:
    lengths = np.diff(indptr)
    out = np.zeros(values.shape[:-1] + (lengths.size,), dtype=values.dtype)
    nonempty = lengths > 0
    if values.shape[-1]:
        red = np.maximum.reduceat(values, indptr[:-1][nonempty], axis=-1)
        out[..., nonempty] = red
    return out


def _own_terms(alg, state, t, noisy, decls, copies, e_send, runs, n_agents, problem) -> dict[str, np.ndarray]:
    """Unicast self terms: the average of the copies each sender released, in receiver order (SimPy's sum / len)."""
    names = [ch.name for ch in alg.channels]
    out = {}
    counts = np.bincount(e_send, minlength=n_agents)
    silent = np.flatnonzero(counts == 0)
    if silent.size:
        zero = {ch.name: np.zeros((runs, silent.size, decls[ch.name].dimension)) for _, ch in noisy}
        quiet = rule_messages(alg, {k: v[:, silent] for k, v in state.items()}, t, zero, silent, problem)
    order = np.argsort(e_send, kind="stable")  # per sender, its copies in receiver order
    first = np.cumsum(counts) - counts
    for name in names:
        shape = (runs, n_agents) + (np.asarray(copies[name]).shape[2:] if e_send.size else
                                    np.asarray(quiet[name]).shape[2:])
        acc = np.zeros(shape)
        for p in range(int(counts.max(initial=0))):
            senders = np.flatnonzero(counts > p)
            acc[:, senders] = acc[:, senders] + np.asarray(copies[name])[:, order[first[senders] + p]]
        busy = counts > 0
        acc[:, busy] = acc[:, busy] / counts[busy].reshape((1, -1) + (1,) * (acc.ndim - 2))
        if silent.size:
            acc[:, silent] = quiet[name]
        out[name] = acc
    return out


