"""Tilted lockstep transcripts: exact losses, exact weights, tight bounds on constructed and adaptive pairs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from accounting.delta_bounds import hockey_stick_terms, importance_delta_lower
from accounting.errors import PrivacyParameterError, UnknownMechanismError
from accounting.profiles import PrivacyProfile, gaussian_profile_epsilon
from accounting.replay import ReplaySetup, replay_loss, sample_transcripts
from accounting.tilted_replay import tilted_transcripts


class Consensus:
    """Averaging with a private offset per agent: message = state + offset; the state follows the mix."""

    def __init__(self, offsets):
        self.a = np.asarray(offsets, float)[:, None]

    def initial_state(self, runs):
        return np.zeros((runs,) + self.a.shape)

    def message_mean(self, state, t):
        return state + self.a

    def next_state(self, state, mixed, t):
        return mixed


class ClippedPull:
    """x <- clip(mixed - 0.5 (mixed - a), -1, 1): the shift between P and P' depends on the messages."""

    def __init__(self, offsets):
        self.a = np.asarray(offsets, float)[:, None]

    def initial_state(self, runs):
        return np.zeros((runs,) + self.a.shape)

    def message_mean(self, state, t):
        return state

    def next_state(self, state, mixed, t):
        return np.clip(mixed - 0.5 * (mixed - self.a), -1.0, 1.0)


W = np.full((3, 3), 1 / 3)


def setup(scale=1.0, rounds=4):
    return ReplaySetup([W] * rounds, "gaussian", np.full(rounds, scale))


def test_losses_are_the_exact_replay_losses_and_no_tilt_means_no_weights():
    s = setup()
    P, Pp = ClippedPull([0.8, 0.0, -0.3]), ClippedPull([-0.8, 0.0, -0.3])
    t = tilted_transcripts(s, P, Pp, 50, epsilon=1.0, mu_bound=2.0, seed=1)
    np.testing.assert_allclose(t.losses, replay_loss(t.transcripts, s, P, Pp), rtol=1e-12, atol=1e-12)
    flat = tilted_transcripts(s, P, Pp, 50, epsilon=1.0, mu_bound=2.0, seed=1, tilt=0.0)
    assert (flat.log_weights == 0).all() and flat.cap == 1.0


@pytest.mark.parametrize("true_delta", [1e-4, 1e-6])
def test_constructed_linear_pair_matches_its_exact_profile_and_refutes_a_10x_claim(true_delta):
    # the shift is the offset difference c in every round: mu = sqrt(T) c / s, deterministic
    rounds = 4
    mu = 1.2
    eps = gaussian_profile_epsilon(mu, true_delta)
    c = mu / math.sqrt(rounds)
    P, Pp = Consensus([0.0, 0.0, 0.0]), Consensus([c, 0.0, 0.0])
    t = tilted_transcripts(setup(1.0, rounds), P, Pp, 1000, epsilon=eps, mu_bound=mu, seed=7)
    np.testing.assert_allclose(t.realized_mu, mu, rtol=1e-12)
    b = importance_delta_lower(t.losses, t.log_weights, eps, confidence=0.99, cap=t.cap)
    exact = PrivacyProfile(mu).delta(eps)
    assert exact == pytest.approx(true_delta, rel=1e-8)
    assert 0.5 * exact < b.lower <= exact and b.refutes(true_delta / 10)


def test_adaptive_pair_agrees_with_plain_monte_carlo():
    # delta around 0.05: plain sampling measures it; the two estimates must agree within 5 standard errors
    s = setup(0.5, 5)
    P, Pp = ClippedPull([1.0, 0.0, 0.0]), ClippedPull([-1.0, 0.0, 0.0])
    eps = 1.0
    plain = replay_loss(sample_transcripts(s, P, 20_000, seed=3), s, P, Pp)
    z0 = hockey_stick_terms(plain, eps)
    t = tilted_transcripts(s, P, Pp, 20_000, epsilon=eps, mu_bound=float(np.sqrt(5) * 2 / 0.5 / 3), seed=4)
    z = np.exp(t.log_weights) * hockey_stick_terms(t.losses, eps)
    se = math.sqrt(z0.var() / z0.size + z.var() / z.size)
    assert z0.mean() > 0.01 and abs(z.mean() - z0.mean()) < 5 * se
    b = importance_delta_lower(t.losses[:1000], t.log_weights[:1000], eps, confidence=0.99, cap=t.cap)
    assert b.lower <= z0.mean() + 5 * math.sqrt(z0.var() / z0.size)


def test_bad_input_is_named():
    P = Consensus([0.0, 0.0, 0.0])
    with pytest.raises(UnknownMechanismError, match="need Gaussian noise"):
        tilted_transcripts(ReplaySetup([W], "laplace", np.ones(1)), P, P, 10, epsilon=1.0, mu_bound=1.0)
    with pytest.raises(PrivacyParameterError, match="mu_bound must be > 0"):
        tilted_transcripts(setup(), P, P, 10, epsilon=1.0, mu_bound=0.0)
    with pytest.raises(PrivacyParameterError, match="runs must be >= 2"):
        tilted_transcripts(setup(), P, P, 1, epsilon=1.0, mu_bound=1.0)
