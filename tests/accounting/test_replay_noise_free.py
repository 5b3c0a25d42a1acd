"""Replay with noise-free rounds (scale 0): point-mass densities, 0 / +inf / -inf log-ratios."""

from __future__ import annotations

import numpy as np
import pytest

from accounting.errors import AccountingError, PrivacyParameterError
from accounting.replay import NOISE_FREE_RTOL, ReplaySetup, replay_loss, sample_transcripts


class Shift:
    """Messages mask ``state``; the next state is the mixed message plus a private shift ``a``."""

    def __init__(self, a, x0):
        self.a, self.x0 = np.asarray(a, dtype=float), np.asarray(x0, dtype=float)

    def initial_state(self, runs):
        return np.broadcast_to(self.x0, (runs,) + self.x0.shape).copy()

    def message_mean(self, state, t):
        return state

    def next_state(self, state, mixed, t):
        return mixed + self.a


W = np.array([[0.5, 0.5], [0.5, 0.5]])
X0 = np.zeros((2, 1))


def _setup(scales, mechanism="gaussian"):
    return ReplaySetup(weights=[W] * len(scales), mechanism=mechanism, scales=np.asarray(scales, dtype=float))


def test_zero_scale_is_accepted_and_negative_is_not():
    assert _setup([0.0, 1.0]).scales.tolist() == [0.0, 1.0]
    with pytest.raises(PrivacyParameterError, match=r"round 1: noise scale must be >= 0 and finite, got -0.5"):
        _setup([-0.5])
    with pytest.raises(PrivacyParameterError, match="round 2: noise scale must be >= 0 and finite, got inf"):
        _setup([1.0, np.inf])


def test_noise_free_round_with_equal_means_costs_nothing():
    # round 1 releases x(0), the same under both problems: contribution exactly 0
    setup = _setup([0.0, 1.0])
    P, Pp = Shift([[1.0], [0.0]], X0), Shift([[-1.0], [0.0]], X0)
    y = sample_transcripts(setup, P, 50, seed=1)
    assert np.array_equal(y[:, 0], np.zeros((50, 2, 1)))  # released exactly
    total, per_round = replay_loss(y, setup, P, Pp, per_round=True)
    assert np.array_equal(per_round[:, 0], np.zeros(50))
    # round 2 is the Gaussian ratio of a state difference of (2, 0): L = (||y - m'||^2 - ||y - m||^2) / 2
    m = np.array([[1.0], [0.0]])
    mp = np.array([[-1.0], [0.0]])
    want = (((y[:, 1] - mp) ** 2).sum((1, 2)) - ((y[:, 1] - m) ** 2).sum((1, 2))) / 2.0
    assert np.allclose(total, want, rtol=0, atol=1e-12)


def test_unnoised_release_that_differs_has_infinite_loss_with_sign():
    # round 2 is noise-free and releases x(1) = W y(1) + a, which differs between the problems
    setup = _setup([1.0, 0.0])
    P, Pp = Shift([[1.0], [0.0]], X0), Shift([[-1.0], [0.0]], X0)
    y = sample_transcripts(setup, P, 40, seed=2)
    total, per_round = replay_loss(y, setup, P, Pp, per_round=True)
    assert np.isposinf(per_round[:, 1]).all() and np.isposinf(total).all()
    assert np.isfinite(per_round[:, 0]).all()
    # the same transcripts seen from P': they match P' nowhere -> -inf
    yp = sample_transcripts(setup, Pp, 40, seed=2)
    assert np.isneginf(replay_loss(yp, setup, P, Pp)).all()


def test_tolerance_is_relative_and_documented():
    setup = _setup([0.0])
    big = np.array([[1e6], [1.0]])
    P, same = Shift(np.zeros((2, 1)), big), Shift(np.zeros((2, 1)), big)
    inside = big + 0.5 * NOISE_FREE_RTOL * (1 + np.abs(big))  # within tolerance
    assert replay_loss(inside[None, None], setup, P, same)[0] == 0.0
    other = Shift(np.zeros((2, 1)), big + np.array([[0.0], [1e-6]]))
    assert np.isposinf(replay_loss(big[None, None], setup, P, other)[0])
    outside = big + 3 * NOISE_FREE_RTOL * (1 + np.abs(big))
    with pytest.raises(AccountingError, match="round 1 is noise-free but transcript 0's messages equal neither"):
        replay_loss(outside[None, None], setup, P, other)


def test_noise_free_rounds_draw_no_noise():
    # the noisy rounds of a setup with noise-free rounds interleaved get exactly the draws of the
    # all-noisy setup's first rounds: noise-free rounds do not advance the generator
    P = Shift(np.zeros((2, 1)), X0)
    y_mixed = sample_transcripts(_setup([0.0, 1.0, 0.0, 1.0]), P, 5, seed=7)
    y_dense = sample_transcripts(_setup([1.0, 1.0]), P, 5, seed=7)
    assert np.array_equal(y_mixed[:, 1], y_dense[:, 0])
    noise_2nd = y_dense[:, 1] - W @ y_dense[:, 0]  # the state is W y(1) (shift 0)
    assert np.allclose(y_mixed[:, 3] - y_mixed[:, 2], noise_2nd, atol=1e-12)


def test_infinite_in_both_directions_is_refused():
    # round 1 matches only P, round 2 only P': probability 0 under both
    setup = _setup([0.0, 0.0])

    class Fixed:
        def __init__(self, means):
            self.means = means

        def initial_state(self, runs):
            return np.zeros((runs, 2, 1))

        def message_mean(self, state, t):
            return np.broadcast_to(self.means[t - 1], state.shape)

        def next_state(self, state, mixed, t):
            return state

    y = np.array([[[[0.0], [0.0]], [[1.0], [1.0]]]])
    P, Pp = Fixed([np.zeros((2, 1)), np.zeros((2, 1))]), Fixed([np.ones((2, 1)), np.ones((2, 1))])
    with pytest.raises(AccountingError, match="matches only P in one noise-free round and only P' in another"):
        replay_loss(y, setup, P, Pp)


def test_unicast_noise_free_round_compares_every_copy():
    setup = ReplaySetup(weights=[W, W], mechanism="laplace", scales=np.array([1.0, 0.0]))
    P, Pp = Shift([[1.0], [0.0]], X0), Shift([[1.0], [0.0]], X0)
    y = sample_transcripts(setup, P, 10, seed=3, mode="unicast")
    assert np.array_equal(replay_loss(y, setup, P, Pp), np.zeros(10))
    Pq = Shift([[0.0], [0.0]], X0)
    assert np.isposinf(replay_loss(y, setup, P, Pq)).all()
    # one corrupted copy (link 0 -> 1) breaks the match with P too
    bad = y.copy()
    bad[:, 1, 0, 1] += 1.0
    with pytest.raises(AccountingError, match="round 2 is noise-free"):
        replay_loss(bad, setup, P, Pq)
