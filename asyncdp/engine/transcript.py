"""The eavesdropper's view: every transmission of a run, in send order.

A :class:`Transcript` records one :class:`Transmission` per (message copy,
receiver): a broadcast to ``d`` neighbours is ``d`` transmissions sharing one
``message_id``. Lost messages are recorded too (``lost=True``,
``receive_time=nan``): they were sent, only not delivered.

Storage: during a run, :meth:`Transcript.append` adds to Python lists (cheap);
the first read (or :meth:`Transcript.freeze`) builds read-only numpy columns,
with payloads stacked into one 2-D float array padded with NaN to the widest
payload (each row's true length is its ``dim``). Appending after a read is
allowed until :meth:`~Transcript.freeze` and simply invalidates the columns.

Files and tables: :meth:`Transcript.save` / :meth:`Transcript.load`
(``.npz``, ``.parquet``, ``.json``, chosen by suffix; every round trip is
exact) and :meth:`Transcript.to_dataframe` / :meth:`Transcript.from_dataframe`
are implemented in :mod:`asyncdp.engine.transcript_io`, which describes the formats.

Example:
    >>> tr = Transcript()
    >>> mid = tr.new_message_id()
    >>> for j, t in ((1, 0.5), (2, None)):
    ...     tr.append(1, 0, j, "y", 0.0, t, t is None, [1.0, 2.0], mid)
    >>> len(tr), tr.messages_lost
    (2, 1)
    >>> tr.observations("y")[(1, 0)]
    array([1., 2.])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import KW_ONLY, InitVar, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from topology.validation import check_integer, check_real

from ..errors import TranscriptError  # defined in asyncdp.errors, re-exported here

__all__ = ["Transmission", "Transcript", "TranscriptError", "COLUMNS", "FORMAT_NAME", "FORMAT_VERSION"]

COLUMNS: tuple[str, ...] = (
    "round",
    "sender",
    "receiver",
    "channel",
    "send_time",
    "receive_time",
    "lost",
    "message_id",
    "dim",
)
"""Scalar columns of the table form, followed by ``payload_0 .. payload_{D-1}``."""

_INT_COLS = ("round", "sender", "receiver", "message_id", "dim")


# --------------------------------------------------------------------------- validation


def _int(value: Any, name: str) -> int:
    return check_integer(value, name, minimum=0, error=TranscriptError, where="transmission")


def _payload(value: Any) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise TranscriptError(f"transmission payload must be numeric, got {value!r}") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise TranscriptError(f"transmission payload must be 1-D, got shape {arr.shape}")
    arr.flags.writeable = False
    return arr


def _check(
    round: Any,
    sender: Any,
    receiver: Any,
    channel: Any,
    send_time: Any,
    receive_time: Any,
    lost: Any,
) -> tuple[int, int, int, str, float, float, bool]:
    r, s, v = _int(round, "round"), _int(sender, "sender"), _int(receiver, "receiver")
    if not isinstance(channel, str) or not channel:
        raise TranscriptError(f"transmission channel must be a nonempty string, got {channel!r}")
    st = check_real(send_time, "send_time", error=TranscriptError, where="transmission")
    if not isinstance(lost, (bool, np.bool_)):
        raise TranscriptError(f"transmission lost must be True or False, got {lost!r}")
    if lost:
        if receive_time is not None and not (isinstance(receive_time, numbers.Real) and math.isnan(receive_time)):
            raise TranscriptError(
                f"lost transmission (round {r}, {s} -> {v}) must have receive_time None or nan, got {receive_time!r}"
            )
        rt = math.nan
    else:
        if (
            receive_time is None
            or isinstance(receive_time, bool)
            or not isinstance(receive_time, numbers.Real)
            or not math.isfinite(receive_time)
            or receive_time < st
        ):
            raise TranscriptError(
                f"delivered transmission (round {r}, {s} -> {v}) needs a finite receive_time >= "
                f"send_time {st!r}, got {receive_time!r}"
            )
        rt = float(receive_time)
    return r, s, v, channel, st, rt, bool(lost)


# --------------------------------------------------------------------------- one transmission


@dataclass(frozen=True, eq=False)
class Transmission:
    """One message copy on one link, as an eavesdropper on the wire sees it.

    Args:
        round: the sender's round number.
        sender, receiver: node indices (link ``sender -> receiver``).
        channel: name of the transmitted quantity (e.g. ``"y"``).
        send_time: simulated send time (finite).
        receive_time: delivery time (``nan`` if lost; ``None`` is accepted for lost).
        lost: whether the network dropped it.
        payload: the transmitted vector (stored as a read-only 1-D float copy).
        message_id: shared by the copies of one broadcast.
        _checked: internal (keyword only): the fields are known valid and
            already in their stored types (rows read back from a transcript's
            own columns), so the checks are skipped.

    Raises:
        TranscriptError: on an invalid field.

    Example:
        >>> Transmission(1, 0, 1, "y", 0.0, None, True, [3.0], 7).receive_time
        nan
    """

    round: int
    sender: int
    receiver: int
    channel: str
    send_time: float
    receive_time: float
    lost: bool
    payload: np.ndarray
    message_id: int
    _: KW_ONLY
    _checked: InitVar[bool] = False

    def __post_init__(self, _checked: bool) -> None:
        if _checked:
            return
        vals = _check(
            self.round, self.sender, self.receiver, self.channel, self.send_time, self.receive_time, self.lost
        )
        for name, v in zip(("round", "sender", "receiver", "channel", "send_time", "receive_time", "lost"), vals):
            object.__setattr__(self, name, v)
        object.__setattr__(self, "payload", _payload(self.payload))
        object.__setattr__(self, "message_id", _int(self.message_id, "message_id"))

    @classmethod
    def _trusted(cls, *values: Any) -> Transmission:
        """A transmission from fields read back from a transcript's columns (valid, stored types): no checks."""
        return cls(*values, _checked=True)

    def _key(self) -> tuple[Any, ...]:
        rt = "nan" if math.isnan(self.receive_time) else self.receive_time
        return (self.round, self.sender, self.receiver, self.channel, self.send_time, rt, self.lost, self.message_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transmission):
            return NotImplemented
        return self._key() == other._key() and np.array_equal(self.payload, other.payload, equal_nan=True)

    def __hash__(self) -> int:
        return hash((self._key(), self.payload.shape))


_FIELDS = ("round", "sender", "receiver", "channel", "send_time", "receive_time", "lost", "payload", "message_id")
_LOST = _FIELDS.index("lost")


# --------------------------------------------------------------------------- transcript


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class Transcript:
    """Append-only record of all transmissions of a run.

    Example:
        >>> tr = Transcript()
        >>> tr.append(1, 0, 1, "y", 0.0, 0.1, False, [1.0], tr.new_message_id())
        >>> tr.payloads("y")
        array([[1.]])
    """

    def __init__(self) -> None:
        self._pending_rows: list[tuple[Any, ...]] = []  # one tuple of _FIELDS per transmission, until frozen
        self._cols: dict[str, np.ndarray] | None = None
        self._frozen = False
        self._next_id = 0

    # ------------------------------------------------------------------ building

    def new_message_id(self) -> int:
        """A message id not used so far (give all copies of one broadcast the same id)."""
        mid = self._next_id
        self._next_id += 1
        return mid

    def append(
        self,
        round: int,
        sender: int,
        receiver: int,
        channel: str,
        send_time: float,
        receive_time: float | None,
        lost: bool,
        payload: Any,
        message_id: int,
    ) -> None:
        """Record one transmission (arguments as the fields of :class:`Transmission`).

        The payload is copied, so the caller may reuse its array.

        Raises:
            TranscriptError: on an invalid field, or if the transcript is frozen.
        """
        if self._frozen:
            raise TranscriptError("cannot append to a frozen transcript")
        vals = _check(round, sender, receiver, channel, send_time, receive_time, lost)
        p = _payload(payload)
        mid = _int(message_id, "message_id")
        self._pending_rows.append((*vals, p, mid))
        if mid >= self._next_id:
            self._next_id = mid + 1
        self._cols = None

    def append_trusted(
        self, round: int, sender: int, receiver: int, channel: str, send_time: float,
        receive_time: float, lost: bool, payload: np.ndarray, message_id: int,
    ) -> None:
        """Fast path of :meth:`append`: one row of :meth:`extend_trusted` (same contract)."""
        self.extend_trusted([(round, sender, receiver, channel, send_time, receive_time, lost, payload, message_id)])

    def extend_trusted(self, rows: list[tuple[Any, ...]]) -> None:
        """Fast path of :meth:`append` for the engines: many well-typed rows at once.

        No validation. Each row is a tuple of the :class:`Transmission` fields
        in order (``round, sender, receiver, channel, send_time,
        receive_time, lost, payload, message_id``) with Python
        ``int``/``float``/``bool`` fields, ``receive_time`` ``nan`` when lost,
        and a 1-D float ``payload`` that the caller has already made read-only
        (it is stored without a copy).
        """
        if self._frozen:
            raise TranscriptError("cannot append to a frozen transcript")
        if not rows:
            return
        self._pending_rows.extend(rows)
        self._next_id = max(self._next_id, max(row[-1] for row in rows) + 1)
        self._cols = None

    def extend(self, transmissions: Iterable[Transmission]) -> None:
        """Append every :class:`Transmission` of ``transmissions``, in order."""
        for t in transmissions:
            if not isinstance(t, Transmission):
                raise TranscriptError(f"extend expects Transmission objects, got {t!r}")
            self.append(*(getattr(t, f) for f in _FIELDS))

    def freeze(self) -> Transcript:
        """Build the columns and forbid further appends; returns ``self``."""
        self._columns()
        self._pending_rows = []
        self._frozen = True
        return self

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, also transcripts pickled by versions that kept one list per field (``_lists``)."""
        lists = state.pop("_lists", None)
        if lists is not None:
            state["_pending_rows"] = list(zip(*(lists[f] for f in _FIELDS)))
        self.__dict__.update(state)

    @property
    def frozen(self) -> bool:
        """Whether appends are forbidden."""
        return self._frozen

    def _columns(self) -> dict[str, np.ndarray]:
        if self._cols is not None:
            return self._cols
        n = len(self._pending_rows)
        L = dict(zip(_FIELDS, map(list, zip(*self._pending_rows)))) if n else {c: [] for c in _FIELDS}
        payloads: list[np.ndarray] = L["payload"]
        dims = np.fromiter((p.shape[0] for p in payloads), dtype=np.int64, count=n)
        width = int(dims.max()) if n else 0
        if n and bool((dims == width).all()):
            P = np.stack(payloads) if width else np.empty((n, 0))
        else:
            P = np.full((n, width), np.nan)
            for i, p in enumerate(payloads):
                P[i, : p.shape[0]] = p
        cols = {
            "round": np.array(L["round"], dtype=np.int64),
            "sender": np.array(L["sender"], dtype=np.int64),
            "receiver": np.array(L["receiver"], dtype=np.int64),
            "channel": np.array(L["channel"], dtype=str) if n else np.array([], dtype="<U1"),
            "send_time": np.array(L["send_time"], dtype=np.float64),
            "receive_time": np.array(L["receive_time"], dtype=np.float64),
            "lost": np.array(L["lost"], dtype=bool),
            "message_id": np.array(L["message_id"], dtype=np.int64),
            "dim": dims,
            "payload": P.reshape(n, width),
        }
        self._cols = {k: _readonly(v) for k, v in cols.items()}
        return self._cols

    @classmethod
    def _from_columns(cls, cols: dict[str, Any]) -> Transcript:
        """A frozen transcript from (validated) columns."""
        n = len(cols["round"])
        for c in _INT_COLS:
            cols[c] = np.asarray(cols[c], dtype=np.int64).reshape(n)
        chans = [str(c) for c in cols["channel"]]
        cols["channel"] = np.array(chans, dtype=str) if n else np.array([], dtype="<U1")
        for c in ("send_time", "receive_time"):
            cols[c] = np.asarray(cols[c], dtype=np.float64).reshape(n)
        cols["lost"] = np.asarray(cols["lost"], dtype=bool).reshape(n)
        P = np.asarray(cols["payload"], dtype=np.float64)
        if P.ndim != 2 or P.shape[0] != n:
            raise TranscriptError(f"payload block must have shape ({n}, D), got {P.shape}")
        _validate_columns(cols, P.shape[1])
        width = int(cols["dim"].max()) if n else 0
        P = P[:, :width].copy()
        P[np.arange(width)[None, :] >= cols["dim"][:, None]] = np.nan
        cols["payload"] = P
        tr = cls()
        tr._cols = {k: _readonly(np.array(v, copy=True)) for k, v in cols.items() if k in _STORED}
        tr._frozen = True
        tr._next_id = int(cols["message_id"].max()) + 1 if n else 0
        return tr

    def _subset(self, index: Any) -> Transcript:
        c = self._columns()
        return Transcript._from_columns({k: v[index] for k, v in c.items()})

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return len(self._cols["round"]) if self._cols is not None else len(self._pending_rows)

    def __iter__(self) -> Iterator[Transmission]:
        c = self._columns()
        P, dims = c["payload"], c["dim"].tolist()
        rows = zip(
            c["round"].tolist(),
            c["sender"].tolist(),
            c["receiver"].tolist(),
            c["channel"].tolist(),
            c["send_time"].tolist(),
            c["receive_time"].tolist(),
            c["lost"].tolist(),
            c["message_id"].tolist(),
        )
        for i, (r, s, v, ch, st, rt, lo, mid) in enumerate(rows):
            yield Transmission._trusted(r, s, v, ch, st, rt, lo, P[i, : dims[i]], mid)

    def __getitem__(self, index: int) -> Transmission:
        """The ``index``-th transmission (negative indices count from the end)."""
        n = len(self)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"transcript indices must be integers, got {index!r}")
        i = int(index) + n if index < 0 else int(index)
        if not 0 <= i < n:
            raise IndexError(f"transmission index {index} out of range for {n} transmissions")
        c = self._columns()
        d = int(c["dim"][i])
        return Transmission._trusted(
            int(c["round"][i]),
            int(c["sender"][i]),
            int(c["receiver"][i]),
            str(c["channel"][i]),
            float(c["send_time"][i]),
            float(c["receive_time"][i]),
            bool(c["lost"][i]),
            c["payload"][i, :d],
            int(c["message_id"][i]),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transcript):
            return NotImplemented
        a, b = self._columns(), other._columns()
        return all(
            a[k].shape == b[k].shape and np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f") for k in _STORED
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Transcript({len(self)} transmissions, {self.messages_lost} lost, channels={self.channels})"

    def column(self, name: str) -> np.ndarray:
        """A read-only column: one of :data:`COLUMNS` or ``"payload"`` (the padded 2-D block)."""
        c = self._columns()
        if name not in c:
            raise TranscriptError(f"unknown transcript column {name!r}; known: {', '.join(_STORED)}")
        return c[name]

    @property
    def messages_sent(self) -> int:
        """Number of transmissions (lost ones included)."""
        return len(self)

    @property
    def messages_lost(self) -> int:
        """Number of lost transmissions."""
        if self._cols is None and not self._frozen:
            return sum(row[_LOST] for row in self._pending_rows)
        return int(self._columns()["lost"].sum())

    @property
    def messages_delivered(self) -> int:
        """Number of delivered transmissions."""
        return self.messages_sent - self.messages_lost

    @property
    def channels(self) -> list[str]:
        """Sorted distinct channel names."""
        return sorted(set(self._columns()["channel"].tolist()))

    def payloads(self, channel: str | None = None) -> np.ndarray:
        """Payloads in send order as a 2-D array (a copy).

        Args:
            channel: only this channel's transmissions (None: all).

        Returns:
            Shape ``(m, D)``; ``D`` is the widest selected payload, shorter
            payloads are padded with NaN (see the ``dim`` column).
        """
        c = self._columns()
        if channel is None:
            return c["payload"].copy()
        sel = c["channel"] == channel
        width = int(c["dim"][sel].max()) if sel.any() else 0
        return c["payload"][sel, :width].copy()

    def for_round(self, t: int) -> Transcript:
        """The (frozen) sub-transcript of round ``t``'s transmissions."""
        return self._subset(self._columns()["round"] == int(t))

    def select(self, mask: Sequence[bool] | np.ndarray) -> Transcript:
        """The (frozen) sub-transcript of the rows where ``mask`` is True."""
        m = np.asarray(mask, dtype=bool)
        if m.shape != (len(self),):
            raise TranscriptError(f"mask must have shape ({len(self)},), got {m.shape}")
        return self._subset(m)

    # ------------------------------------------------------------------ eavesdropper

    def _rows(self, channel: str, include_lost: bool) -> np.ndarray:
        c = self._columns()
        if len(self) and channel not in set(c["channel"].tolist()):
            raise TranscriptError(f"no transmissions on channel {channel!r}; channels: {self.channels}")
        sel = c["channel"] == channel
        if not include_lost:
            sel &= ~c["lost"]
        return np.flatnonzero(sel)

    def _grouped(self, rows: np.ndarray, keys: tuple[str, ...], channel: str) -> dict[tuple[int, ...], np.ndarray]:
        c = self._columns()
        if rows.size == 0:
            return {}
        kcols = [c[k][rows] for k in keys]
        order = np.lexsort(kcols[::-1])
        rows = rows[order]
        kcols = [k[order] for k in kcols]
        new = np.ones(rows.size, dtype=bool)
        new[1:] = np.any([k[1:] != k[:-1] for k in kcols], axis=0)
        first = rows[np.maximum.accumulate(np.where(new, np.arange(rows.size), 0))]
        bits = c["payload"].view(np.uint64)
        bad = (c["dim"][rows] != c["dim"][first]) | np.any(bits[rows] != bits[first], axis=1)
        if bad.any():
            i = int(np.argmax(bad))
            a, b = int(first[i]), int(rows[i])
            where = ", ".join(f"{k} {int(c[k][a])}" for k in keys)
            hint = "" if "receiver" in keys else "; unicast? use observations_by_link()"
            raise TranscriptError(
                f"channel {channel!r}, {where}: different payloads to receivers {int(c['receiver'][a])} "
                f"and {int(c['receiver'][b])} (message ids {int(c['message_id'][a])}, "
                f"{int(c['message_id'][b])}){hint}"
            )
        out: dict[tuple[int, ...], np.ndarray] = {}
        P, dims = c["payload"], c["dim"]
        for r in rows[new].tolist():
            out[tuple(int(c[k][r]) for k in keys)] = P[r, : dims[r]]
        return out

    def observations(self, channel: str = "y", include_lost: bool = True) -> dict[tuple[int, int], np.ndarray]:
        """The broadcast payload of every ``(round, sender)`` on ``channel``.

        Args:
            channel: the channel to read.
            include_lost: also use lost transmissions (the eavesdropper sees
                them leave the sender).

        Returns:
            ``{(round, sender): payload}`` (read-only 1-D arrays), sorted by key.

        Raises:
            TranscriptError: if ``channel`` never occurs in a nonempty
                transcript, or one ``(round, sender)`` sent different payloads
                (unicast -- use :meth:`observations_by_link`).
        """
        rows = self._rows(channel, include_lost)
        return self._grouped(rows, ("round", "sender"), channel)  # type: ignore[return-value]

    def observations_by_link(
        self, channel: str = "y", include_lost: bool = True
    ) -> dict[tuple[int, int, int], np.ndarray]:
        """The payload of every ``(round, sender, receiver)`` on ``channel``.

        Raises:
            TranscriptError: if ``channel`` never occurs in a nonempty
                transcript, or one link carried two different payloads in one round.
        """
        rows = self._rows(channel, include_lost)
        return self._grouped(rows, ("round", "sender", "receiver"), channel)  # type: ignore[return-value]
    # ------------------------------------------------------------------ tables and files (asyncdp.engine.transcript_io)

    def to_dataframe(self) -> Any:
        """One row per transmission: :data:`COLUMNS` then ``payload_0 .. payload_{D-1}`` (NaN-padded).

        See :func:`asyncdp.engine.transcript_io.to_dataframe`.

        Returns:
            A ``pandas.DataFrame``.
        """
        from .transcript_io import to_dataframe

        return to_dataframe(self)

    @classmethod
    def from_dataframe(cls, df: Any) -> Transcript:
        """Inverse of :meth:`to_dataframe` (a missing ``dim`` column means every payload is full width).

        See :func:`asyncdp.engine.transcript_io.from_dataframe`.

        Raises:
            TranscriptError: on missing columns, non-contiguous ``payload_j`` columns or invalid values.
        """
        from .transcript_io import from_dataframe

        return from_dataframe(df, cls)

    def save(self, path: str | Path) -> Path:
        """Write to ``path``; the suffix (``.npz``, ``.parquet``, ``.json``) selects the format.

        See :func:`asyncdp.engine.transcript_io.save`.

        Returns:
            The path written.

        Raises:
            TranscriptError: on an unknown suffix.
        """
        from .transcript_io import save

        return save(self, path)

    @classmethod
    def load(cls, path: str | Path) -> Transcript:
        """Read a transcript written by :meth:`save` (format chosen by suffix).

        See :func:`asyncdp.engine.transcript_io.load`.

        Raises:
            TranscriptError: on an unknown suffix or a malformed file.
            FileNotFoundError: if ``path`` does not exist.
        """
        from .transcript_io import load

        return load(path, cls)


_STORED = (*COLUMNS, "payload")


def _validate_columns(cols: dict[str, np.ndarray], width: int) -> None:
    for k in _INT_COLS:
        if cols[k].size and int(cols[k].min()) < 0:
            raise TranscriptError(f"transcript column {k!r} has a negative entry {int(cols[k].min())}")
    if cols["dim"].size and int(cols["dim"].max()) > width:
        raise TranscriptError(f"a 'dim' entry ({int(cols['dim'].max())}) exceeds the {width} payload columns")
    st, rt, lost = cols["send_time"], cols["receive_time"], cols["lost"]
    if not np.all(np.isfinite(st)):
        raise TranscriptError("transcript column 'send_time' must be finite")
    bad = lost & ~np.isnan(rt)
    bad |= ~lost & ~(np.isfinite(rt) & (rt >= st))
    if bad.any():
        i = int(np.argmax(bad))
        raise TranscriptError(
            f"transmission {i}: receive_time {rt[i]!r} inconsistent with lost={bool(lost[i])} and send_time {st[i]!r}"
        )


# the file formats' constants, importable from here as before; imported last, since transcript_io
# imports this module's names (either module may be imported first)
from .transcript_io import FORMAT_NAME, FORMAT_VERSION  # noqa: E402
