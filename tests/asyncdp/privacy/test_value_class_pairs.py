"""The antipodal pairs of a value class (:mod:`asyncdp.privacy.value_class`) on boxes of any dimension.

Truth: in a box the pairs at distance the diameter are exactly the opposite vertices ``a`` and ``low + high - a``.
``Box.extreme_points`` samples 1024 of the ``2^dim`` vertices above 10 dimensions, and in 30 dimensions those
1024 hold no opposite pair (checked below), so pairing extreme points among themselves found none: the search
reported "needs a bounded domain" for a bounded box, and a false claim of a Muffliato subclass stayed inconclusive.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from accounting.claim_forms import ClaimForm, ZeroConcentratedDP
from accounting.network.muffliato_gossip import hamilton_weights
from asyncdp.papers.muffliato.rule import Muffliato, muffliato_topology
from asyncdp.privacy import check_privacy
from asyncdp.privacy.value_class import antipodal_values
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem
from asyncdp.scenario import Scenario

DIM = 30


@dataclass(frozen=True)
class _Zcdp(Muffliato):
    """Muffliato claiming ``form``."""

    form: ClaimForm = ZeroConcentratedDP(14.0)

    def claimed_form(self, horizon: int) -> ClaimForm:
        return self.form


def test_a_box_in_30_dimensions_gets_opposite_vertices():
    box = Box(0.0, 1.0, dim=DIM)
    pts = box.extreme_points()
    assert not any((1.0 - p == pts).all(axis=1).any() for p in pts)  # the sample holds no opposite pair
    pairs = antipodal_values(box)
    assert len(pairs) == 2
    for _, a, b in pairs:
        assert np.array_equal(b, 1.0 - a) and np.linalg.norm(a - b) == box.diameter


def test_a_label_tells_values_one_apart_near_a_million():
    (label, a, b), = antipodal_values(Box(1e6, 1e6 + 1.0, dim=1))
    assert (a.tolist(), b.tolist()) == ([1e6], [1e6 + 1.0])
    assert "(1000000.0) vs (1000001.0)" in label


def test_a_false_claim_on_a_30_dimensional_box_is_refuted():
    # values in [0, 1]^30, sigma 1: the opposite vertices have mu = sqrt(30), exactly 15-zCDP; 14-zCDP is false
    n = 4
    values = np.random.default_rng(0).uniform(0.0, 1.0, size=(n, DIM))
    moved = values.copy()
    moved[0] = 1.0 - values[0]
    box = Box(0.0, 1.0, dim=DIM)
    scenario = Scenario(Problem(box, RendezvousQuadratic(values)), muffliato_topology(hamilton_weights(nx.path_graph(n))),
                        _Zcdp(sigma=1.0), horizon=4, seed=0)
    report = check_privacy(scenario, scenario.replace(problem=Problem(box, RendezvousQuadratic(moved))), runs=100)
    assert report.verdict == "violation"
    w = report.witness
    # a divergence witness of Gaussian releases: the closed form less the margin of its escort draws, at their
    # confidence (a share of the check's 0.05; asyncdp.privacy.profiles.escort_renyi_lower)
    assert w["kind"] == "worst-case" and 0.99 < w["confidence"] < 1.0
    assert w["method"].startswith("exact renyi divergence less the escort margin"), w
    assert np.array_equal(np.array(w["address_prime"]), 1.0 - np.array(w["address"]))


def test_the_pair_keeps_the_declared_constants():
    # a user's lemma may read the problem's declared constants (here C2 = 10, looser than the derived 2 diam = 2)
    from dataclasses import replace

    from asyncdp.privacy.value_class import value_scenarios

    base = Muffliato.example_scenario()
    declared = replace(base.problem.constants, gradient_bound=10.0)
    scenario = base.replace(problem=Problem(base.problem.domain, base.problem.costs, declared))
    p, q = value_scenarios(scenario, 0, np.array([0.0]), np.array([1.0]))
    assert p.problem.constants == q.problem.constants == declared
    assert (p.problem.costs.addresses[0, 0], q.problem.costs.addresses[0, 0]) == (0.0, 1.0)
    assert np.array_equal(p.problem.costs.addresses[1:], base.problem.costs.addresses[1:])
