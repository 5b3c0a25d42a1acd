"""Setting and helpers shared by the Wang and Başar (Automatica 2023) reproductions.

The ring graph (:func:`ring_graph`), the batch runs from per-run starts
(:class:`StartedWangBasar`), argument checks, proportions with their
Clopper-Pearson intervals and the ``choices`` entries for the graph. The setting is described in the package
docstring (:mod:`asyncdp.papers.wang_basar.reproduce`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

import topology
from accounting.auditors import clopper_pearson
from accounting.papers.wang_basar import ASSUMPTIONS
from topology.validation import check_integer

from ..rule import WangBasar
from ....errors import ScenarioError
from ....problems.problem import Problem
from ....problems.nonconvex import SPURIOUS_MINIMUM_APPROX, THETA_SADDLE_PAPER, THETA_STAR_PAPER, stationary_point
from ....reproduce._outputs import write_csv, write_json

__all__ = ["NUM_AGENTS", "DEFAULT_SEED", "BASIN_RADIUS", "StartedWangBasar", "ring_graph"]

NUM_AGENTS = 5
DEFAULT_SEED = 1
BASIN_RADIUS = 0.5
"""A run ends at a point when ``||xbar^K - point|| <`` this."""


@dataclass(frozen=True)
class StartedWangBasar(WangBasar):
    """:class:`WangBasar` whose batch runs start at given per-run points ``starts`` ``(R, N, n)``.

    Only :meth:`initial_state` differs, and only for batched calls (``x0`` of
    ndim 3): the batch engine shares one ``x0`` across its runs.

    Example:
        >>> a = StartedWangBasar(noise_variance=0.1, starts=np.zeros((2, 5, 2)))
        >>> float(a.initial_state(np.ones((2, 5, 2)), np.arange(5), None)["x"].sum())
        0.0
    """

    starts: Any = field(default=None, compare=False, repr=False)

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict[str, np.ndarray]:
        if self.starts is not None and np.ndim(x0) == 3:
            starts = np.asarray(self.starts, dtype=float)
            if starts.shape != np.shape(x0):
                raise ScenarioError(f"starts have shape {starts.shape}, the batch needs {np.shape(x0)}")
            return {"x": np.array(starts)}
        return super().initial_state(x0, agents, problem)


def ring_graph(num_agents: int = NUM_AGENTS) -> topology.GraphSequence:
    """The ring of ``num_agents`` with Metropolis weights (1/3 each), static.

    Example:
        >>> ring_graph().weights(1).toarray()[0].round(3).tolist()
        [0.333, 0.333, 0.0, 0.0, 0.333]
    """
    return topology.static(topology.metropolis(nx.cycle_graph(num_agents)), directed=False,
                           description=f"ring of {num_agents}, Metropolis weights (1/3)")


# --------------------------------------------------------------------------- helpers


def _arguments(out_dir: Any, runs: Any, seed: Any, horizon: Any, variances: Any, *, min_runs: int = 2,
               allow_zero: bool = False) -> tuple[Path, int, int, int, tuple[float, ...]]:
    """The checked ``(out_dir, runs, seed, horizon, variances)`` of a reproduction (the directory not created yet).

    Raises:
        ScenarioError: ``runs < min_runs``, a negative ``seed``, ``horizon < 1`` (or not integers), or bad
            ``variances`` (see :func:`_check_variances`).
    """
    runs = check_integer(runs, "runs", minimum=min_runs, error=ScenarioError)
    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError)
    horizon = check_integer(horizon, "horizon", minimum=1, error=ScenarioError)
    return Path(out_dir), runs, seed, horizon, _check_variances(variances, allow_zero)


def _check_variances(variances: Any, allow_zero: bool = False) -> tuple[float, ...]:
    """The noise variances as floats, in increasing order (the checks compare neighbours): a nonempty list of
    distinct positive (or, with ``allow_zero``, >= 0) numbers."""
    try:
        out = tuple(float(v) for v in variances)
    except (TypeError, ValueError):
        raise ScenarioError(f"variances must be a nonempty list of numbers, got {variances!r}") from None
    low_ok = (lambda v: v >= 0) if allow_zero else (lambda v: v > 0)
    if not out or any(not (low_ok(v) and math.isfinite(v)) for v in out):
        what = "numbers >= 0" if allow_zero else "positive numbers"
        raise ScenarioError(f"variances must be a nonempty list of {what}, got {out!r}")
    if len(set(out)) < len(out):
        raise ScenarioError(f"variances repeat a value: {out!r}")
    return tuple(sorted(out))


def _proportion(k: int, n: int) -> dict[str, Any]:
    lo, hi = clopper_pearson(int(k), int(n), 0.05)
    return {"count": int(k), "runs": int(n), "fraction": k / n, "ci95": [lo, hi]}


def _write(out: Path, stem: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], summary: dict[str, Any],
           plot: Callable[[Path], None] | None, t0: float) -> None:
    """Write ``stem.csv``, ``stem.png`` (``plot(path)``, skipped if None) and ``stem_summary.json``.

    ``summary["elapsed_seconds"]`` is set to the time since ``t0`` (``time.perf_counter``) before the JSON is written.
    """
    write_csv(out / f"{stem}.csv", columns, rows)
    if plot is not None:
        plot(out / f"{stem}.png")
    summary["elapsed_seconds"] = time.perf_counter() - t0
    write_json(out / f"{stem}_summary.json", summary)


def _graph_choice(graph: topology.GraphSequence) -> dict[str, Any]:
    audit = topology.audit(graph, ASSUMPTIONS, horizon=1)
    return {"graph": repr(graph), "weights": graph.weights(1).toarray().round(6).tolist(),
            "eta": audit.constants.get("eta"), "assumption4_holds": bool(audit.all_hold)}


def _points(problem: Problem) -> dict[str, np.ndarray]:
    fam = problem.costs
    return {"theta_star": stationary_point(fam, THETA_STAR_PAPER),
            "theta_saddle": stationary_point(fam, THETA_SADDLE_PAPER),
            "spurious_minimum": stationary_point(fam, SPURIOUS_MINIMUM_APPROX)}
