"""A Gaussian two-stage rule calibrated with ``G`` where Corollary 1 has ``G^2``: verdict ``violation``.

``KappaWithG`` is the Showkatbakhsh, Karakus and Diggavi (arXiv 2019) rule
with Corollary 1's ``kappa = epsilon^2 / (4 G^2 (epsilon + 2 ln(2/delta)))``
computed with ``G`` instead of ``G^2``: the noise is smaller by a factor
``sqrt(G)``, and it is declared consistently (the released noise matches the
declaration, so only a privacy-loss witness can refute the claim). The claim
stays ``(1, 1e-3)``. The problem is a small mean estimation (4 agents, 8
points each in ``[-1, 1]^2``); the user's pair moves one of agent 0's points
to the opposite corner.

Run:  asyncdp privacy check examples/privacy_check_gaussian_under_calibrated.py --runs 1000
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import topology
from asyncdp import Scenario
from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh, mean_estimation_problem

DELTA = 1e-3
"""The claimed delta (the acceptance cases use 1e-3 and 1e-5)."""
RADIUS = 1.0
"""The domain is ``[-RADIUS, RADIUS]^2``: wide enough that no projection is active on the runs."""


@dataclass(frozen=True)
class KappaWithG(Showkatbakhsh):
    """Showkatbakhsh with Corollary 1's kappa computed with ``G`` instead of ``G^2`` (under-noised by ``sqrt(G)``)."""

    @property
    def kappa(self) -> float:
        G = self._bound()[0]
        if math.isinf(self.epsilon):
            return math.inf
        return self.epsilon**2 / (4.0 * G * (self.epsilon + 2.0 * math.log(2.0 / self.delta)))


def make(delta: float = DELTA, timing: object = None, rule: type = KappaWithG) -> tuple[Scenario, Scenario]:
    """The scenario and its adjacent one (agent 0's first point moved to the opposite corner).

    Args:
        delta: the claimed delta.
        timing: the scenario's timing (default lockstep).
        rule: the rule class (``Showkatbakhsh`` for the correctly calibrated original).
    """
    n_agents = 4
    ring = np.zeros((n_agents, n_agents), dtype=bool)
    for i in range(n_agents):
        ring[i, (i + 1) % n_agents] = ring[(i + 1) % n_agents, i] = True
    graph = topology.static(topology.laplacian(ring), directed=False, description="ring of 4, Laplacian weights")
    data = np.random.default_rng(3).uniform(-1.0, 1.0, size=(n_agents, 8, 2))
    data[0, 0] = [1.0, 1.0]
    moved = data.copy()
    moved[0, 0] = [-1.0, -1.0]
    alg = rule(epsilon=1.0, delta=delta, T=6, T2=2)
    extra = {} if timing is None else {"timing": timing}
    scenario = Scenario(mean_estimation_problem(data, RADIUS), graph, alg, horizon=alg.horizon, seed=0, **extra)
    adjacent = scenario.replace(problem=mean_estimation_problem(moved, RADIUS))
    return scenario, adjacent


scenario, adjacent = make()


def main() -> dict:
    from asyncdp.privacy import check_privacy

    report = check_privacy(scenario, adjacent, runs=400)
    print(report.to_table())
    return report.to_dict()


if __name__ == "__main__":
    import runpy
    from pathlib import Path

    _plot = runpy.run_path(str(Path(__file__).with_name("privacy_check_rendezvous.py")))["plot_report"]
    _plot(main(), scenario, "privacy_check_gaussian_under_calibrated")
