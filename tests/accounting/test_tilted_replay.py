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


# --- tilted transcripts on realized schedules (deadline and asynchronous runs) ------------------------------------


class Channelled:
    """A lockstep test rule as a :class:`accounting.replay_inputs.ChannelRule` on channel ``"y"``."""

    def __init__(self, rule):
        self.rule = rule

    def initial_state(self, runs):
        return self.rule.initial_state(runs)

    def message_means(self, state, t):
        return {"y": self.rule.message_mean(state, t)}

    def next_state(self, state, mixed, t):
        return self.rule.next_state(state, mixed["y"], t)


class Stale:
    """Two agents; at odd rounds agent 1 reads agent 0's message of the *next* round (it ran ahead), else this one's."""

    def __init__(self, horizon, ahead=True):
        self.horizon, self.ahead = horizon, ahead

    def dense(self, t):
        src = np.full((2, 2), t)
        if self.ahead and t % 2 == 1 and t < self.horizon:
            src[1, 0] = t + 1
        return np.full((2, 2), 0.5), src


def _scheduled(rule, rule_p, runs, horizon, schedules, *, scale=1.0, epsilon=1.0, mu_bound=1.0, seed=0, tilt=None):
    from accounting.replay_inputs import ChannelNoise
    from accounting.tilted_replay import tilted_scheduled_transcripts

    return tilted_scheduled_transcripts({"y": np.zeros((runs, horizon, 2, 1))}, schedules,
                                        {"y": ChannelNoise("gaussian", np.full(horizon, scale))}, Channelled(rule),
                                        Channelled(rule_p), epsilon=epsilon, mu_bound=mu_bound, seed=seed, tilt=tilt)


def test_scheduled_tilt_on_a_fixed_shift_pair_bounds_its_exact_profile_tightly():
    # agent 0's message is shifted by 0.5 every round whatever the schedule: mu = 0.5 sqrt(T) / s exactly
    horizon, runs = 6, 1000
    mu = 0.5 * math.sqrt(horizon)
    eps = gaussian_profile_epsilon(mu, 1e-6)
    out = _scheduled(Consensus([0.5, 0.0]), Consensus([0.0, 0.0]), runs, horizon, [Stale(horizon)] * runs,
                     epsilon=eps, mu_bound=mu, seed=3)
    assert out.passes > 2  # reads of a later round need more than one pass to settle
    np.testing.assert_allclose(out.realized_mu, mu, rtol=1e-12)
    bound = importance_delta_lower(out.losses, out.log_weights, eps, confidence=0.95, cap=out.cap)
    truth = PrivacyProfile(mu).delta(eps)
    assert bound.lower <= truth * (1 + 1e-9)  # fails with probability <= 0.05 (fixed seed)
    assert bound.lower > 0.5 * truth


def test_scheduled_tilt_weights_are_exact_when_the_shift_varies():
    # ClippedPull's shift depends on the messages; E_Q[w] = 1 and the weighted delta agrees with plain sampling
    horizon, runs = 4, 4000
    rule, rule_p = ClippedPull([0.8, 0.0]), ClippedPull([-0.8, 0.0])
    sched = [Stale(horizon)] * runs
    tilted = _scheduled(rule, rule_p, runs, horizon, sched, epsilon=1.0, seed=1, tilt=0.5)
    w = np.exp(tilted.log_weights)
    # Var(w) = E_P[w] - 1 <= e^(lambda^2 mu^2) - 1 with mu <= 1.6 sqrt(T) / s = 3.2: use the sample's own sd
    sd = w.std(ddof=1) / math.sqrt(runs)
    assert abs(w.mean() - 1.0) < 4.5 * sd  # two-sided normal level about 7e-6
    plain = _scheduled(rule, rule_p, runs, horizon, sched, epsilon=1.0, seed=2, tilt=0.0)
    np.testing.assert_array_equal(plain.log_weights, 0.0)
    a = hockey_stick_terms(plain.losses, 1.0)
    b = w * hockey_stick_terms(tilted.losses, 1.0)
    se = math.sqrt(a.var(ddof=1) / runs + b.var(ddof=1) / runs)
    assert abs(a.mean() - b.mean()) < 4.5 * se


def test_scheduled_tilt_refuses_laplace_noise():
    from accounting.replay_inputs import ChannelNoise
    from accounting.tilted_replay import tilted_scheduled_transcripts

    with pytest.raises(UnknownMechanismError, match="laplace"):
        tilted_scheduled_transcripts({"y": np.zeros((3, 2, 2, 1))}, [Stale(2)] * 3,
                                     {"y": ChannelNoise("laplace", np.ones(2))}, Channelled(Consensus([1.0, 0.0])),
                                     Channelled(Consensus([0.0, 0.0])), epsilon=1.0, mu_bound=1.0)


def test_without_reads_of_a_later_round_one_pass_settles_and_a_second_pass_changes_nothing():
    from accounting.replay_inputs import ChannelNoise, TiltedDraw
    from accounting.scheduled_replay import scheduled_replay

    horizon, runs = 5, 40
    P, Pp = ClippedPull([0.8, 0.0]), ClippedPull([-0.8, 0.0])
    out = _scheduled(P, Pp, runs, horizon, [Stale(horizon, ahead=False)] * runs, seed=2, mu_bound=2.0)
    assert out.passes == 1
    # the check the construction skipped, done here: a second pass on the first pass's transcript
    rng = np.random.default_rng(2)
    draw = TiltedDraw({"y": rng.standard_normal((runs, horizon, 2, 1))}, out.tilt, np.ones(horizon, dtype=bool))
    again = scheduled_replay(out.messages, [Stale(horizon, ahead=False)] * runs,
                             {"y": ChannelNoise("gaussian", np.ones(horizon))}, Channelled(P), Channelled(Pp),
                             pin_agent=[0, 1], draw=draw)
    np.testing.assert_array_equal(again.messages["y"], out.messages["y"])
    np.testing.assert_array_equal(again.log_weights, out.log_weights)
    np.testing.assert_array_equal(again.per_round.sum(axis=1), out.losses)


class Ahead:
    """Two agents; in round ``t`` agent 1 reads agent 0's message of round ``t + k_t`` (``k_t`` in ``{0, 1}`` given per
    round, capped at ``T``), agent 0 reads this round's: the run's causal order is acyclic (as a run's is; reading
    two rounds ahead while agent 0 reads agent 1's current round would close a cycle)."""

    def __init__(self, ahead):
        self.ahead = list(ahead)

    def dense(self, t):
        src = np.full((2, 2), t)
        src[1, 0] = min(len(self.ahead), t + self.ahead[t - 1])
        return np.full((2, 2), 0.5), src


def _full_passes(rule, rule_p, schedules, horizon, runs, *, seed, mu_bound, epsilon=1.0):
    """The construction as plain repeated passes over every run until no run changes (the reference; one pass
    where no combination reads a later round), and the number of passes after which nothing changed."""
    from accounting.replay_inputs import ChannelNoise, TiltedDraw
    from accounting.schedule_reads import reads_ahead
    from accounting.scheduled_replay import scheduled_replay
    from accounting.tilting import chernoff_tilt

    lam = chernoff_tilt(epsilon, gaussian_mus=[mu_bound])
    rng = np.random.default_rng(seed)
    draw = TiltedDraw({"y": rng.standard_normal((runs, horizon, 2, 1))}, lam, np.ones(horizon, dtype=bool))
    built = {"y": np.zeros((runs, horizon, 2, 1))}
    for passes in range(1, horizon + 2):
        out = scheduled_replay(built, schedules, {"y": ChannelNoise("gaussian", np.ones(horizon))}, Channelled(rule),
                               Channelled(rule_p), pin_agent=[0, 1], draw=draw)
        if passes == 1 and not reads_ahead(schedules, horizon, np.ones((horizon, 2), dtype=bool)):
            return out, 1
        if np.array_equal(out.messages["y"], built["y"], equal_nan=True):
            return out, passes - 1  # the pass that reproduced its input only showed that nothing changed
        built = out.messages
    raise AssertionError("did not settle")


def test_runs_settling_at_different_passes_get_what_repeated_full_passes_give():
    # runs whose reads ahead chain over 0 to 5 rounds settle at different passes; replaying only the
    # unsettled runs again must give every run the values of the plain construction, entry for entry
    horizon = 6
    patterns = [[0] * 6, [1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0], [0, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0]]
    sched = [Ahead(patterns[r % len(patterns)]) for r in range(25)]
    P, Pp = ClippedPull([0.8, 0.0]), ClippedPull([-0.8, 0.0])
    out = _scheduled(P, Pp, len(sched), horizon, sched, seed=4, mu_bound=2.0)
    ref, passes = _full_passes(P, Pp, sched, horizon, len(sched), seed=4, mu_bound=2.0)
    assert out.passes == passes > 2  # no pass only to see that nothing changes
    np.testing.assert_array_equal(out.messages["y"], ref.messages["y"])
    np.testing.assert_array_equal(out.log_weights, ref.log_weights)
    np.testing.assert_array_equal(out.losses, ref.per_round.sum(axis=1))
    np.testing.assert_array_equal(out.realized_mu, ref.tilted_mu)


@pytest.mark.parametrize("batch", [False, True])
def test_unsettled_runs_are_replayed_on_their_own_schedules(batch):
    # the same check with a batch of schedules (dense_runs, sliced by runs) instead of one object per run
    from hypothesis import example, given, settings
    from hypothesis import strategies as st

    horizon = 5

    class Batch:
        def __init__(self, scheds):
            self.s = list(scheds)

        def __len__(self):
            return len(self.s)

        def __getitem__(self, runs):
            return Batch(self.s[runs])

        def dense_runs(self, t):
            got = [s.dense(t) for s in self.s]
            return np.stack([g[0] for g in got]), np.stack([g[1] for g in got])

    @settings(max_examples=15, deadline=None)
    @given(st.lists(st.lists(st.integers(0, 1), min_size=horizon, max_size=horizon), min_size=2, max_size=8),
           st.integers(0, 2**16))
    @example([[0, 0, 1, 1, 0], [0, 0, 0, 0, 0]], 29861)  # the clip hides a changed read ahead: one pass more
    def check(ahead, seed):
        sched = [Ahead(a) for a in ahead]
        P, Pp = ClippedPull([0.8, 0.0]), ClippedPull([-0.8, 0.2])
        out = _scheduled(P, Pp, len(sched), horizon, Batch(sched) if batch else sched, seed=seed, mu_bound=2.0)
        ref, passes = _full_passes(P, Pp, sched, horizon, len(sched), seed=seed, mu_bound=2.0)
        # never fewer passes than the values need; one more where the clip maps a changed message read ahead to
        # the same value (only the values show that; the fixed case above pins the exact count)
        assert passes <= out.passes <= passes + 1
        np.testing.assert_array_equal(out.messages["y"], ref.messages["y"])
        np.testing.assert_array_equal(out.log_weights, ref.log_weights)
        np.testing.assert_array_equal(out.losses, ref.per_round.sum(axis=1))

    check()


def _shared_batch(one, runs, method, asked):
    """A batch of ``runs`` copies of the schedule ``one`` that offers the replay ``method`` ("gather_index" or
    "shared_round"), recording the rounds it is asked for in ``asked``, and refusing to be read run by run."""
    from accounting.round_gather import gather_index
    from accounting.schedule_reads import dense_round
    from accounting.shared_rounds import shared_round

    class Shared:
        def __len__(self):
            return runs

        def __getitem__(self, sl):
            raise AssertionError("the replay reads every run of the batch at once")

        def dense_runs(self, t):
            return dense_round([one] * runs, t)

    def offered(self, t):
        asked.append(t)
        return gather_index(self.dense_runs(t)[1]) if method == "gather_index" else shared_round(*one.dense(t))

    setattr(Shared, method, offered)
    return Shared()


@pytest.mark.parametrize("method", ["gather_index", "shared_round"])
@pytest.mark.parametrize("ahead", [False, True])
def test_a_batch_with_its_own_rounds_gives_what_one_schedule_per_run_gives(ahead, method):
    # the batch's gather index is read for a pass over every run (the later passes over the unsettled runs use
    # the replay's own); its shared rounds are read by every pass (the later passes too, and the search for reads
    # ahead): the same transcripts, losses and weights, bit for bit
    horizon, runs = 5, 30
    one = Stale(horizon, ahead=ahead)
    asked: list[int] = []
    P, Pp = ClippedPull([0.8, 0.0]), ClippedPull([-0.8, 0.2])
    got = _scheduled(P, Pp, runs, horizon, _shared_batch(one, runs, method, asked), seed=4, mu_bound=2.0)
    ref = _scheduled(P, Pp, runs, horizon, [one] * runs, seed=4, mu_bound=2.0)
    if method == "gather_index":
        assert asked == list(range(1, horizon + 1))
    else:
        assert all(asked.count(t) == got.passes + 1 for t in range(1, horizon + 1)) and len(asked) == horizon * (
            got.passes + 1)
    assert got.passes == ref.passes and (got.passes > 1) == ahead
    for a, b in ((got.messages["y"], ref.messages["y"]), (got.log_weights, ref.log_weights),
                 (got.losses, ref.losses), (got.realized_mu, ref.realized_mu)):
        np.testing.assert_array_equal(a, b)


def test_a_tilted_replays_weights_are_its_tilted_rounds_terms_from_its_own_residuals():
    # the weights by the tilt's formula (accounting.tilting), recomputed round by round from what the replay
    # returns: the gap mu - mu' is y - mu' less y - mu (equal up to round-off), the density ratio its per-round loss
    from accounting.replay_inputs import ChannelNoise, TiltedDraw
    from accounting.scheduled_replay import scheduled_replay

    horizon, runs, tilt = 6, 30, 0.7
    scales = np.array([1.0, 0.5, 2.0, 0.0, 1.5, 1.0])  # a round released without noise too
    tilted_rounds = np.array([True, False, True, True, True, False])
    P, Pp = ClippedPull([0.8, 0.0]), ClippedPull([-0.8, 0.0])
    rng = np.random.default_rng(5)
    draw = TiltedDraw({"y": rng.standard_normal((runs, horizon, 2, 1))}, tilt, tilted_rounds)
    out = scheduled_replay({"y": np.zeros((runs, horizon, 2, 1))}, [Stale(horizon, ahead=False)] * runs,
                           {"y": ChannelNoise("gaussian", scales)}, Channelled(P), Channelled(Pp), pin_agent=[0, 1],
                           draw=draw)
    log_w, mu2 = np.zeros(runs), np.zeros(runs)
    for k in range(horizon):
        if scales[k] > 0 and tilted_rounds[k]:
            gap = np.nan_to_num(out.residuals_prime["y"][:, k] - out.residuals["y"][:, k])
            m2 = (gap ** 2).reshape(runs, -1).sum(axis=1) / scales[k] ** 2
            log_w += tilt * (1 + tilt) * m2 / 2 - tilt * out.per_round[:, k]
            mu2 += m2
    assert (mu2 > 0).all()  # the pair moves the releases: weights that are not all zero
    np.testing.assert_allclose(out.log_weights, log_w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.tilted_mu, np.sqrt(mu2), rtol=1e-12)


# --- unicast: every receiver gets its own noisy copy ---------------------------------------------------------------


class AheadUnicast:
    """Three agents mixing equally; in odd rounds receiver 1 reads sender 0's copy of the next round (it ran ahead)."""

    def __init__(self, horizon):
        self.horizon = horizon

    def dense(self, t):
        src = np.full((3, 3), t)
        if t % 2 == 1 and t < self.horizon:
            src[1, 0] = t + 1
        return np.full((3, 3), 1 / 3), src


def _unicast_tilt(runs, horizon, *, epsilon, mu_bound, seed):
    from accounting.replay_inputs import ChannelNoise
    from accounting.tilted_replay import tilted_scheduled_transcripts

    template = np.zeros((runs, horizon, 3, 3, 1))
    template[:, :, np.arange(3), np.arange(3)] = np.nan  # no copy to oneself
    noise = {"y": ChannelNoise("gaussian", np.full(horizon, 1.0))}
    pair = Channelled(Consensus([0.5, 0.0, 0.0])), Channelled(Consensus([0.0, 0.0, 0.0]))
    return tilted_scheduled_transcripts({"y": template}, [AheadUnicast(horizon)] * runs, noise, *pair, epsilon=epsilon,
                                        mu_bound=mu_bound, seed=seed), noise, pair


def test_a_unicast_tilt_moves_each_copy_by_its_shift_and_its_weights_are_the_copies_density_ratios():
    # agent 0 sends 2 copies a round, each shifted by 0.5 whatever the schedule: mu = 0.5 sqrt(2 T) exactly. The
    # weights are checked against log p_P(y) - log q(y) computed copy by copy from an untilted replay of the drawn
    # transcripts (the proposal's mean of a copy: its mean under P moved by tilt times its own shift)
    from accounting.scheduled_replay import scheduled_replay

    horizon, runs = 4, 50
    mu = 0.5 * math.sqrt(2 * horizon)
    out, noise, pair = _unicast_tilt(runs, horizon, epsilon=2.0, mu_bound=mu, seed=3)
    assert out.passes > 1  # the read ahead is of a copy a pass changed
    np.testing.assert_allclose(out.realized_mu, mu, rtol=1e-12)
    y = out.messages["y"]
    assert np.isnan(y[:, :, [0, 1, 2], [0, 1, 2]]).all() and not np.isnan(y[:, :, 0, 1:]).any()
    assert (y[:, :, 0, 1] != y[:, :, 0, 2]).all()  # each copy its own noise
    plain = scheduled_replay(out.messages, [AheadUnicast(horizon)] * runs, noise, *pair, unicast=True)
    r, r_p = plain.residuals["y"], plain.residuals_prime["y"]
    shift = np.nan_to_num(r_p - r)  # m - m' of every copy
    np.testing.assert_allclose(shift[:, :, 0, 1:], 0.5, rtol=1e-12)
    np.testing.assert_allclose(shift[:, :, 1:], 0.0, atol=1e-12)
    moved = np.nan_to_num(r) - out.tilt * shift  # y less the proposal's mean
    log_w = -(np.nan_to_num(r) ** 2 - moved ** 2).reshape(runs, -1).sum(axis=1) / 2
    np.testing.assert_allclose(out.log_weights, log_w, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out.losses, plain.losses, rtol=1e-12, atol=1e-12)


def test_a_unicast_tilt_bounds_the_copies_composed_profile_tightly():
    # statistical (fixed seed): the bound is below the exact delta of the copies' composition unless an event of
    # probability 0.05 happened, and within a factor 2 of it
    horizon, runs = 4, 1000
    mu = 0.5 * math.sqrt(2 * horizon)
    eps = gaussian_profile_epsilon(mu, 1e-6)
    out, _, _ = _unicast_tilt(runs, horizon, epsilon=eps, mu_bound=mu, seed=5)
    bound = importance_delta_lower(out.losses, out.log_weights, eps, confidence=0.95, cap=out.cap)
    truth = PrivacyProfile(mu).delta(eps)
    assert 0.5 * truth < bound.lower <= truth * (1 + 1e-9)


def _plain_passes(template, schedules, noise, pair, draw):
    """The reference construction: every run replayed (every agent pinned) until a pass reproduces its input;
    its last replay and the number of passes that changed something."""
    from accounting.scheduled_replay import scheduled_replay

    built, unicast = {"y": template.copy()}, template.ndim == 5
    for passes in range(20):
        ref = scheduled_replay(built, schedules, noise, *pair, unicast=unicast, pin_agent=list(range(template.shape[2])),
                               draw=draw)
        if np.array_equal(ref.messages["y"], built["y"], equal_nan=True):
            return ref, passes
        built = ref.messages
    raise AssertionError("the plain passes did not settle")


class OneWayAhead:
    """Three agents; agent 1 sends agent 0 nothing (agent 0 mixes agents 0 and 2 only), and in odd rounds receiver 1
    reads sender 0's copy ``0 -> 1`` of the next round: the copy read ahead has no reverse copy ``1 -> 0``."""

    def __init__(self, horizon):
        self.horizon = horizon

    def dense(self, t):
        w, src = np.full((3, 3), 1 / 3), np.full((3, 3), t)
        w[0] = [0.5, 0.0, 0.5]
        src[0, 1] = 0
        if t % 2 == 1 and t < self.horizon:
            src[1, 0] = t + 1
        return w, src


def test_a_unicast_tilt_settles_on_the_copy_a_receiver_reads_ahead_sender_to_receiver():
    # the construction must not stop while the copy 0 -> 1 that receiver 1 read ahead still changes: checked against
    # plain passes over every run until nothing changes (a settle check reading the copy 1 -> 0, never sent, stopped
    # after the first pass, its weights those of values the transcript no longer holds)
    from accounting.replay_inputs import ChannelNoise, TiltedDraw
    from accounting.tilted_replay import tilted_scheduled_transcripts

    horizon, runs, seed = 5, 20, 8
    template = np.zeros((runs, horizon, 3, 3, 1))
    template[:, :, np.arange(3), np.arange(3)] = np.nan  # no copy to oneself
    template[:, :, 1, 0] = np.nan  # agent 1 sends agent 0 nothing
    noise = {"y": ChannelNoise("gaussian", np.full(horizon, 1.0))}
    pair = Channelled(ClippedPull([0.8, 0.0, 0.0])), Channelled(ClippedPull([-0.8, 0.0, 0.0]))
    sched = [OneWayAhead(horizon)] * runs
    out = tilted_scheduled_transcripts({"y": template}, sched, noise, *pair, epsilon=1.0, mu_bound=2.0, seed=seed)
    draw = TiltedDraw({"y": np.random.default_rng(seed).standard_normal(template.shape)}, out.tilt,
                      np.ones(horizon, dtype=bool))
    ref, passes = _plain_passes(template, sched, noise, pair, draw)
    assert out.passes == passes > 1
    np.testing.assert_array_equal(out.messages["y"], ref.messages["y"])
    np.testing.assert_array_equal(out.log_weights, ref.log_weights)
    np.testing.assert_array_equal(out.losses, ref.per_round.sum(axis=1))


class ChainAhead:
    """Four agents; in round 1 agent ``k`` reads agent ``k + 1``'s message of round 2 (``k < 3``): a chain of reads
    ahead through three agents' round-2 releases, each computed from the next one's (acyclic, as a run's is)."""

    def dense(self, t):
        w, src = 0.5 * np.eye(4), np.diag(np.full(4, t))
        if t == 1:
            w[np.arange(3), np.arange(1, 4)] = 0.5
            src[np.arange(3), np.arange(1, 4)] = 2
        w[3, 3] = 1.0 if t == 1 else 0.5
        if t == 2:
            w[np.arange(4), (np.arange(4) + 1) % 4] = 0.5
            src[np.arange(4), (np.arange(4) + 1) % 4] = 2
        return w, src


def test_a_chain_of_reads_ahead_through_several_agents_settles_in_more_passes_than_rounds():
    # the causal order runs through releases, not rounds: agent 2's round-2 release is computed from agent 3's, agent
    # 1's from agent 2's, agent 0's from agent 1's, so the construction settles in 4 passes on 2 rounds (each pass
    # fixes the next release of the chain), what plain passes over every run until nothing changes give; it was
    # refused as "did not settle within 3 passes" (T + 1)
    from accounting.replay_inputs import ChannelNoise, TiltedDraw
    from accounting.tilted_replay import tilted_scheduled_transcripts

    horizon, runs, seed = 2, 10, 6
    template = np.zeros((runs, horizon, 4, 1))
    noise = {"y": ChannelNoise("gaussian", np.full(horizon, 1.0))}
    pair = Channelled(ClippedPull([0.8, 0.0, 0.0, 0.0])), Channelled(ClippedPull([-0.8, 0.0, 0.0, 0.0]))
    sched = [ChainAhead()] * runs
    out = tilted_scheduled_transcripts({"y": template}, sched, noise, *pair, epsilon=1.0, mu_bound=2.0, seed=seed)
    draw = TiltedDraw({"y": np.random.default_rng(seed).standard_normal(template.shape)}, out.tilt,
                      np.ones(horizon, dtype=bool))
    ref, passes = _plain_passes(template, sched, noise, pair, draw)
    assert out.passes == passes == 4
    np.testing.assert_array_equal(out.messages["y"], ref.messages["y"])
    np.testing.assert_array_equal(out.log_weights, ref.log_weights)
    np.testing.assert_array_equal(out.losses, ref.per_round.sum(axis=1))


def test_a_tilted_draw_pinning_some_agents_only_is_refused():
    # the weights are every release's density ratio under the tilt: an agent not pinned keeps the given messages,
    # which were not drawn under the tilt, so its terms would not be a likelihood ratio
    from accounting.errors import AccountingError
    from accounting.replay_inputs import ChannelNoise, TiltedDraw
    from accounting.scheduled_replay import scheduled_replay

    horizon, runs = 3, 4
    draw = TiltedDraw({"y": np.zeros((runs, horizon, 2, 1))}, 0.5, np.ones(horizon, dtype=bool))
    args = ({"y": np.zeros((runs, horizon, 2, 1))}, [Stale(horizon, ahead=False)] * runs,
            {"y": ChannelNoise("gaussian", np.ones(horizon))}, Channelled(ClippedPull([0.8, 0.0])),
            Channelled(ClippedPull([-0.8, 0.0])))
    with pytest.raises(AccountingError, match=r"every agent pinned.*pin_agent \[0\] of 2 agents"):
        scheduled_replay(*args, pin_agent=[0], draw=draw)
    with pytest.raises(AccountingError, match=r"every agent pinned.*pin_agent 1 of 2 agents"):
        scheduled_replay(*args, pin_agent=1, draw=draw)
    assert scheduled_replay(*args, pin_agent=[1, 0], draw=draw).log_weights.shape == (runs,)
