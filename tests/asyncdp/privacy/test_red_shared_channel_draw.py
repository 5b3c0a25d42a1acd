"""A two-channel rule that adds one channel's standard draw to both channels' releases: the check is not `pass`.

A user's differentially private gradient tracking (two Gaussian channels: the state ``x`` with scale ``s_x`` and
the tracker ``y`` with scale ``s_y``) adds ``noise["y"]`` to both releases (a copy-paste slip). The releases of one
round then satisfy ``y~ - (s_y / s_x) x~ = y - (s_y / s_x) x`` exactly: noise-free. In round 1 ``x = x_0`` is the
same under both problems and ``y = clip(grad f_0(x_0), C)`` is ``-C`` or ``+C`` (agent 0's address 1 or -1, start
0), so that combination separates the pair with certainty: the privacy loss is infinite on every run and no
``(epsilon, delta < 1)`` claim holds (truth checked below from the engine's transcripts).

The check said `inconclusive` (the released noise does not carry the draws the engine handed the ``x`` releases), a
doubt, not the witness the leak allows: the dependence test and the cancelling audit
(:mod:`asyncdp.privacy.dependence`) looked across rounds and agents of one channel only. Channels of one shape are
now also tested against each other round by round (their releases interleaved,
:func:`asyncdp.privacy.dependence.interleave_channels`), each family at half the error, and the cancelling audit
finds ``y~ - 20 x~`` and certifies the loss: `violation`, the witness naming both channels and the round.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.claim_forms import ZeroConcentratedDP
from asyncdp import Scenario, rendezvous_problem
from asyncdp.algorithms import Algorithm, Channel, NoiseDeclaration
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import GradientClass, Paper, register, unregister
from asyncdp.privacy import check_privacy

STEP, CLIP, SX, SY, HORIZON = 0.05, 1.0, 1.0, 20.0, 4


@dataclass(frozen=True)
class SharedDrawGT(Algorithm):
    """Gradient tracking with Gaussian noise on ``x`` and ``y``; both releases carry ``noise["y"]``."""

    dim: int = 0
    name: ClassVar[str] = "test-red-shared-draw-gt"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("x", "gaussian"), Channel("y", "gaussian"))

    def bind(self, problem: Any) -> SharedDrawGT:
        return replace(self, dim=problem.dim)

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        x = np.array(x0, dtype=float, copy=True)
        g = clip_l2(problem.costs.gradient(agents, x, round_index=1), CLIP)
        return {"x": x, "y": g.copy(), "g": g}

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        if channel == "x":
            return NoiseDeclaration("gaussian", SX, self.dim, 0.0 if t == 1 else 4 * STEP * CLIP)
        return NoiseDeclaration("gaussian", SY, self.dim, 2 * CLIP if t == 1 else 4 * CLIP)

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"x": state["x"] + SX * noise["y"], "y": state["y"] + SY * noise["y"]}  # the slip: noise["y"] twice

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        x = problem.domain.project(mixed["x"] - STEP * state["y"])
        g = clip_l2(problem.costs.gradient(agents, x, round_index=t), CLIP)
        return {"x": x, "y": mixed["y"] + g - state["g"], "g": g}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]

    def claimed_form(self, horizon: int) -> ZeroConcentratedDP:
        decl = [(self.noise(t, "x").claimed_sensitivity / SX) ** 2 + (self.noise(t, "y").claimed_sensitivity / SY) ** 2
                for t in range(1, horizon + 1)]
        return ZeroConcentratedDP(sum(decl) / 2)


def _lemma(sc: Any) -> dict[str, np.ndarray]:
    alg = sc.algorithm
    return {c: np.array([alg.noise(t, c).claimed_sensitivity for t in range(1, sc.horizon + 1)]) for c in ("x", "y")}


@pytest.fixture(autouse=True)
def _paper():
    register(Paper(SharedDrawGT.name, (SharedDrawGT,), lemma=_lemma, reference="a test's own lemma",
                   adjacency=lambda sc: GradientClass(CLIP, "l2")))
    yield
    unregister(SharedDrawGT.name)


def _pair() -> tuple[Scenario, Scenario]:
    w = 0.5 * np.eye(4) + 0.25 * (np.roll(np.eye(4), 1, axis=1) + np.roll(np.eye(4), -1, axis=1))
    addresses = np.random.default_rng(7).uniform(-1.0, 1.0, size=(4, 1))
    addresses[0] = [1.0]
    problem = rendezvous_problem(addresses, low=-50.0, high=50.0)
    sc = Scenario(problem, topology.static(w), SharedDrawGT(), horizon=HORIZON, seed=3)
    return sc, sc.replace(problem=problem.adjacent(0, address=[-1.0]))


def _round_one_combination(sc: Scenario) -> np.ndarray:
    """``y~ - (s_y / s_x) x~`` of agent 0's round-1 releases on 20 engine runs."""
    res = sc.run("batch", runs=20, transcripts=True)
    released = {c: np.asarray(res.messages[c])[:, 0, 0, 0] for c in ("x", "y")}
    return released["y"] - SY / SX * released["x"]


def test_the_truth_round_one_releases_a_noise_free_combination_that_separates_the_pair():
    sc, adj = _pair()
    assert np.allclose(_round_one_combination(sc), -CLIP) and np.allclose(_round_one_combination(adj), CLIP)


def test_the_check_finds_the_cancelling_combination_across_channels():
    report = check_privacy(*_pair(), runs=400, search_examples=0)
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert w["kind"] == "dependence" and w["channels"] == ["x", "y"] and w["rounds"][0] == w["rounds"][1], w
    assert w["agents"] == [0, 0] and w["beta"] == pytest.approx(SY / SX)
    assert w["delta_lower_bound"] > w["delta_allowed"]
