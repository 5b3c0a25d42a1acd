"""Coordinate-wise tuning of Huang-Mitra-Vaidya's ``(c, q, p)`` on simulated error.

Huang, Mitra and Vaidya (ICDCN 2015), §4.5, pick the step size
``c``, the step decay ``q`` and the noise decay ``p`` by a cyclic heuristic:
hold two of them fixed, move the third to a one-dimensional local optimum,
and cycle. The paper applies it to its accuracy bound (Theorem 10, eq. 15).
:func:`tune_huang2015` applies the same heuristic to the *simulated* mean
squared error ``E ||xbar(T) - x*||^2`` instead, because the bound is
degenerate as an objective: for the paper's own Example 2 its minimum over
``(c, q, p)`` is close to the largest possible squared distance in the box,
and for small epsilon it is approached as ``c -> 0`` (see
:func:`~asyncdp.papers.huang2015.reproduce.fig1.theorem10_bound`), so minimizing it says nothing
about the algorithm.

One 1-D move: evaluate a grid on the parameter's feasible interval (given the
other two), then refine by golden-section search between the grid neighbours
of the best grid point. Grids are uniform in a transformed coordinate that
spreads the interesting values: ``log c`` on ``[c_lo, c_hi]`` inside
``(0, 1/C3)``; ``logit(q / p)`` (so ``q < p`` always); and
``logit((p - q) / (1 - q))`` (so ``q < p < 1`` always). The move keeps the
best point seen, the current one included, so the simulated error never
increases along the path.

Every evaluation uses the *same* seed (common random numbers): the standard
Laplace draws are identical and only the schedules change, so differences
between candidates are not noise-driven. The result is deterministic given
the seed. Evaluations are cached, and each one is recorded in
:attr:`TuningResult.path`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from topology.validation import check_integer, check_real

from ....errors import AlgorithmParameterError, ScenarioError
from ....scenario import Scenario
from ....reproduce._stats import sem

__all__ = ["Evaluation", "TuningResult", "tune_huang2015", "DEFAULT_BOUNDS", "PARAMETERS"]

PARAMETERS: tuple[str, ...] = ("c", "q", "p")
"""The tuned parameters, in the order of one cycle."""

DEFAULT_BOUNDS: dict[str, tuple[float, float]] = {
    "c": (1e-4, 0.98),  # as fractions of 1/C3: c in [1e-4/C3, 0.98/C3]
    "q": (0.01, 0.99),
    "p": (0.02, 0.995),
}
"""Default search box. ``c`` is given as fractions of ``1/C3``; ``q`` and ``p`` as values."""

_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
_EDGE = 1e-6  # relative margin keeping q < p and p > q strictly


@dataclass(frozen=True)
class Evaluation:
    """One simulated evaluation on the tuning path.

    Attributes:
        c, q, p: the parameters.
        mse: mean over runs of ``||xbar(T) - x*||^2``.
        sem: its standard error (sample standard deviation / sqrt(runs)).
        cycle: the cycle (0-based; -1 for the starting point).
        parameter: the parameter being moved (``"start"`` for the start).
        stage: ``"start"``, ``"grid"`` or ``"refine"``.
        cached: True if the value came from the cache (no new simulation).
    """

    c: float
    q: float
    p: float
    mse: float
    sem: float
    cycle: int
    parameter: str
    stage: str
    cached: bool = False


@dataclass(frozen=True)
class TuningResult:
    """The outcome of :func:`tune_huang2015`.

    Attributes:
        c, q, p: the tuned parameters.
        mse, sem: simulated mean squared error (and its standard error) there.
        start: the starting ``(c, q, p)``; ``start_mse`` its simulated error
            on the same random numbers.
        epsilon, runs, seed, cycles, grid_points, refine_steps: the settings.
        bounds: the search box actually used (``c`` in absolute units, i.e. times ``1/C3``).
        path: every evaluation, in order (cache hits included, flagged).
        simulations: number of distinct simulations run.
    """

    c: float
    q: float
    p: float
    mse: float
    sem: float
    start: tuple[float, float, float]
    start_mse: float
    epsilon: float
    runs: int
    seed: int
    cycles: int
    grid_points: int
    refine_steps: int
    bounds: dict[str, tuple[float, float]]
    path: tuple[Evaluation, ...] = field(repr=False)
    simulations: int = 0

    @property
    def params(self) -> tuple[float, float, float]:
        """``(c, q, p)``."""
        return (self.c, self.q, self.p)

    def to_dict(self, *, include_path: bool = True) -> dict[str, Any]:
        """JSON-ready dictionary (``epsilon = inf`` becomes the string ``"inf"``)."""
        out = {k: getattr(self, k) for k in ("c", "q", "p", "mse", "sem", "start_mse", "runs", "seed", "cycles",
                                              "grid_points", "refine_steps", "simulations")}
        out["epsilon"] = self.epsilon if math.isfinite(self.epsilon) else "inf"
        out["start"] = list(self.start)
        out["bounds"] = {k: list(v) for k, v in self.bounds.items()}
        if include_path:
            out["path"] = [asdict(e) for e in self.path]
        return out


# --------------------------------------------------------------------------- validation

_WHERE = "tune_huang2015"
"""Context put before every argument-check message of :func:`tune_huang2015`."""


def _check_point(c: float, q: float, p: float, c_max: float, what: str) -> None:
    if not 0 < c < c_max:
        raise AlgorithmParameterError(f"tune_huang2015: {what} c must be in (0, 1/C3) = (0, {c_max!r}), got c={c!r}")
    if not 0 < q < 1:
        raise AlgorithmParameterError(f"tune_huang2015: {what} q must be in (0, 1), got q={q!r}")
    if not q < p < 1:
        raise AlgorithmParameterError(f"tune_huang2015: {what} p must be in (q, 1) = ({q!r}, 1), got p={p!r}")


def _resolve_bounds(bounds: Mapping[str, tuple[float, float]] | None, c_max: float) -> dict[str, tuple[float, float]]:
    merged = dict(DEFAULT_BOUNDS)
    if bounds is not None:
        if not isinstance(bounds, Mapping):
            raise AlgorithmParameterError(f"tune_huang2015: bounds must be a mapping, got {bounds!r}")
        for key, value in bounds.items():
            if key not in PARAMETERS:
                raise AlgorithmParameterError(
                    f"tune_huang2015: bounds keys must be among {PARAMETERS}, got {key!r}")
            try:
                lo, hi = (check_real(v, f"bounds[{key!r}]", error=AlgorithmParameterError, where=_WHERE)
                          for v in value)
            except (TypeError, ValueError):
                raise AlgorithmParameterError(
                    f"tune_huang2015: bounds[{key!r}] must be a pair (low, high), got {value!r}") from None
            merged[key] = (lo, hi)
    out: dict[str, tuple[float, float]] = {}
    for key in PARAMETERS:
        lo, hi = merged[key]
        if not (0 < lo < hi < 1):
            what = "fractions of 1/C3 " if key == "c" else ""
            raise AlgorithmParameterError(
                f"tune_huang2015: bounds[{key!r}] ({what}low, high) must satisfy 0 < low < high < 1, "
                f"got ({lo!r}, {hi!r})")
        out[key] = (lo * c_max, hi * c_max) if key == "c" else (lo, hi)
    return out


# --------------------------------------------------------------------------- transforms


def _logit(x: float) -> float:
    return math.log(x / (1.0 - x))


def _expit(u: float) -> float:
    return 1.0 / (1.0 + math.exp(-u)) if u >= 0 else math.exp(u) / (1.0 + math.exp(u))


def _interval(name: str, point: dict[str, float], box: dict[str, tuple[float, float]]) -> tuple[float, float] | None:
    """Feasible ``[low, high]`` of ``name`` given the other two (None if empty)."""
    lo, hi = box[name]
    if name == "q":
        hi = min(hi, point["p"] * (1.0 - _EDGE))
    elif name == "p":
        lo = max(lo, point["q"] + _EDGE * (1.0 - point["q"]))
    return (lo, hi) if lo < hi else None


def _to_u(name: str, value: float, point: dict[str, float]) -> float:
    if name == "c":
        return math.log(value)
    if name == "q":
        return _logit(value / point["p"])
    q = point["q"]
    return _logit((value - q) / (1.0 - q))


def _from_u(name: str, u: float, point: dict[str, float]) -> float:
    if name == "c":
        return math.exp(u)
    if name == "q":
        return point["p"] * _expit(u)
    q = point["q"]
    return q + (1.0 - q) * _expit(u)


# --------------------------------------------------------------------------- the tuner


def tune_huang2015(
    scenario_for: Callable[[float, float, float, float], Scenario],
    epsilon: float,
    *,
    runs: int = 500,
    seed: int = 0,
    start: tuple[float, float, float] = (0.05, 0.5, 0.8),
    cycles: int = 3,
    grid_points: int = 9,
    refine_steps: int = 4,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> TuningResult:
    """Tune ``(c, q, p)`` of :class:`~asyncdp.papers.huang2015.rule.Huang2015` on simulated MSE (the paper's §4.5 heuristic).

    Each evaluation runs ``scenario_for(c, q, p, epsilon).replace(seed=seed)``
    on the batch engine with ``runs`` runs and scores it by the mean of
    ``||xbar(T) - x*||^2`` (the paper's accuracy measure at the horizon).
    See the module docstring for the search and why the simulated error, not
    the Theorem 10 bound, is minimized.

    Args:
        scenario_for: ``(c, q, p, epsilon) -> Scenario`` (lockstep, lossless,
            broadcast, a ``Huang2015`` algorithm); its seed is overridden.
        epsilon: the privacy level (``> 0``; ``math.inf`` tunes the noise-free run).
        runs: Monte-Carlo runs per evaluation.
        seed: the common seed of every evaluation (common random numbers).
        start: the starting ``(c, q, p)``; must satisfy ``0 < c < 1/C3`` and
            ``0 < q < p < 1`` (it need not lie inside ``bounds``).
        cycles: maximal number of c -> q -> p cycles (stops early when a cycle
            changes nothing).
        grid_points: grid size of each 1-D move (``>= 3``).
        refine_steps: golden-section iterations after the grid (``>= 0``).
        bounds: optional ``{"c": (lo, hi), "q": (lo, hi), "p": (lo, hi)}``
            overriding :data:`DEFAULT_BOUNDS`; the ``"c"`` pair is in
            fractions of ``1/C3`` (so ``c`` stays below ``1/C3``), all pairs
            must satisfy ``0 < lo < hi < 1``.

    Returns:
        A :class:`TuningResult` whose ``mse`` is ``<= start_mse``.

    Raises:
        AlgorithmParameterError: a bad epsilon, start or bounds (the message
            names the parameter and value); a problem without ``C3 > 0``.
        ScenarioError: bad ``runs``, ``seed``, ``cycles``, ``grid_points`` or
            ``refine_steps``, or ``scenario_for`` not returning a Scenario.

    Example:
        >>> from asyncdp.papers.huang2015.reproduce.fig1 import example2_scenario_factory
        >>> sf = example2_scenario_factory(N=4, horizon=20)
        >>> res = tune_huang2015(sf, 1.0, runs=20, cycles=1, grid_points=3, refine_steps=0)
        >>> res.mse <= res.start_mse and 0 < res.q < res.p < 1
        True
    """
    eps = check_real(epsilon, "epsilon", error=AlgorithmParameterError, where=_WHERE, finite=False)
    if not eps > 0:
        raise AlgorithmParameterError(f"tune_huang2015: epsilon must be > 0, got {epsilon!r}")
    runs = check_integer(runs, "runs", minimum=1, error=ScenarioError, where=_WHERE)
    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError, where=_WHERE)
    cycles = check_integer(cycles, "cycles", minimum=0, error=ScenarioError, where=_WHERE)
    grid_points = check_integer(grid_points, "grid_points", minimum=3, error=ScenarioError, where=_WHERE)
    refine_steps = check_integer(refine_steps, "refine_steps", minimum=0, error=ScenarioError, where=_WHERE)
    if not callable(scenario_for):
        raise ScenarioError(f"tune_huang2015: scenario_for must be callable, got {scenario_for!r}")
    try:
        values = tuple(start)
    except TypeError:
        values = ()
    if len(values) != 3:
        raise AlgorithmParameterError(f"tune_huang2015: start must be a triple (c, q, p), got {start!r}")
    c0, q0, p0 = (check_real(v, f"start {name}", error=AlgorithmParameterError, where=_WHERE)
                  for name, v in zip(PARAMETERS, values))
    _check_point(c0, q0, p0, math.inf, "start")
    probe = scenario_for(c0, q0, p0, eps)
    if not isinstance(probe, Scenario):
        raise ScenarioError(f"tune_huang2015: scenario_for must return a Scenario, got {type(probe).__name__}")
    c3 = probe.problem.constants.strong_convexity
    if c3 is None or not c3 > 0:
        raise AlgorithmParameterError(
            f"tune_huang2015: the problem must declare a strong convexity C3 > 0 (c < 1/C3), got C3={c3!r}")
    c_max = 1.0 / c3
    _check_point(c0, q0, p0, c_max, "start")
    box = _resolve_bounds(bounds, c_max)

    cache: dict[tuple[float, float, float], tuple[float, float]] = {}
    path: list[Evaluation] = []

    def evaluate(point: dict[str, float], cycle: int, parameter: str, stage: str) -> float:
        key = (point["c"], point["q"], point["p"])
        cached = key in cache
        if not cached:
            sc = scenario_for(key[0], key[1], key[2], eps)
            if not isinstance(sc, Scenario):
                raise ScenarioError(f"tune_huang2015: scenario_for must return a Scenario, got {type(sc).__name__}")
            err = sc.replace(seed=seed).run(engine="batch", runs=runs, keep="final").optimality_error[:, -1]
            cache[key] = (float(err.mean()), sem(err))
        mse, se = cache[key]
        path.append(Evaluation(*key, mse=mse, sem=se, cycle=cycle, parameter=parameter, stage=stage, cached=cached))
        return mse

    point = {"c": c0, "q": q0, "p": p0}
    best = start_mse = evaluate(point, -1, "start", "start")
    for cycle in range(cycles):
        changed = False
        for name in PARAMETERS:
            interval = _interval(name, point, box)
            if interval is None:
                continue
            u_lo, u_hi = (_to_u(name, v, point) for v in interval)
            grid = np.linspace(u_lo, u_hi, grid_points)
            scores = []
            for u in grid:
                cand = {**point, name: _from_u(name, float(u), point)}
                scores.append(evaluate(cand, cycle, name, "grid"))
            k = int(np.argmin(scores))
            cand_best, cand_val = scores[k], _from_u(name, float(grid[k]), point)
            # golden-section refinement between the grid neighbours of the best grid point
            a, b = float(grid[max(k - 1, 0)]), float(grid[min(k + 1, grid_points - 1)])
            x1, x2 = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
            f: dict[float, float] = {}

            def at(u: float, f: dict[float, float] = f, point: dict[str, float] = point, name: str = name,
                   cycle: int = cycle) -> float:  # this move's cache and point, bound now (ruff B023)
                if u not in f:
                    f[u] = evaluate({**point, name: _from_u(name, u, point)}, cycle, name, "refine")
                return f[u]

            for _ in range(refine_steps):
                if at(x1) <= at(x2):
                    b, x2 = x2, x1
                    x1 = b - _GOLDEN * (b - a)
                else:
                    a, x1 = x1, x2
                    x2 = a + _GOLDEN * (b - a)
            for u, val in f.items():
                if val < cand_best:
                    cand_best, cand_val = val, _from_u(name, u, point)
            if cand_best < best:
                point = {**point, name: cand_val}
                best = cand_best
                changed = True
        if not changed:
            break
    mse, se = cache[(point["c"], point["q"], point["p"])]
    return TuningResult(
        c=point["c"], q=point["q"], p=point["p"], mse=mse, sem=se, start=(c0, q0, p0), start_mse=start_mse,
        epsilon=eps, runs=runs, seed=seed, cycles=cycles, grid_points=grid_points, refine_steps=refine_steps,
        bounds=box, path=tuple(path), simulations=len(cache),
    )
