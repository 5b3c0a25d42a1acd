"""``asyncdp demo``: the README's main job (see :mod:`asyncdp.experiments.demo`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "demo_command"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` sub-command."""
    p = subparsers.add_parser(
        "demo", help="run a small scenario end to end and write a plot",
        description="Private rendezvous with huang2015: lockstep vs asynchronous lossy links, batch runs, "
        "an independent privacy check and topology audits; prints a table and writes OUT/demo.png.",
    )
    p.add_argument("--out", default="out", help="directory for demo.png (default: out)")
    p.add_argument("--seed", type=int, default=2015)
    p.set_defaults(func=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    from ..experiments.demo import run_demo

    run_demo(args.out, seed=args.seed)
    return 0
