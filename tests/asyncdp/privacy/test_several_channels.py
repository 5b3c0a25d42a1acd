"""A user's rule with two noisy channels and state beyond ``x``: its lemma per channel, the prober, the full check."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting import prober
from asyncdp import Scenario, rendezvous_problem
from asyncdp.algorithms import Algorithm, Channel, NoiseDeclaration
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import GradientClass, Paper, register, registered, unregister
from asyncdp.privacy import check_privacy, independent_sensitivity, update_pair

N_DIM = 2


@dataclass(frozen=True)
class TwoChannelGD(Algorithm):
    """Broadcasts ``y = x + Lap(b_y)`` and its last clipped gradient ``h = v + Lap(b_h)``; step ``alpha``.

    ``update`` reads ``state["w"]`` (a data-free weight, always 1, as push-sum weights are) besides ``x``: the
    prober must build the whole state.
    """

    alpha: float = 0.2
    clip: float = 1.0
    b_y: float = 4.0
    b_h: float = 30.0
    name: ClassVar[str] = "test-two-channel-gd"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"), Channel("h", "laplace"))

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        x = np.array(x0, dtype=float, copy=True)
        return {"x": x, "v": np.zeros_like(x), "w": np.ones(x.shape[:-1] + (1,))}

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        lemma = two_channel_lemma_values(self, t, N_DIM)
        return NoiseDeclaration("laplace", self.b_y if channel == "y" else self.b_h, N_DIM, lemma[channel])

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + self.b_y * noise["y"], "h": state["v"] + self.b_h * noise["h"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        w = state["w"]
        z = mixed["y"]
        v = clip_l2(problem.costs.gradient(agents, z, round_index=t), self.clip)
        return {"x": problem.domain.project(z - self.alpha * 0.5 * (v + mixed["h"]) * w), "v": v, "w": w}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return sum(two_channel_lemma_values(self, t, N_DIM)["y"] / self.b_y
                   + two_channel_lemma_values(self, t, N_DIM)["h"] / self.b_h for t in range(1, horizon + 1)), 0.0


def two_channel_lemma_values(alg: TwoChannelGD, t: int, n: int) -> dict[str, float]:
    """Release ``t`` (given every earlier release): ``y(t)`` masks ``x(t-1)``, moved by ``alpha`` times half the
    clipped-gradient change (``<= 2C`` in L2); ``h(t)`` masks ``v(t-1)`` (``<= 2C``). L1: times sqrt(n)."""
    if t == 1:
        return {"y": 0.0, "h": 0.0}
    return {"y": alg.alpha * alg.clip * math.sqrt(n), "h": 2 * alg.clip * math.sqrt(n)}


def two_channel_lemma(sc: Any) -> dict[str, np.ndarray]:
    vals = [two_channel_lemma_values(sc.algorithm, t, sc.problem.dim) for t in range(1, sc.horizon + 1)]
    return {c: np.array([v[c] for v in vals]) for c in ("y", "h")}


@pytest.fixture(scope="module")
def pair():
    paper = register(Paper("test-two-channel", (TwoChannelGD,), lemma=two_channel_lemma, reference="test",
                           adjacency=lambda sc: GradientClass(sc.algorithm.clip, "l1")), origin="test_several_channels")
    rng = np.random.default_rng(4)
    addresses = rng.uniform(-1, 1, size=(4, N_DIM))
    problem = rendezvous_problem(addresses, low=-4.0, high=4.0)
    sc = Scenario(problem, topology.static(np.full((4, 4), 0.25)), TwoChannelGD(), horizon=6, seed=2)
    yield sc, sc.replace(problem=problem.adjacent(0, address=-addresses[0])), paper
    if "test-two-channel" in registered():
        unregister("test-two-channel")


def test_independent_sensitivity_is_per_channel(pair):
    sc, _, _ = pair
    sens = independent_sensitivity(sc)
    assert set(sens) == {"y", "h"} and sens["y"][0] == sens["h"][0] == 0
    assert sens["h"][3] == pytest.approx(2 * math.sqrt(2))


def test_update_pair_builds_the_whole_state_and_probes_each_channel(pair):
    sc, adj, _ = pair
    with pytest.raises(ValueError, match=r"noisy channels \['y', 'h'\]; name the one to probe"):
        update_pair(sc, adj, 0, 1)
    for channel, bound in (("y", sc.algorithm.alpha * math.sqrt(2)), ("h", 2 * math.sqrt(2))):
        res = prober.probe_sensitivity(update_pair(sc, adj, 0, 1, channel), samples=100, seed=0, claimed=bound)
        assert 0 < res.max_found <= bound * (1 + 1e-9)  # the update reads state["w"]: no KeyError
    with pytest.raises(ValueError, match="not a noisy channel"):
        update_pair(sc, adj, 0, 1, "z")


def test_the_full_check_passes_a_correct_two_channel_rule(pair):
    sc, adj, _ = pair
    report = check_privacy(sc, adj, runs=300, search_examples=3)
    assert report.verdict == "pass", report.reasons
    eps = sc.algorithm.claimed_privacy(sc.horizon)[0]
    assert report.epsilon_ledger == pytest.approx(eps, rel=1e-9)
    figures = {e.method: e.figures for e in report.evidence}
    assert figures["sensitivity prober"]["sensitivity_probe_lemma_ratio"] <= 1 + 1e-9
    assert figures["worst-case adjacency search"]["worst_case_loss"] <= eps * (1 + 1e-6)


def test_a_lemma_missing_half_of_one_channel_is_refuted(pair):
    sc, adj, paper = pair

    def weak(scn: Any) -> dict[str, np.ndarray]:
        out = two_channel_lemma(scn)
        return {"y": out["y"], "h": 0.5 * out["h"]}

    register(Paper("test-two-channel", (TwoChannelGD,), lemma=weak, reference="test",
                   adjacency=paper.adjacency), origin="test_several_channels")
    try:
        report = check_privacy(sc, adj, runs=200, search_examples=0, steps=None)
        prober_ev = next(e for e in report.evidence if e.method == "sensitivity prober")
        assert prober_ev.witness is not None and prober_ev.witness["channel"] == "h"
        assert report.verdict == "violation"
    finally:
        register(paper, origin="test_several_channels")
