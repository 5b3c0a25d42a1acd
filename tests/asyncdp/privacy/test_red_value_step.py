"""A step scaled by the cost's clipped *value*, with a lemma one factor 2 short, is never `pass`.

``LossStepDGD`` (a user's rule): ``x = Proj(z - a clip(f_i(z), 0, B) clip(g_i(z), C))``, a step proportional to
the current loss (Polyak-like), released with Gaussian noise ``sigma``. Its lemma: "the step is at most ``a B C``"
(it forgets that two costs step in opposite directions; ``2 a B C`` is right), and it claims the zCDP this
composes, ``rho = (T - 1) (a B C / sigma)^2 / 2``.

The adjacency class (gradients of norm at most ``C``) bounds gradients, not values: ``f = K + <g, x>`` and ``f' = K -
<g, x>`` (``g = C e_0``, ``K = 1e6``) are members. Closed-form truth: at every point the runs reach (``|z| < 1e5``,
all but an event of probability far below ``1e-1000`` under ``sigma = 1``) both values exceed ``B = 1000``, so
given the past agent 0's release moves by exactly ``2 a B C e_0`` in every round from 2 on: a Gaussian mechanism
whose zCDP is 4 times the claim.

Every cost the worst-case search builds has values within about ``100 C`` of 0 at the states visited (linear costs
``<g, x>``; kinked costs ``C sqrt((x_k - c)^2 + eta^2)`` with ``c`` a quarter unit from the state; the curved cost,
its minimum at -100), so with ``B = 1000`` no candidate saturated the clip, and one of each linear pair's values
is near 0 (``<g, z>`` against ``-<g, z>``): the check said ``pass``. It now also evaluates two kinked costs
``10^6`` away on either side (``asyncdp.privacy.kinked.offset_pairs``): the extremal gradients, values near
``10^6 C``, a witness at 4 times the lemma's loss. A clip above ``10^6 C`` is still out of reach (no finite
candidate set covers values the class leaves unbounded).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.claim_forms import ZeroConcentratedDP
from asyncdp.algorithms import NoiseDeclaration
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
STEP, BOUND, OFFSET = 1e-4, 1000.0, 1e6
"""``a``, the value clip ``B`` and the true worst pair's offset ``K``."""


@dataclass(frozen=True)
class LossStepDGD(noisy_dgd.NoisyDGD):
    """``x = Proj(z - a clip(f(z), 0, B) clip(g(z), C))`` (module docstring)."""

    name: ClassVar[str] = "test-red-loss-step-dgd"

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        return NoiseDeclaration("gaussian", noisy_dgd.SIGMA, self.dim, 0.0 if t == 1 else lemma_value())

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = mixed["y"]
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), noisy_dgd.CLIP)
        f = np.clip(problem.costs.value(agents, z), 0.0, BOUND)[..., None]
        return {"x": problem.domain.project(z - STEP * f * g)}

    def claimed_form(self, horizon: int) -> ZeroConcentratedDP:
        return ZeroConcentratedDP((horizon - 1) * (lemma_value() / noisy_dgd.SIGMA) ** 2 / 2)

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return self.claimed_form(horizon).epsilon_at(1e-6), 1e-6


def lemma_value() -> float:
    return STEP * BOUND * noisy_dgd.CLIP


def lemma(sc: Any) -> np.ndarray:
    out = np.full(sc.horizon, lemma_value())
    out[0] = 0.0
    return out


def adjacency(sc: Any) -> GradientClass:
    return GradientClass(noisy_dgd.CLIP, "l2")


def test_the_offset_pair_moves_every_release_twice_the_lemma():
    """The rule's step under ``K + <g, z>`` and ``K - <g, z>`` at points far beyond any the runs reach."""
    c = noisy_dgd.CLIP
    g = np.array([c, 0.0])
    z = np.random.default_rng(0).uniform(-1e5, 1e5, size=(1000, 2))
    step = [STEP * np.clip(OFFSET + s * z @ g, 0.0, BOUND)[:, None] * (s * g) for s in (1.0, -1.0)]
    shift = np.linalg.norm(step[0] - step[1], axis=1)
    assert np.allclose(shift, 2 * lemma_value(), rtol=1e-12)  # (2 a B C)^2 / (a B C)^2: 4 times the claimed rho


def test_the_check_refutes_a_value_step_lemma_one_factor_2_short():
    sc, adj = noisy_dgd.rendezvous_pair(LossStepDGD(), topology.static(noisy_dgd.ring(5)), 10)
    with noisy_dgd.registered([LossStepDGD], adjacency, origin=__file__, lemma=lemma):
        report = check_privacy(sc, adj, runs=300, search_examples=0)
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert w["against"] == "lemma" and w["kink"]["prime_position"] is not None, w
    assert w["value"] == pytest.approx(4 * w["claimed"], rel=1e-6)  # (2 a B C)^2 against (a B C)^2
