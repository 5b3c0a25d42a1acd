"""Showkatbakhsh, Karakus and Diggavi (seed 000), Sec. 5: private distributed mean estimation, Figs. 1-4.

The setting (Sec. 5 of seed 000, with the open choices of our notes, section
6 item 10): ``N`` nodes each hold ``N_i`` points ``d in [-R, R]^p``; node
``i``'s cost is ``f_i(x) = 1/2 sum_(d in D_i) ||x - d||^2`` on ``X = [-R, R]^p``
(:func:`~asyncdp.algorithms.showkatbakhsh.mean_estimation_problem`: ``mu = L =
N_i``, so ``c = 1/N_i`` and ``eta_t = 1/(N_i t)``); the optimum is the data
mean ``dbar``. One fixed connected Erdős–Rényi graph ``G(N, p_c)`` (resampled
until connected, seeded) with ``W = I - (2/(3 lambda_max)) Lap``. Privacy is
per data point: replacing one point moves ``grad f_i`` by at most
``diam X = 2 R sqrt(p)``, so Prop. 3 holds with ``G_priv = R sqrt(p)``
(:func:`privacy_gradient_bound`), the ``G`` handed to the algorithm. The
algorithm is Algorithm 1 with the corrected hand-over (the last Stage-I
message is noisy), run on the batch engine.

Metrics (relative squared errors, divided by ``||dbar||^2``):

* ``stage1``: ``||xbar(T) - dbar||^2``, the paper's metric (Theorem 2);
* ``released``: ``||xbar - dbar||^2`` after ``T2`` Stage-II rounds: the
  consensus value nodes end with, ``xbar(T) + nbar(T)`` (W doubly stochastic);
* ``node1``: ``||x_1(T) - dbar||^2`` (Fig. 3, node 1 at the end of Stage I).

Linear prediction. Without projections, ``eta_t = 1/(N_i t)`` makes the
average error obey ``t e(t) = (t-1) (e(t-1) + nbar(t-1))`` with ``e(1) = 0``,
so ``E||e(T)||^2 = (p / (N T^2)) sum_(s<T) s^2 M_s^2`` and the released value
adds ``p M_T^2 / N`` (:func:`linear_prediction`). It equals ``(2/3)(2 p
c^2/(N kappa))`` for large ``T``: a plateau in ``T`` (Fig. 1), ``~ 1/kappa ~
(epsilon + 2 ln(2/delta))/epsilon^2`` in epsilon (Fig. 2: slope -2 only for
``epsilon << 2 ln(2/delta)``), ``~ 1/N_i^2`` in ``N_i`` (Fig. 4). Projections
(clipping at the box) make the simulated error smaller when the noise is
large. Each figure's JSON reports the simulation, the prediction, their
ratio, fitted log-log slopes and the trend checks with their numbers.

Tight accounting (:func:`asyncdp.privacy.adapters.showkatbakhsh.tight_accounting`):
Theorem 1's bound beside the PLD/RDP epsilon of the same releases, and the
noise factor ``s < 1`` for which ``s M_t`` meets the same (epsilon, delta)
under exact accounting; Fig. 2 also simulates that schedule (``G_priv s``).

Choices the paper leaves open (module constants; all recorded under
``"choices"`` in every summary): ``R = 1``, ``p = 5``; data i.i.d. per
coordinate ``N(0.7 R, 1)`` truncated to ``[-R, R]``; ``x_i(0) = 0``
(``y(1) = 0``); ``T2 = 50`` Stage-II rounds; ``runs`` noise realizations per
point on one data set and one graph (Fig. 3: several graphs per ``p_c``);
grids below; 95% normal confidence intervals.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import topology

from ..algorithms.showkatbakhsh import Showkatbakhsh, mean_estimation_problem
from ..errors import ScenarioError
from ..privacy.adapters.showkatbakhsh import tight_accounting
from ..problems.problem import Problem
from ..scenario import Scenario
from ._outputs import save_figure, write_outputs

__all__ = [
    "N_NODES", "N_POINTS", "DIM", "RADIUS", "DATA_MEAN", "DATA_STD", "P_C", "EPSILON", "HORIZON",
    "STAGE2_ROUNDS", "RUNS", "DATA_SEED", "GRAPH_SEED", "DEFAULT_SEED", "FIG1_HORIZONS", "FIG2_EPSILONS",
    "FIG2_DELTAS", "FIG3_PCS", "FIG3_HORIZONS", "FIG3_GRAPHS", "FIG4_POINTS", "Z95", "SUMMARY_KEYS",
    "generate_data", "fixed_er_graph", "privacy_gradient_bound", "linear_prediction", "simulate",
    "reproduce_fig1", "reproduce_fig2", "reproduce_fig3", "reproduce_fig4", "format_table",
]

N_NODES = 10
"""Nodes ``N`` (paper default)."""
N_POINTS = 100
"""Points per node ``N_i`` (paper default)."""
DIM = 5
"""Dimension ``p`` (not given in the paper)."""
RADIUS = 1.0
"""``X = [-R, R]^p`` (``R`` not given in the paper)."""
DATA_MEAN = 0.7
"""Data mean ``0.7 R`` per coordinate (paper)."""
DATA_STD = 1.0
"""Data standard deviation before truncation (paper: unit variance)."""
P_C = 0.6
"""Erdős–Rényi link probability (paper default)."""
EPSILON = 4.0
"""epsilon of Figs. 1, 3, 4 (paper: Figs. 1 and 4; Fig. 3's is not stated)."""
HORIZON = 1000
"""Stage-I rounds ``T`` of Figs. 2 and 4 (paper: Fig. 2), and the second horizon of Fig. 3."""
STAGE2_ROUNDS = 50
"""Stage-II rounds ``T2`` (the paper runs Stage II until a stopping rule; ``beta^50 < 1e-3`` for p_c = 0.6)."""
RUNS = 400
"""Noise realizations per point."""
DATA_SEED = 0
"""Seed of the data (``numpy.random.default_rng``)."""
GRAPH_SEED = 0
"""Seed of the Erdős–Rényi graph (graph ``k`` of Fig. 3 uses ``GRAPH_SEED + k``)."""
DEFAULT_SEED = 0
"""Scenario seed of the noise."""
FIG1_HORIZONS: tuple[int, ...] = (1, 3, 10, 30, 100, 300, 1000, 3000, 10000)
"""Fig. 1 grid of ``T``."""
FIG2_EPSILONS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
"""Fig. 2 grid of epsilon."""
FIG2_DELTAS: tuple[float, ...] = (1e-3, 1e-6, 1e-9)
"""Fig. 2 deltas: ``1/(N N_i)``, its square and cube (paper)."""
FIG3_PCS: tuple[float, ...] = (0.1, 0.3, 0.6, 1.0)
"""Fig. 3 link probabilities (paper)."""
FIG3_HORIZONS: tuple[int, ...] = (100, 1000)
"""Fig. 3 horizons: at ``T = 1000`` the consensus term is a few percent of node 1's error, at 100 it is visible."""
FIG3_GRAPHS = 5
"""Connected graphs drawn per ``p_c`` in Fig. 3 (one for ``p_c = 1``, the complete graph)."""
FIG4_POINTS: tuple[int, ...] = (10, 30, 100, 300, 1000)
"""Fig. 4 grid of ``N_i`` (with ``delta = 1/(N N_i)``, paper)."""
Z95 = 1.959963984540054
"""Normal quantile of the two-sided 95% confidence interval."""
SUMMARY_KEYS: tuple[str, ...] = ("experiment", "paper", "choices", "points", "checks", "statements", "timing",
                                 "files")
"""Top-level keys of every ``figK_summary.json`` (and of the returned dict)."""

_PAPER = "Showkatbakhsh, Karakus, Diggavi, Differentially Private Consensus-Based Distributed Optimization (seed 000)"


# --------------------------------------------------------------------------- the setting


def generate_data(n_nodes: int = N_NODES, n_points: int = N_POINTS, dim: int = DIM, R: float = RADIUS,
                  seed: int = DATA_SEED) -> np.ndarray:
    """Points i.i.d. per coordinate ``N(0.7 R, 1)`` truncated to ``[-R, R]``, shape ``(N, N_i, p)``.

    Raises:
        ScenarioError: a non-positive size, ``R`` or a negative seed.

    Example:
        >>> d = generate_data(2, 3, 4, seed=1)
        >>> d.shape, bool(np.abs(d).max() <= 1.0)
        ((2, 3, 4), True)
    """
    n_nodes, n_points, dim = (_integer(k, v, 1) for k, v in (("n_nodes", n_nodes), ("n_points", n_points),
                                                             ("dim", dim)))
    R = _positive("R", R)
    seed = _integer("seed", seed, 0)
    loc = DATA_MEAN * R
    a, b = (-R - loc) / DATA_STD, (R - loc) / DATA_STD
    rng = np.random.default_rng(seed)
    return stats.truncnorm.rvs(a, b, loc=loc, scale=DATA_STD, size=(n_nodes, n_points, dim), random_state=rng)


def fixed_er_graph(n_nodes: int, p_c: float, seed: int) -> Any:
    """One connected ``G(N, p_c)`` (resampled until connected) with ``W = I - (2/(3 lambda_max)) Lap``, fixed in time.

    Raises:
        ScenarioError: bad ``n_nodes`` or ``seed``; topology.ParameterError: bad ``p_c``.

    Example:
        >>> w = fixed_er_graph(5, 1.0, 0).dense(7)
        >>> bool(np.allclose(w, w.T)), round(float(w[0, 1]), 6)
        (True, 0.133333)
    """
    n_nodes = _integer("n_nodes", n_nodes, 2)
    seed = _integer("seed", seed, 0)
    w = topology.erdos_renyi(n_nodes, p_c, seed=seed, connected=True, rule="laplacian").weights(1)
    return topology.static(w, directed=False,
                           description=f"fixed connected G(N={n_nodes}, p_c={p_c}), seed {seed}, Laplacian weights")


def privacy_gradient_bound(R: float = RADIUS, dim: int = DIM) -> float:
    """``G_priv = R sqrt(p)``: one replaced point moves ``grad f_i`` by ``<= 2 R sqrt(p) = 2 G_priv``.

    Example:
        >>> privacy_gradient_bound(1.0, 4)
        2.0
    """
    return _positive("R", R) * math.sqrt(_integer("dim", dim, 1))


def linear_prediction(algorithm: Showkatbakhsh, n_nodes: int) -> tuple[float, float]:
    """Projection-free ``(E||xbar(T) - dbar||^2, E||xbar(T) + nbar(T) - dbar||^2)`` for ``c N_i = 1``.

    ``(p / (N T^2)) sum_(s<T) s^2 M_s^2`` and that plus ``p M_T^2 / N``
    (module docstring); ``algorithm`` must be bound (its ``M_s``).

    Example:
        >>> alg = Showkatbakhsh(4.0, 1e-3, T=1, gradient_bound=1.0, smoothness=10.0, strong_convexity=10.0,
        ...                     dimension=2)
        >>> linear_prediction(alg, 4)[0]
        0.0
    """
    T, p = algorithm.T, algorithm.dimension
    s = np.arange(1, T + 1, dtype=float)
    m2 = np.array([algorithm.noise_std(int(k)) for k in s]) ** 2
    stage1 = p / (n_nodes * T**2) * float((s[:-1] ** 2 * m2[:-1]).sum())
    return stage1, stage1 + p * float(m2[-1]) / n_nodes


def simulate(problem: Problem, graph: Any, *, epsilon: float, delta: float, T: int, T2: int, runs: int,
             seed: int, G: float) -> dict[str, np.ndarray]:
    """``runs`` batch runs of Algorithm 1 (corrected hand-over); relative squared errors per run.

    Returns:
        ``{"stage1", "released", "node1", "spread"}``, each ``(runs,)``: ``stage1``
        is ``||xbar(T) - dbar||^2 / ||dbar||^2``, ``released`` the same after
        the ``T2`` Stage-II rounds, ``node1`` ``||x_1 - dbar||^2 / ||dbar||^2``
        at the last round, ``spread`` ``max_i ||x_i - xbar|| / ||dbar||`` at the last round.
    """
    alg = Showkatbakhsh(epsilon=epsilon, delta=delta, T=T, T2=T2, gradient_bound=G)
    sc = Scenario(problem, graph, alg, horizon=alg.horizon, seed=seed, record_transcript=False)
    res = sc.run(engine="batch", runs=runs, keep="final")
    x_star = np.asarray(problem.optimum)
    norm2 = float(x_star @ x_star)
    return {
        "stage1": res.optimality_error[:, T] / norm2,
        "released": res.optimality_error[:, -1] / norm2,
        "node1": ((res.final[:, 0] - x_star) ** 2).sum(-1) / norm2,
        "spread": res.deviation[:, -1] / math.sqrt(norm2),
    }


# --------------------------------------------------------------------------- helpers


def _integer(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ScenarioError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(value) and value > 0):
        raise ScenarioError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _grid(name: str, values: Any, kind: type) -> tuple[Any, ...]:
    try:
        out = tuple(values)
    except TypeError:
        raise ScenarioError(f"{name} must be a sequence, got {values!r}") from None
    if not out:
        raise ScenarioError(f"{name} must not be empty")
    if kind is int:
        return tuple(_integer(name, v, 1) for v in out)
    return tuple(_positive(name, v) for v in out)


def _stats(x: np.ndarray) -> dict[str, float]:
    m = float(x.mean())
    sem = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else float("nan")
    return {"mean": m, "sem": sem, "ci_low": m - Z95 * sem, "ci_high": m + Z95 * sem}


def _fit(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """Least-squares slope of ``log y`` on ``log x``."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if lx.size < 2:
        return {"slope": None, "intercept": None, "points": int(lx.size)}
    slope, intercept = np.polyfit(lx, ly, 1)
    return {"slope": float(slope), "intercept": float(intercept), "points": int(lx.size)}


def _check(name: str, holds: bool, criterion: str, **values: Any) -> dict[str, Any]:
    return {"name": name, "holds": bool(holds), "criterion": criterion, **values}


def _choices(**extra: Any) -> dict[str, Any]:
    base = {
        "N": N_NODES, "N_i": N_POINTS, "p": DIM, "R": RADIUS,
        "domain": "X = [-R, R]^p",
        "costs": "f_i(x) = 1/2 sum_(d in D_i) ||x - d||^2 (mu = L = N_i, c = 1/N_i, eta_t = 1/(N_i t))",
        "data": f"i.i.d. per coordinate N({DATA_MEAN} R, {DATA_STD}^2) truncated to [-R, R] "
                "(scipy.stats.truncnorm, numpy.random.default_rng(data_seed))",
        "data_seed": DATA_SEED,
        "graph": "one connected Erdős–Rényi G(N, p_c) (resampled until connected, topology.erdos_renyi seed "
                 "graph_seed), fixed in time, W = I - (2/(3 lambda_max)) Lap",
        "graph_seed": GRAPH_SEED,
        "privacy_gradient_bound": "G_priv = R sqrt(p) (per-point adjacency: ||d - d'|| <= 2 R sqrt(p))",
        "algorithm": "Algorithm 1, eta_t = c/t, M_t^2 = (2/kappa) c^2 sqrt(T)/t^1.5, corrected hand-over "
                     "(y(T+1) = x(T) + n(T)); x_i(0) = 0",
        "stage2_rounds": STAGE2_ROUNDS,
        "engine": "batch engine, lockstep, lossless, broadcast",
        "metric": "relative squared error ||xbar - dbar||^2 / ||dbar||^2 (stage1: at T; released: after Stage II)",
        "confidence_interval": f"95% normal: mean +- {Z95:.6f} sd / sqrt(runs)",
    }
    base.update(extra)
    return base


def _axes(title: str, xlabel: str, ylabel: str = "relative error ||x̄ − d̄||² / ||d̄||²") -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 5.0))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.25)
    return fig, ax


def _setting(n_points: int = N_POINTS) -> tuple[Problem, float]:
    data = generate_data(N_NODES, n_points, DIM, RADIUS, DATA_SEED)
    return mean_estimation_problem(data, RADIUS), privacy_gradient_bound(RADIUS, DIM)


def _bound_alg(problem: Problem, G: float, epsilon: float, delta: float, T: int) -> Showkatbakhsh:
    return Showkatbakhsh(epsilon=epsilon, delta=delta, T=T, T2=STAGE2_ROUNDS, gradient_bound=G).bind(problem)


def _common(runs: int, seed: int) -> tuple[int, int]:
    return _integer("runs", runs, 2), _integer("seed", seed, 0)


# --------------------------------------------------------------------------- Fig. 1


def reproduce_fig1(out_dir: str | Path, *, runs: int = RUNS, seed: int = DEFAULT_SEED,
                   horizons: Sequence[int] = FIG1_HORIZONS, epsilon: float = EPSILON) -> dict[str, Any]:
    """Fig. 1: error against the horizon ``T`` (epsilon = 4, delta = 1/(N N_i) = 1e-3).

    Checks: ``stage1`` is 0 at ``T = 1`` (``x_i(1)`` is the local mean);
    ``stage1`` levels off (max/min over ``T >= 10`` at most 1.5, the linear
    prediction's spread there is ~1.1); ``released`` falls from ``T = 1`` to
    the largest ``T`` (prediction: by a third) and then levels off; simulation
    within [0.8, 1.25] of the linear prediction at every ``T >= 3``.

    Args:
        out_dir: output directory (created).
        runs: noise realizations per ``T``, ``>= 2``; seed: scenario seed.
        horizons: the ``T`` grid; epsilon: privacy level.

    Returns:
        The summary (:data:`SUMMARY_KEYS`); writes ``fig1.csv``, ``fig1_summary.json``, ``fig1.png``.

    Raises:
        ScenarioError: a bad argument (named with its value).
    """
    runs, seed = _common(runs, seed)
    horizons = _grid("horizons", horizons, int)
    epsilon = _positive("epsilon", epsilon)
    delta = 1.0 / (N_NODES * N_POINTS)
    t0 = time.perf_counter()
    problem, G = _setting()
    graph = fixed_er_graph(N_NODES, P_C, GRAPH_SEED)
    points, rows = [], []
    for T in horizons:
        sim = simulate(problem, graph, epsilon=epsilon, delta=delta, T=T, T2=STAGE2_ROUNDS, runs=runs, seed=seed, G=G)
        alg = _bound_alg(problem, G, epsilon, delta, T)
        norm2 = float(problem.optimum @ problem.optimum)
        pred1, pred2 = (v / norm2 for v in linear_prediction(alg, N_NODES))
        s1, s2 = _stats(sim["stage1"]), _stats(sim["released"])
        points.append({"T": T, "stage1": s1, "released": s2, "predicted_stage1": pred1, "predicted_released": pred2,
                       "ratio_stage1": s1["mean"] / pred1 if pred1 > 0 else None,
                       "ratio_released": s2["mean"] / pred2, "spread_after_stage2": float(sim["spread"].max())})
        rows += [[T, r, repr(float(a)), repr(float(b))] for r, (a, b) in enumerate(zip(sim["stage1"], sim["released"]))]
    tail = [p for p in points if p["T"] >= 10]
    checks = []
    if points[0]["T"] == 1:
        checks.append(_check("stage1_zero_at_T1", points[0]["stage1"]["mean"] < 1e-20,
                             "x_i(1) = Proj(local mean): xbar(1) = dbar exactly, error < 1e-20",
                             value=points[0]["stage1"]["mean"]))
    if len(tail) >= 2:
        m = [p["stage1"]["mean"] for p in tail]
        checks.append(_check("stage1_levels_off", max(m) / min(m) <= 1.5, "max/min of stage1 over T >= 10 <= 1.5",
                             value=max(m) / min(m), predicted=max(p["predicted_stage1"] for p in tail)
                             / min(p["predicted_stage1"] for p in tail)))
    if len(points) >= 2:
        first, last = points[0]["released"]["mean"], points[-1]["released"]["mean"]
        checks.append(_check("released_falls", first > last, "released error at the smallest T > at the largest",
                             value=first / last, predicted=points[0]["predicted_released"]
                             / points[-1]["predicted_released"]))
    ratios = [p["ratio_released"] for p in points if p["T"] >= 3]
    if ratios:
        checks.append(_check("matches_linear_prediction", all(0.8 <= r <= 1.25 for r in ratios),
                             "released / linear prediction in [0.8, 1.25] for T >= 3", value=ratios))
    summary = {
        "experiment": "showkatbakhsh-fig1", "paper": _PAPER + ", Fig. 1: error vs T",
        "choices": _choices(runs=runs, seed=seed, horizons=list(horizons), epsilon=epsilon, delta=delta, p_c=P_C,
                            G_priv=G),
        "points": points, "checks": checks,
        "tight_accounting": tight_accounting(epsilon, delta, T=max(horizons), c=1.0 / N_POINTS, G=G),
        "statements": [
            f"stage1 error {points[-1]['stage1']['mean']:.4g} at T={points[-1]['T']} (linear prediction "
            f"{points[-1]['predicted_stage1']:.4g}); the released consensus adds nbar(T), "
            f"{points[0]['released']['mean']:.4g} at T={points[0]['T']}.",
            "The error plateaus at once: with eta_t = 1/(N_i t) the first step gives the local mean and the "
            "noise floor (2/3)(2 p c^2/(N kappa)) does not depend on T (Theorem 2's C_(eps,delta) term).",
        ],
    }
    summary["timing"] = {"seconds": time.perf_counter() - t0}
    write_outputs(Path(out_dir), "fig1", ("T", "run", "stage1", "released"), rows, summary, _plot_fig1)
    return summary


def _plot_fig1(path: Path, s: dict[str, Any]) -> None:
    pts = s["points"]
    T = np.array([p["T"] for p in pts], float)
    fig, ax = _axes(f"Seed 000 Fig. 1: error vs T (ε={s['choices']['epsilon']:g}, δ={s['choices']['delta']:g}, "
                    f"{s['choices']['runs']} runs)", "Stage-I horizon T")
    for key, style, label in (("stage1", "o-", "x̄(T) (paper's metric)"), ("released", "s-", "after Stage II")):
        m = np.array([p[key]["mean"] for p in pts])
        e = Z95 * np.array([p[key]["sem"] for p in pts])
        ok = m > 1e-12  # x̄(1) = d̄ up to round-off: not drawn on the log scale
        ax.errorbar(T[ok], m[ok], yerr=e[ok], fmt=style, capsize=3, label=label)
        if key == "stage1" and not ok.all():
            ax.annotate("x̄(T) = d̄ to round-off at T = " + ", ".join(f"{t:g}" for t in T[~ok]),
                        xy=(0.02, 0.02), xycoords="axes fraction", fontsize=7)
    ax.plot(T, [p["predicted_released"] for p in pts], "k--", lw=1, label="linear prediction (released)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    save_figure(fig, path)


# --------------------------------------------------------------------------- Fig. 2


def reproduce_fig2(out_dir: str | Path, *, runs: int = RUNS, seed: int = DEFAULT_SEED,
                   epsilons: Sequence[float] = FIG2_EPSILONS, deltas: Sequence[float] = FIG2_DELTAS,
                   T: int = HORIZON) -> dict[str, Any]:
    """Fig. 2: error against epsilon for three deltas (``T = 1000``), with tight-accounting noise beside it.

    Checks per delta: the error falls with epsilon; the fitted log-log slope
    of ``stage1`` is within 0.3 of the linear prediction's slope over the
    same grid (which is ``-2 + epsilon/(epsilon + 2 ln(2/delta))`` pointwise)
    using the points where the simulation is within [0.8, 1.25] of the
    prediction (unsaturated by the box); and at every epsilon a smaller delta
    gives a larger error. The ``tight`` columns rerun each point with the noise
    factor of :func:`~asyncdp.privacy.adapters.showkatbakhsh.tight_accounting`.

    Args:
        out_dir: output directory; runs, seed: as in :func:`reproduce_fig1`.
        epsilons, deltas: grids; T: Stage-I horizon.

    Returns:
        The summary; writes ``fig2.csv``, ``fig2_summary.json``, ``fig2.png``.

    Raises:
        ScenarioError: a bad argument.
    """
    runs, seed = _common(runs, seed)
    epsilons = _grid("epsilons", epsilons, float)
    deltas = _grid("deltas", deltas, float)
    if any(not d < 1 for d in deltas):
        raise ScenarioError(f"deltas must lie in (0, 1), got {deltas!r}")
    T = _integer("T", T, 1)
    t0 = time.perf_counter()
    problem, G = _setting()
    graph = fixed_er_graph(N_NODES, P_C, GRAPH_SEED)
    norm2 = float(problem.optimum @ problem.optimum)
    points, rows = [], []
    for delta in deltas:
        for eps in epsilons:
            sim = simulate(problem, graph, epsilon=eps, delta=delta, T=T, T2=STAGE2_ROUNDS, runs=runs, seed=seed, G=G)
            acct = tight_accounting(eps, delta, T=T, c=1.0 / N_POINTS, G=G)
            tight = simulate(problem, graph, epsilon=eps, delta=delta, T=T, T2=STAGE2_ROUNDS, runs=runs, seed=seed,
                             G=G * acct["noise_factor"])
            pred1, pred2 = (v / norm2 for v in linear_prediction(_bound_alg(problem, G, eps, delta, T), N_NODES))
            s1 = _stats(sim["stage1"])
            points.append({
                "epsilon": eps, "delta": delta, "stage1": s1, "released": _stats(sim["released"]),
                "predicted_stage1": pred1, "predicted_released": pred2, "ratio_stage1": s1["mean"] / pred1,
                "tight_stage1": _stats(tight["stage1"]), "tight_released": _stats(tight["released"]),
                "epsilon_theorem1": acct["epsilon_theorem1"], "epsilon_rdp": acct["epsilon_rdp"],
                "epsilon_pld": acct["epsilon_pld"], "noise_factor": acct["noise_factor"],
                "variance_factor": acct["variance_factor"],
            })
            rows += [[eps, delta, r, repr(float(a)), repr(float(b)), repr(float(c))]
                     for r, (a, b, c) in enumerate(zip(sim["stage1"], sim["released"], tight["stage1"]))]
    checks, fits = [], {}
    for delta in deltas:
        pts = [p for p in points if p["delta"] == delta]
        m = [p["stage1"]["mean"] for p in pts]
        checks.append(_check(f"falls_with_epsilon_delta={delta:g}", all(a > b for a, b in zip(m, m[1:])),
                             "stage1 error strictly decreasing along the epsilon grid", value=m))
        lin = [p for p in pts if 0.8 <= p["ratio_stage1"] <= 1.25]
        fit_sim = _fit([p["epsilon"] for p in lin], [p["stage1"]["mean"] for p in lin])
        fit_pred = _fit([p["epsilon"] for p in lin], [p["predicted_stage1"] for p in lin])
        fit_all = _fit([p["epsilon"] for p in pts], m)
        fits[f"{delta:g}"] = {"simulated_unsaturated": fit_sim, "predicted": fit_pred, "simulated_all": fit_all,
                              "unsaturated_epsilons": [p["epsilon"] for p in lin]}
        ok = fit_sim["slope"] is not None and abs(fit_sim["slope"] - fit_pred["slope"]) <= 0.3
        checks.append(_check(f"slope_delta={delta:g}", ok,
                             "fitted slope (unsaturated points) within 0.3 of the linear prediction's slope; "
                             "O(1/epsilon^2) means slope -2 for epsilon << 2 ln(2/delta)",
                             value=fit_sim["slope"], predicted=fit_pred["slope"], all_points=fit_all["slope"]))
    if len(deltas) >= 2:
        by_eps = [[p["stage1"]["mean"] for p in points if p["epsilon"] == e] for e in epsilons]
        order = np.argsort(deltas)[::-1]  # largest delta first
        mono = all(all(row[order[k]] < row[order[k + 1]] for k in range(len(order) - 1)) for row in by_eps)
        checks.append(_check("smaller_delta_larger_error", mono, "at every epsilon the error grows as delta shrinks",
                             value=by_eps))
    ratio_tight = [p["tight_stage1"]["mean"] / p["stage1"]["mean"] for p in points]
    summary = {
        "experiment": "showkatbakhsh-fig2", "paper": _PAPER + ", Fig. 2: error vs epsilon",
        "choices": _choices(runs=runs, seed=seed, epsilons=list(epsilons), deltas=list(deltas), T=T, p_c=P_C,
                            G_priv=G, tight="same schedule scaled by noise_factor (G_priv * noise_factor)"),
        "points": points, "fits": fits, "checks": checks,
        "statements": [
            "Slopes (stage1, unsaturated points) vs linear prediction: " + ", ".join(
                f"delta={k}: {v['simulated_unsaturated']['slope']} vs {v['predicted']['slope']}"
                for k, v in fits.items()) + ".",
            f"Tight accounting needs noise_factor {min(p['noise_factor'] for p in points):.3f}-"
            f"{max(p['noise_factor'] for p in points):.3f} of the paper's noise for the same (epsilon, delta); "
            f"the error then drops to {min(ratio_tight):.3f}-{max(ratio_tight):.3f} of the paper's.",
        ],
    }
    summary["timing"] = {"seconds": time.perf_counter() - t0}
    write_outputs(Path(out_dir), "fig2", ("epsilon", "delta", "run", "stage1", "released", "tight_stage1"), rows, summary,
           _plot_fig2)
    return summary


def _plot_fig2(path: Path, s: dict[str, Any]) -> None:
    fig, ax = _axes(f"Seed 000 Fig. 2: error vs ε (T={s['choices']['T']}, {s['choices']['runs']} runs)", "ε")
    for k, delta in enumerate(s["choices"]["deltas"]):
        pts = [p for p in s["points"] if p["delta"] == delta]
        e = np.array([p["epsilon"] for p in pts])
        line = ax.errorbar(e, [p["stage1"]["mean"] for p in pts], yerr=[Z95 * p["stage1"]["sem"] for p in pts],
                           fmt="o-", capsize=3, label=f"δ={delta:g}")
        color = line[0].get_color()
        ax.plot(e, [p["predicted_stage1"] for p in pts], "--", color=color, lw=1)
        ax.plot(e, [p["tight_stage1"]["mean"] for p in pts], ":", marker="x", color=color, lw=1,
                label=f"δ={delta:g}, tight-accounting noise")
    pts = s["points"]
    e0 = np.array([min(p["epsilon"] for p in pts), max(p["epsilon"] for p in pts)])
    ref = max(p["stage1"]["mean"] for p in pts)
    ax.plot(e0, ref * (e0 / e0[0]) ** -2.0, color="gray", lw=2, alpha=0.5, label="slope −2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    save_figure(fig, path)


# --------------------------------------------------------------------------- Fig. 3


def reproduce_fig3(out_dir: str | Path, *, runs: int = RUNS, seed: int = DEFAULT_SEED,
                   pcs: Sequence[float] = FIG3_PCS, horizons: Sequence[int] = FIG3_HORIZONS,
                   graphs: int = FIG3_GRAPHS, epsilon: float = EPSILON) -> dict[str, Any]:
    """Fig. 3: node 1's error ``||x_1(T) - dbar||^2 / ||dbar||^2`` against the link probability ``p_c``.

    ``graphs`` connected graphs per ``p_c`` (graph seeds ``GRAPH_SEED + k``;
    for ``p_c = 1`` always the complete graph), ``runs`` noise realizations
    each with scenario seed ``seed + k`` for every ``p_c`` (common random
    numbers: the same noise for every ``p_c``, so differences come from the
    graph), Stage I only (``T2 = 0``), delta = 1/(N N_i). Checks, at each
    ``T``: node 1's mean error falls as ``p_c`` grows (strictly, along the
    grid), and the drop from the smallest to the largest ``p_c`` is
    significant: paired z > 3 on the per-run differences.

    Returns:
        The summary; writes ``fig3.csv``, ``fig3_summary.json``, ``fig3.png``.

    Raises:
        ScenarioError: a bad argument.
    """
    runs, seed = _common(runs, seed)
    pcs = _grid("pcs", pcs, float)
    if any(not 0 < p <= 1 for p in pcs):
        raise ScenarioError(f"pcs must lie in (0, 1], got {pcs!r}")
    horizons = _grid("horizons", horizons, int)
    graphs = _integer("graphs", graphs, 1)
    epsilon = _positive("epsilon", epsilon)
    delta = 1.0 / (N_NODES * N_POINTS)
    t0 = time.perf_counter()
    problem, G = _setting()
    points, rows = [], []
    paired: dict[tuple[int, float], np.ndarray] = {}
    for T in horizons:
        for pc in pcs:
            node1, xbar, betas = [], [], []
            for k in range(graphs):
                graph = fixed_er_graph(N_NODES, pc, GRAPH_SEED + k)
                betas.append(topology.second_eigenvalue_modulus(graph.weights(1)))
                sim = simulate(problem, graph, epsilon=epsilon, delta=delta, T=T, T2=0, runs=runs, seed=seed + k, G=G)
                node1.append(sim["node1"])
                xbar.append(sim["stage1"])
                rows += [[T, pc, k, r, repr(float(a)), repr(float(b))]
                         for r, (a, b) in enumerate(zip(sim["node1"], sim["stage1"]))]
            node1_all, xbar_all = np.concatenate(node1), np.concatenate(xbar)
            paired[(T, pc)] = node1_all
            points.append({"T": T, "p_c": pc, "graphs": graphs, "beta_mean": float(np.mean(betas)),
                           "betas": betas, "node1": _stats(node1_all), "stage1": _stats(xbar_all),
                           "consensus_excess": _stats(node1_all - xbar_all)})
    checks = []
    for T in horizons:
        pts = [p for p in points if p["T"] == T]
        m = [p["node1"]["mean"] for p in pts]
        checks.append(_check(f"falls_with_p_c_T={T}", all(a > b for a, b in zip(m, m[1:])),
                             "node 1's mean error strictly decreasing along the p_c grid", value=m))
        if len(pts) >= 2:
            diff = _stats(paired[(T, pts[0]["p_c"])] - paired[(T, pts[-1]["p_c"])])
            z = diff["mean"] / diff["sem"]
            checks.append(_check(f"significant_drop_T={T}", z > 3,
                                 "paired (same noise) node-1 error at the smallest p_c minus at the largest: "
                                 "mean / s.e. > 3", value=z,
                                 ratio=pts[0]["node1"]["mean"] / pts[-1]["node1"]["mean"]))
    summary = {
        "experiment": "showkatbakhsh-fig3", "paper": _PAPER + ", Fig. 3: error vs connectivity p_c",
        "choices": _choices(runs=runs, seed=seed, pcs=list(pcs), horizons=list(horizons), graphs=graphs,
                            epsilon=epsilon, delta=delta, stage2_rounds=0, G_priv=G,
                            graph_seeds="GRAPH_SEED + k, k < graphs (p_c = 1: the complete graph every time); "
                                        "scenario seed seed + k for every p_c (common random numbers)",
                            metric_fig3="node 1: ||x_1(T) - dbar||^2 / ||dbar||^2 at the end of Stage I"),
        "points": points, "checks": checks,
        "statements": [
            "Node 1's error at T: " + "; ".join(
                f"T={T}: " + ", ".join(f"p_c={p['p_c']:g} -> {p['node1']['mean']:.4g} (beta {p['beta_mean']:.3f})"
                                       for p in points if p["T"] == T) for T in horizons) + ".",
            "The consensus part of node 1's error shrinks like M_T^2 ~ 1/T, so the effect of p_c fades as T grows; "
            "the network-average error (stage1) barely depends on p_c.",
        ],
    }
    summary["timing"] = {"seconds": time.perf_counter() - t0}
    write_outputs(Path(out_dir), "fig3", ("T", "p_c", "graph", "run", "node1", "stage1"), rows, summary, _plot_fig3)
    return summary


def _plot_fig3(path: Path, s: dict[str, Any]) -> None:
    fig, ax = _axes(f"Seed 000 Fig. 3: node 1 error vs p_c (ε={s['choices']['epsilon']:g}, "
                    f"{s['choices']['runs']} runs/graph)", "link probability p_c",
                    "||x₁(T) − d̄||² / ||d̄||²")
    for T in s["choices"]["horizons"]:
        pts = [p for p in s["points"] if p["T"] == T]
        ax.errorbar([p["p_c"] for p in pts], [p["node1"]["mean"] for p in pts],
                    yerr=[Z95 * p["node1"]["sem"] for p in pts], fmt="o-", capsize=3, label=f"node 1, T={T}")
        ax.plot([p["p_c"] for p in pts], [p["stage1"]["mean"] for p in pts], ":", lw=1, label=f"x̄(T), T={T}")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    save_figure(fig, path)


# --------------------------------------------------------------------------- Fig. 4


def reproduce_fig4(out_dir: str | Path, *, runs: int = RUNS, seed: int = DEFAULT_SEED,
                   points_per_node: Sequence[int] = FIG4_POINTS, T: int = HORIZON,
                   epsilon: float = EPSILON) -> dict[str, Any]:
    """Fig. 4: error against the points per node ``N_i`` (epsilon = 4, delta = 1/(N N_i), ``T = 1000``).

    A fresh data set per ``N_i`` (seed ``DATA_SEED``). Checks: the error falls
    with ``N_i``; the fitted log-log slope is within 0.3 of the linear
    prediction's (about ``-2``: ``c = 1/N_i`` and ``G_priv`` do not depend on
    ``N_i``, so ``M_t^2 ~ c^2/kappa ~ ln(N N_i)/N_i^2``).

    Returns:
        The summary; writes ``fig4.csv``, ``fig4_summary.json``, ``fig4.png``.

    Raises:
        ScenarioError: a bad argument.
    """
    runs, seed = _common(runs, seed)
    grid = _grid("points_per_node", points_per_node, int)
    T = _integer("T", T, 1)
    epsilon = _positive("epsilon", epsilon)
    t0 = time.perf_counter()
    graph = fixed_er_graph(N_NODES, P_C, GRAPH_SEED)
    points, rows = [], []
    for n_i in grid:
        problem, G = _setting(n_i)
        delta = 1.0 / (N_NODES * n_i)
        sim = simulate(problem, graph, epsilon=epsilon, delta=delta, T=T, T2=STAGE2_ROUNDS, runs=runs, seed=seed, G=G)
        norm2 = float(problem.optimum @ problem.optimum)
        pred1, pred2 = (v / norm2 for v in linear_prediction(_bound_alg(problem, G, epsilon, delta, T), N_NODES))
        s1 = _stats(sim["stage1"])
        points.append({"N_i": n_i, "delta": delta, "stage1": s1, "released": _stats(sim["released"]),
                       "predicted_stage1": pred1, "predicted_released": pred2, "ratio_stage1": s1["mean"] / pred1})
        rows += [[n_i, delta, r, repr(float(a)), repr(float(b))]
                 for r, (a, b) in enumerate(zip(sim["stage1"], sim["released"]))]
    m = [p["stage1"]["mean"] for p in points]
    fit_sim = _fit(grid, m)
    fit_pred = _fit(grid, [p["predicted_stage1"] for p in points])
    checks = [
        _check("falls_with_N_i", all(a > b for a, b in zip(m, m[1:])), "stage1 error strictly decreasing in N_i",
               value=m),
        _check("slope", fit_sim["slope"] is not None and abs(fit_sim["slope"] - fit_pred["slope"]) <= 0.3,
               "fitted log-log slope within 0.3 of the linear prediction's", value=fit_sim["slope"],
               predicted=fit_pred["slope"]),
    ]
    summary = {
        "experiment": "showkatbakhsh-fig4", "paper": _PAPER + ", Fig. 4: error vs N_i",
        "choices": _choices(runs=runs, seed=seed, points_per_node=list(grid), T=T, epsilon=epsilon,
                            delta="1/(N N_i)", p_c=P_C, G_priv=privacy_gradient_bound(RADIUS, DIM),
                            data_per_N_i="a fresh data set per N_i, seed DATA_SEED"),
        "points": points, "fits": {"simulated": fit_sim, "predicted": fit_pred}, "checks": checks,
        "statements": [f"stage1 error falls from {m[0]:.4g} (N_i={grid[0]}) to {m[-1]:.4g} (N_i={grid[-1]}); "
                       f"slope {fit_sim['slope']} (prediction {fit_pred['slope']}): the per-point sensitivity "
                       "2 R sqrt(p)/(N_i t) shrinks while the noise it calls for does too."],
    }
    summary["timing"] = {"seconds": time.perf_counter() - t0}
    write_outputs(Path(out_dir), "fig4", ("N_i", "delta", "run", "stage1", "released"), rows, summary, _plot_fig4)
    return summary


def _plot_fig4(path: Path, s: dict[str, Any]) -> None:
    fig, ax = _axes(f"Seed 000 Fig. 4: error vs N_i (ε={s['choices']['epsilon']:g}, T={s['choices']['T']}, "
                    f"{s['choices']['runs']} runs)", "points per node N_i")
    pts = s["points"]
    n = [p["N_i"] for p in pts]
    ax.errorbar(n, [p["stage1"]["mean"] for p in pts], yerr=[Z95 * p["stage1"]["sem"] for p in pts], fmt="o-",
                capsize=3, label="x̄(T)")
    ax.plot(n, [p["predicted_stage1"] for p in pts], "k--", lw=1, label="linear prediction")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    save_figure(fig, path)


# --------------------------------------------------------------------------- table


def format_table(summary: dict[str, Any]) -> str:
    """The points (means) and the checks of any of the four summaries, as text.

    Example:
        >>> format_table({"experiment": "x", "points": [], "checks": [], "statements": ["s"]}).splitlines()[-1]
        's'
    """
    lines = [summary.get("experiment", "")]
    for p in summary.get("points", []):
        keys = [k for k in ("T", "p_c", "epsilon", "delta", "N_i") if k in p]
        head = " ".join(f"{k}={p[k]:g}" for k in keys)
        vals = " ".join(f"{k}={p[k]['mean']:.4g}" for k in ("stage1", "released", "node1", "tight_stage1") if k in p)
        pred = f" pred={p['predicted_stage1']:.4g}" if "predicted_stage1" in p else ""
        lines.append(f"  {head}: {vals}{pred}")
    for c in summary.get("checks", []):
        lines.append(f"  [{'ok' if c['holds'] else 'FAIL'}] {c['name']}: {c['criterion']}")
    return "\n".join(lines + [""] + list(summary.get("statements", [])))
