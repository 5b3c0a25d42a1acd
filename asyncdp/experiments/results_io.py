"""Sweep result files: one row per run, as CSV or Parquet (chosen by the path's suffix).

Example:
    >>> _format_of(Path("runs.pq"))
    'parquet'
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..atomic_write import write_atomically
from ..errors import SweepError

__all__ = ["write_results", "read_results"]

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
        SweepError: another suffix, Parquet without ``pyarrow``, or a column
            Parquet cannot type (one mixing numbers and strings, say).

    Example:
        >>> write_results(pd.DataFrame({"a": [1]}), "out.txt")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        asyncdp.errors.SweepError: cannot tell the format of 'out.txt': use a .csv or .parquet suffix
    """
    path = Path(path)
    fmt = _format_of(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
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


def read_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a file written by :func:`write_results` (CSV floats are read back exactly; float32 columns as float64).

    In a CSV file only an empty field is a missing value (how NaN is written):
    a string such as ``"None"`` or ``"NA"`` (a grid parameter's value, say) is
    read back as that string, not as NaN.

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
        # pandas >= 3 parses floats exactly by default and deprecates the option
        exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
        return pd.read_csv(path, keep_default_na=False, na_values=[""], **exact)
    return pd.read_parquet(path)
