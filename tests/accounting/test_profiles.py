"""Exact privacy profiles of shift pairs, checked against independent computations.

The references here are written from the definition ``delta(epsilon) =
E_P[(1 - e^(epsilon - L))_+]``: the Gaussian form with scipy.stats.norm, and
Laplace expectations by numerical integration over the loss distribution of
``Lap(0,1)`` vs ``Lap(r,1)`` (atoms ``r`` with mass 1/2 and ``-r`` with mass
``e^-r / 2``, density ``e^(-(r - l)/2) / 4`` on ``(-r, r)``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp.rdp_privacy_accountant import _laplace_rdp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import norm

from accounting.errors import PrivacyParameterError, UnknownMechanismError
from accounting.profiles import (
    PrivacyProfile,
    gaussian_mu,
    gaussian_profile_delta,
    gaussian_profile_epsilon,
    laplace_profile_delta,
    schedule_average_lower,
    schedule_renyi_lower,
    shift_profile,
)


def over_laplace_loss(r: float, f, kinks: tuple[float, ...] = ()) -> float:
    """E[f(l)] for the privacy loss l of Lap(0,1) vs Lap(r,1) under P.

    ``kinks`` are the points where ``f`` is not smooth; the integration splits there (without the split,
    an ``f`` that is zero on most of (-r, r) and positive on a short end interval can be missed by quad).
    """
    inside = [k for k in kinks if -r < k < r]
    inner, _ = integrate.quad(lambda l: math.exp(-(r - l) / 2) / 4 * f(l), -r, r, epsabs=1e-13, epsrel=1e-10,
                              limit=200, points=inside or None)
    return 0.5 * f(r) + math.exp(-r) / 2 * f(-r) + inner


def gauss_h(mu: float, x: float) -> float:
    """E[(1 - e^(x - L))_+] for L ~ N(mu^2/2, mu^2), any real x, with scipy.stats.norm."""
    return norm.cdf(-x / mu + mu / 2) - math.exp(x) * norm.cdf(-x / mu - mu / 2)


def test_gaussian_mu_adds_squared_ratios_of_l2_norms():
    assert gaussian_mu([[3.0, 4.0], [0.0, 0.0, 1.0]], [5.0, 0.5]) == pytest.approx(math.sqrt(1 + 4))


@given(mu=st.floats(0.05, 5.0), eps=st.floats(0.0, 6.0))
def test_gaussian_closed_form_matches_scipy(mu, eps):
    ref = gauss_h(mu, eps)
    if ref > 1e-10:  # below that the reference itself cancels
        assert gaussian_profile_delta(mu, eps) == pytest.approx(ref, rel=1e-7, abs=1e-15)


@pytest.mark.parametrize("mu, eps, truth", [  # truth: 50-digit mpmath evaluation of the closed form
    (1e-7, 2e-7, 8.490703465899933e-10), (1e-6, 3e-6, 3.8215489027958744e-10),
    (1e-6, 5e-6, 5.3461788992627121e-14), (1e-5, 4e-5, 7.1454013389220997e-11),
    (1e-3, 0.004, 7.1595624349382469e-9), (0.3, 1.0, 5.4887496446129366e-5)])
def test_gaussian_profile_of_a_small_mu_keeps_its_digits(mu, eps, truth):
    # the two log_ndtr terms cancel to ~1e-16 / mu^2: at mu = 1e-6 the witness was 1.1e-8 above the truth,
    # so a tight, true (3e-6, delta)-DP claim was refuted as an exact profile
    from accounting.claim_forms import ApproxDP
    from accounting.mechanisms import gaussian_delta
    from accounting.refutation import refute

    assert gaussian_profile_delta(mu, eps) == pytest.approx(truth, rel=1e-12, abs=0.0)
    assert gaussian_delta(mu, 1.0, eps) == pytest.approx(truth, rel=1e-12, abs=0.0)
    assert not refute(ApproxDP(eps, truth * (1 + 1e-10)), profile=PrivacyProfile(mu)).refuted


def test_gaussian_delta_of_a_small_mu_at_a_large_or_infinite_epsilon_is_zero_without_warnings():
    # the small-mu form computes both of its branches everywhere; e^x of the one not taken overflowed (a
    # RuntimeWarning to the user at epsilon = 800) and x = inf gave NaN where the closed form gives -inf
    import warnings

    from accounting.mechanisms import _log_gaussian_delta_small_mu, gaussian_delta

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gaussian_delta(0.1, 1.0, 800.0) == 0.0
        got = _log_gaussian_delta_small_mu(0.1, np.array([800.0, np.inf, -np.inf]))
    assert got[0] < -1e7 and got[1] == -np.inf and got[2] == 0.0


def test_gaussian_tiny_delta_keeps_relative_precision():
    # at mu = 0.5, epsilon = 6: delta ~ 1e-22; the asymptotic tail form of Phi gives it to ~1e-3
    mu, eps = 0.5, 6.0
    a, b = -eps / mu + mu / 2, -eps / mu - mu / 2
    approx = norm.pdf(a) * (1 / -a - 1 / -a**3) - math.exp(eps) * norm.pdf(b) * (1 / -b - 1 / -b**3)
    assert gaussian_profile_delta(mu, eps) == pytest.approx(approx, rel=1e-2)


@given(mu=st.floats(0.05, 5.0), log10_delta=st.floats(-10, -1))
def test_gaussian_epsilon_inverts_delta(mu, log10_delta):
    d = 10.0**log10_delta
    e = gaussian_profile_epsilon(mu, d)
    if e > 0:
        assert gaussian_profile_delta(mu, e) == pytest.approx(d, rel=1e-8)


def test_composed_gaussian_releases_equal_one_gaussian_and_sit_between_the_pld_estimates():
    p = shift_profile([("gaussian", 0.5, 1.0), ("gaussian", [0.3, 0.4], 0.5), ("gaussian", 2.0, 4.0)])
    mu = math.sqrt(0.25 + 1.0 + 0.25)
    assert p.gaussian_mu == pytest.approx(mu) and p.exact and p.method == "gaussian closed form"
    pess = pld_lib.from_gaussian_mechanism(1.0, sensitivity=mu, value_discretization_interval=1e-4)
    for eps in (0.0, 0.5, 2.0, 5.0):
        assert p.delta(eps) == pytest.approx(gauss_h(mu, eps), rel=1e-7)
        assert p.delta(eps) <= pess.get_delta_for_epsilon(eps)


@given(r=st.floats(0.01, 6.0), eps=st.floats(0.0, 6.0))
@example(r=2.921875, eps=2.9140625)  # epsilon just below r: positive only on a short end interval
def test_single_laplace_closed_form_matches_integration(r, eps):
    ref = over_laplace_loss(r, lambda l: max(0.0, 1 - math.exp(eps - l)), kinks=(eps,))
    assert laplace_profile_delta(r, eps) == pytest.approx(ref, rel=1e-7, abs=1e-12)
    p = PrivacyProfile(0.0, (r,))
    assert p.exact and p.delta(eps) == laplace_profile_delta(r, eps)


@settings(max_examples=10)  # nested numerical integration: ~1 s per example
@given(r1=st.floats(0.05, 2.0), r2=st.floats(0.05, 2.0), eps=st.floats(0.0, 3.0))
def test_composed_laplace_pld_is_a_lower_bound_and_tight(r1, r2, eps):
    def h2(x):  # E over the second coordinate
        return over_laplace_loss(r2, lambda l: max(0.0, 1 - math.exp(x - l)))

    exact = over_laplace_loss(r1, lambda l: h2(eps - l))
    p = PrivacyProfile(0.0, (r1, r2))
    assert not p.exact and p.method == "optimistic pld"
    got = p.delta(eps)
    assert got <= exact * (1 + 1e-9) + 1e-12
    # optimistic rounding moves each coordinate's loss down by < h = 1e-4, so L by < 2h, and
    # (1 - e^(eps - L + s))_+ >= (1 - e^(eps - L))_+ - (e^s - 1): delta drops by at most e^(2h) - 1
    assert got >= exact - math.expm1(2e-4) - 1e-12


@given(mu=st.floats(0.1, 3.0), r=st.floats(0.05, 3.0), eps=st.floats(0.0, 5.0))
def test_mixed_gaussian_laplace_pld_is_a_lower_bound(mu, r, eps):
    exact = over_laplace_loss(r, lambda l: gauss_h(mu, eps - l))
    p = PrivacyProfile(mu, (r,))
    got = p.delta(eps)
    assert got <= exact * (1 + 1e-7) + 1e-12
    assert got >= exact - math.expm1(1e-4) - 1e-12  # one Laplace coordinate rounded down by < h = 1e-4


def test_laplace_profile_is_zero_beyond_the_largest_loss_and_epsilon_inverts():
    p = PrivacyProfile(0.0, (0.3, 0.4))
    assert p.max_loss == pytest.approx(0.7) and p.delta(0.7) == 0.0
    one = PrivacyProfile(0.0, (1.0,))
    assert one.delta(one.epsilon(0.1)) == pytest.approx(0.1, rel=1e-12)
    two = PrivacyProfile(0.0, (1.0, 1.0))
    e = two.epsilon(0.05)
    assert two.delta(e) <= 0.05 + 1e-9 and two.delta(max(0.0, e - 0.01)) > 0.05


@given(mu=st.floats(0.0, 3.0), r=st.floats(0.0, 3.0), alpha=st.floats(1.2, 64.0))
def test_renyi_divergence_is_exact(mu, r, alpha):
    expected = alpha * mu * mu / 2 + (_laplace_rdp(r, alpha) if r > 0 else 0.0)
    assert PrivacyProfile(mu, (r,) if r > 0 else ()).renyi(alpha) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_laplace_vector_shifts_split_into_coordinates():
    p = shift_profile([("laplace", [0.5, -0.25, 0.0], 0.5)])
    assert p.laplace_ratios == (1.0, 0.5) and p.gaussian_mu == 0.0


def test_schedule_average_lower_bounds_the_mean_profile():
    profiles = [PrivacyProfile(mu) for mu in np.linspace(0.8, 1.2, 300)]
    mean = float(np.mean([p.delta(3.0) for p in profiles]))
    b = schedule_average_lower(profiles, 3.0, confidence=0.99)
    # power: with 300 schedules the Bernstein slack leaves at least 40% of the mean (cap <= 1.78 x the largest)
    assert 0.4 * mean < b.lower < mean and b.method == "schedule average"


def test_schedule_renyi_lower_holds_at_its_confidence_and_is_nearly_exact_for_one_profile():
    # the schedule's profile: mu 2 with probability 0.97, else 0 (a rare schedule that hides the change); the pair's
    # divergence with the schedule seen is log E exp((alpha - 1) alpha mu^2 / 2) / (alpha - 1), exact here
    alpha, n, trials, conf = 2.0, 20, 400, 0.9
    truth = math.log(0.03 + 0.97 * math.exp((alpha - 1) * alpha * 2.0)) / (alpha - 1)
    profiles = [PrivacyProfile(0.0), PrivacyProfile(2.0)]
    rng = np.random.default_rng(5)
    def bound() -> float:
        drawn = [profiles[int(k)] for k in (rng.random(n) < 0.97)]
        return schedule_renyi_lower(drawn, [alpha], confidence=conf)[0].lower

    over = sum(bound() > truth for _ in range(trials))
    # at most 10% of the trials exceed the truth; 3 binomial standard errors of slack (fixed seed); the smallest
    # sampled divergence alone (every one of the 20 draws is mu = 2 in 54% of the trials) would exceed it
    assert over / trials <= 0.1 + 3 * math.sqrt(0.09 / trials)
    b = schedule_renyi_lower([PrivacyProfile(1.0)] * 300, [2.0, 10.0], confidence=0.95)
    assert [x.alpha for x in b] == [2.0, 10.0] and all(x.method.startswith("schedule order statistics") for x in b)
    # every schedule has D_alpha = alpha / 2 = m: the bound is m + log(p + (1 - p) e^(-(alpha - 1) m)) / (alpha - 1)
    # with p = a^(1/300), a = 0.05 / (2 orders * 16 ranks 1, 2, ..., 128 and 300, 299, ..., 173), within 1.5% of m
    # at alpha = 2
    p = (0.05 / 32) ** (1 / 300)
    assert b[0].lower == pytest.approx(1.0 + math.log(p + (1 - p) * math.exp(-1.0)), rel=1e-12)
    assert 0.985 < b[0].lower < 1.0 and 4.99 < b[1].lower < 5.0
    with pytest.raises(PrivacyParameterError, match="at least 2 profiles"):
        schedule_renyi_lower([PrivacyProfile(1.0)], [2.0])


def test_schedule_renyi_lower_from_floor_zero_is_the_escort_margin_for_one_profile():
    # floor 0: a sample counts only where an escort draw kept mu (else 0), so no X >= 1 is assumed: with every
    # schedule at D_alpha = m the bound is m + log(p) / (alpha - 1), p = a^(1/300), a = 0.05 / (1 order * 16 ranks)
    # (the lockstep margin log(1/a) / (n (alpha - 1)) of asyncdp.privacy.profiles.escort_renyi_lower)
    b = schedule_renyi_lower([PrivacyProfile(1.0)] * 300, [2.0], confidence=0.95, floor=0.0)[0]
    assert b.lower == pytest.approx(1.0 - math.log(16 / 0.05) / 300, rel=1e-12)
    assert b.lower < schedule_renyi_lower([PrivacyProfile(1.0)] * 300, [2.0], confidence=0.95)[0].lower
    with pytest.raises(PrivacyParameterError, match="floor must be 0 or 1"):
        schedule_renyi_lower([PrivacyProfile(1.0)] * 3, [2.0], floor=0.5)


def test_schedule_renyi_lower_is_not_undone_by_a_few_schedules_that_hide_the_change():
    # 300 schedules, 9 of them with divergence 0 (the change hidden), the rest mu = 2: the pair's D_2 is
    # log(0.03 + 0.97 e^4) = 3.970; the smallest sampled divergence is 0, and so was the bound resting on it alone
    profiles = [PrivacyProfile(0.0)] * 9 + [PrivacyProfile(2.0)] * 291
    truth = math.log(0.03 + 0.97 * math.exp(4.0))
    b = schedule_renyi_lower(profiles, [2.0], confidence=0.95)[0]
    assert 0.95 * truth < b.lower < truth
    # a quarter of the schedules hiding it: still above the divergence the others alone would give at 0.48 weight
    # (rank 128's Clopper-Pearson bound, its share of the error split over 16 ranks)
    half = schedule_renyi_lower([PrivacyProfile(0.0)] * 75 + [PrivacyProfile(2.0)] * 225, [2.0])[0]
    assert math.log(0.52 + 0.48 * math.exp(4.0)) < half.lower < math.log(0.25 + 0.75 * math.exp(4.0))


def test_schedule_renyi_lower_sees_a_few_schedules_with_a_far_larger_divergence():
    # 300 schedules, 15 of them (5%) with mu = 3, the rest mu = 0.5 (a rule stepping further after a stale message):
    # D_4 = log(0.95 e^(3 * 4 * 0.125) + 0.05 e^(3 * 4 * 4.5)) / 3 = 17.0, carried by the 5%; the ranks up to the
    # median saw only D_4 = 0.5 of the others, and the bound stayed below it (a claim of 2 was not refuted)
    profiles = [PrivacyProfile(0.5)] * 285 + [PrivacyProfile(3.0)] * 15
    truth = math.log(0.95 * math.exp(1.5) + 0.05 * math.exp(54.0)) / 3
    b = schedule_renyi_lower(profiles, [4.0], confidence=0.95)[0]
    assert 2.0 < 0.8 * truth < b.lower < truth


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 300])
def test_schedule_renyi_lower_counts_each_rank_once_in_its_union_bound(n):
    # ranks 1, 2, 4, ... up to n / 2 and n, n - 1, n - 3, ... down to n / 2 + 1 never meet: 2 per power of two
    # below n / 2, each with its share of 1 - confidence; with every schedule at D_alpha = m the layer-cake sum is
    # (1 - q_1) + q_1 e^((alpha - 1) m), q_1 = share^(1/n) (the weights of the other ranks add up to q_1)
    ranks = 2 * len([k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k <= max(1, n // 2)])
    q1 = (0.05 / ranks) ** (1 / n)
    b = schedule_renyi_lower([PrivacyProfile(1.0)] * n, [2.0], confidence=0.95)[0]
    assert b.lower == pytest.approx(math.log(1 - q1 + q1 * math.e), rel=1e-9)


def test_schedule_renyi_lower_holds_at_its_confidence_with_a_rare_heavy_schedule():
    # statistical (seeded): 1% of the schedules have mu = 3, the rest mu = 0.5, so D_4 = log(0.99 e^1.5 + 0.01
    # e^54) / 3 = 16.5 rests on about 3 of the 300; the bound (confidence 0.9) may exceed it in at most 10% of
    # 400 repetitions, 61 at the 99.9% quantile of Binomial(400, 0.1); weighting the top ranks by their empirical
    # frequency instead would exceed it whenever 4 or more heavy schedules were drawn (35% of repetitions)
    light, heavy = PrivacyProfile(0.5), PrivacyProfile(3.0)
    truth = math.log(0.99 * math.exp(1.5) + 0.01 * math.exp(54.0)) / 3
    draws = np.random.default_rng(20261128).random((400, 300)) < 0.01
    over = sum(schedule_renyi_lower([heavy if h else light for h in row], [4.0], confidence=0.9)[0].lower > truth
               for row in draws)
    assert over <= 61, over


@pytest.mark.parametrize("call, exc, match", [
    (lambda: shift_profile([("exponential", 1.0, 1.0)]), UnknownMechanismError, "release 0: unknown mechanism"),
    (lambda: shift_profile([("gaussian", 1.0, 0.0)]), PrivacyParameterError, "release 0: std must be > 0"),
    (lambda: shift_profile([("laplace", [1.0, np.nan], 1.0)]), PrivacyParameterError, "release 0: shift must be"),
    (lambda: shift_profile([("gaussian", 1.0)]), PrivacyParameterError, "expected \\(mechanism, shift, scale\\)"),
    (lambda: gaussian_mu([1.0], [1.0, 2.0]), PrivacyParameterError, "shifts has 1 releases but stds has 2"),
    (lambda: PrivacyProfile(1.0).renyi(1.0), PrivacyParameterError, "alpha must be > 1"),
    (lambda: PrivacyProfile(-1.0), PrivacyParameterError, "gaussian_mu must be >= 0"),
    (lambda: PrivacyProfile(1.0).epsilon(0.0), PrivacyParameterError, "delta must lie in"),
])
def test_bad_input_is_named(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@given(mu=st.floats(0.01, 20.0), eps=st.floats(1e-6, 50.0))
def test_vectorized_gaussian_form_agrees_with_the_mechanisms_module(mu, eps):
    from accounting.mechanisms import gaussian_delta

    assert gaussian_profile_delta(mu, eps) == pytest.approx(gaussian_delta(mu, 1.0, eps), rel=1e-12, abs=1e-300)


def test_mixed_epsilon_is_on_the_safe_side_of_the_lower_bound_curve():
    p = PrivacyProfile(0.8, (0.3, 0.6))
    e = p.epsilon(1e-4)
    assert p.delta(e) > 1e-4 and p.delta(e + 1e-9) <= 1e-4


def _shifts(runs, rounds, agents, d, values):
    out = np.zeros((runs, rounds, agents, d))
    for (t, i), v in values.items():
        out[:, t - 1, i] = v
    return out


def test_profile_from_deterministic_shifts_composes_channels():
    from accounting.profiles import profile_from_shifts

    g = _shifts(4, 3, 2, 2, {(1, 0): [0.3, 0.4], (2, 0): [0.0, 1.0]})
    lap = _shifts(4, 3, 2, 1, {(3, 1): [0.5]})
    c = profile_from_shifts({"y": g, "z": lap}, {"y": np.array([1.0, 1.0, 2.0]), "z": np.full((3, 2), 0.25)},
                            {"y": "gaussian", "z": "laplace"})
    assert c.varying is None and c.noise_free is None
    # round 1: |(0.3, 0.4)| / 1 = 0.5; round 2: |(0, 1)| / 1 = 1; the Laplace coordinate: 0.5 / 0.25 = 2
    assert c.profile.gaussian_mu == pytest.approx(math.sqrt(0.25 + 1.0)) and c.profile.laplace_ratios == (2.0,)


def test_profile_from_shifts_refuses_varying_shifts_and_flags_noise_free_ones():
    from accounting.profiles import profile_from_shifts

    g = _shifts(3, 2, 2, 1, {(1, 0): [0.5]})
    g[2, 1, 1, 0] = 1e-3  # run 2, round 2, agent 1 differs
    c = profile_from_shifts({"y": g}, {"y": np.ones(2)}, {"y": "gaussian"})
    assert c.profile is None and c.varying == ("y", 1, 2) and "differs between runs" in c.reason
    c = profile_from_shifts({"y": _shifts(2, 2, 1, 1, {(2, 0): [0.1]})}, {"y": np.array([1.0, 0.0])},
                            {"y": "laplace"})
    assert c.profile is None and c.noise_free == ("y", 0, 2) and "delta = 1" in c.reason
    # round-off between runs is tolerated; NaN (nothing released) is skipped
    g = _shifts(2, 1, 2, 1, {(1, 0): [0.5]})
    g[1, 0, 0, 0] += 1e-13
    g[:, 0, 1, 0] = np.nan
    assert profile_from_shifts({"y": g}, {"y": np.ones(1)}, {"y": "gaussian"}).profile.gaussian_mu == 0.5
    with pytest.raises(PrivacyParameterError, match="some coordinates of the shift are NaN"):
        profile_from_shifts({"y": np.array([[[[1.0, np.nan]]]])}, {"y": np.ones(1)}, {"y": "gaussian"})
    with pytest.raises(PrivacyParameterError, match="no scale or mechanism"):
        profile_from_shifts({"y": g}, {}, {"y": "gaussian"})
    with pytest.raises(PrivacyParameterError, match="scales must be finite"):
        profile_from_shifts({"y": g}, {"y": np.ones(3)}, {"y": "gaussian"})


def test_loss_renyi_lower_holds_and_is_close_on_laplace_losses():
    """Four Laplace releases of ratio 0.4: D_2 = 0.5393 (Mironov, Prop. 6). Each bound (confidence 0.95) exceeds it
    with probability at most 0.05, so more than 20 of 200 seeds above it has probability below 0.0012
    (binomial(200, 0.05) tail); the median bound with 1000 losses is above 0.3 (fixed seeds)."""
    from accounting.profiles import loss_renyi_lower

    r, k = 0.4, 4
    true = k * (r + math.log1p(math.expm1(-3 * r) / 3))
    below, lows = 0, []
    for seed in range(200):
        x = np.random.default_rng(seed).laplace(size=(1000, k))
        b = loss_renyi_lower((np.abs(x + r) - np.abs(x)).sum(axis=1), [2.0], cap_epsilon=k * r)[0]
        below += b.lower <= true
        lows.append(b.lower)
    assert below >= 180
    assert float(np.median(lows)) > 0.3


def test_loss_renyi_lower_truncates_a_loss_above_the_cap_and_refuses_nan():
    from accounting.profiles import loss_renyi_lower

    losses = np.r_[np.zeros(99), np.inf]
    b = loss_renyi_lower(losses, [2.0], cap_epsilon=1.0)[0]
    assert 0.0 <= b.lower < 1.0
    with pytest.raises(PrivacyParameterError, match="NaN"):
        loss_renyi_lower(np.r_[0.0, np.nan], [2.0], cap_epsilon=1.0)
    with pytest.raises(PrivacyParameterError, match="order"):
        loss_renyi_lower(np.zeros(3), [1.0], cap_epsilon=1.0)


def test_loss_renyi_lower_at_a_high_order_truncates_below_the_pure_bound():
    """Eight Laplace coordinates of ratio 0.283 (pure composition 2.26): at order 8, truncating only at
    exp(7 * 2.26) left a range so wide that the bound was 0; the levels below it keep D_8 >= 0.6 (true 1.45)."""
    from accounting.profiles import loss_renyi_lower

    x = np.random.default_rng(0).laplace(size=(1000, 8))
    losses = (np.abs(x + 0.2828) - np.abs(x)).sum(axis=1)
    assert 0.6 < loss_renyi_lower(losses, [8.0], cap_epsilon=8 * 0.2828, confidence=1 - 0.0033 / 4)[0].lower < 1.45


def test_loss_renyi_lower_at_an_order_whose_level_overflows_a_float():
    """Order 500, four Laplace releases of ratio 0.4: the level exp(499 * 1.6) overflows a float; the bound, formed
    in logs, is still below the true D_500 (Mironov, Prop. 6: 1.5945) and near it (a sixteenth of the losses are
    at the cap: D_500 >= 1.6 - log(16) / 499 = 1.5944)."""
    from accounting.profiles import loss_renyi_lower

    r, k, a = 0.4, 4, 500.0
    true = k * (r + math.log1p((a - 1) * math.expm1((1 - 2 * a) * r) / (2 * a - 1)) / (a - 1))
    x = np.random.default_rng(0).laplace(size=(1000, k))
    b = loss_renyi_lower((np.abs(x + r) - np.abs(x)).sum(axis=1), [a], cap_epsilon=k * r)[0]
    assert 1.58 < b.lower <= true
