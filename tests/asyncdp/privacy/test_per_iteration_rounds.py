"""A per-iteration claim covers everything one round releases: every noisy channel and every unicast copy.

``GaussDGD`` releases ``x_i(t-1) + sigma N(0, I)`` and takes a clipped gradient step (L2 lemma: ``x(t-1)``
moves by at most ``2 a C`` given the past). It claims, per iteration, the Rényi DP of ONE Gaussian release:
``(alpha, alpha Delta^2 / (2 sigma^2))`` with ``Delta = 2 a C = 0.2``, ``sigma = 1``, ``alpha = 8``: 0.16.
Under unicast on a ring (two out-neighbours) the changed agent sends two independently noised copies of the
same ``x(t-1)`` each round, and with two noisy channels it sends two releases: either way the round is a
Gaussian mechanism with ``mu^2 = 2 Delta^2 / sigma^2`` and ``D_8 = 8 * 2 * 0.04 / 2 = 0.32 > 0.16`` exactly
on the checked pair (opposite linear costs of gradient norm ``C``: the shift is ``2 a C`` in every round, no
projection active). The claim's (epsilon, delta) conversion at ``delta = 1e-6`` (epsilon 1.70) still holds,
so only a Rényi comparison can see it. Before the fix the accountant composed the focus round's first
release only (0.16, "confirmed") and the exact profile was compared with the conversion only: ``pass``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topology
from accounting.claim_forms import RenyiDP
from accounting.composition import basic_composition
from accounting.ledger import Ledger, Release
from accounting.renyi import ledger_zcdp
from asyncdp import Scenario, rendezvous_problem
from asyncdp.algorithms import Algorithm, Channel
from asyncdp.algorithms.clipping import clip_l2
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import focus_rounds
from asyncdp.problems.costs.override import LinearOverride
from asyncdp.problems.problem import Problem

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, STEP, CLIP = noisy_dgd.SIGMA, noisy_dgd.STEP, noisy_dgd.CLIP
ALPHA = 8.0


@dataclass(frozen=True)
class GaussDGD(noisy_dgd.NoisyDGD):
    """Clipped gradient step on the mixed Gaussian-noised states; per-iteration Rényi claim of one release."""

    name: ClassVar[str] = "test-gauss-dgd-per-iteration"
    claim_level: ClassVar[str] = "iteration"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {c.name: state["x"] + SIGMA * noise[c.name] for c in self.channels}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        z = sum(mixed[c.name] for c in self.channels) / len(self.channels)
        g = clip_l2(problem.costs.gradient(agents, z, round_index=t), CLIP)
        return {"x": problem.domain.project(z - STEP * g)}

    def claimed_form(self, horizon: int) -> RenyiDP:
        return RenyiDP(ALPHA, ALPHA * (2 * STEP * CLIP / SIGMA) ** 2 / 2)


@dataclass(frozen=True)
class GaussDGD2(GaussDGD):
    """The same, broadcasting ``x + sigma n`` on two channels with independent draws."""

    name: ClassVar[str] = "test-gauss-dgd-per-iteration-2ch"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "gaussian"), Channel("w", "gaussian"))


def _lemma(sc: Any) -> Any:
    out = noisy_dgd.lemma(sc)
    names = [c.name for c in type(sc.algorithm).noisy_channels()]
    return out if len(names) == 1 else {n: out for n in names}


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper records, registered for this module's tests only."""
    with noisy_dgd.registered((GaussDGD, GaussDGD2), lambda sc: GradientClass(CLIP, "l2"), lemma=_lemma,
                              origin=__file__):
        yield


def _pair(rule: Algorithm, mode: str) -> tuple[Scenario, Scenario]:
    n = 5
    w = noisy_dgd.ring(n)
    base = rendezvous_problem(np.random.default_rng(7).uniform(-1, 1, size=(n, 2)), low=-50.0, high=50.0)

    def linear(g: list[float]) -> Problem:
        return Problem(base.domain, LinearOverride(base.costs, 0, g))

    scenario = Scenario(linear([CLIP, 0.0]), topology.static(w), rule, horizon=10, seed=3, mode=mode)
    return scenario, scenario.replace(problem=linear([-CLIP, 0.0]))


TRUE_RENYI = ALPHA * 2 * (2 * STEP * CLIP / SIGMA) ** 2 / 2
"""The round's exact order-8 Rényi divergence: two Gaussian releases of one shift ``2 a C``: 0.32."""


@pytest.mark.parametrize("rule, mode", [(GaussDGD(), "unicast"), (GaussDGD2(), "broadcast")],
                         ids=["unicast copies", "two channels"])
def test_a_per_iteration_renyi_claim_of_one_release_is_refuted(rule, mode):
    scenario, adjacent = _pair(rule, mode)
    report = check_privacy(scenario, adjacent, runs=1000)
    assert report.verdict == "violation"
    w = report.witness
    assert w["kind"] == "replay" and w["alpha"] == ALPHA and w["confidence"] == 1.0
    assert w["renyi_witness"] == pytest.approx(TRUE_RENYI, rel=1e-6) and w["renyi_allowed"] == pytest.approx(0.16)
    form = next(e for e in report.evidence if e.method == "claim form")
    assert form.figures["claim_confirmed"] is False
    assert f"rdp value {TRUE_RENYI:.6g} exceeds" in " ".join(form.reasons)


_release = st.tuples(st.integers(1, 4), st.sampled_from(["gaussian", "laplace"]), st.floats(0.25, 4.0),
                     st.sampled_from([None, 1, 2]))


@settings(max_examples=60, deadline=None)
@given(st.lists(_release, min_size=1, max_size=12))
def test_the_kept_rounds_bound_every_round(items):
    """Basic composition and zCDP of every round's releases are at most the largest over the kept rounds."""
    ledger = Ledger([Release(0, t, float(t), mech, scale, 1, 1.0, "y", receiver)
                     for t, mech, scale, receiver in items])
    focus, kept = focus_rounds(ledger, lambda r: 1.0, 0)
    rounds = sorted({r.round for r in ledger})
    assert focus is not None and focus + 1 in [next(iter(k)).round for k in kept]
    for t in rounds:
        one = Ledger([r for r in ledger if r.round == t])
        assert basic_composition(one, 1.0, 1e-5) <= max(basic_composition(k, 1.0, 1e-5) for k in kept) * (1 + 1e-12)
        assert ledger_zcdp(one, 1.0) <= max(ledger_zcdp(k, 1.0) for k in kept) * (1 + 1e-12)
    assert len({next(iter(k)).round for k in kept}) == len(kept)  # one ledger per kept round
