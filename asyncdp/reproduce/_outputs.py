"""Outputs shared by the reproductions: strict JSON, CSV, the CSV + JSON + PNG triple, figures, checks, tables.

Every figure is written by :func:`save_figure` (pyplot loaded by
:func:`pyplot` on the Agg backend); every trend check in a summary is a
:func:`check_entry`; every text table ends with :func:`check_lines`. Every
file is written atomically (:func:`asyncdp.atomic_write.write_atomically`):
an interrupted or failed reproduction (Ctrl-C, a full disk) leaves each of
its files complete or absent, never cut short.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic_write import write_atomically

__all__ = ["to_strict_json", "write_json", "write_csv", "write_outputs", "pyplot", "save_figure", "check_entry",
           "check_lines"]


def _key(k: Any) -> str:
    if isinstance(k, (float, np.floating)) and math.isinf(k):
        return "inf" if k > 0 else "-inf"
    if isinstance(k, (float, np.floating)):
        return f"{float(k):g}"
    return str(k)


def to_strict_json(obj: Any, nan: Any = None) -> Any:
    """Strict-JSON form: numpy to Python, NaN to ``nan``, +-inf to ``"inf"``/``"-inf"``, keys to strings.

    Args:
        obj: the data (dicts, lists, tuples, numpy arrays and scalars, nested).
        nan: what a NaN becomes (``None``; the privacy check's reports write ``"nan"``).

    Returns:
        The data as :func:`json.dumps` writes it with ``allow_nan=False``.

    Example:
        >>> to_strict_json({1.0: [np.float64("inf"), np.nan, np.int64(3)]})
        {'1': ['inf', None, 3]}
        >>> to_strict_json([np.nan], nan="nan")
        ['nan']
    """
    if isinstance(obj, dict):
        return {_key(k): to_strict_json(v, nan) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_strict_json(v, nan) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_strict_json(obj.tolist(), nan)
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        if math.isnan(v):
            return nan
        return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    return obj


def write_json(path: str | Path, data: Any, indent: int = 2) -> None:
    """Write ``data`` as strict JSON (see :func:`to_strict_json`), atomically: complete or absent."""
    text = json.dumps(to_strict_json(data), indent=indent, allow_nan=False)
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_csv(path: str | Path, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Write a header and rows as CSV (atomically: complete or absent)."""
    def writer(tmp: Path) -> None:
        with open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(columns)
            w.writerows(rows)

    write_atomically(path, writer)


def write_outputs(out: str | Path, stem: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                  summary: dict[str, Any], plot: Callable[[Path, dict[str, Any]], None]) -> dict[str, str]:
    """Write ``stem.csv``, ``stem.png`` (via ``plot``) and ``stem_summary.json`` into ``out``.

    Returns:
        The three paths, also stored in ``summary["files"]``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {"csv": str(out / f"{stem}.csv"), "summary": str(out / f"{stem}_summary.json"),
             "png": str(out / f"{stem}.png")}
    write_csv(files["csv"], columns, rows)
    summary["files"] = files
    plot(Path(files["png"]), summary)
    write_json(files["summary"], summary)
    return files


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend (imported on first use).

    Example:
        >>> pyplot().get_backend().lower()
        'agg'
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | Path, dpi: int = 110) -> None:
    """Lay out ``fig`` (a pyplot figure), write it to ``path`` atomically (complete or absent) and close it.

    Args:
        fig: the figure.
        path: the file to write (its suffix picks the format).
        dpi: resolution of raster formats.

    Example:
        >>> import tempfile
        >>> fig, ax = pyplot().subplots()
        >>> with tempfile.TemporaryDirectory() as d:
        ...     save_figure(fig, Path(d) / "f.png", dpi=50)
        ...     (Path(d) / "f.png").stat().st_size > 0
        True
    """
    plt = pyplot()
    try:
        fig.tight_layout()
        fmt = Path(path).suffix.lstrip(".").lower() or plt.rcParams["savefig.format"]  # as savefig would pick
        write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt))
    finally:
        plt.close(fig)


def check_entry(name: str, holds: bool, criterion: str, **values: Any) -> dict[str, Any]:
    """One entry of a summary's ``"checks"``: ``{"name", "holds", "criterion", **values}``.

    Example:
        >>> check_entry("falls", 2 > 1, "d decreasing", value=[2, 1])
        {'name': 'falls', 'holds': True, 'criterion': 'd decreasing', 'value': [2, 1]}
    """
    return {"name": name, "holds": bool(holds), "criterion": criterion, **values}


def check_lines(summary: dict[str, Any]) -> list[str]:
    """The end of a text table: one ``[ok]``/``[FAIL]`` line per check, a blank line, then the statements.

    Example:
        >>> check_lines({"checks": [check_entry("a", False, "x > 0")], "statements": ["s"]})
        ['  [FAIL] a: x > 0', '', 's']
    """
    lines = [f"  [{'ok' if c['holds'] else 'FAIL'}] {c['name']}: {c['criterion']}" for c in summary.get("checks", [])]
    return lines + [""] + list(summary.get("statements", []))
