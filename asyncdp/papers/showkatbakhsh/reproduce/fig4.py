"""Fig. 4 of Showkatbakhsh, Karakus and Diggavi (arXiv 2019): relative error against the points per node ``N_i``.

The setting, metrics and linear prediction are described in
:mod:`asyncdp.papers.showkatbakhsh.reproduce`; the shared pieces live in
:mod:`asyncdp.papers.showkatbakhsh.reproduce.common`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from topology.validation import check_integer, check_positive

from ....errors import ScenarioError
from ....reproduce._outputs import check_entry, save_figure, write_outputs
from ....reproduce._stats import mean_ci, t95
from .common import (
    DEFAULT_SEED, DIM, EPSILON, FIG4_POINTS, GRAPH_SEED, HORIZON, N_NODES, P_C, RADIUS, RUNS, STAGE2_ROUNDS,
    fixed_er_graph, format_table, linear_prediction, privacy_gradient_bound, simulate, _PAPER, _axes, _bound_alg,
    _choices, _common, _fit, _grid, _setting,
)

__all__ = ["reproduce_fig4", "format_table"]


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
    T = check_integer(T, "T", minimum=1, error=ScenarioError)
    epsilon = check_positive(epsilon, "epsilon", error=ScenarioError)
    t0 = time.perf_counter()
    graph = fixed_er_graph(N_NODES, P_C, GRAPH_SEED)
    points, rows = [], []
    for n_i in grid:
        problem, G = _setting(n_i)
        delta = 1.0 / (N_NODES * n_i)
        sim = simulate(problem, graph, epsilon=epsilon, delta=delta, T=T, T2=STAGE2_ROUNDS, runs=runs, seed=seed, G=G)
        norm2 = float(problem.optimum @ problem.optimum)
        pred1, pred2 = (v / norm2 for v in linear_prediction(_bound_alg(problem, G, epsilon, delta, T), N_NODES))
        s1 = mean_ci(sim["stage1"]).as_dict()
        points.append({"N_i": n_i, "delta": delta, "stage1": s1, "released": mean_ci(sim["released"]).as_dict(),
                       "predicted_stage1": pred1, "predicted_released": pred2, "ratio_stage1": s1["mean"] / pred1})
        rows += [[n_i, delta, r, repr(float(a)), repr(float(b))]
                 for r, (a, b) in enumerate(zip(sim["stage1"], sim["released"]))]
    m = [p["stage1"]["mean"] for p in points]
    fit_sim = _fit(grid, m)
    fit_pred = _fit(grid, [p["predicted_stage1"] for p in points])
    checks = [
        check_entry("falls_with_N_i", all(a > b for a, b in zip(m, m[1:])), "stage1 error strictly decreasing in N_i",
                    value=m),
        check_entry("slope", fit_sim["slope"] is not None and abs(fit_sim["slope"] - fit_pred["slope"]) <= 0.3,
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
    fig, ax = _axes(f"Showkatbakhsh, Karakus and Diggavi (arXiv 2019), Fig. 4\n"
                    f"error vs N_i (ε={s['choices']['epsilon']:g}, T={s['choices']['T']}, "
                    f"{s['choices']['runs']} runs)", "points per node N_i")
    pts = s["points"]
    n = [p["N_i"] for p in pts]
    t = t95(s["choices"]["runs"])  # the half-width of mean_ci's interval is t * sem
    ax.errorbar(n, [p["stage1"]["mean"] for p in pts], yerr=[t * p["stage1"]["sem"] for p in pts], fmt="o-",
                capsize=3, label="x̄(T)")
    ax.plot(n, [p["predicted_stage1"] for p in pts], "k--", lw=1, label="linear prediction")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    save_figure(fig, path)
