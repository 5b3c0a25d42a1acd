"""Sweep executors: where the tasks run (this process, a process pool, a Dask cluster) and what one task does.

Every executor runs :func:`_run_task` on each task and hands each task's
output to ``done(index, output)`` *in the parent process* as soon as the
task finishes (the sweep writes it to its checkpoint there); results do not
depend on the executor. The ``"processes"`` executor runs its own workers,
one chunk per process at a time, so it knows which process runs which chunk:
a chunk whose process dies runs again on a fresh process up to
:data:`DEFAULT_RETRIES` times, then :class:`WorkerDied` names the chunk, its
grid point and the cause. Dask's ``KilledWorker`` (after the scheduler's own
retries) becomes the same :class:`WorkerDied`. On Ctrl-C or an error the
chunks in flight are abandoned: worker processes are killed, Dask futures
cancelled.

Example:
    >>> EXECUTORS
    ('inprocess', 'processes', 'dask')
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import multiprocessing.connection as mp_connection
import os
import pickle
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ScenarioError, SweepError
from ..scenario import Scenario
from .checkpoint import Done
from .factories import _build, _check_own_noise, _fmt, _resolve
from .grid import _Task, derive_seed
from .identity import _CACHE_HINT, _identity, _identity_change, _module_name, _papers, _rule_name, _versions
from .summaries import _accountant_delta, _accountant_epsilon, _final_metrics, _network_wide, _sensitivity, _user_columns

__all__ = ["EXECUTORS", "AUTO_PROGRESS_TASKS", "CONNECT_TIMEOUT", "DEFAULT_RETRIES", "WorkerDied", "death_cause"]

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


Identities = tuple[str, str, str, str]
"""What a worker process must agree with: the factory's and the metrics function's
:func:`~asyncdp.experiments.identity._identity`, the versions of asyncdp, numpy and Python (JSON), and the registered
paper records (:func:`_papers`, JSON)."""


def _identities(factory: Any, metrics: Any) -> Identities:
    """The :data:`Identities` of this process, which a task run elsewhere checks (see :func:`_run_task`)."""
    return _identity(factory), _identity(metrics), json.dumps(_versions(), sort_keys=True), json.dumps(_papers())


def _check_same_paper(scenario: Scenario, sent: str, task: _Task) -> None:
    """Refuse a worker process whose paper record of the task's rule is not the sweep's process's (``sent``:
    :func:`_papers` there, found through the rule's class MRO as :func:`asyncdp.papers.find_registered` finds it).

    A record registered at run time in the sweep's process (in a notebook, or under ``if __name__ == "__main__"``)
    is not registered in a worker that imports the factory's module afresh: its ``epsilon_accountant`` was NaN
    there (no sensitivity) and a number in-process, silently; a record registered again with another lemma gave
    another number.
    """
    from ..papers import find_registered

    theirs = json.loads(sent)
    names = [_rule_name(k) for k in type(scenario.algorithm).__mro__]
    expected = next((paper for k in names for paper, (rules, *_) in theirs.items() if k in rules), None)
    found = find_registered(scenario.algorithm)
    if found is None and expected is None:
        return
    ours = "no paper record" if expected is None else f"paper record {expected!r}"
    what = "no paper record" if found is None else f"paper record {found.paper.name!r}"
    if found is not None and expected == found.paper.name:
        # (compared as the factory is: a value whose repr shows its memory address differs in every process)
        changes = [f"its {part}: {change}" for part, sent_part, value in
                   zip(("lemma", "adjacency class"), theirs[expected][1:], (found.paper.lemma, found.paper.adjacency))
                   if (change := _identity_change(sent_part, _identity(value))) is not None]
        if not changes:
            return
        what += f" with another lemma or adjacency class ({'; '.join(changes)})"
    raise SweepError(f"point {task.point} ({_fmt(task.params)}): worker process {os.getpid()} has {what} for rule "
                     f"{scenario.algorithm.name!r}, the sweep's process {ours}: its epsilon_accountant would differ "
                     "(NaN without a record); register the record where the factory is defined (its module or "
                     "script), not only in the sweep's process")


def _run_task(factory: Any, task: _Task, engine: str, metrics: Callable[..., Any] | None,
              identities: Identities | None = None) -> dict[str, np.ndarray]:
    """Run one task anywhere; the columns of its rows (except the grid parameters).

    Args:
        identities: on another process, the sweep process's :data:`Identities`, which this one must have too.

    Raises:
        SweepError: the factory fails (:func:`_build`), or the scenario fails to run with a
            :class:`~asyncdp.errors.ScenarioError` (the point named, the error as its cause); the factory or metrics
            function, or the paper record of the scenario's rule, is another one here than in the sweep's process.
    """
    if identities is not None:
        _check_same_functions(factory, metrics, identities, task)
    scenario = _build(_resolve(factory), task.params, task.point)
    if identities is not None:
        _check_same_paper(scenario, identities[3], task)
    if task.first > 0 or (engine == "simpy" and task.runs > 1):  # the point has other tasks: its own noise repeats
        _check_own_noise(scenario, task.point, task.params)
    where = f"point {task.point} ({_fmt(task.params)})"
    try:
        return _task_columns(scenario, task, engine, metrics, where)
    except ScenarioError as exc:
        raise SweepError(f"{where}: {type(exc).__name__}: {exc}") from exc


def _check_same_functions(factory: Any, metrics: Any, identities: Identities, task: _Task) -> None:
    """Refuse a factory or metrics function that differs in this worker process from the sweep's process, or
    other versions of asyncdp, numpy or Python (a remote Dask worker's environment may lag behind).

    A module-level function travels by reference: the worker imports its module afresh, so a module-level value
    the sweep's process assigned at run time (``mymodule.C = 0.1``), or an edit of the module's file since that
    process imported it, made the workers compute another sweep than the ``"inprocess"`` executor, silently.
    """
    ours, here = json.loads(identities[2]), _versions()
    changed = [f"{name} {version} on the worker, {ours.get(name)} in the sweep's process"
               for name, version in sorted(here.items())
               if ours.get(name) != version]
    if changed:
        raise SweepError(f"point {task.point} ({_fmt(task.params)}): worker process {os.getpid()} runs other versions "
                         f"than the sweep's process ({'; '.join(changed)}): its numbers could differ; install the "
                         "same versions on every worker")
    for what, fn, expected in (("factory", factory, identities[0]), ("metrics function", metrics, identities[1])):
        change = _identity_change(expected, _identity(fn))
        if change is not None:
            module = _module_name(getattr(fn, "func", fn))
            raise SweepError(
                f"point {task.point} ({_fmt(task.params)}): the {what} in worker process {os.getpid()} is not the "
                f"one of the sweep's process: {change} (the worker imported module {module!r} afresh: a value "
                "assigned to it at run time, or an edit of its file since the sweep's process imported it, is seen "
                f"on one side only; {_CACHE_HINT}); make such a value a grid parameter or bind it with "
                "functools.partial, or sweep a ScriptFactory")


def _accountant_columns(res: Any, sens: Any, wide: bool) -> dict[str, float]:
    """A run's ``epsilon_accountant`` and the ``delta_accountant`` it is read at
    (:func:`~asyncdp.experiments.summaries._accountant_delta`)."""
    delta = _accountant_delta(res.ledger, float(res.claimed_epsilon), float(res.claimed_delta))
    return {"epsilon_accountant": _accountant_epsilon(res.ledger, sens, delta, wide), "delta_accountant": delta}


def _task_columns(scenario: Scenario, task: _Task, engine: str, metrics: Callable[..., Any] | None,
                  where: str) -> dict[str, np.ndarray]:
    """:func:`_run_task`'s runs of the factory's ``scenario``."""
    sens = _sensitivity(scenario)
    wide = sens is not None and _network_wide(scenario)
    runs = np.arange(task.first, task.first + task.runs, dtype=np.int64)
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
        }
        cols.update({k: np.full(task.runs, v) for k, v in _accountant_columns(res, sens, wide).items()})
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
               "epsilon_claimed": float(res.claimed_epsilon), **_accountant_columns(res, sens, wide)}
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


def _run_inprocess(call: Callable[[_Task], dict[str, np.ndarray]], tasks: Sequence[tuple[int, _Task]],
                   done: Done) -> None:
    for index, task in tasks:
        done(index, call(task))


def _process_context() -> multiprocessing.context.BaseContext:
    """Worker start method: ``forkserver`` where the platform has it, else ``spawn``; never ``fork``.

    Forking a process that runs threads (Dask, BLAS, a progress bar) may
    deadlock the child; Python 3.12+ warns about it.
    """
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


def death_cause(exitcode: int | None) -> str:
    """Why a worker process ended, in words (``exitcode`` as ``multiprocessing.Process.exitcode``).

    Example:
        >>> death_cause(-9)
        "killed by signal 9 (SIGKILL), often the system's out-of-memory killer"
        >>> death_cause(3)
        'exited with code 3'
    """
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        try:
            name = f" ({signal.Signals(-exitcode).name})"
        except ValueError:
            name = ""
        oom = ", often the system's out-of-memory killer" if -exitcode == 9 else ""  # SIGKILL (POSIX only)
        return f"killed by signal {-exitcode}{name}{oom}"
    return f"exited with code {exitcode}"


def _worker_main(conn: Any, factory: Any, engine: str, metrics: Any, identities: Identities | None) -> None:
    """A worker process: run the tasks the parent sends, one at a time, until it sends ``None``.

    Ctrl-C is the parent's to handle (it stops the workers), so the worker ignores SIGINT. It first says it
    started: a process that ends before that failed to start (see :func:`_run_processes`).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        conn.send(("started", -1, None))
    except OSError:  # the parent is gone
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if msg is None:
            return
        index, task = msg
        try:
            reply: tuple[str, int, Any] = ("ok", index, _run_task(factory, task, engine, metrics, identities))
        except BaseException as exc:  # noqa: BLE001 - sent to the parent, which raises it
            reply = ("error", index, exc)
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - an exception that cannot be pickled
            conn.send(("error", index, SweepError(f"{type(reply[2]).__name__}: {reply[2]} "
                                                  f"(and it could not be sent back: {exc})")))


class _Worker:
    """One worker process of :func:`_run_processes` and the task it runs (``None``: idle)."""

    def __init__(self, ctx: Any, args: tuple[Any, str, Any, Identities | None]) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, *args), daemon=True)
        self.process.start()
        child.close()
        self.task: int | None = None
        self.started = False  # it said so: it unpickled the factory (its script or module imported)

    def stop(self, kill: bool) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.process.join(timeout=None if kill else 10.0)
        if self.process.is_alive():  # pragma: no cover - a worker that ignores the stop message
            self.process.kill()
            self.process.join()
        self.conn.close()


DEFAULT_RETRIES = 2
"""How many times a chunk whose worker process died is run again (on a fresh process) before the sweep stops."""


class WorkerDied(SweepError):
    """A chunk's worker process died more often than the retries allow.

    Attributes:
        task: the chunk's task.
        cause: how the last worker ended (:func:`death_cause`).
    """

    def __init__(self, message: str, task: _Task, cause: str) -> None:
        super().__init__(message)
        self.task, self.cause = task, cause


def _run_processes(args: tuple[Any, str, Any, Identities | None], tasks: Sequence[tuple[int, _Task]], workers: int | None,
                   done: Done, retries: int = DEFAULT_RETRIES) -> None:
    """Run the tasks on ``workers`` processes, one chunk per process at a time, and record which runs which.

    A worker process that exits with an error before it started (it could not import the main script, say:
    a script that calls the sweep without an ``if __name__ == "__main__":`` guard) stops the sweep at once with
    :class:`WorkerDied` saying so; it would fail again. When a started worker process dies (a signal, the
    out-of-memory killer, ``os._exit``),
    a fresh process replaces it and its chunk runs again, up to ``retries``
    times (a warning each time); then :class:`WorkerDied` names the chunk,
    its grid point and the cause. The other workers go on meanwhile. An
    exception raised by a task (a bad factory, bad metrics) is raised here.
    """
    ctx = _process_context()
    queue = list(reversed(tasks))  # pop() from the end: task order
    by_index = dict(tasks)
    deaths: dict[int, int] = {}
    n = min(workers or os.cpu_count() or 1, len(tasks))
    pool: list[_Worker] = []
    ok = False
    try:
        pool = [_Worker(ctx, args) for _ in range(n)]
        running = 0
        while queue or running:
            for k, w in enumerate(pool):
                if w.task is None and queue:
                    if not w.process.is_alive():  # died while idle: no chunk to blame
                        w.stop(kill=True)
                        pool[k] = w = _Worker(ctx, args)
                    index, task = queue.pop()
                    w.task = index
                    running += 1
                    try:
                        w.conn.send((index, task))
                    except OSError:
                        pass  # it died just now: its sentinel says so below, and the chunk runs again
            busy = [w for w in pool if w.task is not None]
            ready = set(mp_connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
            for w in busy:
                if w.conn in ready or w.conn.poll():
                    try:
                        kind, index, payload = w.conn.recv()
                    except (EOFError, OSError):
                        pass  # died while sending: its sentinel says so below
                    else:
                        if kind == "started":
                            w.started = True
                            continue  # its chunk's reply comes later
                        w.task = None
                        running -= 1
                        if kind == "error":
                            raise payload
                        done(index, payload)
                        continue
                if w.process.sentinel in ready or not w.process.is_alive():
                    w.process.join()
                    lost = w.task
                    assert lost is not None
                    cause = death_cause(w.process.exitcode)
                    task = by_index[lost]
                    deaths[lost] = deaths.get(lost, 0) + 1
                    where = f"chunk {task.chunk} of point {task.point} ({_fmt(task.params)})"
                    if not w.started and (w.process.exitcode or 0) > 0:  # it will fail again: no retry
                        raise WorkerDied(
                            f"{where} failed: its worker process {cause} before it could run a chunk: it could not "
                            "import the factory's script or module, or unpickle the factory (its traceback is "
                            "above); a sweep run from a script needs the factory at the script's top level and the "
                            "sweep called under if __name__ == '__main__'", task, cause)
                    if deaths[lost] > retries:
                        raise WorkerDied(f"{where} failed: its worker process was {cause} "
                                         f"({deaths[lost]} times; {retries} retries allowed)", task, cause)
                    warnings.warn(f"the worker process running {where} was {cause}; running the chunk again "
                                  f"on a fresh process (retry {deaths[lost]} of {retries})",
                                  RuntimeWarning, stacklevel=2)
                    w.conn.close()
                    pool[pool.index(w)] = _Worker(ctx, args)
                    queue.append((lost, task))
                    running -= 1
        ok = True
    finally:
        for w in pool:  # on an error or Ctrl-C the chunks in flight are abandoned
            if w.process.is_alive() or w.process.exitcode is None:
                w.stop(kill=not ok)
            else:
                w.conn.close()


def _killed_worker_error(distributed: Any) -> type[BaseException]:
    try:
        return distributed.KilledWorker
    except AttributeError:  # pragma: no cover - older distributed
        from distributed.scheduler import KilledWorker

        return KilledWorker


def _run_dask(args: tuple[Any, str, Any, Identities | None], tasks: Sequence[tuple[int, _Task]], scheduler: str | None,
              local_cluster: int | None, done: Done) -> None:
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
            # the cluster's own logs are silenced below CRITICAL: the sweep reports a failed task itself (one line,
            # WorkerDied), and a killed worker's replacement or shutdown logged tracebacks of closed connections
            # (a heartbeat racing the scheduler's close) that said nothing about the sweep
            cluster = distributed.LocalCluster(n_workers=local_cluster, threads_per_worker=1,
                                               dashboard_address=None, silence_logs=logging.CRITICAL)
        client = distributed.Client(cluster)
    else:
        try:
            client = distributed.default_client()
        except ValueError:
            raise SweepError("executor 'dask' needs scheduler=ADDRESS, local_cluster=N_WORKERS, "
                             "or an active distributed.Client") from None
    own_client = scheduler is not None or cluster is not None
    killed = _killed_worker_error(distributed)
    futures = []
    try:
        factory, engine, metrics, identities = args
        futures = [client.submit(_run_task, factory, task, engine, metrics, identities, pure=False) for _, task in tasks]
        index = {fut.key: i for i, fut in enumerate(futures)}
        for fut in distributed.as_completed(futures):
            i = index[fut.key]
            try:
                out = fut.result()
            except killed:
                # Dask blames every task a dying worker held, so the chunk named may be one queued beside the culprit
                task = tasks[i][1]
                raise WorkerDied(f"chunk {task.chunk} of point {task.point} ({_fmt(task.params)}) failed: "
                                 "the Dask workers running it died (KilledWorker, after the scheduler's allowed "
                                 "retries; a worker killed by a signal, often the system's out-of-memory killer, "
                                 "or over its memory limit)", task, "KilledWorker") from None
            done(tasks[i][0], out)
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        del futures
        if own_client:
            client.close()
        if cluster is not None:
            cluster.close()
