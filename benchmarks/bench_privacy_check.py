"""Benchmark: a full privacy check of the rendezvous example under Async timing, against simulating its runs.

Scenario: examples/privacy_check_rendezvous.py (huang2015, N = 5, T = 30) with
Async timing (Poisson wake-ups) on lossy lognormal links (the batch engine
runs it).

Baseline ("simulating its runs on the same engine"): every engine run the
check itself simulates, as it simulates them. One untimed check records each
:func:`asyncdp.privacy.behavior.run_engine` call it makes (the scenario's
``--runs`` runs, the adjacent scenario's ``--runs`` runs, and the worst pair's
runs of the sequential plan, the report's ``worst_case_runs``, one call per
look); the baseline repeats exactly those calls (same scenarios, run counts,
seeds and sides: the same engine, every message and every run's realized
schedule) in the same process. Printed: the check against all of its runs
(the target: at most 3x) and, for information, against one side's runs (the
scenario's ``--runs`` runs alone); the bare batch-engine call inside one
side is printed too. CPU seconds (the box is shared), medians of
``--repeats``, the simulations and the check alternated in every repeat; the
untimed first check also takes the first imports (scikit-learn, ...) out of
the timings. ``--runs2`` measures a second size and prints the marginal
per-run cost ratio (fixed costs dominate small scenarios on the batch
engine). The check simulates the runs, replays every run on its realized
schedule, tests the noise, audits, and searches the worst pair.

``--scenario gaussian`` checks examples/privacy_check_gaussian_under_calibrated.py
instead (a Gaussian two-stage rule, claim delta ``--delta``) under ``--timing``
lockstep, deadline or async (the same baseline).

``--script PATH`` checks any scenario script that defines ``scenario`` and
``adjacent`` (e.g. every ``examples/privacy_check_*.py``) under its own
timing (the same baseline). ``--stages`` also prints each step's median CPU
time (:data:`asyncdp.privacy.steps.STEPS` and the shared preparation).

``--compare-timings`` checks the rendezvous example (lossy lognormal links)
under the example's Deadline rounds and under Async timing in one process,
alternately in each repeat, both on the batch engine, and reports the medians
(wall and process CPU time) and the ratio Async/Deadline (target of the
batch engine's Async support: at most 1.2), beside each timing's simulation
of the runs the check reads (:func:`asyncdp.privacy.behavior.run_engine`).

Run:  python benchmarks/bench_privacy_check.py [--runs 1000] [--runs2 2000] [--repeats 3]
      python benchmarks/bench_privacy_check.py --scenario gaussian --timing lockstep --delta 1e-5
      python benchmarks/bench_privacy_check.py --script examples/privacy_check_dpsda.py --stages
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


def recorded_runs(sc, adj, runs: int) -> tuple[list[tuple], object]:
    """The engine calls of one check of ``(sc, adj)`` (each ``run_engine``'s arguments), and its report."""
    import asyncdp.privacy.behavior as behavior
    import asyncdp.privacy.context as context

    calls: list[tuple] = []
    original = behavior.run_engine

    def recording(scenario, n, *args, **kwargs):
        calls.append((scenario, n, args, kwargs))
        return original(scenario, n, *args, **kwargs)

    behavior.run_engine = context.run_engine = recording
    try:
        report = check_privacy(sc, adj, runs=runs)
    finally:
        behavior.run_engine = context.run_engine = original
    return calls, report


def measure(sc, adj, runs: int, repeats: int) -> dict:
    """Medians over ``repeats`` (alternated) of: simulating every run the check simulates (the recorded
    ``run_engine`` calls), the scenario's runs alone, the bare engine call inside them, and the full check;
    with the last report and the recorded calls."""
    calls, report = recorded_runs(sc, adj, runs)  # untimed: also the first imports
    own = [c for c in calls if c[3].get("side") == 0]
    assert len(own) == 1 and own[0][1] == runs, "one engine call of the check runs the scenario's runs (side 0)"
    batch = run_engine(sc, 2, seed=0, side=0).engine == "batch"
    got: dict = {"all": [], "side": [], "bare": [], "check": []}
    for _ in range(repeats):  # interleaved, so all see the same machine load
        times = [_cpu(lambda c=c: run_engine(c[0], c[1], *c[2], **c[3]))[0] for c in calls]
        got["all"].append(sum(times))
        got["side"].append(times[calls.index(own[0])])
        if batch:
            got["bare"].append(_cpu(lambda: sc.replace(seed=run_seeds(0, 0, 1)[0]).run(
                "batch", runs=runs, keep="all", transcripts=True))[0])
        chk, report = _cpu(lambda: check_privacy(sc, adj, runs=runs))
        got["check"].append(chk)
    out = {k: (statistics.median(v) if v else float("nan")) for k, v in got.items()}
    out["report"], out["calls"] = report, calls
    return out


def stage_times(sc, adj, runs: int, repeats: int) -> dict[str, float]:
    """Median CPU seconds of each step of the check (and of its shared preparation) over ``repeats`` checks."""
    import asyncdp.privacy.check as check_module
    from asyncdp.privacy.steps import STEPS

    got: dict[str, list[float]] = {}

    def timed_step(step):
        def run(pair, ctx):
            seconds, out = _cpu(lambda: step(pair, ctx))
            got.setdefault(step.__name__, []).append(seconds)
            return out
        return run

    original = check_module.prepare

    def timed_prepare(*args, **kwargs):
        seconds, out = _cpu(lambda: original(*args, **kwargs))
        got.setdefault("prepare", []).append(seconds)
        return out

    check_module.prepare = timed_prepare
    try:
        for _ in range(repeats):
            check_privacy(sc, adj, runs=runs, steps=[timed_step(s) for s in STEPS])
    finally:
        check_module.prepare = original
    return {k: statistics.median(v) for k, v in got.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--runs2", type=int, default=0,
                        help="also measure at this many runs and report the marginal per-run cost ratio")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenario", choices=("rendezvous", "gaussian"), default="rendezvous")
    parser.add_argument("--timing", choices=("lockstep", "deadline", "async"), default="lockstep")
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--script", type=Path, default=None,
                        help="check this scenario script (defines scenario and adjacent) under its own timing")
    parser.add_argument("--stages", action="store_true", help="also print each step's median CPU time")
    parser.add_argument("--compare-timings", action="store_true",
                        help="rendezvous: the check under Deadline and under Async timing, alternately")
    args = parser.parse_args()
    if args.compare_timings:
        compare_timings(args.runs, args.repeats)
        return
    if args.script is not None:
        ex = load_script(args.script, names=("scenario", "adjacent"))
        sc, adj = ex["scenario"], ex["adjacent"]
        what = f"{args.script.name} (its own timing)"
    elif args.scenario == "gaussian":
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
        m = measure(sc, adj, runs, args.repeats)
        report = m["report"]
        got[runs] = (m["all"], m["check"])
        counts = [c[1] for c in m["calls"]]
        print(f"{what}: {runs} runs ({report.engine.split(' ')[0]} engine), CPU seconds, median of {args.repeats}")
        print(f"  simulate every run the check simulates (run_engine, {len(counts)} calls, "
              f"{' + '.join(map(str, counts))} runs: the scenario's, the adjacent scenario's, the worst pair's "
              f"{report.worst_case_runs or 0}): {m['all']:.3f} s")
        print(f"  simulate the scenario's {runs} runs alone: {m['side']:.3f} s"
              + ("" if m["bare"] != m["bare"] else f"  (of which the bare batch engine call: {m['bare']:.3f} s)"))
        w = report.witness or {}
        print(f"  full privacy check: {m['check']:.3f} s  (verdict {report.verdict}, witness "
              f"{w.get('method', '-')[:50]}, certified delta(epsilon) >= {w.get('delta_lower', float('nan')):.3g} "
              f"at confidence {w.get('confidence', float('nan')):.6g})")
        ratio = m["check"] / m["all"]
        print(f"  ratio check / all its runs: {ratio:.2f}   target <= 3: {'met' if ratio <= 3 else 'NOT met'}")
        print(f"  ratio check / one side's runs (informative): {m['check'] / m['side']:.2f}")
        if args.stages:
            stages = stage_times(sc, adj, runs, args.repeats)
            print("  steps (median CPU ms): " + ", ".join(f"{k} {1000 * v:.0f}" for k, v in stages.items()
                                                          if v >= 0.0005))
    if len(got) == 2:
        (s1, c1), (s2, c2) = got[sizes[0]], got[sizes[1]]
        print(f"marginal cost {sizes[0]} -> {sizes[1]} runs: simulate all the check's runs {s2 - s1:.3f} s, "
              f"check {c2 - c1:.3f} s, marginal ratio {(c2 - c1) / (s2 - s1):.2f}")


if __name__ == "__main__":
    main()
