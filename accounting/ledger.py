"""The privacy ledger: one immutable record per noisy release.

The ledger is the contract between a simulator and the accountant. A
:class:`Release` says *what happened* (who released a noisy value, when, with
which noise and at which scale, and what sensitivity the algorithm claims);
accountants decide what it costs. The accountant never trusts
``claimed_sensitivity``: it is recorded so it can be compared with the
sensitivity the accountant derives itself.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import LedgerFormatError, PrivacyParameterError, UnknownMechanismError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MECHANISMS", "Release", "Ledger"]

MECHANISMS: dict[str, str] = {"laplace": "l1", "gaussian": "l2"}
"""Known mechanisms and the norm in which their sensitivity is measured."""


def _real(value: Any) -> bool:
    """Whether ``value`` is a real number (a Python or numpy float or integer), not a bool (``True`` is no scale).

    Example:
        >>> _real(np.int64(2)), _real(0.5), _real(True), _real("1")
        (True, True, False, False)
    """
    return type(value) is float or (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)))


@dataclass(frozen=True, init=False)
class Release:
    """One noisy release.

    Attributes:
        agent: the releasing agent.
        round: the agent's round (1-based).
        time: simulated time of the release.
        mechanism: ``"laplace"`` (i.i.d. Laplace(0, scale) per coordinate) or
            ``"gaussian"`` (i.i.d. N(0, scale^2) per coordinate).
        scale: Laplace ``b`` or Gaussian standard deviation, > 0.
        dimension: number of noised coordinates.
        claimed_sensitivity: the algorithm's claimed sensitivity of the masked
            value (L1 for Laplace, L2 for Gaussian); ``nan`` if none is claimed.
        channel: the message channel the release was sent on.
        receiver: ``None`` for a broadcast, else the single receiver (unicast).

    Every record is made by its constructor, which validates the fields
    before storing them; a record cannot change afterwards (assigning a field
    raises ``dataclasses.FrozenInstanceError``).

    Raises:
        PrivacyParameterError: a nonpositive or non-finite scale, a bad dimension.
        UnknownMechanismError: a mechanism not in :data:`MECHANISMS`.

    Example:
        >>> Release(agent=0, round=1, time=1.0, mechanism="laplace", scale=2.0,
        ...         dimension=2, claimed_sensitivity=1.0).norm
        'l1'
    """

    agent: int
    round: int
    time: float
    mechanism: str
    scale: float
    dimension: int
    claimed_sensitivity: float = math.nan
    channel: str = "y"
    receiver: int | None = None

    def __init__(
        self,
        agent: int,
        round: int,  # noqa: A002 - the field's name
        time: float,
        mechanism: str,
        scale: float,
        dimension: int,
        claimed_sensitivity: float = math.nan,
        channel: str = "y",
        receiver: int | None = None,
    ) -> None:
        # The dataclass's own __init__ would set the nine fields one
        # object.__setattr__ call at a time (five times slower); simulators make
        # one record per release, so the fields are validated first and then
        # stored in one step. Afterwards the record is frozen like any other.
        if mechanism not in MECHANISMS:
            raise UnknownMechanismError(
                f"agent {agent}, round {round}: unknown mechanism {mechanism!r}; known: {', '.join(MECHANISMS)}"
            )
        if not (_real(scale) and math.isfinite(scale) and scale > 0):
            raise PrivacyParameterError(
                f"agent {agent}, round {round}: noise scale must be positive and finite, got {scale!r} (channel "
                f"{channel!r})"
            )
        if not (type(dimension) is int or int(dimension) == dimension) or dimension < 1:
            raise PrivacyParameterError(
                f"agent {agent}, round {round}: dimension must be a positive integer, got {dimension!r}"
            )
        if not (_real(claimed_sensitivity) and not claimed_sensitivity < 0):
            raise PrivacyParameterError(
                f"agent {agent}, round {round}: channel {channel!r}: claimed sensitivity must be >= 0 (or nan: not "
                f"stated), got {claimed_sensitivity!r}"
            )
        self.__dict__.update(
            agent=agent, round=round, time=time, mechanism=mechanism, scale=float(scale), dimension=dimension,
            claimed_sensitivity=float(claimed_sensitivity), channel=channel, receiver=receiver,
        )

    @property
    def norm(self) -> str:
        """``"l1"`` for Laplace, ``"l2"`` for Gaussian."""
        return MECHANISMS[self.mechanism]

    def copy_for(self, agent: int, time: float, receiver: int | None = None) -> Release:
        """The same release (round, mechanism, scale, dimension, claim, channel) by another agent or at another time.

        The copy is made by the constructor (validated like any record): a
        simulator declares one record per round and channel and stamps one
        copy per releasing agent.

        Args:
            agent: the releasing agent.
            time: simulated time of the release.
            receiver: ``None`` for a broadcast, else the single receiver.

        Returns:
            A new :class:`Release`, equal to ``Release(agent=agent, time=time,
            receiver=receiver, <the other fields of self>)``.

        Example:
            >>> r = Release(0, 3, 1.0, "laplace", 2.0, 2, 1.0)
            >>> r.copy_for(5, 1.5) == Release(5, 3, 1.5, "laplace", 2.0, 2, 1.0)
            True
        """
        return type(self)(agent, self.round, time, self.mechanism, self.scale, self.dimension,
                          self.claimed_sensitivity, self.channel, receiver)


_COLUMNS = [f.name for f in fields(Release)]


class Ledger:
    """An ordered, immutable collection of :class:`Release` records.

    A ledger is built either from :class:`Release` objects, or with
    :meth:`from_columns` from a few validated records and one compact row per
    release (the form simulators use: 32 bytes per release instead of an
    object, and the :class:`Release` objects are made on first iteration).
    Both forms behave the same in every public method (length, iteration,
    indexing, equality, ``repr``, :meth:`for_agent`, :attr:`agents`,
    :meth:`summary`, the table, JSON, file and pickle forms): a test builds
    random ledgers both ways and compares them all.

    Example:
        >>> led = Ledger([Release(0, 1, 1.0, "laplace", 2.0, 2, 1.0)])
        >>> len(led), led.to_dataframe().shape
        (1, (1, 9))
    """

    def __init__(self, releases: Iterable[Release] = ()) -> None:
        self._objects: tuple[Release, ...] | None = tuple(releases)
        self._cols: dict[str, Any] | None = None
        for r in self._objects:
            if not isinstance(r, Release):
                raise LedgerFormatError(f"a ledger holds Release records, got {type(r).__name__}")

    @classmethod
    def from_columns(
        cls,
        records: Sequence[Release],
        *,
        record: Any,
        agent: Any,
        time: Any,
        receiver: Any = None,
    ) -> Ledger:
        """A ledger whose release ``k`` is ``records[record[k]].copy_for(agent[k], time[k], receiver[k])``.

        ``records`` are validated :class:`Release` objects (typically one per
        round and channel); each row stamps one of them with the releasing
        agent, the time and, for unicast, the receiver.

        Args:
            records: the distinct declarations.
            record: per release, an index into ``records``.
            agent: per release, the releasing agent (nonnegative).
            time: per release, the simulated time (finite).
            receiver: per release, the receiver or ``-1`` for a broadcast;
                ``None`` if every release is a broadcast.

        Returns:
            A :class:`Ledger`.

        Raises:
            LedgerFormatError: a record that is not a :class:`Release`, columns
                of different lengths, an index outside ``records``, a negative
                agent or a non-finite time (the message names the row).

        Example:
            >>> led = Ledger.from_columns([Release(0, 1, 0.0, "laplace", 2.0, 1)], record=[0, 0], agent=[3, 4],
            ...                           time=[0.5, 0.7])
            >>> [(r.agent, r.round, r.time) for r in led]
            [(3, 1, 0.5), (4, 1, 0.7)]
        """
        recs = tuple(records)
        for r in recs:
            if not isinstance(r, Release):
                raise LedgerFormatError(f"a ledger holds Release records, got {type(r).__name__}")
        given = {"record": record, "agent": agent, "time": time}
        if receiver is not None:
            given["receiver"] = receiver
        cols = {}
        for name, values in given.items():
            col = np.asarray(values)
            if col.ndim != 1:
                raise LedgerFormatError(f"ledger column {name} must be one-dimensional, got shape {col.shape}")
            if col.size and name != "time" and col.dtype.kind not in "iu":
                raise LedgerFormatError(f"ledger column {name} must hold integers, got dtype {col.dtype}")
            if col.size and name == "time" and col.dtype.kind not in "iuf":
                raise LedgerFormatError(f"ledger column time must hold numbers, got dtype {col.dtype}")
            cols[name] = col.astype(np.float64 if name == "time" else np.int64)
        m = cols["record"].size
        if receiver is None:
            cols["receiver"] = np.full(m, -1, dtype=np.int64)
        for name, col in cols.items():
            if col.size != m:
                raise LedgerFormatError(f"ledger columns differ in length: record has {m} rows, {name} {col.size}")
        checks = (
            ("record", (cols["record"] < 0) | (cols["record"] >= len(recs)), f"an index into the {len(recs)} records"),
            ("agent", cols["agent"] < 0, "a nonnegative integer"),
            ("time", ~np.isfinite(cols["time"]), "finite"),
            ("receiver", cols["receiver"] < -1, "-1 (broadcast) or a nonnegative integer"),
        )
        for name, bad, what in checks:
            if bad.any():
                k = int(np.argmax(bad))
                raise LedgerFormatError(f"ledger row {k}: {name} must be {what}, got {cols[name][k].item()!r}")
        for col in cols.values():
            col.flags.writeable = False
        return cls._of_columns({"records": recs, **cols})

    @classmethod
    def _of_columns(cls, cols: dict[str, Any]) -> Ledger:
        """An (empty) ledger from the constructor, given the validated read-only columns ``cols``."""
        led = cls()
        led._objects = None
        led._cols = cols
        return led

    def __getstate__(self) -> dict[str, Any]:
        """Pickle one form only: the rows of a columnar ledger (not the records made from them), else the records."""
        if self._cols is not None:
            return {"_objects": None, "_cols": self._cols}
        return {"_objects": self._objects, "_cols": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, also ledgers pickled by versions that stored only a tuple ``_releases``."""
        if "_releases" in state:
            state = {"_objects": tuple(state["_releases"]), "_cols": None}
        self.__dict__.update(state)
        if self._cols is not None:  # arrays come back writeable from a pickle
            for name, col in self._cols.items():
                if name != "records":
                    col.flags.writeable = False

    @property
    def _releases(self) -> tuple[Release, ...]:
        """Every release as a :class:`Release` (made once, on first use, for a columnar ledger)."""
        if self._objects is None:
            c = self._cols
            assert c is not None  # a ledger holds its releases as objects, columns or both
            # release k is records[record[k]].copy_for(agent[k], time[k], receiver[k]), made by the
            # constructor; the records' other fields are read once, not once per release
            decl = [(type(r), r.round, r.mechanism, r.scale, r.dimension, r.claimed_sensitivity, r.channel)
                    for r in c["records"]]
            self._objects = tuple(
                cls(a, rnd, t, mech, scale, dim, claim, channel, None if j < 0 else j)
                for (cls, rnd, mech, scale, dim, claim, channel), a, t, j in zip(
                    (decl[k] for k in c["record"].tolist()), c["agent"].tolist(), c["time"].tolist(),
                    c["receiver"].tolist())
            )
        return self._objects

    def __len__(self) -> int:
        return int(self._cols["record"].size) if self._cols is not None else len(self._releases)

    def __iter__(self) -> Iterator[Release]:
        return iter(self._releases)

    def __getitem__(self, k: int) -> Release:
        return self._releases[k]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ledger):
            return NotImplemented
        return self._releases == other._releases

    def __repr__(self) -> str:
        return f"Ledger({len(self)} releases)"

    def for_agent(self, agent: int) -> Ledger:
        """The releases of one agent, in order (a columnar ledger stays columnar: no record is made).

        Example:
            >>> led = Ledger.from_columns([Release(0, 1, 0.0, "laplace", 2.0, 1)], record=[0, 0, 0], agent=[3, 4, 3],
            ...                           time=[0.5, 0.7, 0.9])
            >>> [r.time for r in led.for_agent(3)] == [r.time for r in led if r.agent == 3]
            True
        """
        if self._cols is not None:
            c = self._cols
            keep = c["agent"] == agent
            cols = {name: (col if name == "records" else col[keep]) for name, col in c.items()}
            for name, col in cols.items():
                if name != "records":
                    col.flags.writeable = False
            return Ledger._of_columns(cols)
        return Ledger(r for r in self._releases if r.agent == agent)

    @property
    def agents(self) -> list[int]:
        """Agents that released something, sorted."""
        if self._cols is not None:
            return np.unique(self._cols["agent"]).tolist()
        return sorted({r.agent for r in self._releases})

    def to_dataframe(self) -> pd.DataFrame:
        """One row per release, columns = the :class:`Release` fields."""
        import pandas as pd

        if self._cols is not None and len(self):  # columnar: one row per record, then take
            c = self._cols
            recs = pd.DataFrame([asdict(r) for r in c["records"]], columns=_COLUMNS)
            df = recs.iloc[c["record"]].reset_index(drop=True)
            df["agent"] = c["agent"]
            df["time"] = c["time"]
            broadcast = c["receiver"] < 0
            df["receiver"] = pd.arrays.IntegerArray(np.where(broadcast, 0, c["receiver"]), broadcast)
            return df
        df = pd.DataFrame([asdict(r) for r in self._releases], columns=_COLUMNS)
        df["receiver"] = df["receiver"].astype("Int64")
        return df

    @classmethod
    def from_dataframe(cls, df: pd.DataFrame) -> Ledger:
        """Rebuild a ledger from :meth:`to_dataframe` output.

        Raises:
            LedgerFormatError: a required column is missing.
        """
        import pandas as pd

        missing = [c for c in _COLUMNS if c not in df.columns and c not in ("channel", "receiver", "claimed_sensitivity")]
        if missing:
            raise LedgerFormatError(f"ledger table lacks column(s) {missing}")
        out = []
        for row in df.to_dict("records"):
            rec = row.get("receiver")
            out.append(Release(
                agent=int(row["agent"]), round=int(row["round"]), time=float(row["time"]),
                mechanism=str(row["mechanism"]), scale=float(row["scale"]), dimension=int(row["dimension"]),
                claimed_sensitivity=float(row.get("claimed_sensitivity", math.nan)),
                channel=str(row.get("channel", "y")),
                receiver=None if rec is None or pd.isna(rec) else int(rec),
            ))
        return cls(out)

    def to_json(self) -> str:
        """The ledger as a JSON list of records (``NaN`` sensitivity written as ``null``)."""
        recs = []
        for r in self._releases:
            d = asdict(r)
            if math.isnan(d["claimed_sensitivity"]):
                d["claimed_sensitivity"] = None
            recs.append(d)
        return json.dumps(recs)

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        """Inverse of :meth:`to_json`.

        Raises:
            LedgerFormatError: not valid JSON, or a record with unknown fields.
        """
        try:
            recs = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LedgerFormatError(f"ledger is not valid JSON: {exc}") from None
        out = []
        for k, d in enumerate(recs):
            if d.get("claimed_sensitivity") is None:
                d["claimed_sensitivity"] = math.nan
            try:
                out.append(Release(**d))
            except TypeError as exc:
                raise LedgerFormatError(f"ledger record {k}: {exc}") from None
        return cls(out)

    def save(self, path: str | Path) -> None:
        """Write to ``.json``, ``.parquet`` or ``.csv`` (chosen by the suffix)."""
        path = Path(path)
        if path.suffix == ".json":
            path.write_text(self.to_json())
        elif path.suffix == ".parquet":
            self.to_dataframe().to_parquet(path)
        elif path.suffix == ".csv":
            self.to_dataframe().to_csv(path, index=False)
        else:
            raise LedgerFormatError(f"unknown ledger file type {path.suffix!r}; use .json, .parquet or .csv")

    @classmethod
    def load(cls, path: str | Path) -> Ledger:
        """Read a file written by :meth:`save`."""
        path = Path(path)
        if path.suffix == ".json":
            return cls.from_json(path.read_text())
        import pandas as pd

        if path.suffix == ".parquet":
            return cls.from_dataframe(pd.read_parquet(path))
        if path.suffix == ".csv":
            return cls.from_dataframe(pd.read_csv(path))
        raise LedgerFormatError(f"unknown ledger file type {path.suffix!r}; use .json, .parquet or .csv")

    def summary(self) -> dict[str, Any]:
        """Counts per mechanism and the number of agents and rounds."""
        return {
            "releases": len(self),
            "agents": len(self.agents),
            "rounds": len({r.round for r in self._releases}),
            "by_mechanism": {m: sum(r.mechanism == m for r in self._releases) for m in MECHANISMS},
        }
