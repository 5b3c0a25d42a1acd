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
   bounds, audited once at ``N`` samples per input.

Run:  python benchmarks/bench_auditor.py [--samples 1000000] [--repeats 3] [--epsilon 0.1] [--seeds 0 1 2]
      [--large 10000000]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import median_time

from accounting.auditing import audit_mechanism, audit_samples, draw_samples
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


def large(epsilon: float, samples: int) -> None:
    print(f"\nlarge samples: {samples:,} per input, seed 0, claimed epsilon {epsilon}")
    for name in ("noisy-max-value-alg7", "svt-noisy-answers"):
        case = testbed_cases(epsilon)[name]
        seconds, r = median_time(lambda case=case: _audit(case, samples, 0), 1)
        print(f"{name}: certified epsilon lower bound {r.epsilon_lower_bound:.4f}, violation {r.violation}, "
              f"{seconds:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--skip-power", action="store_true")
    parser.add_argument("--large", type=int, default=0, metavar="N",
                        help="also audit the two DP-Sniper comparison cases at N samples per input (e.g. 10000000)")
    args = parser.parse_args()
    throughput(args.samples, args.repeats)
    if not args.skip_power:
        power(args.epsilon, args.seeds, SCAN)
    if args.large:
        large(args.epsilon, args.large)


if __name__ == "__main__":
    main()
