"""``asyncdp run SCRIPT.py``: run a scenario script and print its summary table.

A scenario script is a Python file defining a module-level ``scenario`` (a
:class:`~asyncdp.scenario.Scenario`, or a function returning one).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["register", "run_command"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` sub-command."""
    p = subparsers.add_parser(
        "run",
        help="run a scenario script and print its summary",
        description="Run the `scenario` defined in SCRIPT.py on the SimPy engine and print a summary table.",
    )
    p.add_argument("script", metavar="SCRIPT.py", help="a Python file that defines `scenario`")
    p.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    p.add_argument("--horizon", type=int, default=None, help="override the scenario's horizon T")
    p.add_argument("--json", metavar="OUT", default=None, help="also write the summary (and metadata) as JSON to OUT")
    p.add_argument("--ledger", metavar="FILE", default=None, help="write the ledger (.json, .parquet or .csv)")
    p.add_argument("--transcript", metavar="FILE", default=None,
                   help="write the transcript (.npz, .parquet or .json)")
    p.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp run``; returns the exit code."""
    from ..scenario import load_script

    scenario = load_script(args.script)["scenario"]
    changes = {}
    if args.seed is not None:
        changes["seed"] = args.seed
    if args.horizon is not None:
        changes["horizon"] = args.horizon
    if changes:
        scenario = scenario.replace(**changes)
    result = scenario.run()
    print(result.summary_table())
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({**result.summary(), "metadata": result.metadata}, indent=2, default=str))
    if args.ledger:
        Path(args.ledger).parent.mkdir(parents=True, exist_ok=True)
        result.ledger.save(args.ledger)
    if args.transcript and result.transcript is not None:
        Path(args.transcript).parent.mkdir(parents=True, exist_ok=True)
        result.transcript.save(args.transcript)
    return 0
