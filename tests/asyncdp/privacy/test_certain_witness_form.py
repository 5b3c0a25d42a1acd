"""Every witness names the claim's own form, also when it refutes a zCDP claim through its conversion.

The rule is the clipped Gaussian gradient rule of ``tests/fixtures/noisy_dgd.py`` with a second, noise-free
channel that releases the agent's state: under the two problems agent 0's state differs from round 2 on, so the
noise-free release tells them apart with certainty, which refutes a claim of any form (here through the
claim's ``(epsilon, delta)`` conversion). The rule claims zCDP; every witness must say so (they used to say
"(epsilon, delta)" or "approximate").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.claim_forms import ZeroConcentratedDP
from asyncdp import Scenario, rendezvous_problem
from asyncdp.algorithms import Channel
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
HORIZON = 8


@dataclass(frozen=True)
class StateOnTheSide(noisy_dgd.NoisyDGD):
    """Releases its state on a noise-free channel ``w`` besides the noisy ``y``; claims rho-zCDP."""

    name: ClassVar[str] = "test-state-on-the-side"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "gaussian"), Channel("w", None))

    def noise(self, t: int, channel: str) -> Any:
        return super().noise(t, channel) if channel == "y" else None

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + noisy_dgd.SIGMA * noise["y"], "w": state["x"].copy()}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return super().update(state, {"y": mixed["y"]}, t, agents, problem)

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.claimed_form(horizon).epsilon_at(1e-6), 1e-6

    def claimed_form(self, horizon: int) -> ZeroConcentratedDP:
        return ZeroConcentratedDP(10.0)


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    with noisy_dgd.registered((StateOnTheSide,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        yield


def test_every_witness_against_a_zcdp_claim_is_labelled_zcdp():
    n = 4
    addresses = np.random.default_rng(3).uniform(-1.0, 1.0, size=(n, 2))
    problem = rendezvous_problem(addresses, low=-50.0, high=50.0)
    sc = Scenario(problem, topology.static(noisy_dgd.ring(n)), StateOnTheSide(), horizon=HORIZON, seed=3)
    adj = sc.replace(problem=problem.adjacent(0, address=[-0.9, 0.9]))
    # the independent truth: the noise-free release of agent 0's state differs between the problems from round 2
    from asyncdp.privacy.behavior import run_engine

    w = [run_engine(s, 2, seed=1, side=0).messages["w"][:, 1:, 0] for s in (sc, adj)]
    assert not np.allclose(w[0], w[1])
    report = check_privacy(sc, adj, runs=200, delta=1e-6)
    assert report.verdict == "violation"
    assert report.witness["delta_lower"] > 1e-6, report.witness
    # every witness names the claim's own form, whichever way it refutes it
    witnesses = [e.witness for e in report.evidence if e.witness is not None]
    assert len(witnesses) >= 2 and {w["claim_form"] for w in witnesses} == {"zcdp"}, witnesses
