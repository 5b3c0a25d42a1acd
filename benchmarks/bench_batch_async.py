"""Benchmark: the batch engine on Async timing, and every run's realized schedules at once.

Part 1 — Monte-Carlo of ``examples/async_lossy_links.py`` with
``timing=Async(rate=1.0)`` instead of its deadline rounds (10 agents, T = 60,
Poisson wake-ups, lognormal latency, 10% loss): ``--runs`` runs on the batch
engine (``keep="final"``; and ``keep="all"`` with transcripts, the privacy
checker's input) against the SimPy engine on ``--simpy-runs`` runs (per-run
time extrapolated), without and with transcripts. Each repeat times the
SimPy runs and the batch back to back, so both see the same load; the
report gives medians over repeats of wall time and of process CPU time (the
machine may be shared: CPU time is less disturbed by other jobs).
Targets: per run at least 50x faster than SimPy without transcript, at least
20x with transcripts.

Part 2 — the realized schedules of ``--schedule-runs`` runs (Async and
Deadline): ``BatchResult.schedules()`` (all runs as columns) against the
batch simulation of those runs and against the per-run ``schedule(r)`` loop
(timed on 200 runs, extrapolated). Target: ``schedules()`` costs at most the
simulation.

Run:  python benchmarks/bench_batch_async.py [--runs 10000] [--simpy-runs 30] [--repeats 3] [--schedule-runs 1000]
"""

from __future__ import annotations

import argparse
import runpy
import statistics
import time
from pathlib import Path

from asyncdp import Async

ROOT = Path(__file__).resolve().parents[1]


def timed(fn):
    """``(wall s, CPU s, result)`` of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def monte_carlo(runs: int, simpy_runs: int, repeats: int) -> None:
    base = runpy.run_path(str(ROOT / "examples" / "async_lossy_links.py"))["scenario"]
    sc = base.replace(timing=Async(rate=1.0))
    cases = {
        "simpy": lambda: [sc.replace(seed=s, record_transcript=False).run() for s in range(simpy_runs)],
        "simpy+transcript": lambda: [sc.replace(seed=s, record_transcript=True).run() for s in range(simpy_runs)],
        "batch final": lambda: sc.run(engine="batch", runs=runs, keep="final"),
        "batch all+transcripts": lambda: sc.run(engine="batch", runs=runs, transcripts=True),
    }
    count = {"simpy": simpy_runs, "simpy+transcript": simpy_runs, "batch final": runs, "batch all+transcripts": runs}
    wall: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    sc.run(engine="batch", runs=20)  # imports and first-call costs out of the timings
    for _ in range(repeats):
        for name, fn in cases.items():
            w, c, _ = timed(fn)
            wall[name].append(w / count[name])
            cpu[name].append(c / count[name])
    med_w = {k: statistics.median(v) for k, v in wall.items()}
    med_c = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"examples/async_lossy_links.py with Async(rate=1.0): N = {sc.problem.num_agents}, T = {sc.horizon}, "
          f"{runs} batch runs, SimPy on {simpy_runs} runs, median of {repeats} repeats")
    print("| | per run (wall) | per run (CPU) | SimPy/batch (wall) | SimPy/batch (CPU) |")
    print("| --- | --- | --- | --- | --- |")
    for name in cases:
        ref = "simpy+transcript" if "transcript" in name else "simpy"
        ratio = "" if name.startswith("simpy") else (
            f"{med_w[ref] / med_w[name]:.0f}x | {med_c[ref] / med_c[name]:.0f}x")
        cells = f"{ratio} |" if ratio else " | |"
        print(f"| {name} | {med_w[name] * 1e3:.3f} ms | {med_c[name] * 1e3:.3f} ms | {cells}")


def schedules(runs: int) -> None:
    base = runpy.run_path(str(ROOT / "examples" / "async_lossy_links.py"))["scenario"]
    print(f"\nrealized schedules of {runs} runs (keep='all', transcripts):")
    print("| timing | batch simulation | schedules() | schedule(r) loop (extrapolated) |")
    print("| --- | --- | --- | --- |")
    for name, sc in (("Async(rate=1.0)", base.replace(timing=Async(rate=1.0))), ("Deadline (example)", base)):
        sim_w, _, batch = timed(lambda sc=sc: sc.run(engine="batch", runs=runs, transcripts=True))
        cols_w, _, _ = timed(batch.schedules)
        k = min(200, runs)
        loop_w, _, _ = timed(lambda batch=batch, k=k: [batch.schedule(r) for r in range(k)])
        print(f"| {name} | {sim_w:.2f} s | {cols_w:.3f} s ({cols_w / sim_w:.2f}x the simulation) | "
              f"{loop_w / k * runs:.2f} s |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--simpy-runs", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--schedule-runs", type=int, default=1000)
    args = parser.parse_args()
    monte_carlo(args.runs, args.simpy_runs, args.repeats)
    schedules(args.schedule_runs)


if __name__ == "__main__":
    main()
