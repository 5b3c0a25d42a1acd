"""Exact loss of Gaussian views: closed forms, rank-deficient covariances, shifts outside the range, Monte Carlo."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from accounting.errors import AccountingError, PrivacyParameterError
from accounting.network.gaussian_views import (
    GaussianViewLoss,
    delta_from_mu,
    faint_directions,
    gaussian_view_loss,
    gaussian_view_losses,
    renyi_from_mu,
)


def test_one_dimensional_view_is_the_gaussian_mechanism():
    # y = a z, z ~ N(0, s^2), shift m: mu = |m| / (|a| s)
    loss = gaussian_view_loss([[2.0]], [3.0], noise=0.5)
    assert loss.mu == pytest.approx(3.0)
    assert loss.renyi(2.0) == pytest.approx(9.0)
    assert loss.kl() == pytest.approx(4.5)
    assert loss.in_range and loss.rank == 1 and loss.reason == ""


def test_an_independent_extra_value_changes_nothing():
    base = gaussian_view_loss([[1.0, 0.0]], [1.0], noise=[1.0, 1.0])
    more = gaussian_view_loss([[1.0, 0.0], [0.0, 1.0]], [1.0, 0.0], noise=[1.0, 1.0])
    assert base.mu == pytest.approx(more.mu) == pytest.approx(1.0)


def test_repeated_observation_is_rank_deficient_and_adds_nothing():
    # the same value seen twice: C = [[1, 1], [1, 1]] has rank 1; the shift (1, 1) is in its range
    twice = gaussian_view_loss([[1.0], [1.0]], [1.0, 1.0])
    assert twice.rank == 1 and twice.in_range
    assert twice.mu == pytest.approx(1.0)


def test_singular_noise_covariance():
    # z has covariance [[1, 1], [1, 1]] (z0 = z1); the view is z itself.
    # C = 2 u u^T, u = (1, 1)/sqrt 2, so C^+ = u u^T / 2 and (1, 1) C^+ (1, 1)^T = 2 / 2 = 1
    cov = np.array([[1.0, 1.0], [1.0, 1.0]])
    inside = gaussian_view_loss(np.eye(2), [1.0, 1.0], noise=cov)
    assert inside.mu == pytest.approx(1.0) and inside.rank == 1
    outside = gaussian_view_loss(np.eye(2), [1.0, 0.0], noise=cov)
    assert not outside.in_range and math.isinf(outside.mu)
    assert outside.range_residual == pytest.approx(1 / math.sqrt(2))


def test_shift_outside_the_range_is_reported_as_infinite():
    loss = gaussian_view_loss([[1.0], [1.0]], [1.0, -1.0])
    assert not loss.in_range
    assert math.isinf(loss.mu) and math.isinf(loss.renyi(2.0)) and math.isinf(loss.kl())
    assert loss.delta(5.0) == 1.0
    assert "range(C)" in loss.reason


def test_noise_free_view_with_a_shift_is_infinite_and_without_a_shift_is_zero():
    assert math.isinf(gaussian_view_loss(np.zeros((2, 3)), [0.0, 1.0]).mu)
    zero = gaussian_view_loss(np.zeros((2, 3)), [0.0, 0.0])
    assert zero.mu == 0.0 and zero.in_range


def test_several_shifts_at_once_match_one_at_a_time():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 6))
    shifts = rng.standard_normal((4, 3))
    together = gaussian_view_losses(a, shifts, noise=0.7)
    for j in range(3):
        assert together[j].mu == pytest.approx(gaussian_view_loss(a, shifts[:, j], noise=0.7).mu, rel=1e-10)


def _delta_by_integration(mu: float, eps: float) -> float:
    # delta(eps) = int max(0, p(y) - e^eps q(y)) dy with p = N(mu, 1), q = N(0, 1)
    def f(y: float) -> float:
        return max(0.0, stats.norm.pdf(y, mu) - math.exp(eps) * stats.norm.pdf(y))
    value, _ = integrate.quad(f, -20.0, 20.0 + mu, points=[mu / 2 + eps / mu], limit=200)
    return value


@pytest.mark.parametrize("mu,eps", [(0.5, 0.0), (1.0, 0.5), (2.0, 1.0), (3.0, 4.0)])
def test_privacy_profile_matches_numerical_integration(mu, eps):
    assert delta_from_mu(mu, eps) == pytest.approx(_delta_by_integration(mu, eps), abs=1e-9)


def test_profile_edge_cases_and_dp_event():
    assert delta_from_mu(0.0, 1.0) == 0.0
    assert delta_from_mu(math.inf, 1.0) == 1.0
    assert GaussianViewLoss(0.25, True, 0.0, 1, 0, 1).dp_event().noise_multiplier == 4.0
    assert type(GaussianViewLoss(math.inf, False, 1.0, 0, 0, 1).dp_event()).__name__ == "NonPrivateDpEvent"


def test_bad_parameters_are_named():
    with pytest.raises(PrivacyParameterError, match="alpha"):
        renyi_from_mu(1.0, 0.5)
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        delta_from_mu(1.0, -1.0)
    with pytest.raises(AccountingError, match="noise_map"):
        gaussian_view_loss([1.0, 2.0], [1.0])
    with pytest.raises(AccountingError, match="shifts must have 2 rows"):
        gaussian_view_losses(np.eye(2), np.ones(3))
    with pytest.raises(PrivacyParameterError, match="standard deviation 1"):
        gaussian_view_loss(np.eye(2), [1.0, 0.0], noise=[1.0, -1.0])
    with pytest.raises(AccountingError, match="positive semidefinite"):
        gaussian_view_loss(np.eye(2), [1.0, 0.0], noise=[[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(AccountingError, match="rank_rtol"):
        gaussian_view_loss(np.eye(2), [1.0, 0.0], rank_rtol=0.0)


# Monte Carlo: the privacy loss L = log p(y) - log p'(y), y ~ p, has mean KL = mu^2 / 2 and, for the exact
# pair, standard deviation mu. L is computed with scipy's multivariate normal (its own pseudo-inverse),
# independently of the code under test. With N samples the mean's standard error is mu / sqrt(N); the
# tolerance 4.9 standard errors is a two-sided 1e-6 level per example (50 examples: < 1e-4 in all).
N_MC = 4000
Z = 4.9


@settings(max_examples=25, derandomize=True)
@given(k=st.integers(1, 4), m=st.integers(1, 5), rank=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_kl_agrees_with_monte_carlo(k, m, rank, seed):
    # statistical: Z standard errors, a false failure has probability 1e-6 per example (draws fixed)
    rng = np.random.default_rng(seed)
    r = min(rank, k, m)
    a = rng.standard_normal((k, r)) @ rng.standard_normal((r, m))  # rank r: deficient when r < k
    shift = a @ rng.standard_normal(m) * 0.5  # in range(C)
    loss = gaussian_view_loss(a, shift)
    assert loss.in_range
    cov = a @ a.T
    z = rng.standard_normal((N_MC, m)) @ a.T
    p = stats.multivariate_normal(np.zeros(k), cov, allow_singular=True)
    q = stats.multivariate_normal(shift, cov, allow_singular=True)
    plrv = p.logpdf(z) - q.logpdf(z)
    plrv = np.atleast_1d(plrv)
    assert abs(plrv.mean() - loss.mu**2 / 2) <= Z * loss.mu / math.sqrt(N_MC) + 1e-9


def test_ambiguous_direction_is_flagged_and_lowers_mu():
    # A = diag(1, 1e-12), shift A (1, 1): exact-arithmetic mu^2 = 2. The weak direction lies between rounding
    # level (2 * eps) and the default tolerance 1e-10: dropped, mu^2 = 1, flagged as not exact.
    a = np.diag([1.0, 1e-12])
    shift = a @ np.ones(2)
    default = gaussian_view_loss(a, shift)
    assert default.dropped == 1 and not default.exact and default.in_range
    assert default.mu**2 == pytest.approx(1.0)
    fine = gaussian_view_loss(a, shift, rank_rtol=1e-14)
    assert fine.exact and fine.mu**2 == pytest.approx(2.0)
    # an exact dependency leaves only rounding-level singular values: not counted as ambiguous
    assert gaussian_view_loss(np.array([[1.0, 2.0], [2.0, 4.0]]), [1.0, 2.0]).exact


def test_a_variable_seen_only_below_rounding_level_is_an_ambiguous_direction():
    # rows (z0, 0.5 z0 + 1e-17 z1): exact arithmetic resolves z1 (mu^2 = 1 for the shift (0, 1e-17) of z1's
    # column), but the direction has singular value 1e-17, below rounding level: it was dropped uncounted and the
    # loss 0 (or an infinite one: the shift outside the numerical range) called exact
    a = np.array([[1.0, 0.0], [0.5, 1e-17]])
    loss = gaussian_view_loss(a, a[:, 1])
    assert not loss.exact and loss.dropped == 1
    # a faint variable inside the kept range adds no direction: still exact
    inside = np.array([[1.0, 1e-17], [0.5, 0.5e-17]])
    assert gaussian_view_loss(inside, inside[:, 0]).exact
    u, v = inside[:, :1] / np.linalg.norm(inside[:, 0]), np.array([[1.0], [0.0]])
    assert faint_directions(inside, u, v, 1e-10) == 0
    # nor does a faint entry of a row already in the kept row space (the view has full column rank)
    tall = np.array([[1.0, 0.0], [0.0, 1.0], [1e-17, 0.0]])
    assert gaussian_view_loss(tall, tall[:, 0]).exact


def test_a_faint_entry_of_a_variable_seen_strongly_mixed_is_an_ambiguous_direction():
    # rows (z0 + z1, z2, 1e-17 z0 + z2): z0 and z1 reach the view strongly but only as z0 + z1 (no column is faint);
    # the third row minus the second is 1e-17 z0, so exact arithmetic separates z0 (mu^2 = 1 for z0's column), while
    # the rank decision drops that direction at rounding level: 0.5 was called exact
    a = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1e-17, 0.0, 1.0]])
    loss = gaussian_view_loss(a, a[:, 0])
    assert loss.mu**2 == pytest.approx(0.5) and not loss.exact and loss.dropped == 1


def test_pld_matches_the_closed_form_profile():
    loss = GaussianViewLoss(0.8, True, 0.0, 1, 0, 1)
    pld = loss.pld()
    for eps in (0.1, 0.5, 1.5):
        # pessimistic discretization: at least the exact delta, close to it
        assert loss.delta(eps) - 1e-12 <= pld.get_delta_for_epsilon(eps) <= loss.delta(eps) + 1e-3
    with pytest.raises(AccountingError, match="no PLD"):
        GaussianViewLoss(math.inf, False, 1.0, 0, 0, 1).pld()


def test_a_shift_of_a_noise_free_value_is_infinite_for_certain_in_an_ambiguous_view():
    # y0 = z0, y1 = 1e-17 z1 (a faint direction: ambiguous, dropped), y2 noise-free. Moving y1 leaves the numerical
    # range along the faint direction (in exact arithmetic mu = 1e17: a lower estimate, not exact); moving y2 leaves
    # it where no noise reaches (in exact arithmetic too: mu = inf, exact whatever the view's ambiguity)
    g = [[1.0, 0.0], [0.0, 1e-17], [0.0, 0.0]]
    shifts = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]]).T  # columns: y1, y2, both moved
    faint, free, both = gaussian_view_losses(g, shifts)
    assert faint.dropped > 0 and math.isinf(faint.mu) and not faint.noise_free and not faint.exact
    assert math.isinf(free.mu) and free.noise_free and free.exact
    assert math.isinf(both.mu) and both.noise_free and both.exact
