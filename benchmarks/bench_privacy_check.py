"""Benchmark: a full privacy check of the rendezvous example under Async timing, against simulating its runs.

Scenario: examples/privacy_check_rendezvous.py (huang2015, N = 5, T = 30) with
Async timing (Poisson wake-ups) on lossy lognormal links (the batch engine
runs it). Baseline in the same process: simulating the ``--runs`` runs the
check reads, as it reads them (:func:`asyncdp.privacy.behavior.run_engine`:
the same engine, every message and every run's realized schedule); the bare
batch-engine call inside it is printed too. CPU seconds (the box is shared),
medians of ``--repeats``, the timings alternated. ``--runs2`` measures a
second size and prints the marginal per-run cost ratio (fixed costs dominate
small scenarios on the batch engine). The check
simulates the scenario's runs and the adjacent scenario's runs (the
black-box audit needs both), replays every run on its realized schedule,
tests the noise, audits, and searches the worst pair. Target: the check
costs at most 3x the simulation.

``--scenario gaussian`` checks examples/privacy_check_gaussian_under_calibrated.py
instead (a Gaussian two-stage rule, claim delta ``--delta``) under ``--timing``
lockstep, deadline or async (the same baseline).

``--compare-timings`` checks the rendezvous example (lossy lognormal links)
under the example's Deadline rounds and under Async timing in one process,
alternately in each repeat, both on the batch engine, and reports the medians
(wall and process CPU time) and the ratio Async/Deadline (target of the
batch engine's Async support: at most 1.2), beside each timing's simulation
of the runs the check reads (:func:`asyncdp.privacy.behavior.run_engine`).

Run:  python benchmarks/bench_privacy_check.py [--runs 1000] [--runs2 2000] [--repeats 3]
      python benchmarks/bench_privacy_check.py --scenario gaussian --timing lockstep --delta 1e-5
      python benchmarks/bench_privacy_check.py --compare-timings [--runs 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from asyncdp import Async, LinkModel, Links, LogNormalLatency, load_script
from asyncdp.privacy import check_privacy
from asyncdp.privacy.behavior import run_engine, run_seeds

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


def _cpu(fn):
    """CPU seconds of ``fn()`` (the box is shared: CPU time, not wall time), and its result."""
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def measure(sc, adj, runs: int, repeats: int) -> tuple[float, float, float, object]:
    """Medians over ``repeats`` (alternated) of: simulating ``runs`` runs as the check does
    (:func:`~asyncdp.privacy.behavior.run_engine`: the same engine, messages and realized schedules), the
    bare engine call inside it, and the full check; and the last report."""
    sims, bare, checks = [], [], []
    report = None
    for _ in range(repeats):  # interleaved, so all see the same machine load
        sims.append(_cpu(lambda: run_engine(sc, runs, seed=0, side=0))[0])
        if run_engine(sc, 2, seed=0, side=0).engine == "batch":
            bare.append(_cpu(lambda: sc.replace(seed=run_seeds(0, 0, 1)[0]).run("batch", runs=runs, keep="all",
                                                                                    transcripts=True))[0])
        chk, report = _cpu(lambda: check_privacy(sc, adj, runs=runs))
        checks.append(chk)
    return (statistics.median(sims), statistics.median(bare) if bare else float("nan"), statistics.median(checks),
            report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--runs2", type=int, default=0,
                        help="also measure at this many runs and report the marginal per-run cost ratio")
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
        sc, adj = gaussian_pair(args.timing, args.delta)
        what = f"gaussian under-calibrated example, {args.timing}, claimed delta {args.delta:g}"
    else:
        ex = load_script(EXAMPLE, names=("scenario", "adjacent"))
        timing = Async(rate=1.0)
        links = Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.1))
        sc = ex["scenario"].replace(timing=timing, links=links)
        adj = ex["adjacent"].replace(timing=timing, links=links)
        what = (f"rendezvous example, Async timing, lossy lognormal links: N={sc.problem.num_agents}, "
                f"T={sc.horizon}")
    sizes = [args.runs] + ([args.runs2] if args.runs2 else [])
    got = {}
    for runs in sizes:
        sim_s, bare_s, chk_s, report = measure(sc, adj, runs, args.repeats)
        got[runs] = (sim_s, chk_s)
        print(f"{what}: {runs} runs ({report.engine.split(' ')[0]} engine), CPU seconds, median of {args.repeats}")
        print(f"  simulate the runs as the check reads them (run_engine): {sim_s:.2f} s"
              + ("" if bare_s != bare_s else f"  (of which the bare batch engine call: {bare_s:.2f} s)"))
        w = report.witness or {}
        print(f"  full privacy check: {chk_s:.2f} s  (verdict {report.verdict}, witness {w.get('method', '-')[:50]}, "
              f"certified delta(epsilon) >= {w.get('delta_lower', float('nan')):.3g} at confidence "
              f"{w.get('confidence', float('nan')):.6g}; worst pair simulated {report.worst_case_runs} times)")
        print(f"  ratio check/simulate: {chk_s / sim_s:.2f}   target <= 3: {'met' if chk_s / sim_s <= 3 else 'NOT met'}")
    if len(got) == 2:
        (s1, c1), (s2, c2) = got[sizes[0]], got[sizes[1]]
        print(f"marginal cost {sizes[0]} -> {sizes[1]} runs: simulate {s2 - s1:.2f} s, check {c2 - c1:.2f} s, "
              f"marginal ratio {(c2 - c1) / (s2 - s1):.2f}")


if __name__ == "__main__":
    main()
