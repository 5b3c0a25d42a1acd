"""Sweep result files: one row per run, as CSV or Parquet (chosen by the path's suffix).

Example:
    >>> _format_of(Path("runs.pq"))
    'parquet'
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..atomic_write import write_atomically
from ..errors import SweepError

__all__ = ["write_results", "read_results", "check_csv_round_trip"]

_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def _format_of(path: Path) -> str:
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise SweepError(f"cannot tell the format of {str(path)!r}: use a .csv or .parquet suffix")
    return fmt


def write_results(df: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write a sweep DataFrame as CSV or Parquet, by the path's suffix (parent folders are created; atomically).

    Args:
        df: the rows.
        path: ``*.csv``, ``*.parquet`` or ``*.pq``.

    Returns:
        The path written.

    Raises:
        SweepError: another suffix, Parquet without ``pyarrow``, a column
            Parquet cannot type (one mixing numbers and strings, say), or a
            text a CSV file would give back as something else (``"007"`` as
            the number 7; see :func:`check_csv_round_trip`).

    Example:
        >>> write_results(pd.DataFrame({"a": [1]}), "out.txt")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        asyncdp.errors.SweepError: cannot tell the format of 'out.txt': use a .csv or .parquet suffix
    """
    path = Path(path)
    fmt = _format_of(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        check_csv_round_trip(df, path)
        # a float32 (float16) value is written as its own shortest repr ('0.1'), which reads back as another float64:
        # written as float64, it reads back as the same number
        narrow = {c: np.float64 for c in df.columns if df[c].dtype in (np.float32, np.float16)}
        table = df.astype(narrow) if narrow else df
        write_atomically(path, lambda tmp: table.to_csv(tmp, index=False))
    else:
        try:
            import pyarrow
        except ImportError as exc:
            raise SweepError(f"writing Parquet needs pyarrow (pip install pyarrow): {exc}") from None
        try:
            write_atomically(path, lambda tmp: df.to_parquet(tmp, index=False))
        except (pyarrow.ArrowInvalid, pyarrow.ArrowTypeError) as exc:
            raise SweepError(f"cannot write {str(path)!r} as Parquet: {exc}; give each grid parameter values "
                             "of one type, or write a .csv file") from None
    return path


def check_csv_round_trip(df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Refuse a table with a text that its CSV file would give back as something else.

    CSV keeps no types: :func:`read_results` parses a column whose texts all look like numbers or booleans
    (``"007"``, ``"1e3"``, ``"True"``: a label, a data set's name) as numbers or booleans, and an empty text as
    a missing value. Text columns are written and read back here and compared value by value.

    Raises:
        SweepError: the first text that would not read back, naming its column, both values and ``path``.

    Example:
        >>> check_csv_round_trip(pd.DataFrame({"label": ["007", "010"]}), "r.csv")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        asyncdp.errors.SweepError: cannot write 'r.csv' as CSV: column 'label' holds the text '007', ...
    """
    columns = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
    if not columns:
        return
    back = _read_csv(io.StringIO(df[columns].to_csv(index=False)))
    for column in columns:
        for ours, theirs in zip(df[column].tolist(), back[column].tolist()):
            if isinstance(ours, str) and not (isinstance(theirs, str) and theirs == ours):
                raise SweepError(
                    f"cannot write {str(path)!r} as CSV: column {column!r} holds the text {ours!r}, which a CSV "
                    f"file gives back as {theirs!r} ({type(theirs).__name__}): CSV keeps no types; write a .parquet "
                    "file, which keeps them")


def _read_csv(source: Any) -> pd.DataFrame:
    """A CSV table as :func:`read_results` reads it."""
    # pandas >= 3 parses floats exactly by default and deprecates the option
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    return pd.read_csv(source, keep_default_na=False, na_values=[""], **exact)


def read_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a file written by :func:`write_results` (CSV floats are read back exactly; float32 columns as float64).

    In a CSV file only an empty field is a missing value (how NaN and None are
    written): a string such as ``"None"`` or ``"NA"`` (a grid parameter's
    value, say) is read back as that string, not as NaN. A text that would read
    back as a number or boolean is refused when written; in a column that mixes
    texts with numbers or booleans, every value reads back as text.

    Raises:
        SweepError: another suffix.
        FileNotFoundError: no such file.

    Example:
        >>> read_results("results.parquet")  # doctest: +SKIP
    """
    path = Path(path)
    fmt = _format_of(path)
    if not path.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if fmt == "csv":
        return _read_csv(path)
    return pd.read_parquet(path)
