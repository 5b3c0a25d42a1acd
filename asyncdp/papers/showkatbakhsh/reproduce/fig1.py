"""Fig. 1 of Showkatbakhsh, Karakus and Diggavi (arXiv 2019): relative error against the Stage-I horizon ``T``.

The setting, metrics and linear prediction are described in
:mod:`asyncdp.papers.showkatbakhsh.reproduce`; the shared pieces live in
:mod:`asyncdp.papers.showkatbakhsh.reproduce.common`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from topology.validation import check_positive

from ....errors import ScenarioError
from ..privacy import tight_accounting
from ....reproduce._outputs import check_entry, save_figure, write_outputs
from ....reproduce._stats import mean_ci, t95
from .common import (
    DEFAULT_SEED, EPSILON, FIG1_HORIZONS, GRAPH_SEED, N_NODES, N_POINTS, P_C, RUNS, STAGE2_ROUNDS, fixed_er_graph,
    format_table, linear_prediction, simulate, _PAPER, _axes, _bound_alg, _choices, _common, _grid, _setting,
)

__all__ = ["reproduce_fig1", "format_table"]


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
    epsilon = check_positive(epsilon, "epsilon", error=ScenarioError)
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
        s1, s2 = mean_ci(sim["stage1"]).as_dict(), mean_ci(sim["released"]).as_dict()
        points.append({"T": T, "stage1": s1, "released": s2, "predicted_stage1": pred1, "predicted_released": pred2,
                       "ratio_stage1": s1["mean"] / pred1 if pred1 > 0 else None,
                       "ratio_released": s2["mean"] / pred2, "spread_after_stage2": float(sim["spread"].max())})
        rows += [[T, r, repr(float(a)), repr(float(b))] for r, (a, b) in enumerate(zip(sim["stage1"], sim["released"]))]
    tail = [p for p in points if p["T"] >= 10]
    checks = []
    if points[0]["T"] == 1:
        checks.append(check_entry("stage1_zero_at_T1", points[0]["stage1"]["mean"] < 1e-20,
                                  "x_i(1) = Proj(local mean): xbar(1) = dbar exactly, error < 1e-20",
                                  value=points[0]["stage1"]["mean"]))
    if len(tail) >= 2:
        m = [p["stage1"]["mean"] for p in tail]
        checks.append(check_entry("stage1_levels_off", max(m) / min(m) <= 1.5, "max/min of stage1 over T >= 10 <= 1.5",
                                  value=max(m) / min(m), predicted=max(p["predicted_stage1"] for p in tail)
                                  / min(p["predicted_stage1"] for p in tail)))
    if len(points) >= 2:
        first, last = points[0]["released"]["mean"], points[-1]["released"]["mean"]
        checks.append(check_entry("released_falls", first > last, "released error at the smallest T > at the largest",
                                  value=first / last, predicted=points[0]["predicted_released"]
                                  / points[-1]["predicted_released"]))
    ratios = [p["ratio_released"] for p in points if p["T"] >= 3]
    if ratios:
        checks.append(check_entry("matches_linear_prediction", all(0.8 <= r <= 1.25 for r in ratios),
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
    fig, ax = _axes(f"Showkatbakhsh, Karakus and Diggavi (arXiv 2019), Fig. 1\n"
                    f"error vs T (ε={s['choices']['epsilon']:g}, δ={s['choices']['delta']:g}, "
                    f"{s['choices']['runs']} runs)", "Stage-I horizon T")
    for key, style, label in (("stage1", "o-", "x̄(T) (paper's metric)"), ("released", "s-", "after Stage II")):
        m = np.array([p[key]["mean"] for p in pts])
        e = t95(s["choices"]["runs"]) * np.array([p[key]["sem"] for p in pts])
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
