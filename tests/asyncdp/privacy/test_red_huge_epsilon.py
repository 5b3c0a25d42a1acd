"""A claim with a huge epsilon (a true claim: (800, 1e-6), or a Rényi claim whose conversion is that large) is
checked, not a crash: the black-box audit's event choice computed ``math.exp(epsilon)`` and raised
``OverflowError`` above ``epsilon = 709`` (a traceback on the command line, exit 1); it now takes
``e^epsilon`` as infinite there, as the certification does.

Such epsilons are not exotic for Rényi claims: ``(alpha, epsilon)``-RDP at ``alpha = 1.0001`` converts to
``epsilon`` about ``log(1 / delta) / (alpha - 1) = 1.4e5`` at ``delta = 1e-6``, and at ``alpha = 1e5`` the claimed
``epsilon_alpha = alpha rho`` itself is in the thousands.

The rule is the clipped Gaussian gradient rule of ``tests/fixtures/noisy_dgd.py`` (``T = 12``: the run is one
Gaussian pair with ``mu = 0.2 sqrt(11) = 0.66`` for the extremal pairs of its class), whose accountant's epsilon
at ``1e-6`` is about 3: every claim here is true.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import topology
from accounting.auditing.certify import projected_epsilons
from accounting.claim_forms import RenyiDP
from asyncdp import Scenario
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
CLIP = noisy_dgd.CLIP
HORIZON = 12
RHO = (HORIZON - 1) * (2 * noisy_dgd.STEP * CLIP / noisy_dgd.SIGMA) ** 2 / 2

@dataclass(frozen=True)
class LooseDGD(noisy_dgd.NoisyDGD):
    """Claims ``(800, 1e-6)``, or the Rényi form ``form`` when one is given."""

    form: Any = None
    name: ClassVar[str] = "test-red-loose-dgd"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return (800.0, 1e-6) if self.form is None else (self.form.epsilon_at(1e-6), 1e-6)  # a pair the form implies

    def claimed_form(self, horizon: int) -> Any:
        return (800.0, 1e-6) if self.form is None else self.form


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    """The test's paper record, registered for this module's tests only."""
    with noisy_dgd.registered((LooseDGD,), lambda sc: GradientClass(CLIP, "l2"), origin=__file__):
        yield


def _pair(form: Any) -> tuple[Scenario, Scenario]:
    return noisy_dgd.rendezvous_pair(LooseDGD(form=form), topology.static(noisy_dgd.ring(5)), HORIZON)


def test_the_renyi_conversions_are_huge():
    assert RenyiDP(1.0001, 1.0001 * RHO).epsilon_at(1e-6) > 1e5
    assert RenyiDP(1e5, 1e5 * RHO).epsilon_at(1e-6) > 2e4


def test_the_event_choice_takes_a_huge_epsilon():
    (_, margin), = projected_epsilons([0.5], [0.1], 1000, 1000, epsilon=800.0, delta=0.0, alpha=0.0125)
    assert margin == -np.inf


@pytest.mark.parametrize("form", [None, RenyiDP(1.0001, 1.0001 * RHO), RenyiDP(1e5, 1e5 * RHO)],
                         ids=["(800, 1e-6)", "rdp alpha 1.0001", "rdp alpha 1e5"])
def test_a_true_claim_with_a_huge_epsilon_is_checked(form):
    scenario, adjacent = _pair(form)
    report = check_privacy(scenario, adjacent, runs=1000, delta=1e-6)
    assert report.verdict == "pass"
