"""Sensitivity coverage: realized shifts of a pair against the accountant's per-release bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from accounting.coverage import release_norms, uncovered_releases
from accounting.errors import PrivacyParameterError, UnknownMechanismError


def test_a_gradient_pair_outside_an_l1_adjacency_is_found():
    # a message step scaled by lam^k with lam = 0.02: the pair's round-1 shift 0.0447 exceeds lam^1 = 0.02,
    # the bound for gradients within 1 in L1; its round-2 shift 2.2e-4 is within lam^2 = 4e-4
    runs, rounds, agents = 5, 3, 4
    shifts = np.zeros((runs, rounds, agents, 3))
    g = np.array([1.0, -1.0, 1.0]) * 0.0447 / math.sqrt(3)
    shifts[:, 0, 0] = g
    shifts[:, 1, 0] = g * 0.005
    bound = {(i, t): 0.02**t for i in range(agents) for t in range(1, rounds + 1)}
    out = uncovered_releases({"y": shifts}, {"y": bound}, {"y": "gaussian"})
    assert [(u.agent, u.round, u.channel) for u in out] == [(0, 1, "y")]
    u = out[0]
    assert u.shift == pytest.approx(0.0447) and u.bound == 0.02 and u.runs_over == runs and u.norm == "l2"
    assert "agent 0, round 1: shift 0.0447 > bound 0.02" in u.describe()


def test_shifts_within_the_bound_pass_and_the_worst_run_is_named():
    shifts = np.zeros((4, 2, 2, 1))
    shifts[:, 0, 1, 0] = [0.5, 1.0, 1.5, 1.2]  # runs 2 and 3 exceed 1.0
    out = uncovered_releases({"m": shifts}, {"m": np.ones((2, 2))}, "laplace")
    assert len(out) == 1 and out[0].run == 2 and out[0].runs_over == 2 and out[0].shift == 1.5
    assert uncovered_releases({"m": shifts}, {"m": 1.5}, "laplace") == []


def test_round_off_is_tolerated_and_a_zero_bound_catches_any_shift():
    shifts = np.full((1, 1, 1, 1), 1.0 + 1e-12)
    assert uncovered_releases({"y": shifts}, {"y": 1.0}, "l1") == []
    free = np.zeros((1, 2, 1, 1))
    free[0, 1, 0, 0] = 1e-6
    out = uncovered_releases({"w": free}, {"w": 0.0}, "l2")
    assert [(u.channel, u.round, u.bound) for u in out] == [("w", 2, 0.0)]


def test_unicast_copies_are_checked_per_receiver_and_nan_means_not_sent():
    s = np.full((2, 1, 2, 2, 1), np.nan)
    s[:, 0, 0, 1, 0] = 3.0  # 0 -> 1
    s[:, 0, 1, 0, 0] = 0.5  # 1 -> 0
    out = uncovered_releases({"u": s}, {"u": lambda agent, rnd: 1.0}, "gaussian")
    assert [(u.agent, u.receiver, u.shift) for u in out] == [(0, 1, 3.0)]


@given(shift=hnp.arrays(float, (3, 2, 2, 2), elements=st.floats(-10, 10)), bound=st.floats(0.0, 20.0))
def test_a_release_is_uncovered_exactly_when_some_run_exceeds_the_bound(shift, bound):
    out = {(u.agent, u.round) for u in uncovered_releases({"y": shift}, {"y": bound}, "l2", rtol=0, atol=0)}
    norms = np.sqrt((shift**2).sum(axis=-1))
    expected = {(i, t + 1) for t in range(2) for i in range(2) if (norms[:, t, i] > bound).any()}
    assert out == expected


def test_release_norms():
    assert release_norms([[3.0, 4.0]], "l2").tolist() == [5.0]
    assert release_norms([[3.0, -4.0]], "laplace").tolist() == [7.0]


@pytest.mark.parametrize("call, exc, match", [
    (lambda: uncovered_releases({"y": np.zeros((1, 1, 1, 1))}, {}, "l1"), PrivacyParameterError,
     "channel 'y' has shifts but no sensitivity bound"),
    (lambda: uncovered_releases({"y": np.zeros((1, 1, 1))}, {"y": 1.0}, "l1"), PrivacyParameterError,
     "must be \\(R, T, N, d\\)"),
    (lambda: uncovered_releases({"y": np.zeros((1, 1, 1, 1))}, {"y": 1.0}, "linf"), UnknownMechanismError,
     "unknown norm or mechanism 'linf'"),
    (lambda: uncovered_releases({"y": np.zeros((1, 2, 1, 1))}, {"y": {(0, 1): 1.0}}, "l1"), PrivacyParameterError,
     r"no entry for \(agent, round\) = \(0, 2\)"),
    (lambda: uncovered_releases({"y": np.zeros((1, 1, 2, 1))}, {"y": lambda a, t: -1.0}, "l1"),
     PrivacyParameterError, "bound for agent 0, round 1 must be finite and >= 0"),
    (lambda: uncovered_releases({"y": np.zeros((1, 1, 1, 1))}, {"y": np.ones((2, 1))}, "l1"), PrivacyParameterError,
     "bound array has shape"),
    (lambda: release_norms([[1.0, np.nan]], "l1", "y"), PrivacyParameterError, "some coordinates NaN"),
    (lambda: uncovered_releases({"y": np.zeros((1, 1, 1, 1))}, {"y": 1.0}, {}), PrivacyParameterError, "no norm"),
])
def test_bad_input_is_named(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_realized_shifts_from_two_scheduled_replays():
    from accounting.coverage import realized_shifts
    from accounting.replay_inputs import ChannelNoise
    from accounting.scheduled_replay import scheduled_replay

    class Offset:  # x <- mixed; message = x + a (agent-specific offset)
        def __init__(self, a):
            self.a = np.asarray(a, float)[:, None]

        def initial_state(self, runs):
            return np.zeros((runs, 2, 1))

        def message_means(self, x, t):
            return {"y": x + self.a}

        def next_state(self, x, mixed, t):
            return mixed["y"]

    class Sched:
        def dense(self, t):
            return np.full((2, 2), 0.5), np.full((2, 2), t)

    y = {"y": np.random.default_rng(0).normal(size=(3, 4, 2, 1))}
    noise = {"y": ChannelNoise("gaussian", np.ones(4))}
    p, pp = Offset([0.3, 0.0]), Offset([0.0, 0.0])
    sched = [Sched()] * 3
    shifts = realized_shifts(scheduled_replay(y, sched, noise, p), scheduled_replay(y, sched, noise, pp))
    expected = np.zeros((3, 4, 2, 1))
    expected[..., 0, 0] = 0.3  # the offset; the states follow the observed messages, the same under both
    np.testing.assert_allclose(shifts["y"], expected, atol=1e-12)
    out = uncovered_releases(shifts, {"y": 0.25}, "gaussian")
    assert [(u.agent, u.round) for u in out] == [(0, t) for t in range(1, 5)]


@given(shift=hnp.arrays(float, (3, 2, 2, 2), elements=st.floats(-10, 10)), bound=st.floats(0.0, 20.0),
       lost=hnp.arrays(bool, (3, 2, 2)), norm=st.sampled_from(["l1", "l2"]))
def test_uncovered_by_norms_equals_uncovered_releases_and_norms_equal_the_plain_ones(shift, bound, lost, norm):
    """The releases' norms computed once and reused give the plain call's releases; the one-pass norms equal the
    norms of the NaN-free coordinates (NaN for a release not sent)."""
    from accounting.coverage import uncovered_by_norms

    shift = shift.copy()
    shift[lost] = np.nan  # releases not sent
    norms = release_norms(shift, norm)
    plain = np.abs(np.nan_to_num(shift)).sum(axis=-1) if norm == "l1" else np.sqrt((np.nan_to_num(shift) ** 2).sum(-1))
    assert np.array_equal(norms, np.where(lost, np.nan, plain), equal_nan=True)
    assert uncovered_by_norms({"y": norms}, {"y": bound}, norm) == uncovered_releases({"y": shift}, {"y": bound}, norm)


def test_release_norms_name_infinite_shifts_and_keep_overflowing_squares():
    with pytest.raises(PrivacyParameterError, match=r"infinite shift at index \(1, 0\)"):
        release_norms([[1.0, 2.0], [np.inf, 0.0]], "l2", "y")
    with np.errstate(over="ignore"):  # a finite shift whose square overflows: an infinite norm, no error
        assert release_norms([[1e200, 0.0]], "l2").tolist() == [math.inf]
    assert np.isnan(release_norms(np.zeros((2, 0)), "l1")).all()  # no coordinate: not sent


@given(
    d=st.integers(1, 11),
    lead=st.tuples(st.integers(1, 4), st.integers(1, 3)),
    seed=st.integers(0, 2**16),
    norm=st.sampled_from(["l1", "l2"]),
)
def test_release_norms_are_numpys_norms_to_the_bit(d, lead, seed, norm):
    """The norms equal numpy's ``|s|.sum(-1)`` and ``sqrt((s * s).sum(-1))`` exactly, for short and long last axes
    (entries over 16 orders of magnitude, so that a different order of the additions would show)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=lead + (d,)) * 10.0 ** rng.uniform(-8, 8, size=lead + (d,))
    s[0, 0] = np.nan  # a release that was not sent
    want = np.abs(s).sum(axis=-1) if norm == "l1" else np.sqrt((s * s).sum(axis=-1))
    assert np.array_equal(release_norms(s, norm), want, equal_nan=True)


def test_realized_shifts_written_into_out_are_the_new_arrays_values():
    from types import SimpleNamespace as NS

    from accounting.coverage import realized_shifts

    rng = np.random.default_rng(2)
    a, b = NS(residuals={"y": rng.normal(size=(3, 2, 1))}), NS(residuals={"y": rng.normal(size=(3, 2, 1))})
    whole = np.full((5, 2, 1), np.nan)
    got = realized_shifts(a, b, out={"y": whole[2:]})
    assert got["y"].base is whole and np.array_equal(whole[2:], realized_shifts(a, b)["y"])
    assert np.isnan(whole[:2]).all()  # only its rows are written
    with pytest.raises(PrivacyParameterError, match="shape"):
        realized_shifts(a, b, out={"y": whole})
    with pytest.raises(PrivacyParameterError, match="channel 'y'"):
        realized_shifts(a, b, out={})
