"""Benchmark: SimPy engine start-up and run time at N = 10^3, 10^4, 10^5 agents (issue 17).

Scenario: private rendezvous (``huang2015``, epsilon = 1) on a ring of N
agents with Metropolis weights, ``--rounds`` rounds, no transcript, under
each of ``--timings``: ``lockstep`` (lossless, zero latency) and
``deadline`` (deadline rounds with 5% clock drift, lognormal latency, 10%
loss, renormalize). We time, separately, the engine's start-up
(``_Run(scenario)`` under the run's collector policy: initial states,
arrays, bookkeeping) and a whole ``run_simpy`` call, take the
median over ``--repeats`` repeats, and report each time divided by N relative
to the same ratio at N = 10^3 measured in the same run: 1.0 means linear
growth, N / 10^3 would mean quadratic. Before the fix the start-up called
``Scenario.initial_points()`` (which projects the whole (N, n) array) once
per agent; the last column estimates what that alone cost (N calls of one
timed ``initial_points()``).

Run:  python -m benchmarks.bench_simpy_startup [--sizes 1000 10000 100000] [--rounds 5] [--repeats 3]
      [--timings lockstep deadline] [--drift 0.05]
"""

from __future__ import annotations

import argparse
import time

import networkx as nx
import numpy as np

import topology
from asyncdp import Deadline, Huang2015, LinkModel, Links, LogNormalLatency, Scenario, rendezvous_problem
from asyncdp.engine.simpy_engine import _Run, _tuned_collector, run_simpy
from benchmarks.common import median_time


def ring_scenario(n: int, rounds: int, timing: str = "lockstep", drift: float = 0.05) -> Scenario:
    """``huang2015`` rendezvous of ``n`` agents on a ring, ``rounds`` rounds, no transcript."""
    addresses = np.random.default_rng(0).uniform(-1.0, 1.0, size=(n, 2))
    seq = topology.from_networkx([nx.cycle_graph(n)], "metropolis", periodic=True)
    sc = Scenario(rendezvous_problem(addresses), seq, Huang2015(epsilon=1.0, c=0.2, q=0.3, p=0.75),
                  horizon=rounds, seed=1, record_transcript=False)
    if timing == "deadline":
        sc = sc.replace(timing=Deadline(period=1.0, deadline=0.8, drift=drift, missing="renormalize"),
                        links=Links(LinkModel(LogNormalLatency(median=0.2, sigma=0.5), loss=0.1)))
    return sc


def _startup(sc: Scenario) -> None:
    """What ``run_simpy`` does before the first event: the run's set-up, under its collector policy."""
    with _tuned_collector(sc.problem.num_agents):
        _Run(sc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timings", nargs="+", default=["lockstep", "deadline"], choices=["lockstep", "deadline"])
    ap.add_argument("--drift", type=float, default=0.05,
                    help="deadline timing's clock drift (0: agents wake in index order)")
    args = ap.parse_args()
    print(f"rounds={args.rounds} repeats={args.repeats} (medians; ratio = (time / N) / (time / N at N={args.sizes[0]}))")
    print(f"{'timing':>9} {'N':>8} {'start-up s':>11} {'ratio':>6} {'run s':>9} {'ratio':>6} "
          f"{'old N x initial_points() s':>27}")
    for timing in args.timings:
        rows = []
        for n in args.sizes:
            sc = ring_scenario(n, args.rounds, timing, args.drift)
            startup, _ = median_time(lambda sc=sc: _startup(sc), args.repeats)
            run, _ = median_time(lambda sc=sc: run_simpy(sc), args.repeats)
            start = time.perf_counter()
            sc.initial_points()
            old_extra = (time.perf_counter() - start) * n
            rows.append((n, startup, run, old_extra))
        n0, s0, r0, _ = rows[0]
        for n, s, r, old in rows:
            print(f"{timing:>9} {n:>8} {s:>11.3f} {(s / n) / (s0 / n0):>6.2f} {r:>9.3f} {(r / n) / (r0 / n0):>6.2f} "
                  f"{old:>27.2f}", flush=True)

if __name__ == "__main__":
    main()
