"""Showkatbakhsh, Karakus and Diggavi (arXiv 2019), Algorithm 1 on private mean estimation.

Eight nodes hold 50 points each in ``X = [-1, 1]^2`` (f_i = 1/2 sum ||x - d||^2),
on one fixed connected Erdős–Rényi graph with Laplacian weights; T = 100
Stage-I rounds then T2 = 20 Stage-II (consensus) rounds. ``adjacent`` moves
one data point of node 0 to the far corner. Noise is calibrated to the
problem's gradient bound G (what the accountant checks). With the corrected
hand-over (``STAGE2 = "corrected"``) the check passes; set
``STAGE2 = "as-printed"`` and it reports infinite privacy loss at round T + 1.
The error at the end (about 0.6 on a box of diameter 2.8, where the same run
without privacy noise is exact to 1e-30) is noise-dominated: the price of
(epsilon, delta) = (1, 1e-3) with 50 points per node, as ``noise_effect``
prints.

Run:  asyncdp run examples/showkatbakhsh_mean_estimation.py
      asyncdp privacy check examples/showkatbakhsh_mean_estimation.py --runs 2000
"""

from __future__ import annotations

import numpy as np

import topology
from asyncdp import Scenario, noise_effect
from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh, mean_estimation_problem

N, POINTS, R, SEED = 8, 50, 1.0, 4
STAGE2 = "corrected"

data = np.random.default_rng(SEED).uniform(-R, R, size=(N, POINTS, 2))
problem = mean_estimation_problem(data, R)
graph = topology.static(topology.erdos_renyi(N, 0.5, seed=SEED, connected=True, rule="laplacian").weights(1),
                        directed=False, description="fixed connected G(8, 0.5), Laplacian weights")
algorithm = Showkatbakhsh(epsilon=1.0, delta=1e-3, T=100, T2=20, stage2=STAGE2)
scenario = Scenario(problem, graph, algorithm, horizon=algorithm.horizon, seed=SEED)
moved = data.copy()
moved[0, 0] = [-R, -R]
adjacent = scenario.replace(problem=mean_estimation_problem(moved, R, problem.constants))


def main(stage2: str = STAGE2, runs: int = 1000) -> dict:
    """Run 200 noisy runs (batch engine) and the privacy check of the ``stage2`` variant."""
    from dataclasses import replace

    from asyncdp.privacy import check_privacy

    alg = replace(algorithm, stage2=stage2)
    sc, adj = scenario.replace(algorithm=alg), adjacent.replace(algorithm=alg)
    res = sc.run(engine="batch", runs=200, keep="final")
    err1, err = (float(res.optimality_error[:, k].mean()) for k in (alg.T, -1))
    print(f"{stage2}: mean ||xbar - x*||^2 = {err1:.4g} at T, {err:.4g} after Stage II (it adds nbar(T) when "
          "corrected)")
    print(noise_effect(sc).explain())  # one run beside the same run without privacy noise
    report = check_privacy(sc, adj, runs=runs)
    print(report.to_table())
    return {"error_stage1": err1, "error": err, **report.to_dict()}


if __name__ == "__main__":
    import runpy
    from pathlib import Path

    _plot = runpy.run_path(str(Path(__file__).with_name("privacy_check_rendezvous.py")))["plot_report"]
    _plot(main(), scenario, "showkatbakhsh_mean_estimation")
