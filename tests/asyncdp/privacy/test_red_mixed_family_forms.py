"""Rényi and zCDP claims of a rule releasing on a Gaussian and a Laplace channel, under deadline and async timing.

``GaussLap`` (2-D, 5 agents on a ring) broadcasts its state twice, ``g = x + sigma N(0, I)`` and ``l = x + b
Lap(I)``, and steps from the mean of the two mixed channels along the L2-clipped gradient. Its lemma, given the
earlier releases: from round 2 each release moves by at most ``2 a C`` in L2 (channel ``g``) and ``2 a C sqrt(2)``
in L1 (channel ``l``). The red-team search (deadline with ``missing="stale"`` on lossy reordering links, async with
a staleness limit, orders 1.5 to 256, factors 0.7 to 1) found no false verdict; these tests keep it so. A false
Rényi claim was refuted by the worst pair's divergence; that divergence is now used only where transcripts drawn
under its escort keep the pair's shifts (``test_red_escort_projection``), which cannot be drawn with a Laplace
channel: such a claim is ``inconclusive``, never ``pass``.

Independent truth (closed form): changing agent 0's cost between ``<g, x>`` and ``<-g, x>`` with ``||g|| = C``
moves each of its releases by exactly ``2 a C g / C`` given the earlier ones and the schedule (seen by the
observer), so every schedule gives the same divergence, the sum over rounds ``2 .. T`` of ``alpha mu^2 / 2``
(``mu = 2 a C / sigma``) and Mironov's Laplace divergence (CSF 2017, Prop. 6) of each coordinate's ratio. Along the
diagonal that is the class's largest at order 64 (:func:`test_the_closed_form`). The accountant composes the L1
ratio ``R = 2 a C sqrt(2) / b`` as one coordinate: Mironov's divergence is superadditive in the ratio, and an
``R``-DP release is ``R^2 / 2``-zCDP (Bun and Steinke, TCC 2016, Prop. 3.3), so its values bound the truth and
claims at them are true; 0.8 of its order-64 value is below the truth.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.claim_forms import RenyiDP, ZeroConcentratedDP
from asyncdp import Async, Deadline, LinkModel, Links, LogNormalLatency, Scenario, rendezvous_problem
from asyncdp.algorithms import Algorithm, Channel, NoiseDeclaration
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, B, STEP, CLIP, HORIZON, ALPHA = 2.0, 3.0, 0.1, 1.0, 10, 64.0
MU = 2 * STEP * CLIP / SIGMA
R = 2 * STEP * CLIP * math.sqrt(2) / B
TIMINGS = {"deadline-stale": Deadline(period=1.0, deadline=0.5, drift=0.05, jitter=0.1, missing="stale"),
           "async-staleness": Async(rate=1.0, staleness=2)}


def mironov(alpha: float, r: float) -> float:
    """``D_alpha(Lap(0, 1) || Lap(r, 1))`` (Mironov, CSF 2017, Prop. 6)."""
    return math.log(alpha / (2 * alpha - 1) * math.exp((alpha - 1) * r)
                    + (alpha - 1) / (2 * alpha - 1) * math.exp(-alpha * r)) / (alpha - 1)


def divergence(alpha: float, direction: tuple[float, float]) -> float:
    """The pair's ``D_alpha`` over the run for a gradient change along the unit ``direction`` (module docstring)."""
    lap = sum(mironov(alpha, 2 * STEP * abs(u) / B) for u in direction if u)
    return (HORIZON - 1) * (alpha * MU**2 / 2 + lap)


@dataclass(frozen=True)
class GaussLap(Algorithm):
    """``g = x + sigma N``, ``l = x + b Lap``; ``x = z - a clip(grad f(z))``, ``z`` the mean of the mixed channels.

    ``factor`` scales the claim: ``rho``-zCDP (``form = "zcdp"``) or ``(64, epsilon)``-RDP at the accountant's value.
    """

    factor: float = 1.0
    form: str = "renyi"
    dim: int = 0
    name: ClassVar[str] = "test-red-mixed-family"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("g", "gaussian"), Channel("l", "laplace"))

    def bind(self, problem: Any) -> GaussLap:
        return replace(self, dim=problem.dim)

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        if channel == "g":
            return NoiseDeclaration("gaussian", SIGMA, self.dim, 0.0 if t == 1 else 2 * STEP * CLIP)
        return NoiseDeclaration("laplace", B, self.dim, 0.0 if t == 1 else R * B)

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {"x": np.array(x0, dtype=float, copy=True)}

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"g": state["x"] + SIGMA * noise["g"], "l": state["x"] + B * noise["l"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = 0.5 * (mixed["g"] + mixed["l"])
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), CLIP)
        return {"x": problem.domain.project(z - STEP * g)}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]

    def claimed_form(self, horizon: int) -> Any:
        if self.form == "zcdp":
            return ZeroConcentratedDP(self.factor * (horizon - 1) * (MU**2 + R**2) / 2)
        return RenyiDP(ALPHA, self.factor * (horizon - 1) * (ALPHA * MU**2 / 2 + mironov(ALPHA, R)))

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.claimed_form(horizon).epsilon_at(1e-6), 1e-6


def lemma(sc: Any) -> dict[str, np.ndarray]:
    out = {"g": np.full(sc.horizon, 2 * STEP * CLIP), "l": np.full(sc.horizon, R * B)}
    for v in out.values():
        v[0] = 0.0
    return out


def make(rule: GaussLap, timing: Any) -> tuple[Scenario, Scenario]:
    """Rendezvous on a ring of 5 (agent 0 at (1, 1), moved to (0.9, 0.9)), lossy reordering links."""
    addresses = np.random.default_rng(7).uniform(-1.0, 1.0, size=(5, 2))
    addresses[0] = [1.0, 1.0]
    problem = rendezvous_problem(addresses, low=-50.0, high=50.0)
    links = Links(LinkModel(LogNormalLatency(0.15, 1.0), loss=0.1, reorder=True))
    sc = Scenario(problem, topology.static(noisy_dgd.ring(5)), rule, horizon=HORIZON, seed=7, timing=timing,
                  links=links)
    return sc, sc.replace(problem=problem.adjacent(0, address=[0.9, 0.9]))


def check(rule: GaussLap, timing: str) -> Any:
    sc, adj = make(rule, TIMINGS[timing])
    with noisy_dgd.registered([GaussLap], lambda s: GradientClass(CLIP, "l2"), origin=__file__, lemma=lemma):
        return check_privacy(sc, adj, runs=300, search_examples=0)


def test_the_closed_form():
    diagonal = (math.sqrt(0.5), math.sqrt(0.5))
    for theta in np.linspace(0.0, math.pi / 2, 31):  # the diagonal is the class's worst direction at order 64
        assert divergence(ALPHA, (math.cos(theta), math.sin(theta))) <= divergence(ALPHA, diagonal) * (1 + 1e-12)
    true_rdp, false_rdp = GaussLap(1.0).claimed_form(HORIZON), GaussLap(0.8).claimed_form(HORIZON)
    assert false_rdp.epsilon < divergence(ALPHA, diagonal) <= true_rdp.epsilon
    rho = GaussLap(1.0, "zcdp").claimed_form(HORIZON).rho
    for a in (1.01, 1.5, 2.0, 8.0, 64.0, 256.0):  # the zCDP claim holds at every order, along any direction
        assert max(divergence(a, d) for d in (diagonal, (1.0, 0.0))) <= rho * a


@pytest.mark.parametrize("timing", list(TIMINGS))
@pytest.mark.parametrize("form", ["renyi", "zcdp"])
def test_true_claims_pass(form, timing):
    report = check(GaussLap(1.0, form), timing)
    assert report.verdict == "pass", report.reasons


@pytest.mark.parametrize("timing", list(TIMINGS))
def test_a_false_renyi_claim_is_not_passed(timing):
    """The worst pair's divergence (the closed form, at most the truth) exceeds the claim, but a Laplace channel has
    no escort draw (``asyncdp.privacy.profiles.escort_shifts_hold``), so it is set aside: ``inconclusive``."""
    report = check(GaussLap(0.8), timing)
    assert report.verdict == "inconclusive", (report.verdict, report.witness)
    assert any("under its escort" in r and "cannot be drawn" in r for r in report.reasons), report.reasons
