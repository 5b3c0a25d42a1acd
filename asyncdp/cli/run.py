"""``asyncdp run SCRIPT.py``: run a scenario script and print its summary table.

A scenario script is a Python file defining a module-level ``scenario`` (a
:class:`~asyncdp.scenario.Scenario`, or a function of no arguments returning
one). Output files follow :mod:`asyncdp.cli.outputs` (checked before the run,
parents created, an existing file replaced with a note on stderr). Before
running, the topology is audited against the assumptions of the algorithm's
paper (:func:`topology.audit`): a failed assumption is a warning on stderr
naming it, since the paper's guarantees then need not hold.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from .arguments import count, nonnegative_int, require_memory
from .outputs import prepare_file

__all__ = ["register", "run_command", "assumption_warnings", "realized_assumption_warnings", "seed_reaches_the_schedule",
           "simpy_memory_estimate"]

LEDGER_SUFFIXES = (".json", ".parquet", ".csv")
TRANSCRIPT_SUFFIXES = (".npz", ".parquet", ".json")
AUDIT_MAX_ROUNDS = 1000
"""Rounds of the topology audited before a run (at most)."""

LONG_RUN = 10**6
"""Agent-rounds from which ``asyncdp run`` announces the run and its expected duration on stderr."""

PROGRESS_SECONDS = 1.0
"""A long run's progress bar is refreshed at most this often."""

SECONDS_PER_AGENT_ROUND = 50e-6
"""Order of magnitude of the SimPy engine's time per agent and round (BENCHMARKS.md, SimPy engine scale)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` sub-command."""
    p = subparsers.add_parser(
        "run",
        help="run a scenario script and print its summary",
        description="Run the `scenario` defined in SCRIPT.py on the SimPy engine and print a summary table.",
    )
    p.add_argument("script", metavar="SCRIPT.py", help="a Python file that defines `scenario`")
    p.add_argument("--seed", type=nonnegative_int, default=None, help="override the scenario's seed")
    p.add_argument("--horizon", type=count, default=None, help="override the scenario's horizon T (1e4 accepted)")
    p.add_argument("--json", metavar="OUT.json", default=None,
                   help="also write the summary (and metadata) as JSON to OUT.json")
    p.add_argument("--ledger", metavar="FILE", default=None, help="write the ledger (.json, .parquet or .csv)")
    p.add_argument("--transcript", metavar="FILE", default=None,
                   help="write the transcript (.npz, .parquet or .json)")
    p.set_defaults(func=run_command)


def simpy_memory_estimate(scenario: Any) -> float:
    """Bytes a SimPy run of ``scenario`` holds at its end (order of magnitude).

    Per agent and round: the trajectory, times and staleness (``8 (n + 2)``
    bytes), a ledger record (~600 bytes of Python objects) and, when the
    transcript is recorded, one message per out-link (~``8 n + 200`` bytes).
    """
    n_agents, dim, horizon = scenario.problem.num_agents, scenario.problem.dim, scenario.horizon
    per_round = 8.0 * (dim + 2) + 600.0
    if scenario.record_transcript:
        w = scenario.topology.weights(1)
        links = max(int(w.nnz) / n_agents, 1.0)
        per_round += links * (8.0 * dim + 200.0)
    return float(horizon) * n_agents * per_round


def assumption_warnings(scenario: Any) -> list[str]:
    """Warnings for the assumptions of the algorithm's paper that the scenario's topology breaks.

    Audits rounds ``1..min(horizon, AUDIT_MAX_ROUNDS)`` with :func:`topology.audit`
    under the assumption set of the algorithm's paper record, found through its
    class MRO (:func:`asyncdp.papers.paper_of`): a seed paper's, or a user's
    paper registered by the script, an entry point or a module. An algorithm
    with no record, or a record without assumptions, gets no warning.

    Returns:
        One line per failed assumption (empty when all hold), and one saying which rounds were not audited when
        the horizon passes ``AUDIT_MAX_ROUNDS`` on a topology that does not repeat within them (a generated
        sequence whose graph disconnects at round 1001 of 1200 got no warning, as if every round had been audited).

    Example:
        >>> from asyncdp import Showkatbakhsh
        >>> assumption_warnings(Showkatbakhsh.example_scenario())
        []
    """
    failed = _failed_assumptions(scenario, scenario.topology)
    lines = [f"the topology breaks assumption {a.name} of {scenario.algorithm.name} ({a.description}): "
             f"{a.witness}; the paper's guarantees need not hold" for a in failed or ()]
    period = scenario.topology.period
    if failed is not None and scenario.horizon > AUDIT_MAX_ROUNDS and (period is None or period > AUDIT_MAX_ROUNDS):
        lines.append(_unaudited(scenario, "the topology", "scenario.topology"))
    return lines


def realized_assumption_warnings(scenario: Any, realized: Any) -> list[str]:
    """Warnings for the assumptions of the algorithm's paper that the run's realized mixing breaks and the
    scenario's topology meets (those :func:`assumption_warnings` reports already).

    Lost messages, deadlines and asynchronous wake-ups change the weights the agents actually combine with
    (missing senders dropped and rows renormalized): Huang et al. over lossy links under deadline timing mixed with
    matrices whose columns sum to 0.5 and that are not strongly connected, while the designed topology met every
    assumption and ``asyncdp run`` warned of nothing.

    Args:
        scenario: the scenario that ran.
        realized: the run's realized mixing sequence (``Result.realized``).

    Returns:
        One line per assumption that fails on the realized mixing only (empty when none; the realized mixing is
        audited only when it differs from the topology in an audited round: a lossless lockstep run's is the
        topology, whose audit of every round cost more than the run), and then one naming the rounds past
        ``AUDIT_MAX_ROUNDS`` when the horizon passes it (a break of a lossy run at round 1001 went unmentioned).

    Example:
        >>> from asyncdp import Showkatbakhsh
        >>> sc = Showkatbakhsh.example_scenario()
        >>> realized_assumption_warnings(sc, sc.run().realized)
        []
    """
    rounds = min(int(scenario.horizon), AUDIT_MAX_ROUNDS)
    if all((realized.weights(t) != scenario.topology.weights(t)).nnz == 0 for t in range(1, rounds + 1)):
        return []
    failed = _failed_assumptions(scenario, realized)
    if failed is None:
        return []
    designed = {a.name for a in _failed_assumptions(scenario, scenario.topology) or ()} if failed else set()
    lines = [f"the run's realized mixing (the weights combined after lost, late or missing messages) breaks "
             f"assumption {a.name} of {scenario.algorithm.name} ({a.description}): {a.witness}; the paper's guarantees "
             "need not hold for this run" for a in failed if a.name not in designed]
    if scenario.horizon > AUDIT_MAX_ROUNDS:
        lines.append(_unaudited(scenario, "the run's realized mixing", "result.realized"))
    return lines


def _unaudited(scenario: Any, what: str, sequence: str) -> str:
    """The warning naming the rounds past ``AUDIT_MAX_ROUNDS`` of ``what`` (held in ``sequence``) left unaudited."""
    horizon = int(scenario.horizon)
    return (f"rounds {AUDIT_MAX_ROUNDS + 1}..{horizon} of {what} were not audited against the assumptions of "
            f"{scenario.algorithm.name} (asyncdp run audits the first {AUDIT_MAX_ROUNDS}): a break there is not warned "
            f"of; topology.audit({sequence}, ..., horizon={horizon}) audits every round")


def _failed_assumptions(scenario: Any, sequence: Any) -> list[Any] | None:
    """The assumptions of the algorithm's paper that ``sequence`` breaks over rounds
    ``1..min(horizon, AUDIT_MAX_ROUNDS)``; ``None`` for an algorithm without a record or assumptions."""
    from topology.audit import audit

    from ..papers import paper_of

    paper = paper_of(scenario.algorithm)
    assumptions = None if paper is None else paper.assumption_set(_rule_name(paper, scenario.algorithm))
    if assumptions is None:
        return None
    report = audit(sequence, assumptions, horizon=min(int(scenario.horizon), AUDIT_MAX_ROUNDS), empirical=False)
    return report.failed()


def _rule_name(paper: Any, algorithm: Any) -> str:
    """The name of the paper's rule that ``algorithm`` is (or subclasses)."""
    for klass in type(algorithm).__mro__:
        if klass in paper.rules:
            return str(klass.name)
    return str(paper.rules[0].name)


@contextlib.contextmanager
def _progress_bar(total: int) -> Iterator[Callable[[int, int], None]]:
    """A tqdm bar over ``total`` agent-rounds on stderr (refreshed at most every ``PROGRESS_SECONDS``).

    Yields the ``progress(done, total)`` callback of :func:`~asyncdp.engine.simpy_engine.run_simpy`.
    """
    from tqdm.auto import tqdm

    with tqdm(total=total, desc="simpy run", unit=" agent-rounds", unit_scale=True, file=sys.stderr,
              mininterval=PROGRESS_SECONDS, miniters=1) as bar:
        def progress(done: int, _total: int) -> None:
            bar.update(done - bar.n)

        yield progress


def seed_reaches_the_schedule(scenario: Any) -> bool:
    """Whether ``Scenario.seed`` draws anything but the privacy noise: random losses, latencies or clocks.

    The seed feeds the noise, the links and the clocks only (:mod:`asyncdp.noise`); lockstep rounds over lossless
    links of zero or constant latency draw nothing from it.

    Example:
        >>> from asyncdp import Huang2015
        >>> seed_reaches_the_schedule(Huang2015.example_scenario())
        False
    """
    from ..engine.links import ConstantLatency, ZeroLatency
    from ..engine.timing import Deadline, Lockstep

    timing = scenario.timing
    if isinstance(timing, Deadline):
        clocks = type(timing) is not Deadline or timing.drift > 0 or timing.jitter > 0
    else:
        clocks = not isinstance(timing, Lockstep)
    models = [scenario.links.default, *scenario.links.overrides.values()]
    return clocks or any(m.loss > 0 or type(m.latency) not in (ZeroLatency, ConstantLatency) for m in models)


def run_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp run``; returns the exit code."""
    from ..noise import ZeroNoise
    from ..scenario import load_script

    outputs = {
        "json": args.json and prepare_file(args.json, "--json", (".json",)),
        "ledger": args.ledger and prepare_file(args.ledger, "--ledger", LEDGER_SUFFIXES),
        "transcript": args.transcript and prepare_file(args.transcript, "--transcript", TRANSCRIPT_SUFFIXES),
    }
    scenario = load_script(args.script)["scenario"]
    changes = {}
    if args.seed is not None:
        changes["seed"] = args.seed
        if scenario.noise is not None and not isinstance(scenario.noise, ZeroNoise):
            rest = ("only the link losses and latencies and the agents' clocks change (the other streams of "
                    "Scenario.seed)" if seed_reaches_the_schedule(scenario) else "and nothing else in this scenario "
                    "draws from Scenario.seed (lockstep rounds over lossless links of fixed latency): the run is the "
                    "same for every seed")
            print(f"asyncdp: warning: --seed {args.seed} does not change the privacy noise: the scenario brings its "
                  f"own noise source ({type(scenario.noise).__name__}); {rest}", file=sys.stderr)
    if args.horizon is not None:
        changes["horizon"] = args.horizon
    if changes:
        scenario = scenario.replace(**changes)
    horizon = f"--horizon {scenario.horizon}" if args.horizon is not None else f"the horizon {scenario.horizon}"
    require_memory(simpy_memory_estimate(scenario), f"{horizon} (with {scenario.problem.num_agents} agents)",
                   "trajectory, ledger and transcript of every agent and round")
    for line in assumption_warnings(scenario):
        print(f"asyncdp: warning: {line}", file=sys.stderr)
    size = scenario.problem.num_agents * scenario.horizon
    if size >= LONG_RUN:
        print(f"asyncdp: running {scenario.problem.num_agents} agents x {scenario.horizon} rounds on the SimPy "
              f"engine (about {size * SECONDS_PER_AGENT_ROUND:.0f} s at ~{SECONDS_PER_AGENT_ROUND * 1e6:.0f} us "
              "per agent and round) ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        with _progress_bar(size) as progress:
            result = scenario.run(progress=progress)
        print(f"asyncdp: run finished in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    else:
        result = scenario.run()
    for line in realized_assumption_warnings(scenario, result.realized):
        print(f"asyncdp: warning: {line}", file=sys.stderr)
    print(result.summary_table())
    if outputs["json"]:
        outputs["json"].write_text(result.to_json())
    if outputs["ledger"]:
        outputs["ledger"].write(result.ledger.save)
    if outputs["transcript"]:
        if result.transcript is None:
            print("asyncdp: note: --transcript not written: the scenario does not record a transcript "
                  "(record_transcript=False)", file=sys.stderr)
        else:
            outputs["transcript"].write(result.transcript.save)
    return 0
