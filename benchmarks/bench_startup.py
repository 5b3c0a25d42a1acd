"""Benchmark: start-up time of the command line and of the three packages.

Each workload runs in a fresh interpreter (``subprocess``), so nothing is
cached in ``sys.modules``; the baseline in the same run is a bare interpreter
(``python -c pass``). Workloads are interleaved per repeat; we report the
median wall time of each and its median ratio to the baseline over repeats.

``import everything`` resolves every public name of the three packages (what
start-up cost before the names were imported on first use).

Run:  python benchmarks/bench_startup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

EVERYTHING = (
    "import accounting, asyncdp, topology\n"
    "for pkg in (accounting, asyncdp, topology):\n"
    "    [getattr(pkg, name) for name in pkg.__all__]\n"
)

WORKLOADS: dict[str, list[str]] = {
    "python -c pass (baseline)": ["-c", "pass"],
    "import asyncdp, accounting, topology": ["-c", "import asyncdp, accounting, topology"],
    "asyncdp --help": ["-m", "asyncdp", "--help"],
    "asyncdp topology --help": ["-m", "asyncdp", "topology", "--help"],
    "import everything": ["-c", EVERYTHING],
}


def _seconds(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    for argv in WORKLOADS.values():  # warm the file-system cache and the .pyc files
        _seconds(argv)
    times: dict[str, list[float]] = {name: [] for name in WORKLOADS}
    for _ in range(args.repeats):
        for name, argv in WORKLOADS.items():
            times[name].append(_seconds(argv))
    base = times["python -c pass (baseline)"]
    print(f"{args.repeats} interleaved repeats, Python {sys.version.split()[0]}")
    print("| what | median (s) | ratio to bare interpreter (median over repeats) |")
    print("| --- | --- | --- |")
    for name, ts in times.items():
        ratio = statistics.median(t / b for t, b in zip(ts, base))
        print(f"| {name} | {statistics.median(ts):.3f} | {ratio:.1f} |")


if __name__ == "__main__":
    main()
