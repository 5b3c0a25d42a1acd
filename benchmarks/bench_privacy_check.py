"""Benchmark: a full privacy check of the rendezvous example under Async timing, against simulating its runs.

Scenario: examples/privacy_check_rendezvous.py (huang2015, N = 5, T = 30) with
Async timing (Poisson wake-ups) on lossy lognormal links. Baseline in the same
process: simulating the ``--runs`` runs the check reads one by one on the
SimPy engine (``scenario.replace(seed=s).run()`` for each run seed,
transcripts recorded as by default; the check itself runs them on the batch
engine). The check
simulates the scenario's runs and the adjacent scenario's runs (the
black-box audit needs both), replays every run on its realized schedule,
tests the noise, audits, and searches the worst pair. Target (issue 14): the
check costs at most 3x the simulation. Medians of ``--repeats``, the two
timed alternately so that both see the same machine load.

``--scenario gaussian`` checks examples/privacy_check_gaussian_under_calibrated.py
instead (a Gaussian two-stage rule, claim delta ``--delta``) under ``--timing``
lockstep (batch engine), deadline or async; the baseline is then the engine
the check uses (:func:`asyncdp.privacy.behavior.run_engine`).

``--compare-timings`` checks the rendezvous example (lossy lognormal links)
under the example's Deadline rounds and under Async timing in one process,
alternately in each repeat, both on the batch engine, and reports the medians
(wall and process CPU time) and the ratio Async/Deadline (target of the
batch engine's Async support: at most 1.2), beside each timing's simulation
of the runs the check reads (:func:`asyncdp.privacy.behavior.run_engine`).

Run:  python benchmarks/bench_privacy_check.py [--runs 1000] [--repeats 3]
      python benchmarks/bench_privacy_check.py --scenario gaussian --timing lockstep --delta 1e-5
      python benchmarks/bench_privacy_check.py --compare-timings [--runs 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
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


def timed(fn):
    """``fn()``'s wall and process CPU seconds, and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def compare_timings(runs: int, repeats: int) -> None:
    """The check of the rendezvous example under Deadline and under Async timing, alternately (one process)."""
    from asyncdp import Deadline
    from asyncdp.privacy.behavior import run_engine

    ex = load_script(EXAMPLE, names=("scenario", "adjacent"))
    links = Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.1))
    timings = {"deadline": Deadline(period=1.0, deadline=0.8, drift=0.05, missing="renormalize"),
               "async": Async(rate=1.0)}
    pairs = {k: (ex["scenario"].replace(timing=t, links=links), ex["adjacent"].replace(timing=t, links=links))
             for k, t in timings.items()}
    check_privacy(*pairs["async"], runs=20)  # first imports (scikit-learn, ...) outside the timings
    got: dict = {k: {"sim": [], "check": []} for k in timings}
    verdicts, engines = {}, {}
    for _ in range(repeats):
        for k, (sc, adj) in pairs.items():
            got[k]["sim"].append(timed(lambda sc=sc: run_engine(sc, runs, seed=0, side=0))[:2])
            wall, cpu, report = timed(lambda sc=sc, adj=adj: check_privacy(sc, adj, runs=runs))
            got[k]["check"].append((wall, cpu))
            verdicts[k], engines[k] = report.verdict, report.engine
    sc = pairs["async"][0]
    print(f"rendezvous example, lossy lognormal links: N={sc.problem.num_agents}, T={sc.horizon}, {runs} runs per "
          f"side, medians of {repeats} (wall / process CPU)")
    med = {k: {p: tuple(statistics.median(x[i] for x in v[p]) for i in (0, 1)) for p in v} for k, v in got.items()}
    for k in timings:
        print(f"  {k:8s} ({engines[k]} engine): simulate {runs} runs {med[k]['sim'][0]:.2f} s / "
              f"{med[k]['sim'][1]:.2f} s; full check {med[k]['check'][0]:.2f} s / {med[k]['check'][1]:.2f} s "
              f"(verdict {verdicts[k]})")
    ratio_wall = med["async"]["check"][0] / med["deadline"]["check"][0]
    ratio_cpu = med["async"]["check"][1] / med["deadline"]["check"][1]
    print(f"ratio check Async/Deadline: wall {ratio_wall:.2f}, CPU {ratio_cpu:.2f}   target <= 1.2: "
          f"{'met' if max(ratio_wall, ratio_cpu) <= 1.2 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenario", choices=("rendezvous", "gaussian"), default="rendezvous")
    parser.add_argument("--timing", choices=("lockstep", "deadline", "async"), default="lockstep")
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--compare-timings", action="store_true",
                        help="rendezvous: the check under Deadline and under Async timing, alternately")
    args = parser.parse_args()
    if args.compare_timings:
        compare_timings(args.runs, args.repeats)
        return
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
