"""Benchmark: a full privacy check of the rendezvous example under Async timing, against simulating its runs.

Scenario: examples/privacy_check_rendezvous.py (huang2015, N = 5, T = 30) with
Async timing (Poisson wake-ups) on lossy lognormal links, so every run needs
the SimPy engine. Baseline in the same process: simulating the ``--runs``
runs the check reads (``scenario.replace(seed=s).run()`` for each run seed,
SimPy engine, transcripts recorded as by default). The check
simulates the scenario's runs and the adjacent scenario's runs (the
black-box audit needs both), replays every run on its realized schedule,
tests the noise, audits, and searches the worst pair. Target (issue 14): the
check costs at most 3x the simulation. Medians of ``--repeats``, the two
timed alternately so that both see the same machine load.

``--scenario gaussian`` checks examples/privacy_check_gaussian_under_calibrated.py
instead (a Gaussian two-stage rule, claim delta ``--delta``) under ``--timing``
lockstep (batch engine), deadline or async; the baseline is then the engine
the check uses (:func:`asyncdp.privacy.behavior.run_engine`).

Run:  python benchmarks/bench_privacy_check.py [--runs 1000] [--repeats 3]
      python benchmarks/bench_privacy_check.py --scenario gaussian --timing lockstep --delta 1e-5
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from common import median_time

from asyncdp import Async, LinkModel, Links, LogNormalLatency, load_script
from asyncdp.privacy import check_privacy
from asyncdp.privacy.behavior import run_seeds

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "privacy_check_rendezvous.py"
GAUSSIAN = Path(__file__).resolve().parents[1] / "examples" / "privacy_check_gaussian_under_calibrated.py"


def gaussian_pair(timing: str, delta: float):
    """The under-calibrated Gaussian example under ``timing``."""
    import importlib.util

    from asyncdp import Deadline

    spec = importlib.util.spec_from_file_location("gaussian_under_calibrated", GAUSSIAN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    timings = {"lockstep": None, "deadline": Deadline(period=1.0, deadline=0.8, drift=0.05, missing="renormalize"),
               "async": Async(rate=1.0)}
    return module.make(delta, timings[timing])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenario", choices=("rendezvous", "gaussian"), default="rendezvous")
    parser.add_argument("--timing", choices=("lockstep", "deadline", "async"), default="lockstep")
    parser.add_argument("--delta", type=float, default=1e-5)
    args = parser.parse_args()
    if args.scenario == "gaussian":
        from asyncdp.privacy.behavior import run_engine

        sc, adj = gaussian_pair(args.timing, args.delta)
        sims, checks = [], []
        for _ in range(args.repeats):
            sims.append(median_time(lambda: run_engine(sc, args.runs, seed=0, side=0), 1)[0])
            chk, report = median_time(lambda: check_privacy(sc, adj, runs=args.runs), 1)
            checks.append(chk)
        sim_s, chk_s = statistics.median(sims), statistics.median(checks)
        print(f"gaussian under-calibrated example, {args.timing}, claimed delta {args.delta:g}: "
              f"{args.runs} runs ({report.engine.split(' ')[0]} engine)")
        print(f"simulate {args.runs} runs (baseline, same engine), median of {args.repeats}: {sim_s:.2f} s")
        w = report.witness or {}
        print(f"full privacy check, median of {args.repeats}: {chk_s:.2f} s  (verdict {report.verdict}, witness "
              f"{w.get('method', '-')[:40]}, certified delta(epsilon) >= {w.get('delta_lower', float('nan')):.3g} "
              f"at confidence {w.get('confidence', float('nan')):.6g}; worst pair simulated "
              f"{report.worst_case_runs} times)")
        print(f"ratio check/simulate: {chk_s / sim_s:.2f}   target <= 3: {'met' if chk_s / sim_s <= 3 else 'NOT met'}")
        return
    ex = load_script(EXAMPLE, names=("scenario", "adjacent"))
    timing = Async(rate=1.0)
    links = Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.1))
    sc = ex["scenario"].replace(timing=timing, links=links)
    adj = ex["adjacent"].replace(timing=timing, links=links)
    seeds = run_seeds(0, 0, args.runs)
    sims, checks = [], []
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        sims.append(median_time(lambda: [sc.replace(seed=s).run() for s in seeds], 1)[0])
        chk, report = median_time(lambda: check_privacy(sc, adj, runs=args.runs), 1)
        checks.append(chk)
    sim_s, chk_s = statistics.median(sims), statistics.median(checks)
    print(f"rendezvous example, Async timing, lossy lognormal links: N={sc.problem.num_agents}, T={sc.horizon}, "
          f"{args.runs} runs ({report.engine.split(' ')[0]} engine)")
    print(f"simulate {args.runs} runs (baseline), median of {args.repeats}: {sim_s:.2f} s")
    print(f"full privacy check,        median of {args.repeats}: {chk_s:.2f} s  (verdict {report.verdict})")
    print(f"ratio check/simulate: {chk_s / sim_s:.2f}   target <= 3: {'met' if chk_s / sim_s <= 3 else 'NOT met'}")


if __name__ == "__main__":
    main()
