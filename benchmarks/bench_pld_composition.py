"""Benchmark: PLD composition of 10^4 heterogeneous Laplace releases (target < 2 s).

Ledger: ``--agents`` agents, ``releases / agents`` rounds each; agent i's
Laplace scale in round t is ``b0 * (1 + i / agents) * decay^t`` (a geometrically
decaying noise schedule, every agent with its own base scale), sensitivity 1,
so all 10^4 noise multipliers are distinct and grouping identical releases
does not help. Subject: ``pld_epsilon`` (tree engine) network-wide at
delta = 1e-6. Baselines measured in the same run: basic composition and
``rdp_epsilon`` of the same ledger, and dp_accounting's ``PLDAccountant``
(``engine="accountant"``) on the first ``--accountant-releases`` releases.

Run:  python benchmarks/bench_pld_composition.py [--releases 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import platform

from common import median_time

from accounting.composition import basic_composition, pld_epsilon, rdp_epsilon
from accounting.ledger import Ledger, Release


def heterogeneous_ledger(releases: int, agents: int, b0: float, decay: float) -> Ledger:
    """``releases`` Laplace releases with distinct, geometrically decaying scales."""
    rounds = -(-releases // agents)
    out = []
    for t in range(1, rounds + 1):
        for i in range(agents):
            if len(out) == releases:
                break
            out.append(Release(agent=i, round=t, time=float(t), mechanism="laplace",
                               scale=b0 * (1 + i / agents) * decay ** t, dimension=1))
    return Ledger(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=10000)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--b0", type=float, default=200.0, help="base Laplace scale")
    parser.add_argument("--decay", type=float, default=0.98, help="per-round scale factor")
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--interval", type=float, default=1e-4, help="PLD value_discretization_interval")
    parser.add_argument("--accountant-releases", type=int, default=1000,
                        help="releases given to dp_accounting's PLDAccountant (sequential, slow)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    led = heterogeneous_ledger(args.releases, args.agents, args.b0, args.decay)
    ratios = {1.0 / r.scale for r in led}
    sub = Ledger(list(led)[: args.accountant_releases])

    basic_s, basic = median_time(lambda: basic_composition(led, 1.0), args.repeats)
    rdp_s, rdp = median_time(lambda: rdp_epsilon(led, 1.0, args.delta), args.repeats)
    pld_s, pld = median_time(
        lambda: pld_epsilon(led, 1.0, args.delta, value_discretization_interval=args.interval), args.repeats)
    sub_tree_s, sub_tree = median_time(
        lambda: pld_epsilon(sub, 1.0, args.delta, value_discretization_interval=args.interval), args.repeats)
    sub_acc_s, sub_acc = median_time(
        lambda: pld_epsilon(sub, 1.0, args.delta, value_discretization_interval=args.interval,
                            engine="accountant"), 1)

    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"ledger: {len(led)} Laplace releases, {args.agents} agents, {len(ratios)} distinct noise multipliers, "
          f"per-release epsilon in [{min(ratios):.4g}, {max(ratios):.4g}]")
    print(f"delta = {args.delta:g}, value_discretization_interval = {args.interval:g}")
    print(f"basic composition (baseline), median of {args.repeats}: {basic_s:.3f} s  epsilon = {basic:.4f}")
    print(f"rdp_epsilon (baseline),       median of {args.repeats}: {rdp_s:.3f} s  epsilon = {rdp:.4f}")
    print(f"pld_epsilon (tree),           median of {args.repeats}: {pld_s:.3f} s  epsilon = {pld:.4f}")
    print(f"ratio pld / basic: {pld_s / basic_s:.1f}   ratio pld / rdp: {pld_s / rdp_s:.2f}   "
          f"target pld < 2 s: {'met' if pld_s < 2 else 'NOT met'}")
    print(f"first {len(sub)} releases: tree {sub_tree_s:.3f} s (eps {sub_tree:.6f}) vs "
          f"PLDAccountant {sub_acc_s:.3f} s (eps {sub_acc:.6f}), ratio {sub_acc_s / sub_tree_s:.1f}")


if __name__ == "__main__":
    main()
