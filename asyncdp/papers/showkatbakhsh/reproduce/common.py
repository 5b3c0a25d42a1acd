"""Setting and helpers shared by the Showkatbakhsh-Karakus-Diggavi (arXiv 2019) reproductions,
Figs. 1-4.

The package docstring (:mod:`asyncdp.papers.showkatbakhsh.reproduce`) describes the
setting and the metrics. Here: the constants and grids, the data
(:func:`generate_data`), the graph (:func:`fixed_er_graph`), the privacy
gradient bound, the linear prediction, the batch runs (:func:`simulate`),
argument checks, the ``choices`` entry of every summary and the text table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

import topology
from topology.validation import check_integer, check_positive

from ..rule import Showkatbakhsh, mean_estimation_problem
from ....errors import ScenarioError
from ....problems.problem import Problem
from ....scenario import Scenario
from ....reproduce._outputs import check_lines, pyplot
from ....reproduce._stats import CI_METHOD, loglog_fit

__all__ = [
    "N_NODES", "N_POINTS", "DIM", "RADIUS", "DATA_MEAN", "DATA_STD", "P_C", "EPSILON", "HORIZON",
    "STAGE2_ROUNDS", "RUNS", "DATA_SEED", "GRAPH_SEED", "DEFAULT_SEED", "FIG1_HORIZONS", "FIG2_EPSILONS",
    "FIG2_DELTAS", "FIG3_PCS", "FIG3_HORIZONS", "FIG3_GRAPHS", "FIG4_POINTS", "SUMMARY_KEYS",
    "generate_data", "fixed_er_graph", "privacy_gradient_bound", "linear_prediction", "simulate", "format_table",
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
SUMMARY_KEYS: tuple[str, ...] = ("experiment", "paper", "choices", "points", "checks", "statements", "timing",
                                 "files")
"""Top-level keys of every ``figK_summary.json`` (and of the returned dict)."""

_PAPER = ("Showkatbakhsh, Karakus and Diggavi, Differentially Private Consensus-Based Distributed Optimization, "
          "arXiv 2019")


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
    n_nodes, n_points, dim = (check_integer(v, k, minimum=1, error=ScenarioError)
                              for k, v in (("n_nodes", n_nodes), ("n_points", n_points), ("dim", dim)))
    R = check_positive(R, "R", error=ScenarioError)
    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError)
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
    n_nodes = check_integer(n_nodes, "n_nodes", minimum=2, error=ScenarioError)
    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError)
    w = topology.erdos_renyi(n_nodes, p_c, seed=seed, connected=True, rule="laplacian").weights(1)
    return topology.static(w, directed=False,
                           description=f"fixed connected G(N={n_nodes}, p_c={p_c}), seed {seed}, Laplacian weights")


def privacy_gradient_bound(R: float = RADIUS, dim: int = DIM) -> float:
    """``G_priv = R sqrt(p)``: one replaced point moves ``grad f_i`` by ``<= 2 R sqrt(p) = 2 G_priv``.

    Example:
        >>> privacy_gradient_bound(1.0, 4)
        2.0
    """
    R = check_positive(R, "R", error=ScenarioError)
    return R * math.sqrt(check_integer(dim, "dim", minimum=1, error=ScenarioError))


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
def _grid(name: str, values: Any, kind: type) -> tuple[Any, ...]:
    """The grid's values in increasing order (the checks compare neighbours along it); a repeated value is an error."""
    try:
        out = tuple(values)
    except TypeError:
        raise ScenarioError(f"{name} must be a sequence, got {values!r}") from None
    if not out:
        raise ScenarioError(f"{name} must not be empty")
    if kind is int:
        out = tuple(check_integer(v, name, minimum=1, error=ScenarioError) for v in out)
    else:
        out = tuple(check_positive(v, name, error=ScenarioError) for v in out)
    if len(set(out)) < len(out):
        raise ScenarioError(f"{name} repeats a value: {out!r}")
    return tuple(sorted(out))


def _fit(x: Any, y: Any) -> dict[str, Any]:
    """The summaries' form of :func:`~asyncdp.reproduce._stats.loglog_fit`: ``{"slope", "intercept", "points"}``."""
    fit = loglog_fit(x, y)
    return {"slope": fit.slope, "intercept": fit.intercept, "points": fit.points}


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
        "confidence_interval": CI_METHOD + " (n = runs)",
    }
    base.update(extra)
    return base


def _axes(title: str, xlabel: str, ylabel: str = "relative error ||x̄ − d̄||² / ||d̄||²") -> tuple[Any, Any]:
    fig, ax = pyplot().subplots(figsize=(7.2, 5.0))
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
    return (check_integer(runs, "runs", minimum=2, error=ScenarioError),
            check_integer(seed, "seed", minimum=0, error=ScenarioError))


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
    return "\n".join(lines + check_lines(summary))
