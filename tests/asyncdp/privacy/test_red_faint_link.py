"""Red team: a gossip link of weight 1e-17 (e.g. a Gaussian-kernel weight between far sensors) and Muffliato's
pairwise claim.

Path 0 - 1 - 2, ``W[0, 1] = W[1, 0] = 1e-17``, horizon 4 (round 1 the local noising round). Node 2 receives from
node 1 only: ``x_1' = x_1 + xi_1`` (the first exchange) and ``x_1(2) = 1e-17 x_0' + 0.5 x_1' + 0.5 x_2'``; it knows
``x_2'``, so it solves for ``x_0' = x_0 + xi_0``: in exact arithmetic (the model's and the paper's) the loss
``0 -> 2`` is the whole local budget ``alpha Delta^2 / (2 sigma^2) = 1``, far above the authors' value for the
pair (``6.5e-34``). The direction that carries ``x_0'`` has singular value 1e-17, below rounding level, and both the
streaming path and the engine schedule's path dropped it as rounding, labelled the values exact: the streaming
path found 0 for the pair and the check passed the claim (``asyncdp privacy check --observer node:2``: pass), the
engine path found an exact infinity (the shift outside the numerical range) and made it a witness. Neither value
is certified: the verdict is inconclusive.
"""

from __future__ import annotations

import numpy as np

from asyncdp.engine.links import LinkModel, Links
from asyncdp.engine.timing import Lockstep
from asyncdp.papers.muffliato.rule import Muffliato, muffliato_topology
from asyncdp.privacy.network import check_pairwise_claim, leakage_rows, pairwise_claim_of
from asyncdp.privacy.observer_claim import check_observer_claim
from asyncdp.privacy.observers import pairwise_figures
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem
from asyncdp.scenario import Scenario

FAINT = 1e-17


def _faint_path() -> Scenario:
    w = np.array([[1.0 - FAINT, FAINT, 0.0], [FAINT, 0.5 - FAINT, 0.5], [0.0, 0.5, 0.5]])
    problem = Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(np.array([[0.2], [0.5], [0.9]])))
    return Scenario(problem, muffliato_topology(w), Muffliato(sigma=1.0), horizon=4, seed=0)


def test_a_faint_link_leaves_the_pairwise_claim_unverified_not_passed():
    sc = _faint_path()
    claim = pairwise_claim_of(sc)
    assert claim.bounds_for(2)[0] < 1e-30  # the authors' value; the exact-arithmetic loss is 1
    result = check_observer_claim(sc, "node:2", find_rounds=False)
    assert result.verdict == "inconclusive", result.to_table()
    for fast in (True, False):  # the streaming path (0 for the pair) and the engine schedule's (infinite)
        row = next(iter(leakage_rows(sc, observers=[2], fast=fast)))
        assert row.kind == "lower estimate", (fast, row)
        assert check_pairwise_claim(sc, claim, [row], find_rounds=False).verdict == "inconclusive"


def test_a_loss_above_what_any_view_can_leak_is_no_witness():
    # the engine path's infinity (the shift outside the numerical range of an ambiguous view) is above the local
    # budget alpha Delta^2 / (2 sigma^2) = 1 that bounds every view of the verified structure: no lower bound of the
    # truth, so not a witness (it was: "violation ... exact inf > claimed 6.5e-34")
    sc = _faint_path()
    row = next(iter(leakage_rows(sc, observers=[2], fast=False)))
    assert row.values[0] == np.inf
    check = check_pairwise_claim(sc, pairwise_claim_of(sc), [row], find_rounds=False)
    assert check.verdict == "inconclusive" and check.failed == 0
    assert "u=0 -> v=2" in check.reason and "numerical artifact" in check.reason


def test_an_infinite_loss_on_a_sampled_schedule_is_no_witness():
    # lossy links (a random schedule): the engine path's per-run infinity for u = 0 was a witness "inf > claimed
    # 6.5e-34"; it lies above the bound 1 that every schedule obeys, so it is no lower bound of the truth (which is
    # near 1): no confidence bound, the verdict inconclusive with the pair named
    sc = _faint_path().replace(timing=Lockstep(missing="renormalize"), links=Links(LinkModel(loss=0.05)))
    result = check_observer_claim(sc, "node:2", runs=4, find_rounds=False)
    assert result.method == "sampled schedules" and result.verdict == "inconclusive", result.to_table()
    assert result.failed == 0 and "pair u=0 -> v=2" in result.reason and "(inf) exceeds the bound" in result.reason


def test_the_observer_figure_of_the_faint_source_is_not_called_exact():
    # the computed value (inf) is above the bound every view obeys: the figure is that bound, not a value
    fig = pairwise_figures(_faint_path(), "node:2", sources=[0])
    assert fig.rows[0].kind == "structural bound", fig.to_table()


def _faint_shortcut() -> Scenario:
    # nodes 0 and 1 reach node 2 through node 3 with equal weights (node 2 sees only x_0' + x_1' from them); node 4,
    # a neighbour of 2, has a link of weight 1e-17 to node 0. Node 2 sees x_4' and x_4(1) = 1e-17 x_0' + 0.6 x_4' +
    # 0.4 x_2': in exact arithmetic it solves for x_0' (then x_1'), loss 1 for both, above the authors' 0.628
    w = np.zeros((5, 5))
    for a, b, weight in [(0, 3, 0.1), (1, 3, 0.1), (2, 3, 0.2), (2, 4, 0.4), (0, 4, FAINT)]:
        w[a, b] = w[b, a] = weight
    np.fill_diagonal(w, 1.0 - w.sum(axis=1))
    problem = Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(np.linspace(0.1, 0.9, 5)[:, None]))
    return Scenario(problem, muffliato_topology(w), Muffliato(sigma=1.0), horizon=7, seed=0)


def test_a_faint_link_to_a_node_seen_strongly_elsewhere_leaves_the_claim_unverified():
    # node 0's noise reaches node 2's view strongly too (through node 3, tied to node 1's), so no column of the view
    # is faint: the rank decision dropped the 1e-17 entry's direction, the value 0.5 (truth 1) was labelled exact
    # and the claim (0.628 for the pair, 1 for every neighbour) passed
    sc = _faint_shortcut()
    claim = pairwise_claim_of(sc)
    assert 0.5 < claim.bounds_for(2)[0] < 1.0
    for fast in (True, False):
        row = next(iter(leakage_rows(sc, observers=[2], fast=fast)))
        assert row.kind == "lower estimate", (fast, row)
        assert check_pairwise_claim(sc, claim, [row], find_rounds=False).verdict == "inconclusive"
    assert check_observer_claim(sc, "node:2", find_rounds=False).verdict == "inconclusive"
