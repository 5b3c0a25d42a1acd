"""Wang and Başar (Automatica 2023), Theorem 4 (sample adjacency) at the edge of its per-iteration claim, in unicast.

The pair changes agent 0's measurement by exactly 1 (in L1) on the coordinate that attains
``nu = 2 ||M^T||_{1->1} = 4``, so every round agent 0's message moves by ``lam * [0, 4]`` (L2 norm
``4 lam``) and its noise has std ``lam sqrt(Var)``: ``mu = 4 / sqrt(Var)`` per copy. The printed claim is
the classic Gaussian bound ``eps = mu sqrt(2 ln(1.25 / delta))`` for ONE release per iteration. In unicast
mode an agent sends one independently noised copy per out-neighbour, so one iteration is the Gaussian
mechanism with ``mu_k = sqrt(k) mu`` (``k`` copies). Its exact ``delta(eps)`` (Balle and Wang, ICML 2018)
decides the truth independently of the checker:

* ring of 5 (two copies): ``delta(eps_claimed) = 9.65e-6 <= 1e-5``: the claim holds (the classic bound's
  slack covers sqrt(2)); the check must not call it violated;
* complete graph on 5 (four copies): ``delta(eps_claimed) > 1e-5``: the claim is false; never ``pass``.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from scipy.stats import norm

import topology
from asyncdp.papers.wang_basar.rule import WangBasar
from asyncdp.privacy import check_privacy

VAR = 3000.0


def _exact_delta(eps: float, mu: float) -> float:
    """delta(eps) of the Gaussian mechanism with shift/std ``mu`` (closed form, not the accountant's)."""
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


def _pair(graph):
    base = WangBasar.example_scenario()
    sc = base.replace(algorithm=WangBasar(noise_variance=VAR, privacy_kind="sample"), mode="unicast")
    if graph is not None:
        sc = sc.replace(topology=topology.static(topology.metropolis(graph), directed=False))
    y = np.array(sc.problem.costs.measurements[0])
    y[1] += 1.0  # ||Y - Y'||_1 = 1 on the row of M with the largest sum: the class boundary
    return sc, sc.replace(problem=sc.problem.adjacent(0, measurement=y))


@pytest.mark.parametrize("graph, copies", [(None, 2), (nx.complete_graph(5), 4)], ids=["ring", "complete"])
def test_wang_basar_sample_claim_unicast_copies(graph, copies):
    sc, adj = _pair(graph)
    eps, delta = sc.algorithm.bind(sc.problem).claimed_privacy(sc.horizon)
    mu = math.sqrt(copies) * 4.0 / math.sqrt(VAR)
    true_delta = _exact_delta(eps, mu)
    verdict = check_privacy(sc, adj, runs=1000).verdict
    if true_delta <= delta:
        assert true_delta == pytest.approx(9.65e-6, rel=1e-3)  # the boundary case this test is about
        assert verdict != "violation"
    else:
        assert true_delta > 1.5 * delta
        assert verdict == "violation"
