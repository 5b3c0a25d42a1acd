"""Benchmark: the batch engine on Deadline timing with lossy links (issue 16).

Part 1 — Monte-Carlo of ``examples/async_lossy_links.py`` (10 agents, T = 60,
deadline timing with 5% clock drift, lognormal latency, 10% loss): ``--runs``
runs on the batch engine (``keep="final"``, and ``keep="all"`` with
transcripts, the privacy checker's input) against the SimPy engine measured
on ``--simpy-runs`` runs in the same process (per-run time extrapolated).
Target: batch/SimPy speed ratio per run at least 50x.

Part 2 — ``N`` agents (default 10^3 and 10^4), n = 10, T = 100, a sparse
Erdős–Rényi graph (mean degree 8) held fixed over the rounds, deadline timing
(drift 5%), lognormal latency, 10% loss, one run, each size in a fresh
subprocess so that its peak resident memory is its own. Targets: under 30 s
at N = 10^4, memory linear in N.

Run:  python benchmarks/bench_batch_deadline.py [--runs 10000] [--simpy-runs 50] [--sizes 1000 10000] [--repeats 3]
      [--time-varying] [--skip-large] [--skip-monte-carlo]
"""

from __future__ import annotations

import argparse
import json
import runpy
import subprocess
import sys
from pathlib import Path

from common import median_time

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import gc, json, resource, statistics, sys, time
import numpy as np
import topology
from asyncdp import Deadline, Huang2015, LinkModel, Links, LogNormalLatency, Scenario, rendezvous_problem

n_agents, repeats, varying = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
rng = np.random.default_rng(0)
problem = rendezvous_problem(rng.uniform(-1, 1, size=(n_agents, 10)))
if varying:  # a fresh graph every round: every round's links are new
    graph = topology.erdos_renyi(n_agents, 8.0 / n_agents, seed=1, rule="metropolis", length=100).take(100)
else:
    graph = topology.static(topology.erdos_renyi(n_agents, 8.0 / n_agents, seed=1, rule="metropolis",
                                                 length=1).weights(1))
sc = Scenario(problem, graph, Huang2015(epsilon=1.0, c=0.2, q=0.5, p=0.8), horizon=100, seed=2,
              timing=Deadline(period=1.0, deadline=0.8, drift=0.05),
              links=Links(LinkModel(LogNormalLatency(median=0.2, sigma=0.5), loss=0.1)))
times = []
for _ in range(repeats):
    t0 = time.perf_counter()
    res = sc.run(engine="batch", keep="final")
    times.append(time.perf_counter() - t0)
    sent, lost = int(res.messages_sent), int(res.messages_lost[0])
    del res
    gc.collect()
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"N": n_agents, "messages": sent, "lost": lost, "run_s": statistics.median(times),
                  "peak_rss_mb": peak_mb}))
"""


def monte_carlo(runs: int, simpy_runs: int, repeats: int) -> None:
    scenario = runpy.run_path(str(ROOT / "examples" / "async_lossy_links.py"))["scenario"]
    simpy_s, _ = median_time(lambda: [scenario.replace(seed=s).run() for s in range(simpy_runs)], repeats)
    simpy_nt_s, _ = median_time(
        lambda: [scenario.replace(seed=s, record_transcript=False).run() for s in range(simpy_runs)], repeats)
    final_s, _ = median_time(lambda: scenario.run(engine="batch", runs=runs, keep="final"), repeats)
    full_s, _ = median_time(lambda: scenario.run(engine="batch", runs=runs, transcripts=True), 1)
    per_simpy, per_simpy_nt = simpy_s / simpy_runs, simpy_nt_s / simpy_runs
    per_final, per_full = final_s / runs, full_s / runs
    print(f"examples/async_lossy_links.py: N = {scenario.problem.num_agents}, T = {scenario.horizon}, "
          f"{runs} runs on the batch engine, SimPy on {simpy_runs} runs")
    print(f"SimPy per run: {per_simpy * 1e3:.2f} ms (transcript), {per_simpy_nt * 1e3:.2f} ms (no transcript)")
    print(f"batch, keep='final': {final_s:.2f} s = {per_final * 1e6:.0f} us per run; "
          f"ratio {per_simpy_nt / per_final:.0f}x vs SimPy without transcript "
          f"(target >= 50x: {'met' if per_simpy_nt / per_final >= 50 else 'NOT met'})")
    print(f"batch, keep='all' + transcripts (messages and schedules of every run): {full_s:.2f} s = "
          f"{per_full * 1e6:.0f} us per run; ratio {per_simpy / per_full:.0f}x vs SimPy with transcript")


def large(sizes: list[int], repeats: int, varying: bool) -> None:
    rows = []
    for n in sizes:
        out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(repeats), "1" if varying else "0"],
                             capture_output=True, text=True, check=True, cwd=ROOT)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    for row in rows:
        print(f"N = {row['N']:>6}: {row['messages']} messages ({row['lost']} lost), run {row['run_s']:.2f} s "
              f"(median of {repeats}), peak RSS {row['peak_rss_mb']:.0f} MB")
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        print(f"N x{b['N'] / a['N']:.0f}: time x{b['run_s'] / a['run_s']:.1f}, "
              f"peak RSS x{b['peak_rss_mb'] / a['peak_rss_mb']:.1f}")
        big = [r for r in rows if r["N"] >= 10000]
        if big:
            print(f"target N = 10^4 under 30 s: {'met' if big[0]['run_s'] < 30 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--simpy-runs", type=int, default=50)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-monte-carlo", action="store_true")
    parser.add_argument("--time-varying", action="store_true", help="part 2 on a fresh graph every round")
    args = parser.parse_args()
    if not args.skip_large:  # first: a child's peak RSS can include its parent's at the fork
        large(args.sizes, args.repeats, args.time_varying)
    if not args.skip_monte_carlo:
        monte_carlo(args.runs, args.simpy_runs, args.repeats)


if __name__ == "__main__":
    main()
