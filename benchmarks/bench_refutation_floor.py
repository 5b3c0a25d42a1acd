"""Benchmark: the refutation floor of each certified lower bound on delta(epsilon), Gaussian mechanisms.

For a true delta(epsilon) on a grid (epsilon = 1 by default), the Gaussian pair
``N(0, 1)`` vs ``N(mu, 1)`` with exactly that delta(1) is built
(``mu = 1 / gaussian_sigma(1, 1, delta)``), and the claim ``(1, delta / 10)``
(10x too small) is tested by each method from ``--runs`` samples (default
1,000) at confidence ``--confidence`` (default 0.95), over ``--seeds`` seeds:

* ``hoeffding``: ``accounting.auditors.plrv_audit`` (what the checker used);
* ``clopper-pearson``: ``threshold_delta_lower`` (17 thresholds, union bound);
* ``bernstein``: ``bernstein_delta_lower`` (Maurer-Pontil);
* ``cp+bernstein``: ``best_delta_lower`` (each at half the failure probability);
* ``importance``: ``importance_delta_lower`` on ``--runs`` samples of the
  Chernoff-tilted pair (``accounting.tilting``), cap given;
* ``exact profile``: ``PrivacyProfile(mu).delta(1)`` (no samples).

Losses are drawn directly from the loss law ``N(mu^2/2, mu^2)`` (the loss of
an engine run of a pair with these shifts has that law). Printed: per method
and true delta, the fraction of seeds refuting the claim, the median
certified bound over delta, and the smallest true delta refuted in every
seed (the floor); then the median time of one bound (``--repeats``).

Run:  python benchmarks/bench_refutation_floor.py [--runs 1000] [--seeds 20] [--confidence 0.95] [--epsilon 1.0]
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from common import median_time

from accounting.auditors import plrv_audit
from accounting.delta_bounds import (
    bernstein_delta_lower,
    best_delta_lower,
    importance_delta_lower,
    threshold_delta_lower,
)
from accounting.mechanisms import gaussian_sigma
from accounting.profiles import PrivacyProfile
from accounting.tilting import tilted_sample

TRUE_DELTAS = (1e-1, 5e-2, 3e-2, 2e-2, 1e-2, 5e-3, 3e-3, 2e-3, 1e-3, 5e-4, 3e-4, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10,
               1e-12)
METHODS = ("hoeffding", "clopper-pearson", "bernstein", "cp+bernstein", "importance", "exact profile")


def lower_bound(method: str, mu: float, eps: float, runs: int, conf: float, rng: np.random.Generator,
                claimed: float) -> float:
    """The method's certified lower bound on delta(eps) for the Gaussian pair with parameter mu."""
    if method == "exact profile":
        return PrivacyProfile(mu).delta(eps)
    if method == "importance":
        s = tilted_sample(gaussian_mus=[mu], epsilon=eps, runs=runs, rng=rng)
        return importance_delta_lower(s.losses, s.log_weights, eps, confidence=conf, cap=s.cap).lower
    losses = rng.normal(mu * mu / 2, mu, runs)
    if method == "hoeffding":
        return plrv_audit(losses, eps, claimed, confidence=conf).delta_lower
    if method == "clopper-pearson":
        return threshold_delta_lower(losses, eps, confidence=conf).lower
    if method == "bernstein":
        return bernstein_delta_lower(losses, eps, confidence=conf).lower
    return best_delta_lower(losses, eps, confidence=conf).lower


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    eps, conf = args.epsilon, args.confidence
    print(f"claim (epsilon={eps}, delta_true/10), {args.runs} samples, confidence {conf}, {args.seeds} seeds")
    print(f"{'method':<16}{'true delta':>11}{'refuted':>9}{'median bound/true':>19}")
    floors: dict[str, float | None] = {}
    for method in METHODS:
        floor = None
        for true in TRUE_DELTAS:
            mu = 1.0 / gaussian_sigma(1.0, eps, true)
            claimed = true / 10
            ss = np.random.SeedSequence(20261126)
            bounds = [lower_bound(method, mu, eps, args.runs, conf, np.random.default_rng(child), claimed)
                      for child in ss.spawn(args.seeds)]
            refuted = sum(b > claimed for b in bounds)
            print(f"{method:<16}{true:>11.0e}{refuted:>5}/{args.seeds:<3}{statistics.median(bounds) / true:>19.3g}")
            if refuted == args.seeds:
                floor = true
        floors[method] = floor
    print("\nsmallest true delta(epsilon) refuted in every seed (claim 10x smaller):")
    for method, floor in floors.items():
        print(f"  {method:<16}{'none' if floor is None else f'{floor:.0e}'}")
    print(f"\nmedian time of one bound ({args.runs} samples, mu for delta 1e-3; {args.repeats} repeats):")
    mu = 1.0 / gaussian_sigma(1.0, eps, 1e-3)
    base, _ = median_time(lambda: np.random.default_rng(0).normal(mu * mu / 2, mu, args.runs), args.repeats)
    print(f"  {'draw losses':<16}{base * 1e3:8.2f} ms (baseline)")
    for method in METHODS:
        t, _ = median_time(lambda m=method: lower_bound(m, mu, eps, args.runs, conf, np.random.default_rng(0), 1e-4),
                           args.repeats)
        print(f"  {method:<16}{t * 1e3:8.2f} ms  ratio {t / base:8.1f}")


if __name__ == "__main__":
    main()
