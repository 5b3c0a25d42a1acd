"""Exact transcript replay and the auditors, on recursions written here in numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accounting.auditors import blackbox_audit, clopper_pearson, plrv_audit
from accounting.errors import AccountingError, PrivacyParameterError, UnknownMechanismError
from accounting.replay import ReplaySetup, replay_loss, sample_transcripts


class ConstantMean:
    """Every message masks the same value ``a`` (a single mechanism repeated)."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=float)

    def initial_state(self, runs):
        return np.broadcast_to(self.a, (runs,) + self.a.shape).copy()

    def message_mean(self, state, t):
        return state

    def next_state(self, state, mixed, t):
        return state


class Rendezvous:
    """Huang, Mitra and Vaidya (ICDCN 2015), eqs. (5)-(7) on the box [-1, 1]^n, written independently of asyncdp."""

    def __init__(self, addresses, c, q, x0):
        self.a, self.c, self.q, self.x0 = np.asarray(addresses, float), c, q, np.asarray(x0, float)

    def initial_state(self, runs):
        return np.broadcast_to(self.x0, (runs,) + self.x0.shape).copy()

    def message_mean(self, state, t):
        return state

    def next_state(self, state, mixed, t):
        gamma = self.c * self.q ** (t - 1)
        return np.clip(mixed - gamma * 2.0 * (mixed - self.a), -1.0, 1.0)


def test_single_laplace_release_loss_is_the_density_ratio():
    setup = ReplaySetup(weights=[np.eye(1)], mechanism="laplace", scales=np.array([2.0]))
    y = np.array([[[[0.3, -1.0]]], [[[5.0, 5.0]]]])  # (R=2, T=1, N=1, n=2)
    a, b = np.array([[0.0, 0.0]]), np.array([[1.0, 1.0]])
    got = replay_loss(y, setup, ConstantMean(a), ConstantMean(b))
    want = (np.abs(y[:, 0, 0] - b[0]).sum(-1) - np.abs(y[:, 0, 0] - a[0]).sum(-1)) / 2.0
    assert np.allclose(got, want, atol=1e-12)
    assert got.max() <= 2 / 2.0 + 1e-12  # ||a - b||_1 / scale


def _huang_setup(schedule_power_offset, eps, c, q, p, T, n_agents=2):
    c2, n = 4 * math.sqrt(2), 2
    t = np.arange(1, T + 1)
    scales = 2 * c2 * math.sqrt(n) * c * p ** (t - 1 + schedule_power_offset) / (eps * (p - q))
    w = np.full((n_agents, n_agents), 1.0 / n_agents)
    return ReplaySetup(weights=[w] * T, mechanism="laplace", scales=scales)


def test_vectorized_replay_equals_one_by_one():
    setup = _huang_setup(0, 1.0, 0.3, 0.5, 0.7, T=6)
    a = np.array([[1.0, 1.0], [0.0, 0.0]])
    ap = np.array([[-1.0, -1.0], [0.0, 0.0]])
    P, Pp = Rendezvous(a, 0.3, 0.5, np.zeros((2, 2))), Rendezvous(ap, 0.3, 0.5, np.zeros((2, 2)))
    y = sample_transcripts(setup, P, 25, seed=3)
    batch = replay_loss(y, setup, P, Pp)
    single = np.array([replay_loss(y[r], setup, P, Pp)[0] for r in range(25)])
    assert np.array_equal(batch, single)
    # per-round contributions add up, and round 1 (masking the common x(0)) contributes nothing
    total, per_round = replay_loss(y, setup, P, Pp, per_round=True)
    assert np.allclose(per_round.sum(1), total) and np.allclose(per_round[:, 0], 0.0)


def test_eq8_schedule_never_exceeds_epsilon_but_the_proof_schedule_does():
    """Opposite corners, projection rarely active at small steps: the proof's p^t schedule leaks ~eps/(2p)."""
    eps, c, q, p, T = 1.0, 0.05, 0.2, 0.3, 12
    a = np.array([[1.0, 1.0], [0.0, 0.0]])
    ap = np.array([[-1.0, -1.0], [0.0, 0.0]])
    P, Pp = Rendezvous(a, c, q, np.zeros((2, 2))), Rendezvous(ap, c, q, np.zeros((2, 2)))
    ok = _huang_setup(0, eps, c, q, p, T)
    losses = replay_loss(sample_transcripts(ok, P, 4000, seed=1), ok, P, Pp)
    assert losses.max() <= eps * (1 + 1e-9)
    assert plrv_audit(losses, eps).violation is False
    broken = _huang_setup(1, eps, c, q, p, T)
    losses_b = replay_loss(sample_transcripts(broken, P, 4000, seed=1), broken, P, Pp)
    report = plrv_audit(losses_b, eps)
    assert report.violation and losses_b[report.witness] == losses_b.max() > eps


def test_plrv_recovers_analytic_gaussian_delta():
    """One Gaussian release, sensitivity 1, sigma 1: delta(eps) is known in closed form (Balle-Wang)."""
    sens, sigma, eps, runs = 1.0, 1.0, 0.5, 200_000
    setup = ReplaySetup(weights=[np.eye(1)], mechanism="gaussian", scales=np.array([sigma]))
    P, Pp = ConstantMean([[0.0]]), ConstantMean([[sens]])
    losses = replay_loss(sample_transcripts(setup, P, runs, seed=7), setup, P, Pp)
    analytic = stats.norm.cdf(sens / (2 * sigma) - eps * sigma / sens) - math.exp(eps) * stats.norm.cdf(
        -sens / (2 * sigma) - eps * sigma / sens
    )
    report = plrv_audit(losses, eps, delta=analytic, confidence=0.999)
    assert report.delta_lower <= analytic <= report.delta_upper
    assert report.violation is False
    # claiming a delta below the truth is caught at this sample size
    assert plrv_audit(losses, eps, delta=analytic / 2, confidence=0.999).violation


def test_blackbox_bound_is_below_truth_and_detects_a_real_gap():
    rng = np.random.default_rng(11)
    b = 1.0  # Laplace(0,1) vs Laplace(1,1): true epsilon = 1
    r = blackbox_audit(rng.laplace(0, b, 40_000), rng.laplace(1, b, 40_000), alpha=0.05)
    assert 0.5 < r.epsilon_lower_bound <= 1.0
    assert r.confidence == pytest.approx(0.95)
    same = blackbox_audit(rng.laplace(0, b, 40_000), rng.laplace(0, b, 40_000), alpha=0.05)
    assert same.epsilon_lower_bound < 0.1


def test_clopper_pearson_matches_beta_quantiles():
    lo, hi = clopper_pearson(30, 100, 0.05)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 30, 71)) and hi == pytest.approx(stats.beta.ppf(0.975, 31, 70))
    assert clopper_pearson(100, 100, 0.05)[1] == 1.0


def test_clopper_pearson_gives_exactly_scipy_stats_beta_quantiles_over_a_grid():
    """The interval is computed with scipy.special directly; it must be the scipy.stats quantiles, bit for bit."""
    for trials in (1, 2, 7, 50, 333, 1000, 25_000):
        for successes in sorted({0, 1, trials // 3, trials // 2, trials - 1, trials}):
            for alpha in (0.05, 1e-3, 0.05 / 16, 1e-9):
                lo, hi = clopper_pearson(successes, trials, alpha)
                want_lo = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes,
                                                                          trials - successes + 1))
                want_hi = 1.0 if successes == trials else float(stats.beta.ppf(1 - alpha / 2, successes + 1,
                                                                              trials - successes))
                assert (lo, hi) == (want_lo, want_hi), (successes, trials, alpha)


def test_bad_input():
    with pytest.raises(UnknownMechanismError, match="'cauchy'"):
        ReplaySetup(weights=[np.eye(1)], mechanism="cauchy", scales=np.array([1.0]))
    with pytest.raises(PrivacyParameterError, match="round 2: noise scale must be >= 0 and finite"):
        ReplaySetup(weights=[np.eye(1)] * 2, mechanism="laplace", scales=np.array([1.0, -1.0]))
    setup = ReplaySetup(weights=[np.eye(1)], mechanism="laplace", scales=np.array([1.0]))
    with pytest.raises(AccountingError, match="2 rounds but the setup has 1"):
        replay_loss(np.zeros((1, 2, 1, 1)), setup, ConstantMean([[0.0]]), ConstantMean([[0.0]]))
    with pytest.raises(PrivacyParameterError, match="epsilon must be > 0, got 0"):
        plrv_audit(np.zeros(3), 0)
    with pytest.raises(PrivacyParameterError, match="delta must be in"):
        plrv_audit(np.zeros(3), 1.0, delta=1.5)
    with pytest.raises(PrivacyParameterError, match="at least 20 samples"):
        blackbox_audit(np.zeros(5), np.zeros(5))
    with pytest.raises(PrivacyParameterError, match="runs must be a positive integer"):
        sample_transcripts(setup, ConstantMean([[0.0]]), 0)
