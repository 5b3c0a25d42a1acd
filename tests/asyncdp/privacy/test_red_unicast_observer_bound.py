"""The observers' upper bound for a rule without a verified linear model counts every unicast copy.

In unicast mode each receiver gets its own noisy copy: on the 6-node path with ``W`` from round 1 on (Muffliato,
sigma 1, values in [0, 1], order 2), agent 2 sends ``x_2 + xi_21`` and ``x_2 + xi_23`` in round 1, two
independent Gaussian mechanisms of divergence 1 each, and every later message is a function of round-1 copies:
the eavesdropper's exact ``D_2`` is 2 (node 1's, computed from the copies' linear maps, 1.6). The bound composed
one release per round and printed ``D_alpha=1 [upper bound]``. With the identity in round 1 (the paper's noising
round) no agent has a receiver then, so its state keeps its noise-free value and round 2 sends ``x_2`` itself:
the loss is infinite, and the bound said 1.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import topology
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy.observer_bounds import eavesdropper_renyi_bound
from asyncdp.privacy.observers import pairwise_figures


def _unicast(static: bool):
    base = Muffliato.example_scenario()
    topo = topology.static(base.topology.weights(2), directed=False) if static else base.topology
    return replace(base, mode="unicast", topology=topo)


@pytest.mark.parametrize("observer", ["eavesdropper", "node:1"])
def test_every_unicast_copy_is_composed(observer):
    (row,) = pairwise_figures(_unicast(static=True), observer, sources=[2]).rows
    assert row.kind == "upper bound" and row.renyi >= 2.0 * (1 - 1e-12)


def test_an_agent_without_receivers_in_a_noisy_round_makes_the_bound_infinite():
    sc = _unicast(static=False)
    y = sc.run("simpy").messages["y"]
    assert np.isnan(y[0, 2]).all()  # round 1: nothing sent, so no noise drawn for agent 2
    assert y[1, 2, 1, 0] == sc.problem.costs.addresses[2, 0]  # round 2 sends the raw value
    (row,) = pairwise_figures(sc, "node:1", sources=[2]).rows
    assert row.kind == "upper bound" and row.renyi == float("inf")


@pytest.mark.parametrize("observer, of_agent_2, receivers", [("node:1", {1}, {1}), ("nodes:1,3", {1, 3}, {1, 3}),
                                                             ("link:2,3", {3}, {2, 3})])
def test_a_unicast_observer_sees_the_copies_sent_to_it_only(observer, of_agent_2, receivers):
    # observed_transcript kept every receiver's copy of a sender's round it saw: node 1 held the copy 2 -> 3 too,
    # an eavesdropper's round-1 view of agent 2 (D_2 = 2, node 1's own 1.6) fed to the black-box lower bound
    from asyncdp.privacy.observer_views import observed_transcript

    res = _unicast(static=True).run("simpy")
    view = observed_transcript(res, observer)
    held = ~np.isnan(view.messages[..., 0])  # [round, sender, receiver]
    assert set(np.flatnonzero(held[0, 2])) == of_agent_2
    assert set(np.flatnonzero(held.any(axis=(0, 1)))) == receivers


def test_an_agent_that_never_sends_again_leaks_nothing_and_leaves_the_bound_finite():
    # agent 5 cut off in every round: its noise-free self term stays in a state that no message ever carries, so
    # the bound is the copies' composition (agent 2's two round-1 copies: D_2 = 2), not inf; cut off in round 1
    # only, its round-2 message carries the raw value: inf
    base = Muffliato.example_scenario()
    w = base.topology.weights(2).toarray()
    cut = w.copy()
    cut[4, 4] += cut[4, 5]
    cut[5, 5] += cut[5, 4]
    cut[4, 5] = cut[5, 4] = 0.0
    never = replace(base, mode="unicast", topology=topology.static(cut, directed=False))
    assert eavesdropper_renyi_bound(never, 2.0) == pytest.approx(2.0, rel=1e-12)
    (row,) = pairwise_figures(never, "node:1", sources=[2]).rows
    assert row.kind == "upper bound" and row.renyi == pytest.approx(2.0, rel=1e-12)
    later = replace(never, topology=topology.generated(6, lambda t: cut if t == 1 else w, directed=False))
    assert eavesdropper_renyi_bound(later, 2.0) == float("inf")
