"""``asyncdp sweep SCRIPT.py``: a Monte-Carlo sweep of a scenario factory over a parameter grid.

SCRIPT.py defines ``factory(**params) -> Scenario`` and may define a default
``grid`` dict, used when no ``--grid`` is given (``--grid`` replaces it
entirely). The script travels as source text (:class:`asyncdp.experiments.factories.ScriptFactory`),
so it must be self-contained when it runs on remote Dask workers. The command
prints one line per parameter point (``mean +/- standard error`` of every
metric) and writes the full per-run table with ``--out``.

No finished work is lost. Each finished chunk is written, as it completes, to
a checkpoint folder (:mod:`asyncdp.experiments.checkpoint`): ``--checkpoint
DIR``, else ``OUT.checkpoint`` next to ``--out FILE``, else
``SCRIPT.py.checkpoint`` (the script's file name) in the current directory. The
folder is removed once the sweep has finished and its table is written.
After a crash, a kill, Ctrl-C (exit code 130; the command prints how many
chunks were kept and the exact command that resumes) or a full disk, the same
command with ``--resume`` checks that the folder belongs to the same sweep
(script content, grid, runs, chunking, seed, engine, versions; the executor
may differ) and runs only the missing chunks; the table is bitwise the one
of an uninterrupted sweep. Without ``--resume`` an existing checkpoint is an
error, never overwritten. With ``--executor processes`` a chunk whose worker
process dies runs again on a fresh process (``--retries``, default 2).

Example:
    asyncdp sweep examples/sweep_epsilon.py --grid epsilon=1,10,100 --runs 200 --out eps.csv
    asyncdp sweep examples/sweep_epsilon.py --grid epsilon=1,10,100 --runs 200 --out eps.csv --resume
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from .arguments import count, integer, nonnegative_int, require_memory
from .outputs import OutputError, prepare_file

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
                   help="a grid parameter and its values (true/false, int, float or text); repeat for more parameters")
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
    p.add_argument("--checkpoint", metavar="DIR", default=None,
                   help="folder for the finished chunks (default: FILE.checkpoint next to --out FILE, else "
                   "SCRIPT.py.checkpoint in the current directory); removed once the sweep is done")
    p.add_argument("--resume", action="store_true",
                   help="continue the interrupted sweep of the checkpoint folder: run only its missing chunks")
    p.add_argument("--retries", metavar="N", type=nonnegative_int, default=None,
                   help="processes: runs of a chunk again after its worker process died (default 2)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar over tasks (default: when more than 20 tasks and stderr is a terminal)")
    p.set_defaults(func=sweep_command)


def checkpoint_folder(args: argparse.Namespace) -> Path:
    """Where ``asyncdp sweep`` keeps its finished chunks (see the module docstring).

    Example:
        >>> checkpoint_folder(argparse.Namespace(checkpoint=None, out="r/eps.csv", script="s.py")).as_posix()
        'r/eps.csv.checkpoint'
        >>> checkpoint_folder(argparse.Namespace(checkpoint=None, out=None, script="ex/s.py")).as_posix()
        's.py.checkpoint'
    """
    from ..experiments.checkpoint import default_folder

    if args.checkpoint is not None:
        return Path(args.checkpoint)
    if args.out:
        return default_folder(args.out)
    return Path(Path(args.script).name + ".checkpoint")


def resume_command(args: argparse.Namespace) -> str:
    """The command line that resumes this sweep (shell-quoted).

    Example:
        >>> ns = argparse.Namespace(script="s.py", grid=["e=1,2"], runs=4, seed=0, engine="batch", chunk_runs=None,
        ...     executor="inprocess", workers=None, scheduler=None, local_cluster=None, out="a b.csv",
        ...     checkpoint=None, retries=None)
        >>> resume_command(ns)
        "asyncdp sweep s.py --grid e=1,2 --runs 4 --seed 0 --engine batch --out 'a b.csv' --resume"
    """
    argv = ["asyncdp", "sweep", args.script]
    for item in args.grid or []:
        argv += ["--grid", item]
    argv += ["--runs", str(args.runs), "--seed", str(args.seed), "--engine", args.engine]
    options = [("--chunk-runs", args.chunk_runs), ("--executor", None if args.executor == "inprocess" else args.executor),
               ("--workers", args.workers), ("--scheduler", args.scheduler),
               ("--local-cluster", args.local_cluster), ("--retries", args.retries), ("--out", args.out),
               ("--checkpoint", args.checkpoint)]
    for option, value in options:
        if value is not None:
            argv += [option, str(value)]
    return shlex.join(argv + ["--resume"])


def sweep_command(args: argparse.Namespace) -> int:
    """Execute ``asyncdp sweep``; returns the exit code."""
    import pandas as pd

    from ..errors import SweepError
    from ..experiments.checkpoint import SweepInterrupted, SweepStopped, remove_checkpoint
    from ..experiments.factories import ScriptFactory
    from ..experiments.grid import grid_from_strings, grid_points
    from ..experiments.results_io import _format_of, check_csv_round_trip, write_results
    from ..experiments.summaries import METRICS, format_summary, summarize
    from ..experiments.sweep import sweep

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
    if out is not None and _format_of(Path(args.out)) == "csv":  # a text the file would give back as a number
        check_csv_round_trip(pd.DataFrame(grid_points(grid)), args.out)
    rows = float(points) * max(args.runs, 0)
    require_memory(rows * (len(grid) + 4 + len(METRICS)) * 8.0 * 3, f"--runs {args.runs} ({points} grid points)",
                   "one row per run in the result table, built and sorted in memory")
    folder = checkpoint_folder(args)
    try:
        df = sweep(
            factory, grid, runs=args.runs, seed=args.seed, executor=args.executor, workers=args.workers,
            scheduler=args.scheduler, local_cluster=args.local_cluster, engine=args.engine,
            chunk_runs=args.chunk_runs, progress=args.progress, checkpoint=folder, resume=args.resume,
            retries=args.retries,
        )
    except SweepInterrupted as exc:
        if exc.kept == 0:
            print(f"asyncdp: sweep interrupted before any of its {exc.total} chunks finished; nothing was kept",
                  file=sys.stderr)
        else:
            print(f"asyncdp: sweep interrupted: {exc.kept} of {exc.total} chunks finished and kept in {folder}; "
                  "the chunks in flight were abandoned (they run again on resume)", file=sys.stderr)
            print(f"asyncdp: resume with: {resume_command(args)}", file=sys.stderr)
        raise KeyboardInterrupt from None
    except SweepStopped as exc:
        raise SweepError(f"{exc} (resume with: {resume_command(args)})") from None
    print(format_summary(summarize(df)))
    if out is not None:
        try:
            path = out.write(lambda tmp: write_results(df, tmp))
        except OutputError as exc:
            raise OutputError(f"{exc}; every chunk is kept in {folder}, so this writes the table without running "
                              f"any: {resume_command(args)}") from None
        print(f"wrote {len(df)} rows to {path}")
    remove_checkpoint(folder)
    return 0

