"""Privacy loss against shortest-path length (Cyffers, Even, Bellet and Massoulié, NeurIPS 2022, Fig. 1a).

For each graph of the figure, the source ``u`` (node 0, as the authors'
code effectively uses for every graph) and every observer ``v``:

* the **authors' value**, as their public code computes it
  (:func:`accounting.network.muffliato.authors_pairwise_loss`: the sum over
  gossip steps and over ``v``'s neighbours of squared normalized weights,
  times ``alpha / (2 sigma^2)``, capped at the local budget);
* **our exact value** (:func:`accounting.network.muffliato.observer_row`):
  the Renyi divergence of order ``alpha`` of ``v``'s whole view, a Gaussian
  vector, under the *same convention*: ``v`` sees its neighbours' states
  after each of the ``T`` gossip steps (not the first exchange of raw noisy
  values), knows its own value and noise, and no clipping (the authors' code
  clips the noisy values to ``[0, 1]``, which is not linear);
* where ours exceeds theirs, a **witness**: the pair and the first step after
  which the exact loss already exceeds the authors' value at ``T``
  (:func:`accounting.network.muffliato.witness_round`; up to ``witnesses``
  per graph).

Settings of the authors' code: Renyi order 2, local budget 1, sigma 1,
Hamilton weights, Chebyshev-accelerated gossip with their step count.

Default size (reduced, runs in a few minutes on one core): hypercube of
dimension 7 (128 nodes), Erdos-Renyi ``n = 128`` with ``p = log(n)/n``, random
geometric ``n = 128`` with the radius scaled to keep the mean degree of
``n = 2048, r = 0.07`` (``r = 0.07 sqrt(2048/128) = 0.28``), and the 11 x 11
grid. ``full=True`` runs the figure's sizes (hypercube 11, ``n = 2048``,
radius 0.07, the 45 x 45 grid): a few CPU minutes per graph for the hypercube and
Erdos-Renyi, about a quarter of an hour for the grid and an hour for the geometric
graph, divided by the number of worker processes (``workers``; see BENCHMARKS.md);
from the command line: ``asyncdp reproduce muffliato-fig1a --full --workers 2``.

A last panel (:func:`asyncdp.reproduce.muffliato_fig1a.asynchronous_series`, passed as ``asynchronous``)
shows the same curve from engine runs on a 5 x 5 grid, under
lockstep and under asynchronous gossip over lossy links, where no analytic bound exists.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from accounting.network.muffliato import WITNESS_MARGIN, pairwise_rows, witness_round
from accounting.network.muffliato_gossip import chebyshev_gamma, hamilton_weights, muffliato_steps, spectral_gap
from accounting.network.muffliato_graphs import (
    distances_from,
    erdos_renyi_connected,
    figure_graphs,
    grid,
    hypercube,
    random_geometric,
)

from ....reproduce._outputs import pyplot, save_figure, write_csv, write_json

__all__ = ["reproduce_fig1a", "format_fig1a_table", "figure_graphs_of_size"]

ALPHA = 2.0
EPS_LOCAL = 1.0
SIGMA = 1.0


def figure_graphs_of_size(full: bool, seed: int = 0) -> dict[str, nx.Graph]:
    """The four graphs: the figure's (``full``) or the reduced ones of the module docstring.

    Example:
        >>> sorted(g.number_of_nodes() for g in figure_graphs_of_size(False).values())
        [121, 128, 128, 128]
    """
    if full:
        return figure_graphs(seed=seed)
    n = 128
    return {"hypercube": hypercube(7), "erdos-renyi": erdos_renyi_connected(n, seed=seed),
            "geometric": random_geometric(n, 0.07 * math.sqrt(2048 / n), seed=seed), "grid": grid(11)}


def _one_graph(name: str, graph: nx.Graph, source: int, witnesses: int, progress: Callable[[str], None] | None,
               method: str, workers: int = 1) -> dict[str, Any]:
    started = time.perf_counter()
    n = graph.number_of_nodes()
    w = hamilton_weights(graph)
    gap = spectral_gap(w)
    steps = muffliato_steps(n, SIGMA, gap, accelerated=True)
    gamma = chebyshev_gamma(gap)
    dist = distances_from(graph, source)
    authors = np.full(n, math.nan)
    exact = np.full(n, math.nan)
    certified = np.zeros(n, dtype=bool)
    for row in pairwise_rows(w, None, steps, gamma, alpha=ALPHA, sigma=SIGMA, eps_local=EPS_LOCAL,
                             include_first_exchange=False, method=method, workers=workers):
        assert row.authors is not None
        authors[row.v] = row.authors[source]
        exact[row.v] = row.exact[source]
        certified[row.v] = row.dropped == 0
    observers = [v for v in range(n) if v != source]
    excess = [v for v in observers if exact[v] > authors[v] + WITNESS_MARGIN]
    excess.sort(key=lambda v: -(exact[v] - authors[v]))
    found = []
    for v in excess[:witnesses]:
        t = witness_round(w, source, v, steps, gamma, alpha=ALPHA, sigma=SIGMA, eps_local=EPS_LOCAL)
        found.append({"u": source, "v": int(v), "distance": int(dist[v]), "step": t, "authors": float(authors[v]),
                      "exact": float(exact[v])})
    elapsed = time.perf_counter() - started
    if progress is not None:
        progress(f"{name}: n={n}, T={steps}, {len(excess)} of {len(observers)} observers above the authors' value "
                 f"({elapsed:.1f} s)")
    return {"graph": name, "n": n, "edges": graph.number_of_edges(), "spectral_gap": gap, "steps": steps,
            "gamma": gamma, "source": source, "distance": dist.tolist(), "authors": authors.tolist(),
            "exact": exact.tolist(), "certified": certified.tolist(), "observers_above": len(excess),
            "observers": len(observers), "witnesses": found, "seconds": elapsed}


def _by_distance(g: dict[str, Any], key: str) -> tuple[list[int], list[float]]:
    dist = np.asarray(g["distance"])
    vals = np.asarray(g[key], dtype=float)
    ds = sorted({int(d) for d in dist if d > 0})
    return ds, [float(np.mean(vals[dist == d])) for d in ds]


def _plot(path: Path, graphs: list[dict[str, Any]], asynchronous: dict[str, Any] | None = None) -> None:
    plt = pyplot()
    panels = len(graphs) + (asynchronous is not None)
    fig, axes = plt.subplots(1, panels, figsize=(4 * panels, 3.6), squeeze=False)
    for ax, g in zip(axes[0], graphs):
        for key, label, style in (("authors", "authors' value (their code)", "o-"), ("exact", "exact (ours)", "s--")):
            ds, means = _by_distance(g, key)
            ax.plot(ds, np.maximum(means, 1e-5), style, label=label, ms=3)
        ax.axhline(EPS_LOCAL, color="k", lw=0.8, label="local DP")
        ax.set_yscale("log")
        ax.set_ylim(1e-5, 1.2)
        ax.set_xlabel("shortest-path length")
        ax.set_title(f"{g['graph']} (n={g['n']}, T={g['steps']})")
    if asynchronous is not None:
        ax = axes[0][-1]
        a = asynchronous
        ax.plot(a["distance"], np.maximum(a["lockstep"], 1e-5), "o-", ms=3, label="lockstep (engine)")
        ax.plot(a["distance"], np.maximum(a["async"], 1e-5), "s--", ms=3, label=f"async, loss {a['loss']:g}")
        ax.plot(a["distance"], np.maximum(a["async_upper"], 1e-5), ":", label="async, upper bound")
        ax.axhline(EPS_LOCAL, color="k", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylim(1e-5, 1.2)
        ax.set_xlabel("shortest-path length")
        ax.set_title(f"{a['graph']}, first exchange counted")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel(f"Renyi loss (alpha={ALPHA:g}), mean over observers")
    axes[0][0].legend(fontsize=7)
    save_figure(fig, path)


def reproduce_fig1a(out_dir: str | Path, *, seed: int = 0, full: bool = False, source: int = 0, witnesses: int = 5,
                    graphs: dict[str, nx.Graph] | None = None, plot: bool = True, method: str | None = None,
                    asynchronous: Callable[..., dict[str, Any]] | None = None, runs: int = 4,
                    progress: Callable[[str], None] | None = None, workers: int = 1) -> dict[str, Any]:
    """Reproduce the privacy-vs-distance figure with the authors' and the exact values side by side.

    Args:
        out_dir: output directory (created).
        seed: seed of the random graphs.
        full: the figure's sizes (N = 2048 ...) instead of the reduced default.
        source: the source node ``u``.
        witnesses: at most this many witness pairs per graph (the largest excesses).
        graphs: other graphs (name -> graph on nodes ``0..n-1``) instead of the figure's.
        plot: write the PNG.
        method: the basis of each view, ``"svd"`` (default for the reduced sizes: faster on small dense
            views) or ``"gram-schmidt"`` (default for ``full``: streamed, less memory at N = 2048); see
            :func:`accounting.network.muffliato.exact_pairwise_loss`.
        asynchronous: ``(runs=, seed=, source=) -> series``: the engine-run panel (lockstep and asynchronous
            lossy gossip), e.g. :func:`asyncdp.reproduce.muffliato_fig1a.asynchronous_series` (the command
            line's experiment passes it; it needs the privacy checker, a layer above the papers).
        runs: runs of the asynchronous series.
        progress: called with one line per graph.
        workers: processes over which the observers of each graph are spread (the values do not depend on it;
            see :func:`accounting.network.muffliato.pairwise_rows`).

    Returns:
        The summary (also written as ``fig1a_summary.json``; ``fig1a.csv`` has one row per graph and observer).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    chosen = figure_graphs_of_size(full, seed) if graphs is None else graphs
    how = method or ("gram-schmidt" if full else "svd")
    results = [_one_graph(name, g, source, witnesses, progress, how, workers) for name, g in chosen.items()]
    asy = None
    if asynchronous is not None:
        started = time.perf_counter()
        asy = asynchronous(runs=runs, seed=seed, source=source)
        asy["seconds"] = time.perf_counter() - started
        if progress is not None:
            progress(f"asynchronous series: {asy['graph']}, {runs} runs ({asy['seconds']:.1f} s)")
    rows = []
    for g in results:
        for v in range(g["n"]):
            if v != source:
                rows.append([g["graph"], source, v, g["distance"][v], g["authors"][v], g["exact"][v],
                             g["certified"][v]])
    files = {"csv": str(out / "fig1a.csv"), "summary": str(out / "fig1a_summary.json")}
    write_csv(files["csv"], ["graph", "u", "v", "distance", "authors", "exact", "exact_certified"], rows)
    if plot:
        files["png"] = str(out / "fig1a.png")
        _plot(Path(files["png"]), results, asy)
    convention = ("v sees its neighbours' states after each of the T gossip steps, not the first exchange of raw "
                  "noisy values; v knows its own value and noise; no clipping in the exact model (the authors' code "
                  "clips the noisy values to [0, 1]); Renyi order 2, sigma 1, local budget 1, Hamilton weights, "
                  "Chebyshev acceleration with the authors' step count")
    summary = {"experiment": "muffliato-fig1a", "full": full, "seed": seed, "convention": convention, "method": how,
               "graphs": [{k: v for k, v in g.items() if k not in ("distance", "authors", "exact", "certified")}
                          for g in results],
               "curves": {g["graph"]: {"distance": _by_distance(g, "authors")[0],
                                       "authors": _by_distance(g, "authors")[1],
                                       "exact": _by_distance(g, "exact")[1]} for g in results},
               "asynchronous": asy, "files": files}
    write_json(files["summary"], summary)
    return summary


def format_fig1a_table(summary: dict[str, Any]) -> str:
    """One line per graph, then the witnesses.

    Example:
        >>> format_fig1a_table({"graphs": [], "convention": "c", "full": False}).splitlines()[0].split()[0]
        'graph'
    """
    head = f"{'graph':>12} {'n':>6} {'T':>4} {'gamma':>7} {'above':>12} {'seconds':>8}"
    lines = [head, "-" * len(head)]
    for g in summary["graphs"]:
        lines.append(f"{g['graph']:>12} {g['n']:>6} {g['steps']:>4} {g['gamma']:>7.4f} "
                     f"{g['observers_above']:>5}/{g['observers']:<6} {g['seconds']:>8.1f}")
    for g in summary["graphs"]:
        for w in g["witnesses"]:
            lines.append(f"witness {g['graph']}: u={w['u']} v={w['v']} (distance {w['distance']}): exact "
                         f"{w['exact']:.4g} > authors {w['authors']:.4g} from step {w['step']}")
    a = summary.get("asynchronous")
    if a:
        lines.append(f"engine runs on the {a['graph']} (first exchange counted), mean loss by distance "
                     f"{a['distance']}: lockstep " + ", ".join(f"{x:.3g}" for x in a["lockstep"]) + "; async, loss "
                     f"{a['loss']:g} ({a['runs']} runs) " + ", ".join(f"{x:.3g}" for x in a["async"]))
    lines.append("size: " + ("the figure's (N = 2048)" if summary.get("full") else
                             "reduced (about 128 nodes per graph); the figure's sizes: full=True"))
    lines.append("convention: " + summary["convention"])
    return "\n".join(lines)
