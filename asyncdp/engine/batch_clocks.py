"""A timed batch's clocks and SimPy's event order: every run's send and combine times, and event ranks.

``_clock`` computes the deadline agents' send and combine times of all runs
with the SimPy agent's float operations; ``_event_ranks`` ranks the events
of one run in the order SimPy processes them (time, priority, scheduling
order), which decides a message that arrives exactly at a combine or a
wake-up; ``_send_ranks`` and ``_wake_ranks`` are those ranks for a deadline
and an async run (:mod:`asyncdp.engine.batch_deadline` describes the
timing these reproduce).
"""

from __future__ import annotations

import numpy as np

from .timing import Deadline, deadline_times, overrides_deadline_times


def _clock(timing: Deadline, drift: np.ndarray, jitter: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Send times, combine times and "waited for the start" flags, each ``(R, T, N)``.

    Exactly the SimPy agent's arithmetic: ``now + (start - now)`` when the
    start lies ahead, then ``now + max(0, combine - now)``. A subclass's own
    ``round_start`` or ``combine_time`` is called for every run, agent and
    round (:func:`~asyncdp.engine.timing.deadline_times`, as the SimPy engine
    does); the batch engine used ``Deadline``'s formulas, so such a run
    differed from the SimPy run of the same seed (combines a period apart).
    """
    runs, horizon, n = jitter.shape
    send = np.empty((horizon, runs, n))  # round-major while stepping, (R, T, N) when returned
    comb = np.empty((horizon, runs, n))
    later = np.empty((horizon, runs, n), dtype=bool)
    now = np.zeros((runs, n))
    rate = 1.0 + drift
    offset = timing.deadline * timing.period
    jit = np.ascontiguousarray(jitter.transpose(1, 0, 2))
    own = overrides_deadline_times(timing)
    for t in range(1, horizon + 1):
        if own:
            times = np.array([[deadline_times(timing, t, float(drift[r, i]), float(jit[t - 1, r, i]), agent=i, run=r)
                               for i in range(n)] for r in range(runs)]).reshape(runs, n, 2)
            start, combine = times[..., 0], times[..., 1]
        else:
            start = (t - 1) * timing.period * rate + jit[t - 1]
            combine = start + offset
        ahead = start > now
        now = np.where(ahead, now + (start - now), now)
        send[t - 1], later[t - 1] = now, ahead
        now = now + np.maximum(0.0, combine - now)
        comb[t - 1] = now
    return tuple(np.ascontiguousarray(x.transpose(1, 0, 2)) for x in (send, comb, later))  # type: ignore[return-value]


def _event_ranks(times: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """SimPy's processing rank of every event of one run's agents, ``(N, S)`` (-1 where not ``valid``).

    Agent ``i``'s events are slots ``0 .. S - 1`` of row ``i``: slot 0 is its
    process's ``Initialize`` event (priority 0, at time 0, in agent order),
    every later valid slot a timeout (priority 1) at ``times[i, slot]``
    scheduled by the agent's previous valid slot. SimPy processes events by
    ``(time, priority, scheduling order)``, and an event is scheduled by the
    step its parent ran, so an event's key is its ``(time, priority)``
    followed by its parent's key; the ranks of these keys are computed by
    prefix doubling. An event's rank is the number of events with a smaller
    key prefix; only the events whose prefix is still shared with another
    event are re-sorted in each doubling step (exact times rarely tie, so
    after the first step few remain), the others' ranks are final.
    """
    n, slots = times.shape
    flat_valid = valid.ravel()
    ids = np.flatnonzero(flat_valid)
    itype = np.int32 if n * slots < 2**31 - 1 else np.int64
    # parent: the previous valid slot of the same agent
    idx = np.where(valid, np.arange(slots, dtype=itype)[None, :], itype(-1))
    prev = np.maximum.accumulate(idx, axis=1)
    del idx
    parent_slot = np.full((n, slots), -1, dtype=itype)
    parent_slot[:, 1:] = prev[:, :-1]
    del prev
    parent_flat = np.where(parent_slot >= 0, np.arange(n, dtype=itype)[:, None] * itype(slots) + parent_slot,
                           itype(-1)).ravel()
    del parent_slot
    position = np.full(n * slots, -1, dtype=itype)
    position[ids] = np.arange(ids.size, dtype=itype)
    par = parent_flat[ids]
    del parent_flat
    anc = np.where(par >= 0, position[np.maximum(par, 0)], itype(-1))
    del par, position
    t_ev = times.ravel()[ids]
    is_init = (ids % slots) == 0
    # primary key: inits first (in agent order), then the dense rank of (time, priority = 1)
    timed = ~is_init
    order = np.argsort(t_ev[timed], kind="stable")
    tv = t_ev[timed][order]
    dense = np.empty(tv.size, dtype=itype)
    dense[order] = np.concatenate(([0], np.cumsum(tv[1:] != tv[:-1]))) if tv.size else []
    del order, tv, t_ev
    primary = np.empty(ids.size, dtype=itype)
    primary[is_init] = (ids[is_init] // slots).astype(itype)
    primary[timed] = n + dense
    del dense
    counts = np.bincount(primary)
    rank = (np.cumsum(counts) - counts).astype(itype)[primary]  # events with a smaller primary key
    tied = np.flatnonzero(counts[primary] > 1)
    del primary, counts
    while tied.size:
        a = rank[tied]
        up = anc[tied]
        if (up < 0).all():
            break
        second = np.where(up >= 0, rank[np.maximum(up, 0)], itype(-1))
        order = np.lexsort((second, a))
        a, b, members = a[order], second[order], tied[order]
        k = np.arange(members.size, dtype=itype)
        new_key = np.concatenate(([True], (a[1:] != a[:-1]) | (b[1:] != b[:-1])))
        new_class = np.concatenate(([True], a[1:] != a[:-1]))
        run_first = np.maximum.accumulate(np.where(new_key, k, 0))
        class_first = np.maximum.accumulate(np.where(new_class, k, 0))
        rank[members] = a + (run_first - class_first)  # plus the events of its class with a smaller next part
        run_size = np.diff(np.append(np.flatnonzero(new_key), members.size))
        tied = members[np.repeat(run_size > 1, run_size)]
        anc = np.where(anc >= 0, anc[np.maximum(anc, 0)], itype(-1))
    full = np.full(n * slots, -1, dtype=np.int64)
    full[ids] = rank
    return full.reshape(n, slots)


def _send_ranks(send: np.ndarray, comb: np.ndarray, later: np.ndarray) -> np.ndarray:
    """One deadline run's SimPy processing rank of every agent's send step, ``(T, N)``.

    An agent's events: its ``Initialize``, then per round the timeout to the
    round's start (only if it waited for it: ``later``) and the timeout to its
    combine (:func:`_event_ranks`).
    """
    horizon, n = send.shape
    slots = 2 * horizon + 1
    times = np.zeros((n, slots))
    valid = np.ones((n, slots), dtype=bool)
    times[:, 1::2] = send.T
    times[:, 2::2] = comb.T
    valid[:, 1::2] = later.T
    full = _event_ranks(times, valid)
    idx = np.where(valid, np.arange(slots)[None, :], -1)
    prev = np.maximum.accumulate(idx, axis=1)
    # the send step of round t: its own event if the agent waited for the start, else the previous step
    step = np.where(later.T, np.arange(1, slots, 2)[None, :], prev[:, 0:slots - 1:2])
    return full[np.arange(n)[:, None], step].T


def _wake_ranks(wake: np.ndarray) -> np.ndarray:
    """One async run's SimPy ranks ``(N, T + 1)``: column 0 the agents' ``Initialize`` events, column ``t`` wake-up ``t``.

    An async agent's events are its ``Initialize`` and one timeout per
    wake-up, each scheduled by the previous one (:func:`_event_ranks`); it
    sends and combines round ``t`` in the step of wake-up ``t``.
    """
    horizon, n = wake.shape
    times = np.zeros((n, horizon + 1))
    times[:, 1:] = wake.T
    return _event_ranks(times, np.ones(times.shape, dtype=bool))
