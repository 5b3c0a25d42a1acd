"""Benchmark: the batch engine with N = 10^4 agents on a sparse time-varying graph (n = 10, T = 100, one run).

Each size runs in a fresh subprocess so that its peak resident memory (RSS)
is its own. Baseline in the same run: building the sparse graph sequence
(every round materialized). Targets (issue 5): under 10 s at N = 10^4, and
memory growing as O(N n R), not O(N^2): compare peak RSS at N = 10^3 and 10^4
(dense N x N float matrices alone would need 8 MB and 800 MB).

Run:  python benchmarks/bench_batch_large.py [--sizes 1000 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import gc, json, resource, statistics, sys, time
import numpy as np
import topology
from asyncdp import Huang2015, Scenario, rendezvous_problem

n_agents, dim, horizon, repeats = int(sys.argv[1]), 10, 100, int(sys.argv[2])
rng = np.random.default_rng(0)
problem = rendezvous_problem(rng.uniform(-1, 1, size=(n_agents, dim)))
build, run = [], []
for _ in range(repeats):
    t0 = time.perf_counter()
    graphs = topology.erdos_renyi(n_agents, 8.0 / n_agents, seed=1, rule="metropolis", length=horizon).take(horizon)
    t1 = time.perf_counter()
    sc = Scenario(problem, graphs, Huang2015(epsilon=1.0, c=0.2, q=0.5, p=0.8), horizon=horizon, seed=2)
    res = sc.run(engine="batch", runs=1, keep="final")
    t2 = time.perf_counter()
    build.append(t1 - t0)
    run.append(t2 - t1)
    releases = len(res.ledger)
    del graphs, sc, res
    gc.collect()
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"N": n_agents, "build_s": statistics.median(build), "run_s": statistics.median(run),
                  "peak_rss_mb": peak_mb, "releases": releases}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'N':>7} {'build (s)':>10} {'batch run (s)':>14} {'run/build':>10} {'peak RSS (MB)':>14}")
    for n in args.sizes:
        out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(args.repeats)], capture_output=True,
                             text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['N']:>7} {r['build_s']:>10.3f} {r['run_s']:>14.3f} {r['run_s'] / r['build_s']:>10.2f} "
              f"{r['peak_rss_mb']:>14.1f}")
    print("n = 10, T = 100, one run, medians of", args.repeats)


if __name__ == "__main__":
    main()
