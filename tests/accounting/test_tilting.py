"""Exponential tilts of shift pairs: the moment generating function, the sampler, the weights and the cap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate

from accounting.delta_bounds import hockey_stick_terms
from accounting.errors import PrivacyParameterError
from accounting.profiles import PrivacyProfile
from accounting.tilting import chernoff_log_cap, chernoff_tilt, log_mgf, tilted_sample


def laplace_mgf_by_integration(r: float, lam: float) -> float:
    """log E_P[e^(lam l)] for Lap(0,1) vs Lap(r,1), integrating over y."""
    f = lambda y: 0.5 * math.exp(-abs(y)) * math.exp(lam * (abs(y - r) - abs(y)))  # noqa: E731
    parts = [integrate.quad(f, a, b, epsabs=0, epsrel=1e-12)[0] for a, b in ((-np.inf, 0), (0, r), (r, np.inf))]
    return math.log(sum(parts))


@given(r=st.floats(0.01, 4.0), lam=st.floats(0.0, 6.0))
def test_laplace_log_mgf_matches_integration(r, lam):
    assert log_mgf(lam, laplace_ratios=[r]) == pytest.approx(laplace_mgf_by_integration(r, lam), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("r", [1e-3, 1e-5, 1e-7, 0.0999, 0.1001, 2.0])
@pytest.mark.parametrize("lam", [1e-6, 1e-2, 0.4, 50.0])
def test_laplace_log_mgf_keeps_its_digits_for_small_ratios_and_orders(r, lam):
    # the closed form lam r + log(...) cancels to lam (1 + lam) r^2 / 2; 40-digit reference (mpmath)
    import mpmath as mp

    with mp.workdps(40):
        c = 1 + 2 * mp.mpf(lam)
        ref = float(lam * mp.mpf(r) + mp.log((1 + mp.mpf(lam)) / c + mp.mpf(lam) / c * mp.exp(-c * mp.mpf(r))))
    assert log_mgf(lam, laplace_ratios=[r]) == pytest.approx(ref, rel=1e-13, abs=0.0)


def test_a_laplace_pair_does_not_refute_its_own_pure_or_zcdp_claim_at_tiny_ratios():
    # Lap(0, 1) vs Lap(1e-5, 1) is exactly 1e-5-DP, hence (1e-5)^2 / 2-zCDP: its exact divergence of order
    # 1.01 lay 2e-4 (relative) above the truth and above both claims' bound alpha epsilon^2 / 2 (a false violation)
    from accounting.claim_forms import PureDP, ZeroConcentratedDP
    from accounting.refutation import refute

    for r in (1e-5, 1e-6, 1e-7):
        profile = PrivacyProfile(0.0, (r,))
        assert not refute(PureDP(r), profile=profile).refuted
        assert not refute(ZeroConcentratedDP(r * r / 2), profile=profile).refuted


def test_gaussian_log_mgf_and_composition():
    assert log_mgf(2.0, gaussian_mus=[1.0, 1.0]) == pytest.approx(2 * 3 * 2 / 2)
    assert log_mgf(0.0, gaussian_mus=[1.0], laplace_ratios=[2.0]) == 0.0


def test_tilted_losses_have_the_tilted_mean():
    # under Q the mean loss is K'(lambda); 5 standard errors: a false failure has probability < 1e-6
    mus, ratios, lam, n = [0.6], [0.4, 1.1], 1.7, 200_000
    s = tilted_sample(gaussian_mus=mus, laplace_ratios=ratios, epsilon=2.0, runs=n,
                      rng=np.random.default_rng(11), tilt=lam)
    h = 1e-5
    slope = (log_mgf(lam + h, gaussian_mus=mus, laplace_ratios=ratios)
             - log_mgf(lam - h, gaussian_mus=mus, laplace_ratios=ratios)) / (2 * h)
    se = s.losses.std() / math.sqrt(n)
    assert abs(s.losses.mean() - slope) < 5 * se


def test_weights_reweight_to_the_exact_profile():
    # the weighted summands lie in [0, cap]; Hoeffding at 1e-6: |mean - delta| < cap sqrt(ln(2e6)/(2n))
    mus, ratios, eps, n = [0.7], [0.5, 0.5], 2.5, 100_000
    s = tilted_sample(gaussian_mus=mus, laplace_ratios=ratios, epsilon=eps, runs=n, rng=np.random.default_rng(4))
    z = np.exp(s.log_weights) * hockey_stick_terms(s.losses, eps)
    tol = s.cap * math.sqrt(math.log(2e6) / (2 * n))
    exact = PrivacyProfile(0.7, (0.5, 0.5), value_discretization_interval=1e-5).delta(eps)
    assert abs(z.mean() - exact) < tol + 1e-4 * exact  # + the optimistic PLD's own gap


@given(mu=st.floats(0.05, 4.0), eps=st.floats(0.0, 8.0), seed=st.integers(0, 2**32 - 1))
def test_every_weighted_summand_is_below_the_cap_and_the_cap_bounds_delta(mu, eps, seed):
    s = tilted_sample(gaussian_mus=[mu], laplace_ratios=[0.3], epsilon=eps, runs=500,
                      rng=np.random.default_rng(seed))
    z = np.exp(s.log_weights) * hockey_stick_terms(s.losses, eps)
    assert (z <= s.cap * (1 + 1e-9)).all()
    assert PrivacyProfile(mu, (0.3,)).delta(eps) <= s.cap * (1 + 1e-9)


def test_chernoff_tilt_minimizes_the_cap():
    grid = np.linspace(0.0, 10.0, 2001)
    for eps in (0.5, 2.0, 5.0):
        best = min(chernoff_log_cap(x, eps, gaussian_mus=[1.0], laplace_ratios=[0.5]) for x in grid)
        lam = chernoff_tilt(eps, gaussian_mus=[1.0], laplace_ratios=[0.5])
        assert chernoff_log_cap(lam, eps, gaussian_mus=[1.0], laplace_ratios=[0.5]) <= best + 1e-9


@pytest.mark.parametrize("call, match", [
    (lambda: log_mgf(-1.0, gaussian_mus=[1.0]), "tilt must be >= 0"),
    (lambda: log_mgf(1.0, gaussian_mus=[-1.0]), r"gaussian_mus\[0\] must be >= 0"),
    (lambda: log_mgf(1.0, laplace_ratios=[1.0, math.inf]), r"laplace_ratios\[1\] must be finite"),
    (lambda: tilted_sample(gaussian_mus=[1.0], epsilon=1.0, runs=1, rng=np.random.default_rng()), "runs must be"),
    (lambda: tilted_sample(gaussian_mus=[1.0], epsilon=1.0, runs=10, rng=0), "rng must be a numpy Generator"),
])
def test_bad_input_is_named(call, match):
    with pytest.raises(PrivacyParameterError, match=match):
        call()
