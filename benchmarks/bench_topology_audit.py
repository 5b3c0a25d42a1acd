"""Benchmark: audit a sparse sequence with N = 1000 nodes and T = 1000 rounds for huang2015.

Baseline measured in the same run: the time to build (generate, weight and
validate) the same 1000 rounds. Target (issue 2): the audit under 10 s on 2 cores.

Run:  python benchmarks/bench_topology_audit.py [--nodes 1000] [--rounds 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import platform

from common import median_time

import topology
from asyncdp.papers import assumption_set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n, T = args.nodes, args.rounds

    def build():
        seq = topology.erdos_renyi(n, 10.0 / n, seed=1, connected=True, length=T)
        return seq.take(T)  # materialize every round

    build_s, seq = median_time(build, args.repeats)
    audit_s, report = median_time(lambda: topology.audit(seq, assumption_set("huang2015")), args.repeats)
    nnz = sum(w.nnz for _, w in seq.rounds())
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"sequence: N={n}, T={T}, total nnz={nnz}")
    print(f"build (baseline), median of {args.repeats}: {build_s:.3f} s")
    print(f"audit huang2015, median of {args.repeats}: {audit_s:.3f} s")
    print(f"ratio audit/build: {audit_s / build_s:.2f}")
    print(f"all assumptions hold: {report.all_hold}")


if __name__ == "__main__":
    main()
