"""Benchmark: exact replay of 10^4 transcripts of the rendezvous example (N = 10, T = 100).

Baseline in the same run: simulating those transcripts (lockstep, vectorized
over runs, with the same per-agent rule). Target (issue 4): replay under 5 s.

Run:  python benchmarks/bench_replay.py [--runs 10000] [--horizon 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from common import median_time

from accounting.replay import replay_loss, sample_transcripts
from asyncdp import load_script
from asyncdp.privacy import replay_rule, replay_setup

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "huang2015_rendezvous.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--horizon", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sc = load_script(EXAMPLE)["scenario"].replace(horizon=args.horizon)
    adj = sc.replace(problem=sc.problem.adjacent(0, address=[-1.0, -1.0]))
    setup, rule, rule_p = replay_setup(sc), replay_rule(sc), replay_rule(adj)
    sim_s, ys = median_time(lambda: sample_transcripts(setup, rule, args.runs, seed=1), args.repeats)
    rep_s, losses = median_time(lambda: replay_loss(ys, setup, rule, rule_p), args.repeats)
    n_agents = sc.problem.num_agents
    print(f"{args.runs} transcripts, N={n_agents}, T={args.horizon}, n={sc.problem.dim}")
    print(f"simulate transcripts (baseline), median of {args.repeats}: {sim_s:.3f} s")
    print(f"replay both problems,            median of {args.repeats}: {rep_s:.3f} s")
    print(f"ratio replay/simulate: {rep_s / sim_s:.2f}   target replay < 5 s: {'met' if rep_s < 5 else 'NOT met'}")
    print(f"max privacy loss {losses.max():.4f} (epsilon {sc.algorithm.epsilon})")


if __name__ == "__main__":
    main()
