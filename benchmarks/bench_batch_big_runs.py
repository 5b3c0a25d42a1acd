"""Benchmark: single large runs on the batch engine (a time-varying Deadline network, and a large lockstep network).

Part 1 — the large part of ``bench_batch_deadline.py`` on a *time-varying*
graph: huang2015, n = 10, T = 100, a fresh Erdős–Rényi graph (mean degree 8,
Metropolis weights) every round, Deadline(period 1, deadline 0.8, drift
0.05), lognormal latency (median 0.2, sigma 0.5), loss 0.1, one run,
``keep="final"``, the default ``layout="auto"`` (the vectorized stream layout
above 10^5 links). Target at N = 10^5: at most 60 s on 2 cores and 8 GB.

Part 2 — lockstep rounds over a fixed sparse graph (Erdős–Rényi, mean degree
8, Metropolis), huang2015, n = 10, T = 10, one run. Target at N = 10^6: at
most 20 s and 8 GB.

Building the graph sequence is timed separately (it is the topology
package's work, not the engine's). Each size runs in a fresh subprocess so
that its peak resident memory (``ru_maxrss``) is its own. The machine's
one-minute load average before and after the runs is printed beside the
times (on a shared machine the wall time is the CPU time times the
contention; compare CPU times).

Run:  python benchmarks/bench_batch_big_runs.py [--deadline-sizes 10000 100000] [--lockstep-sizes 1000000]
      [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import gc, json, os, resource, statistics, sys, time, warnings
import numpy as np
import topology
from asyncdp import Deadline, Huang2015, LinkModel, Links, LogNormalLatency, Scenario, rendezvous_problem

kind, n_agents, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
horizon = 100 if kind == "deadline" else 10
rng = np.random.default_rng(0)
problem = rendezvous_problem(rng.uniform(-1, 1, size=(n_agents, 10)))
t0 = time.perf_counter()
if kind == "deadline":  # a fresh graph every round, every round materialized
    graph = topology.erdos_renyi(n_agents, 8.0 / n_agents, seed=1, rule="metropolis", length=horizon).take(horizon)
    extra = dict(timing=Deadline(period=1.0, deadline=0.8, drift=0.05),
                 links=Links(LinkModel(LogNormalLatency(median=0.2, sigma=0.5), loss=0.1)))
else:
    graph = topology.static(topology.erdos_renyi(n_agents, 8.0 / n_agents, seed=1, rule="metropolis",
                                                 length=1).weights(1))
    extra = {}
build_s = time.perf_counter() - t0
after_build_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
sc = Scenario(problem, graph, Huang2015(epsilon=1.0, c=0.2, q=0.5, p=0.8), horizon=horizon, seed=2, **extra)
times, cpu = [], []
load = [os.getloadavg()[0]]
for _ in range(repeats):
    w0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = sc.run(engine="batch", keep="final")
    times.append(time.perf_counter() - w0)
    cpu.append(time.process_time() - c0)
    sent = int(res.messages_sent)
    lost = int(res.messages_lost[0]) if res.messages_lost is not None else 0
    layout = res.metadata.get("stream_layout", "none (no link draws)")
    note = [str(w.message) for w in caught]
    del res
    gc.collect()
    load.append(os.getloadavg()[0])
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"kind": kind, "N": n_agents, "T": horizon, "build_s": build_s, "run_s": statistics.median(times),
                  "run_cpu_s": statistics.median(cpu), "messages": sent, "lost": lost, "layout": layout,
                  "after_build_rss_mb": after_build_mb, "peak_rss_mb": peak_mb, "warnings": len(note),
                  "load": load}))
"""


def run(kind: str, n: int, repeats: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(n), str(repeats)], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deadline-sizes", type=int, nargs="*", default=[10000, 100000])
    parser.add_argument("--lockstep-sizes", type=int, nargs="*", default=[1000000])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print("| timing | N | T | messages (lost) | stream layout | graph build | run (wall) | run (CPU) | peak RSS | "
          "load average (1 min) before / after the runs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind, sizes in (("deadline", args.deadline_sizes), ("lockstep", args.lockstep_sizes)):
        for n in sizes:
            r = run(kind, n, args.repeats)
            print(f"| {kind} | {r['N']:,} | {r['T']} | {r['messages']:,} ({r['lost']:,}) | {r['layout']} | "
                  f"{r['build_s']:.1f} s | {r['run_s']:.1f} s | {r['run_cpu_s']:.1f} s | {r['peak_rss_mb']:,.0f} MB "
                  f"(after the graph: {r['after_build_rss_mb']:,.0f} MB) | {r['load'][0]:.1f} / {r['load'][-1]:.1f} |",
                  flush=True)
    print(f"median of {args.repeats} run(s) per size")


if __name__ == "__main__":
    main()
