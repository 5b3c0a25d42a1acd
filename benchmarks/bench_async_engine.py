"""Benchmark: message deliveries per second of the ``async`` SimPy engine on a 100-agent ring.

Baseline in the same run: a bare SimPy program with the same message pattern
(100 processes waking at Exp(1) times, each sending to its two ring
neighbours with the same latency and loss draws) and no algorithm work.
Target (issue 3): the engine reaches at least 25% of the bare-SimPy rate.

Each repeat runs the three workloads back to back (bare SimPy, the engine
with its transcript, the engine without), so that a slow phase of a noisy
machine hits all three alike; we report the median time of each and the
median over repeats of the per-repeat rate ratios.

One timed sample of the baseline is ``--bare-batch`` bare runs back to back
(time divided by the batch): by default as many as last about as long as one
engine run. A sample's chance of catching a slow phase of the host grows
with its length, so a median over short baseline samples would otherwise
favour the baseline.

Run:  python benchmarks/bench_async_engine.py [--agents 100] [--rounds 200] [--repeats 9] [--bare-batch K]
      python benchmarks/bench_async_engine.py --workload engine --rounds 60   (one run, e.g. under a profiler)
"""

from __future__ import annotations

import argparse
import statistics
import time

import networkx as nx
import numpy as np
import simpy

import topology
from asyncdp import Async, Huang2015, LinkModel, Links, LogNormalLatency, Scenario, rendezvous_problem
from asyncdp.engine.links import link_rng
from asyncdp.engine.timing import agent_clock_rng

LINK = LinkModel(latency=LogNormalLatency(median=0.1, sigma=0.5), loss=0.05)


def bare_simpy(n: int, rounds: int, seed: int) -> int:
    """Send the same pattern with plain SimPy; returns the number of deliveries."""
    env = simpy.Environment()
    inbox = [dict() for _ in range(n)]
    links = {(i, j): link_rng(seed, i, j) for i in range(n) for j in ((i - 1) % n, (i + 1) % n)}
    delivered = [0]

    def deliver(j, i, payload):
        inbox[j][i] = payload
        delivered[0] += 1

    def agent(i):
        rng = agent_clock_rng(seed, i)
        payload = np.zeros(2)
        for _ in range(rounds):
            yield env.timeout(rng.exponential(1.0))
            for j in ((i - 1) % n, (i + 1) % n):
                lost = links[(i, j)].random() < LINK.loss
                delay = LINK.latency.sample(links[(i, j)])
                if not lost:
                    ev = env.timeout(delay)
                    ev.callbacks.append(lambda _e, j=j, i=i, p=payload: deliver(j, i, p))

    for i in range(n):
        env.process(agent(i))
    env.run()
    return delivered[0]


def scenario(n: int, rounds: int, seed: int, transcript: bool = True) -> Scenario:
    """``huang2015`` on a ring of ``n`` agents, ``Async(rate=1)``, the links of the baseline."""
    addresses = np.random.default_rng(seed).uniform(-1, 1, (n, 2))
    return Scenario(
        rendezvous_problem(addresses),
        topology.from_networkx([nx.cycle_graph(n)], "metropolis", periodic=True),
        Huang2015(epsilon=1.0, c=0.1, q=0.9, p=0.95),
        timing=Async(rate=1.0), links=Links(LINK), horizon=rounds, seed=seed, record_transcript=transcript,
    )


def engine(n: int, rounds: int, seed: int, transcript: bool = True) -> int:
    """Build and run the scenario; returns the number of deliveries."""
    result = scenario(n, rounds, seed, transcript).run()
    return result.messages_sent - result.messages_lost


WORKLOADS = {
    "bare": bare_simpy,
    "engine": engine,
    "engine-no-transcript": lambda n, rounds, seed: engine(n, rounds, seed, transcript=False),
}


def _timed(fn) -> tuple[float, int]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--bare-batch", type=int, default=None,
                        help="bare runs per timed baseline sample (default: about one engine run's duration)")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default=None,
                        help="run only this workload, once, and print its deliveries (for profilers)")
    args = parser.parse_args()
    n, T, seed = args.agents, args.rounds, 1
    if args.workload:
        print(WORKLOADS[args.workload](n, T, seed))
        return
    engine(n, 10, seed)  # first use imports SimPy and warms caches
    batch = args.bare_batch
    if batch is None:
        bare_once = statistics.median(_timed(lambda: bare_simpy(n, T, seed))[0] for _ in range(3))
        engine_once = statistics.median(_timed(lambda: engine(n, T, seed))[0] for _ in range(3))
        batch = max(1, round(engine_once / bare_once))
    if batch < 1:
        parser.error(f"--bare-batch must be >= 1, got {batch}")
    workloads = {
        "bare SimPy (baseline)": lambda: [bare_simpy(n, T, seed) for _ in range(batch)][-1],
        "async engine, transcript recorded": lambda: engine(n, T, seed),
        "async engine, no transcript": lambda: engine(n, T, seed, transcript=False),
    }
    per_sample = {"bare SimPy (baseline)": batch}
    times: dict[str, list[float]] = {k: [] for k in workloads}
    deliveries: dict[str, int] = {}
    for _ in range(args.repeats):
        for name, fn in workloads.items():
            seconds, deliveries[name] = _timed(fn)
            times[name].append(seconds / per_sample.get(name, 1))
    counts = set(deliveries.values())
    assert len(counts) == 1, f"the workloads deliver different message counts: {deliveries}"
    bare = times["bare SimPy (baseline)"]
    print(f"ring of {n} agents, {T} wake-ups each, lognormal latency (median 0.1, sigma 0.5), 5% loss; "
          f"{args.repeats} interleaved repeats; baseline samples of {batch} runs")
    print("| what | deliveries | median time per run (s) | deliveries / s | ratio to bare (median over repeats) |")
    print("| --- | --- | --- | --- | --- |")
    for name, ts in times.items():
        med = statistics.median(ts)
        ratio = statistics.median(b / t for b, t in zip(bare, ts))
        print(f"| {name} | {deliveries[name]:,} | {med:.3f} | {deliveries[name] / med:,.0f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
