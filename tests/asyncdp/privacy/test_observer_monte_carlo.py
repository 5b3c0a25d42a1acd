"""The exact observer loss on an engine run's realized schedule agrees with a Monte-Carlo estimate from engine runs.

The exact side: :func:`asyncdp.privacy.linear_model.linear_schedule` of one run, and
:func:`accounting.network.pairwise_losses` for observer ``node:v`` and source ``u`` (``mu``, the Renyi
divergence ``alpha mu^2 / 2``), with every message delivered to ``v`` (combined or not: under asynchronous
timing a superseded copy is in ``v``'s view too, :func:`asyncdp.privacy.observer_views.delivered_messages`).

The Monte-Carlo side uses no model: ``m`` engine runs of the scenario (``u``'s value 0) and ``m`` of the
adjacent one (``u``'s value 1, a change by the domain's diameter), on the same seed (so the same clocks,
links and schedule) with fresh Gaussian noise injected per run, ``v``'s own noise fixed at 0 (``v`` knows
it: the loss is conditioned on it). The observed vector is what the transcript view shows ``v`` (every copy
delivered to it). Its two
laws are Gaussians with one covariance, whose rank ``r`` is read from the samples (the centred samples
span its range exactly). On that range, Hotelling's two-sample statistic

    T^2 = (m / 2) d^T S^-1 d     (d: difference of sample means, S: pooled sample covariance)

has an exact law: ``(2m - r - 1) / (r (2m - 2)) T^2`` is noncentral F with ``(r, 2m - r - 1)`` degrees of
freedom and noncentrality ``(m / 2) mu^2`` (Anderson, *An Introduction to Multivariate Statistical
Analysis*, 3rd ed., Thm. 5.2.2 for two samples). The Monte-Carlo divergence estimate
``alpha d^T S^-1 d / 2`` must therefore lie between the ``gamma/2`` and ``1 - gamma/2`` quantiles of that
law (mapped back), a tolerance derived from the sample size; a model that is wrong (a wrong mean shift,
covariance or view) moves the noncentrality and fails. Each example is a two-sided test at level
``gamma = 1e-3``; with at most 6 + 3 examples a false failure has probability below 1% (the noise is
seeded per example, and the examples are derandomized in every profile: a statistical test on fixed
draws). Lockstep runs use the batch engine (``m = 1000`` runs per side at once: every run has the seed's
schedule); asynchronous lossy runs use SimPy run by run on one seed (``m = 300``: the batch engine draws
each run's own clocks and losses). The tolerance shrinks like ``1 / sqrt(m)``: with these sizes a model
off by a factor 1.5 in the shift (2.25 in the divergence) fails on the 4-path under lockstep (node 3,
source 0; divergence about 0.95), while the small divergences of asynchronous lossy gossip (a few tenths)
are checked coarsely.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from accounting.network import Observer, pairwise_losses

from asyncdp.engine.timing import Async, Lockstep
from asyncdp.noise import InjectedNoise
from asyncdp.privacy.affine_check import verify_affine
from asyncdp.privacy.linear_model import linear_schedule
from asyncdp.privacy.observer_views import delivered_messages, observed_transcript

from .test_observers import _scenario

GAMMA = 1e-3
ALPHA = 2.0

GRAPHS = {"path4": lambda: nx.path_graph(4), "cycle4": lambda: nx.cycle_graph(4), "star4": lambda: nx.star_graph(3),
          "complete3": lambda: nx.complete_graph(3), "lollipop": lambda: nx.lollipop_graph(3, 1)}


def _with_value(sc, u: int, value: float):
    from dataclasses import replace

    from asyncdp.problems.costs import RendezvousQuadratic
    from asyncdp.problems.problem import Problem

    vals = np.array(sc.problem.costs.addresses, dtype=float)
    vals[u] = value
    return replace(sc, problem=Problem(sc.problem.domain, RendezvousQuadratic(vals)))


def _simpy_samples(sc, v: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``m`` SimPy runs on the scenario's seed (one schedule), fresh noise per run, ``v``'s own noise 0."""
    out, mask = [], None
    for _ in range(m):
        z = rng.standard_normal((sc.horizon, sc.problem.num_agents, 1))
        z[:, v] = 0.0
        view = observed_transcript(sc.replace(noise=InjectedNoise({0: z})).run(), f"node:{v}")
        assert mask is None or np.array_equal(view.seen, mask)  # one schedule for every run
        mask = view.seen
        out.append(view.messages[view.seen][:, 0])
    assert mask is not None
    return np.array(out), mask


def _batch_samples(sc, v: int, m: int, rng: np.random.Generator, seen: np.ndarray) -> np.ndarray:
    """``m`` runs of the batch engine at once (lockstep, lossless: every run has the seed's schedule)."""
    z = rng.standard_normal((sc.horizon, m, sc.problem.num_agents, 1))
    z[:, :, v] = 0.0
    batch = sc.replace(noise=InjectedNoise({0: z})).run(engine="batch", runs=m, transcripts=True)
    return np.asarray(batch.messages["y"])[:, seen][:, :, 0]


def _agreement(graph: nx.Graph, horizon: int, v: int, u: int, timing, loss: float, seed: int, m: int) -> None:
    n = graph.number_of_nodes()
    base = _scenario(graph, horizon, static=False, timing=timing, loss=loss, seed=seed)
    sc, adj = _with_value(base, u, 0.0), _with_value(base, u, 1.0)
    # exact side: one run's realized schedule (the rule verified affine on it)
    res = sc.run()
    assert verify_affine(res, sc).ok
    sched = linear_schedule(res, sc)
    exact = pairwise_losses(sched, Observer.node(v), [u], sensitivity=float(sc.problem.domain.diameter),
                            delivered=delivered_messages(res, Observer.node(v), sched))[u]
    assert exact.exact and np.isfinite(exact.mu)
    # Monte-Carlo side: engine runs, fresh noise, v's own noise fixed
    rng = np.random.default_rng([seed, v, u, horizon, n])
    if isinstance(timing, Lockstep) and loss == 0:
        seen = observed_transcript(res, f"node:{v}").seen
        a, b = _batch_samples(sc, v, m, rng, seen), _batch_samples(adj, v, m, rng, seen)
    else:
        (a, seen_a), (b, seen_b) = _simpy_samples(sc, v, m, rng), _simpy_samples(adj, v, m, rng)
        assert np.array_equal(seen_a, seen_b)
    centred = np.vstack([a - a.mean(axis=0), b - b.mean(axis=0)])
    if centred.shape[1] == 0:  # v received nothing from others on this schedule (all lost)
        assert exact.mu == 0 and exact.rank == 0
        np.testing.assert_array_equal(a, b)
        return
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    r = int((sv > 1e-9 * sv[0]).sum())
    assert r == exact.rank  # the samples' covariance has the model's rank
    pa, pb = a @ vt[:r].T, b @ vt[:r].T
    d = pb.mean(axis=0) - pa.mean(axis=0)
    pooled = (np.cov(pa, rowvar=False) * (m - 1) + np.cov(pb, rowvar=False) * (m - 1)) / (2 * m - 2)
    q2 = float(d @ np.linalg.solve(np.atleast_2d(pooled), d))
    estimate = ALPHA * q2 / 2  # the Monte-Carlo divergence
    scale = (2 * m - r - 1) / (r * (2 * m - 2)) * (m / 2)  # F = scale * q2
    law = stats.ncf(r, 2 * m - r - 1, (m / 2) * exact.mu**2)
    lo, hi = (ALPHA / 2 * law.ppf(p) / scale for p in (GAMMA / 2, 1 - GAMMA / 2))
    assert lo <= estimate <= hi, (exact.renyi(ALPHA), estimate, lo, hi, r)


_CASE = dict(graph=st.sampled_from(sorted(GRAPHS)), horizon=st.integers(3, 4), pick=st.integers(0, 10**6),
             seed=st.integers(0, 50))


def _pair(graph: nx.Graph, pick: int) -> tuple[int, int]:
    n = graph.number_of_nodes()
    v = pick % n
    u = (v + 1 + (pick // n) % (n - 1)) % n
    return v, u


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(**_CASE)
def test_exact_loss_agrees_with_monte_carlo_under_lockstep(graph, horizon, pick, seed):
    # statistical: a two-sided test at level GAMMA, false failure probability 1e-3 per example (draws fixed)
    g = GRAPHS[graph]()
    v, u = _pair(g, pick)
    _agreement(g, horizon, v, u, Lockstep(), 0.0, seed, m=1000)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(**_CASE)
def test_exact_loss_agrees_with_monte_carlo_under_async_with_loss(graph, horizon, pick, seed):
    # statistical: a two-sided test at level GAMMA, false failure probability 1e-3 per example (draws fixed)
    g = GRAPHS[graph]()
    v, u = _pair(g, pick)
    _agreement(g, horizon, v, u, Async(), 0.25, seed, m=300)


@pytest.mark.slow
@pytest.mark.parametrize("timing, loss", [(Lockstep(), 0.0), (Async(), 0.25)], ids=["lockstep", "async-lossy"])
def test_exact_loss_agrees_with_monte_carlo_on_a_3x3_grid(timing, loss):
    g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))
    for v, u in ((4, 0), (0, 8), (1, 7)):
        _agreement(g, 5, v, u, timing, loss, seed=2, m=400 if loss else 4000)
