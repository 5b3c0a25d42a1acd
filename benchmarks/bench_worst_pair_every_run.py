"""Benchmark: what replaying the worst pair on every engine run adds to the privacy check.

For each scenario script, the whole check (``check_privacy(scenario, adjacent, runs=--runs)``) is timed with the
worst-case search's evaluation of its worst pair on every run (``asyncdp.privacy.worst_case._on_every_run``) and
with that evaluation replaced by a no-op, alternately in one process (CPU seconds, medians of ``--repeats``).

Run:  cd benchmarks && python bench_worst_pair_every_run.py --runs 1000 --repeats 5
"""

from __future__ import annotations

import argparse
import runpy
import statistics
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DEFAULT = ("privacy_check_rendezvous.py", "own_paper_private_dgd.py", "privacy_check_gaussian_under_calibrated.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--script", action="append", help="an examples/ script (repeatable; default: three)")
    args = parser.parse_args()
    from asyncdp.privacy import check_privacy
    from asyncdp.privacy import worst_case

    real = worst_case._on_every_run

    def skipped(ctx, fam, scenario, runs, best, objective):  # noqa: ANN001, ANN202 - the step's own signature
        return best, None

    for name in args.script or DEFAULT:
        ex = runpy.run_path(str(EXAMPLES / name))
        check_privacy(ex["scenario"], ex["adjacent"], runs=args.runs)  # imports and caches out of the timings
        times: dict[str, list[float]] = {"without": [], "with": []}
        verdict = None
        for _ in range(args.repeats):
            for label, fn in (("without", skipped), ("with", real)):
                worst_case._on_every_run = fn
                start = time.process_time()
                verdict = check_privacy(ex["scenario"], ex["adjacent"], runs=args.runs).verdict
                times[label].append(time.process_time() - start)
        worst_case._on_every_run = real
        a, b = (statistics.median(times[k]) for k in ("without", "with"))
        print(f"{name:45} {verdict:12} without {a:.3f} s  with {b:.3f} s  (+{b - a:.3f} s, ratio {b / a:.2f})")


if __name__ == "__main__":
    main()
