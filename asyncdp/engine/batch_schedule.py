"""The realized schedule of every run of a timed batch, computed from the clock and link draws before any state.

Per run and message: its arrival (``_arrivals``: latency, FIFO links, losses)
and the first combine of its receiver that includes it; per round and run:
which weight entries are combined and the round of each message used
(``_schedule`` for deadline timing, ``_async_schedule`` for async wake-ups,
``_lockstep_schedule`` for lockstep rounds over lossy or delaying links;
``_freshest`` for stale messages), and the weights applied, renormalized as
the SimPy engine does (``_realized_weights``). The SimPy engine's errors for
a lost message under ``missing=None`` and for a row with nothing to combine
are raised from here (:mod:`asyncdp.engine.batch_deadline` describes the
timing and runs the rounds).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MessageLostError
from .batch_clocks import _send_ranks, _wake_ranks
from .batch_plan import _BLOCK, _Plan
from .timing import Deadline


def _first_combine(arrival: np.ndarray, comb: np.ndarray, plan: _Plan, tie_ok) -> np.ndarray:
    """Per run and message, the first round ``u`` whose combine of the receiver includes it (``T + 1``: never)."""
    runs = arrival.shape[0]
    horizon = plan.T
    rr = np.repeat(np.arange(runs), plan.M)
    mm = np.tile(np.arange(plan.M), runs)
    a = arrival.ravel()
    recv = plan.m_recv[mm]
    u = np.full(rr.size, horizon + 1, dtype=np.int64)
    ok = ~np.isnan(a)
    g = plan.m_round[mm].copy()
    idx = np.flatnonzero(ok)
    # move down while the previous combine is not earlier than the arrival
    act = idx
    while act.size:
        gg = g[act]
        can = gg > 1
        act = act[can]
        if not act.size:
            break
        down = comb[rr[act], g[act] - 2, recv[act]] >= a[act]
        act = act[down]
        g[act] -= 1
    act = idx
    while act.size:  # move up while the combine is earlier than the arrival
        gg = g[act]
        act = act[gg <= horizon]
        if not act.size:
            break
        up = comb[rr[act], g[act] - 1, recv[act]] < a[act]
        act = act[up]
        g[act] += 1
    u[idx] = g[idx]
    inside = idx[g[idx] <= horizon]
    tie = inside[comb[rr[inside], g[inside] - 1, recv[inside]] == a[inside]]
    if tie.size:
        late = ~tie_ok(rr[tie], mm[tie], g[tie])
        u[tie[late]] += 1
    return u.reshape(runs, plan.M)


def _arrivals(plan: _Plan, send: np.ndarray, lost: np.ndarray, delay: np.ndarray) -> np.ndarray:
    """Per run and message, the delivery time ``(R, M)`` (NaN: lost), as :meth:`LinkChannel.transmit` computes it.

    ``send + latency``; on FIFO links never before the link's previous
    delivery (lost messages do not count; a link's messages are sent in round order).
    The arrivals are computed in ``delay``'s memory (``delay`` is overwritten: the
    callers need it no more; ``latency + send`` is ``send + latency`` to the bit).
    """
    runs, horizon, n = send.shape
    arrival = delay
    flat_send = send.reshape(runs, horizon * n)
    for lo in range(0, plan.M, _BLOCK):  # in blocks of messages (memory of large runs)
        hi = min(lo + _BLOCK, plan.M)
        arrival[:, lo:hi] += np.take(flat_send, (plan.m_round[lo:hi] - 1).astype(np.int64) * n + plan.m_send[lo:hi],
                                     axis=1)
    fifo = np.flatnonzero(plan.link_fifo & (plan.link_count > 1))  # a link's first message is never held back
    if fifo.size:
        last = np.full((runs, fifo.size), -np.inf)  # per FIFO link (column: its place in fifo)
        for p in range(plan.kmax):
            links, cols = plan.at_position(p, fifo)
            at = np.searchsorted(fifo, links)
            x = np.maximum(arrival[:, cols], last[:, at])
            arrival[:, cols] = x
            last[:, at] = np.where(lost[:, cols], last[:, at], x)
    arrival[lost] = np.nan
    return arrival


def _freshest(plan: _Plan, u: np.ndarray) -> np.ndarray:
    """``(T + 2, R, L)``: at ``[t, r, l]`` the latest round of a message on link ``l`` delivered by the receiver's round ``t`` (0: none).

    ``u`` ``(R, M)``: per message the first round of its receiver that
    includes it (``T + 1``: never). A link's messages are numbered in round
    order, so writing them in that order leaves the latest round in each cell.
    Rounds come first: the running maximum over the rounds is then one
    elementwise maximum per round, and a round's cells are one block.
    """
    runs = u.shape[0]
    dtype = np.int16 if plan.T < 2**15 - 2 else np.int64
    fr = np.zeros((plan.T + 2, runs, plan.L), dtype=dtype)
    flat = fr.reshape(-1)
    cell = np.arange(runs, dtype=np.int64)[:, None] * plan.L  # (run, link) cell of round 0
    for p in range(plan.kmax):
        have, m = plan.at_position(p)
        at = np.take(u, m, axis=1).astype(np.int64) * (runs * plan.L) + (cell + have[None, :])
        flat[at] = np.broadcast_to(plan.m_round[m].astype(dtype), at.shape)
    np.maximum.accumulate(fr, axis=0, out=fr)
    return fr


def _async_schedule(plan: _Plan, wake: np.ndarray, lost: np.ndarray, delay: np.ndarray):
    """Async timing: arrivals, the freshest message of every link at every wake-up, and the runs' event ranks.

    Agent ``i`` sends its round-``t`` message at wake-up ``t``; a message
    arriving at ``a`` is delivered to receiver ``j`` at its first wake-up
    ``u`` with ``wake[u, j] > a``, or ``wake[u, j] == a`` and the sending step
    processed before the step that scheduled wake-up ``u`` (SimPy's order of
    equal times; ``_wake_ranks``). The receiver's round-``u`` combine then
    uses, per in-neighbour, the latest round delivered so far.

    Returns:
        ``(arrival (R, M), freshest (T + 2, R, L), rank_of)``; ``rank_of(r)``
        gives run ``r``'s ``_wake_ranks``. The arrivals are computed in
        ``delay``'s memory (:func:`_arrivals`).
    """
    runs, horizon, n = wake.shape
    arrival = _arrivals(plan, wake, lost, delay)
    ranks: dict[int, np.ndarray] = {}

    def rank_of(r: int) -> np.ndarray:
        if r not in ranks:
            ranks[r] = _wake_ranks(wake[r])
        return ranks[r]

    # u: the first wake-up of the receiver at or after the arrival, by a branch-free binary search per message over
    # each agent's wake-ups padded with +inf to a power of two (a lost message, NaN, compares false everywhere and
    # is set to "never" afterwards)
    width = 1 << horizon.bit_length()  # > T
    padded = np.full((runs, n, width), np.inf)
    padded[:, :, :horizon] = wake.transpose(0, 2, 1)
    by_agent = padded.reshape(-1)
    a = arrival
    # pos: per message, the slot of its receiver's last wake-up strictly before the arrival, starting one slot
    # before the receiver's row (row r * N + receiver, of width slots); the steps move it in place
    pos = np.arange(runs, dtype=np.intp)[:, None] * n + plan.m_recv[None, :].astype(np.intp)
    pos *= width
    pos -= 1
    probe_at = np.empty_like(pos)
    probe = np.empty(a.shape)
    ahead = np.empty(a.shape, dtype=bool)
    step = width >> 1
    while step:
        np.add(pos, step, out=probe_at)
        np.take(by_agent, probe_at, out=probe)
        np.less(probe, a, out=ahead)
        np.add(pos, step, out=pos, where=ahead)
        step >>= 1
    del probe_at, ahead
    # exact ties: delivered at that wake-up only if sent before the wake-up was scheduled (the padding and NaN
    # never compare equal)
    np.add(pos, 1, out=pos)  # the first wake-up at or after the arrival; its slot within the row is u - 1
    np.take(by_agent, pos, out=probe)
    rr, mm = np.nonzero(probe == a)
    del probe
    u = pos
    np.remainder(u, width, out=u)  # wake-ups strictly before the arrival (< T < width)
    u += 1
    u[np.isnan(a)] = horizon + 1

    def slot(rr: np.ndarray, mm: np.ndarray) -> np.ndarray:
        """The by_agent index of wake-up ``u[rr, mm]`` of the messages' receivers."""
        return (rr * n + plan.m_recv[mm].astype(np.intp)) * width + u[rr, mm] - 1

    while rr.size:
        late = np.empty(rr.size, dtype=bool)
        for k, (r, m) in enumerate(zip(rr.tolist(), mm.tolist())):
            rk = rank_of(r)
            late[k] = not rk[plan.m_send[m], plan.m_round[m]] < rk[plan.m_recv[m], u[r, m] - 1]
        rr, mm = rr[late], mm[late]
        u[rr, mm] += 1
        keep = u[rr, mm] <= horizon
        rr, mm = rr[keep], mm[keep]
        hit = by_agent[slot(rr, mm)] == a[rr, mm]
        rr, mm = rr[hit], mm[hit]
    return arrival, _freshest(plan, u), rank_of


def _schedule(timing: Deadline, plan: _Plan, send: np.ndarray, comb: np.ndarray, later: np.ndarray,
              lost: np.ndarray, delay: np.ndarray):
    """Arrivals, and per round the combined entries and the round of each message used (``delay`` is overwritten)."""
    runs_, horizon, n = send.shape
    arrival = _arrivals(plan, send, lost, delay)

    ranks: dict[int, np.ndarray] = {}

    def rank_of(r: int) -> np.ndarray:
        if r not in ranks:
            ranks[r] = _send_ranks(send[r], comb[r], later[r])
        return ranks[r]

    def tie_ok(rr: np.ndarray, mm: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Message ``mm`` of run ``rr`` was sent before its receiver scheduled its round-``u`` combine."""
        out = np.empty(rr.size, dtype=bool)
        for k in range(rr.size):
            rk = rank_of(int(rr[k]))
            m = mm[k]
            out[k] = rk[plan.m_round[m] - 1, plan.m_send[m]] < rk[u[k] - 1, plan.m_recv[m]]
        return out

    # present: arrived before the receiver's combine of the message's round (in blocks of messages: memory)
    present = np.empty(arrival.shape, dtype=bool)
    ties = []
    flat_comb = comb.reshape(runs_, horizon * n)
    for lo in range(0, plan.M, _BLOCK):
        hi = min(lo + _BLOCK, plan.M)
        own = np.take(flat_comb, (plan.m_round[lo:hi] - 1).astype(np.int64) * n + plan.m_recv[lo:hi], axis=1)
        with np.errstate(invalid="ignore"):
            np.less(arrival[:, lo:hi], own, out=present[:, lo:hi])
            rr, mm = np.nonzero(arrival[:, lo:hi] == own)
        ties.append((rr, mm + lo))
        del own
    rr = np.concatenate([r for r, _ in ties]) if ties else np.zeros(0, dtype=np.int64)
    mm = np.concatenate([m for _, m in ties]) if ties else np.zeros(0, dtype=np.int64)
    if rr.size:
        present[rr, mm] = tie_ok(rr, mm, plan.m_round[mm])
    freshest = None
    if timing.missing == "stale":
        # freshest[t, r, l]: the latest round of a message on link l combined by round t (0: none)
        freshest = _freshest(plan, _first_combine(arrival, comb, plan, tie_ok))
    return arrival, present, freshest, rank_of


def _lockstep_schedule(timing: Any, plan: _Plan, lost: np.ndarray, delay: np.ndarray):
    """Lockstep rounds over lossy links: every round starts when the previous one ended (a barrier).

    Round ``t`` starts for everyone at ``T(t - 1)``; a message arrives at
    ``T(t - 1) + latency`` (FIFO links: not before the link's previous
    delivery) and its delivery event fires at ``now + (arrival - now)``
    (SimPy's timeout); the barrier opens, and every agent combines, at the
    last delivery: ``T(t) = max(T(t - 1), last delivery event)``. Every
    message that is not lost is combined in its own round.
    """
    runs = lost.shape[0]
    arrival = np.full((runs, plan.M), np.nan)
    send = np.empty((runs, plan.T, plan.N))
    comb = np.empty((runs, plan.T, plan.N))
    last = np.full((runs, plan.L), -np.inf)
    now = np.zeros(runs)
    for t in range(1, plan.T + 1):
        lo, hi = plan.round_start[t - 1], plan.round_start[t]
        send[:, t - 1] = now[:, None]
        links = plan.m_link[lo:hi]  # each link at most once per round
        prev = last[:, links]
        a = now[:, None] + delay[:, lo:hi]
        a = np.where(plan.link_fifo[links][None, :], np.maximum(a, prev), a)
        gone = lost[:, lo:hi]
        last[:, links] = np.where(gone, prev, np.maximum(prev, a))
        arrival[:, lo:hi] = np.where(gone, np.nan, a)
        fired = np.where(gone, -np.inf, now[:, None] + (a - now[:, None]))
        now = np.maximum(now, fired.max(axis=1, initial=-np.inf))
        comb[:, t - 1] = now[:, None]
    present = ~lost
    freshest = None
    if timing.missing == "stale":
        freshest = _freshest(plan, np.where(lost, plan.T + 1, plan.m_round[None, :]))
    return send, comb, arrival, present, freshest


def _row_sums(indptr: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row, the sum of its entries added in row order from 0 (as Python's ``sum``); ``values`` ``(..., nnz)``."""
    lengths = np.diff(indptr)
    out = np.zeros(values.shape[:-1] + (lengths.size,))
    for p in range(int(lengths.max(initial=0))):
        rows = np.flatnonzero(lengths > p)
        if rows.size == lengths.size:  # every row has a p-th entry: whole columns, no fancy assignment
            out += np.take(values, indptr[:-1] + p, axis=-1)
        else:
            out[..., rows] = out[..., rows] + values[..., indptr[rows] + p]
    return out


def _realized_weights(round_: tuple, used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The weights applied to the used entries ``(R, nnz)`` (the SimPy engine's ``_renormalized``) and kept totals."""
    indptr, rows, _, data, _ = round_
    row_total = _row_sums(indptr, data)
    kept_total = _row_sums(indptr, np.where(used, data, 0.0))
    counts = _row_sums(indptr, used.astype(float))
    complete = counts == np.diff(indptr)[None, :]
    # the complete rows keep their weights; the others' are data / kept total * row total, computed only there
    # (np.take: (R, nnz) in C order, where fancy indexing of the second axis gives F order)
    rescale = ~np.take(complete, rows, axis=1)
    weights = np.broadcast_to(data, rescale.shape).copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(weights, np.take(kept_total, rows, axis=1), out=weights, where=rescale)
        np.multiply(weights, row_total[rows], out=weights, where=rescale)
    return weights, counts


def _raise_first_loss(plan: _Plan, lost: np.ndarray) -> None:
    """Lockstep without a missing-message policy: the SimPy engine's error for the first lost message combined.

    Agents combine in index order, each over its row in order; with several
    runs the error names the first run that loses a message.
    """
    r = int(np.flatnonzero(lost.any(axis=1))[0])
    for t in range(1, plan.T + 1):
        indptr, rows, cols, _, entry_msg = plan.rounds[t - 1]
        bad = (entry_msg >= 0) & lost[r][np.maximum(entry_msg, 0)]
        if bad.any():
            k = int(np.flatnonzero(bad)[0])  # CSR order: by receiver, then the row's order
            where = f"run {r}, " if lost.shape[0] > 1 else ""
            raise MessageLostError(
                f"{where}round {t}: the message from agent {cols[k]} to agent {rows[k]} was lost and the timing "
                f"policy has no missing-message policy (use missing='renormalize' or 'stale')"
            )


def _check_nothing_to_combine(counts: np.ndarray, lengths: np.ndarray, t: int, comb: np.ndarray) -> None:
    empty = (counts == 0) & (lengths[None, :] > 0)
    if empty.any():
        rr, ii = np.nonzero(empty)
        k = np.lexsort((ii, comb[rr, t - 1, ii], rr))[0]
        r, i = int(rr[k]), int(ii[k])
        where = f"run {r}, " if comb.shape[0] > 1 else ""
        raise MessageLostError(
            f"{where}round {t}: agent {i} has nothing to combine (its weight matrix row has no self weight and "
            f"every in-neighbour's message is missing)"
        )
