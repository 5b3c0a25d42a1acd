"""``privacy check`` of a false Rényi, zCDP, approximate or pure claim on a Muffliato subclass: ``violation``.

Truth (independent of the tool): Muffliato's eavesdropper sees every message ``y(t)``, and with the identity in
round 1 and plain gossip ``y(1) = x + sigma xi``, ``y(t) = W^(t-2) y(1)`` (``t >= 2``): the transcript is
``M y(1)`` with ``M = [I; I; W; W^2; ...]`` of full column rank, a Gaussian whose Rényi divergence between two
values of agent 0 is ``alpha mu^2 / 2`` with ``mu = |x_0 - x_0'| / sigma`` (computed below from ``M`` with a
pseudo-inverse). With values in ``[0, 1]`` and ``sigma = 1`` the worst pair, 0 vs 1, has ``mu = 1``: the rule is
exactly 0.5-zCDP, ``D_2 = 1``, ``delta(4.887) = 9.98e-7``, and ``delta(5) > 0``. So 0.45-zCDP, (2, 0.85)-RDP,
(4.887, 1e-7) and (5, 0) are false. The check said ``inconclusive`` to all four: Muffliato's record declared no
adjacency class, so only the user's pair (``x_0`` vs ``1 - x_0``, ``mu = 0.274``) was checked, and it refutes none.

A divergence witness rests on the escort draws of the worst pair's first look (50 runs), at confidence ``1 - a``
(``a`` its share of the check's error): it is the closed form less ``log(1/a) / (50 (alpha - 1))``, 0.11 at order 2
(``asyncdp.privacy.profiles.escort_renyi_lower``), so the Rényi claim is 0.85, not 0.9 (within that margin). The
exact ``delta`` refutes the approximate claim less the margin of tilted draws that kept every release's shift
(``asyncdp.privacy.profiles.exact_delta_lower``: at most the true ``9.98e-7``); the pure one is refuted by a
divergence (draws that keep the composed ``mu`` certify no margin for its ``delta``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pytest

from accounting.claim_forms import ClaimForm, PureDP, RenyiDP, ZeroConcentratedDP
from accounting.profiles import gaussian_profile_delta

from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import CheckOptions
from asyncdp.privacy.profiles import ESCORT_MU_RTOL
from asyncdp.privacy.observers import pairwise_figures
from asyncdp.problems.costs import RendezvousQuadratic
from asyncdp.problems.problem import Problem


@dataclass(frozen=True)
class _Claims(Muffliato):
    """Muffliato with a claim of any form (``form``)."""

    form: ClaimForm | tuple[float, float] = ZeroConcentratedDP(0.5)

    def claimed_form(self, horizon: int) -> ClaimForm | tuple[float, float]:
        return self.form


def _pair(form: ClaimForm | tuple[float, float] | None) -> tuple:
    scenario = Muffliato.example_scenario()
    if form is not None:
        scenario = replace(scenario, algorithm=_Claims(sigma=1.0, form=form))
    values = np.array(scenario.problem.costs.addresses)
    values[0] = 1.0 - values[0]
    return scenario, replace(scenario, problem=Problem(scenario.problem.domain, RendezvousQuadratic(values)))


def _transcript_mu(scenario, x0: float, x0_prime: float) -> float:
    """``mu`` of the eavesdropper's whole transcript (every message of every round) between two values of agent 0."""
    w = np.asarray(scenario.topology.dense(2), dtype=float)
    n, sigma = w.shape[0], scenario.algorithm.sigma
    blocks = [np.eye(n)] + [np.linalg.matrix_power(w, t - 2) for t in range(2, scenario.horizon + 1)]
    m = np.vstack(blocks)
    shift = m @ (np.eye(n)[0] * (x0 - x0_prime))
    return float(np.sqrt(shift @ np.linalg.pinv(sigma**2 * m @ m.T) @ shift))


def test_the_truth_worst_pair_is_exactly_half_zcdp():
    scenario, _ = _pair(None)
    mu = _transcript_mu(scenario, 0.0, 1.0)
    assert mu == pytest.approx(1.0, rel=1e-9)  # D_alpha = alpha / 2: rho = 0.5, D_2 = 1
    x0 = float(scenario.problem.costs.addresses[0, 0])
    assert _transcript_mu(scenario, x0, 1.0 - x0) == pytest.approx(abs(1 - 2 * x0), rel=1e-9)  # the user's: 0.274
    # the tool's own eavesdropper figure (at the sensitivity, the domain's diameter) agrees: D_2 = 1
    row = pairwise_figures(scenario, "eavesdropper", sources=[0]).rows[0]
    assert (row.kind, row.renyi) == ("exact", pytest.approx(1.0, rel=1e-9))


@pytest.mark.parametrize("form, name, method", [
    (ZeroConcentratedDP(0.45), "zcdp", "exact renyi divergence less the escort margin"),  # D_alpha = alpha / 2
    (RenyiDP(2.0, 0.85), "renyi", "exact renyi divergence less the escort margin"),  # D_2 = 1 - 0.11 > 0.85
    ((4.887, 1e-7), "approximate", "exact profile less the tilt margin"),  # delta(4.887) = 9.98e-7
    (PureDP(5.0), "pure", "exact renyi divergence less the escort margin"),  # D_alpha = alpha / 2 > 5 from 11
])
def test_a_false_claim_gets_a_certified_witness_of_the_value_class(form, name, method):
    report = check_privacy(*_pair(form), runs=200)
    assert report.verdict == "violation"
    w = next(e for e in report.evidence if e.method == "worst-case adjacency search").witness
    assert w["kind"] == "worst-case" and (w["address"], w["address_prime"]) == ([0.0], [1.0])
    assert w["method"].startswith(method) and w["claim_form"] == name, w
    assert 0.99 < w["confidence"] < 1.0, w  # a share of the check's 0.05 error
    if name == "approximate":  # no witness above the truth, delta(4.887) of mu = 1
        assert 1e-7 < w["delta_lower"] <= gaussian_profile_delta(1.0, 4.887), w
    if name != "pure":  # the user's pair (mu = 0.274) refutes only the pure claim (test below)
        assert report.witness == w and report.to_dict()["witness"] == w
        table = report.to_table()
        assert all(s in table for s in (method, "confidence", "claim_form", "antipodal points of the domain"))


def test_the_users_pair_exact_profile_refutes_a_pure_claim():
    # mu = 0.274 on lockstep runs: D_alpha = 0.0375 alpha > 5 from alpha = 134, less the margin of the escort draws
    # (its delta(5) = 1.8e-75 > 0 is no witness with Gaussian releases); no run's loss comes near 5 (z = 18)
    scenario, adjacent = _pair(PureDP(5.0))
    report = check_privacy(scenario, adjacent, runs=200)
    replay = next(e for e in report.evidence if e.method == "exact replay").witness
    assert report.verdict == "violation" and replay["kind"] == "replay"
    assert replay["method"].startswith("exact renyi divergence less the escort margin"), replay
    assert replay["claim_form"] == "pure" and replay["renyi_witness"] > replay["renyi_allowed"] == 5.0
    # the escort draws err at half the replay's share (the thresholds get the other half): the closed form at the
    # draws' tolerance on mu, less log(1/a) / (n (alpha - 1)) for the n = runs draws
    a = CheckOptions().alpha_share / 2
    assert 1 - replay["confidence"] == pytest.approx(a, rel=1e-9), replay
    alpha, n = replay["alpha"], replay["runs"]
    x0 = float(scenario.problem.costs.addresses[0, 0])
    mu = _transcript_mu(scenario, x0, 1.0 - x0)  # the user's pair, 0.274 (test above)
    closed = alpha * mu**2 / 2 * (1 - ESCORT_MU_RTOL) ** 2
    assert replay["renyi_witness"] == pytest.approx(closed - math.log(1 / a) / (n * (alpha - 1)), rel=1e-6), replay


def test_a_true_claim_keeps_its_verdict():
    assert check_privacy(*_pair(None), runs=200).verdict == "pass"  # Muffliato's own claim
    # exactly the true 0.5-zCDP: no witness; a subclass inherits the lemma, tested at the class's extremes only
    report = check_privacy(*_pair(ZeroConcentratedDP(0.5)), runs=200)
    assert report.verdict == "inconclusive" and report.witness is None
    assert any("antipodal pair(s) of its value class only" in r for r in report.reasons)
