"""Replay on realized schedules (accounting.scheduled_replay) and the noise conformance test (accounting.conformance)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accounting.conformance import noise_conformance
from accounting.errors import AccountingError, PrivacyParameterError
from accounting.replay import ReplaySetup, replay_loss, sample_transcripts
from accounting.replay_inputs import ChannelNoise
from accounting.scheduled_replay import scheduled_replay

N, n, T = 3, 2, 4
W = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
TARGETS = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])


class Step:
    """x <- mixed - 0.1 (x_mixed - target): a toy U step; the message mean is x (one channel, 'y')."""

    def __init__(self, targets):
        self.targets = np.asarray(targets, dtype=float)

    # accounting.replay.ReplayRule
    def initial_state(self, runs):
        return np.zeros((runs, N, n))

    def message_mean(self, x, t):
        return x

    def next_state(self, x, mixed, t):
        return mixed - 0.1 * (mixed - self.targets)

    # accounting.replay_inputs.ChannelRule
    def message_means(self, x, t):
        return {"y": x}

    def next_state_channels(self, x, mixed, t):
        return self.next_state(x, mixed["y"], t)


class ChannelStep(Step):
    def next_state(self, x, mixed, t):
        return super().next_state(x, mixed["y"] if isinstance(mixed, dict) else mixed, t)


class Lockstep:
    def dense(self, t):
        return W, np.where(W > 0, t, 0)


SCALES = np.array([0.5, 0.4, 0.3, 0.2])


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_equals_lockstep_replay(mechanism):
    setup = ReplaySetup([W] * T, mechanism, SCALES)
    P, Q = Step(TARGETS), Step(TARGETS + [[0.5, 0.5], [0, 0], [0, 0]])
    y = sample_transcripts(setup, P, 200, seed=3)
    expected = replay_loss(y, setup, P, Q)
    out = scheduled_replay({"y": y}, [Lockstep()] * 200, {"y": ChannelNoise(mechanism, SCALES)},
                           ChannelStep(TARGETS), ChannelStep(TARGETS + [[0.5, 0.5], [0, 0], [0, 0]]))
    np.testing.assert_allclose(out.losses, expected, rtol=1e-12, atol=1e-12)
    # residuals are the sampled noise: y - x(t-1) under P
    assert np.isfinite(out.residuals["y"]).all()


def test_equals_lockstep_replay_unicast():
    setup = ReplaySetup([W] * T, "laplace", SCALES)
    P, Q = Step(TARGETS), Step(TARGETS * 0.5)
    y = sample_transcripts(setup, P, 100, seed=4, mode="unicast")
    expected = replay_loss(y, setup, P, Q)
    out = scheduled_replay({"y": y}, [Lockstep()] * 100, {"y": ChannelNoise("laplace", SCALES)},
                           ChannelStep(TARGETS), ChannelStep(TARGETS * 0.5), unicast=True)
    np.testing.assert_allclose(out.losses, expected, rtol=1e-12, atol=1e-12)


class Stale:
    """Receiver 0 uses sender 1's message of the previous round from round 2 on (weights renormalized)."""

    def dense(self, t):
        s = np.where(W > 0, t, 0)
        if t > 1:
            s[0, 1] = t - 1
        return W, s


def test_stale_messages_are_mixed_from_their_own_round():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(1, T, N, n))
    out = scheduled_replay({"y": y}, [Stale()], {"y": ChannelNoise("gaussian", SCALES)}, ChannelStep(TARGETS))
    # replay by hand: agent 0's state after round 2 mixes y_1(1), not y_1(2)
    x = np.zeros((N, n))
    for t in (1, 2):
        src = Stale().dense(t)[1]
        mixed = np.array([sum(W[i, j] * y[0, src[i, j] - 1, j] for j in range(N)) for i in range(N)])
        x = mixed - 0.1 * (mixed - TARGETS)
    np.testing.assert_allclose(out.residuals["y"][0, 2], y[0, 2] - x, atol=1e-12)


class StaleBatch:
    """The schedules of ``runs`` runs as one object (``ScheduleBatch``): run ``r`` is ``Stale`` when ``r`` is odd,
    else ``Lockstep``; it has no per-run ``dense``, so the replay can only read it through ``dense_runs``."""

    def __init__(self, runs, first=0):
        self.runs, self.first = runs, first

    def __len__(self):
        return self.runs

    def __getitem__(self, k):
        lo, hi, _ = k.indices(self.runs)
        return StaleBatch(hi - lo, self.first + lo)

    def dense_runs(self, t):
        per = [(Stale() if (self.first + r) % 2 else Lockstep()).dense(t) for r in range(self.runs)]
        return np.stack([w for w, _ in per]), np.stack([s for _, s in per])


@pytest.mark.parametrize("chunk", [None, 3])
def test_a_batch_of_schedules_replays_as_the_list_of_its_runs(chunk, monkeypatch):
    if chunk is not None:  # chunks of runs: the batch is sliced
        monkeypatch.setattr("accounting.scheduled_replay._CHUNK_ENTRIES", chunk * N * N * n)
    rng = np.random.default_rng(5)
    y = rng.laplace(size=(8, T, N, n))
    noise = {"y": ChannelNoise("laplace", SCALES)}
    Q = ChannelStep(TARGETS * 0.5)
    listed = scheduled_replay({"y": y}, [Stale() if r % 2 else Lockstep() for r in range(8)], noise,
                              ChannelStep(TARGETS), Q)
    batched = scheduled_replay({"y": y}, StaleBatch(8), noise, ChannelStep(TARGETS), Q)
    np.testing.assert_array_equal(batched.per_round, listed.per_round)
    np.testing.assert_array_equal(batched.residuals["y"], listed.residuals["y"])
    assert np.ptp(listed.losses) > 0  # the stale runs differ from the lockstep ones: the order of runs matters


def test_pinned_agent_releases_its_noise_free_values_and_attains_the_largest_loss():
    rng = np.random.default_rng(1)
    y = rng.laplace(size=(5, T, N, n))
    Q = ChannelStep(TARGETS + [[0.5, -0.5], [0, 0], [0, 0]])
    out = scheduled_replay({"y": y}, [Lockstep()] * 5, {"y": ChannelNoise("laplace", SCALES)},
                           ChannelStep(TARGETS), Q, pin_agent=0)
    assert np.abs(out.residuals["y"][:, :, 0]).max() < 1e-12
    np.testing.assert_array_equal(out.messages["y"][:, :, 1:], y[:, :, 1:])  # the others are kept
    # any other transcript for agent 0 has a smaller loss (Laplace: |y - mu'| - |y - mu| <= |mu - mu'|)
    free = scheduled_replay({"y": y}, [Lockstep()] * 5, {"y": ChannelNoise("laplace", SCALES)},
                            ChannelStep(TARGETS), Q)
    assert (free.losses <= out.losses + 1e-12).all()


def test_missing_message_is_an_error_naming_round_and_agents():
    y = np.zeros((1, T, N, n))
    y[0, 0, 1] = np.nan
    with pytest.raises(AccountingError, match="round 1: receiver 0 combined sender 1's message of round 1"):
        scheduled_replay({"y": y}, [Lockstep()], {"y": ChannelNoise("laplace", SCALES)}, ChannelStep(TARGETS))
    with pytest.raises(AccountingError, match="no noise declaration"):
        scheduled_replay({"y": np.zeros((1, T, N, n))}, [Lockstep()], {}, ChannelStep(TARGETS))
    with pytest.raises(AccountingError, match="2 schedules for 1 runs"):
        scheduled_replay({"y": np.zeros((1, T, N, n))}, [Lockstep()] * 2, {"y": ChannelNoise("laplace", SCALES)},
                         ChannelStep(TARGETS))


class ReadsPastTheEnd:
    """Round ``T`` combines sender 1's message of round ``T + 1``: a schedule longer than the transcript."""

    def dense(self, t):
        src = np.where(W > 0, t, 0)
        if t == T:
            src[0, 1] = T + 1
        return W, src


@pytest.mark.parametrize("unicast", [False, True], ids=["broadcast", "unicast"])
@pytest.mark.parametrize("order", ["C", "F"], ids=["contiguous", "strided"])
def test_a_schedule_that_does_not_fit_the_transcript_is_an_error_not_another_runs_message(unicast, order):
    # two runs: run 0's read past its last round would otherwise be run 1's round-1 message (a flat gather)
    shape = (2, T, N, N, n) if unicast else (2, T, N, n)
    y = np.asarray(np.random.default_rng(3).normal(size=shape), order=order)
    with pytest.raises(AccountingError, match=f"round {T}: the schedule does not fit the transcript: receiver 0 "
                                              f"combined sender 1's message of round {T + 1} \\(run 0\\)"):
        scheduled_replay({"y": y}, [ReadsPastTheEnd(), Lockstep()], {"y": ChannelNoise("laplace", SCALES)},
                         ChannelStep(TARGETS), unicast=unicast)


# ------------------------------------------------------------------ conformance

DECL = {"y": ("laplace", SCALES)}


@settings(max_examples=20, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.01, 100.0))
def test_declared_noise_conforms(seed, scale):
    """Under the declaration a rejection has probability <= alpha = 1e-3 (Bonferroni); 20 seeds: <= 2% chance.

    Derandomized in every profile, so the 20 draws are fixed: a statistical test on fixed seeds (under random
    draws it would fail about once in 50 runs by design; 3000 random draws rejected at rate 1.3e-3, within the
    binomial spread of 1e-3)."""
    rng = np.random.default_rng(seed)
    scales = scale * SCALES
    res = rng.laplace(size=(200, T, N, n)) * scales[None, :, None, None]
    report = noise_conformance({"y": res}, {"y": ("laplace", scales)}, confidence=0.999)
    assert not report.rejected and not report.violation


@pytest.mark.parametrize("ratio", [0.1, 0.5])
def test_under_noise_is_a_violation_naming_the_release(ratio):
    rng = np.random.default_rng(2)
    res = rng.laplace(size=(300, T, N, n)) * SCALES[None, :, None, None]
    res[:, 2, 1] *= ratio  # agent 1, round 3 releases `ratio` of its noise
    report = noise_conformance({"y": res}, DECL, confidence=0.99)
    w = report.witness
    assert report.violation and (w["round"], w["agent"], w["channel"]) == (3, 1, "y")
    assert w["declared_scale"] == SCALES[2] and w["estimated_scale"] == pytest.approx(ratio * SCALES[2], rel=0.2)


def test_over_noise_is_reported_but_no_violation():
    rng = np.random.default_rng(3)
    res = 3.0 * rng.laplace(size=(300, T, N, n)) * SCALES[None, :, None, None]
    report = noise_conformance({"y": res}, DECL)
    assert not report.violation and report.over_noised and report.witness is None


def test_gaussian_released_where_laplace_is_declared_is_caught():
    """Same standard deviation, lighter tails: the KS test rejects and the MAD scale ratio is below 1."""
    rng = np.random.default_rng(4)
    res = rng.normal(scale=np.sqrt(2.0), size=(4000, T, N, n)) * SCALES[None, :, None, None]
    assert noise_conformance({"y": res}, DECL).violation


def test_bad_input():
    with pytest.raises(PrivacyParameterError, match="no declaration for channel 'z'"):
        noise_conformance({"z": np.zeros((2, T, N, n))}, DECL)
    with pytest.raises(PrivacyParameterError, match="confidence"):
        noise_conformance({"y": np.zeros((2, T, N, n))}, DECL, confidence=1.0)
    with pytest.raises(PrivacyParameterError, match="shape"):
        noise_conformance({"y": np.zeros((2, T + 1, N, n))}, DECL)


class InPlace(ChannelStep):
    """:class:`ChannelStep` that writes its new state into the old state's array (a rule may reuse its arrays):
    the recorded states must be copies."""

    def next_state(self, x, mixed, t):
        x[...] = super().next_state(x, mixed, t)
        return x


@settings(max_examples=25, deadline=None)
@given(st.integers(1, T), st.sampled_from(["laplace", "gaussian"]), st.booleans(), st.integers(0, 2**16),
       st.booleans())
def test_a_resumed_replay_is_the_whole_replay(t0, mechanism, pinned, seed, in_place):
    # resuming at any round from a recorded replay of the same transcript gives every output of the whole replay
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(4, T, N, n))
    scales = SCALES.copy()
    scales[1] = 0.0 if pinned else scales[1]  # with a pinned agent, a noise-free round is constructed too
    noise = {"y": ChannelNoise(mechanism, scales)}
    rule = InPlace if in_place else ChannelStep
    P, Q = rule(TARGETS), rule(TARGETS + [[0.5, 0.5], [0, 0], [0, 0]])
    sched = [Stale(), Lockstep(), Stale(), Lockstep()]
    pin = 1 if pinned else None
    whole = scheduled_replay({"y": y}, sched, noise, P, Q, pin_agent=pin, record=True)
    assert whole.states is not None and len(whole.states) == T
    # a construction reads its own output (these schedules read no later round: one pass has settled it)
    given_y = whole.messages["y"] if pinned else y
    again = scheduled_replay({"y": given_y}, sched, noise, P, Q, pin_agent=pin, resume=(t0, whole))
    for got, want in ((again.per_round, whole.per_round), (again.residuals["y"], whole.residuals["y"]),
                      (again.residuals_prime["y"], whole.residuals_prime["y"]),
                      (again.messages["y"], whole.messages["y"])):
        np.testing.assert_array_equal(got, want)
    assert again.noise_free_mismatch == whole.noise_free_mismatch
    for (a, ap), (b, bp) in zip(again.states, whole.states):  # its own record, for a further resume
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ap, bp)


def test_a_resumed_replay_takes_the_earlier_rounds_from_the_previous_one():
    # the earlier rounds are not replayed: changing a message only they read changes nothing, while the same
    # change replayed in full does (the caller's duty is to resume only where the earlier rounds read the same)
    rng = np.random.default_rng(3)
    y = rng.normal(size=(2, T, N, n))
    noise = {"y": ChannelNoise("gaussian", SCALES)}
    P, Q = ChannelStep(TARGETS), ChannelStep(TARGETS * 0.5)
    whole = scheduled_replay({"y": y}, [Lockstep()] * 2, noise, P, Q, record=True)
    moved = y.copy()
    moved[:, 0] += 1.0  # round 1's messages
    resumed = scheduled_replay({"y": moved}, [Lockstep()] * 2, noise, P, Q, resume=(3, whole))
    full = scheduled_replay({"y": moved}, [Lockstep()] * 2, noise, P, Q)
    np.testing.assert_array_equal(resumed.per_round, whole.per_round)
    assert not np.array_equal(full.per_round, whole.per_round)


def test_states_that_cannot_be_copied_are_not_recorded_and_resume_needs_a_record():
    class Box:
        def __init__(self, v):
            self.v = v

    class Boxed(ChannelStep):
        def initial_state(self, runs):
            return Box(super().initial_state(runs))

        def message_means(self, x, t):
            return super().message_means(x.v, t)

        def next_state(self, x, mixed, t):
            return Box(super().next_state(x.v, mixed, t))

    y = np.random.default_rng(0).normal(size=(2, T, N, n))
    noise = {"y": ChannelNoise("gaussian", SCALES)}
    out = scheduled_replay({"y": y}, [Lockstep()] * 2, noise, Boxed(TARGETS), Boxed(TARGETS * 0.5), record=True)
    plain = scheduled_replay({"y": y}, [Lockstep()] * 2, noise, ChannelStep(TARGETS), ChannelStep(TARGETS * 0.5))
    assert out.states is None
    np.testing.assert_array_equal(out.per_round, plain.per_round)
    with pytest.raises(AccountingError, match="resume"):
        scheduled_replay({"y": y}, [Lockstep()] * 2, noise, Boxed(TARGETS), Boxed(TARGETS * 0.5), resume=(2, out))


@pytest.mark.parametrize("lost", [True, False])
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("unicast", [False, True])
def test_grouped_conformance_tests_equal_one_plain_ks_test_per_group(mechanism, unicast, lost):
    """The tests sorted once per release and merged for pooled groups equal scipy's KS statistics per group.

    Reference: for every group (release, round pooled over agents, agent pooled over rounds) its residual/scale
    values (NaN dropped) go to scipy.stats.kstest, two-sided against the declared distribution and one-sided
    (``alternative="greater"``: empirical CDF above the declared one) for ``|z|``; the p-values are the DKW bounds
    of those statistics. Missing releases (NaN) make the groups unequal in size.
    """
    from scipy import stats

    rng = np.random.default_rng(7)
    scales = np.array([0.5, 0.0, 2.0, 1.0])  # round 2 noise-free: not tested
    shape = (150, 4, 3, 3, 2) if unicast else (150, 4, 3, 2)
    draw = rng.laplace if mechanism == "laplace" else rng.normal
    res = draw(size=shape) * scales.reshape((1, -1) + (1,) * (len(shape) - 2))
    if lost:  # else every release is complete: the rows' shared paths
        res[rng.random(shape) < 0.2] = np.nan  # lost messages
        res[:, 3, 1] = np.nan  # agent 1 released nothing in round 4: that group is skipped
    report = noise_conformance({"y": res}, {"y": (mechanism, scales)}, confidence=1 - 1e-12, min_samples=20)
    dist, dist_abs = ("laplace", "expon") if mechanism == "laplace" else ("norm", "halfnorm")
    z = np.moveaxis(res, 2, 0)  # agent first
    expected = []
    for t in (0, 2, 3):
        groups = [(i, z[i, :, t] / scales[t]) for i in range(3)] + [(None, z[:, :, t] / scales[t])]
        expected += [(t + 1, i, v) for i, v in groups]
    expected += [(None, i, z[i, :, [0, 2, 3]] / scales[[0, 2, 3]].reshape((3, 1) + (1,) * (z.ndim - 3)))
                 for i in range(3)]
    plain = []
    for rnd, agent, v in expected:
        v = v.ravel()
        v = v[~np.isnan(v)]
        if v.size < 20:
            continue
        d = stats.kstest(v, dist).statistic
        d_under = stats.kstest(np.abs(v), dist_abs, alternative="greater").statistic
        hat = np.mean(np.abs(v)) if mechanism == "laplace" else np.sqrt(np.mean(v * v))
        plain.append((rnd, agent, v.size, d, min(1.0, 2 * np.exp(-2 * v.size * d * d)),
                      min(1.0, np.exp(-2 * v.size * d_under * d_under)), hat))
    assert len(plain) == 3 * 4 - lost + 3  # the empty group of agent 1, round 4 is skipped
    assert report.tests == 2 * len(plain)
    from accounting.conformance import _group_tests

    noisy = np.flatnonzero(scales > 0)
    zz = np.moveaxis(res[:, noisy] / scales[noisy].reshape((1, -1) + (1,) * (res.ndim - 2)), 2, 0)
    got = _group_tests("y", zz, noisy, scales, mechanism, 20)
    assert [(g.round, g.agent, g.samples) for g in got] == [p[:3] for p in plain]
    for g, (_, _, _, d, p, p_under, hat) in zip(got, plain):
        assert g.statistic == pytest.approx(d, rel=1e-12, abs=1e-15)
        assert g.scale_ratio == pytest.approx(hat, rel=1e-12)
        assert g.p_value == pytest.approx(p, rel=1e-9, abs=1e-300)
        assert g.p_under == pytest.approx(p_under, rel=1e-9, abs=1e-300)


@given(x=hnp.arrays(float, st.integers(0, 60), elements=st.floats(0.0, 1.0) | st.just(-0.0) | st.just(np.inf)))
def test_sorting_nonnegative_floats_as_integers_equals_numpy_sort(x):
    """Non-negative doubles (CDF values; a -0.0 included) sort as their bits: the same values as numpy.sort."""
    from accounting.conformance import _sort_nonnegative

    got = _sort_nonnegative(x.copy())
    assert got.shape == x.shape and np.array_equal(got, np.sort(x))


@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 12), width=st.integers(1, 300),
       groups=st.integers(1, 4), atoms=st.sampled_from([0, 3, 50]), lost=st.sampled_from([0.0, 0.3, 1.0]),
       shift=st.sampled_from([0.0, 0.05, 0.5]))
def test_ks_extremes_of_unmerged_groups_equal_the_sorted_statistics(seed, rows, width, groups, atoms, lost, shift):
    """The pooled groups' KS maxima from bins and bounds (no merge) are those of sorting each group, bit for
    bit: continuous values, values with atoms (ties), values near 0 and 1, missing values, empty groups."""
    from accounting.conformance import _ks_extremes, _ks_statistics

    rng = np.random.default_rng(seed)
    v = np.clip(rng.random((rows, width)) ** (1.0 + shift * 10) + shift * rng.random((rows, 1)), 0.0, 1.0)
    if atoms:
        v = np.round(v * atoms) / atoms
    v[rng.random((rows, width)) < lost] = np.nan
    missing = np.isnan(v)
    row_group = rng.integers(0, groups, rows)
    sizes = np.bincount(row_group, weights=(~missing).sum(axis=1), minlength=groups).astype(np.int64)
    for minus in (True, False):
        plus, low = _ks_extremes(v, missing if missing.any() else None, row_group, sizes, minus)
        for g in range(groups):
            vals = np.sort(v[row_group == g][~missing[row_group == g]])
            if vals.size == 0:
                assert plus[g] == -np.inf
                continue
            n = vals.size
            assert plus[g] == ((np.arange(1, n + 1) / n) - vals).max()
            if minus:
                assert low is not None and low[g] == (vals - np.arange(n) / n).max()
                assert max(plus[g], low[g]) == _ks_statistics(vals, vals)[0]


@given(x=hnp.arrays(float, st.tuples(st.integers(0, 4), st.integers(0, 50)),
                    elements=st.floats(-50, 50) | st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0])),
       mechanism=st.sampled_from(["laplace", "gaussian"]))
def test_cdfs_computed_in_place_equal_the_plain_formulas(x, mechanism):
    """The declared CDFs written into the input's memory equal the plain expressions (scipy.special, as
    scipy.stats computes them), bit for bit, NaN and infinities included."""
    from scipy import special

    from accounting.conformance import _cdfs

    if mechanism == "laplace":
        m = -np.abs(x)
        tail = 0.5 * np.exp(m)
        expected = (np.where(x > 0, 1.0 - tail, tail), -special.expm1(m))
    else:
        expected = (special.ndtr(x), special.erf(np.abs(x) / np.sqrt(2)))
    before = x.copy()
    got = _cdfs(x, mechanism)
    assert np.array_equal(x, before, equal_nan=True)  # the caller's array is left alone
    for g, e in zip(got, expected):
        assert g.shape == e.shape and np.array_equal(g, e, equal_nan=True)
        assert np.array_equal(np.signbit(g), np.signbit(e))
