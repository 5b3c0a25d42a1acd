"""Cheng, Liao and Li (arXiv 2022), Sec. 6, Fig. 3: online linear regression.

:func:`reproduce_olr` runs DPSDA-C and DPSDA-PS on synthetic least-squares
data (``N = 7``, ``d = 21``, ``T = 500``) for every epsilon, and reports the
played-decision regret ``R(T)/T`` (eq. 3) and the running-average regret
(eq. 19). The shared setting is in the package docstring.

Example:
    >>> s = reproduce_olr("/tmp/olr", runs=2, horizon=40)  # doctest: +SKIP
    >>> [c["holds"] for c in s["checks"] if c["name"].startswith("decreasing")]  # doctest: +SKIP
    [True, True, True, True, True, True, True, True]
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from topology.validation import check_integer, check_positive

from ....errors import AlgorithmParameterError, HorizonError, ScenarioError
from ....problems.online import online_problem, synthetic_olr
from ....experiments.regret import comparator_values, regret_curve
from ....reproduce._outputs import check_entry, check_lines, pyplot, save_figure, write_outputs
from ....reproduce._stats import mean_ci, sem, t95
from .common import (_PAPER, ALGORITHMS, ALPHA0, BOX, DEFAULT_SEED, EPSILONS, GRADIENT_NOISE_VARIANCE, N_NODES, RUNS,
                     _by_epsilon_desc, _choices, _eps_label, _eps_text, _epsilons, _per_run, _stats, graphs)

__all__ = [
    "OLR_DIM", "OLR_HORIZON", "OLR_LABEL_NOISE_VARIANCE", "OLR_NOISE_CONSTANT", "DECREASE_RATIO",
    "reproduce_olr", "format_olr_table",
]

OLR_DIM = 21
"""OLR dimension ``d``, 3 coordinates per node (paper)."""
OLR_HORIZON = 500
"""OLR rounds ``T`` (paper)."""
OLR_LABEL_NOISE_VARIANCE = 0.2
"""Variance of the OLR label noise ``rho`` (paper: ``N(0, 0.2)``)."""
OLR_NOISE_CONSTANT = 1.0
"""``c`` in ``sigma = c / epsilon`` for OLR. Our choice; the paper gives none.

It is of the order of the per-coordinate gradient at the start,
``2 |b| |a_k| ~ 0.5``. At ``epsilon = 0.2`` it already multiplies the
non-private ``R(T)/T`` about sixfold."""
DECREASE_RATIO = 0.8
"""Check "R(t)/t decreases": ``R(T)/T <= DECREASE_RATIO * R(T/4)/(T/4)``. The slack is stated here.

The ``O(1/sqrt(T))`` bound of Theorems 3 and 5 predicts a ratio near 0.5. We
ask only for a 20% drop, so a slower decay still counts as decreasing and a
flat curve does not."""


def reproduce_olr(out_dir: str | Path, *, runs: int = RUNS, seed: int = DEFAULT_SEED, horizon: int = OLR_HORIZON,
                  epsilons: Sequence[float] = EPSILONS, noise_constant: float = OLR_NOISE_CONSTANT,
                  alpha0: float = ALPHA0, comparator: str = "prefix") -> dict[str, Any]:
    """Fig. 3: ``R(t)/t`` and the running-average ``R~(t)/t`` of DPSDA-C and DPSDA-PS on synthetic OLR.

    Data: :func:`asyncdp.problems.online.synthetic_olr` with ``N = 7``, ``d = 21``,
    ``X = [-5, 5]^21``, one sample per round, ``a(t) ~ U[-0.5, 0.5]^21``,
    ``b = a^T x_hat + rho`` with ``rho ~ N(0, 0.2)``, data seed ``seed``. The
    comparator ``min_v sum_{t<=T'} f_t(v)`` is computed once for every
    prefix (``comparator="prefix"``, exact bounded least squares) and shared
    by all runs, epsilons and both algorithms.

    Checks (``summary["checks"]``):

    * ``decreasing_<alg>_eps=<e>`` (played and running-average):
      ``R(T)/T <= DECREASE_RATIO * R(T/4)/(T/4)`` for the mean over runs,
      with ``T/4`` rounded down;
    * ``ordering_<alg>``: the mean final ``R(T)/T`` grows strictly as epsilon
      falls (non-private first);
    * ``paired_<alg>_<e1>_vs_<e2>``: for consecutive epsilons, the per-run
      difference ``R_e2(T)/T - R_e1(T)/T`` (``e2 < e1``, same seeds) has
      a 95% Student ``t`` interval (:func:`~asyncdp.reproduce._stats.mean_ci`,
      ``runs - 1`` degrees of freedom) entirely above 0, i.e. mean/s.e.
      ``> t95(runs)`` (needs ``runs >= 2``; 12.7 at two runs, where a fixed
      threshold of 2 passes a difference of pure noise 15% of the time).

    Args:
        out_dir: output directory (created).
        runs: Monte-Carlo runs per algorithm and epsilon, >= 1.
        seed: data seed and first run seed, >= 0.
        horizon: ``T``, >= 4.
        epsilons: privacy levels (``inf`` = non-private).
        noise_constant: ``c`` in ``sigma = c / epsilon``.
        alpha0: step-size constant.
        comparator: ``"prefix"`` or ``"final"`` (:func:`asyncdp.experiments.regret.comparator_values`).

    Returns:
        The summary (:data:`SUMMARY_KEYS`). Writes ``olr.csv`` (columns
        ``algorithm, epsilon, t, regret_per_round, regret_per_round_sem,
        running_regret_per_round, running_regret_per_round_sem``),
        ``olr_summary.json`` and ``olr.png``.

    Raises:
        ScenarioError: bad ``runs`` or ``seed``, or an unknown comparator.
        HorizonError: ``horizon < 4``.
        AlgorithmParameterError: bad ``epsilons``, ``noise_constant`` or ``alpha0``.

    Example:
        >>> s = reproduce_olr("/tmp/olr", runs=2, horizon=40, epsilons=(math.inf, 0.5))  # doctest: +SKIP
        >>> sorted(s["points"][0])[:3]  # doctest: +SKIP
        ['algorithm', 'epsilon', 'ratio']
    """
    runs = check_integer(runs, "runs", minimum=1, error=ScenarioError)
    seed = check_integer(seed, "seed", minimum=0, error=ScenarioError)
    horizon = check_integer(horizon, "horizon", minimum=4, error=HorizonError)
    eps_grid = _epsilons(epsilons)
    c = check_positive(noise_constant, "noise_constant", error=AlgorithmParameterError)
    alpha0 = check_positive(alpha0, "alpha0", error=AlgorithmParameterError)
    if comparator not in ("prefix", "final"):
        raise ScenarioError(f"comparator must be 'prefix' or 'final', got {comparator!r}")
    t_start = time.perf_counter()
    loss, box = synthetic_olr(N_NODES, OLR_DIM, horizon, seed=seed, noise_var=OLR_LABEL_NOISE_VARIANCE, box=BOX)
    problem = online_problem(loss, box)
    t_comp = time.perf_counter()
    comp = comparator_values(problem, horizon, comparator)
    comparator_seconds = time.perf_counter() - t_comp
    gs = graphs()
    quarter = horizon // 4
    curves: dict[tuple[str, float], dict[str, np.ndarray]] = {}
    sim_seconds = 0.0
    for name in ALGORITHMS:
        for eps in eps_grid:
            t_sim = time.perf_counter()
            traj = _per_run(problem, gs[name], name, eps, c, alpha0, horizon, runs, seed)
            sim_seconds += time.perf_counter() - t_sim
            played = regret_curve(traj, problem, comparator_values_=comp)
            running = regret_curve(traj, problem, running=True, comparator_values_=comp)
            curves[(name, eps)] = {"played": played.per_round, "running": running.per_round}
    points, rows = [], []
    for (name, eps), cv in curves.items():
        pt: dict[str, Any] = {"algorithm": name, "epsilon": eps, "sigma": 0.0 if math.isinf(eps) else c / eps}
        for kind in ("played", "running"):
            arr = cv[kind]
            pt[kind] = {"quarter": _stats(arr[:, quarter - 1]), "final": _stats(arr[:, -1])}
        pt["ratio"] = pt["played"]["final"]["mean"] / pt["played"]["quarter"]["mean"]
        pt["ratio_running"] = pt["running"]["final"]["mean"] / pt["running"]["quarter"]["mean"]
        points.append(pt)
        m_p, m_r = cv["played"].mean(0), cv["running"].mean(0)
        s_p, s_r = sem(cv["played"], axis=0), sem(cv["running"], axis=0)
        rows += [[name, _eps_label(eps), t + 1, repr(float(m_p[t])), repr(float(s_p[t])), repr(float(m_r[t])),
                  repr(float(s_r[t]))] for t in range(horizon)]
    checks = []
    for pt in points:
        for kind, key in (("played", "ratio"), ("running", "ratio_running")):
            checks.append(check_entry(
                f"decreasing_{kind}_{pt['algorithm']}_eps={_eps_label(pt['epsilon'])}", pt[key] <= DECREASE_RATIO,
                f"mean {'R' if kind == 'played' else 'R~'}(T)/T <= {DECREASE_RATIO} * mean value at t = T/4 = "
                f"{quarter} (theory: ratio ~ 0.5)", value=pt[key]))
    order = _by_epsilon_desc(eps_grid)
    for name in ALGORITHMS:
        finals = [curves[(name, e)]["played"][:, -1] for e in order]
        means = [float(f.mean()) for f in finals]
        checks.append(check_entry(f"ordering_{name}", all(a < b for a, b in itertools.pairwise(means)),
                                  "mean final R(T)/T strictly increasing as epsilon decreases: "
                                  + " < ".join(_eps_text(e) for e in order), value=means,
                                  epsilons=[_eps_label(e) for e in order]))
        if runs >= 2:
            for (e1, f1), (e2, f2) in itertools.pairwise(zip(order, finals)):
                ci = mean_ci(f2 - f1)
                z = ci.mean / ci.sem if ci.sem > 0 else (math.inf if ci.mean > 0 else -math.inf)
                checks.append(check_entry(f"paired_{name}_{_eps_label(e1)}_vs_{_eps_label(e2)}", ci.low > 0,
                                          "per-run R_eps2(T)/T - R_eps1(T)/T (same seeds): 95% Student t interval "
                                          f"above 0, mean/s.e. > t95({runs}) = {t95(runs):.4f}",
                                          value=z, mean_difference=ci.mean, ci_low=ci.low))
    fc = problem.constants
    total = time.perf_counter() - t_start
    summary: dict[str, Any] = {
        "experiment": "dpsda-olr", "paper": _PAPER + ", Fig. 3: online linear regression, R(T)/T and R~(T)/T",
        "choices": _choices(
            runs=runs, seed=seed, horizon=horizon, epsilons=list(eps_grid), noise_constant=c, alpha0=alpha0,
            comparator=comparator, dim=OLR_DIM,
            data=f"synthetic_olr(N=7, d={OLR_DIM}, T={horizon}, seed={seed}): a ~ U[-0.5, 0.5]^d, x_hat ~ N(0, I), "
                 f"b = a^T x_hat + rho, rho ~ N(0, {OLR_LABEL_NOISE_VARIANCE}) (variance), one sample per round",
            loss="least squares (b - a^T x)^2 per round",
            gradient_bound_L=fc.gradient_bound, L_hat=math.sqrt(fc.gradient_bound**2 + GRADIENT_NOISE_VARIANCE),
            quarter=quarter),
        "points": points, "checks": checks,
        "statements": _olr_statements(points, checks, quarter, horizon, c, runs),
        "timing": {"seconds": total, "comparator_seconds": comparator_seconds, "simulation_seconds": sim_seconds,
                   "rounds_simulated": 2 * len(eps_grid) * runs * horizon},
    }
    summary["curves"] = {f"{n}|{_eps_label(e)}": {"played_mean": cv["played"].mean(0),
                                                  "running_mean": cv["running"].mean(0)}
                         for (n, e), cv in curves.items()}
    write_outputs(Path(out_dir), "olr", ("algorithm", "epsilon", "t", "regret_per_round", "regret_per_round_sem",
                                  "running_regret_per_round", "running_regret_per_round_sem"), rows, summary,
           _plot_olr)
    summary["timing"]["seconds_with_output"] = time.perf_counter() - t_start
    return summary


def _olr_statements(points: list[dict[str, Any]], checks: list[dict[str, Any]], quarter: int, horizon: int,
                    c: float, runs: int) -> list[str]:
    lines = []
    for name in ALGORITHMS:
        pts = [p for p in points if p["algorithm"] == name]
        lines.append(f"{name}: R(T)/T at T={horizon} (R(t)/t at t={quarter}): " + ", ".join(
            f"eps={_eps_text(p['epsilon'])} {p['played']['final']['mean']:.4g} "
            f"({p['played']['quarter']['mean']:.4g})" for p in pts) + ".")
    bad = [ch["name"] for ch in checks if not ch["holds"]]
    ran = "All trend checks that ran hold." if runs < 2 else "All trend checks hold."
    lines.append(ran if not bad else "Checks that fail: " + ", ".join(bad) + ".")
    if runs < 2:
        lines.append("The paired checks (paired_*) were not run: their Student t interval needs runs >= 2, "
                     f"got {runs}; the ordering of the means rests on one run per epsilon.")
    lines.append(f"Noise sigma = {c:g}/epsilon. The regret per round falls roughly like 1/sqrt(T) and grows as "
                 "epsilon falls, the paper's qualitative Fig. 3 claims; the paper gives no numbers to compare.")
    return lines


def _plot_olr(path: Path, s: dict[str, Any]) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10.5, 7.5), sharex=True)
    for col, name in enumerate(ALGORITHMS):
        for row, (kind, label) in enumerate((("played_mean", "R(t)/t"), ("running_mean", "R~(t)/t (running avg)"))):
            ax = axes[row, col]
            for key, cv in s["curves"].items():
                n, e = key.split("|")
                if n != name:
                    continue
                y = np.asarray(cv[kind])
                ax.plot(np.arange(1, y.size + 1), y, label=f"ε={'NP' if e == 'inf' else e}")
            ax.set_yscale("log")
            ax.set_title(f"{name}: {label}", fontsize=10)
            ax.grid(True, which="both", alpha=0.25)
            ax.legend(fontsize=8)
            if row == 1:
                ax.set_xlabel("t")
    fig.suptitle(f"Cheng, Liao and Li (arXiv 2022), Fig. 3 (OLR, N=7, d=21): "
                 f"{s['choices']['runs']} runs, σ = "
                 f"{s['choices']['noise_constant']:g}/ε", fontsize=10)
    save_figure(fig, path, dpi=100)


def format_olr_table(summary: dict[str, Any]) -> str:
    """Final and quarter-horizon ``R(t)/t`` per algorithm and epsilon, then the checks.

    Example:
        >>> format_olr_table({"experiment": "dpsda-olr", "points": [], "checks": [], "statements": []})
        'dpsda-olr\\nalgorithm  epsilon  R(T/4)/(T/4)  R(T)/T  R~(T)/T\\n'
    """
    lines = [summary.get("experiment", ""), "algorithm  epsilon  R(T/4)/(T/4)  R(T)/T  R~(T)/T"]
    for p in summary.get("points", []):
        lines.append(f"{p['algorithm']:<9}  {_eps_text(float(p['epsilon'])):>7}  "
                     f"{p['played']['quarter']['mean']:12.4g}  {p['played']['final']['mean']:6.4g}  "
                     f"{p['running']['final']['mean']:7.4g}")
    return "\n".join(lines + check_lines(summary))
