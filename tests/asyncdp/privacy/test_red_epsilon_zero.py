"""An ``(0, delta)`` claim (a bound on the total variation distance) is checked, not a crash halfway through.

``(0, delta)`` is a valid approximate-DP claim (:class:`accounting.claim_forms.ApproxDP` allows ``epsilon = 0``):
``delta(0)`` is the total variation distance of the two output distributions. The check accepted the claim,
ran its first steps and then stopped in the exact replay's audit with "epsilon must be > 0" (exit 2 on the
command line, naming neither the claim nor the method).

The rule is the clipped Gaussian gradient rule of ``tests/fixtures/noisy_dgd.py`` (``mu = 2 a C / sigma = 0.2``
per release from round 2, ``T = 12``): for the extremal pairs of its class (opposite linear costs) the run is one
Gaussian pair with ``mu = 0.2 sqrt(11) = 0.663``, whose exact ``delta(0) = 2 Phi(mu / 2) - 1 = 0.26``; so
``(0, 0.2)`` is false and ``(0, 0.3)`` is true.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from scipy.stats import norm

import topology
from accounting.auditors import plrv_audit
from accounting.errors import PrivacyParameterError
from asyncdp import Scenario
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, STEP, CLIP = noisy_dgd.SIGMA, noisy_dgd.STEP, noisy_dgd.CLIP
HORIZON = 12
MU = 2 * STEP * CLIP / SIGMA * math.sqrt(HORIZON - 1)


@dataclass(frozen=True)
class TotalVariationDGD(noisy_dgd.NoisyDGD):
    """Claims ``(0, delta)``."""

    delta: float = 0.3
    name: ClassVar[str] = "test-red-total-variation-dgd"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return 0.0, self.delta


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper record, registered for this module's tests only."""
    with noisy_dgd.registered((TotalVariationDGD,), lambda sc: GradientClass(CLIP, "l2"), origin=__file__):
        yield


def _pair(delta: float) -> tuple[Scenario, Scenario]:
    return noisy_dgd.rendezvous_pair(TotalVariationDGD(delta=delta), topology.static(noisy_dgd.ring(5)), HORIZON)


def test_the_total_variation_is_0_26_in_closed_form():
    assert 2 * norm.cdf(MU / 2) - 1 == pytest.approx(0.26, abs=5e-3)


def test_the_replay_audit_reads_delta_at_epsilon_0():
    """delta(0) = E[(1 - e^(-L))_+]: a loss of log 2 on half the runs gives 1/4."""
    report = plrv_audit(np.r_[np.zeros(500), np.full(500, math.log(2.0))], 0.0, 0.1)
    assert report.delta_estimate == pytest.approx(0.25) and report.epsilon == 0.0
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        plrv_audit(np.zeros(4), 0.0, 0.0)  # (0, 0) claims nothing a run could meet: not a claim to audit
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        plrv_audit(np.zeros(4), -1.0, 0.1)


def test_a_false_total_variation_claim_is_not_passed():
    scenario, adjacent = _pair(0.2)
    report = check_privacy(scenario, adjacent, runs=1000, delta=1e-6)
    assert report.verdict != "pass"


def test_a_true_total_variation_claim_is_checked():
    scenario, adjacent = _pair(0.3)
    report = check_privacy(scenario, adjacent, runs=1000, delta=1e-6)
    assert report.verdict in ("pass", "inconclusive")
