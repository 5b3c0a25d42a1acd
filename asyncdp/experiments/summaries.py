"""Sweep metrics and summaries: the metric columns of each run, the result table, per-point means.

The built-in per-run metrics are :data:`METRICS`; :func:`summarize` turns a
sweep's table into per-point means and standard errors and
:func:`format_summary` prints them.

Example:
    >>> METRICS[:2]
    ('optimality_error', 'deviation')
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import metrics
from ..errors import SweepError
from ..scenario import Scenario
from .factories import _fmt

if TYPE_CHECKING:
    from .grid import _Task

__all__ = ["METRICS", "ACCOUNTANT_DELTA", "summarize", "format_summary"]

METRICS: tuple[str, ...] = (
    "optimality_error",
    "deviation",
    "consensus_error",
    "epsilon_claimed",
    "epsilon_accountant",
    "delta_accountant",
)
"""The metric columns of every sweep, in order."""

ACCOUNTANT_DELTA = 1e-6
"""The delta of ``epsilon_accountant`` for Gaussian releases whose claim states no delta (a Rényi or zCDP claim,
recorded (inf, 0); a pure claim is read at delta 0): the default ``--delta`` of ``asyncdp privacy check``."""

_INDEX_COLUMNS = ("point", "run", "task_seed")
_RESERVED = frozenset(_INDEX_COLUMNS + METRICS)


def _sensitivity(scenario: Scenario) -> dict[str, np.ndarray] | None:
    from .. import privacy

    try:
        return privacy.independent_sensitivity(scenario)
    except NotImplementedError:
        return None


def _network_wide(scenario: Scenario) -> bool:
    """Whether one datum of the paper's adjacency reaches every agent's releases (round adjacency).

    A changed round's loss (:class:`~asyncdp.papers.record.RoundClass`, e.g. Cheng, Liao and Li, Def. 1)
    moves every agent's release, so the accountant's epsilon is that of all releases together, as
    ``asyncdp privacy check`` composes them; a changed agent's cost or value moves its own releases only.
    A paper that states no class for the scenario on an online problem (losses per round) gets the
    network-wide scope too: it never understates the loss.
    """
    from ..papers import find_registered
    from ..papers.record import RoundClass
    from ..privacy.adjacency import _online

    found = find_registered(scenario.algorithm)
    rule = None if found is None else found.paper.adjacency
    cls = None if rule is None else rule(scenario)
    return isinstance(cls, RoundClass) or (cls is None and _online(scenario.problem))


def _accountant_delta(ledger: Any, claimed_epsilon: float, claimed_delta: float) -> float:
    """The delta at which a run's ``epsilon_accountant`` is read: the claim's delta if it states one in ``(0, 1)``
    or a finite epsilon (a pure claim: 0, where Gaussian noise has no finite epsilon), else
    :data:`ACCOUNTANT_DELTA` when the run released Gaussian noise (a zCDP or Rényi claim, recorded (inf, 0)), else 0.

    Example:
        >>> from accounting.ledger import Ledger, Release
        >>> gauss = Ledger([Release(0, 1, 0.0, "gaussian", 1.0, 1)])
        >>> inf = float('inf')
        >>> _accountant_delta(gauss, 1.0, 1e-3), _accountant_delta(gauss, inf, 0.0), _accountant_delta(gauss, 1.0, 0.0)
        (0.001, 1e-06, 0.0)
    """
    if 0 < claimed_delta < 1:
        return float(claimed_delta)
    if math.isfinite(claimed_epsilon):
        return 0.0
    return ACCOUNTANT_DELTA if any(r.mechanism != "laplace" for r in ledger) else 0.0


def _accountant_epsilon(ledger: Any, sens: Mapping[str, np.ndarray] | None, delta: float,
                        network_wide: bool = False) -> float:
    """Basic-composition epsilon at ``delta``: the largest per agent, or all releases' with ``network_wide``.

    NaN without a sensitivity or releases. ``delta`` only matters for Gaussian releases, which need
    ``delta > 0`` (inf otherwise). ``network_wide`` is :func:`_network_wide` of the scenario.
    """
    if sens is None or len(ledger) == 0:
        return math.nan
    delta = float(delta) if 0 < delta < 1 else 0.0
    if delta == 0 and any(r.mechanism != "laplace" for r in ledger):
        return math.inf  # Gaussian noise bounds no epsilon at delta 0
    from accounting import composition

    from ..privacy.sensitivity import release_sensitivity

    kwargs = {"sensitivity": release_sensitivity(sens), "delta": delta}
    if network_wide:
        return float(composition.network_wide(ledger, composition.basic_composition, **kwargs))
    return float(max(composition.per_agent(ledger, composition.basic_composition, **kwargs).values()))


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
    """Optimality error, deviation and consensus error of one run's final states ``(N, n)`` (:mod:`asyncdp.metrics`)."""
    return (float(metrics.optimality_error(final, optimum)), float(metrics.deviation(final)),
            float(metrics.consensus_error(final)))


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
        NaN for one run) for every numeric metric column. A point where
        some run's metric is NaN (a diverged run, say) gets a NaN mean and
        sem: no run is silently left out of the ``runs`` it reports.

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
        complete = groups[m].count() == out["runs"]  # pandas skips NaN; a NaN run must not vanish
        out[f"{m}_mean"] = groups[m].mean().where(complete)
        out[f"{m}_sem"] = groups[m].sem().where(complete)
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
