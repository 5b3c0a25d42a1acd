"""Wang and Başar (Automatica 2023), §6.1, Fig. 4: the escape from the strict saddle.

:func:`reproduce_saddle` starts every agent at the saddle ``theta_s`` of the
paper's estimation problem and counts the runs that escape with and without
the privacy noise. Its own choices (the shared ones are in the package
docstring):

* Saddle: every ``x_i^0 = theta_s`` (Newton-accurate). Escaped: ``xbar``
  leaves the ball of radius :data:`ESCAPE_RADIUS` around ``theta_s``; basins
  by distance ``< BASIN_RADIUS`` from ``theta*`` / the extension's minimum.
  Two data sets: the paper's (heterogeneous ``Y_i``) and a homogeneous one
  (every ``Y_i = mean Y``: the same ``F``, but each local gradient vanishes
  at ``theta_s``).

Outputs (``out_dir``): ``saddle.csv``/``saddle_summary.json``/``saddle.png``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..rule import WangBasar
from ....problems.problem import Problem
from ....problems.nonconvex import estimation_problem
from ....scenario import Scenario
from ....reproduce._outputs import pyplot, save_figure
from .common import (BASIN_RADIUS, DEFAULT_SEED, NUM_AGENTS, ring_graph, _arguments, _graph_choice, _points,
                     _proportion, _write)

__all__ = ["SADDLE_VARIANCES", "HORIZON_SADDLE", "ESCAPE_RADIUS", "SADDLE_COLUMNS", "SADDLE_KEYS",
           "reproduce_saddle", "format_saddle_table"]

SADDLE_VARIANCES: tuple[float, ...] = (0.1, 0.5)
"""Noise variances of the saddle experiment (0.5 is §6.1's default)."""
HORIZON_SADDLE = 3000
ESCAPE_RADIUS = 0.5
"""A run has escaped when ``||xbar^k - theta_s||`` exceeds this at some ``k``."""

SADDLE_COLUMNS = ("data", "noise_variance", "run", "escaped", "escape_iteration", "basin", "xbar_1", "xbar_2",
                  "dist_theta_star")
SADDLE_KEYS = ("experiment", "paper", "choices", "points", "noise_free", "noisy", "checks", "statements",
               "elapsed_seconds")


def _classify(xbar: np.ndarray, pts: dict[str, np.ndarray]) -> np.ndarray:
    basin = np.full(xbar.shape[0], "other", dtype=object)
    for name in ("theta_star", "spurious_minimum", "theta_saddle"):
        basin[np.linalg.norm(xbar - pts[name], axis=-1) < BASIN_RADIUS] = name
    return basin


def _saddle_runs(problem: Problem, graph: Any, pts: dict[str, np.ndarray], var: float, runs: int, seed: int,
                 horizon: int) -> dict[str, Any]:
    x0 = np.tile(pts["theta_saddle"], (NUM_AGENTS, 1))
    sc = Scenario(problem, graph, WangBasar(noise_variance=var), horizon=horizon, seed=seed, x0=x0,
                  record_transcript=False)
    res = sc.run(engine="batch", runs=runs, keep="all")
    traj = res.trajectory  # (R, K+1, N, 2)
    xbar = traj.mean(axis=2)
    dist = np.linalg.norm(xbar - pts["theta_saddle"], axis=-1)  # (R, K+1)
    out_of_ball = dist > ESCAPE_RADIUS
    escaped = out_of_ball.any(axis=1)
    first = np.where(escaped, out_of_ball.argmax(axis=1), -1)
    return {"xbar": xbar, "dist_saddle": dist, "escaped": escaped, "escape_iteration": first,
            "basin": _classify(xbar[:, -1], pts),
            "max_agent_deviation": float(np.abs(traj - pts["theta_saddle"]).max()),
            "dist_theta_star": np.linalg.norm(xbar[:, -1] - pts["theta_star"], axis=-1)}


def reproduce_saddle(out_dir: str | Path, *, runs: int = 100, seed: int = DEFAULT_SEED,
                     variances: Sequence[float] = SADDLE_VARIANCES, horizon: int = HORIZON_SADDLE,
                     plot: bool = True) -> dict[str, Any]:
    """Fig. 4 of Wang and Başar (Automatica 2023): every agent starts at the strict saddle ``theta_s``.

    For the paper's data and the homogeneous data (module docstring): one
    noise-free run (deterministic) and ``runs`` noisy runs per variance.
    Reported: whether the noise-free run stays at ``theta_s`` (largest
    deviation of any agent over all iterations), the escape fraction and the
    fractions ending at ``theta*`` and at the extension's minimum, each with
    a Clopper-Pearson 95% interval, and the escape iterations.

    Args:
        out_dir: output directory (created).
        runs: noisy runs per variance and data set (``>= 2``).
        seed: scenario seed of the noisy runs.
        variances: noise variances.
        horizon: iterations.
        plot: write ``saddle.png``.

    Returns:
        The summary dict (:data:`SADDLE_KEYS`), also written to ``saddle_summary.json``.

    Raises:
        ScenarioError: bad ``runs``, ``seed``, ``horizon`` or ``variances``.

    Example:
        >>> import tempfile
        >>> s = reproduce_saddle(tempfile.mkdtemp(), runs=2, horizon=30, variances=(0.5,), plot=False)
        >>> s["noise_free"]["homogeneous"]["stays"]
        True
    """
    t0 = time.perf_counter()
    out, runs, seed, horizon, variances = _arguments(out_dir, runs, seed, horizon, variances)
    out.mkdir(parents=True, exist_ok=True)
    graph = ring_graph()
    problems = {"paper": estimation_problem(), "homogeneous": estimation_problem(homogeneous=True)}
    pts = _points(problems["paper"])
    rows: list[list[Any]] = []
    noise_free: dict[str, Any] = {}
    noisy: dict[str, list[dict[str, Any]]] = {}
    traces: dict[str, Any] = {}
    for data, problem in problems.items():
        nf = _saddle_runs(problem, graph, pts, 0.0, 1, seed, horizon)
        noise_free[data] = {
            "max_agent_deviation": nf["max_agent_deviation"],
            "stays": bool(nf["max_agent_deviation"] <= 1e-9),
            "left_ball_at": int(nf["escape_iteration"][0]) if nf["escaped"][0] else None,
            "final_xbar": nf["xbar"][0, -1].tolist(), "basin": str(nf["basin"][0]),
        }
        traces[f"{data}, noise-free"] = nf["xbar"][0]
        rows.append([data, 0.0, 0, int(nf["escaped"][0]), int(nf["escape_iteration"][0]), str(nf["basin"][0]),
                     float(nf["xbar"][0, -1, 0]), float(nf["xbar"][0, -1, 1]), float(nf["dist_theta_star"][0])])
        noisy[data] = []
        for var in variances:
            r = _saddle_runs(problem, graph, pts, var, runs, seed, horizon)
            esc = r["escape_iteration"][r["escaped"]]
            noisy[data].append({
                "noise_variance": var,
                "escaped": _proportion(int(r["escaped"].sum()), runs),
                "theta_star": _proportion(int((r["basin"] == "theta_star").sum()), runs),
                "spurious_minimum": _proportion(int((r["basin"] == "spurious_minimum").sum()), runs),
                "at_saddle": int((r["basin"] == "theta_saddle").sum()),
                "other": int((r["basin"] == "other").sum()),
                "escape_iteration": {"median": float(np.median(esc)) if esc.size else None,
                                     "max": int(esc.max()) if esc.size else None},
            })
            rows += [[data, var, i, int(r["escaped"][i]), int(r["escape_iteration"][i]), str(r["basin"][i]),
                      float(r["xbar"][i, -1, 0]), float(r["xbar"][i, -1, 1]), float(r["dist_theta_star"][i])]
                     for i in range(runs)]
            if var == variances[-1]:
                traces[f"{data}, sigma={var:g}"] = (r["xbar"][: min(runs, 24)], r["basin"][: min(runs, 24)],
                                                   r["dist_saddle"])
    min_escape = min(e["escaped"]["ci95"][0] for v in noisy.values() for e in v)
    checks = {
        "homogeneous_noise_free_stays": noise_free["homogeneous"]["stays"],
        "paper_noise_free_stays": noise_free["paper"]["stays"],
        "noisy_escape_fraction_min": min(e["escaped"]["fraction"] for v in noisy.values() for e in v),
        "noisy_escape_ci_low_min": min_escape,
        "escape_claim_reproduced": bool(min_escape >= 0.9),
        "theta_star_fraction": {d: {str(e["noise_variance"]): e["theta_star"]["fraction"] for e in v}
                                for d, v in noisy.items()},
    }
    summary = {
        "experiment": "wang-basar-saddle",
        "paper": {"source": "Wang and Basar (Automatica 2023), Fig. 4",
                  "claim": "from x_i^0 = theta_s, agents stay at the saddle without noise and escape to theta* "
                           "with the DP noise"},
        "choices": {**_graph_choice(graph), "num_agents": NUM_AGENTS, "horizon": horizon, "runs": runs,
                    "seed": seed, "start": "x_i^0 = theta_s (Newton) for every agent",
                    "escape": f"max_k ||xbar^k - theta_s|| > {ESCAPE_RADIUS}",
                    "basin": f"||xbar^K - point|| < {BASIN_RADIUS}",
                    "data": {"paper": "Y_i = i [1/3, 2/3, 0]",
                             "homogeneous": "Y_i = [1, 2, 0] for every i (same F; local gradients vanish at "
                                            "stationary points of F)"},
                    "step": "lam^k = 0.02 (k <= 500), 1/k (k > 500)",
                    "extension": problems["paper"].costs.to_dict()["extension"]},
        "points": {k: v.tolist() for k, v in pts.items()},
        "noise_free": noise_free,
        "noisy": noisy,
        "checks": checks,
        "statements": _saddle_statements(noise_free, noisy),
        "elapsed_seconds": None,
    }
    _write(out, "saddle", SADDLE_COLUMNS, rows, summary,
           (lambda path: _plot_saddle(path, problems["paper"], pts, traces)) if plot else None, t0)
    return summary


def _saddle_statements(noise_free: dict[str, Any], noisy: dict[str, list[dict[str, Any]]]) -> list[str]:
    h, p = noise_free["homogeneous"], noise_free["paper"]
    out = [
        ("Noise-free, homogeneous data: the largest deviation from theta_s over all agents and iterations is "
         f"{h['max_agent_deviation']:.3g} (stays: {h['stays']}): every local gradient vanishes there."),
        (f"Noise-free, the paper's data: {'stays' if p['stays'] else 'does not stay'} (deviation "
         f"{p['max_agent_deviation']:.3g}; xbar leaves the ball at k = {p['left_ball_at']} and ends at "
         f"{np.round(p['final_xbar'], 3).tolist()}, basin {p['basin']}). The local gradients differ at theta_s, the "
         "agents spread, and the spread's second-order effect on the average pushes xbar along the unstable "
         "direction: the paper's 'stuck without noise' needs local gradients that vanish at theta_s."),
    ]
    for data, entries in noisy.items():
        for e in entries:
            out.append(
                f"{data}, sigma = {e['noise_variance']:g}: escaped {e['escaped']['count']}/{e['escaped']['runs']} "
                f"(95% CI {e['escaped']['ci95'][0]:.3f}-{e['escaped']['ci95'][1]:.3f}); reached theta* "
                f"{e['theta_star']['fraction']:.2f} (CI {e['theta_star']['ci95'][0]:.2f}-"
                f"{e['theta_star']['ci95'][1]:.2f}), the extension's minimum left of the box "
                f"{e['spurious_minimum']['fraction']:.2f}; median escape iteration "
                f"{e['escape_iteration']['median']}.")
    out.append("Escape reproduces; 'escape to theta*' holds only for runs leaving to the right: the unstable "
               "direction at theta_s is close to e_1 and F decreases towards the box edge theta_1 = -8 on the left, "
               "so any coercive extension has a local minimum there.")
    return out


def _plot_saddle(path: Path, problem: Problem, pts: dict[str, np.ndarray], traces: dict[str, Any]) -> None:
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12.0, 4.6))
    g1, g2 = np.meshgrid(np.linspace(-10.0, 5.0, 301), np.linspace(-4.0, 4.0, 161))
    grid = np.stack([g1, g2], axis=-1)
    f = problem.costs.total_value(grid) / problem.num_agents
    a1.contour(g1, g2, f, levels=40, linewidths=0.5, cmap="viridis")
    lo, hi = problem.domain.low, problem.domain.high
    a1.plot([lo[0], hi[0], hi[0], lo[0], lo[0]], [lo[1], lo[1], hi[1], hi[1], lo[1]], "k-", lw=0.8,
            label="box [-8,4]×[-3,3]")
    colors = {"theta_star": "tab:green", "spurious_minimum": "tab:red"}
    for key, value in traces.items():
        if "noise-free" in key:
            a1.plot(value[:, 0], value[:, 1], "-", lw=2, label=key)
        else:
            xbar, basin, _ = value
            for run, b in zip(xbar, basin):
                a1.plot(run[:, 0], run[:, 1], "-", lw=0.5, alpha=0.6, color=colors.get(b, "gray"))
    for name, marker in (("theta_star", "*"), ("theta_saddle", "X"), ("spurious_minimum", "o")):
        a1.plot(*pts[name], marker, ms=10, color="black", label=name.replace("_", " "))
    a1.set_xlabel("θ1")
    a1.set_ylabel("θ2")
    a1.set_title("F with the extension; x̄ trajectories from θ_s", fontsize=10)
    a1.legend(fontsize=6, loc="lower right")
    for key, value in traces.items():
        if "noise-free" in key:
            d = np.linalg.norm(value - pts["theta_saddle"], axis=-1)
            a2.plot(np.arange(d.size), np.maximum(d, 1e-17), lw=1.5, label=key)
        else:
            dist = value[2]
            k = np.arange(dist.shape[1])
            a2.fill_between(k, np.quantile(dist, 0.1, axis=0), np.quantile(dist, 0.9, axis=0), alpha=0.25)
            a2.plot(k, np.median(dist, axis=0), lw=1, label=f"{key} (median, 10-90%)")
    a2.axhline(ESCAPE_RADIUS, color="gray", ls=":", lw=0.8)
    a2.set_yscale("log")
    a2.set_xlabel("iteration k")
    a2.set_ylabel("||x̄^k − θ_s||")
    a2.legend(fontsize=7)
    a2.grid(True, which="both", alpha=0.3)
    save_figure(fig, path)


def format_saddle_table(summary: dict[str, Any]) -> str:
    """The saddle statements as text.

    Example:
        >>> format_saddle_table({"statements": ["a"]})
        'a'
    """
    return "\n".join(summary.get("statements", []))
