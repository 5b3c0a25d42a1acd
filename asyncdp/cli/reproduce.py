"""``asyncdp reproduce NAME``: reproduce a published experiment (see :mod:`asyncdp.reproduce`).

``NAME`` is a key of :data:`asyncdp.reproduce.EXPERIMENTS`; an unknown name is
a user error: exit code 2 and one ``asyncdp: error: ... invalid choice ...``
line on stderr. A start line and the progress lines of experiments that
report progress go to stderr; the result table and the list of files written
go to stdout. ``--out`` follows :mod:`asyncdp.cli.outputs`.

Example:
    asyncdp reproduce huang2015-fig1 --runs 5000 --tune-runs 500 --out out/fig1 --seed 2015
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path
from typing import Any

from .arguments import count, nonnegative_int, require_memory
from .outputs import prepare_dir

__all__ = ["register", "reproduce_command", "RUN_BYTES"]

RUN_BYTES = 64
"""Lower bound of the memory one Monte-Carlo run of a reproduction holds (final states and errors)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``reproduce`` sub-command; its choices come from :data:`asyncdp.reproduce.EXPERIMENT_NAMES`."""
    from ..reproduce import EXPERIMENT_NAMES

    p = subparsers.add_parser(
        "reproduce", help="reproduce a published experiment (CSV + JSON + figure)",
        description="Reproduce an experiment of the implemented papers; writes a CSV, a JSON summary (with every "
        "choice the paper leaves open and the trend checks) and a figure to --out.",
    )
    p.add_argument("experiment", metavar="EXPERIMENT", help="one of: " + ", ".join(sorted(EXPERIMENT_NAMES)))
    p.add_argument("--out", default=None, help="output directory (default: out/EXPERIMENT; checked before the "
                   "run and created if missing; files already there are replaced, said on stderr)")
    p.add_argument("--runs", type=count, default=None, help="Monte-Carlo runs per point (default: the experiment's)")
    p.add_argument("--tune-runs", type=count, default=None, help="runs per tuning evaluation (huang2015-fig1)")
    p.add_argument("--seed", type=nonnegative_int, default=None, help="seed (default: the experiment's)")
    p.add_argument("--full", action="store_const", const=True, default=None,
                   help="the paper's full sizes where the experiment has a reduced default (muffliato-fig1a: N = 2048)")
    p.add_argument("--workers", type=count, default=None, help="worker processes where the experiment spreads "
                   "independent work over them (muffliato-fig1a: the observers; the values do not depend on it)")
    p.set_defaults(func=reproduce_command)


def reproduce_command(args: argparse.Namespace) -> int:
    """Run the experiment, print its table and where it wrote its files; exit code 0.

    The output directory is checked (and created) before the experiment runs.
    A missing optional package is one ``asyncdp: error:`` line naming it.
    Failed trend checks are explained in one ``asyncdp: warning:`` line (the
    exit code stays 0: a reproduction reports what it found).
    """
    from ..errors import AsyncdpError, ScenarioError
    from ..reproduce import EXPERIMENTS, TABLES

    if args.experiment not in EXPERIMENTS:
        raise ScenarioError(f"argument EXPERIMENT: invalid choice: {args.experiment!r} "
                            f"(choose from {', '.join(sorted(EXPERIMENTS))})")
    fn = EXPERIMENTS[args.experiment]
    accepted = inspect.signature(fn).parameters
    options = {"runs": args.runs, "tune_runs": args.tune_runs, "seed": args.seed, "full": args.full,
               "workers": args.workers}
    kwargs = {}
    for name, value in options.items():
        if value is None:
            continue
        if name not in accepted:
            raise ScenarioError(f"experiment {args.experiment!r} has no option --{name.replace('_', '-')}")
        kwargs[name] = value
    out = prepare_dir(args.out or f"out/{args.experiment}", "--out")
    for name in ("runs", "tune_runs"):
        if name in kwargs:  # a lower bound: every run keeps at least its final state and errors
            require_memory(kwargs[name] * RUN_BYTES, f"--{name.replace('_', '-')} {kwargs[name]}",
                           f"at least {RUN_BYTES} bytes per run held at once")
    if "progress" in accepted:
        kwargs["progress"] = lambda msg: print(msg, file=sys.stderr, flush=True)
    print(f"reproducing {args.experiment} into {out.path} ...", file=sys.stderr, flush=True)
    started = time.time()
    try:
        summary = fn(str(out.path), **kwargs)
    except ImportError as exc:  # an optional extra (OptionalDependencyError says which already)
        if isinstance(exc, AsyncdpError):
            raise
        missing = exc.name or str(exc)
        raise ScenarioError(f"experiment {args.experiment!r} needs the optional package {missing!r}, which is not "
                            f"installed (pip install 'asyncdp[datasets]' or pip install {missing})") from None
    print(TABLES[args.experiment](summary))
    files = _files_of(summary) or out.written(started)
    print(out.report(files))
    explanation = _failed_checks(summary, args.runs, accepted.get("runs"))
    if explanation:
        print(f"asyncdp: warning: {explanation}", file=sys.stderr)
    return 0


def _failed_checks(summary: Any, runs: int | None, runs_parameter: inspect.Parameter | None) -> str:
    """One line explaining failed trend checks (``summary["checks"]``), or ``""`` when all hold."""
    checks = summary.get("checks", []) if isinstance(summary, dict) else []
    failed = [str(c.get("name")) for c in checks if isinstance(c, dict) and not c.get("holds", True)]
    if not failed:
        return ""
    line = (f"{len(failed)} of {len(checks)} reproduction checks failed ({', '.join(failed)}): the paper's trend "
            "did not show at these settings; the [FAIL] lines above give each criterion")
    default = None if runs_parameter is None else runs_parameter.default
    if runs is not None and isinstance(default, int) and runs < default:
        line += f"; --runs {runs} is below the experiment's default {default}, so Monte-Carlo noise can hide it"
    return line


def _files_of(summary: Any) -> list[str]:
    """The paths an experiment reports in ``summary["files"]`` (a dict or a list), if any."""
    files = summary.get("files") if isinstance(summary, dict) else None
    if isinstance(files, dict):
        return [str(v) for v in files.values() if isinstance(v, (str, Path))]
    if isinstance(files, (list, tuple)):
        return [str(v) for v in files if isinstance(v, (str, Path))]
    return []
