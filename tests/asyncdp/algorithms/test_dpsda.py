"""DPSDA-C and DPSDA-PS (Cheng, Liao and Li, arXiv 2022): equations, push-sum identities, regret, audits and privacy verdicts."""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import topology
from accounting.papers import dpsda as S
from accounting.errors import AdjacencyError
from accounting.replay import replay_loss
from asyncdp import Async, Box, Deadline, InjectedNoise, LinkModel, Links, Scenario
from asyncdp.papers.dpsda.rule import DPSDAC, DPSDAPS, GRADIENT_NOISE_KEY, prox
from asyncdp.problems.costs import FunctionClass, RendezvousQuadratic
from asyncdp.errors import AlgorithmParameterError, HorizonError, ProblemError, ScenarioError
from asyncdp.engine.links import ExponentialLatency
from asyncdp.problems.online import (BatchLoss, UserOnlineLoss, adjacent_online_problem, node_blocks, online_problem,
                            synthetic_olr)
from asyncdp.privacy import check_privacy, find_changed_round, replay_rule, replay_setup, transcript_array
from asyncdp.papers.dpsda import privacy as adapter_c
from asyncdp.problems.problem import Problem
from asyncdp.experiments.regret import comparator_values, played_decisions, regret_curve, running_average
from asyncdp.papers import assumption_set

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
EPS = np.finfo(float).eps
N, D, T = 7, 14, 12
C_GRAPH = topology.cheng2022_fig2_sequence(directed=False)  # Metropolis weights
PS_GRAPH = topology.cheng2022_fig2_sequence(directed=True)  # column-stochastic


def _problem(seed=0, box=1.0, horizon=T):
    loss, dom = synthetic_olr(num_nodes=N, dim=D, num_rounds=horizon, seed=seed, box=box)
    return online_problem(loss, dom)


def _xi(seed, t, i, size, std):
    """The documented gradient-noise stream: SeedSequence(xi_seed, spawn_key=(4, t, i)), d_i standard normals."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(GRADIENT_NOISE_KEY, t, i)))
    return std * rng.standard_normal(size)


def _paper(push_sum, problem, graph, eta, sigma, l_hat, xi_seed, xi_std, horizon):
    """Algorithms 1 and 2 written directly from eqs. (11)-(13) and (20)-(22), in numpy.

    Engine round t = paper iteration t - 1: h = z + sigma eta (11); u_i = clip(d f_t/dx_{S_i}(y_i) + xi_i)
    (14, clipped); z = N delta_i u_i + W h (12)/(20); w = A w (21); y = clip(-(z / w) / sqrt(t), lo, hi)
    (7 with psi = |x|^2/2, alpha(t) = 1/sqrt(t)).
    """
    loss, lo, hi = problem.costs, problem.domain.low, problem.domain.high
    blocks = node_blocks(D, N)
    z, w = np.zeros((N, D)), np.ones(N)
    y = np.clip(np.zeros((N, D)), lo, hi)
    ys, hs, ws = [y], [], []
    for t in range(1, horizon + 1):
        h = z + sigma * eta[t - 1]
        hs.append(h)
        ws.append(w.copy())
        a, b = loss.features[t - 1], loss.labels[t - 1]
        grad = -2.0 * ((b[None, :] - y @ a.T) @ a) / a.shape[0]  # least squares, mean over the batch
        u = np.zeros((N, D))
        for i, s in enumerate(blocks):
            u[i, s] = np.clip(grad[i, s] + _xi(xi_seed, t, i, len(s), xi_std), -l_hat, l_hat)
        mix = graph.dense(t)
        z = N * u + mix @ h
        if push_sum:
            w = mix @ w
            y = np.clip(-(z / w[:, None]) / math.sqrt(t), lo, hi)
        else:
            y = np.clip(-z / math.sqrt(t), lo, hi)
        ys.append(y)
    return np.array(ys), np.array(hs), np.array(ws)


# ---------------------------------------------------------------------------- the rules vs the paper
@pytest.mark.parametrize("cls, graph, push_sum", [(DPSDAC, C_GRAPH, False), (DPSDAPS, PS_GRAPH, True)])
def test_rule_matches_the_papers_equations_on_injected_noise(cls, graph, push_sum):
    problem = _problem()
    xi_std = 3.0  # large enough that clipping at L_hat bites in some rounds
    # a small L_hat keeps |z| <= N L_hat T + |noise| ~ 25, so that round-off stays far below 1e-12
    alg = cls(epsilon=1e4, gradient_noise_std=xi_std, xi_seed=5, L_hat=0.25)
    eta = np.random.default_rng(1).laplace(size=(T, N, D))
    sc = Scenario(problem, graph, alg, horizon=T, seed=2, noise=InjectedNoise(broadcast={0: eta}))
    # sigma = Delta_net / epsilon with Delta_net = sum_i 2 N L_hat d_i (coordinate clipping)
    sigma = 2 * N * 0.25 * D / 1e4
    ys, hs, ws = _paper(push_sum, problem, graph, eta, sigma, 0.25, 5, xi_std, T)
    simpy = sc.run()
    batch = sc.replace(noise=InjectedNoise(broadcast={0: eta[:, None]})).run(engine="batch", transcripts=True)
    # The engines and the direct code differ only in summation order. Each z entry is a sum of at most N + 1 terms
    # bounded by max|h|, so the discrepancy is below (N + 1) * eps * max|h| per round, times T rounds:
    tol = (N + 1) * T * EPS * max(1.0, float(np.abs(hs).max()))
    assert tol <= 1e-12
    assert np.abs(simpy.trajectory - ys).max() <= 1e-12
    assert np.abs(batch.trajectory[0] - ys).max() <= 1e-12
    assert np.abs(batch.messages["h"][0] - hs).max() <= tol
    if push_sum:
        assert np.abs(batch.messages["w"][0, :, :, 0] - ws).max() <= 1e-12
    # clipping was active somewhere: the unclipped run differs
    unclipped = sc.replace(algorithm=cls(epsilon=1e4, gradient_noise_std=xi_std, xi_seed=5, L_hat=0.25, clip=False))
    assert np.abs(unclipped.run().trajectory - ys).max() > 1e-3
    # the ledger: one release per node and round; round 1 masks z(1) = 0 (sensitivity 0)
    assert len(simpy.ledger) == N * T
    rel = sorted(simpy.ledger, key=lambda r: (r.round, r.agent))
    assert rel[0].claimed_sensitivity == 0 and rel[-1].claimed_sensitivity == pytest.approx(2 * N * 0.25 * D)
    assert rel[-1].scale == pytest.approx(sigma, rel=1e-15)


def _drive(alg, problem, graph, horizon, sigma_eta=None, state=None):
    """Lockstep rounds calling the rule directly (dense mixing). Returns the states before each round and the u's."""
    alg = alg.bind(problem)
    agents = np.arange(N)
    st = alg.initial_state(np.zeros((N, D)), agents, problem) if state is None else state
    states, us = [st], []
    for t in range(1, horizon + 1):
        noise = {"h": np.zeros((N, D)) if sigma_eta is None else sigma_eta[t - 1] / max(alg.noise_scale(t), 1e-300)}
        msgs = alg.message(st, t, noise, agents, problem)
        us.append(alg.local_signal(st["y"], t, agents, problem))
        mix = graph.dense(t)
        st = alg.update(st, {k: mix @ v for k, v in msgs.items()}, t, agents, problem)
        states.append(st)
    return states, us


def test_push_sum_weights_sum_to_n_and_ratios_reach_the_average():
    problem = _problem()
    states, _ = _drive(DPSDAPS(epsilon=1.0), problem, PS_GRAPH, T)
    # column-stochastic A: 1^T w(t+1) = 1^T A w(t) = 1^T w(t) = N; each step rounds off by at most N eps
    for st in states:
        assert abs(st["w"].sum() - N) <= 1e-12
        assert (st["w"] > 0).all()
    # no noise, no input: z_i / w_i -> the average of z(1). A zero loss gives u = 0.
    zero = UserOnlineLoss(lambda t, x: 0.0, lambda t, x: np.zeros(D), FunctionClass(gradient_bound=1.0),
                          dim=D, num_rounds=400, num_nodes=N)
    p0 = online_problem(zero, Box(-1.0, 1.0, dim=D))
    z0 = np.random.default_rng(3).normal(size=(N, D))
    alg = DPSDAPS(epsilon=math.inf).bind(p0)
    st = {"z": z0, "y": np.zeros((N, D)), "w": np.ones((N, 1))}
    errs = []
    for t in range(1, 401):
        msgs = alg.message(st, t, {"h": np.zeros((N, D))}, np.arange(N), p0)
        st = alg.update(st, {k: PS_GRAPH.dense(t) @ v for k, v in msgs.items()}, t, np.arange(N), p0)
        errs.append(np.abs(st["z"] / st["w"] - z0.mean(axis=0)).max())
    # geometric convergence; the audit's empirical average rate of this sequence is about 0.91 per round,
    # so after 400 rounds the error is below 0.91**400 * |z0| ~ 1e-16 * |z0| (up to round-off)
    assert errs[-1] <= 1e-12 and errs[99] < errs[9] < errs[0]
    assert abs(st["w"].sum() - N) <= 1e-12


@pytest.mark.parametrize("cls, graph", [(DPSDAC, C_GRAPH), (DPSDAPS, PS_GRAPH)])
def test_average_dynamics_eq16_and_eq26_hold_exactly(cls, graph):
    """zbar(t+1) = zbar(t) + (1/N) sum_i sigma eta_i(t) + sum_i u_i(t)   (16),
    and its sum zbar(t) = (1/N) sum_{s<t} sum_i sigma eta_i(s) + sum_{s<t} sum_i u_i(s)   (26).

    Each u_i is supported on S_i, so sum_i u_i is the paper's stacked u(t). The identity needs column sums
    1^T W = 1^T (Metropolis: doubly stochastic; push-sum: column-stochastic).
    """
    problem = _problem(box=5.0)
    alg = cls(epsilon=0.5, gradient_noise_std=math.sqrt(0.1))
    noise = alg.bind(problem).noise_scale(1) * np.random.default_rng(4).laplace(size=(T, N, D))
    states, us = _drive(alg, problem, graph, T, sigma_eta=noise)
    zbar = np.array([st["z"].mean(axis=0) for st in states])
    scale = max(1.0, float(np.abs(zbar).max()), float(np.abs(noise).max()))
    # tolerance: each step adds rounding of N terms of size <= scale; over T steps about N T eps scale << 1e-10
    for t in range(T):
        step = zbar[t] + noise[t].mean(axis=0) + us[t].sum(axis=0)
        assert np.abs(zbar[t + 1] - step).max() <= 1e-10 * scale
    closed = np.cumsum(noise.mean(axis=1) + np.array(us).sum(axis=1), axis=0)
    assert np.abs(zbar[1:] - closed).max() <= 1e-10 * scale


def _irregular_row_weights():
    """The paper's 1/deg_i weights on an irregular graph (a star plus a path): not symmetric, not doubly stochastic."""
    g = nx.star_graph(3)
    g.add_edges_from([(3, 4), (4, 5), (5, 6)])
    return topology.from_networkx([g], "row-stochastic", periodic=True)


def test_row_weights_1_over_deg_break_eq16_and_the_audit_says_why():
    graph = _irregular_row_weights()
    problem = _problem(box=5.0)
    states, us = _drive(DPSDAC(epsilon=math.inf), problem, graph, T)
    zbar = np.array([st["z"].mean(axis=0) for st in states])
    gaps = [np.abs(zbar[t + 1] - zbar[t] - us[t].sum(axis=0)).max() for t in range(T)]
    assert max(gaps) > 1e-3  # the average is not preserved: consensus drifts to the left Perron vector
    report = topology.audit(graph, assumption_set("dpsda-c"), horizon=8)
    holds = {a.name: a.holds for a in report.assumptions}
    assert holds["symmetric"] is False and holds["doubly_stochastic"] is False
    # on the Fig. 2 stand-in every round is a matching, so 1/deg_i coincides with Metropolis there
    fig2_row = topology.cheng2022_fig2_sequence(rule="row-stochastic", directed=False)
    assert all(np.array_equal(fig2_row.dense(t), C_GRAPH.dense(t)) for t in range(1, 5))


def test_audit_of_the_example_topologies():
    c = topology.audit(DPSDAC.example_scenario().topology, assumption_set("dpsda-c"), horizon=40)
    holds = {a.name: a.holds for a in c.assumptions}
    assert holds["symmetric"] and holds["doubly_stochastic"] and holds["nonnegative"] and holds["min_weight_phi"]
    # every snapshot of the stand-in is disconnected: Lemma 3's per-round bound does not apply literally
    assert holds["connected_each_round"] is False
    ps = topology.audit(DPSDAPS.example_scenario().topology, assumption_set("dpsda-ps"), horizon=40)
    assert ps.all_hold and ps.constants["B"] == 4 and ps.constants["beta"] == 2.0
    assert ps.constants["gamma"] == pytest.approx(topology.push_sum_gamma(PS_GRAPH, horizon=40))
    assert 0 < ps.constants["gamma"] <= 1 and ps.constants["one_minus_lambda"] > 0


# ---------------------------------------------------------------------------- engines and timing
@pytest.mark.parametrize("cls", [DPSDAC, DPSDAPS])
def test_seeded_batch_run_is_the_simpy_run_and_async_timings_run(cls):
    sc = cls.example_scenario(seed=4)
    assert np.array_equal(sc.run(engine="batch").trajectory[0], sc.run().trajectory)
    lo, hi = sc.problem.domain.low, sc.problem.domain.high
    slow = Links(LinkModel(latency=ExponentialLatency(0.5)))
    for timing in (Deadline(), Async()):
        res = sc.replace(timing=timing, links=slow).run()
        assert np.isfinite(res.trajectory).all() and ((res.trajectory >= lo) & (res.trajectory <= hi)).all()
        assert len(res.ledger) == N * sc.horizon
        assert res.staleness.max() >= 1 or not res.realized_doubly_stochastic()  # some messages were late


def test_gradient_noise_is_the_documented_stream_and_common_to_all_runs():
    problem = _problem()
    alg = DPSDAC(epsilon=1.0, gradient_noise_std=0.5, xi_seed=9).bind(problem)
    got = alg.gradient_noise(3, np.arange(N), problem)
    for i, s in enumerate(problem.costs.blocks):
        assert np.array_equal(got[i, s], _xi(9, 3, i, len(s), 0.5))
        assert not got[i, np.setdiff1d(np.arange(D), s)].any()
    assert np.array_equal(alg.gradient_noise(3, 2, problem), got[2])  # the SimPy call (one agent) agrees
    res = DPSDAC.example_scenario().run(engine="batch", runs=3)
    assert not np.array_equal(res.trajectory[0], res.trajectory[1])  # runs differ (privacy noise)


@pytest.mark.parametrize("norm", ["coordinate", "l2"])
def test_clipping_makes_the_sensitivity_deterministic(norm):
    """|u_i(f) - u_i(f')| stays within Lemma 1's 2 L_hat per coordinate (or 2 L_hat in block norm) for any xi."""
    loss, box = synthetic_olr(num_nodes=N, dim=D, num_rounds=T, seed=0, box=5.0)
    loose = FunctionClass(gradient_bound=1e4, smoothness=1e3)  # declared loosely so the extreme round 3 stays in class
    problem = online_problem(loss, box, loose)
    other = adjacent_online_problem(problem, 3, features=-10 * problem.costs.features[2], labels=[50.0])
    alg = DPSDAC(epsilon=1.0, L_hat=0.7, gradient_noise_std=20.0, clip_norm=norm)
    a, b = alg.bind(problem), alg.bind(other)
    y = problem.domain.sample(np.random.default_rng(0), (50, N))
    du = a.local_signal(y, 3, np.arange(N), problem) - b.local_signal(y, 3, np.arange(N), other)
    if norm == "coordinate":
        assert np.abs(du).max() <= 2 * 0.7 + 1e-12
    else:
        assert np.linalg.norm(du, axis=-1).max() <= 2 * 0.7 + 1e-12
    assert np.abs(du).max() > 0.7  # the bound is approached, the check is not vacuous


# ---------------------------------------------------------------------------- regret
def test_regret_by_hand():
    """N = 2 nodes, d = 2, T = 2, least squares with one sample per round; X = [-1, 1]^2.

    f_1(x) = (1 - x_1)^2, f_2(x) = (2 - x_2)^2. The best fixed decision is (1, 1) with total loss 0 + 1 = 1.
    Trajectory rows (estimates before rounds 1, 2, and after 2): node 0 holds (0, 9), (0.5, 9), ...;
    node 1 holds (9, 0), (9, 1), ...; played x(1) = (0, 0), x(2) = (0.5, 1).
    Losses: f_1(x(1)) = 1, f_2(x(2)) = 1; R(1) = 1 - 0, R(2) = 2 - 1 = 1.
    Running average: x~(1) = (0, 0), x~(2) = (0.25, 0.5): f_2 = 2.25; R~(2) = 1 + 2.25 - 1 = 2.25.
    """
    loss = BatchLoss("least-squares", [[[1.0, 0.0]], [[0.0, 1.0]]], [[1.0], [2.0]], num_nodes=2)
    problem = online_problem(loss, Box(-1.0, 1.0, dim=2))
    traj = np.array([[[0.0, 9.0], [9.0, 0.0]], [[0.5, 9.0], [9.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]]])
    assert played_decisions(traj, loss).tolist() == [[0.0, 0.0], [0.5, 1.0]]
    assert running_average(played_decisions(traj, loss)).tolist() == [[0.0, 0.0], [0.25, 0.5]]
    values, points = comparator_values(problem, 2)
    assert np.allclose(values, [0.0, 1.0], atol=1e-12) and np.allclose(points[-1], [1.0, 1.0], atol=1e-12)
    curve = regret_curve(traj, problem)
    assert np.allclose(curve.losses, [1.0, 1.0]) and np.allclose(curve.regret, [1.0, 1.0], atol=1e-12)
    assert np.allclose(curve.per_round, [1.0, 0.5], atol=1e-12)
    run_avg = regret_curve(traj, problem, running=True)
    assert np.allclose(run_avg.regret, [1.0, 2.25], atol=1e-12)
    # batches of runs: leading axes are runs; mean() is the pseudo-regret estimate
    both = regret_curve(np.stack([traj, traj]), problem)
    assert both.regret.shape == (2, 2) and np.allclose(both.mean().regret, curve.regret)


@pytest.mark.parametrize("kind", ["least-squares", "logistic", "hinge"])
def test_comparator_is_the_constrained_minimizer(kind):
    rng = np.random.default_rng(5)
    a = rng.normal(size=(8, 4, 3))
    b = rng.normal(size=(8, 4)) if kind == "least-squares" else np.sign(rng.normal(size=(8, 4)))
    loss = BatchLoss(kind, a, b, num_nodes=3)
    box = Box(-0.3, 0.3, dim=3)
    x = loss.best_fixed(box, 5)
    f = loss.cumulative_value(x, 5)
    # no feasible point does better: dense random search around x and the box's vertices
    cand = np.clip(x + 0.05 * rng.normal(size=(4000, 3)), -0.3, 0.3)
    cand = np.vstack([cand, box.extreme_points()])
    assert f <= loss.cumulative_value(cand, 5).min() + 1e-9
    # first-order optimality: the projected gradient step does not move x (hinge: skip, nonsmooth)
    if kind != "hinge":
        g = loss.cumulative_gradient(x, 5)
        assert np.abs(box.project(x - 1e-3 * g) - x).max() <= 1e-8


def test_regret_decreases_per_round_without_noise():
    problem = _problem(box=5.0, horizon=200)
    sc = Scenario(problem, C_GRAPH, DPSDAC(epsilon=math.inf), horizon=200)
    curve = regret_curve(sc.run(engine="batch"), problem, comparator="final").mean()
    # R(T)/T rises during the first rounds (y starts at 0, far from the comparator), then decays
    assert curve.per_round[-1] < curve.per_round[49] < curve.per_round[19]


# ---------------------------------------------------------------------------- privacy
def _pair(**params):
    return runpy.run_path(str(EXAMPLES / "privacy_check_dpsda.py"))["build"]


@pytest.mark.parametrize("name", ["dpsda-c", "dpsda-ps"])
def test_privacy_check_passes_clipped_network_claim_and_flags_the_papers(name):
    build = _pair()
    sc, adj = build(name, clip=True, level="network")
    report = check_privacy(sc, adj, runs=1000)
    assert report.verdict == "pass" and report.witness is None
    assert report.changed_round == 2 and report.changed_agent is None
    # network level: every node's releases composed together, T - 1 charged rounds of epsilon each
    assert report.epsilon_ledger == pytest.approx((sc.horizon - 1) * sc.algorithm.epsilon, rel=1e-12)
    assert report.replay_max_loss <= report.epsilon_claimed
    sc, adj = build(name, clip=False, level="node")
    report = check_privacy(sc, adj, runs=1000)
    assert report.verdict == "violation" and report.witness["kind"] == "sensitivity"
    # the stacked change is N |grad f_2 - grad f_2'|_1 = N * 4 |b| |a|_1 = 7 * 4 * 7, above the claimed 2 N L
    assert report.witness["value"] == pytest.approx(N * 4 * 7, rel=1e-12)
    assert report.witness["claimed"] == pytest.approx(2 * N * sc.problem.constants.gradient_bound, rel=1e-12)
    assert report.epsilon_ledger == pytest.approx(N * (sc.horizon - 1) * sc.algorithm.epsilon, rel=1e-12)
    assert "VIOLATED" in report.theorem


def test_example_scripts_give_the_documented_verdicts(capsys):
    assert runpy.run_path(str(EXAMPLES / "privacy_check_dpsda.py"))["main"]()["verdict"] == "pass"
    assert runpy.run_path(str(EXAMPLES / "privacy_check_dpsda_paper.py"))["main"]()["verdict"] == "violation"
    assert "changed_round" in capsys.readouterr().out


def test_push_sum_transcript_is_replayed_exactly_with_the_noise_free_channel():
    """All nodes' h messages plus the replayed w (mixed with the same A(t)) reproduce the run.

    The batch engine records every node's broadcast. A SimPy transcript holds only messages that some
    receiver got: on the Fig. 2 stand-in most nodes have no out-neighbour in a round.
    """
    build = _pair()
    sc, adj = build("dpsda-ps", clip=True, level="network")
    sc = sc.replace(algorithm=sc.algorithm.__class__(epsilon=1.0, gradient_noise_std=0.3, xi_seed=2))
    batch = sc.run(engine="batch", transcripts=True)
    result, y = batch.run(0), batch.messages["h"][0]
    assert np.isnan(transcript_array(sc.run(), channel="h")).any()  # SimPy: unobserved self terms
    rule, setup = replay_rule(sc), replay_setup(sc)
    x = rule.initial_state(1)
    for t in range(1, sc.horizon + 1):
        x = rule.next_state(x, np.einsum("ij,rjk->rik", setup.matrix(t).toarray(), y[t - 1][None]), t)
        assert np.abs(x[0] - result.trajectory[t]).max() <= 1e-12
    loss = replay_loss(y, setup, rule, replay_rule(adj.replace(algorithm=sc.algorithm)))
    assert np.isfinite(loss).all()


def test_independent_sensitivity_agrees_with_the_rule_and_the_accountant():
    sc = DPSDAC.example_scenario()
    alg = sc.algorithm.bind(sc.problem)
    net = adapter_c.network_sensitivity(sc)
    assert net[0] == 0 and np.allclose(net[1:], alg.sensitivity(), rtol=1e-14)  # two independent implementations
    assert net[1] == S.dpsda_network_sensitivity(n=N, L_hat=alg.L_hat, block_sizes=2)
    assert np.allclose(adapter_c.sensitivity(sc)[1:] * N, net[1:])  # equal blocks: N max_i Delta_i = Delta_net
    assert np.allclose(adapter_c.node_sensitivities(sc)[1:], 2 * N * alg.L_hat * 2)
    assert alg.claimed_privacy(sc.horizon) == (sc.horizon * 1.0, 0.0) and alg.claimed_privacy_per_round() == 1.0


def test_adjacency_of_loss_sequences():
    build = _pair()
    sc, adj = build("dpsda-c")
    assert find_changed_round(sc, adj) == 2
    with pytest.raises(AdjacencyError, match="same loss in every round"):
        find_changed_round(sc, sc)
    costs = adj.problem.costs
    two = adj.replace(problem=adjacent_online_problem(adj.problem, 4, features=costs.features[3],
                                                      labels=-costs.labels[3]))
    with pytest.raises(AdjacencyError, match=r"more than one round's loss: rounds \[2, 4\]"):
        find_changed_round(sc, two)
    with pytest.raises(AdjacencyError, match="differ in algorithm"):
        find_changed_round(sc, adj.replace(algorithm=DPSDAC(epsilon=2.0)))


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0.0}, "epsilon must be > 0, got 0.0"),
    ({"epsilon": 1.0, "L_hat": -1.0}, "L_hat must be positive and finite, got -1.0"),
    ({"epsilon": 1.0, "clip": "yes"}, "clip must be True or False, got 'yes'"),
    ({"epsilon": 1.0, "clip_norm": "l1"}, "clip_norm must be one of"),
    ({"epsilon": 1.0, "level": "agent"}, "level must be one of \\('node', 'network'\\), got 'agent'"),
    ({"epsilon": 1.0, "noise_constant": 0.0}, "noise_constant must be positive and finite, got 0.0"),
    ({"epsilon": 1.0, "gradient_noise_std": -0.1}, "gradient_noise_std must be finite and >= 0, got -0.1"),
    ({"epsilon": 1.0, "xi_seed": -1}, "xi_seed must be a nonnegative integer, got -1"),
    ({"epsilon": 1.0, "alpha0": math.inf}, "alpha0 must be positive and finite, got inf"),
])
def test_bad_parameters_raise(kwargs, match):
    for cls in (DPSDAC, DPSDAPS):
        with pytest.raises(AlgorithmParameterError, match=match):
            cls(**kwargs)


def test_bad_setups_raise():
    problem = _problem()
    with pytest.raises(HorizonError, match="horizon 13 exceeds the 12 rounds of the online loss sequence"):
        Scenario(problem, C_GRAPH, DPSDAC(epsilon=1.0), horizon=13)
    rendezvous = Problem(Box(-1.0, 1.0, dim=2), RendezvousQuadratic(np.zeros((7, 2))))
    with pytest.raises(AlgorithmParameterError, match="needs an online problem .* got RendezvousQuadratic"):
        DPSDAC(epsilon=1.0).bind(rendezvous)
    with pytest.raises(AlgorithmParameterError, match="call bind"):
        DPSDAPS(epsilon=1.0).noise(1, "h")
    with pytest.raises(AlgorithmParameterError, match="unknown channel 'x'"):
        DPSDAC(epsilon=1.0).bind(problem).noise(1, "x")
    assert DPSDAPS(epsilon=1.0).bind(problem).noise(1, "w") is None
    no_l = UserOnlineLoss(lambda t, x: 0.0, lambda t, x: np.zeros(D), FunctionClass(), dim=D, num_rounds=3,
                          num_nodes=N)
    with pytest.raises(AlgorithmParameterError, match="declares no gradient bound L; pass L_hat"):
        DPSDAC(epsilon=1.0).bind(online_problem(no_l, Box(-1.0, 1.0, dim=D)))
    with pytest.raises(ProblemError, match="num_nodes=8 exceeds dim=7"):
        node_blocks(7, 8)
    with pytest.raises(ProblemError, match="kind must be one of"):
        BatchLoss("huber", [[[1.0]]], [[1.0]], num_nodes=1)
    with pytest.raises(ProblemError, match=r"round 2: labels must have shape \(1,\)"):
        BatchLoss("logistic", [[[1.0]], [[1.0]]], [[1.0], [1.0, 2.0]], num_nodes=1)
    with pytest.raises(ProblemError, match=r"round_index must be an integer in \[1, 12\]"):
        problem.costs.gradient(0, np.zeros(D), round_index=13)
    with pytest.raises(ProblemError, match="not a cost per agent"):
        problem.adjacent(0)
    with pytest.raises(ScenarioError, match="keep='all'"):
        regret_curve(DPSDAC.example_scenario().run(engine="batch", keep="final"), problem)
    with pytest.raises(ScenarioError, match="comparator must be one of"):
        comparator_values(problem, 3, comparator="best")


def test_prox_is_the_clipped_negative_scaled_dual():
    box = Box(-1.0, 2.0, dim=3)
    z = np.array([4.0, -1.0, -10.0])
    assert prox(z, 0.5, box).tolist() == [-1.0, 0.5, 2.0]
    # it solves argmin <z, x> + |x|^2 / (2 alpha) over X (eq. 7 with psi = |x|^2/2): compare with a grid
    grid = np.stack(np.meshgrid(*[np.linspace(-1, 2, 61)] * 3), -1).reshape(-1, 3)
    obj = grid @ z + (grid**2).sum(-1) / (2 * 0.5)
    assert np.allclose(grid[np.argmin(obj)], prox(z, 0.5, box))


def test_unicast_with_an_agent_that_sends_to_nobody_is_refused_by_the_sensitivity():
    """In unicast a node without out-neighbours in a round keeps its noise-free dual state; it accumulates, so a
    later copy can move by more than the one round's bound charged per copy (Lemmas 1 and 4 assume every node's
    signal is released each round). The sensitivity refuses such a scenario, naming the round and the agent, as
    Huang 2015's, Wang-Basar's and Showkatbakhsh's do; broadcast, and unicast on a ring, are accepted."""
    sc = DPSDAC.example_scenario()
    n = sc.problem.num_agents
    eye = topology.static(np.eye(n), directed=False, description="no links")
    with pytest.raises(ScenarioError, match=r"round 1: agent 0 has no out-neighbour in unicast mode"):
        adapter_c.node_sensitivities(sc.replace(topology=eye, mode="unicast"))
    assert adapter_c.node_sensitivities(sc.replace(topology=eye)).shape == (sc.horizon, n)
    ring = topology.static(topology.metropolis(nx.cycle_graph(n)), directed=False, description="ring")
    assert adapter_c.node_sensitivities(sc.replace(topology=ring, mode="unicast")).shape == (sc.horizon, n)
