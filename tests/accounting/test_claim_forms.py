"""Claim forms: conversions (checked against dp_accounting) and soundness of what each form allows."""

from __future__ import annotations

import math

import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from hypothesis import given
from hypothesis import strategies as st

from accounting.claim_forms import (
    DELTA_MEANING,
    FORMS,
    ApproxDP,
    PureDP,
    RenyiDP,
    ZeroConcentratedDP,
    approx_delta_bound,
    as_form,
    rdp_delta_bound,
    rdp_to_dp,
    zcdp_delta_bound,
    zcdp_to_dp,
    zcdp_to_rdp,
)
from accounting.claims import Claim
from accounting.errors import PrivacyParameterError
from accounting.profiles import PrivacyProfile, gaussian_profile_delta, laplace_profile_delta


@given(alpha=st.floats(1.02, 500.0), r=st.floats(0.0, 20.0), log10_delta=st.floats(-12, -1))
def test_improved_conversion_matches_dp_accounting(alpha, r, log10_delta):
    d = 10.0**log10_delta
    if d**2 + math.expm1(-r) > 0:  # dp_accounting answers 0 from the KL bound there
        return
    ref, _ = rdp_lib.compute_epsilon([alpha], [r], d)
    assert rdp_to_dp(alpha, r, d) == pytest.approx(max(0.0, ref), rel=1e-12, abs=1e-12)
    assert rdp_to_dp(alpha, r, d) <= rdp_to_dp(alpha, r, d, improved=False) + 1e-15
    assert rdp_to_dp(alpha, r, d, improved=False) == pytest.approx(r + math.log(1 / d) / (alpha - 1))


@given(alpha=st.floats(1.02, 500.0), r=st.floats(1e-3, 20.0), eps=st.floats(0.0, 30.0))
def test_rdp_delta_bound_is_never_below_dp_accountings_improved_bound(alpha, r, eps):
    ref, _ = rdp_lib.compute_delta([alpha], [r], eps)  # min of the improved and the KL bounds
    ours = rdp_delta_bound(alpha, r, eps)
    improved = math.exp(min(0.0, (alpha - 1) * (r - eps + math.log1p(-1 / alpha)) - math.log(alpha)))
    assert ours == pytest.approx(min(improved, math.exp(min(0.0, (alpha - 1) * (r - eps)))), rel=1e-12)
    assert ours >= ref * (1 - 1e-12) or ref == pytest.approx(math.sqrt(-math.expm1(-r)), rel=1e-9)


@given(rho=st.floats(1e-3, 10.0), log10_delta=st.floats(-12, -1))
def test_zcdp_conversion_beats_bun_steinke_and_matches_a_fine_order_grid(rho, log10_delta):
    d = 10.0**log10_delta
    got = zcdp_to_dp(rho, d)
    assert got <= rho + 2 * math.sqrt(rho * math.log(1 / d)) + 1e-12
    orders = [1.0 + 10 ** (k / 200) for k in range(-800, 1201)]
    ref, _ = rdp_lib.compute_epsilon(orders, [rho * a for a in orders], d)
    assert got <= ref + 1e-9 and got >= ref - 1e-3 * max(1.0, ref)


# --------------------------------------------------------------------------- soundness: what a true claim allows


@given(mu=st.floats(0.05, 4.0), eps=st.floats(0.0, 12.0), alpha=st.floats(1.05, 200.0))
def test_true_gaussian_renyi_and_zcdp_claims_allow_the_true_profile(mu, eps, alpha):
    true = gaussian_profile_delta(mu, eps)
    assert RenyiDP(alpha, alpha * mu * mu / 2).delta_bound(eps) >= true * (1 - 1e-9)
    assert ZeroConcentratedDP(mu * mu / 2).delta_bound(eps) >= true * (1 - 1e-9)


@given(mu=st.floats(0.05, 4.0), eps_c=st.floats(0.0, 8.0), eps=st.floats(0.0, 8.0))
def test_true_approximate_claims_allow_the_profile_at_every_epsilon(mu, eps_c, eps):
    dc = gaussian_profile_delta(mu, eps_c)
    if not 0 < dc < 1:
        return
    assert ApproxDP(eps_c, dc).delta_bound(eps) >= gaussian_profile_delta(mu, eps) * (1 - 1e-9)


@given(r=st.floats(0.01, 5.0), eps=st.floats(0.0, 6.0), alpha=st.floats(1.05, 200.0))
def test_true_pure_claims_allow_the_laplace_profile_and_divergence(r, eps, alpha):
    assert PureDP(r).delta_bound(eps) >= laplace_profile_delta(r, eps) * (1 - 1e-9)
    assert PureDP(r).renyi_bound(alpha) >= PrivacyProfile(0.0, (r,)).renyi(alpha) * (1 - 1e-9)


def test_the_pure_bound_is_randomized_response():
    # 1-DP randomized response: P = (e/(1+e), 1/(1+e)); delta(0) = (e - 1)/(1 + e)
    assert approx_delta_bound(1.0, 0.0, 0.0) == pytest.approx((math.e - 1) / (math.e + 1))
    assert approx_delta_bound(1.0, 1e-3, 5.0) == 1e-3


def test_zcdp_is_renyi_at_every_order_and_its_delta_bound_inverts_its_conversion():
    assert zcdp_to_rdp(0.3, 5.0) == pytest.approx(1.5)
    for rho, d in ((0.05, 1e-6), (0.5, 1e-5), (2.0, 1e-3)):
        assert zcdp_delta_bound(rho, zcdp_to_dp(rho, d)) == pytest.approx(d, rel=1e-4)


def test_forms_describe_themselves_and_name_what_delta_means():
    forms = [PureDP(1.0), ApproxDP(1.0, 1e-5), RenyiDP(8.0, 0.5), ZeroConcentratedDP(0.1)]
    assert [f.form for f in forms] == list(FORMS)
    assert [f.to_dict()["form"] for f in forms] == list(FORMS)
    assert all(f.delta_meaning == DELTA_MEANING[f.form] for f in forms)
    assert ApproxDP(1.0, 1e-5).epsilon_at(1e-6) == math.inf and ApproxDP(1.0, 1e-5).epsilon_at(1e-5) == 1.0
    assert ApproxDP(1.0, 1e-5).renyi_bound(2.0) == math.inf
    assert RenyiDP(8.0, 0.5).renyi_bound(8.0) == 0.5 and RenyiDP(8.0, 0.5).renyi_bound(8.5) == math.inf


def test_claim_keeps_its_api_and_gains_a_form():
    old = Claim("Huang, Mitra and Vaidya (ICDCN 2015)", "Theorem 5", 1.0, 0.0, "run")
    assert old.privacy_form() == PureDP(1.0) and old.form is None
    assert Claim("p", "s", 1.0, 1e-5, "run").privacy_form() == ApproxDP(1.0, 1e-5)
    rdp = Claim("p", "s", 1.418, 1e-5, "run", form=RenyiDP(10.0, 0.5))
    assert as_form(rdp) == RenyiDP(10.0, 0.5)
    with pytest.raises(PrivacyParameterError, match="disagrees with"):
        Claim("p", "s", 1.0, 0.0, "run", form=PureDP(2.0))
    with pytest.raises(PrivacyParameterError, match="form must be a claim form"):
        Claim("p", "s", 1.0, 0.0, "run", form=(1.0, 0.0))  # type: ignore[arg-type]


@pytest.mark.parametrize("call, match", [
    (lambda: PureDP(0.0), "epsilon must be > 0"),
    (lambda: ApproxDP(1.0, 0.0), "delta must lie in"),
    (lambda: RenyiDP(1.0, 0.5), "alpha must be > 1"),
    (lambda: ZeroConcentratedDP(-1.0), "rho must be > 0"),
    (lambda: rdp_to_dp(2.0, 1.0, 1.5), "delta must lie in"),
    (lambda: approx_delta_bound(1.0, 1.0, 0.0), "delta_claimed must lie in"),
    (lambda: as_form("1-DP"), "a claim must be a claim form"),
])
def test_bad_input_is_named(call, match):
    with pytest.raises(PrivacyParameterError, match=match):
        call()


def test_huge_epsilons_give_bounds_not_overflow_errors():
    """``epsilon ** 2`` raised OverflowError above ~1e154: a pure claim's Rényi bound is then epsilon itself (the
    min with alpha epsilon^2 / 2), and zCDP's delta(epsilon) at epsilon 1e300 is 0 (Bun and Steinke's bound
    underflows; every order's Mironov bound too)."""
    assert PureDP(1e200).renyi_bound(2.0) == 1e200
    assert zcdp_delta_bound(0.5, 1e300) == 0.0
