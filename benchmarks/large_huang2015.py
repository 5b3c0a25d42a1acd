"""Scenario script: huang2015 on a larger time-varying digraph, for ``bench_privacy_check.py --script``.

A researcher's network size rather than the examples' five agents: ``N`` agents (default 50) on a periodic
sequence of three ring digraphs (strides 1, 2, 3; each column-stochastic with self-weight 1/2), rendezvous costs
in ``D`` dimensions (default 10), ``T`` rounds (default 200), lockstep timing. Sizes come from the environment
(``LARGE_N``, ``LARGE_D``, ``LARGE_T``) so one script measures how a check's cost grows.

Run:  LARGE_N=20 LARGE_D=5 LARGE_T=50 python bench_privacy_check.py --script large_huang2015.py --runs 200 --repeats 1
"""

from __future__ import annotations

import os

import numpy as np

import topology
from asyncdp import Huang2015, Scenario, rendezvous_problem

N = int(os.environ.get("LARGE_N", 50))
D = int(os.environ.get("LARGE_D", 10))
T = int(os.environ.get("LARGE_T", 200))
SEED = 3


def ring(n: int, stride: int) -> np.ndarray:
    """Each agent keeps half its value and sends half to the agent ``stride`` ahead."""
    w = 0.5 * np.eye(n)
    w[(np.arange(n) + stride) % n, np.arange(n)] += 0.5
    return w


addresses = np.random.default_rng(SEED).uniform(-1.0, 1.0, size=(N, D))
addresses[0] = 1.0
problem = rendezvous_problem(addresses)
scenario = Scenario(problem, topology.periodic([ring(N, s) for s in (1, 2, 3)]),
                    Huang2015(epsilon=1.0, c=0.05, q=0.9, p=0.97, schedule="eq8"), horizon=T, seed=SEED)
adjacent = scenario.replace(problem=problem.adjacent(0, address=-np.ones(D)))
