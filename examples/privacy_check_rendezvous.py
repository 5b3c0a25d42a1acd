"""Privacy check of huang2015 (eq. 8 schedule) on private rendezvous: verdict ``pass``.

Five agents on a time-varying doubly stochastic digraph; ``adjacent`` is the
same scenario with agent 0's address moved from the corner (1, 1) to the
opposite corner (-1, -1). The accountant recomputes the sensitivity, composes
the realized ledger, probes the update, replays transcripts exactly and runs a
black-box test.

Run:  asyncdp privacy check examples/privacy_check_rendezvous.py --runs 2000
"""

from __future__ import annotations

import numpy as np

import topology
from asyncdp import Huang2015, Scenario, rendezvous_problem

N, HORIZON, SEED = 5, 30, 3
SCHEDULE = "eq8"


def ring_weights(n: int, stride: int) -> np.ndarray:
    w = 0.5 * np.eye(n)
    for i in range(n):
        w[(i + stride) % n, i] += 0.5
    return w


addresses = np.random.default_rng(SEED).uniform(-1.0, 1.0, size=(N, 2))
addresses[0] = [1.0, 1.0]
problem = rendezvous_problem(addresses)
graphs = topology.periodic([ring_weights(N, s) for s in (1, 2)])
scenario = Scenario(problem, graphs, Huang2015(epsilon=1.0, c=0.05, q=0.2, p=0.6, schedule=SCHEDULE),
                    horizon=HORIZON, seed=SEED)
adjacent = scenario.replace(problem=problem.adjacent(0, address=[-1.0, -1.0]))


def main() -> dict:
    from asyncdp.privacy import check_privacy

    report = check_privacy(scenario, adjacent, runs=2000)
    print(report.to_table())
    return report.to_dict()


if __name__ == "__main__":
    main()
