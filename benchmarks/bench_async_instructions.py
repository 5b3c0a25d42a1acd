"""Instructions per agent wake-up of the async engine and of the bare SimPy baseline (valgrind callgrind).

Wall-clock ratios on a shared 2-core virtual machine drift with the host's
load; instruction counts do not. Each workload of ``bench_async_engine.py`` is
run under ``valgrind --tool=callgrind`` at two horizons, and the difference,
divided by the extra wake-ups, is the cost of one wake-up (interpreter start,
imports and set-up cancel out). ``PYTHONHASHSEED`` is fixed so that dict
layouts, and hence the counts, repeat.

Run:  python benchmarks/bench_async_instructions.py [--agents 100] [--short 20] [--long 60]
      (needs valgrind; about 5 minutes: callgrind runs Python ~50x slower)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent


def instructions(workload: str, agents: int, rounds: int) -> int:
    """Total instructions of one ``bench_async_engine.py --workload`` process under callgrind."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
           str(HERE / "bench_async_engine.py"), "--workload", workload, "--agents", str(agents), "--rounds",
           str(rounds)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stderr
    match = re.search(r"Collected : (\d+)", out)
    if match is None:
        raise RuntimeError(f"callgrind printed no instruction count:\n{out[-2000:]}")
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--short", type=int, default=20, help="rounds of the shorter run")
    parser.add_argument("--long", type=int, default=60, help="rounds of the longer run")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("bench_async_instructions: valgrind is not installed")
    jobs = [(w, r) for w in ("bare", "engine", "engine-no-transcript") for r in (args.short, args.long)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: instructions(job[0], args.agents, job[1]), jobs)))
    wakeups = args.agents * (args.long - args.short)
    per = {w: (counts[(w, args.long)] - counts[(w, args.short)]) / wakeups for w in ("bare", "engine",
                                                                                    "engine-no-transcript")}
    print(f"ring of {args.agents} agents; instructions per wake-up = difference of {args.long} and "
          f"{args.short} rounds / {wakeups} wake-ups")
    print("| what | instructions per wake-up | ratio bare / this |")
    print("| --- | --- | --- |")
    for w, label in (("bare", "bare SimPy (baseline)"), ("engine", "async engine, transcript recorded"),
                     ("engine-no-transcript", "async engine, no transcript")):
        print(f"| {label} | {per[w]:,.0f} | {per['bare'] / per[w]:.2f} |")


if __name__ == "__main__":
    main()
