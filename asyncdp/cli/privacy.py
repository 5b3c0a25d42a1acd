"""``asyncdp privacy check SCRIPT.py``: check a scenario's privacy claim independently.

The script defines ``scenario`` and ``adjacent`` (the same scenario with one
agent's cost changed); see :func:`asyncdp.privacy.check_privacy`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .arguments import count, nonnegative_int, require_memory
from .outputs import prepare_file

__all__ = ["register", "check_command", "EXIT_CODES"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``privacy`` command with its ``check`` sub-command."""
    p = subparsers.add_parser(
        "privacy", help="independent privacy checks",
        description="Independent privacy checks of a scenario against an adjacent one.",
    )
    sub = p.add_subparsers(dest="privacy_command", metavar="SUBCOMMAND", required=True)
    c = sub.add_parser(
        "check", help="check the claimed (epsilon, delta) of SCRIPT.py",
        description="Check the claimed (epsilon, delta) of SCRIPT.py (which defines `scenario` and `adjacent`) on "
        "what the engine actually releases: compose the realized ledger with the accountant's own sensitivity, "
        "probe the update, test the released noise against the declared noise, replay every engine run exactly "
        "on its realized schedule (any timing, lossy links), audit the engine's transcripts black-box, and search "
        "the worst adjacent pair of the paper's class.",
        epilog="exit codes: 0 pass, 1 violation, 3 inconclusive, 4 no-claim, 2 unusable input (one "
        "'asyncdp: error:' line), 130 interrupted. The statistical witnesses share 1 - confidence (union bound). "
        "Output files are checked before the check runs; an existing file is replaced (said on stderr).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    c.add_argument("script", metavar="SCRIPT.py")
    c.add_argument("--runs", type=count, default=2000,
                   help="engine runs per scenario (noise conformance, exact replay, black-box audit)")
    c.add_argument("--delta", type=float, default=1e-6, help="delta for the tight (PLD) epsilon; for a Renyi or zCDP claim also the delta at which "
                   "its (epsilon, delta) conversion is checked")
    c.add_argument("--confidence", type=float, default=0.95,
                   help="family-wise confidence of the statistical witnesses")
    c.add_argument("--seed", type=nonnegative_int, default=0, help="the one seed of every draw of the check")
    c.add_argument("--engine", choices=("auto", "batch", "simpy"), default="auto",
                   help="engine of the runs (auto: batch where it applies, else SimPy)")
    c.add_argument("--search-examples", type=nonnegative_int, default=30,
                   help="Hypothesis examples of the worst-case pair search (0: extremal pairs only)")
    c.add_argument("--worst-pair", metavar="OUT.py", default=None,
                   help="write the worst adjacent pair found as a runnable scenario script")
    c.add_argument("--json", metavar="OUT.json", default=None,
                   help="write the report as JSON to OUT (with each method's evidence under \"evidence\")")
    c.set_defaults(func=check_command)
    from . import audit  # ``privacy audit MODULE.py``: the black-box auditor of any mechanism

    audit.register(sub)


EXIT_CODES = {"pass": 0, "violation": 1, "inconclusive": 3, "no-claim": 4}
"""The exit code of ``asyncdp privacy check`` per verdict (2 is the CLI's unusable-input code)."""


def check_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp privacy check``; the exit code tells the verdict (:data:`EXIT_CODES`)."""
    from ..privacy.check import check_privacy
    from ..scenario import load_script

    worst_pair = args.worst_pair and prepare_file(args.worst_pair, "--worst-pair", (".py",))
    json_out = args.json and prepare_file(args.json, "--json", (".json",))
    loaded = load_script(args.script, names=("scenario", "adjacent"))
    require_memory(_check_memory_estimate(loaded["scenario"], args.runs), f"--runs {args.runs}",
                   "released messages and trajectories of every run of both scenarios")
    report = check_privacy(loaded["scenario"], loaded["adjacent"], runs=args.runs, delta=args.delta,
                           confidence=args.confidence, seed=args.seed, engine=args.engine,
                           search_examples=args.search_examples, script=args.script)
    print(report.to_table())
    if worst_pair and report.worst_pair_script is not None:
        worst_pair.write_text(report.worst_pair_script)
        print(f"worst adjacent pair written to {worst_pair.path}")
    if json_out:
        data = {**report.to_dict(), "evidence": [e.to_dict() for e in report.evidence]}
        json_out.write_text(json.dumps(data, indent=2))
    return EXIT_CODES[report.verdict]


def _check_memory_estimate(scenario: Any, runs: int) -> float:
    """Bytes the check's engine runs hold (order of magnitude): both scenarios, every run, round and agent."""
    p = scenario.problem
    return 2.0 * runs * float(scenario.horizon) * p.num_agents * (16.0 * p.dim + 16.0)
