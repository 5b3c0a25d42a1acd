"""Accountant inputs for ``huang2015`` (seed 003)."""

from __future__ import annotations

import numpy as np

from accounting import sensitivity as S

from . import require_out_neighbours

__all__ = ["sensitivity"]


def sensitivity(scenario) -> np.ndarray:
    """L1 sensitivity of each release ``y(t)``, ``t = 1..T``.

    ``y(t)`` (every copy of it, in unicast mode) masks ``x(t-1)``, whose
    sensitivity is ``accounting.sensitivity.huang2015_sensitivity(t-1)``
    (seed 003, Lemma 4) with ``C2`` and ``n`` from the problem's function class
    and ``c, q`` from the algorithm. Lemma 4 needs each agent's combination to
    depend on released values only, which holds in broadcast mode and in
    unicast mode while every agent has an out-neighbour.

    Raises:
        ScenarioError: unicast with an agent that has no out-neighbour in some
            round (its noise-free self term breaks Lemma 4's argument).
    """
    alg = scenario.algorithm.bind(scenario.problem)
    require_out_neighbours(scenario, "seed 003, Lemma 4")
    c2, n = scenario.problem.constants.gradient_bound, scenario.problem.dim
    return np.array([S.huang2015_sensitivity(t - 1, C2=c2, n=n, c=alg.c, q=alg.q)
                     for t in range(1, scenario.horizon + 1)])
