"""Sweep executors: where the tasks run (this process, a process pool, a Dask cluster) and what one task does.

Every executor runs :func:`_run_task` on each task and returns the outputs in
task order, so results do not depend on the executor.

Example:
    >>> EXECUTORS
    ('inprocess', 'processes', 'dask')
"""

from __future__ import annotations

import multiprocessing
import pickle
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import numpy as np

from ..errors import SweepError
from .factories import _build, _fmt, _resolve
from .grid import _Task, derive_seed
from .summaries import _accountant_epsilon, _final_metrics, _sensitivity, _user_columns

__all__ = ["EXECUTORS", "AUTO_PROGRESS_TASKS", "CONNECT_TIMEOUT"]

EXECUTORS: tuple[str, ...] = ("inprocess", "processes", "dask")
"""Where tasks run: this process, a ``ProcessPoolExecutor``, or a Dask cluster."""

AUTO_PROGRESS_TASKS = 20
"""With ``progress=None`` a bar is shown when there are more tasks than this and stderr is a TTY."""

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a Dask scheduler to answer (a server that is not one never does)."""


def _connect(distributed: Any, scheduler: str, timeout: float | None = None) -> Any:
    """``distributed.Client(scheduler)``, or a :class:`SweepError` within ``timeout`` seconds.

    The connection runs in a daemon thread: a server that accepts the TCP
    connection but never speaks Dask's protocol leaves ``Client`` waiting
    past its own ``timeout``, so the wait is bounded here.
    """
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = distributed.Client(scheduler, timeout=f"{timeout}s")
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=connect, name="asyncdp-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    if thread.is_alive():
        raise SweepError(f"no Dask scheduler answered at {scheduler!r} within {timeout:g} s "
                         "(is the address that of a running Dask scheduler, e.g. tcp://host:8786?)")
    if "error" in box:
        exc = box["error"]
        if isinstance(exc, (OSError, TimeoutError, ValueError)):
            raise SweepError(f"cannot connect to the Dask scheduler at {scheduler!r}: {exc}") from None
        raise exc
    return box["client"]


def _run_task(factory: Any, task: _Task, engine: str, metrics: Callable[..., Any] | None) -> dict[str, np.ndarray]:
    """Run one task anywhere; the columns of its rows (except the grid parameters)."""
    scenario = _build(_resolve(factory), task.params, task.point)
    sens = _sensitivity(scenario)
    runs = np.arange(task.first, task.first + task.runs, dtype=np.int64)
    where = f"point {task.point} ({_fmt(task.params)})"
    if engine == "batch":
        seed = derive_seed(task.seed, task.point, task.chunk)
        sc = scenario.replace(seed=seed)
        res = sc.run("batch", runs=task.runs, keep="final")
        cols = {
            "task_seed": np.full(task.runs, seed, dtype=np.int64),
            "optimality_error": res.optimality_error[:, -1],
            "deviation": res.deviation[:, -1],
            "consensus_error": res.consensus_error(),
            "epsilon_claimed": np.full(task.runs, float(res.claimed_epsilon)),
            "epsilon_accountant": np.full(task.runs, _accountant_epsilon(res.ledger, sens, res.claimed_delta)),
        }
        if metrics is not None:
            cols.update(_user_columns(metrics(res, sc), task.runs, where))
        return {"run": runs, **cols}
    rows: list[dict[str, Any]] = []
    for r in runs:
        seed = derive_seed(task.seed, task.point, int(r))
        sc = scenario.replace(seed=seed)
        res = sc.run("simpy")
        opt, dev, cons = _final_metrics(np.asarray(res.final, dtype=float), np.asarray(res.optimum, dtype=float))
        row = {"task_seed": seed, "optimality_error": opt, "deviation": dev, "consensus_error": cons,
               "epsilon_claimed": float(res.claimed_epsilon),
               "epsilon_accountant": _accountant_epsilon(res.ledger, sens, res.claimed_delta)}
        if metrics is not None:
            row.update({k: v[0] for k, v in _user_columns(metrics(res, sc), 1, where).items()})
        rows.append(row)
    if any(set(row) != set(rows[0]) for row in rows):
        raise SweepError(f"{where}: metrics returned different names in different runs")
    cols = {name: np.array([row[name] for row in rows]) for name in rows[0]}
    cols["task_seed"] = cols["task_seed"].astype(np.int64)
    return {"run": runs, **cols}


def _show_progress(progress: bool | None, n_tasks: int) -> bool:
    if progress is None:
        try:
            tty = sys.stderr.isatty()
        except (AttributeError, ValueError):
            tty = False
        return n_tasks > AUTO_PROGRESS_TASKS and tty
    return bool(progress)


def _check_picklable(obj: Any, what: str, executor: str) -> None:
    try:
        pickle.dumps(obj)
    except Exception as exc:  # noqa: BLE001 - PicklingError, AttributeError (local objects), TypeError, ...
        raise SweepError(
            f"executor {executor!r} ships the {what} to other processes, but it cannot be pickled ({exc}); "
            "use a module-level function of an importable module or a ScriptFactory"
        ) from None


def _run_inprocess(call: Callable[[_Task], dict[str, np.ndarray]], tasks: Sequence[_Task], bar: Any) -> list[Any]:
    out = []
    for task in tasks:
        out.append(call(task))
        bar.update(1)
    return out


def _process_context() -> multiprocessing.context.BaseContext:
    """Worker start method: ``forkserver`` where the platform has it, else ``spawn``; never ``fork``.

    Forking a process that runs threads (Dask, BLAS, a progress bar) may
    deadlock the child; Python 3.12+ warns about it.
    """
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


def _run_processes(args: tuple[Any, str, Any], tasks: Sequence[_Task], workers: int | None, bar: Any) -> list[Any]:
    out: list[Any] = [None] * len(tasks)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_process_context())
    try:
        factory, engine, metrics = args
        futures = {pool.submit(_run_task, factory, task, engine, metrics): i for i, task in enumerate(tasks)}
        for fut in as_completed(futures):
            out[futures[fut]] = fut.result()
            bar.update(1)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return out


def _run_dask(args: tuple[Any, str, Any], tasks: Sequence[_Task], scheduler: str | None,
              local_cluster: int | None, bar: Any) -> list[Any]:
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - dask is a dependency
        raise SweepError("executor 'dask' needs dask[distributed] (pip install 'dask[distributed]')") from exc
    cluster = None
    if scheduler is not None:
        client = _connect(distributed, scheduler)
    elif local_cluster is not None:
        with warnings.catch_warnings():  # the scheduler's health endpoint falls back from a busy port 8787
            warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
            cluster = distributed.LocalCluster(n_workers=local_cluster, threads_per_worker=1,
                                               dashboard_address=None)
        client = distributed.Client(cluster)
    else:
        try:
            client = distributed.default_client()
        except ValueError:
            raise SweepError("executor 'dask' needs scheduler=ADDRESS, local_cluster=N_WORKERS, "
                             "or an active distributed.Client") from None
    own_client = scheduler is not None or cluster is not None
    out: list[Any] = [None] * len(tasks)
    futures = []
    try:
        factory, engine, metrics = args
        futures = [client.submit(_run_task, factory, task, engine, metrics, pure=False) for task in tasks]
        index = {fut.key: i for i, fut in enumerate(futures)}
        for fut in distributed.as_completed(futures):
            out[index[fut.key]] = fut.result()
            bar.update(1)
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        del futures
        if own_client:
            client.close()
        if cluster is not None:
            cluster.close()
    return out
