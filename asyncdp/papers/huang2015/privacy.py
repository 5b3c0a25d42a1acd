"""Accountant inputs for ``huang2015`` (Huang, Mitra and Vaidya, ICDCN 2015)."""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.claims import verify
from accounting.papers import huang2015 as S

from ..record import GradientClass, require_out_neighbours

__all__ = ["claimed_scale", "sensitivity", "theorem_verdict", "gradient_class"]


def sensitivity(scenario) -> np.ndarray:
    """L1 sensitivity of each release ``y(t)``, ``t = 1..T``.

    ``y(t)`` (every copy of it, in unicast mode) masks ``x(t-1)``, whose
    sensitivity is ``accounting.papers.huang2015.huang2015_sensitivity(t-1)``
    (Lemma 4) with ``C2`` and ``n`` from the problem's function class
    and ``c, q`` from the algorithm. Lemma 4 needs each agent's combination to
    depend on released values only, which holds in broadcast mode and in
    unicast mode while every agent has an out-neighbour.

    Raises:
        ScenarioError: unicast with an agent that has no out-neighbour in some
            round (its noise-free self term breaks Lemma 4's argument).
    """
    alg = scenario.algorithm.bind(scenario.problem)
    require_out_neighbours(scenario, f"{S.SPEC.paper}, Lemma 4")
    c2, n = scenario.problem.constants.gradient_bound, scenario.problem.dim
    return np.array([S.huang2015_sensitivity(t - 1, C2=c2, n=n, c=alg.c, q=alg.q)
                     for t in range(1, scenario.horizon + 1)])


def theorem_verdict(scenario: Any, eps_ledger: float, delta_ledger: float) -> str:
    """Theorem 5's claim checked against the accountant's epsilon of the ledger.

    The claim is built by :func:`accounting.papers.huang2015.huang2015_claim`
    from the algorithm's ``epsilon, c, q, p``; Lemma 2's sum over the releases
    is the ledger's own (basic composition of Laplace releases, each with the
    independent sensitivity), so the verdict compares the claim with it.

    Args:
        scenario: a scenario running :class:`~asyncdp.papers.huang2015.rule.Huang2015`.
        eps_ledger: the accountant's epsilon of the run.
        delta_ledger: the accountant's delta of the run.

    Returns:
        The one-line verdict of :func:`accounting.claims.verify`.

    Example:
        >>> from asyncdp.papers.huang2015.rule import Huang2015
        >>> theorem_verdict(Huang2015.example_scenario(), 0.5, 0.0).endswith("delta gap +0)")
        True
    """
    alg = scenario.algorithm.bind(scenario.problem)
    claim = S.huang2015_claim(alg.epsilon, c=alg.c, q=alg.q, p=alg.p)
    return verify(claim, eps_ledger, delta_ledger).message


def claimed_scale(scenario: Any, t: int) -> float:
    """``M_t`` of the algorithm's schedule as the accountant computes it (eq. 8 or the Theorem 5 proof).

    :func:`accounting.papers.huang2015.huang2015_noise_scale` with the
    problem's ``C2`` and dimension and the algorithm's ``epsilon, c, q, p`` and
    schedule; 0 when ``epsilon`` is infinite (no noise).

    Example:
        >>> from asyncdp.papers.huang2015.rule import Huang2015
        >>> sc = Huang2015.example_scenario()
        >>> claimed_scale(sc, 3) == sc.algorithm.bind(sc.problem).noise(3, "y").scale
        True
    """
    alg = scenario.algorithm.bind(scenario.problem)
    if np.isinf(alg.epsilon):
        return 0.0
    return S.huang2015_noise_scale(t, epsilon=alg.epsilon, C2=scenario.problem.constants.gradient_bound,
                                   n=scenario.problem.dim, c=alg.c, q=alg.q, p=alg.p, schedule=alg.schedule)


def gradient_class(scenario: Any) -> GradientClass:
    """Lemma 4's adjacency class: any two costs with ``||grad f||_2 <= C2``, bounded in L1.

    Def. 3 asks no closeness of ``f_i`` and ``f_i'`` and Lemma 4 uses only
    Assumption 1(ii), so the extremal pairs of the worst-case search are
    opposite linear costs; strong convexity (1(iii)) serves the utility
    analysis, not the privacy bound.

    Example:
        >>> from asyncdp.papers.huang2015.rule import Huang2015
        >>> gradient_class(Huang2015.example_scenario()).norm
        'l1'
    """
    return GradientClass(float(scenario.problem.constants.gradient_bound), "l1")
