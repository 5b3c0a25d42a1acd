"""Saddle escape with Wang and Başar's Algorithm 2 (Automatica 2023, §6.1, Fig. 4).

Five agents on a ring (Metropolis weights, 1/3 each) minimize the nonconvex
estimation cost of §6.1 from x_i(0) = theta_s, the strict saddle. Without
noise an agent stays exactly at theta_s only when its local gradient vanishes
there (the homogeneous data); the Gaussian gradient noise (variance 0.5)
makes every run leave the saddle. About half the runs leave to the right and
reach theta*, the others reach the local minimum that the cost's extension
outside the box creates on the left (see asyncdp.problems.nonconvex).

Run:  python examples/wang_basar_saddle_escape.py     or     asyncdp run examples/wang_basar_saddle_escape.py
Privacy (Theorem 5, per iteration):  asyncdp privacy check examples/wang_basar_saddle_escape.py
(``no-claim``: the default claim="consistent" gives epsilon 6.9 per iteration, outside Theorem 5's
epsilon < 1; with claim="as-printed", 0.137 per iteration, the check finds a violation)
"""

from __future__ import annotations

import networkx as nx
import numpy as np

import topology
from asyncdp import Scenario
from asyncdp.papers.wang_basar.rule import WangBasar
from asyncdp.problems.nonconvex import (
    THETA_SADDLE_PAPER,
    estimation_problem,
    stationary_point,
)

HORIZON, SEED, VARIANCE, RUNS = 400, 1, 0.5, 100

problem = estimation_problem()
theta_s = stationary_point(problem.costs, THETA_SADDLE_PAPER)
graph = topology.static(topology.metropolis(nx.cycle_graph(5)), directed=False, description="ring of 5")
scenario = Scenario(problem, graph, WangBasar(noise_variance=VARIANCE), horizon=HORIZON, seed=SEED,
                    x0=np.tile(theta_s, (5, 1)))
# Theorem 5's adjacency: Y_1 moved by [1/2, 0, 0], so grad f_1 moves by -2 M^T [1/2, 0, 0] (L1 norm 1)
adjacent = scenario.replace(problem=problem.adjacent(0, measurement=[5.0 / 6.0, 2.0 / 3.0, 0.0]))


def main() -> dict:
    homogeneous = scenario.replace(problem=estimation_problem(homogeneous=True))
    still = homogeneous.replace(algorithm=WangBasar(noise_variance=0.0)).run(engine="batch")
    drift = scenario.replace(algorithm=WangBasar(noise_variance=0.0)).run(engine="batch")
    noisy = scenario.run(engine="batch", runs=RUNS, keep="final")
    xbar = noisy.final.mean(axis=1)
    escaped = np.linalg.norm(xbar - theta_s, axis=1) > 0.5
    to_star = np.linalg.norm(xbar - problem.optimum, axis=1) < 0.5
    out = {
        "homogeneous_noise_free_deviation": float(np.abs(still.trajectory - theta_s).max()),
        "paper_noise_free_final": drift.final[0].mean(axis=0).tolist(),
        "escaped_fraction": float(escaped.mean()),
        "theta_star_fraction": float(to_star.mean()),
    }
    print(f"theta_s = {np.round(theta_s, 4)}, theta* = {np.round(problem.optimum, 4)}")
    print(f"noise-free, homogeneous data: max deviation from theta_s {out['homogeneous_noise_free_deviation']:.2e}")
    print(f"noise-free, paper's data: xbar ends at {np.round(out['paper_noise_free_final'], 3)}")
    print(f"variance {VARIANCE}, {RUNS} runs: escaped {escaped.mean():.2f}, reached theta* {to_star.mean():.2f}")
    return out


if __name__ == "__main__":
    import matplotlib.pyplot as plt
    from pathlib import Path

    main()
    xbar = scenario.run(engine="batch", runs=20).trajectory.mean(axis=2)  # (runs, T + 1, 2): the agents' average
    fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    for run in xbar:
        ax.plot(run[:, 0], run[:, 1], lw=0.8, alpha=0.7)
    ax.plot(*theta_s, "kx", ms=10, label="saddle theta_s (start)")
    ax.plot(*problem.optimum, "r*", ms=12, label="minimum theta*")
    ax.set(xlabel="theta[0]", ylabel="theta[1]", title=f"xbar(t), 20 runs, noise variance {VARIANCE}")
    ax.legend(fontsize=8)
    Path("out").mkdir(exist_ok=True)
    fig.savefig("out/wang_basar_saddle_escape.png", dpi=100)
    print("figure: out/wang_basar_saddle_escape.png")
    plt.show()
