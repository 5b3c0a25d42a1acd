"""Accountant inputs for ``huang2015`` (seed 003)."""

from __future__ import annotations

import numpy as np

from accounting import sensitivity as S

from ..errors import ScenarioError

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
    if scenario.mode == "unicast":
        for t in range(1, scenario.horizon + 1):
            w = scenario.topology.weights(t)
            outdeg = np.asarray((w != 0).sum(axis=0)).ravel() - (w.diagonal() != 0)
            if (outdeg == 0).any():
                raise ScenarioError(
                    f"round {t}: agent {int(np.flatnonzero(outdeg == 0)[0])} has no out-neighbour in unicast mode; "
                    "its noise-free self term breaks the sensitivity argument (seed 003, Lemma 4)"
                )
    c2, n = scenario.problem.constants.gradient_bound, scenario.problem.dim
    return np.array([S.huang2015_sensitivity(t - 1, C2=c2, n=n, c=alg.c, q=alg.q)
                     for t in range(1, scenario.horizon + 1)])
