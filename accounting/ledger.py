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
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import LedgerFormatError, PrivacyParameterError, UnknownMechanismError

__all__ = ["MECHANISMS", "Release", "Ledger"]

MECHANISMS: dict[str, str] = {"laplace": "l1", "gaussian": "l2"}
"""Known mechanisms and the norm in which their sensitivity is measured."""


@dataclass(frozen=True)
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

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise UnknownMechanismError(
                f"agent {self.agent}, round {self.round}: unknown mechanism {self.mechanism!r}; "
                f"known: {', '.join(MECHANISMS)}"
            )
        if not (isinstance(self.scale, (int, float, np.floating)) and math.isfinite(self.scale) and self.scale > 0):
            raise PrivacyParameterError(
                f"agent {self.agent}, round {self.round}: noise scale must be positive and finite, got {self.scale!r}"
            )
        if int(self.dimension) != self.dimension or self.dimension < 1:
            raise PrivacyParameterError(
                f"agent {self.agent}, round {self.round}: dimension must be a positive integer, got {self.dimension!r}"
            )

    @property
    def norm(self) -> str:
        """``"l1"`` for Laplace, ``"l2"`` for Gaussian."""
        return MECHANISMS[self.mechanism]


_COLUMNS = [f.name for f in fields(Release)]


class Ledger:
    """An ordered, immutable collection of :class:`Release` records.

    Example:
        >>> led = Ledger([Release(0, 1, 1.0, "laplace", 2.0, 2, 1.0)])
        >>> len(led), led.to_dataframe().shape
        (1, (1, 9))
    """

    def __init__(self, releases: Iterable[Release] = ()) -> None:
        self._releases = tuple(releases)
        for r in self._releases:
            if not isinstance(r, Release):
                raise LedgerFormatError(f"a ledger holds Release records, got {type(r).__name__}")

    def __len__(self) -> int:
        return len(self._releases)

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
        """The releases of one agent."""
        return Ledger(r for r in self._releases if r.agent == agent)

    @property
    def agents(self) -> list[int]:
        """Agents that released something, sorted."""
        return sorted({r.agent for r in self._releases})

    def to_dataframe(self) -> pd.DataFrame:
        """One row per release, columns = the :class:`Release` fields."""
        df = pd.DataFrame([asdict(r) for r in self._releases], columns=_COLUMNS)
        df["receiver"] = df["receiver"].astype("Int64")
        return df

    @classmethod
    def from_dataframe(cls, df: pd.DataFrame) -> Ledger:
        """Rebuild a ledger from :meth:`to_dataframe` output.

        Raises:
            LedgerFormatError: a required column is missing.
        """
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
