"""What a timed batch keeps of its runs, and one run rebuilt from it: schedule, ledger, transcript.

``DeadlineRuns`` holds every run's send and combine times, losses,
arrivals and combined entries; ``_Detail`` (a timed
:class:`~asyncdp.engine.batch_engine.BatchResult`'s ``detail``) adds the
ledger records and the flags that decide SimPy's event order. From it
``run_schedule``, ``run_ledger`` and ``run_transcript`` rebuild run ``r``
as the SimPy engine records it (releases and transcript rows in SimPy's
processing order of the send steps), and :func:`run_schedules` gives every
run's schedule as columns (:mod:`asyncdp.engine.batch_deadline` computes
the data).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting.ledger import Ledger

from .batch_clocks import _send_ranks, _wake_ranks
from .batch_schedule import _realized_weights
from .schedule import RealizedSchedule, RealizedSchedules

__all__ = ["run_schedules"]


@dataclass
class DeadlineRuns:
    """What the batch engine keeps of ``R`` deadline runs to rebuild each run's schedule, ledger and transcript.

    Attributes:
        plan: the rounds as index arrays.
        send, comb: per run, round and agent: send and combine time ``(R, T, N)``.
        later: whether the agent waited for the round's start (SimPy event structure).
        lost, arrival: per run and message (``arrival`` NaN when lost), or ``None``.
        used, source: per round, ``(R, nnz)`` — whether entry was combined and the round of the message used.
    """

    plan: Any
    send: np.ndarray
    comb: np.ndarray
    later: np.ndarray
    lost: np.ndarray | None
    arrival: np.ndarray | None
    used: list[np.ndarray] | None
    source: list[np.ndarray] | None


def _has_send_ties(send: np.ndarray) -> bool:
    flat = np.sort(send.ravel())
    return bool((flat[1:] == flat[:-1]).any())


@dataclass
class _Detail:
    """The batch's per-run schedule data (module docstring); picklable (arrays and flags only)."""

    runs: DeadlineRuns
    records: tuple
    unicast: bool
    lockstep: bool = False
    fixed: bool = False  # lockstep over lossless links: every run's schedule is the topology's
    asynchronous: bool = False  # async timing: send and combine at each wake-up

    def ranks(self, r: int) -> np.ndarray | None:
        """Run ``r``'s send-step ranks ``(T, N)`` (SimPy's event order), or ``None`` where the send times order them."""
        send = self.runs.send[r]
        if self.lockstep:  # agents send in index order, round by round
            return np.arange(send.size).reshape(send.shape)
        if not _has_send_ties(send):
            return None
        if self.asynchronous:
            return _wake_ranks(send)[:, 1:].T
        return _send_ranks(send, self.runs.comb[r], self.runs.later[r])


def _send_order(send: np.ndarray, ranks: np.ndarray | None) -> np.ndarray:
    """Flat ``(t - 1) * N + i`` indices of the send steps in SimPy's processing order."""
    horizon, n = send.shape
    if ranks is not None:
        return np.argsort(ranks.ravel(), kind="stable")
    agent = np.tile(np.arange(n), horizon)
    return np.lexsort((agent, send.ravel()))


def _ledger(detail: DeadlineRuns, r: int, records: tuple, unicast: bool, ranks: np.ndarray | None) -> Ledger:
    """Run ``r``'s releases in SimPy's order: per send step, per receiver (unicast), per noisy channel."""
    recs, round_records = records
    if not recs:
        return Ledger()
    plan = detail.plan
    send = detail.send[r]
    n = plan.N
    order = _send_order(send, ranks)  # send steps, (t - 1) * N + i
    if unicast:  # one unit per transmission: steps in order, each step's receivers in order
        position = np.empty(order.size, dtype=np.int64)
        position[order] = np.arange(order.size)
        units = np.lexsort((plan.m_recv, position[(plan.m_round - 1).astype(np.int64) * n + plan.m_send]))
        unit_t, unit_agent, unit_recv = plan.m_round[units] - 1, plan.m_send[units], plan.m_recv[units]
    else:
        unit_t, unit_agent = np.divmod(order, n)
        unit_recv = np.full(order.size, -1, dtype=np.int64)
    del order
    per_round = np.array([len(ids) for ids in round_records], dtype=np.int64)
    flat_ids = np.array([k for ids in round_records for k in ids], dtype=np.int64)
    if (per_round == 1).all():  # one record per round (one noisy channel): one row per unit, no expansion
        return Ledger.from_columns(recs, record=flat_ids[unit_t], agent=unit_agent, time=send[unit_t, unit_agent],
                                   receiver=unit_recv)
    first = np.cumsum(per_round) - per_round
    k = per_round[unit_t]
    rows = np.repeat(np.arange(unit_t.size), k)
    within = np.arange(rows.size) - np.repeat(np.cumsum(k) - k, k)
    return Ledger.from_columns(recs, record=flat_ids[first[unit_t][rows] + within], agent=unit_agent[rows],
                               time=send[unit_t, unit_agent][rows], receiver=unit_recv[rows])


def run_schedule(detail: _Detail, r: int) -> RealizedSchedule:
    """Run ``r``'s :class:`~asyncdp.engine.schedule.RealizedSchedule` (needs ``keep="all"``).

    Args:
        detail: a timed batch's ``BatchResult.detail``.
        r: the run (checked by the caller, :meth:`~asyncdp.engine.batch_engine.BatchResult.schedule`).

    Returns:
        The schedule: per round the entries combined, in row order, with the weights applied
        (recomputed from the recorded entries with the same arithmetic) and the rounds of the messages.
    """
    runs = detail.runs
    plan = runs.plan
    parts = []
    for t in range(1, plan.T + 1):
        round_ = plan.rounds[t - 1]
        indptr, rows, cols, data, _ = round_
        used = runs.used[t - 1][r:r + 1]
        weights, _ = _realized_weights(round_, used)
        keep = used[0]
        parts.append((np.full(int(keep.sum()), t), rows[keep].astype(np.int64), cols[keep].astype(np.int64),
                      weights[0][keep],
                      runs.source[t - 1][r][keep].astype(np.int64)))
    return RealizedSchedule(plan.N, plan.T, *(np.concatenate(c) for c in zip(*parts)))


def run_schedules(detail: _Detail) -> RealizedSchedules:
    """Every run's schedule as columns (:class:`~asyncdp.engine.schedule.RealizedSchedules`; needs ``keep="all"``).

    The same entries and weights as ``run_schedule`` for each run (the
    weights recomputed for all runs at once with the same elementwise
    arithmetic), gathered with one boolean mask over ``(R, entries of all
    rounds)``, so the cost is a few passes over the batch's schedule arrays.

    Args:
        detail: a timed batch's ``BatchResult.detail``.

    Returns:
        The schedules of runs ``0 .. R - 1``.
    """
    runs = detail.runs
    plan = runs.plan
    used = np.concatenate(runs.used, axis=1)  # (R, entries of rounds 1..T), round-major per run
    weights = np.concatenate([_realized_weights(plan.rounds[t - 1], runs.used[t - 1])[0]
                              for t in range(1, plan.T + 1)], axis=1)
    source = np.concatenate(runs.source, axis=1)
    rnd = np.concatenate([np.full(plan.rounds[t - 1][1].size, t, dtype=np.int64) for t in range(1, plan.T + 1)])
    rows = np.concatenate([plan.rounds[t - 1][1] for t in range(1, plan.T + 1)]).astype(np.int64)
    cols = np.concatenate([plan.rounds[t - 1][2] for t in range(1, plan.T + 1)]).astype(np.int64)
    rr, ee = np.nonzero(used)  # row-major: by run, then round, then the round's CSR order
    offsets = np.concatenate(([0], np.cumsum(used.sum(axis=1))))
    return RealizedSchedules(plan.N, plan.T, offsets, rnd[ee], rows[ee], cols[ee], weights[rr, ee],
                             source[rr, ee].astype(np.int64))


def run_ledger(detail: _Detail, r: int) -> Ledger:
    """Run ``r``'s ledger, in the SimPy engine's order (needs ``keep="all"``).

    Args:
        detail: a timed batch's ``BatchResult.detail``.
        r: the run.

    Returns:
        The :class:`~accounting.ledger.Ledger`.
    """
    return _ledger(detail.runs, r, detail.records, detail.unicast, detail.ranks(r))


def run_transcript(detail: _Detail, r: int, messages: dict[str, np.ndarray]) -> Any:
    """Run ``r``'s transcript, rows in SimPy's order (needs ``keep="all"`` and ``transcripts=True``).

    Args:
        detail: a timed batch's ``BatchResult.detail``.
        r: the run.
        messages: the batch's ``messages``.

    Returns:
        A :class:`~asyncdp.engine.transcript.Transcript` (send and receive times, losses and message ids as the
        SimPy engine records them).
    """
    from .transcript import Transcript

    runs = detail.runs
    plan = runs.plan
    send = runs.send[r]
    n = plan.N
    rows_out = []
    mid = 0
    for step in _send_order(send, detail.ranks(r)):
        t, i = divmod(int(step), n)
        lo, hi = plan.round_start[t], plan.round_start[t + 1]
        msgs = lo + np.flatnonzero(plan.m_send[lo:hi] == i)
        now = float(send[t, i])
        if not detail.unicast:
            payload = {name: arr[r, t, i] for name, arr in messages.items()}
            for m in msgs.tolist():
                j = int(plan.m_recv[m])
                lost = bool(runs.lost[r, m])
                got = float("nan") if lost else float(runs.arrival[r, m])
                for name, p in payload.items():
                    rows_out.append((t + 1, i, j, name, now, got, lost, p, mid))
            mid += 1
        else:
            for m in msgs.tolist():
                j = int(plan.m_recv[m])
                lost = bool(runs.lost[r, m])
                got = float("nan") if lost else float(runs.arrival[r, m])
                for name, arr in messages.items():
                    rows_out.append((t + 1, i, j, name, now, got, lost, arr[r, t, i, j], mid))
                mid += 1
    transcript = Transcript()
    transcript.extend_trusted(rows_out)
    return transcript
