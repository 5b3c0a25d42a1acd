"""The worst-case search looks inside the adjacency class, and any pair it evaluates that moves a round further
than the lemma allows is a witness.

``ShellDGD`` is a clipped Gaussian gradient method whose update, from round 5 on, multiplies a clipped gradient
of norm below ``C / 2`` by 4. Its lemma (``2 a C`` per release, the sphere's worst case) and its per-iteration
claim (the exact ``(epsilon, 1e-5)`` of one Gaussian release with ``mu = 2 a C / sigma = 0.2``) hold for
gradients of norm ``C``, which is all the search drew. The class ("gradients of L2 norm at most ``C``") also
holds ``f(x) = <g, x>`` against ``<-g, x>`` with ``||g|| = 0.45 C``: from round 6 on the release moves by
``a * 4 * 0.9 C = 0.36 = 1.8 x`` the lemma, a Gaussian round with ``mu = 0.36`` whose exact
``delta(epsilon) = 4.2e-3`` is 400 times the claimed ``1e-5``. The user's pair (addresses far apart: clipped
gradients of norm ``C``) never shows it, nor do the prober's first three rounds. Before: ``pass``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from scipy.stats import norm

import topology
from accounting.mechanisms import gaussian_epsilon
from asyncdp import Scenario, rendezvous_problem
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, STEP, CLIP = noisy_dgd.SIGMA, noisy_dgd.STEP, noisy_dgd.CLIP
DELTA = 1e-5


@dataclass(frozen=True)
class ShellDGD(noisy_dgd.NoisyDGD):
    """Gaussian DGD whose step on small gradients is 4 times larger from round 5 on (module docstring)."""

    name: ClassVar[str] = "test-shell-dgd"
    claim_level: ClassVar[str] = "iteration"

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = mixed["y"]
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), CLIP)
        if t >= 5:
            g = np.where(np.linalg.norm(g, axis=-1, keepdims=True) < 0.5 * CLIP, 4.0 * g, g)
        return {"x": problem.domain.project(z - STEP * g)}

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return gaussian_epsilon(2 * STEP * CLIP, SIGMA, DELTA), DELTA


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper record, registered for this module's tests only."""
    with noisy_dgd.registered((ShellDGD,), lambda sc: GradientClass(CLIP, "l2"), origin=__file__):
        yield


def test_the_claim_is_false_in_closed_form():
    """The independent truth: one Gaussian round of mu = 0.36 at the claimed epsilon."""
    eps = gaussian_epsilon(2 * STEP * CLIP, SIGMA, DELTA)
    mu = STEP * 4 * 0.9 * CLIP / SIGMA
    delta = norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert delta > 400 * DELTA


def test_a_sensitivity_above_the_lemma_inside_the_class_is_a_witness():
    n = 5
    w = noisy_dgd.ring(n)
    addresses = np.random.default_rng(7).uniform(-1, 1, size=(n, 2))
    addresses[0] = [3.0, 3.0]
    problem = rendezvous_problem(addresses, low=-50.0, high=50.0)
    scenario = Scenario(problem, topology.static(w), ShellDGD(), horizon=10, seed=3)
    adjacent = scenario.replace(problem=problem.adjacent(0, address=[-3.0, -3.0]))
    report = check_privacy(scenario, adjacent, runs=1000)
    assert report.verdict == "violation"
    w = report.witness
    assert w["kind"] == "sensitivity" and w["against"] == "lemma" and w["confidence"] == 1.0
    assert w["method"].startswith("worst-case adjacency search") and w["round"] >= 6
    assert w["claimed"] == (2 * STEP * CLIP / SIGMA) ** 2 / 2  # the round's loss at the lemma's shift
    assert w["value"] > w["claimed"] * (1 + 1e-6)  # the witness pair's constructed round loss, beyond round-off
    if w["gradient"] is not None:  # a linear pair of the class, e.g. <g, x> against <-g, x> with ||g|| = 0.45 C
        assert max(np.linalg.norm(w["gradient"]), np.linalg.norm(w["gradient_prime"])) <= CLIP * (1 + 1e-12)
    else:  # a kinked pair (e.g. a mirrored one): both costs' gradients have norm below the kink's scale
        assert w["kink"]["scale"] <= CLIP * (1 + 1e-12)
    # either way the witness's round moves further than the linear pair's 1.8 x the lemma (module docstring)
    assert w["ratio"] >= (0.36 / (2 * STEP * CLIP)) ** 2 * (1 - 1e-9)
