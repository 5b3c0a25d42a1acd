"""Linear schedules and observers: hand-derived views, errors, and the Hypothesis properties.

Closed form (6-node path, synchronous gossip, T = 3 rounds, noise once).
Nodes 0-1-2-3-4-5; Metropolis weights put 1/3 on every edge, so
``W = tridiag(1/3, [2/3, 1/3, 1/3, 1/3, 1/3, 2/3], 1/3)``. Round 1 releases
``y(1) = x + sigma xi``; then ``x(t) = W y(t)`` and ``y(t + 1) = x(t)``, so the
messages of rounds 1, 2, 3 are ``W^0, W^1, W^2`` applied to ``x + sigma xi``.
Node 5's only neighbour is 4; it sees ``y_4(1), y_4(2), y_4(3)`` with rows

    e_4,  W[4, :] = (0, 0, 0, 1, 1, 1)/3,  W^2[4, :] = (0, 0, 1, 2, 3, 3)/9

(``W^2[4, :] = (W[3, :] + W[4, :] + W[5, :])/3``). Node 5 knows ``xi_5``, so
column 5 leaves the noise map; on columns 0..4 the rows are ``e_4``,
``(0, 0, 0, 1, 1)/3`` and ``(0, 0, 1, 2, 3)/9``, which span ``e_2, e_3, e_4``
(subtract ``e_4``, then ``e_3``). Source ``u`` shifts the mean by column ``u``
and ``D_alpha(u -> 5) = alpha / (2 sigma^2) ||P e_u||^2``: the full local
value ``alpha / (2 sigma^2)`` for ``u = 2, 3, 4`` and 0 for ``u = 0, 1``.

The link ``4-5`` (knowing no noise) sees ``y_4`` and ``y_5`` of the three
rounds; the data columns are the noise columns, ``e_4, e_5`` and ``W[4, :]``
give ``e_3``, ``W^2[4, :]`` gives ``e_2``: again 1 for ``u = 2..5`` (at
``alpha = 2``, ``sigma = 1``) and 0 for ``u = 0, 1``.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.errors import AccountingError
from accounting.network.observers import Observer, observed_view, pairwise_loss, pairwise_losses
from accounting.network.schedule import LinearSchedule, ScheduleError, message_maps
from topology.weights import metropolis


def _path6_schedule(sigma: float = 1.0) -> LinearSchedule:
    w = metropolis(nx.path_graph(6)).toarray()
    scale = np.zeros((3, 6))
    scale[0] = sigma
    return LinearSchedule.from_mixing([w] * 3, scale)


def test_path6_weights_are_the_ones_of_the_docstring():
    w = metropolis(nx.path_graph(6)).toarray()
    expected = np.diag([2 / 3, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 2 / 3]) + (np.eye(6, k=1) + np.eye(6, k=-1)) / 3
    np.testing.assert_allclose(w, expected, atol=1e-15)


@pytest.mark.parametrize("sigma", [1.0, 2.0])
def test_path6_node5_matches_the_closed_form(sigma):
    losses = pairwise_losses(_path6_schedule(sigma), Observer.node(5))
    full = 2.0 / (2 * sigma**2)  # alpha = 2
    expected = {0: 0.0, 1: 0.0, 2: full, 3: full, 4: full}
    for u, value in expected.items():
        assert losses[u].renyi(2.0) == pytest.approx(value, abs=1e-12), u
    assert math.isinf(losses[5].mu) and "holds agent 5" in losses[5].reason


def test_path6_node5_view_rows_are_the_hand_written_ones():
    view = observed_view(_path6_schedule(), Observer.node(5))
    assert view.messages == [(1, 4), (2, 4), (3, 4)]
    np.testing.assert_allclose(view.data_map, [[0, 0, 0, 0, 1, 0], [0, 0, 0, 1 / 3, 1 / 3, 1 / 3],
                                               [0, 0, 1 / 9, 2 / 9, 3 / 9, 3 / 9]], atol=1e-15)
    # xi_5 is known; xi_0 and xi_1 do not reach the view
    assert view.noise_ids == [(1, 2), (1, 3), (1, 4)]
    np.testing.assert_allclose(view.noise_map, view.data_map[:, 2:5], atol=1e-15)


def test_path6_link_matches_the_closed_form():
    losses = pairwise_losses(_path6_schedule(), Observer.parse("link:4,5"))
    assert [round(losses[u].renyi(2.0), 12) for u in range(6)] == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]


def test_stale_message_in_message_maps():
    # agent 0 combines in round 2 agent 1's round-1 message (stale): x_0(2) = y_1(1) = x_1 + xi_1(1)
    s = LinearSchedule(2, [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]], round=[1, 1, 2, 2], receiver=[0, 1, 0, 1],
                       sender=[0, 1, 1, 1], weight=[1.0, 1.0, 1.0, 1.0], sender_round=[1, 1, 1, 2])
    d, n, msgs = message_maps(s)
    row = msgs.index((3, 0))
    assert d[row].tolist() == [0.0, 1.0]
    assert n[row].tolist() == [0.0, 1.0, 0.0, 0.0]  # columns: xi_0(1), xi_1(1), xi_0(2), xi_1(2)


def test_noise_free_own_state_term():
    # x_0(1) = x_0 (own noise-free state, weight 1); agent 1 receives y_0(1) = x_0 + xi_0(1) and
    # y_0(2) = x_0(1) = x_0: the datum without noise
    s = LinearSchedule(2, [[1.0, 1.0], [0.0, 0.0]], [1, 2], [1, 1], [0, 0], [1.0, 1.0], [1, 2],
                       state_weight=[[1.0, 0.0], [0.0, 0.0]])
    d, n, msgs = message_maps(s)
    assert d[msgs.index((2, 0))].tolist() == [1.0, 0.0] and not n[msgs.index((2, 0))].any()
    assert math.isinf(pairwise_loss(s, Observer.node(1), 0).mu)  # x_0 is seen exactly: outside range(C)
    view = observed_view(s, Observer.node(1))
    np.testing.assert_allclose(view.data_map, d[[msgs.index(m) for m in view.messages]])


def test_schedule_errors_name_the_entry():
    with pytest.raises(ScheduleError, match="not released yet"):
        LinearSchedule(2, [[1.0, 1.0]] * 2, [1], [0], [1], [1.0], [2])
    with pytest.raises(ScheduleError, match="agent 1 in round 2"):
        LinearSchedule(2, [[1.0, 1.0], [1.0, -1.0]], [1], [0], [1], [1.0], [1])
    with pytest.raises(ScheduleError, match="receiver of entry 0"):
        LinearSchedule(2, [[1.0, 1.0]], [1], [5], [1], [1.0], [1])
    with pytest.raises(ScheduleError, match="weight of entry 0"):
        LinearSchedule(2, [[1.0, 1.0]], [1], [0], [1], [math.nan], [1])
    with pytest.raises(ScheduleError, match="noise_scale must have shape"):
        LinearSchedule(2, [1.0, 1.0], [1], [0], [1], [1.0], [1])
    with pytest.raises(ScheduleError, match="lag2 of round 1"):
        LinearSchedule.from_mixing([np.eye(2)], 1.0, lag2=[np.ones(2)])


def test_observer_parsing_and_errors():
    assert Observer.parse("node:3") == Observer("nodes", (3,))
    assert str(Observer.parse("nodes:4,2")) == "nodes:2,4"
    assert str(Observer.parse("link:1,0")) == "link:1,0"
    assert str(Observer.parse("eavesdropper")) == "eavesdropper"
    for bad in ["node:1,2", "link:1", "link:1,1", "nodes:a", "watcher", "eavesdropper:1"]:
        with pytest.raises(AccountingError):
            Observer.parse(bad)
    with pytest.raises(AccountingError, match="agent 9"):
        pairwise_loss(_path6_schedule(), Observer.node(9), 0)
    with pytest.raises(AccountingError, match="sensitivity"):
        pairwise_loss(_path6_schedule(), Observer.node(5), 0, sensitivity=0.0)


def test_sensitivity_scales_mu():
    s = _path6_schedule()
    assert pairwise_loss(s, Observer.node(5), 3, sensitivity=2.5).mu == pytest.approx(2.5)


# ----------------------------------------------------------------------------- Hypothesis properties
# Random realized schedules on small random connected graphs: each round, each receiver combines its own
# message and a random subset of its neighbours' messages (possibly of the previous round: stale), with
# random positive weights; random noise scales (some zero). Tolerances: 1e-9 absolute on divergences of
# order 1 (rounding of an SVD of a matrix of at most ~30 x 30).

TOL = 1e-9


@st.composite
def schedules(draw, complete: bool = False):
    n = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    g = nx.complete_graph(n) if complete else nx.connected_watts_strogatz_graph(n, 2, 0.5, seed=seed) \
        if n > 2 else nx.path_graph(n)
    horizon = draw(st.integers(1, 3))
    scale = rng.choice([0.0, 0.5, 1.0, 2.0], size=(horizon, n))
    scale[0] = rng.uniform(0.5, 2.0, size=n)  # noise in the first round
    rows: list[list[int]] = [[], [], [], [], []]
    for t in range(1, horizon + 1):
        for i in range(n):
            senders = [i] + [j for j in g.neighbors(i) if complete or rng.random() < 0.7]
            for j in senders:
                stale = (not complete) and t > 1 and rng.random() < 0.3
                for col, val in zip(rows, [t, i, j, rng.uniform(0.1, 1.0), t - 1 if stale else t]):
                    col.append(val)
    state = rng.choice([0.0, 0.0, 0.3], size=(horizon, n)) if not complete else None
    return LinearSchedule(n, scale, np.array(rows[0]), np.array(rows[1]), np.array(rows[2]),
                          np.array(rows[3], dtype=float), np.array(rows[4]), state)


@settings(max_examples=40)
@given(s=schedules(), data=st.data())
def test_no_observer_exceeds_the_eavesdropper(s, data):
    n = s.num_agents
    u = data.draw(st.integers(0, n - 1))
    eav = pairwise_loss(s, Observer("eavesdropper"), u).renyi(2.0)
    others = [a for a in range(n) if a != u]
    assume_set = data.draw(st.lists(st.sampled_from(others), min_size=1, unique=True)) if others else []
    observers = [Observer("nodes", tuple(assume_set))] if assume_set else []
    if n >= 2:
        a, b = data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
        observers.append(Observer("link", (a, b)))
    for obs in observers:
        assert pairwise_loss(s, obs, u).renyi(2.0) <= eav + TOL, str(obs)


@settings(max_examples=40)
@given(s=schedules(complete=True), data=st.data())
def test_a_node_that_sees_every_message_equals_the_eavesdropper(s, data):
    # complete graph, every receiver combines every message each round: node v sees all messages but its
    # own, which are functions of what it sees, its datum and its noise
    n = s.num_agents
    u, v = data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    eav = pairwise_loss(s, Observer("eavesdropper"), u).renyi(2.0)
    assert pairwise_loss(s, Observer.node(v), u).renyi(2.0) == pytest.approx(eav, abs=TOL)


@settings(max_examples=40)
@given(s=schedules(), data=st.data())
def test_adding_colluders_never_lowers_the_loss(s, data):
    n = s.num_agents
    u = data.draw(st.integers(0, n - 1))
    small = data.draw(st.lists(st.integers(0, n - 1), min_size=1, unique=True))
    extra = data.draw(st.lists(st.integers(0, n - 1), min_size=1, unique=True))
    big = sorted(set(small) | set(extra))
    d_small = pairwise_loss(s, Observer("nodes", tuple(small)), u).renyi(2.0)
    d_big = pairwise_loss(s, Observer("nodes", tuple(big)), u).renyi(2.0)
    assert d_big >= d_small - TOL


@settings(max_examples=15, derandomize=True)
@given(s=schedules(), data=st.data())
def test_node_loss_agrees_with_monte_carlo(s, data):
    # the privacy loss random variable of the observed view, computed from the view's densities (scipy's
    # multivariate normal, its own pseudo-inverse): its mean is KL = mu^2/2 and its standard deviation mu;
    # 4.9 standard errors is a two-sided 1e-6 level per example (statistical: the schedules are fixed too)
    from scipy import stats

    n = s.num_agents
    u, v = data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    view = observed_view(s, Observer.node(v))
    loss = pairwise_loss(s, Observer.node(v), u)
    if view.noise_map.shape[0] == 0:
        assert loss.mu == 0.0
        return
    rng = np.random.default_rng(12345)
    samples = 4000
    cov = view.noise_map @ view.noise_map.T
    y = rng.standard_normal((samples, view.noise_map.shape[1])) @ view.noise_map.T
    shift = view.data_map[:, u]
    if not loss.in_range:  # (a noise-free state reached the view) check with numpy's least squares
        coef = np.linalg.lstsq(view.noise_map, shift, rcond=None)[0]
        assert np.linalg.norm(view.noise_map @ coef - shift) > 1e-6 * np.linalg.norm(shift)
        return
    p = stats.multivariate_normal(np.zeros(len(shift)), cov, allow_singular=True)
    q = stats.multivariate_normal(shift, cov, allow_singular=True)
    plrv = np.atleast_1d(p.logpdf(y) - q.logpdf(y))
    assert abs(plrv.mean() - loss.kl()) <= 4.9 * loss.mu / math.sqrt(samples) + 1e-9


@settings(max_examples=40)
@given(s=schedules(), data=st.data())
def test_backward_view_equals_the_forward_message_maps(s, data):
    # two computations of the same rows: observed_view's backward pass and message_maps' forward recursion
    n = s.num_agents
    members = tuple(data.draw(st.lists(st.integers(0, n - 1), min_size=1, unique=True)))
    obs = data.draw(st.sampled_from([Observer("eavesdropper"), Observer("nodes", members)]))
    view = observed_view(s, obs)
    d, nz, msgs = message_maps(s)
    rows = [msgs.index(m) for m in view.messages]
    np.testing.assert_allclose(view.data_map, d[rows], atol=1e-12)
    noisy = [(int(t) + 1, int(j)) for t, j in np.argwhere(s.noise_scale > 0)]
    forward = nz[rows][:, [noisy.index(i) for i in view.noise_ids]]
    np.testing.assert_allclose(view.noise_map, forward, atol=1e-12)
    left_out = [c for c, i in enumerate(noisy) if i not in view.noise_ids]
    for c in left_out:  # known, or not reaching the view
        assert noisy[c][1] in view.knows_data or not np.any(nz[rows][:, c])


def test_schedule_averaged_renyi_over_two_schedules():
    # schedule A: node 1 combines agent 0's noisy datum (D_2 = 1); schedule B: it does not (D_2 = 0).
    # Equal weight: D_2 = log((e^1 + e^0) / 2) (the formula for a data-independent schedule the observer sees)
    from accounting.network.observers import schedule_averaged_renyi

    a = LinearSchedule.from_mixing([np.full((2, 2), 0.5)], noise_scale=1.0)
    b = LinearSchedule.from_mixing([np.eye(2)], noise_scale=1.0)
    combined, exact = schedule_averaged_renyi([a, b], Observer.node(1), 0, 2.0, d_max=1.0)
    assert exact and combined.samples == 2
    assert combined.estimate == pytest.approx(math.log((math.e + 1) / 2), rel=1e-12)
    assert combined.estimate <= combined.upper <= 1.0
    # a schedule that shows the datum without noise makes the combination infinite
    c = LinearSchedule(2, [[1.0, 1.0], [0.0, 0.0]], [1, 2], [1, 1], [0, 0], [1.0, 1.0], [1, 2],
                       state_weight=[[1.0, 0.0], [0.0, 0.0]])
    inf, _ = schedule_averaged_renyi([a, c], Observer.node(1), 0, 2.0, d_max=1.0)
    assert math.isinf(inf.estimate) and inf.bound == "infinite"
    with pytest.raises(AccountingError, match="no sampled schedules"):
        schedule_averaged_renyi([], Observer.node(1), 0, 2.0, d_max=1.0)
