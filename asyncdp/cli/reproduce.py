"""``asyncdp reproduce NAME``: reproduce a published experiment (see :mod:`asyncdp.reproduce`).

``NAME`` is a key of :data:`asyncdp.reproduce.EXPERIMENTS`; an unknown name is
a user error: exit code 2 and one ``asyncdp: error: ... invalid choice ...``
line on stderr. Progress lines of experiments that report progress go to
stderr; the result table goes to stdout.

Example:
    asyncdp reproduce huang2015-fig1 --runs 5000 --tune-runs 500 --out out/fig1 --seed 2015
"""

from __future__ import annotations

import argparse
import inspect
import sys

__all__ = ["register", "reproduce_command"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``reproduce`` sub-command; its choices come from :data:`asyncdp.reproduce.EXPERIMENT_NAMES`."""
    from ..reproduce import EXPERIMENT_NAMES

    p = subparsers.add_parser(
        "reproduce", help="reproduce a published experiment (CSV + JSON + figure)",
        description="Reproduce an experiment of the seed papers; writes a CSV, a JSON summary (with every "
        "choice the paper leaves open and the trend checks) and a figure to --out.",
    )
    p.add_argument("experiment", metavar="EXPERIMENT", help="one of: " + ", ".join(sorted(EXPERIMENT_NAMES)))
    p.add_argument("--out", default=None, help="output directory (default: out/EXPERIMENT)")
    p.add_argument("--runs", type=int, default=None, help="Monte-Carlo runs per point (default: the experiment's)")
    p.add_argument("--tune-runs", type=int, default=None, help="runs per tuning evaluation (huang2015-fig1)")
    p.add_argument("--seed", type=int, default=None, help="seed (default: the experiment's)")
    p.set_defaults(func=reproduce_command)


def reproduce_command(args: argparse.Namespace) -> int:
    """Run the experiment, print its table; exit code 0."""
    from ..errors import ScenarioError
    from ..reproduce import EXPERIMENTS, TABLES

    if args.experiment not in EXPERIMENTS:
        raise ScenarioError(f"argument EXPERIMENT: invalid choice: {args.experiment!r} "
                            f"(choose from {', '.join(sorted(EXPERIMENTS))})")
    fn = EXPERIMENTS[args.experiment]
    accepted = inspect.signature(fn).parameters
    options = {"runs": args.runs, "tune_runs": args.tune_runs, "seed": args.seed}
    kwargs = {}
    for name, value in options.items():
        if value is None:
            continue
        if name not in accepted:
            raise ScenarioError(f"experiment {args.experiment!r} has no option --{name.replace('_', '-')}")
        kwargs[name] = value
    if "progress" in accepted:
        kwargs["progress"] = lambda msg: print(msg, file=sys.stderr, flush=True)
    summary = fn(args.out or f"out/{args.experiment}", **kwargs)
    print(TABLES[args.experiment](summary))
    return 0
