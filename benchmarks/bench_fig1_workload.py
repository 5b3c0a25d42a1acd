"""Benchmark: the full Fig. 1 workload of Huang, Mitra and Vaidya (ICDCN 2015) on the batch engine.

Seven privacy levels x 5000 runs.

Parameters are given (no tuning in the timed part): by default (c, q, p) =
(0.2, 0.5, 0.8) for every epsilon, or the tuned values of a reproduction's
summary (``--summary out/huang2015-fig1/fig1_summary.json``). Baseline in the
same run: the same workload slice (``--slice`` runs at epsilon = 1) on the
SimPy engine and on the batch engine, giving the batch/SimPy speed ratio per run.
Targets (issue 5): full workload under 5 s wall on 2 cores; ratio at least 100x.

Run:  python benchmarks/bench_fig1_workload.py [--runs 5000] [--slice 20] [--repeats 3] [--summary FILE]
"""

from __future__ import annotations

import argparse
import json

from common import median_time

from asyncdp.papers.huang2015.reproduce.fig1 import PAPER_EPSILONS, example2_scenario_factory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--slice", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--summary", default=None)
    args = parser.parse_args()
    factory = example2_scenario_factory()
    params = {e: (0.2, 0.5, 0.8) for e in PAPER_EPSILONS}
    if args.summary:
        for entry in json.load(open(args.summary))["per_epsilon"]:
            if entry["epsilon"] in params:
                params[entry["epsilon"]] = (entry["c"], entry["q"], entry["p"])

    def workload():
        return [factory(*params[e], e).run(engine="batch", runs=args.runs, keep="final") for e in PAPER_EPSILONS]

    full_s, results = median_time(workload, args.repeats)
    sc = factory(*params[1.0], 1.0)
    simpy_s, _ = median_time(lambda: [sc.replace(seed=r, record_transcript=False).run() for r in range(args.slice)],
                             args.repeats)
    batch_s, _ = median_time(lambda: sc.run(engine="batch", runs=args.slice, keep="final"), args.repeats)
    horizon = sc.horizon
    print(f"Fig. 1 workload: {len(PAPER_EPSILONS)} epsilons x {args.runs} runs, N = {sc.problem.num_agents}, "
          f"T = {horizon}")
    print(f"batch engine, full workload, median of {args.repeats}: {full_s:.3f} s "
          f"(target < 5 s: {'met' if full_s < 5 else 'NOT met'})")
    print(f"slice of {args.slice} runs at epsilon = 1: SimPy {simpy_s:.3f} s, batch {batch_s:.4f} s")
    per_run_simpy = simpy_s / args.slice
    per_run_batch_full = full_s / (len(PAPER_EPSILONS) * args.runs)
    print(f"per run: SimPy {per_run_simpy * 1e3:.2f} ms, batch (full workload) {per_run_batch_full * 1e6:.1f} us; "
          f"batch/SimPy speed ratio {per_run_simpy / per_run_batch_full:,.0f}x (target >= 100x)")
    print("mean d per epsilon:", {e: round(float(r.optimality_error[:, -1].mean()), 5)
                                  for e, r in zip(PAPER_EPSILONS, results)})


if __name__ == "__main__":
    main()
