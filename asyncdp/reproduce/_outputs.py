"""Output files shared by the reproductions: strict JSON, CSV, and the CSV + JSON + PNG triple."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["to_strict_json", "write_json", "write_csv", "write_outputs", "save_figure"]


def _key(k: Any) -> str:
    if isinstance(k, (float, np.floating)) and math.isinf(k):
        return "inf" if k > 0 else "-inf"
    if isinstance(k, (float, np.floating)):
        return f"{float(k):g}"
    return str(k)


def to_strict_json(obj: Any) -> Any:
    """Strict-JSON form: numpy to Python, NaN to ``None``, +-inf to ``"inf"``/``"-inf"``, keys to strings.

    Example:
        >>> to_strict_json({1.0: [np.float64("inf"), np.nan, np.int64(3)]})
        {'1': ['inf', None, 3]}
    """
    if isinstance(obj, dict):
        return {_key(k): to_strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_strict_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_strict_json(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        if math.isnan(v):
            return None
        return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    return obj


def write_json(path: str | Path, data: Any, indent: int = 2) -> None:
    """Write ``data`` as strict JSON (see :func:`to_strict_json`)."""
    Path(path).write_text(json.dumps(to_strict_json(data), indent=indent, allow_nan=False))


def write_csv(path: str | Path, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Write a header and rows as CSV."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        w.writerows(rows)


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


def save_figure(fig: Any, path: str | Path, dpi: int = 110) -> None:
    """Lay out ``fig`` (a pyplot figure), write it to ``path`` and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
