"""Observers through the asyncdp side: engine-realized schedules, the linear model verified on runs, exact losses.

Closed form of the 6-node path (Hamilton weights: every edge 1/3, the ends keep 2/3, the inner nodes 1/3),
observer node 0, plain synchronous gossip ``x(t) = W y(t)``, noise once (sigma 1, sensitivity 1, order 2):

* counting every message 0 combines (the first exchange included), 3 rounds: 0 sees ``x~_1``,
  ``(W x~)_1 = (x~_0 + x~_1 + x~_2)/3`` and ``(W^2 x~)_1`` (whose row ``(1/3, 1/3, 2/9, 1/9, 0, 0)`` brings in
  ``x~_3``). It knows ``x~_0``, so it solves for ``x~_1, x~_2, x~_3``: the Gaussian mechanism on each, loss
  ``alpha Delta^2 / (2 sigma^2) = 1`` for ``u = 1, 2, 3`` and 0 for ``u = 4, 5``.
* the authors' convention (T = 3 gossip steps, the first exchange not counted): 0 sees rows 1 of ``W, W^2,
  W^3`` applied to ``x~``; ``W^3`` row 1 is ``(9, 8, 6, 3, 1, 0)/27``. Removing the known ``x~_0`` terms and
  scaling, the view is ``A (x~_1..x~_4)`` with ``A = [[1, 1, 0, 0], [3, 2, 1, 0], [8, 6, 3, 1]]`` (full row
  rank). Its null space is spanned by ``z = (1, -1, -1, 1)``, so the share of ``e_u`` in the row space is
  ``1 - z_u^2 / |z|^2 = 3/4``: the exact Renyi divergence of order 2 is ``3/4`` for ``u = 1..4`` and 0 for
  ``u = 5``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.claim_forms import ZeroConcentratedDP, rdp_to_dp
from accounting.network import Observer, gaussian_view_losses, message_maps, observed_view
from accounting.network.muffliato_gossip import hamilton_weights
import topology

from asyncdp.engine.links import LinkModel, Links
from asyncdp.engine.timing import Async, Deadline, Lockstep
from asyncdp.errors import ScenarioError
from asyncdp.papers.muffliato.rule import Muffliato, muffliato_topology
from asyncdp.privacy.affine_check import verify_affine
from asyncdp.privacy.linear_model import _global_steps, linear_schedule
from asyncdp.privacy.observer_views import observed_transcript, parse_observer
from asyncdp.privacy.observers import pairwise_figures
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.domains import Box
from asyncdp.problems.problem import Problem
from asyncdp.scenario import Scenario


def _scenario(graph: nx.Graph, horizon: int, *, gamma: float = 1.0, static: bool = True, seed: int = 0,
              timing=None, loss: float = 0.0) -> Scenario:
    n = graph.number_of_nodes()
    values = np.random.default_rng(seed).uniform(0.0, 1.0, size=(n, 1))
    w = hamilton_weights(graph)
    topo = topology.sequence.static(w.toarray(), directed=False) if static else muffliato_topology(w)
    return Scenario(Problem(Box(0.0, 1.0, dim=1), RendezvousQuadratic(values)), topo, Muffliato(sigma=1.0, gamma=gamma),
                    horizon=horizon, seed=seed, timing=timing or Lockstep(), links=Links(LinkModel(loss=loss)))


def test_six_node_path_first_exchange_counted_matches_closed_form():
    fig = pairwise_figures(_scenario(nx.path_graph(6), 3), "node:0")
    assert fig.affine.ok, fig.affine.reason
    got = [r.renyi for r in fig.rows]
    assert math.isinf(got[0])
    np.testing.assert_allclose(got[1:], [1.0, 1.0, 1.0, 0.0, 0.0], atol=1e-9)
    assert all(r.kind == "exact" for r in fig.rows[1:])


def test_six_node_path_authors_convention_t3_matches_closed_form():
    sc = _scenario(nx.path_graph(6), 4)  # messages of rounds 2..4 are W x~, W^2 x~, W^3 x~
    res = sc.run()
    sched = linear_schedule(res, sc)
    assert verify_affine(res, sc).ok
    view = observed_view(sched, Observer.node(0))
    rows = [i for i, (t, _) in enumerate(view.messages) if t >= 2]  # drop the first exchange
    assert [view.messages[i] for i in rows] == [(2, 1), (3, 1), (4, 1)]
    losses = gaussian_view_losses(view.noise_map[rows], view.data_map[rows][:, 1:])
    np.testing.assert_allclose([x.renyi(2.0) for x in losses], [0.75, 0.75, 0.75, 0.75, 0.0], atol=1e-9)


@pytest.mark.parametrize("timing", [Lockstep(missing="renormalize"), Deadline(period=1.0, deadline=0.5, jitter=0.2), Async(rate=1.0)],
                         ids=["lockstep", "deadline", "async"])
def test_node_observer_under_every_timing_with_loss(timing):
    sc = _scenario(nx.cycle_graph(5), 5, gamma=1.3, static=False, timing=timing, loss=0.3, seed=3)
    res = sc.run()
    assert res.messages_lost > 0
    assert verify_affine(res, sc).ok
    sched = linear_schedule(res, sc)
    # the linear model reproduces every released message of the run (noise recovered from round 1)
    d, nmap, msgs = message_maps(sched)
    data = np.asarray(sc.problem.costs.addresses)[:, 0]
    xi = (res.messages["y"][0, :, 0] - data) / sc.algorithm.sigma
    pred = d @ data + nmap @ np.concatenate([xi] * 1)
    if sched.horizon == res.schedule.horizon:
        index = {m: i for i, m in enumerate(msgs)}
        got = [pred[index[(t, j)]] for t in range(1, 6) for j in range(5)]
    else:
        _, release = _global_steps(5, 5, res.times)
        index = {m: i for i, m in enumerate(msgs)}
        got = [pred[index[(int(release[t - 1, j]), j)]] for t in range(1, 6) for j in range(5)]
    np.testing.assert_allclose(got, res.messages["y"][:, :, 0].ravel(), atol=1e-9)
    fig = pairwise_figures(sc, "node:2")
    assert math.isinf(fig.rows[2].renyi)
    others = [r.renyi for r in fig.rows if r.source != 2]
    assert all(0.0 <= x <= 1.0 + 1e-9 for x in others)  # never above the local release's divergence
    # the transcript view holds exactly the messages delivered to node 2 from others (every copy that was not
    # lost: combined, late or superseded), among them every message it combined
    view = observed_transcript(res, "node:2")
    df = res.transcript.to_dataframe()
    got = df[(df.receiver == 2) & (df.sender != 2) & ~df.lost.astype(bool)]
    expected = np.zeros((5, 5), dtype=bool)
    expected[got["round"].to_numpy(dtype=int) - 1, got["sender"].to_numpy(dtype=int)] = True
    np.testing.assert_array_equal(view.seen, expected)
    rs = res.schedule
    sel = (np.asarray(rs.receiver) == 2) & (np.asarray(rs.sender) != 2)
    assert view.seen[np.asarray(rs.sender_round)[sel] - 1, np.asarray(rs.sender)[sel]].all()
    assert np.isnan(view.messages[~view.seen]).all() and not np.isnan(view.messages[view.seen]).any()


def test_verify_affine_rejects_a_rule_that_is_not_affine():
    class Clipped(Muffliato):
        def message(self, state, t, noise, agents, problem):  # clipping the noisy value (the authors' code)
            out = super().message(state, t, noise, agents, problem)
            return {"y": np.clip(out["y"], 0.0, 1.0)}

    sc = _scenario(nx.path_graph(4), 4)
    sc = replace(sc, algorithm=Clipped(sigma=1.0))
    check = verify_affine(sc.run(), sc)
    assert not check.ok and "round 1" in check.reason
    fig = pairwise_figures(sc, "node:0")
    assert {r.kind for r in fig.rows} == {"upper bound"}
    # the upper bound's epsilon is its zCDP conversion at delta, not nan ("eps=nan [upper bound]" in the report);
    # the observer's own datum stays infinite
    for r in fig.rows:
        if r.source == 0:
            assert r.renyi == r.epsilon == math.inf
        else:
            # the bound is alpha * rho at every order alpha (rho-zCDP): epsilon is rho-zCDP's at delta, which is
            # below the order-alpha RDP conversion
            rho = r.renyi / fig.alpha
            assert rho > 0 and r.epsilon == ZeroConcentratedDP(rho).epsilon_at(fig.delta)
            assert r.renyi < r.epsilon <= rdp_to_dp(fig.alpha, r.renyi, fig.delta)
    assert "nan" not in fig.to_table()


def test_bad_observers_are_clear_errors():
    with pytest.raises(ScenarioError, match="agent 9 does not exist"):
        parse_observer("node:9", 6)
    with pytest.raises(ScenarioError, match="observer 'nobody'"):
        parse_observer("nobody")


def _small_graphs():
    return st.sampled_from([nx.path_graph(4), nx.cycle_graph(5), nx.star_graph(4), nx.complete_graph(4)])


@settings(max_examples=8, deadline=None)
@given(graph=_small_graphs(), horizon=st.integers(2, 4), gamma=st.sampled_from([1.0, 1.4]),
       seed=st.integers(0, 100), asynchronous=st.booleans())
def test_observer_never_above_full_view_and_colluders_never_lower(graph, horizon, gamma, seed, asynchronous):
    sc = _scenario(graph, horizon, gamma=gamma, seed=seed, timing=Async(rate=1.0) if asynchronous else None,
                   loss=0.2 if asynchronous else 0.0)
    n = graph.number_of_nodes()
    eav_fig = pairwise_figures(sc, "eavesdropper", seed=seed)
    assert eav_fig.affine.ok, eav_fig.affine.reason  # exact figures, not the fallback bound
    eav = [r.renyi for r in eav_fig.rows]
    for v in range(n):
        node = [r.renyi for r in pairwise_figures(sc, f"node:{v}", seed=seed).rows]
        w = (v + 1) % n
        pair = [r.renyi for r in pairwise_figures(sc, f"nodes:{v},{w}", seed=seed).rows]
        for u in range(n):
            if u in (v, w):
                continue
            assert node[u] <= eav[u] + 1e-7
            assert pair[u] >= node[u] - 1e-7


def test_star_centre_sees_every_message_and_equals_the_eavesdropper():
    sc = _scenario(nx.star_graph(4), 3, gamma=1.0)
    eav = [r.renyi for r in pairwise_figures(sc, "eavesdropper").rows]
    centre = [r.renyi for r in pairwise_figures(sc, "node:0").rows]
    np.testing.assert_allclose(centre[1:], eav[1:], atol=1e-9)
    assert eav[1:] == pytest.approx([1.0] * 4)


def test_observer_blackbox_lower_bound_refutes_a_false_claim_and_respects_a_true_one():
    from asyncdp.privacy.observers import observer_blackbox

    sc = replace(_scenario(nx.path_graph(4), 2), algorithm=Muffliato(sigma=0.05))
    values = np.array(sc.problem.costs.addresses)
    values[0] = 1.0 - values[0] if abs(1.0 - 2 * values[0, 0]) > 0.5 else (values[0] + 0.9) % 1.0
    adj = replace(sc, problem=Problem(sc.problem.domain, RendezvousQuadratic(values)))
    # node 1 receives agent 0's raw release: sigma 0.05 against a change > 0.5 is far from 0.5-DP
    false_claim = observer_blackbox(sc, adj, "node:1", runs=100, epsilon=0.5, delta=1e-6)
    assert false_claim.violation and false_claim.epsilon_lower_bound > 0.5
    # in 2 rounds node 3 hears x~_2 and (W x~)_2, which involve agents 1..3 only: nothing about agent 0
    assert pairwise_figures(sc, "node:3", sources=[0]).rows[0].renyi == 0.0
    far = observer_blackbox(sc, adj, "node:3", runs=100, epsilon=0.5, delta=1e-6)
    assert not far.violation


def test_a_broadcast_view_costs_one_flag_per_message_not_per_link():
    # the unicast fix kept a (T, N, N) mask of copies for broadcast runs too: 80 MB for 2000 agents and 20 rounds
    # (10 GB at 10^4 agents and 100 rounds) to filter messages of 40 KB
    import tracemalloc
    from types import SimpleNamespace

    n, horizon = 2000, 20
    rounds = np.repeat(np.arange(1, horizon + 1), n)
    senders = np.tile(np.arange(n), horizon)
    schedule = SimpleNamespace(num_agents=n, horizon=horizon, sender_round=rounds, sender=senders,
                               receiver=(senders + 1) % n)  # a directed ring: i -> i + 1
    run = SimpleNamespace(schedule=schedule, messages={"y": np.ones((horizon, n, 1))}, transcript=None)
    tracemalloc.start()
    try:
        view = observed_transcript(run, "node:5")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20
    assert view.seen[:, 4].all() and view.seen.sum() == horizon
    assert np.isnan(view.messages[:, 3]).all() and (view.messages[:, 4] == 1).all()
