"""Privacy check of DPSDA-C (Cheng, Liao and Li, arXiv 2022) on two adjacent loss sequences. Verdict ``pass``.

Seven nodes, one coordinate each, run online least squares on ``[-0.1, 0.1]^7``
over the undirected Fig. 2 stand-in with Metropolis weights. ``adjacent`` is the
same scenario with round 2's label negated (Cheng, Liao and Li, Def. 1: the sequences
differ in exactly one round). That change moves every node's gradient block.
The algorithm clips its local signal and calibrates its noise to the
network-level sensitivity ``2 N^2 L_hat`` (``level="network"``), which is
the scope the check tests: an eavesdropper on every link.
``examples/privacy_check_dpsda_paper.py`` runs the paper's own rule
(unclipped, noise calibrated per node) on the same pair and gets a violation.

The box is small and the features are +-1 vectors. So the gradient bound
``L`` is close to the gradient of the changed round, and the network-level
change ``N ||grad f_2 - grad f_2'||_1`` exceeds the per-node ``2 N L_hat``.

Run:  asyncdp privacy check examples/privacy_check_dpsda.py --runs 2000
"""

from __future__ import annotations

import numpy as np

import topology
from asyncdp import Box, Scenario
from asyncdp.papers.dpsda.rule import DPSDAC, DPSDAPS
from asyncdp.problems.online import BatchLoss, adjacent_online_problem, online_problem

N, HORIZON, SEED, CHANGED_ROUND = 7, 6, 1, 2


def build(algorithm: str = "dpsda-c", **params) -> tuple[Scenario, Scenario]:
    """``(scenario, adjacent)`` for ``algorithm`` (``"dpsda-c"`` or ``"dpsda-ps"``) with ``params``."""
    rng = np.random.default_rng(4)
    a = rng.choice([-1.0, 1.0], size=(HORIZON, 1, N))
    b = rng.uniform(-1.0, 1.0, size=(HORIZON, 1))
    b[CHANGED_ROUND - 1] = 1.0
    problem = online_problem(BatchLoss("least-squares", a, b, num_nodes=N), Box(-0.1, 0.1, dim=N))
    other = adjacent_online_problem(problem, CHANGED_ROUND, features=a[CHANGED_ROUND - 1],
                                    labels=-b[CHANGED_ROUND - 1])
    cls, graph = ((DPSDAC, topology.cheng2022_fig2_sequence(directed=False)) if algorithm == "dpsda-c"
                  else (DPSDAPS, topology.cheng2022_fig2_sequence(directed=True)))
    sc = Scenario(problem, graph, cls(epsilon=1.0, **params), horizon=HORIZON, seed=SEED)
    return sc, sc.replace(problem=other)


scenario, adjacent = build("dpsda-c", clip=True, level="network")


def main() -> dict:
    from asyncdp.privacy import check_privacy

    report = check_privacy(scenario, adjacent, runs=2000)
    print(report.to_table())
    return report.to_dict()


if __name__ == "__main__":
    import runpy
    from pathlib import Path

    _plot = runpy.run_path(str(Path(__file__).with_name("privacy_check_rendezvous.py")))["plot_report"]
    _plot(main(), scenario, "privacy_check_dpsda")
