"""Pairwise leakage of Muffliato's gossip at N = 2048: one observer's cost, the full-matrix extrapolation.

For each graph of the figure (hypercube 11, Erdős–Rényi 2048, random
geometric 2048 at radius 0.07, grid 45 x 45) with the authors' weights and
Chebyshev step count (alpha = 2, sigma = 1, eps_local = 1):

* set-up: graph, weights, spectral gap, steps;
* baseline: the authors' per-pair values for one observer (their formula);
* subject: the exact values for one observer (``--method``: the streamed
  block Gram-Schmidt basis, default, or one SVD of the stacked view), median
  over ``--observers`` observers drawn with a fixed seed, and the peak
  memory (tracemalloc) of one observer;
* both values for one observer in one pass over the gossip steps
  (``observer_row``, the unit of a full-matrix run), median;
* extrapolation: ``N x`` that median, the time of the whole ``N x N`` matrix
  streamed one observer at a time (memory stays one observer's), on one core.

BLAS runs on ``--threads`` threads (default 1). Times are wall clock and
CPU (process time) per observer: on a shared machine the CPU time is the
stable figure.

``--full NAME`` also streams every observer of graph NAME and prints the
per-distance curve (mean and max of both values over all pairs at each
shortest-path distance) and the number of pairs where the exact value
exceeds the authors', on ``--workers`` processes (wall and CPU time of
every process, and the largest worker's peak RSS).

Usage:
    cd benchmarks && python bench_pairwise_leakage.py --observers 5
    cd benchmarks && python bench_pairwise_leakage.py --observers 3 --graphs grid --full grid --workers 2
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from accounting.network.muffliato import authors_pairwise_loss, exact_pairwise_loss, observer_row, pairwise_rows
from accounting.network.muffliato_gossip import chebyshev_gamma, hamilton_weights, muffliato_steps, spectral_gap
from accounting.network.muffliato_graphs import distances_from, erdos_renyi_connected, grid, hypercube, random_geometric

GRAPHS = {
    "hypercube": lambda: hypercube(11),
    "erdos-renyi": lambda: erdos_renyi_connected(2048, seed=0),
    "geometric": lambda: random_geometric(2048, 0.07, seed=0),
    "grid": lambda: grid(45),
}


def _timed(fn):
    """CPU seconds (this process; BLAS on one thread) and the result."""
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def bench_graph(name: str, observers: int, method: str) -> dict[str, float]:
    t_graph, g = _timed(GRAPHS[name])
    n = g.number_of_nodes()
    t_setup, (w, gap) = _timed(lambda: (lambda w: (w, spectral_gap(w)))(hamilton_weights(g)))
    steps = muffliato_steps(n, 1.0, gap)
    gamma = chebyshev_gamma(gap)
    picks = np.random.default_rng(0).choice(n, size=observers, replace=False)
    base, subj, both, ranks, dims, drops = [], [], [], [], [], []
    for v in picks:
        tb, _ = _timed(lambda v=v: authors_pairwise_loss(w, int(v), steps, gamma))
        ts, row = _timed(lambda v=v: exact_pairwise_loss(w, int(v), steps, gamma, method=method))
        tr, _ = _timed(lambda v=v: observer_row(w, int(v), steps, gamma, method=method))
        base.append(tb)
        subj.append(ts)
        both.append(tr)
        ranks.append(row.rank)
        dims.append(row.view_dim)
        drops.append(row.dropped)
    tracemalloc.start()
    exact_pairwise_loss(w, int(picks[0]), steps, gamma, method=method)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    med_b, med_s, med_r = statistics.median(base), statistics.median(subj), statistics.median(both)
    return {"n": n, "steps": steps, "gap": gap, "graph_s": t_graph, "setup_s": t_setup, "authors_s": med_b,
            "exact_s": med_s, "ratio": med_s / med_b, "row_s": med_r, "view_dim": statistics.median(dims),
            "rank": statistics.median(ranks), "dropped": statistics.median(drops), "peak_mib": peak / 2**20,
            "full_min": n * med_r / 60}


def _cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def full_run(name: str, workers: int) -> None:
    g = GRAPHS[name]()
    w = hamilton_weights(g)
    gap = spectral_gap(w)
    steps = muffliato_steps(g.number_of_nodes(), 1.0, gap)
    gamma = chebyshev_gamma(gap)
    start, cpu0 = time.perf_counter(), _cpu_seconds()
    sums: dict[int, list[float]] = {}
    witnesses, first, uncertified = 0, None, 0
    tracemalloc.start()
    for row in pairwise_rows(w, None, steps, gamma, workers=workers):
        dist = distances_from(g, row.v)
        assert row.authors is not None
        for d in np.unique(dist[dist > 0]):
            sel = dist == d
            acc = sums.setdefault(int(d), [0.0, 0.0, 0.0, 0.0, 0.0])
            acc[0] += sel.sum()
            acc[1] += row.exact[sel].sum()
            acc[2] = max(acc[2], row.exact[sel].max())
            acc[3] += row.authors[sel].sum()
            acc[4] = max(acc[4], row.authors[sel].max())
        uncertified += row.dropped > 0
        over = np.flatnonzero((row.exact > row.authors + 1e-9) & (dist > 0))
        witnesses += over.size
        if first is None and over.size:
            first = (int(over[0]), row.v, float(row.exact[over[0]]), float(row.authors[over[0]]))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    total, cpu = time.perf_counter() - start, _cpu_seconds() - cpu0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"\nfull run {name}: {total / 60:.1f} min wall, {cpu / 60:.1f} min CPU (all processes) for "
          f"{g.number_of_nodes()} observers on {workers} worker process(es); traced peak of this process "
          f"{peak / 2**20:.0f} MiB, largest worker peak RSS {kids:.0f} MiB")
    print("| distance | pairs | exact mean | exact max | authors mean | authors max |")
    print("| --- | --- | --- | --- | --- | --- |")
    for d in sorted(sums):
        c, es, em, as_, am = sums[d]
        print(f"| {d} | {int(c)} | {es / c:.3g} | {em:.3g} | {as_ / c:.3g} | {am:.3g} |")
    print(f"pairs with exact > authors: {witnesses}; first (u, v, exact, authors): {first}")
    print(f"observers with ambiguous directions (values are lower estimates there): {uncertified}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observers", type=int, default=5)
    parser.add_argument("--graphs", nargs="+", default=list(GRAPHS), choices=list(GRAPHS))
    parser.add_argument("--full", choices=list(GRAPHS), default=None)
    parser.add_argument("--method", choices=["gram-schmidt", "svd"], default="gram-schmidt")
    parser.add_argument("--workers", type=int, default=1, help="processes of the --full run (observers are "
                        "independent; each worker runs BLAS on one thread)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (1: no oversubscription on a "
                        "shared machine; observers are independent, so parallelism belongs across observers)")
    args = parser.parse_args()
    threadpool_limits(args.threads)
    print("| graph | N | T | view rows | rank | ambiguous | set-up (CPU s) | authors, 1 observer (CPU s) | exact, 1 "
          "observer (CPU s) | ratio | both, 1 observer (CPU s) | peak MiB, 1 observer | full matrix, extrapolated (CPU min) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.graphs:
        r = bench_graph(name, args.observers, args.method)
        print(f"| {name} | {r['n']} | {r['steps']} | {r['view_dim']:.0f} | {r['rank']:.0f} | {r['dropped']:.0f} | "
              f"{r['graph_s'] + r['setup_s']:.1f} | {r['authors_s']:.3f} | {r['exact_s']:.3f} | "
              f"{r['ratio']:.0f} | {r['row_s']:.3f} | {r['peak_mib']:.0f} | {r['full_min']:.0f} |", flush=True)
    if args.full:
        full_run(args.full, args.workers)
    print(f"process peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
