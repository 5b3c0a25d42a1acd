"""``asyncdp demo``: the README's main job (see :mod:`asyncdp.experiments.demo`)."""

from __future__ import annotations

import argparse

from .arguments import nonnegative_int
from .outputs import prepare_dir

__all__ = ["register", "demo_command"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` sub-command."""
    p = subparsers.add_parser(
        "demo", help="run a small scenario end to end and write a plot",
        description="Private rendezvous with huang2015: lockstep vs asynchronous lossy links, batch runs, "
        "an independent privacy check and topology audits; prints a table and writes OUT/demo.png.",
    )
    p.add_argument("--out", default="out", help="directory for demo.png (default: out; created if missing; "
                   "an existing demo.png is replaced, said on stderr)")
    p.add_argument("--seed", type=nonnegative_int, default=2015, help="the scenario seed (default 2015)")
    p.set_defaults(func=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp demo``; returns the exit code."""
    from ..experiments.demo import run_demo

    out = prepare_dir(args.out, "--out")
    result = run_demo(out.path, seed=args.seed)
    out.note_replaced([result["plot"]])
    return 0
