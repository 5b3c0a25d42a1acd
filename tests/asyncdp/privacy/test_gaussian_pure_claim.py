"""A pure claim of a Gaussian rule is refuted by a behavior witness, not left ``inconclusive``.

Truth: ``NoisyDGD`` (tests/fixtures/noisy_dgd.py) releases ``x + N(0, I)``; from round 2 the changed agent's
release moves with its cost (by up to ``2 a C = 0.2``), and a Gaussian release with a shift ``d != 0`` has a
privacy loss unbounded along ``d``: no pure epsilon holds. The check said ``inconclusive`` (only the
declaration-based composition gave ``inf``; the worst pair's constructed loss, 0.1, is below epsilon 1).
The refutation needs every noisy release to be Gaussian: ``NoiseBeacon`` (Huang2015's Laplace releases, a true
pure claim, beside a Gaussian channel that releases noise alone, sensitivity 0) keeps its ``pass``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.claim_forms import PureDP
from asyncdp import Huang2015
from asyncdp.algorithms import Channel, NoiseDeclaration
from asyncdp.papers import GradientClass
from asyncdp.papers.huang2015 import privacy as huang2015_privacy
from asyncdp.privacy import check_privacy
from asyncdp.privacy.properties import PrivacyPropertyError, assert_private

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]


@dataclass(frozen=True)
class PureClaimDGD(noisy_dgd.NoisyDGD):
    """``NoisyDGD`` claiming ``epsilon``-DP (false for every finite epsilon)."""

    epsilon: float = 1.0
    name: ClassVar[str] = "test-gaussian-pure-claim"

    def claimed_form(self, horizon: int) -> Any:
        return PureDP(self.epsilon)


def adjacency(scenario: Any) -> GradientClass:
    return GradientClass(noisy_dgd.CLIP, "l2")


def test_a_pure_claim_of_gaussian_releases_is_a_violation_with_a_worst_case_witness():
    sc, adj = noisy_dgd.rendezvous_pair(PureClaimDGD(epsilon=1.0), topology.static(noisy_dgd.ring(4)), 6)
    with noisy_dgd.registered([PureClaimDGD], adjacency, origin=__file__):
        report = check_privacy(sc, adj, runs=100, search_examples=0)
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert w["kind"] == "worst-case" and w["claim_form"] == "pure" and w["confidence"] == 1.0
    assert 0 < w["loss"] < 1.0 and "Gaussian release" in w["method"]
    assert any("Gaussian noise is never pure DP" in r and "positive probability" in r for r in report.reasons)


def test_a_gaussian_rule_whose_releases_never_move_keeps_its_pure_claim():
    # a step of 0 (the state never leaves the start): no release moves with the data, so 1-DP holds and the
    # Gaussian witness must not fire (the declaration-based composition still gives inf: not a pass)
    @dataclass(frozen=True)
    class Still(PureClaimDGD):
        name: ClassVar[str] = "test-gaussian-pure-claim-still"

        def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
            return {"x": np.array(state["x"], copy=True)}

    sc, adj = noisy_dgd.rendezvous_pair(Still(epsilon=1.0), topology.static(noisy_dgd.ring(4)), 6)
    with noisy_dgd.registered([Still], adjacency, origin=__file__):
        report = check_privacy(sc, adj, runs=100, search_examples=0)
    assert report.verdict != "violation", (report.witness, report.reasons)


def test_assert_private_on_a_gaussian_pair_names_the_gaussian_reason_when_its_loss_is_below_epsilon():
    # the pair's constructed loss (about 0.001) is below epsilon 1: the pair refutes the claim because a Gaussian
    # release moves with the data, and its witness must say so, not that the loss is above epsilon
    sc, adj = noisy_dgd.rendezvous_pair(PureClaimDGD(epsilon=1.0), topology.static(noisy_dgd.ring(4)), 6)
    with noisy_dgd.registered([PureClaimDGD], adjacency, origin=__file__):
        with pytest.raises(PrivacyPropertyError) as caught:
            assert_private(sc, adj, runs=100)
    w = caught.value.report.witness
    assert w["kind"] == "pair" and 0 < w["loss"] < 1.0, w
    assert w["method"].startswith("the pair's constructed transcript"), w["method"]
    assert "Gaussian release moves with the data" in w["method"] and "loss above epsilon" not in w["method"], w


@dataclass(frozen=True)
class NoiseBeacon(Huang2015):
    """``Huang2015`` (Laplace releases, a correct pure claim) that also releases pure Gaussian noise on a channel
    ``"n"`` the update never reads: that release never moves with the data (sensitivity 0)."""

    name: ClassVar[str] = "test-gaussian-pure-claim-noise-beacon"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "laplace"), Channel("n", "gaussian"))

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        if channel == "n":
            return NoiseDeclaration("gaussian", 1.0, self._require_bound()[1], 0.0)
        return super().noise(t, channel)

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {**super().message(state, t, noise, agents, problem), "n": 1.0 * noise["n"]}  # a copy of the draw


def _beacon_lemma(sc: Any) -> dict:
    return {"y": huang2015_privacy.sensitivity(sc), "n": np.zeros(sc.horizon)}


def test_a_gaussian_release_of_noise_only_beside_laplace_releases_is_not_a_violation():
    # the Laplace releases keep the pure claim (Huang2015, Theorem 5); the Gaussian channel releases noise that
    # no data moves, so its loss is 0: the Gaussian refutation must not fire on the Laplace releases' loss
    example = Huang2015.example_scenario()
    sc = example.replace(algorithm=NoiseBeacon(epsilon=1.0, c=0.2, q=0.8, p=0.9), horizon=6)
    adj = sc.replace(problem=sc.problem.adjacent(0, address=[0.9, 0.9]))
    with noisy_dgd.registered([NoiseBeacon], huang2015_privacy.gradient_class, origin=__file__, lemma=_beacon_lemma):
        report = check_privacy(sc, adj, runs=50, search_examples=0)
    assert report.verdict == "pass", (report.witness, report.reasons)  # was 'violation' had any Gaussian release fired
