"""The realized schedule of a run: who combined which message, with which weight.

Every combine step of every agent mixes some messages: its own of the round,
and for each in-neighbour the message it actually used (the round's under
lockstep, what arrived by the deadline under :class:`~asyncdp.engine.timing.Deadline`,
the freshest received under :class:`~asyncdp.engine.timing.Async` or the
``"stale"`` policy), with the weight actually applied (renormalized when a
message was missing). :class:`RealizedSchedule` records one entry per
``(round, receiver, sender)`` of those combinations, with the *sender's
round* of the message used.

Together with the transcript (every message sent) this determines the whole
run given the algorithm's rule: the privacy checker replays runs on it
(:mod:`asyncdp.privacy.behavior`). Under every timing and link model of the
engines the schedule is drawn from the link and clock streams of the seed
layout (:mod:`asyncdp.noise`) only, never from the privacy noise or the
private data; ``tests/asyncdp/engine/test_schedule.py`` checks that premise.

Example:
    >>> import numpy as np
    >>> s = RealizedSchedule.from_dense([np.array([[0.5, 0.5], [0.0, 1.0]])], [np.array([[1, 1], [0, 1]])])
    >>> s.horizon, s.num_agents
    (1, 2)
    >>> w, rounds = s.dense(1)
    >>> w.tolist(), rounds.tolist()
    ([[0.5, 0.5], [0.0, 1.0]], [[1, 1], [0, 1]])
"""

from __future__ import annotations

import itertools

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from topology.validation import check_integer

from ..errors import ScenarioError, TopologyMismatchError

__all__ = ["RealizedSchedule", "RealizedSchedules", "check_rows_nonempty"]


def check_rows_nonempty(w: Any, t: int) -> None:
    """Refuse round ``t``'s weight matrix if an agent's row has no entry (no in-neighbour, no self weight).

    Such an agent has nothing to combine; both engines refuse it here, where
    the SimPy engine failed with a bare ``IndexError`` and the batch engine
    silently mixed it to the zero vector. (Every weight rule of
    :mod:`topology` gives each node a self weight; only a user's own
    matrices can have an empty row.)

    Args:
        w: the round's sparse ``N x N`` weight matrix (explicit zeros removed, as a GraphSequence stores it).
        t: the round.

    Raises:
        TopologyMismatchError: naming the round and the first such agent.

    Example:
        >>> check_rows_nonempty(sp.csr_array(np.array([[1.0, 0.0], [0.0, 0.0]])), 3)
        Traceback (most recent call last):
        ...
        asyncdp.errors.TopologyMismatchError: round 3: agent 1 has an empty row in the weight matrix (no in-neighbour and no self weight): it has nothing to combine
    """
    indptr = w.indptr if isinstance(w, sp.csr_array) else sp.csr_array(w).indptr
    empty = np.flatnonzero(indptr[1:] == indptr[:-1])
    if empty.size:
        raise TopologyMismatchError(f"round {t}: agent {int(empty[0])} has an empty row in the weight matrix (no "
                                    f"in-neighbour and no self weight): it has nothing to combine")


class RealizedSchedule:
    """The combinations of one run, one entry per ``(round, receiver, sender)`` (module docstring).

    Entries are stored as columns sorted by round, then receiver (then the
    order the receiver combined them in).

    Args:
        num_agents: ``N``.
        horizon: ``T``.
        round, receiver, sender: int arrays of equal length (1-based rounds).
        weight: the weight the receiver applied to the message.
        sender_round: the round of the sender's message that was used (1-based;
            equal to ``round`` unless the message was stale or came from a
            sender ahead of the receiver).

    Raises:
        ScenarioError: columns of different lengths, an index out of range,
            or a non-finite weight.
    """

    __slots__ = ("num_agents", "horizon", "round", "receiver", "sender", "weight", "sender_round", "_starts")

    def __init__(self, num_agents: int, horizon: int, round: Any, receiver: Any, sender: Any, weight: Any,
                 sender_round: Any) -> None:
        self.num_agents = check_integer(num_agents, "num_agents", minimum=1, error=ScenarioError,
                                        where="RealizedSchedule")
        self.horizon = check_integer(horizon, "horizon", minimum=1, error=ScenarioError, where="RealizedSchedule")
        cols = [np.asarray(c) for c in (round, receiver, sender, sender_round)]
        w = np.asarray(weight, dtype=float)
        if len({c.shape for c in cols} | {w.shape}) != 1 or w.ndim != 1:
            raise ScenarioError("RealizedSchedule: round, receiver, sender, weight and sender_round must be 1-D "
                                "arrays of one length")
        rnd, recv, send, srnd = (c.astype(np.int64) for c in cols)
        if w.size:
            if rnd.min() < 1 or rnd.max() > self.horizon or srnd.min() < 1 or srnd.max() > self.horizon:
                raise ScenarioError(f"RealizedSchedule: rounds must lie in [1, {self.horizon}]")
            if min(recv.min(), send.min()) < 0 or max(recv.max(), send.max()) >= self.num_agents:
                raise ScenarioError(f"RealizedSchedule: agents must lie in [0, {self.num_agents})")
            if not np.isfinite(w).all():
                raise ScenarioError("RealizedSchedule: weights must be finite")
            if (np.diff(rnd) < 0).any():
                raise ScenarioError("RealizedSchedule: entries must be sorted by round")
        self.round, self.receiver, self.sender, self.weight, self.sender_round = rnd, recv, send, w, srnd
        for a in (self.round, self.receiver, self.sender, self.weight, self.sender_round):
            a.flags.writeable = False
        self._starts = np.searchsorted(rnd, np.arange(1, self.horizon + 2))

    @classmethod
    def _view(cls, num_agents: int, horizon: int, round: np.ndarray, receiver: np.ndarray, sender: np.ndarray,
              weight: np.ndarray, sender_round: np.ndarray) -> RealizedSchedule:
        """A schedule on columns already validated (read-only views of a :class:`RealizedSchedules`' columns)."""
        out = cls.__new__(cls)
        out.num_agents, out.horizon = num_agents, horizon
        out.round, out.receiver, out.sender, out.weight, out.sender_round = round, receiver, sender, weight, \
            sender_round
        out._starts = np.searchsorted(round, np.arange(1, horizon + 2))
        return out

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_rows(cls, num_agents: int, rows: Sequence[Sequence[Any]], sender_rounds: Sequence[Sequence[Any]]
                  ) -> RealizedSchedule:
        """From per-round, per-receiver rows ``(senders, weights)`` and the matching sender rounds.

        Args:
            num_agents: ``N``.
            rows: ``rows[t - 1][i] = (senders, weights)``, tuples of equal length.
            sender_rounds: ``sender_rounds[t - 1][i]``: the round of each sender's message.

        Returns:
            The schedule.
        """
        # every row's entries, flattened in order (round, receiver, then the row's order), a row's round and
        # receiver repeated once per entry
        flat = [(t, i, row, src) for t, (round_rows, round_src) in enumerate(zip(rows, sender_rounds), start=1)
                for i, (row, src) in enumerate(zip(round_rows, round_src))]
        sizes = np.fromiter((len(row[0]) for _, _, row, _ in flat), dtype=np.int64, count=len(flat))
        rnd = np.repeat(np.fromiter((t for t, _, _, _ in flat), dtype=np.int64, count=len(flat)), sizes)
        recv = np.repeat(np.fromiter((i for _, i, _, _ in flat), dtype=np.int64, count=len(flat)), sizes)
        send = list(itertools.chain.from_iterable(row[0] for _, _, row, _ in flat))
        w = list(itertools.chain.from_iterable(row[1] for _, _, row, _ in flat))
        srnd = list(itertools.chain.from_iterable(src for _, _, _, src in flat))
        return cls(num_agents, len(rows), rnd, recv, send, w, srnd)

    @classmethod
    def from_dense(cls, weights: Sequence[Any], sender_rounds: Sequence[Any]) -> RealizedSchedule:
        """From dense ``N x N`` matrices per round: weights, and the sender round of each used entry.

        An entry is used where its sender round is >= 1 (so a used entry may
        carry weight 0, as in a sparse matrix's explicit zeros).

        Example:
            >>> RealizedSchedule.from_dense([np.eye(2)], [np.eye(2, dtype=int)]).dense(1)[1].tolist()
            [[1, 0], [0, 1]]
        """
        n = int(np.asarray(weights[0]).shape[0])
        cols: list[list[Any]] = [[], [], [], [], []]
        for t, (w, s) in enumerate(zip(weights, sender_rounds), start=1):
            w, s = np.asarray(w, dtype=float), np.asarray(s, dtype=np.int64)
            i, j = np.nonzero(s >= 1)
            for c, v in zip(cols, (np.full(i.size, t), i, j, w[i, j], s[i, j])):
                c.append(v)
        return cls(n, len(weights), *(np.concatenate(c) for c in cols))

    @classmethod
    def lockstep(cls, topology: Any, horizon: int) -> RealizedSchedule:
        """The schedule of a lockstep lossless run: round ``t`` mixes the round-``t`` messages with ``W(t)``.

        Args:
            topology: a graph sequence (``weights(t)`` sparse ``N x N``).
            horizon: ``T``.
        """
        parts = []
        for t in range(1, horizon + 1):
            w = sp.coo_array(topology.weights(t))
            order = np.lexsort((w.col, w.row))
            row, col = w.row[order], w.col[order]
            parts.append((np.full(row.size, t), row, col, w.data[order], np.full(row.size, t)))
        return cls(int(topology.num_nodes), horizon, *(np.concatenate(c) for c in zip(*parts)))

    # ------------------------------------------------------------------ reading
    def _slice(self, t: int) -> slice:
        t = check_integer(t, "round", minimum=1, error=ScenarioError, where="RealizedSchedule")
        if t > self.horizon:
            raise ScenarioError(f"RealizedSchedule: round must be <= {self.horizon}, got {t}")
        return slice(int(self._starts[t - 1]), int(self._starts[t]))

    def entries(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Round ``t``'s ``(receiver, sender, weight, sender_round)`` columns."""
        k = self._slice(t)
        return self.receiver[k], self.sender[k], self.weight[k], self.sender_round[k]

    def matrix(self, t: int) -> sp.csr_array:
        """Round ``t``'s realized weights as a sparse ``N x N`` matrix (row = receiver)."""
        recv, send, w, _ = self.entries(t)
        return sp.csr_array((w, (recv, send)), shape=(self.num_agents, self.num_agents))

    def dense(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Round ``t`` as dense ``N x N`` arrays: the weights and the sender rounds (0 where unused)."""
        recv, send, w, src = self.entries(t)
        weights = np.zeros((self.num_agents, self.num_agents))
        rounds = np.zeros((self.num_agents, self.num_agents), dtype=np.int64)
        weights[recv, send] = w
        rounds[recv, send] = src
        return weights, rounds

    @property
    def max_age(self) -> int:
        """The largest ``round - sender_round`` of any entry (0: no stale message was used)."""
        return int((self.round - self.sender_round).max(initial=0))

    def __len__(self) -> int:
        return int(self.weight.size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RealizedSchedule):
            return NotImplemented
        return (self.num_agents, self.horizon) == (other.num_agents, other.horizon) and all(
            np.array_equal(a, b) for a, b in zip(self._columns(), other._columns()))

    __hash__ = None  # type: ignore[assignment]

    def _columns(self) -> tuple[np.ndarray, ...]:
        return self.round, self.receiver, self.sender, self.weight, self.sender_round

    def __repr__(self) -> str:
        return (f"RealizedSchedule(num_agents={self.num_agents}, horizon={self.horizon}, entries={len(self)}, "
                f"max_age={self.max_age})")

    def __getstate__(self) -> dict[str, Any]:
        return {"num_agents": self.num_agents, "horizon": self.horizon,
                **dict(zip(("round", "receiver", "sender", "weight", "sender_round"), self._columns()))}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]


class RealizedSchedules:
    """The realized schedules of ``R`` runs as columns (one row per run, round, receiver and sender used).

    What :meth:`~asyncdp.engine.batch_engine.BatchResult.schedules` returns:
    every run's :class:`RealizedSchedule` at once, built with array
    operations over all runs (no per-run loop), for consumers that read
    many runs' schedules (the privacy checker). Entries are sorted by run,
    then as in :class:`RealizedSchedule` (round, receiver, the receiver's
    order); run ``r``'s entries are ``offsets[r]:offsets[r + 1]``.

    It is also a sequence of :class:`RealizedSchedule`: ``len()`` is ``R``,
    ``schedules[r]`` (or :meth:`run`) gives run ``r``'s schedule, a view of
    its slice of the columns (no copy, no per-run validation: the columns are
    validated once, here), and iterating gives every run's, in order.
    :meth:`dense_runs` gives one round of every run as ``(R, N, N)`` arrays,
    what the exact replay (:mod:`accounting.scheduled_replay`) reads.

    Args:
        num_agents, horizon: ``N`` and ``T``.
        offsets: ``(R + 1,)`` int, nondecreasing, from 0 to the number of entries.
        round, receiver, sender, weight, sender_round: the columns (as :class:`RealizedSchedule`'s).

    Raises:
        ScenarioError: columns of different lengths, offsets that do not
            delimit them, or columns a :class:`RealizedSchedule` refuses (an index
            out of range, a non-finite weight, a run's entries not sorted by round).

    Example:
        >>> one = RealizedSchedule.from_dense([np.eye(2)], [np.eye(2, dtype=int)])
        >>> both = RealizedSchedules.stack([one, one])
        >>> len(both), both[1] == one, both.offsets.tolist()
        (2, True, [0, 2, 4])
        >>> w, rounds = both.dense_runs(1)
        >>> w.shape, rounds[1].tolist()
        ((2, 2, 2), [[1, 0], [0, 1]])
    """

    __slots__ = ("num_agents", "horizon", "offsets", "round", "receiver", "sender", "weight", "sender_round",
                 "_by_round")

    def __init__(self, num_agents: int, horizon: int, offsets: Any, round: Any, receiver: Any, sender: Any,
                 weight: Any, sender_round: Any) -> None:
        self.num_agents = check_integer(num_agents, "num_agents", minimum=1, error=ScenarioError,
                                        where="RealizedSchedules")
        self.horizon = check_integer(horizon, "horizon", minimum=1, error=ScenarioError, where="RealizedSchedules")
        cols = [np.asarray(c, dtype=np.int64) for c in (round, receiver, sender, sender_round)]
        w = np.asarray(weight, dtype=float)
        off = np.asarray(offsets, dtype=np.int64)
        if len({c.shape for c in cols} | {w.shape}) != 1 or w.ndim != 1:
            raise ScenarioError("RealizedSchedules: round, receiver, sender, weight and sender_round must be 1-D "
                                "arrays of one length")
        if off.ndim != 1 or off.size < 1 or off[0] != 0 or off[-1] != w.size or (np.diff(off) < 0).any():
            raise ScenarioError(f"RealizedSchedules: offsets must rise from 0 to the number of entries ({w.size})")
        rnd, recv, send, srnd = cols
        if w.size:
            if rnd.min() < 1 or rnd.max() > self.horizon or srnd.min() < 1 or srnd.max() > self.horizon:
                raise ScenarioError(f"RealizedSchedules: rounds must lie in [1, {self.horizon}]")
            if min(recv.min(), send.min()) < 0 or max(recv.max(), send.max()) >= self.num_agents:
                raise ScenarioError(f"RealizedSchedules: agents must lie in [0, {self.num_agents})")
            if not np.isfinite(w).all():
                raise ScenarioError("RealizedSchedules: weights must be finite")
            falls = np.flatnonzero(np.diff(rnd) < 0) + 1  # a round lower than the previous entry's ...
            if np.isin(falls, off, invert=True).any():  # ... is allowed only where a new run starts
                raise ScenarioError("RealizedSchedules: each run's entries must be sorted by round")
        self.offsets = off
        self.round, self.receiver, self.sender, self.sender_round = cols
        self.weight = w
        for a in (self.offsets, self.round, self.receiver, self.sender, self.weight, self.sender_round):
            a.flags.writeable = False
        self._by_round: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def stack(cls, schedules: Sequence[RealizedSchedule]) -> RealizedSchedules:
        """The columns of several runs' schedules (of one ``N`` and ``T``), in order.

        Raises:
            ScenarioError: no schedules, or schedules of different sizes.
        """
        if not schedules:
            raise ScenarioError("RealizedSchedules.stack: no schedules")
        n, horizon = schedules[0].num_agents, schedules[0].horizon
        if any((s.num_agents, s.horizon) != (n, horizon) for s in schedules):
            raise ScenarioError("RealizedSchedules.stack: schedules of different num_agents or horizon")
        offsets = np.concatenate(([0], np.cumsum([len(s) for s in schedules])))
        return cls(n, horizon, offsets, *(np.concatenate(c) for c in zip(*(s._columns() for s in schedules))))

    @property
    def runs(self) -> int:
        """``R``, the number of runs."""
        return int(self.offsets.size - 1)

    @property
    def run_index(self) -> np.ndarray:
        """The run of every entry (``np.repeat(arange(R), entries per run)``)."""
        return np.repeat(np.arange(self.runs), np.diff(self.offsets))

    def run(self, r: int) -> RealizedSchedule:
        """Run ``r``'s :class:`RealizedSchedule`.

        Raises:
            ScenarioError: ``r`` is not an integer in ``[0, R)``.
        """
        r = check_integer(r, "run", minimum=0, error=ScenarioError, where="RealizedSchedules")
        if r >= self.runs:
            raise ScenarioError(f"RealizedSchedules: run must be < {self.runs} (the number of runs), got {r}")
        k = slice(int(self.offsets[r]), int(self.offsets[r + 1]))
        return RealizedSchedule._view(self.num_agents, self.horizon, self.round[k], self.receiver[k],
                                      self.sender[k], self.weight[k], self.sender_round[k])

    def dense_runs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Round ``t`` of every run as dense arrays ``(R, N, N)``: the weights and the sender rounds (0 where unused).

        Row ``r`` is ``self[r].dense(t)``, built for all runs with one scatter
        of the round's entries (the entries are grouped by round once, on the
        first call).

        Raises:
            ScenarioError: ``t`` is not a round in ``[1, T]``.
        """
        t = check_integer(t, "round", minimum=1, error=ScenarioError, where="RealizedSchedules")
        if t > self.horizon:
            raise ScenarioError(f"RealizedSchedules: round must be <= {self.horizon}, got {t}")
        at, bounds, weight, sender_round = self._by_round if self._by_round is not None else self._group_by_round()
        lo, hi = int(bounds[t - 1]), int(bounds[t])
        n, runs = self.num_agents, self.runs
        weights = np.zeros(runs * n * n)
        rounds = np.zeros(runs * n * n, dtype=np.int64)
        weights[at[lo:hi]] = weight[lo:hi]
        rounds[at[lo:hi]] = sender_round[lo:hi]
        return weights.reshape(runs, n, n), rounds.reshape(runs, n, n)

    def _group_by_round(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The entries grouped by round once, for :meth:`dense_runs`: in the order by round, then run, then the
        run's own order, each entry's flat index ``(run * N + receiver) * N + sender`` into an ``(R, N, N)`` array,
        the start of every round's entries (``bounds[t - 1]:bounds[t]`` are round ``t``'s), and the weights and
        sender rounds in that order."""
        order = np.argsort(self.round, kind="stable")
        n = self.num_agents
        at = (self.run_index[order] * n + self.receiver[order]) * n + self.sender[order]
        bounds = np.searchsorted(self.round[order], np.arange(1, self.horizon + 2))
        self._by_round = (at, bounds, self.weight[order], self.sender_round[order])
        return self._by_round

    def __getitem__(self, r: Any) -> Any:
        """``schedules[r]``: run ``r``'s :class:`RealizedSchedule`; ``schedules[a:b]``: those runs' columns."""
        if isinstance(r, slice):
            picked = range(self.runs)[r]
            if picked.step == 1 or len(picked) <= 1:
                lo = picked.start if len(picked) else 0
                hi = lo + len(picked)
                k = slice(int(self.offsets[lo]), int(self.offsets[hi]))
                return RealizedSchedules(self.num_agents, self.horizon, self.offsets[lo:hi + 1] - self.offsets[lo],
                                         *(c[k] for c in self._columns()[1:]))
            return RealizedSchedules.stack([self.run(i) for i in picked])
        return self.run(r)

    def __len__(self) -> int:
        return self.runs

    def __iter__(self):  # type: ignore[no-untyped-def]
        return (self.run(r) for r in range(self.runs))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RealizedSchedules):
            return NotImplemented
        return (self.num_agents, self.horizon) == (other.num_agents, other.horizon) and all(
            np.array_equal(a, b) for a, b in zip(self._columns(), other._columns()))

    __hash__ = None  # type: ignore[assignment]

    def _columns(self) -> tuple[np.ndarray, ...]:
        return self.offsets, self.round, self.receiver, self.sender, self.weight, self.sender_round

    def __repr__(self) -> str:
        return (f"RealizedSchedules(runs={self.runs}, num_agents={self.num_agents}, horizon={self.horizon}, "
                f"entries={self.weight.size})")
