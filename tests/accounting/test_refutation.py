"""Refutation of claims of every form from exact profiles and certified bounds; the accountant's own RDP/zCDP."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounting.claim_forms import ApproxDP, PureDP, RenyiDP, ZeroConcentratedDP
from accounting.delta_bounds import DeltaLowerBound, threshold_delta_lower
from accounting.errors import PrivacyParameterError
from accounting.ledger import Ledger, Release
from accounting.mechanisms import gaussian_sigma
from accounting.profiles import PrivacyProfile, gaussian_profile_delta, gaussian_profile_epsilon
from accounting.refutation import check_epsilon, refute
from accounting.renyi import accountant_confirms, ledger_rdp, ledger_zcdp


@given(mu=st.floats(0.05, 4.0), log10_delta=st.floats(-8, -2), alpha=st.floats(1.1, 100.0))
def test_true_claims_are_never_refuted_by_the_exact_profile(mu, log10_delta, alpha):
    d = 10.0**log10_delta
    p = PrivacyProfile(mu)
    eps = gaussian_profile_epsilon(mu, d)
    claims = [RenyiDP(alpha, alpha * mu * mu / 2), ZeroConcentratedDP(mu * mu / 2)]
    if eps > 0:
        claims.append(ApproxDP(eps, d))
    for c in claims:
        r = refute(c, profile=p, delta=d)
        assert not r.refuted, r


@pytest.mark.parametrize("delta_claimed", [1e-3, 1e-5])
def test_ten_times_under_calibrated_gaussian_is_refuted_by_its_exact_profile(delta_claimed):
    mu = 1.0 / gaussian_sigma(1.0, 1.0, 10 * delta_claimed)  # true delta(1) = 10x the claim
    r = refute(ApproxDP(1.0, delta_claimed), profile=PrivacyProfile(mu))
    assert r.refuted and r.confidence == 1.0 and r.method == "exact profile (gaussian closed form)"
    assert r.delta_witness == pytest.approx(10 * delta_claimed, rel=1e-9) and r.delta_allowed == delta_claimed


def test_gaussian_pairs_refute_every_pure_claim():
    r = refute(PureDP(1.0), profile=PrivacyProfile(0.1))  # delta(1) ~ 1e-23 > 0
    assert r.refuted and r.delta_witness > 0 and r.form == "pure"
    r = refute(PureDP(5.0), profile=PrivacyProfile(0.1))  # delta(5) underflows; D_alpha = alpha / 200 > 5
    assert r.refuted and r.method == "exact renyi divergence" and r.renyi_witness > 5.0


def test_renyi_and_zcdp_claims_are_refuted_by_exact_divergences():
    p = PrivacyProfile(1.0)  # D_alpha = alpha / 2: exactly 0.5-zCDP
    assert not refute(ZeroConcentratedDP(0.5), profile=p).refuted
    r = refute(ZeroConcentratedDP(0.45), profile=p)
    assert r.refuted and r.method == "exact renyi divergence"
    assert r.renyi_witness == pytest.approx(r.alpha / 2) and r.renyi_allowed == pytest.approx(0.45 * r.alpha)
    r = refute(RenyiDP(8.0, 3.9), profile=p)
    assert r.refuted and r.alpha == 8.0 and r.renyi_witness == pytest.approx(4.0)


def test_laplace_pair_refutes_a_pure_claim_below_its_total_ratio_and_not_above():
    p = PrivacyProfile(0.0, (0.4, 0.6))
    assert refute(PureDP(0.9), profile=p).refuted
    assert not refute(PureDP(1.0), profile=p).refuted


def test_sampled_bounds_refute_at_their_confidence_and_convert_renyi_claims():
    mu = 1.0 / gaussian_sigma(1.0, 1.0, 1e-2)
    losses = np.random.default_rng(0).normal(mu * mu / 2, mu, 1000)
    b = threshold_delta_lower(losses, 1.0, confidence=0.99)
    r = refute((1.0, 1e-3), bounds=[b])
    assert r.refuted and r.confidence == 0.99 and r.method == "clopper-pearson thresholds"
    assert not refute((1.0, 0.05), bounds=[b]).refuted
    # an RDP claim 4x below the true D_4 = 2 mu^2 of mu = 1 is checked at its conversion (epsilon 2.05)
    claim = RenyiDP(4.0, 2.0 / 4)
    eps = check_epsilon(claim, 1e-3)
    assert gaussian_profile_delta(1.0, eps) > 0.018  # the truth there: 18x what the claim allows
    b2 = threshold_delta_lower(np.random.default_rng(1).normal(0.5, 1.0, 1000), eps, confidence=0.99)
    assert b2.lower > claim.delta_bound(eps) and refute(claim, bounds=[b2]).refuted


def test_not_refuted_says_what_was_compared_and_serializes():
    r = refute(ApproxDP(1.0, 0.5), profile=PrivacyProfile(0.5),
               bounds=[DeltaLowerBound("hoeffding", 1.0, 0.01, 0.02, 0.95, 100)])
    assert not r.refuted and "profile delta(1)" in r.reason and "hoeffding" in r.reason
    d = r.to_dict()
    assert d["form"] == "approximate" and d["scope"].startswith("amplification by subsampling is out of scope")


def test_check_epsilon_needs_delta_for_renyi_claims():
    with pytest.raises(PrivacyParameterError, match="zcdp claim .* is checked at a delta"):
        check_epsilon(ZeroConcentratedDP(0.1))


# --------------------------------------------------------------------------- the accountant's own RDP / zCDP


def test_ledger_rdp_and_zcdp_are_the_closed_forms():
    led = Ledger([Release(0, 1, 1.0, "gaussian", 2.0, 1), Release(0, 2, 2.0, "gaussian", 4.0, 1),
                  Release(0, 3, 3.0, "laplace", 2.0, 1)])
    orders, rdp = ledger_rdp(led, 1.0, orders=[2.0, 8.0])
    mu2 = 0.25 + 0.0625
    for a, v in zip(orders, rdp):
        assert v == pytest.approx(a * mu2 / 2 + PrivacyProfile(0.0, (0.5,)).renyi(a), rel=1e-9)
    # the Laplace release's rho is sup_alpha D_alpha / alpha of its exact curve (0.1065), not pure DP's r^2 / 2 = 0.125
    exact = max(PrivacyProfile(0.0, (0.5,)).renyi(a) / a for a in 1.0 + np.geomspace(1e-6, 1e3, 4000))
    assert exact <= ledger_zcdp(led, 1.0) - mu2 / 2 <= exact * (1 + 1e-3)


def _laplace_rho_mp(lap: dict[float, int]) -> float:
    """``max R(alpha) / alpha`` of the composed Laplace curve (Mironov, Prop. 6) in 30 digits: its limit at
    ``alpha -> 1`` (the KL divergence) and 1 + 10^k for 121 values of k in [-6, 6]; a lower estimate of the sup."""
    import mpmath as mp

    with mp.workdps(30):
        def curve(a: Any) -> Any:
            return mp.fsum(n * mp.log(a / (2 * a - 1) * mp.exp((a - 1) * mp.mpf(r))
                                      + (a - 1) / (2 * a - 1) * mp.exp(-a * mp.mpf(r))) / (a - 1)
                           for r, n in lap.items())
        best = mp.fsum(n * (mp.mpf(r) + mp.expm1(-mp.mpf(r))) for r, n in lap.items())
        for k in np.linspace(-6.0, 6.0, 121):
            a = 1 + mp.mpf(10) ** mp.mpf(float(k))
            best = max(best, curve(a) / a)
        return float(best)


@pytest.mark.parametrize("lap", [{r: 1} for r in (1e-4, 1e-2, 0.1, 0.5, 1.0, 3.0, 10.0, 50.0)]
                         + [{0.4: 4}, {0.1: 3, 2.0: 1}, {1e-3: 10, 5.0: 2}, {0.5: 1, 1.0: 1, 3.0: 1, 10.0: 1}])
def test_laplace_zcdp_is_never_below_the_true_rho(lap):
    """The accountant certifies with laplace_zcdp: below the true rho, a false zCDP claim could pass."""
    from collections import Counter

    from accounting.renyi import laplace_zcdp

    truth = _laplace_rho_mp(lap)
    got = laplace_zcdp(Counter(lap))
    assert truth <= got <= min(truth * (1 + 1e-2), sum(n * r * r / 2 for r, n in lap.items()))


@given(st.dictionaries(st.floats(1e-3, 30.0), st.integers(1, 20), min_size=1, max_size=3))
def test_laplace_zcdp_is_never_below_the_true_rho_for_any_releases(lap):
    from collections import Counter

    from accounting.renyi import laplace_zcdp

    assert laplace_zcdp(Counter(lap)) >= _laplace_rho_mp(lap) * (1 - 1e-12)  # 1e-12: the float result's round-off


def test_accountant_confirms_each_form_from_its_own_sensitivity():
    led = Ledger([Release(0, t, float(t), "gaussian", 4.0, 1) for t in range(1, 17)])  # mu^2 = 16/16 = 1
    assert accountant_confirms(ZeroConcentratedDP(0.5), led, 1.0).confirmed
    assert not accountant_confirms(ZeroConcentratedDP(0.49), led, 1.0).confirmed
    assert accountant_confirms(RenyiDP(3.0, 1.5), led, 1.0).confirmed
    assert not accountant_confirms(PureDP(100.0), led, 1.0).confirmed  # Gaussian: never pure
    eps = gaussian_profile_epsilon(1.0, 1e-5)
    assert accountant_confirms(ApproxDP(eps + 1e-3, 1e-5), led, 1.0).confirmed
    assert not accountant_confirms(ApproxDP(eps - 1e-2, 1e-5), led, 1.0).confirmed
    lap = Ledger([Release(0, t, float(t), "laplace", 2.0, 1) for t in (1, 2)])
    c = accountant_confirms(PureDP(1.0), lap, 1.0)
    assert c.confirmed and c.accountant == pytest.approx(1.0) and c.to_dict()["method"] == "basic composition"
    # the claimed sensitivity is not used: a larger vouched sensitivity breaks the claim
    assert not accountant_confirms(PureDP(1.0), lap, 2.0).confirmed
    assert math.isclose(gaussian_profile_delta(1.0, eps), 1e-5, rel_tol=1e-9)
