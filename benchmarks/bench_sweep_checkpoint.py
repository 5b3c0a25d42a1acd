"""Benchmark: the cost of writing every finished chunk of a sweep to a checkpoint folder.

10^5 batch-engine runs of ``examples/sweep_epsilon.py`` (its default grid of
four epsilons, 25 000 runs each, chunks of 1000 runs: 100 chunk files),
in-process. Baseline in the same run: the same sweep without a checkpoint.
The two are timed alternately, ``--repeats`` times each; medians of the
process's CPU time (robust on a shared machine) and of wall time. The time
spent inside the checkpoint (opening it, encoding, hashing and writing each
chunk) is also measured directly, as a share of the checkpointed sweep's
wall time. Target: the checkpoint adds at most 5 %.

Run:  python benchmarks/bench_sweep_checkpoint.py [--runs 25000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from asyncdp.experiments import checkpoint
from asyncdp.experiments.factories import ScriptFactory
from asyncdp.experiments.sweep import sweep

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sweep_epsilon.py"


class _Stopwatch:
    """Adds up the wall time spent in Checkpoint.open and Checkpoint.save."""

    def __init__(self) -> None:
        self.total = 0.0
        self.saves = 0

    def wrap(self, fn: Any, count: bool) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.total += time.perf_counter() - start
                self.saves += count

        return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=25_000, help="runs per grid point (4 points)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    factory = ScriptFactory.from_path(EXAMPLE)
    grid = factory.default_grid() or {}
    watch = _Stopwatch()
    checkpoint.Checkpoint.save = watch.wrap(checkpoint.Checkpoint.save, True)
    checkpoint.Checkpoint.open = classmethod(watch.wrap(checkpoint.Checkpoint.open.__func__, False))
    sweep(factory, grid, runs=10, seed=0)  # warm-up: imports, the script's first execution
    cpu: dict[str, list[float]] = {"without": [], "with": []}
    wall: dict[str, list[float]] = {"without": [], "with": []}
    inside: list[float] = []
    size = 0
    for _ in range(args.repeats):
        for mode in ("without", "with"):
            folder = Path(tempfile.mkdtemp(prefix="bench-sweep-")) / "eps.checkpoint"
            watch.total = 0.0
            try:
                c0, w0 = time.process_time(), time.perf_counter()
                df = sweep(factory, grid, runs=args.runs, seed=0, checkpoint=folder if mode == "with" else None)
                cpu[mode].append(time.process_time() - c0)
                wall[mode].append(time.perf_counter() - w0)
                if mode == "with":
                    inside.append(watch.total / wall[mode][-1])
                    size = sum(p.stat().st_size for p in folder.glob("*.npz"))
            finally:
                shutil.rmtree(folder.parent)
        assert len(df) == 4 * args.runs
    med = {k: (statistics.median(cpu[k]), statistics.median(wall[k])) for k in cpu}
    files = watch.saves // args.repeats
    print(f"{len(grid['epsilon']) * args.runs} runs ({len(grid['epsilon'])} points x {args.runs}), "
          f"{files} chunk files, {size / 1e6:.1f} MB")
    for k in ("without", "with"):
        print(f"sweep {k:7} checkpoint, median of {args.repeats}: CPU {med[k][0]:.2f} s, wall {med[k][1]:.2f} s "
              f"(wall each: {' '.join(f'{t:.2f}' for t in wall[k])})")
    cpu_ratio, wall_ratio = med["with"][0] / med["without"][0], med["with"][1] / med["without"][1]
    share = statistics.median(inside)
    print(f"ratio with/without: CPU {cpu_ratio:.3f}, wall {wall_ratio:.3f}")
    print(f"time inside the checkpoint (open + {files} writes), median share of the sweep's wall time: "
          f"{100 * share:.2f} %   target <= 5 %: {'met' if share <= 0.05 else 'NOT met'}")


if __name__ == "__main__":
    main()
