"""Writing the pairwise leakage matrix: CSV rows as they stream in, JSON, heatmap, loss against distance.

Example:
    >>> import tempfile
    >>> from asyncdp.papers.muffliato.rule import Muffliato
    >>> from asyncdp.privacy.network import leakage_rows
    >>> sc = Muffliato.example_scenario()
    >>> with tempfile.TemporaryDirectory() as d:
    ...     rows = write_leakage(sc, leakage_rows(sc), d, plot=False)
    ...     open(d + "/leakage.csv").readline().strip()
    'v,kind,u0,u1,u2,u3,u4,u5'
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .network import LeakageRow, gossip_graph, shortest_paths

__all__ = ["write_leakage"]


def _num(x: float) -> Any:
    return float(x) if math.isfinite(x) else str(x)


def write_leakage(scenario: Any, rows: Iterable[LeakageRow], out: str | Path, *, plot: bool = True
                  ) -> list[LeakageRow]:
    """Write ``leakage.csv`` and ``leakage.json`` (one row per observer, written as it arrives),
    ``by_distance.csv`` (running sums per distance) and (``plot``) ``leakage.png`` and ``by_distance.png``
    into ``out``.

    Args:
        scenario: the scenario (agent count, distances).
        rows: the streamed :class:`~asyncdp.privacy.network.LeakageRow` s.
        out: the output directory (exists).
        plot: write the PNGs.

    Returns:
        The rows (kept: the matrix is ``N x N`` floats; the observers' views are not).
    """
    out = Path(out)
    n = scenario.problem.num_agents
    kept: list[LeakageRow] = []
    graph = gossip_graph(scenario)
    by_dist: dict[int, list[float]] = {}  # distance -> [pairs, sum, max]: running, not every value
    with open(out / "leakage.csv", "w", newline="") as fh, open(out / "leakage.json", "w") as js:
        w = csv.writer(fh)
        w.writerow(["v", "kind", *[f"u{u}" for u in range(n)]])
        js.write('{"rows": [')
        for i, row in enumerate(rows):
            w.writerow([row.v, row.kind, *[repr(float(x)) for x in row.values]])
            fh.flush()
            js.write(("," if i else "") + "\n " + json.dumps({"v": row.v, "kind": row.kind, "path": row.path,
                                                              "values": [_num(x) for x in row.values]},
                                                             allow_nan=False))
            kept.append(row)
            dist = shortest_paths(scenario, row.v, graph)
            vals = np.asarray(row.values, dtype=float)
            for d in np.unique(dist[dist > 0]):
                sel = vals[(dist == d) & (np.arange(n) != row.v)]
                acc = by_dist.setdefault(int(d), [0, 0.0, -math.inf])
                acc[0] += sel.size
                acc[1] += float(sel.sum())
                acc[2] = max(acc[2], float(sel.max()))
        curve = [(d, acc[1] / acc[0], acc[2], int(acc[0])) for d, acc in sorted(by_dist.items()) if acc[0]]
        # an infinite value (a numerical artifact of an ambiguous view) makes its distance's mean and max infinite:
        # written as "inf" like the rows' values (strict JSON has no Infinity)
        js.write('\n],\n"by_distance": ' + json.dumps([{"distance": d, "mean": _num(m), "max": _num(mx), "pairs": c}
                                                       for d, m, mx, c in curve], allow_nan=False) + "}\n")
    with open(out / "by_distance.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["distance", "mean", "max", "pairs"])
        w.writerows(curve)
    if plot and kept:
        from ..reproduce._outputs import pyplot, save_figure

        plt = pyplot()
        mat = np.full((n, n), np.nan)
        for r in kept:
            mat[r.v] = np.where(np.isfinite(r.values), r.values, np.nan)
        fig, ax = plt.subplots(figsize=(5, 4))
        im = ax.imshow(mat, cmap="viridis", interpolation="nearest")
        ax.set_xlabel("source u")
        ax.set_ylabel("observer v")
        ax.set_title("Renyi loss u -> v (diagonal: v's own datum)")
        fig.colorbar(im, ax=ax)
        save_figure(fig, out / "leakage.png")
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot([c[0] for c in curve], [max(c[1], 1e-12) for c in curve], "o-", label="mean over pairs")
        ax.plot([c[0] for c in curve], [max(c[2], 1e-12) for c in curve], "s--", label="max over pairs")
        ax.set_yscale("log")
        ax.set_xlabel("shortest-path distance")
        ax.set_ylabel("Renyi loss")
        ax.legend()
        save_figure(fig, out / "by_distance.png")
    return kept
