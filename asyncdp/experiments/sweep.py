"""Monte-Carlo parameter sweeps: a grid of scenarios, many runs each, in-process, on processes or on Dask.

:func:`sweep` builds one scenario per *parameter point* with a user
``factory(**params) -> Scenario``, runs each point ``runs`` times and returns
one :class:`pandas.DataFrame` row per (point, run).

Points. ``grid`` maps parameter names to lists of values; the points are the
cartesian product in ``itertools.product`` order over the grid's keys in
insertion order (the *last* key varies fastest), numbered ``0 .. P-1``
(:func:`grid_points`). An empty grid ``{}`` is one point with no parameters.

Tasks and seeds. A point's runs are cut into chunks of ``chunk_runs``
(default :data:`DEFAULT_CHUNK_RUNS` for the batch engine); chunk ``k`` of
point ``p`` holds runs ``k*C .. min((k+1)*C, runs) - 1``. Every random draw
of a sweep comes from the one integer ``seed`` through
:func:`derive_seed` ``(seed, a, b)``: the first 64-bit word of
``numpy.random.SeedSequence(seed, spawn_key=(a, b))`` shifted right by one
bit (a nonnegative 63-bit integer, so a collision between two tasks is
astronomically unlikely and the value fits an ``int64`` column). (A stream a
rule seeds itself is the exception: DP-SDA's gradient noise comes from its
``xi_seed``, shared by the runs; the sweep warns.)

Seeds of the simulated scenarios:

================  ==========================================================
engine            seed of the simulated scenario (column ``task_seed``)
================  ==========================================================
``"batch"``       task ``(p, k)`` runs ``factory(**params).replace(seed=
                  derive_seed(seed, p, k))`` with the batch engine,
                  ``runs = chunk size``, ``keep="final"``; global run
                  ``k*C + j`` is row ``j`` of that batch
``"simpy"``       run ``r`` of point ``p`` is one SimPy run of
                  ``factory(**params).replace(seed=derive_seed(seed, p, r))``;
                  chunks only group runs for dispatch
================  ==========================================================

A scenario that brings its own noise source (``noise=SeededNoise(...)``)
ignores that per-task seed, so its runs would repeat one noise: the sweep
refuses it (``SweepError``) when a point has several tasks (``ZeroNoise`` is
fine). A factory that returns another scenario when called twice with point 0's
parameters (drawing from ``np.random``'s global state, say) is refused too. So
every number depends only on (factory, params, seed, runs, chunk_runs, engine)
and is bitwise identical whichever executor computed it. With the
batch engine ``chunk_runs`` is part of the experiment's definition: chunk
``k >= 1`` gets a different seed under a different ``chunk_runs``. (Chunk 0
is a prefix: its first runs do not change, since the batch engine draws each
round's noise block run-major.) With the SimPy engine ``chunk_runs`` does
not change results, and run ``r`` uses the seed of batch chunk ``r``, so for
a lockstep lossless scenario run 0 of both engines agree to round-off.

Columns, in this order: the grid parameters; ``point``; ``run`` (global
index within the point); ``task_seed`` (the ``Scenario.seed`` simulated, see
above); the metrics of :data:`METRICS`: ``optimality_error`` (final
``||xbar(T) - x*||^2``), ``deviation`` (final ``max_i ||x_i - xbar||``),
``consensus_error`` (exact final ``max_ij ||x_i - x_j||``),
``epsilon_claimed`` (the algorithm's claim; one round's for a rule with
``claim_level = "iteration"``) and ``epsilon_accountant`` (the
largest per-agent basic composition of the run's ledger — of all agents'
releases together when the paper's datum reaches every agent, round
adjacency of online losses — with the
accountant's own :func:`asyncdp.privacy.independent_sensitivity`, at
``delta_accountant`` — which only Gaussian releases use; ``inf`` for
Gaussian releases read at delta 0, which no epsilon bounds; ``NaN`` when
that sensitivity is not implemented for the algorithm, or when the ledger
is empty — e.g. ``epsilon = inf`` releases noise-free values, where 0 would
wrongly suggest perfect privacy) and ``delta_accountant`` (the claimed delta
when the claim states one; 0 for a pure claim, a finite epsilon at delta 0;
for Gaussian releases under a Rényi or zCDP claim, recorded as
``(inf, 0)``, :data:`~asyncdp.experiments.summaries.ACCOUNTANT_DELTA`, the
default ``--delta`` of ``asyncdp privacy check``; else 0); then the user's
``metrics`` columns. Rows are
sorted by ``(point, run)``.

Factories on workers. The ``"processes"`` and ``"dask"`` executors ship the
factory to other processes, so it must be picklable: either a module-level
function of an importable module (pickled by reference: the workers import
it), or a :class:`ScriptFactory`, which carries a script's *source text* and
execs it in the worker (remote Dask workers need no shared file system; the
script must then be self-contained — it cannot read sibling files). A worker
imports a module-level factory's module afresh, so a module-level value the
sweep's process changed at run time is not seen there: each task checks that
the factory (and ``metrics``) has the identity it has in the sweep's process
(:mod:`.identity`), that its process runs the same versions of asyncdp,
numpy and Python, and that the scenario's rule has the paper record (lemma and
adjacency class, which ``epsilon_accountant`` reads) it has in the sweep's
process (a record registered at run time in the sweep's process only, e.g. in a
notebook, is not registered in the worker), and otherwise fails naming the
difference.

Modules: this one runs the sweep (:func:`sweep`); the grid, tasks and seeds
are in :mod:`.grid`, factories and :class:`ScriptFactory` in :mod:`.factories`,
the executors in :mod:`.executors`, the metric columns and summaries in
:mod:`.summaries`, result files in :mod:`.results_io`, checkpoints in
:mod:`.checkpoint`, the factory's identity (what a resume and a worker compare) in
:mod:`.identity`; import each name from its module.

Checkpoints and resuming. With ``checkpoint=FOLDER`` the parent process
writes every finished chunk to ``FOLDER`` as soon as it completes (lossless
``.npz`` files named by their SHA-256; see :mod:`.checkpoint`), so a crash,
a kill, Ctrl-C or a full disk loses no finished chunk, and
``resume=True`` runs only the chunks that are missing (a truncated or
corrupt chunk file is run again, with a warning). The result is bitwise the
one of an uninterrupted sweep, since every chunk's seed depends only on its
position. Resuming checks that the folder belongs to the same sweep
(factory or script content, grid, runs, chunking, seed, engine, metrics,
the registered paper records' lemmas and adjacency classes, asyncdp, numpy and
Python versions; the executor may differ). A folder that already
holds a sweep is never overwritten without ``resume=True``. The folder is
kept after the sweep (delete it when done; the command line does).

Example:
    >>> from asyncdp import Huang2015
    >>> from asyncdp.experiments.summaries import summarize
    >>> def factory(epsilon):  # doctest: +SKIP
    ...     return Huang2015.example_scenario().replace(algorithm=Huang2015(epsilon=epsilon, c=0.2, q=0.8, p=0.9))
    >>> df = sweep(factory, {"epsilon": [1.0, 10.0]}, runs=50, seed=3)  # doctest: +SKIP
    >>> summarize(df)[["epsilon", "runs", "optimality_error_mean"]]  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from topology.validation import check_integer

from ..errors import ScenarioError, SweepError
from ..scenario import Scenario
from .checkpoint import Checkpoint, SweepInterrupted, SweepStopped, fingerprint, remove_checkpoint
from .executors import (
    DEFAULT_RETRIES,
    EXECUTORS,
    WorkerDied,
    _check_picklable,
    _identities,
    _run_dask,
    _run_inprocess,
    _run_processes,
    _run_task,
    _show_progress,
)
from .factories import (ScriptFactory, _build, _check_own_noise, _check_signature, _fmt, _resolve,
                        _warn_shared_gradient_noise)
from .grid import _Task, grid_points
from .identity import _same_contents
from .summaries import _assemble

__all__ = ["sweep", "ENGINES", "DEFAULT_CHUNK_RUNS"]

ENGINES: tuple[str, ...] = ("batch", "simpy")
"""Simulation engines (see :meth:`asyncdp.scenario.Scenario.run`)."""

DEFAULT_CHUNK_RUNS = 1000
"""Default runs per task with the batch engine (bounds a task's memory); part of the experiment's definition."""


def sweep(
    factory: Callable[..., Scenario] | ScriptFactory,
    grid: Mapping[str, Iterable[Any]],
    *,
    runs: int = 1,
    seed: int = 0,
    executor: str = "inprocess",
    workers: int | None = None,
    scheduler: str | None = None,
    local_cluster: int | None = None,
    engine: str = "batch",
    chunk_runs: int | None = None,
    metrics: Callable[[Any, Scenario], Mapping[str, Any]] | None = None,
    progress: bool | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    resume: bool = False,
    retries: int | None = None,
) -> pd.DataFrame:
    """Run ``runs`` Monte-Carlo runs of ``factory(**params)`` at every point of ``grid``.

    Seeds, tasks, columns and the factory rules are described in the module
    docstring; results are bitwise identical across executors.

    Args:
        factory: ``factory(**params) -> Scenario``: a callable (picklable for
            the ``"processes"`` and ``"dask"`` executors) or a :class:`ScriptFactory`.
        grid: parameter name -> list of values (see :func:`grid_points`).
        runs: runs per point, >= 1.
        seed: the sweep seed (nonnegative integer).
        executor: ``"inprocess"``, ``"processes"`` (a ``ProcessPoolExecutor``
            of ``workers`` processes, default one per CPU, started with
            ``forkserver`` or ``spawn``, never ``fork``: the workers import
            the factory's module afresh) or ``"dask"``.
        workers: process count for ``"processes"`` only.
        scheduler: ``"dask"``: the address of a running scheduler
            (``distributed.Client(scheduler)``; the client is closed afterwards).
        local_cluster: ``"dask"``: start ``distributed.LocalCluster(n_workers=
            local_cluster, threads_per_worker=1, dashboard_address=None)`` and
            close it afterwards. With neither, the active ``distributed.Client`` is used.
        engine: ``"batch"`` (default; lockstep, lossless, broadcast scenarios)
            or ``"simpy"`` (any scenario, one run at a time; the scenario runs
            as the factory built it, so set ``record_transcript=False`` there
            for speed unless ``metrics`` needs the transcript).
        chunk_runs: runs per task; default ``min(runs, DEFAULT_CHUNK_RUNS)``
            for the batch engine (where it defines the seeds), 1 for SimPy.
        metrics: ``metrics(result, scenario) -> {name: value}`` adding columns;
            ``result`` is the task's :class:`~asyncdp.engine.batch_engine.BatchResult`
            (values: scalars or arrays of shape ``(chunk size,)``) or one run's
            :class:`~asyncdp.result.Result` (values: scalars or shape ``(1,)``);
            ``scenario`` carries the seed actually simulated.
        progress: a tqdm bar over tasks on stderr: ``True`` always, ``False``
            never, ``None`` (default) when there are more than
            :data:`~asyncdp.experiments.executors.AUTO_PROGRESS_TASKS` tasks
            and stderr is a TTY.
        checkpoint: a folder where each finished chunk is written as soon as
            it completes (created if missing; see the module docstring). It
            is kept afterwards. ``None`` (default): no files.
        resume: continue the sweep whose chunks are in ``checkpoint``: check
            that it is the same sweep, keep its complete chunks and run the
            others. Without it, a ``checkpoint`` folder that holds a sweep is
            an error.
        retries: ``"processes"`` only: how many times a chunk whose worker
            process died is run again on a fresh process before the sweep
            stops (default :data:`~asyncdp.experiments.executors.DEFAULT_RETRIES`).

    Returns:
        One row per (point, run), sorted by ``(point, run)``.

    Raises:
        SweepError: a bad grid, ``runs``, ``seed``, ``chunk_runs``, executor,
            engine or executor option (``retries`` included); a factory that
            rejects a grid parameter, raises a
            :class:`~asyncdp.errors.ScenarioError` or returns no Scenario, or
            whose scenario fails to run with one (the point named), or that
            returns another scenario when called again with the same
            parameters; a factory or ``metrics`` that cannot be pickled for
            ``"processes"``, or that is another one on a worker process;
            bad ``metrics`` output; a checkpoint that holds another sweep
            (naming what differs), that holds one while ``resume`` is false,
            or that a running sweep has locked.
        ScenarioError: a scenario outside the batch engine's scope (use ``engine="simpy"``).
        SweepStopped: a chunk's worker process kept dying
            (:class:`~asyncdp.experiments.executors.WorkerDied` as its cause;
            Dask's ``KilledWorker`` too) or a chunk could not be written
            (e.g. a full disk); the finished chunks stay in ``checkpoint``.
        SweepInterrupted: Ctrl-C (a ``KeyboardInterrupt``); the finished
            chunks stay in ``checkpoint``, the chunks in flight are abandoned.

    Example:
        >>> from asyncdp import Huang2015
        >>> def factory(c):
        ...     return Huang2015.example_scenario().replace(algorithm=Huang2015(epsilon=1.0, c=c, q=0.8, p=0.9))
        >>> df = sweep(factory, {"c": [0.1, 0.2]}, runs=3, seed=1)
        >>> len(df), list(df.columns[:4])
        (6, ['c', 'point', 'run', 'task_seed'])
        >>> df["run"].tolist()
        [0, 1, 2, 0, 1, 2]
        >>> import pathlib, tempfile
        >>> folder = pathlib.Path(tempfile.mkdtemp()) / "c.checkpoint"
        >>> a = sweep(factory, {"c": [0.1, 0.2]}, runs=3, seed=1, checkpoint=folder)
        >>> len(list(folder.glob("*.npz")))  # one file per finished chunk
        2
        >>> sweep(factory, {"c": [0.1, 0.2]}, runs=3, seed=1, checkpoint=folder, resume=True).equals(a)
        True
    """
    runs = check_integer(runs, "runs", minimum=1, error=SweepError)
    seed = check_integer(seed, "seed", minimum=0, error=SweepError)
    if executor not in EXECUTORS:
        raise SweepError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    if engine not in ENGINES:
        raise SweepError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    if chunk_runs is not None:
        chunk_runs = check_integer(chunk_runs, "chunk_runs", minimum=1, error=SweepError)
    if chunk_runs is None:
        chunk_runs = min(runs, DEFAULT_CHUNK_RUNS) if engine == "batch" else 1
    if workers is not None:
        workers = check_integer(workers, "workers", minimum=1, error=SweepError)
    if local_cluster is not None:
        local_cluster = check_integer(local_cluster, "local_cluster", minimum=1, error=SweepError)
    if workers is not None and executor != "processes":
        raise SweepError(f"workers applies to executor 'processes' only (executor is {executor!r}); "
                         "for Dask use local_cluster=N or scheduler=ADDRESS")
    if retries is not None and executor != "processes":
        raise SweepError(f"retries applies to executor 'processes' only (executor is {executor!r}); "
                         "Dask retries by the scheduler's distributed.scheduler.allowed-failures setting")
    retries = DEFAULT_RETRIES if retries is None else check_integer(retries, "retries", minimum=0, error=SweepError)
    if (scheduler is not None or local_cluster is not None) and executor != "dask":
        raise SweepError(f"scheduler and local_cluster apply to executor 'dask' only (executor is {executor!r})")
    if scheduler is not None and local_cluster is not None:
        raise SweepError("give either scheduler=ADDRESS or local_cluster=N_WORKERS, not both")
    if metrics is not None and not callable(metrics):
        raise SweepError(f"metrics must be callable, got {type(metrics).__name__}")

    points = grid_points(grid)
    names = list(points[0])
    fn = _resolve(factory)
    _check_signature(fn, points[0])
    first = _build(fn, points[0], 0)  # fail fast, before any worker starts
    if not _same_contents(first, _build(fn, points[0], 0)):
        raise SweepError(
            f"point 0 ({_fmt(points[0])}): the factory returned another scenario when called again with the same "
            "parameters (it draws from a global random state such as np.random, or reads a value that changes): "
            "every task builds its own scenario, so the numbers would depend on the executor and the order of the "
            "tasks; draw such randomness from a generator seeded by a grid parameter, or leave it to Scenario.seed")
    if engine == "batch":
        from ..engine.batch_engine import _check_batchable

        try:
            _check_batchable(first)
        except ScenarioError as exc:
            raise type(exc)(f"point 0 ({_fmt(points[0])}): {exc}") from None
    if executor == "processes":
        _check_picklable(factory, "factory", executor)
        if metrics is not None:
            _check_picklable(metrics, "metrics function", executor)

    if runs > chunk_runs or (engine == "simpy" and runs > 1):  # several tasks per point
        _check_own_noise(first, 0, points[0])
    _warn_shared_gradient_noise(first, runs)
    if resume and checkpoint is None:
        raise SweepError("resume=True needs the checkpoint folder to resume (checkpoint=FOLDER)")
    tasks = [
        _Task(point=p, chunk=k, params=params, first=start, runs=min(chunk_runs, runs - start), seed=int(seed))
        for p, params in enumerate(points)
        for k, start in enumerate(range(0, runs, chunk_runs))
    ]
    ck = None
    if checkpoint is not None:
        key = fingerprint(factory, points, runs=runs, chunk_runs=chunk_runs, seed=seed, engine=engine,
                          metrics=metrics)
        ck = Checkpoint.open(checkpoint, key, tasks, resume=bool(resume))
    try:
        outputs = _execute(tasks, ck, factory, engine, metrics, executor, workers, scheduler, local_cluster,
                           retries, progress)
    except BaseException:
        if ck is not None and not ck.kept:  # nothing finished (e.g. no Dask scheduler): leave no empty folder
            ck.close()
            remove_checkpoint(ck.folder)
        raise
    finally:
        if ck is not None:
            ck.close()
    return _assemble(names, tasks, outputs)


def _execute(tasks: list[_Task], ck: Checkpoint | None, factory: Any, engine: str, metrics: Any, executor: str,
             workers: int | None, scheduler: str | None, local_cluster: int | None, retries: int,
             progress: bool | None) -> list[dict[str, np.ndarray]]:
    """Run the tasks the checkpoint lacks, saving each as it finishes; every task's output, in task order."""
    from tqdm.auto import tqdm

    outputs: dict[int, dict[str, np.ndarray]] = dict(ck.kept) if ck is not None else {}
    todo = [(i, t) for i, t in enumerate(tasks) if i not in outputs]
    folder = ck.folder if ck is not None else None
    args = (factory, engine, metrics, _identities(factory, metrics) if executor != "inprocess" else None)
    with tqdm(total=len(tasks), initial=len(outputs), desc="sweep", unit="task", file=sys.stderr,
              disable=not _show_progress(progress, len(tasks))) as bar:

        def done(index: int, out: dict[str, np.ndarray]) -> None:
            if ck is not None:
                ck.save(index, out)
            outputs[index] = out
            bar.update(1)

        try:
            if executor == "inprocess":
                _run_inprocess(lambda t: _run_task(factory, t, engine, metrics), todo, done)
            elif executor == "processes":
                _run_processes(args, todo, workers, done, retries)
            else:
                _run_dask(args, todo, scheduler, local_cluster, done)
        except KeyboardInterrupt:
            kept = f"{len(outputs)} of {len(tasks)} chunks finished"
            where = (f"; they are kept in {folder}: resume with resume=True" if folder is not None
                     else " (not kept: no checkpoint folder)")
            raise SweepInterrupted(f"sweep interrupted: {kept}{where}; the chunks in flight were abandoned "
                                   "and run again on resume", len(outputs), len(tasks), folder) from None
        except WorkerDied as exc:
            kept = f"{len(outputs)} of {len(tasks)} chunks finished"
            where = f", kept in {folder}" if folder is not None else " (not kept: no checkpoint folder)"
            raise SweepStopped(f"{exc}; {kept}{where}", len(outputs), len(tasks), folder) from exc
    return [outputs[i] for i in range(len(tasks))]
