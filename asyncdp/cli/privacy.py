"""``asyncdp privacy check SCRIPT.py``: check a scenario's privacy claim independently.

The script defines ``scenario`` and ``adjacent`` (the same scenario with one
agent's cost changed); see :func:`asyncdp.privacy.check_privacy`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["register", "check_command"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``privacy`` command with its ``check`` sub-command."""
    p = subparsers.add_parser(
        "privacy", help="independent privacy checks",
        description="Independent privacy checks of a scenario against an adjacent one.",
    )
    sub = p.add_subparsers(dest="privacy_command", metavar="SUBCOMMAND", required=True)
    c = sub.add_parser(
        "check", help="check the claimed (epsilon, delta) of SCRIPT.py",
        description="Compose the realized ledger with the accountant's own sensitivity, probe the update, "
        "replay transcripts exactly and run a black-box test. SCRIPT.py defines `scenario` and `adjacent`.",
    )
    c.add_argument("script", metavar="SCRIPT.py")
    c.add_argument("--runs", type=int, default=2000, help="transcripts sampled for replay and the black-box test")
    c.add_argument("--delta", type=float, default=1e-6, help="delta for the tight (PLD) epsilon")
    c.add_argument("--confidence", type=float, default=0.95, help="confidence level of the statistical bounds")
    c.add_argument("--seed", type=int, default=0, help="seed of the accountant's own sampling")
    c.add_argument("--json", metavar="OUT", default=None,
                   help="write the report as JSON to OUT (with each method's evidence under \"evidence\")")
    c.set_defaults(func=check_command)
    from . import audit  # ``privacy audit MODULE.py``: the black-box auditor of any mechanism

    audit.register(sub)


def check_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp privacy check``; exit code 0 whatever the verdict."""
    from ..privacy.check import check_privacy
    from ..scenario import load_script

    loaded = load_script(args.script, names=("scenario", "adjacent"))
    report = check_privacy(loaded["scenario"], loaded["adjacent"], runs=args.runs, delta=args.delta,
                           confidence=args.confidence, seed=args.seed)
    print(report.to_table())
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        data = {**report.to_dict(), "evidence": [e.to_dict() for e in report.evidence]}
        out.write_text(json.dumps(data, indent=2))
    return 0
