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
astronomically unlikely and the value fits an ``int64`` column):

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

So every number depends only on (factory, params, seed, runs, chunk_runs,
engine) and is bitwise identical whichever executor computed it. With the
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
``epsilon_claimed`` (the algorithm's claim) and ``epsilon_accountant`` (the
largest per-agent basic composition of the run's ledger with the
accountant's own :func:`asyncdp.privacy.independent_sensitivity`, at the
algorithm's claimed delta — which only Gaussian releases use; ``NaN`` when
that sensitivity is not implemented for the algorithm, when Gaussian releases
come with a claimed delta of 0, or when the ledger is empty — e.g.
``epsilon = inf`` releases noise-free values, where 0 would wrongly suggest
perfect privacy); then the user's ``metrics`` columns. Rows are
sorted by ``(point, run)``.

Factories on workers. The ``"processes"`` and ``"dask"`` executors ship the
factory to other processes, so it must be picklable: either a module-level
function of an importable module (pickled by reference: the workers import
it), or a :class:`ScriptFactory`, which carries a script's *source text* and
execs it in the worker (remote Dask workers need no shared file system; the
script must then be self-contained — it cannot read sibling files).

Example:
    >>> from asyncdp.algorithms import Huang2015
    >>> def factory(epsilon):  # doctest: +SKIP
    ...     return Huang2015.example_scenario().replace(algorithm=Huang2015(epsilon=epsilon, c=0.2, q=0.8, p=0.9))
    >>> df = sweep(factory, {"epsilon": [1.0, 10.0]}, runs=50, seed=3)  # doctest: +SKIP
    >>> summarize(df)[["epsilon", "runs", "optimality_error_mean"]]  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
import math
import multiprocessing
import os
import pickle
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ScenarioError, SweepError
from ..scenario import Scenario

__all__ = [
    "sweep",
    "ScriptFactory",
    "grid_points",
    "grid_from_strings",
    "derive_seed",
    "summarize",
    "format_summary",
    "write_results",
    "read_results",
    "EXECUTORS",
    "ENGINES",
    "METRICS",
    "DEFAULT_CHUNK_RUNS",
    "AUTO_PROGRESS_TASKS",
]

EXECUTORS: tuple[str, ...] = ("inprocess", "processes", "dask")
"""Where tasks run: this process, a ``ProcessPoolExecutor``, or a Dask cluster."""

ENGINES: tuple[str, ...] = ("batch", "simpy")
"""Simulation engines (see :meth:`asyncdp.scenario.Scenario.run`)."""

METRICS: tuple[str, ...] = (
    "optimality_error",
    "deviation",
    "consensus_error",
    "epsilon_claimed",
    "epsilon_accountant",
)
"""The metric columns of every sweep, in order."""

DEFAULT_CHUNK_RUNS = 1000
"""Default runs per task with the batch engine (bounds a task's memory); part of the experiment's definition."""

AUTO_PROGRESS_TASKS = 20
"""With ``progress=None`` a bar is shown when there are more tasks than this and stderr is a TTY."""

_INDEX_COLUMNS = ("point", "run", "task_seed")
_RESERVED = frozenset(_INDEX_COLUMNS + METRICS)
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


# --------------------------------------------------------------------------- seeds and grids


def derive_seed(seed: int, a: int, b: int) -> int:
    """The scenario seed of task or run ``(a, b)`` of a sweep (see the module docstring).

    Args:
        seed: the sweep seed (a nonnegative integer).
        a, b: the spawn key: ``(point, chunk)`` for the batch engine,
            ``(point, run)`` for the SimPy engine.

    Returns:
        A nonnegative integer below ``2**63``.

    Example:
        >>> derive_seed(0, 1, 2) == derive_seed(0, 1, 2) != derive_seed(0, 2, 1)
        True
    """
    state = np.random.SeedSequence(int(seed), spawn_key=(int(a), int(b))).generate_state(1, dtype=np.uint64)
    return int(state[0]) >> 1


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise SweepError(f"grid parameter names must be Python identifiers, got {name!r}")
    if name in _RESERVED:
        raise SweepError(f"grid parameter name {name!r} clashes with a result column; rename it")
    return name


def grid_points(grid: Mapping[str, Iterable[Any]]) -> list[dict[str, Any]]:
    """The parameter points of a grid, in sweep order (point index = list index).

    Args:
        grid: parameter name -> non-empty list of values.

    Returns:
        The cartesian product as dicts, ``itertools.product`` order (last key fastest).

    Raises:
        SweepError: not a mapping, a bad name, a string or non-iterable instead
            of a list of values, or an empty list.

    Example:
        >>> grid_points({"a": [1, 2], "b": ["x", "y"]})
        [{'a': 1, 'b': 'x'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 'x'}, {'a': 2, 'b': 'y'}]
    """
    if not isinstance(grid, Mapping):
        raise SweepError(f"grid must be a mapping name -> list of values, got {type(grid).__name__}")
    names, lists = [], []
    for name, values in grid.items():
        names.append(_check_name(name))
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise SweepError(f"grid parameter {name!r}: expected a list of values, got {values!r}")
        values = list(values)
        if not values:
            raise SweepError(f"grid parameter {name!r} has no values")
        lists.append(values)
    return [dict(zip(names, combo)) for combo in itertools.product(*lists)]


def _parse_value(text: str) -> int | float | str:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def grid_from_strings(items: Iterable[str]) -> dict[str, list[Any]]:
    """Parse ``NAME=V1,V2,...`` strings (the CLI's ``--grid``) into a grid.

    Each value becomes an ``int`` if it parses as one, else a ``float``
    (``1e3``, ``inf``, ``nan`` included), else a stripped string.

    Args:
        items: the strings, one parameter each.

    Returns:
        ``{name: [values]}`` in the order given.

    Raises:
        SweepError: no ``=``, a bad or repeated name, or an empty value.

    Example:
        >>> grid_from_strings(["epsilon=0.1,1,10", "c=0.2", "mode=broadcast"])
        {'epsilon': [0.1, 1, 10], 'c': [0.2], 'mode': ['broadcast']}
    """
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = str(item).partition("=")
        name = name.strip()
        if not sep or not name:
            raise SweepError(f"bad grid entry {item!r}: expected NAME=V1,V2,...")
        _check_name(name)
        if name in grid:
            raise SweepError(f"bad grid entry {item!r}: parameter {name!r} is given twice")
        parts = [v.strip() for v in values.split(",")]
        if any(not v for v in parts):
            raise SweepError(f"bad grid entry {item!r}: empty value (expected NAME=V1,V2,...)")
        grid[name] = [_parse_value(v) for v in parts]
    return grid


# --------------------------------------------------------------------------- factories


@functools.lru_cache(maxsize=16)
def _exec_script(source: str, filename: str) -> dict[str, Any]:
    """Execute a script's source once per process; its module namespace."""
    digest = hashlib.sha256(f"{filename}\0{source}".encode()).hexdigest()[:16]
    module = types.ModuleType(f"asyncdp_sweep_script_{digest}")
    module.__file__ = filename
    sys.modules[module.__name__] = module  # dataclasses and typing look the module up while it executes
    try:
        exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - running the script is the point
    finally:
        sys.modules.pop(module.__name__, None)
    return module.__dict__


@dataclass(frozen=True)
class ScriptFactory:
    """A factory defined in a script, carried as source text so any worker can exec it.

    The script runs as a module named ``asyncdp_sweep_script_<hash>`` (not
    ``__main__``, so an ``if __name__ == "__main__":`` block does not run),
    with ``__file__`` set to ``filename``, at most once per process. It must
    define ``factory(**params) -> Scenario`` (or the callable named ``name``)
    and may define a default ``grid`` dict. Any other callable of a script can
    travel the same way, e.g. ``ScriptFactory(source, name="my_metrics")`` as
    :func:`sweep`'s ``metrics``.

    Args:
        source: the script's Python source.
        filename: shown in tracebacks and error messages; not read.
        name: the factory's name in the script.

    Example:
        >>> f = ScriptFactory("def factory(epsilon):\\n    return epsilon\\ngrid = {'epsilon': [1, 2]}\\n")
        >>> f.default_grid(), f.load()(epsilon=3)
        ({'epsilon': [1, 2]}, 3)
    """

    source: str
    filename: str = "<sweep script>"
    name: str = "factory"

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], name: str = "factory") -> ScriptFactory:
        """Read a script file.

        Raises:
            FileNotFoundError: no such file.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return cls(path.read_text(encoding="utf-8"), str(path), name)

    def namespace(self) -> dict[str, Any]:
        """The executed script's module-level names (cached per process)."""
        return _exec_script(self.source, self.filename)

    def load(self) -> Callable[..., Scenario]:
        """The script's factory.

        Raises:
            SweepError: the script does not define a callable ``name``.
        """
        ns = self.namespace()
        fn = ns.get(self.name)
        if fn is None:
            raise SweepError(f"{Path(self.filename).name} does not define {self.name!r}")
        if not callable(fn):
            raise SweepError(f"{Path(self.filename).name}: {self.name!r} must be a function, got {type(fn).__name__}")
        return fn

    def default_grid(self) -> dict[str, Any] | None:
        """The script's module-level ``grid``, or ``None``.

        Raises:
            SweepError: ``grid`` is not a mapping.
        """
        grid = self.namespace().get("grid")
        if grid is not None and not isinstance(grid, Mapping):
            raise SweepError(f"{Path(self.filename).name}: 'grid' must be a dict name -> list, "
                             f"got {type(grid).__name__}")
        return None if grid is None else dict(grid)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the script's callable (so a ScriptFactory with ``name="my_metrics"`` also serves as ``metrics``)."""
        return self.load()(*args, **kwargs)


def _resolve(factory: Any) -> Callable[..., Any]:
    if isinstance(factory, ScriptFactory):
        return factory.load()
    if not callable(factory):
        raise SweepError(f"factory must be callable or a ScriptFactory, got {type(factory).__name__}")
    return factory


def _fmt(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _check_signature(fn: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """Fail early, naming the parameter, when ``fn`` cannot take the grid's names."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins and some C callables
        return
    try:
        sig.bind(**params)
    except TypeError as exc:
        kinds = {p.kind for p in sig.parameters.values()}
        if inspect.Parameter.VAR_KEYWORD not in kinds:
            for k, v in params.items():
                p = sig.parameters.get(k)
                if p is None or p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL):
                    raise SweepError(f"the factory does not accept grid parameter {k!r} (value {v!r}); "
                                     f"its signature is {sig}") from None
        raise SweepError(f"the factory cannot be called with ({_fmt(params)}): {exc}; its signature is {sig}") from None


def _build(fn: Callable[..., Any], params: Mapping[str, Any], point: int) -> Scenario:
    try:
        scenario = fn(**params)
    except ScenarioError as exc:
        raise SweepError(f"point {point} ({_fmt(params)}): the factory raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(scenario, Scenario):
        raise SweepError(f"point {point} ({_fmt(params)}): the factory returned {type(scenario).__name__}, "
                         "not an asyncdp Scenario")
    return scenario


# --------------------------------------------------------------------------- one task


@dataclass(frozen=True)
class _Task:
    """Chunk ``chunk`` of point ``point``: global runs ``first .. first + runs - 1``."""

    point: int
    chunk: int
    params: dict[str, Any]
    first: int
    runs: int
    seed: int  # the sweep seed


def _sensitivity(scenario: Scenario) -> np.ndarray | None:
    from .. import privacy

    try:
        return privacy.independent_sensitivity(scenario)
    except NotImplementedError:
        return None


def _accountant_epsilon(ledger: Any, sens: np.ndarray | None, delta: float) -> float:
    """Largest per-agent basic-composition epsilon at ``delta``; NaN without a sensitivity or releases.

    ``delta`` only matters for Gaussian releases, which need ``delta > 0`` (NaN otherwise).
    """
    if sens is None or len(ledger) == 0:
        return math.nan
    delta = float(delta) if 0 < delta < 1 else 0.0
    if delta == 0 and any(r.mechanism != "laplace" for r in ledger):
        return math.nan
    from accounting import composition

    def sensitivity(release: Any) -> float:
        return float(sens[release.round - 1])

    per_agent = composition.per_agent(ledger, composition.basic_composition, sensitivity=sensitivity, delta=delta)
    return float(max(per_agent.values()))


def _user_columns(out: Any, runs: int, where: str) -> dict[str, np.ndarray]:
    if not isinstance(out, Mapping):
        raise SweepError(f"{where}: metrics must return a dict name -> value, got {type(out).__name__}")
    cols = {}
    for name, value in out.items():
        if not isinstance(name, str) or name in _RESERVED:
            raise SweepError(f"{where}: metric name {name!r} is not a string or clashes with a built-in column")
        arr = np.asarray(value)
        if arr.ndim == 0:
            arr = np.full(runs, arr[()])
        if arr.shape != (runs,):
            raise SweepError(f"{where}: metric {name!r} has shape {arr.shape}; expected a scalar or ({runs},)")
        cols[name] = arr
    return cols


def _final_metrics(final: np.ndarray, optimum: np.ndarray) -> tuple[float, float, float]:
    """Optimality error, deviation and consensus error of one run's final states ``(N, n)``."""
    xbar = final.mean(axis=0)
    opt = float(((xbar - optimum) ** 2).sum())
    dev = float(np.sqrt(((final - xbar) ** 2).sum(-1)).max())
    cons = float(np.sqrt(((final[:, None, :] - final[None, :, :]) ** 2).sum(-1)).max())
    return opt, dev, cons


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


# --------------------------------------------------------------------------- executors


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
        try:
            client = distributed.Client(scheduler)
        except (OSError, TimeoutError) as exc:
            raise SweepError(f"cannot connect to the Dask scheduler at {scheduler!r}: {exc}") from None
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


# --------------------------------------------------------------------------- the sweep


def _positive_int(name: str, value: Any, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise SweepError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


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
            :data:`AUTO_PROGRESS_TASKS` tasks and stderr is a TTY.

    Returns:
        One row per (point, run), sorted by ``(point, run)``.

    Raises:
        SweepError: a bad grid, ``runs``, ``seed``, ``chunk_runs``, executor,
            engine or executor option; a factory that rejects a grid parameter,
            raises a :class:`~asyncdp.errors.ScenarioError` or returns no
            Scenario; a factory or ``metrics`` that cannot be pickled for
            ``"processes"``; bad ``metrics`` output.
        ScenarioError: a scenario outside the batch engine's scope (use ``engine="simpy"``).

    Example:
        >>> from asyncdp.algorithms import Huang2015
        >>> def factory(c):
        ...     return Huang2015.example_scenario().replace(algorithm=Huang2015(epsilon=1.0, c=c, q=0.8, p=0.9))
        >>> df = sweep(factory, {"c": [0.1, 0.2]}, runs=3, seed=1)
        >>> len(df), list(df.columns[:4])
        (6, ['c', 'point', 'run', 'task_seed'])
        >>> df["run"].tolist()
        [0, 1, 2, 0, 1, 2]
    """
    runs = _positive_int("runs", runs)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SweepError(f"seed must be a nonnegative integer, got {seed!r}")
    if executor not in EXECUTORS:
        raise SweepError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    if engine not in ENGINES:
        raise SweepError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    chunk_runs = _positive_int("chunk_runs", chunk_runs, optional=True)
    if chunk_runs is None:
        chunk_runs = min(runs, DEFAULT_CHUNK_RUNS) if engine == "batch" else 1
    workers = _positive_int("workers", workers, optional=True)
    local_cluster = _positive_int("local_cluster", local_cluster, optional=True)
    if workers is not None and executor != "processes":
        raise SweepError(f"workers applies to executor 'processes' only (executor is {executor!r}); "
                         "for Dask use local_cluster=N or scheduler=ADDRESS")
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

    tasks = [
        _Task(point=p, chunk=k, params=params, first=start, runs=min(chunk_runs, runs - start), seed=int(seed))
        for p, params in enumerate(points)
        for k, start in enumerate(range(0, runs, chunk_runs))
    ]
    from tqdm.auto import tqdm

    args = (factory, engine, metrics)
    with tqdm(total=len(tasks), desc="sweep", unit="task", file=sys.stderr,
              disable=not _show_progress(progress, len(tasks))) as bar:
        if executor == "inprocess":
            outputs = _run_inprocess(lambda t: _run_task(factory, t, engine, metrics), tasks, bar)
        elif executor == "processes":
            outputs = _run_processes(args, tasks, workers, bar)
        else:
            outputs = _run_dask(args, tasks, scheduler, local_cluster, bar)
    return _assemble(names, tasks, outputs)


def _assemble(names: list[str], tasks: Sequence[_Task], outputs: Sequence[dict[str, np.ndarray]]) -> pd.DataFrame:
    extra = [k for k in outputs[0] if k not in ("run",) + _INDEX_COLUMNS + METRICS]
    for task, out in zip(tasks, outputs):
        if set(out) != set(outputs[0]):
            raise SweepError(f"point {task.point} ({_fmt(task.params)}): metrics returned the columns "
                             f"{sorted(set(out) - {'run', *_INDEX_COLUMNS, *METRICS})}, other tasks {sorted(extra)}")
    data: dict[str, Any] = {}
    for name in names:
        data[name] = [v for task in tasks for v in itertools.repeat(task.params[name], task.runs)]
    data["point"] = np.concatenate([np.full(t.runs, t.point, dtype=np.int64) for t in tasks])
    for col in ("run", "task_seed", *METRICS, *extra):
        data[col] = np.concatenate([out[col] for out in outputs])
    df = pd.DataFrame(data)
    return df.sort_values(["point", "run"], kind="stable", ignore_index=True)


# --------------------------------------------------------------------------- summaries and files


def _layout(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Grid parameter columns and numeric metric columns of a sweep DataFrame."""
    if not {"point", "run", "task_seed"} <= set(df.columns):
        raise SweepError("not a sweep result: the columns 'point', 'run' and 'task_seed' are missing")
    cols = list(df.columns)
    params = cols[: cols.index("point")]
    metrics = [c for c in cols[cols.index("task_seed") + 1:] if pd.api.types.is_numeric_dtype(df[c])]
    return params, metrics


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Per-point means and standard errors of a :func:`sweep` result.

    Args:
        df: a sweep DataFrame (or one read back with :func:`read_results`).

    Returns:
        One row per point: the grid parameters, ``point``, ``runs``, then
        ``<metric>_mean`` and ``<metric>_sem`` (``std(ddof=1) / sqrt(runs)``,
        NaN for one run) for every numeric metric column.

    Raises:
        SweepError: ``df`` lacks the sweep's index columns.

    Example:
        >>> df = pd.DataFrame({"e": [1, 1], "point": [0, 0], "run": [0, 1], "task_seed": [5, 5], "m": [1.0, 3.0]})
        >>> summarize(df).to_dict("records")
        [{'e': 1, 'point': 0, 'runs': 2, 'm_mean': 2.0, 'm_sem': 1.0}]
    """
    params, metrics = _layout(df)
    groups = df.groupby("point", sort=True)
    out = df.drop_duplicates("point")[params + ["point"]].set_index("point")
    out["runs"] = groups.size()
    for m in metrics:
        out[f"{m}_mean"] = groups[m].mean()
        out[f"{m}_sem"] = groups[m].sem()
    return out.reset_index()[params + ["point", "runs"] + [c for m in metrics for c in (f"{m}_mean", f"{m}_sem")]]


def format_summary(summary: pd.DataFrame) -> str:
    """A compact text table of :func:`summarize`: ``mean +/- sem`` per metric.

    The ``+/- sem`` part is left out where the standard error is 0 or NaN
    (constant metrics such as ``epsilon_claimed``, or one run).

    Example:
        >>> s = pd.DataFrame({"e": [1], "point": [0], "runs": [2], "m_mean": [2.0], "m_sem": [1.0]})
        >>> print(format_summary(s))
         e  runs       m
         1     2 2 +/- 1
    """
    metrics = [c[: -len("_mean")] for c in summary.columns if c.endswith("_mean") and f"{c[:-5]}_sem" in summary]
    params = list(summary.columns[: list(summary.columns).index("point")])
    table = summary[params + ["runs"]].copy()
    for m in metrics:
        cells = []
        for mean, sem in zip(summary[f"{m}_mean"], summary[f"{m}_sem"]):
            cells.append(f"{mean:.4g} +/- {sem:.2g}" if np.isfinite(sem) and sem > 0 else f"{mean:.4g}")
        table[m] = cells
    return table.to_string(index=False)


def _format_of(path: Path) -> str:
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise SweepError(f"cannot tell the format of {str(path)!r}: use a .csv or .parquet suffix")
    return fmt


def write_results(df: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write a sweep DataFrame as CSV or Parquet, by the path's suffix (parent folders are created).

    Args:
        df: the rows.
        path: ``*.csv``, ``*.parquet`` or ``*.pq``.

    Returns:
        The path written.

    Raises:
        SweepError: another suffix, or Parquet without ``pyarrow``.

    Example:
        >>> write_results(pd.DataFrame({"a": [1]}), "out.txt")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        asyncdp.errors.SweepError: cannot tell the format of 'out.txt': use a .csv or .parquet suffix
    """
    path = Path(path)
    fmt = _format_of(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        try:
            df.to_parquet(path, index=False)
        except ImportError as exc:
            raise SweepError(f"writing Parquet needs pyarrow (pip install pyarrow): {exc}") from None
    return path


def read_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a file written by :func:`write_results` (CSV floats are read back exactly).

    Raises:
        SweepError: another suffix.
        FileNotFoundError: no such file.

    Example:
        >>> read_results("results.parquet")  # doctest: +SKIP
    """
    path = Path(path)
    fmt = _format_of(path)
    if not path.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    if fmt == "csv":
        # pandas >= 3 parses floats exactly by default and deprecates the option
        exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
        return pd.read_csv(path, **exact)
    return pd.read_parquet(path)
