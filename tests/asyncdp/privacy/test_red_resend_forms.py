"""A value re-sent with a fresh draw, the claim counting one release a round: refuted in every claim form under
deadline and asynchronous timing, and the witness names its method, confidence and claim form (issue 23).

``ResendDGD`` is a user's clipped Gaussian gradient rule (2-D, 5 agents on a ring, lossy lognormal links) that
sends its state twice a round, on channels ``"y"`` and ``"r"``, each with a fresh draw (for robustness to lost
messages), and combines their average. Its lemma is right: each release from round 2 on moves by at most ``2 a C``
given the earlier ones. Its claims count one release a round: ``mu_1 = 2 a C sqrt(T - 1) / sigma``.

Independent truth (closed form, the observer seeing the schedule): changing agent 0's cost between ``<g, x>`` and
``<-g, x>`` (``||g|| = C``, the box of half-width 50 never reached) moves both of its releases of every round from
the second by exactly ``2 a C`` given the earlier releases, whatever the schedule: a Gaussian composition of ``mu =
sqrt(2) mu_1`` on every schedule, so ``delta(epsilon)`` and ``D_alpha`` are those of ``mu``, above the claims.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from accounting.claim_forms import ApproxDP, RenyiDP, ZeroConcentratedDP
from accounting.profiles import PrivacyProfile
from asyncdp import Async, Deadline, LinkModel, Links, LogNormalLatency
from asyncdp.algorithms import Channel
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
SIGMA, STEP, CLIP, HORIZON = noisy_dgd.SIGMA, noisy_dgd.STEP, noisy_dgd.CLIP, 8
MU_ONE = 2 * STEP * CLIP * math.sqrt(HORIZON - 1) / SIGMA
TIMINGS = {"deadline": Deadline(period=1.0, deadline=0.8, drift=0.05, missing="renormalize"),
           "async": Async(rate=1.0)}
CLAIMS = {"approx-1e-3": lambda mu: ApproxDP(PrivacyProfile(mu).epsilon(1e-3), 1e-3),
          "approx-1e-5": lambda mu: ApproxDP(PrivacyProfile(mu).epsilon(1e-5), 1e-5),
          "zcdp": lambda mu: ZeroConcentratedDP(mu**2 / 2),
          "renyi-8": lambda mu: RenyiDP(8.0, 8.0 * mu**2 / 2)}


@dataclass(frozen=True)
class ResendDGD(noisy_dgd.NoisyDGD):
    """Sends ``x + sigma N`` twice a round with fresh draws; ``claim``: a key of ``CLAIMS``; ``copies``: the releases
    a round the claim counts (1: the user's slip; 2: the truth)."""

    claim: str = "zcdp"
    copies: int = 1
    name: ClassVar[str] = "test-red-resend-forms"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "gaussian"), Channel("r", "gaussian"))

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        return {"y": state["x"] + SIGMA * noise["y"], "r": state["x"] + SIGMA * noise["r"]}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return super().update(state, {"y": 0.5 * (mixed["y"] + mixed["r"])}, t, agents, problem)

    def claimed_form(self, horizon: int) -> Any:
        return CLAIMS[self.claim](MU_ONE * math.sqrt(self.copies))


def _check(timing: str, claim: str, copies: int) -> Any:
    rule = ResendDGD(claim=claim, copies=copies)
    links = Links(LinkModel(latency=LogNormalLatency(median=0.2, sigma=0.5), loss=0.1))
    with noisy_dgd.registered((ResendDGD,), lambda sc: GradientClass(CLIP, "l2"), origin=__file__,
                              lemma=lambda sc: {"y": noisy_dgd.lemma(sc), "r": noisy_dgd.lemma(sc)}):
        scenario, adjacent = noisy_dgd.rendezvous_pair(rule, _ring(), HORIZON, timing=TIMINGS[timing], links=links)
        return check_privacy(scenario, adjacent, runs=300, search_examples=0)


def _ring() -> Any:
    import topology

    return topology.static(noisy_dgd.ring(5))


@pytest.mark.parametrize("timing, claim", [("deadline", "approx-1e-3"), ("async", "approx-1e-5"),
                                           ("deadline", "zcdp"), ("async", "renyi-8")])
def test_a_claim_counting_one_release_a_round_is_refuted_and_the_witness_names_its_method(timing, claim):
    # statistical: every witness holds at its confidence (stated in it); the draws are fixed by the seed
    report = _check(timing, claim, copies=1)
    assert report.verdict == "violation", report.reasons
    w, form = report.witness, CLAIMS[claim](MU_ONE)
    truth = PrivacyProfile(MU_ONE * math.sqrt(2))
    assert w["claim_form"] == form.form and 0.99 < w["confidence"] < 1.0, w
    if form.form == "approximate":
        assert w["method"].startswith("importance sampling: one transcript of the worst pair per realized schedule")
        assert form.delta < w["delta_lower"] <= truth.delta(w["epsilon"]) and w["epsilon"] == form.epsilon, w
    else:
        assert w["method"] == "schedule order statistics of exact Renyi divergences", w
        assert w["renyi_allowed"] < w["renyi_witness"] <= truth.renyi(w["alpha"]), w
    assert {k: report.to_dict()["witness"][k] for k in ("method", "confidence", "claim_form")} == \
        {k: w[k] for k in ("method", "confidence", "claim_form")}  # the JSON says the same
    table = report.to_table()  # the witness's lines of the report: key, then value
    assert all(re.search(rf"^ +{k} +{re.escape(v)}$", table, re.M) for k, v in
               [("method", w["method"]), ("claim_form", w["claim_form"]), ("confidence", f"{w['confidence']:.6g}")])


@pytest.mark.parametrize("timing, claim", [("deadline", "approx-1e-3"), ("async", "zcdp")])
def test_the_claim_counting_both_releases_passes(timing, claim):
    assert _check(timing, claim, copies=2).verdict == "pass"
