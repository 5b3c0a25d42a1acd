"""Benchmark: the black-box auditor (accounting.auditing) — throughput and detection power.

1. Throughput: 10^6 samples per input of a 10-dimensional output (Laplace
   mechanism on 10 counting queries, one of them changed), audited by
   ``audit_samples``. Baseline in the same run: drawing those samples
   (``draw_samples``, vectorized). Medians of ``--repeats`` runs. Target
   (issue 15): 10^6 samples audited in under 30 s on 2 cores.
2. Detection power: for each broken mechanism of ``accounting.auditing.testbed``
   (at ``--epsilon``, default 0.1 as in the DP-Sniper evaluation), the smallest
   sample count per input in ``--scan`` at which ``audit_mechanism`` reports a
   violation at 95% confidence for every seed in ``--seeds``; the correct
   mechanisms are scanned too (a violation there would be a false alarm), and
   the certified lower bound at the largest count is printed.

3. ``--large N``: the two mechanisms compared with DP-Sniper's published
   bounds (``--cases``), audited once at ``N`` samples per input at each
   ``--confidence``; above ``MAX_IN_MEMORY`` samples ``audit_mechanism``
   streams the certification samples (memory independent of ``N``). Prints
   the time, samples per second (both inputs) and the peak resident memory.
   ``--skip-throughput --skip-power`` runs this part alone.

Run:  python benchmarks/bench_auditor.py [--samples 1000000] [--repeats 3] [--epsilon 0.1] [--seeds 0 1 2]
      [--large 220000000 --confidence 0.9 0.95 --cases noisy-max-value-alg7 --skip-throughput --skip-power]
"""

from __future__ import annotations

import argparse
import resource

import numpy as np
from common import median_time

from accounting.auditing import audit_mechanism, audit_samples, draw_samples
from accounting.auditing.mechanism import MAX_SELECT
from accounting.auditing.testbed import laplace_mechanism, testbed_cases

SCAN = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)


def throughput(samples: int, repeats: int) -> None:
    mech = laplace_mechanism(0.1)
    q = np.zeros(10)
    q_prime = q.copy()
    q_prime[0] = 1.0

    def draw() -> tuple[np.ndarray, np.ndarray]:
        return (draw_samples(mech, q, samples, seed=1, progress=False),
                draw_samples(mech, q_prime, samples, seed=2, progress=False))

    draw_s, (x, xp) = median_time(draw, repeats)
    audit_s, report = median_time(lambda: audit_samples(x, xp, epsilon=0.1), repeats)
    print(f"throughput: {samples} samples per input, output shape {x.shape[1:]}")
    print(f"draw both inputs (baseline), median of {repeats}: {draw_s:.3f} s")
    print(f"audit_samples,               median of {repeats}: {audit_s:.3f} s "
          f"({2 * samples / audit_s:,.0f} samples/s)")
    print(f"ratio audit/draw: {audit_s / draw_s:.2f}   target audit < 30 s: {'met' if audit_s < 30 else 'NOT met'}")
    print(f"certified epsilon lower bound {report.epsilon_lower_bound:.4f} (claim 0.1, correct mechanism)")


def _audit(case, n: int, seed: int):
    return audit_mechanism(case.mechanism, case.data, case.data_prime, epsilon=case.epsilon, delta=case.delta,
                           samples=n, seed=seed, progress=False)


def power(epsilon: float, seeds: list[int], scan: tuple[int, ...]) -> None:
    print(f"\ndetection at 95% confidence, claimed epsilon {epsilon}, seeds {seeds}")
    print(f"| mechanism | private | smallest n caught (all seeds) | lower bounds at n = {scan[-1]:,} |")
    print("| --- | --- | --- | --- |")
    for name, case in testbed_cases(epsilon).items():
        caught_at = None
        for n in scan[:-1]:
            if all(_audit(case, n, s).violation for s in seeds):
                caught_at = n
                break
        last = [_audit(case, scan[-1], s) for s in seeds]
        if caught_at is None and all(r.violation for r in last):
            caught_at = scan[-1]
        shown = f"not caught up to {scan[-1]:,}" if caught_at is None else f"{caught_at:,}"
        bounds = ", ".join(f"{r.epsilon_lower_bound:.3f}" for r in last)
        print(f"| {name} | {case.private} | {shown} | {bounds} |")


COMPARED = ("noisy-max-value-alg7", "svt-noisy-answers")
"""The testbed cases with a published DP-Sniper bound (ReportNoisyMax3 and SparseVectorTechnique3)."""


def large(epsilon: float, samples: int, confidences: list[float], names: list[str], max_select: int) -> None:
    """Audit each case once at ``samples`` per input (streaming above ``MAX_IN_MEMORY``), at each confidence."""
    print(f"\nlarge samples: {samples:,} per input, seed 0, claimed epsilon {epsilon}, max_select {max_select:,}")
    print("| mechanism | confidence | certified epsilon lower bound | violation | event | k, k' / n | time (s) |"
          " samples/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        case = testbed_cases(epsilon)[name]
        for conf in confidences:
            def run(case=case, conf=conf):
                return audit_mechanism(case.mechanism, case.data, case.data_prime, epsilon=case.epsilon,
                                       delta=case.delta, samples=samples, seed=0, confidence=conf,
                                       max_select=max_select)
            seconds, r = median_time(run, 1)
            c = r.counts
            print(f"| {name} | {conf} | {r.epsilon_lower_bound:.4f} | {r.violation} | {r.event} | "
                  f"{c['k']:,}, {c['k_prime']:,} / {c['n']:,} | {seconds:.0f} | {2 * samples / seconds:,.0f} |",
                  flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of the process: {peak:,.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--skip-power", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--large", type=int, default=0, metavar="N",
                        help="also audit the DP-Sniper comparison cases at N samples per input (e.g. 220000000)")
    parser.add_argument("--confidence", type=float, nargs="+", default=[0.95],
                        help="confidences of the --large audits (DP-Sniper's is 0.9)")
    parser.add_argument("--cases", nargs="+", default=list(COMPARED), choices=sorted(testbed_cases()),
                        help="testbed cases of the --large audits")
    parser.add_argument("--max-select", type=int, default=MAX_SELECT,
                        help="rows per input choosing the event when streaming")
    args = parser.parse_args()
    if not args.skip_throughput:
        throughput(args.samples, args.repeats)
    if not args.skip_power:
        power(args.epsilon, args.seeds, SCAN)
    if args.large:
        large(args.epsilon, args.large, args.confidence, args.cases, args.max_select)


if __name__ == "__main__":
    main()
