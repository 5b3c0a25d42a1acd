"""``asyncdp sweep SCRIPT.py``: a Monte-Carlo sweep of a scenario factory over a parameter grid.

SCRIPT.py defines ``factory(**params) -> Scenario`` and may define a default
``grid`` dict, used when no ``--grid`` is given (``--grid`` replaces it
entirely). The script travels as source text (:class:`asyncdp.experiments.sweep.ScriptFactory`),
so it must be self-contained when it runs on remote Dask workers. The command
prints one line per parameter point (``mean +/- standard error`` of every
metric) and writes the full per-run table with ``--out``.

Example:
    asyncdp sweep examples/sweep_epsilon.py --grid epsilon=1,10,100 --runs 200 --out eps.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .arguments import count, integer, nonnegative_int, require_memory
from .outputs import prepare_file

__all__ = ["register", "sweep_command"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``sweep`` sub-command."""
    p = subparsers.add_parser(
        "sweep",
        help="Monte-Carlo sweep of a scenario factory over a parameter grid",
        description="Run `factory(**params)` of SCRIPT.py at every point of the grid (cartesian product of "
        "the --grid lists, or the script's `grid`), RUNS Monte-Carlo runs each; print per-point means and "
        "standard errors and write one row per run with --out.",
    )
    p.add_argument("script", metavar="SCRIPT.py", help="a Python file that defines `factory(**params)`")
    p.add_argument("--grid", action="append", metavar="NAME=V1,V2,...", default=None,
                   help="a grid parameter and its values (int, float or text); repeat for more parameters")
    p.add_argument("--runs", type=integer, default=1, help="runs per parameter point (default 1; 1e4 accepted)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="the sweep seed (default 0)")
    p.add_argument("--engine", default="batch", help="batch (default) or simpy")
    p.add_argument("--executor", default="inprocess", help="inprocess (default), processes or dask")
    p.add_argument("--workers", type=count, default=None, help="processes: number of worker processes")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None, help="dask: address of a running scheduler")
    p.add_argument("--local-cluster", metavar="N", type=count, default=None,
                   help="dask: start a local cluster of N single-threaded workers")
    p.add_argument("--chunk-runs", metavar="C", type=count, default=None,
                   help="runs per task (batch engine default: min(RUNS, 1000); it determines the seeds)")
    p.add_argument("--out", metavar="FILE", default=None,
                   help="write every run's row (.csv or .parquet; checked before the sweep, parents created, "
                   "an existing file replaced with a note on stderr)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar over tasks (default: when more than 20 tasks and stderr is a terminal)")
    p.set_defaults(func=sweep_command)


def sweep_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp sweep``; returns the exit code."""
    from ..experiments.sweep import (
        METRICS,
        ScriptFactory,
        format_summary,
        grid_from_strings,
        grid_points,
        summarize,
        sweep,
        write_results,
    )
    from ..experiments.results_io import _format_of

    out = None
    if args.out:
        _format_of(Path(args.out))  # the suffix, in the sweep's own words
        out = prepare_file(args.out, "--out")
    grid = grid_from_strings(args.grid) if args.grid else None
    factory = ScriptFactory.from_path(args.script)
    factory.load()  # the script must define `factory`
    if grid is None:
        grid = factory.default_grid() or {}
    points = len(grid_points(grid))
    rows = float(points) * max(args.runs, 0)
    require_memory(rows * (len(grid) + 4 + len(METRICS)) * 8.0 * 3, f"--runs {args.runs} ({points} grid points)",
                   "one row per run in the result table, built and sorted in memory")
    df = sweep(
        factory, grid, runs=args.runs, seed=args.seed, executor=args.executor, workers=args.workers,
        scheduler=args.scheduler, local_cluster=args.local_cluster, engine=args.engine,
        chunk_runs=args.chunk_runs, progress=args.progress,
    )
    print(format_summary(summarize(df)))
    if out is not None:
        path = out.write(lambda tmp: write_results(df, tmp))
        print(f"wrote {len(df)} rows to {path}")
    return 0
