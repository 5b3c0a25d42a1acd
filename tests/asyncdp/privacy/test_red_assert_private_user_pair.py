"""``assert_private(P, P')`` on a user's own pair whose rule fills a constant in ``bind``: a decision, not a crash.

The privacy check binds the rule to the problem (``bind`` fills ``dim`` in the fixture's rule, as in the docs'
``MyNoisyGD``). ``assert_private``'s last step (:func:`asyncdp.privacy.properties.decide_pair`) replayed the pair's
engine runs with the scenario's rule as written, ``dim = 0``: a ``ValueError`` from deep inside the replay for any
claim with ``delta > 0`` (pairs drawn by ``adjacent_scenarios`` hold a bound rule, so the documented property
never met it). The pair is now replayed with the bound rule; a correct claim passes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

import topology
from accounting.claim_forms import ZeroConcentratedDP
from asyncdp.papers import GradientClass
from asyncdp.privacy.properties import assert_private

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
HORIZON = 6


@dataclass(frozen=True)
class ZcdpDGD(noisy_dgd.NoisyDGD):
    """The fixture's rule claiming the zCDP of its lemma: ``(T - 1) (2 a C / sigma)^2 / 2``."""

    name: ClassVar[str] = "test-red-assert-private-zcdp-dgd"

    def claimed_form(self, horizon: int) -> ZeroConcentratedDP:
        return ZeroConcentratedDP((horizon - 1) * (2 * noisy_dgd.STEP * noisy_dgd.CLIP / noisy_dgd.SIGMA) ** 2 / 2)


def test_assert_private_decides_a_users_pair_with_an_unbound_rule():
    scenario, adjacent = noisy_dgd.rendezvous_pair(ZcdpDGD(), topology.static(noisy_dgd.ring(4)), HORIZON)
    assert scenario.algorithm.dim == 0  # as written: bind fills it
    with noisy_dgd.registered((ZcdpDGD,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        report = assert_private(scenario, adjacent, runs=100)
    assert report.verdict == "pass"
