"""Benchmark: message deliveries per second of the ``async`` SimPy engine on a 100-agent ring.

Baseline in the same run: a bare SimPy program with the same message pattern
(100 processes waking at Exp(1) times, each sending to its two ring
neighbours with the same latency and loss draws) and no algorithm work.
Target (issue 3): the engine reaches at least 25% of the bare-SimPy rate.

Run:  python benchmarks/bench_async_engine.py [--agents 100] [--rounds 200] [--repeats 3]
"""

from __future__ import annotations

import argparse

import networkx as nx
import numpy as np
import simpy
from common import median_time

import topology
from asyncdp import Async, Huang2015, LinkModel, Links, LogNormalLatency, Scenario, rendezvous_problem
from asyncdp.links import link_rng
from asyncdp.timing import agent_clock_rng

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


def engine(n: int, rounds: int, seed: int, transcript: bool = True) -> int:
    addresses = np.random.default_rng(seed).uniform(-1, 1, (n, 2))
    sc = Scenario(
        rendezvous_problem(addresses),
        topology.from_networkx([nx.cycle_graph(n)], "metropolis", periodic=True),
        Huang2015(epsilon=1.0, c=0.1, q=0.9, p=0.95),
        timing=Async(rate=1.0), links=Links(LINK), horizon=rounds, seed=seed, record_transcript=transcript,
    )
    result = sc.run()
    return result.messages_sent - result.messages_lost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n, T, seed = args.agents, args.rounds, 1
    bare_s, bare_n = median_time(lambda: bare_simpy(n, T, seed), args.repeats)
    eng_s, eng_n = median_time(lambda: engine(n, T, seed), args.repeats)
    lean_s, lean_n = median_time(lambda: engine(n, T, seed, transcript=False), args.repeats)
    print(f"ring of {n} agents, {T} wake-ups each, lognormal latency, 5% loss")
    print(f"bare SimPy: {bare_n} deliveries, median {bare_s:.3f} s, {bare_n / bare_s:,.0f} deliveries/s")
    print(f"async engine: {eng_n} deliveries, median {eng_s:.3f} s, {eng_n / eng_s:,.0f} deliveries/s")
    print(f"async engine, no transcript: {lean_n} deliveries, median {lean_s:.3f} s, "
          f"{lean_n / lean_s:,.0f} deliveries/s")
    print(f"ratio engine/bare: {(eng_n / eng_s) / (bare_n / bare_s):.2f} with transcript, "
          f"{(lean_n / lean_s) / (bare_n / bare_s):.2f} without (target >= 0.25)")


if __name__ == "__main__":
    main()
