"""Transcript files and tables: ``.npz``, ``.parquet`` and ``.json`` files, and the one-row-per-transmission table.

:meth:`Transcript.save <asyncdp.engine.transcript.Transcript.save>`,
:meth:`~asyncdp.engine.transcript.Transcript.load`,
:meth:`~asyncdp.engine.transcript.Transcript.to_dataframe` and
:meth:`~asyncdp.engine.transcript.Transcript.from_dataframe` call the
functions of this module. The format is chosen by the file's suffix:
``.npz`` (numpy, compressed), ``.parquet`` (the rows of :func:`to_dataframe`;
needs ``pyarrow``) and ``.json`` (one object per transmission; floats written
with ``repr`` so they round-trip exactly; non-finite payload entries as the
strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``; a lost message's
``receive_time`` as ``null``). Every round trip is exact: bitwise for every
finite float, and NaN stays NaN.

Example:
    >>> import tempfile, pathlib
    >>> tr = Transcript()
    >>> tr.append(1, 0, 1, "y", 0.0, 0.5, False, [1.0, float("nan")], tr.new_message_id())
    >>> with tempfile.TemporaryDirectory() as d:
    ...     back = load(save(tr, pathlib.Path(d) / "t.json"))
    >>> back == tr
    True
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TranscriptError

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "SUFFIXES", "save", "load", "to_dataframe", "from_dataframe"]

FORMAT_NAME = "asyncdp-transcript"
"""The ``format`` entry of ``.npz`` and ``.json`` transcript files."""

FORMAT_VERSION = 1
"""The ``version`` entry of ``.npz`` and ``.json`` transcript files."""

SUFFIXES: tuple[str, ...] = (".npz", ".parquet", ".json")
"""File suffixes :func:`save` and :func:`load` understand."""

_SUFFIXES = SUFFIXES

# after the constants: asyncdp.engine.transcript imports them at its end, so either module may be imported first
from .transcript import _INT_COLS, _STORED, COLUMNS, Transcript  # noqa: E402


# --------------------------------------------------------------------------- the table form


def to_dataframe(transcript: Transcript) -> Any:
    """One row per transmission: :data:`~asyncdp.engine.transcript.COLUMNS` then ``payload_0 .. payload_{D-1}``.

    Payloads narrower than the widest are padded with NaN (their width is the ``dim`` column).

    Args:
        transcript: the transcript to tabulate.

    Returns:
        A ``pandas.DataFrame``.

    Example:
        >>> tr = Transcript()
        >>> tr.append(1, 0, 1, "y", 0.0, 0.5, False, [1.0], 0)
        >>> list(to_dataframe(tr).columns)[-2:]
        ['dim', 'payload_0']
    """
    import pandas as pd

    c = transcript._columns()
    data: dict[str, Any] = {k: c[k].copy() for k in COLUMNS}
    data["channel"] = c["channel"].astype(object)
    for j in range(c["payload"].shape[1]):
        data[f"payload_{j}"] = c["payload"][:, j].copy()
    return pd.DataFrame(data)


def from_dataframe(df: Any, cls: type[Transcript] = Transcript) -> Transcript:
    """Inverse of :func:`to_dataframe` (a missing ``dim`` column means every payload is full width).

    Args:
        df: a ``pandas.DataFrame`` laid out as :func:`to_dataframe` writes it.
        cls: the transcript class to build (a subclass of :class:`Transcript`).

    Returns:
        A frozen transcript.

    Raises:
        TranscriptError: on missing columns, non-contiguous ``payload_j`` columns or invalid values.
    """
    required = [k for k in COLUMNS if k != "dim"]
    missing = [k for k in required if k not in df.columns]
    if missing:
        raise TranscriptError(f"transcript table lacks columns {missing}")
    pcols = sorted(
        (int(str(k)[8:]), k) for k in df.columns if str(k).startswith("payload_") and str(k)[8:].isdigit()
    )
    if [j for j, _ in pcols] != list(range(len(pcols))):
        raise TranscriptError(f"payload columns must be payload_0 .. payload_{{D-1}}, got {[k for _, k in pcols]}")
    n = len(df)
    try:
        P = (
            df[[k for _, k in pcols]].to_numpy(dtype=np.float64, na_value=np.nan)
            if pcols
            else np.empty((n, 0))
        )
        cols: dict[str, Any] = {k: df[k].to_numpy() for k in required}
        cols["receive_time"] = df["receive_time"].to_numpy(dtype=np.float64, na_value=np.nan)
        cols["dim"] = df["dim"].to_numpy() if "dim" in df.columns else np.full(n, len(pcols))
    except (TypeError, ValueError) as exc:
        raise TranscriptError(f"invalid transcript table: {exc}") from None
    cols["payload"] = P
    return cls._from_columns(_coerce(cols))


# --------------------------------------------------------------------------- files


def save(transcript: Transcript, path: str | Path) -> Path:
    """Write ``transcript`` to ``path``; the suffix (``.npz``, ``.parquet``, ``.json``) selects the format.

    Args:
        transcript: the transcript to write.
        path: the file; its suffix is one of :data:`SUFFIXES`.

    Returns:
        The path written.

    Raises:
        TranscriptError: on an unknown suffix.
    """
    p = Path(path)
    fmt = _format(p)
    c = transcript._columns()
    if fmt == ".npz":
        np.savez_compressed(
            p,
            format=np.array(FORMAT_NAME),
            version=np.array(FORMAT_VERSION),
            **{k: c[k] for k in _STORED},
        )
    elif fmt == ".parquet":
        to_dataframe(transcript).to_parquet(p, index=False)
    else:
        p.write_text(json.dumps(_to_json(transcript), allow_nan=False), encoding="utf-8")
    return p


def load(path: str | Path, cls: type[Transcript] = Transcript) -> Transcript:
    """Read a transcript written by :func:`save` (format chosen by suffix).

    Args:
        path: the file.
        cls: the transcript class to build (a subclass of :class:`Transcript`).

    Returns:
        A frozen transcript.

    Raises:
        TranscriptError: on an unknown suffix or a malformed file.
        FileNotFoundError: if ``path`` does not exist.
    """
    p = Path(path)
    fmt = _format(p)
    if not p.exists():
        raise FileNotFoundError(f"no transcript file {str(p)!r}")
    if fmt == ".npz":
        try:
            with np.load(p, allow_pickle=False) as z:
                if "format" not in z.files or str(z["format"]) != FORMAT_NAME:
                    raise TranscriptError(f"{p}: not an {FORMAT_NAME} file")
                missing = [k for k in _STORED if k not in z.files]
                if missing:
                    raise TranscriptError(f"{p}: missing arrays {missing}")
                cols = {k: z[k] for k in _STORED}
        except (OSError, ValueError) as exc:
            if isinstance(exc, TranscriptError):
                raise
            raise TranscriptError(f"{p}: unreadable npz transcript ({exc})") from None
        return cls._from_columns(_coerce(cols))
    if fmt == ".parquet":
        import pandas as pd

        return from_dataframe(pd.read_parquet(p), cls)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TranscriptError(f"{p}: invalid JSON ({exc})") from None
    return _from_json(data, str(p), cls)


def _to_json(transcript: Transcript) -> dict[str, Any]:
    rows = []
    for t in transcript:
        rows.append(
            {
                "round": t.round,
                "sender": t.sender,
                "receiver": t.receiver,
                "channel": t.channel,
                "send_time": t.send_time,
                "receive_time": None if t.lost else t.receive_time,
                "lost": t.lost,
                "message_id": t.message_id,
                "payload": [_json_float(x) for x in t.payload.tolist()],
            }
        )
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "transmissions": rows}


def _from_json(data: Any, where: str, cls: type[Transcript] = Transcript) -> Transcript:
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise TranscriptError(f"{where}: not an {FORMAT_NAME} JSON file")
    rows = data.get("transmissions")
    if not isinstance(rows, list):
        raise TranscriptError(f"{where}: 'transmissions' must be a list")
    tr = cls()
    for i, row in enumerate(rows):
        try:
            payload = [_unjson_float(x) for x in row["payload"]]
            rt = row["receive_time"]
            tr.append(
                row["round"],
                row["sender"],
                row["receiver"],
                row["channel"],
                row["send_time"],
                math.nan if rt is None else rt,
                row["lost"],
                payload,
                row["message_id"],
            )
        except (KeyError, TypeError) as exc:
            raise TranscriptError(f"{where}: transmission {i} is malformed ({exc!r})") from None
        except TranscriptError as exc:
            raise TranscriptError(f"{where}: transmission {i}: {exc}") from None
    return tr.freeze()


def _format(p: Path) -> str:
    suffix = p.suffix.lower()
    if suffix not in _SUFFIXES:
        raise TranscriptError(
            f"unknown transcript file suffix {p.suffix!r} in {str(p)!r}; use one of {', '.join(_SUFFIXES)}"
        )
    return suffix


def _json_float(x: float) -> float | str:
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _unjson_float(x: Any) -> float:
    if isinstance(x, str):
        if x not in ("NaN", "Infinity", "-Infinity"):
            raise TranscriptError(f"payload entry must be a number, 'NaN', 'Infinity' or '-Infinity', got {x!r}")
        return float(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TranscriptError(f"payload entry must be a number, got {x!r}")
    return float(x)


def _coerce(cols: dict[str, Any]) -> dict[str, Any]:
    """Check column dtypes before conversion (ints must be integral, lost boolean)."""
    for k in _INT_COLS:
        a = np.asarray(cols[k])
        if a.dtype.kind == "f":
            if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
                raise TranscriptError(f"transcript column {k!r} must hold integers")
        elif a.dtype.kind not in "iu":
            if a.size and a.dtype.kind != "O":
                raise TranscriptError(f"transcript column {k!r} must hold integers, got dtype {a.dtype}")
            if a.dtype.kind == "O" and not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in a):
                raise TranscriptError(f"transcript column {k!r} must hold integers")
        cols[k] = a
    lost = np.asarray(cols["lost"])
    if lost.dtype.kind != "b" and lost.size:
        if not all(isinstance(x, (bool, np.bool_)) for x in lost.tolist()):
            raise TranscriptError("transcript column 'lost' must hold booleans")
    if any(not isinstance(x, str) or not x for x in np.asarray(cols["channel"], dtype=object).tolist()):
        raise TranscriptError("transcript column 'channel' must hold nonempty strings")
    for k in ("send_time", "receive_time"):
        a = np.asarray(cols[k])
        if a.size and a.dtype.kind not in "fiu":
            raise TranscriptError(f"transcript column {k!r} must hold numbers, got dtype {a.dtype}")
    return cols
