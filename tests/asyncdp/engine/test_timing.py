"""Tests of asyncdp.engine.timing: validation, round arithmetic and clock sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from asyncdp.errors import TimingError
from asyncdp.engine.timing import Async, Deadline, Lockstep, agent_clock_rng, timing_from_dict

LEVEL = 0.999


@pytest.mark.parametrize("missing", [None, "renormalize", "stale"])
def test_lockstep_accepts_policies(missing) -> None:
    assert Lockstep(missing).to_dict() == {"kind": "lockstep", "missing": missing}


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Lockstep("drop"), "missing.*'drop'"),
        (lambda: Deadline(missing=None), "missing.*None"),
        (lambda: Deadline(missing="ignore"), "missing.*'ignore'"),
        (lambda: Deadline(period=0.0), "period.*0.0"),
        (lambda: Deadline(period=math.inf), "period.*inf"),
        (lambda: Deadline(deadline=0.0), "deadline.*0.0"),
        (lambda: Deadline(deadline=1.2), "deadline.*1.2"),
        (lambda: Deadline(drift=-0.1), "drift.*-0.1"),
        (lambda: Deadline(drift=1.0), "drift.*1.0"),
        (lambda: Deadline(jitter=-0.5), "jitter.*-0.5"),
        (lambda: Deadline(deadline=0.9, drift=0.2), "deadline \\* period \\+ jitter"),
        (lambda: Deadline(deadline=0.5, jitter=0.6), "deadline \\* period \\+ jitter"),
        (lambda: Deadline(period="1"), "period"),
        (lambda: Async(rate=0.0), "rate.*0.0"),
        (lambda: Async(rate=float("nan")), "rate.*nan"),
        (lambda: Async(staleness=0), "staleness.*0"),
        (lambda: Async(staleness=True), "staleness.*True"),
        (lambda: Async(staleness=1.5), "staleness.*1.5"),
    ],
)
def test_invalid_parameters(build, match: str) -> None:
    with pytest.raises(TimingError, match=match):
        build()


def test_valid_boundaries() -> None:
    assert Deadline(deadline=1.0).deadline == 1.0
    assert Deadline(deadline=0.8, drift=0.2).drift == 0.2
    assert Deadline(period=2.0, deadline=0.5, jitter=1.0).jitter == 1.0
    assert Async(staleness=np.int64(3)).staleness == 3


def test_round_start_and_combine_time() -> None:
    d = Deadline(period=2.0, deadline=0.25, drift=0.1, jitter=0.1)
    assert d.round_start(1, 0.05, 0.03) == pytest.approx(0.03)
    assert d.round_start(4, 0.05, 0.03) == pytest.approx(3 * 2.0 * 1.05 + 0.03)
    assert d.combine_time(4, 0.05, 0.03) == pytest.approx(3 * 2.0 * 1.05 + 0.03 + 0.5)
    with pytest.raises(TimingError, match="round k"):
        d.round_start(0, 0.0, 0.0)


@given(
    period=st.floats(0.01, 100.0),
    drift=st.floats(0.0, 0.5),
    frac=st.floats(0.01, 1.0),
    jfrac=st.floats(0.0, 1.0),
    u=st.floats(0.0, 1.0),
    v=st.floats(0.0, 1.0),
    w=st.floats(0.0, 1.0),
    k=st.integers(1, 10_000),
)
def test_constraint_keeps_rounds_ordered(period, drift, frac, jfrac, u, v, w, k) -> None:
    # Split the admissible budget period*(1-drift) between deadline and jitter.
    budget = period * (1 - drift)
    deadline = frac * (1 - drift)
    jitter = jfrac * (budget - deadline * period)
    d = Deadline(period=period, deadline=deadline, drift=drift, jitter=max(jitter, 0.0))
    drift_i = (2 * u - 1) * d.drift
    j_k, j_next = v * d.jitter, w * d.jitter
    assert d.combine_time(k, drift_i, j_k) <= d.round_start(k + 1, drift_i, j_next) + 1e-9 * (1 + k * period)


def test_drift_and_jitter_ranges_and_uniformity() -> None:
    d = Deadline(period=1.0, deadline=0.5, drift=0.05, jitter=0.2)
    rng = agent_clock_rng(0, 0)
    drifts = np.array([d.sample_drift(rng) for _ in range(5000)])
    jitters = np.array([d.sample_jitter(rng) for _ in range(5000)])
    assert drifts.min() >= -0.05 and drifts.max() <= 0.05
    assert jitters.min() >= 0.0 and jitters.max() <= 0.2
    # Kolmogorov-Smirnov against the documented uniform laws, at level 0.999.
    assert stats.kstest(drifts, stats.uniform(-0.05, 0.1).cdf).pvalue > 1 - LEVEL
    assert stats.kstest(jitters, stats.uniform(0.0, 0.2).cdf).pvalue > 1 - LEVEL


def test_async_wait_mean_inside_clt_interval() -> None:
    a, n = Async(rate=4.0), 20_000
    rng = agent_clock_rng(1, 3)
    waits = np.array([a.sample_wait(rng) for _ in range(n)])
    z = stats.norm.ppf(0.5 + LEVEL / 2)
    assert (waits > 0).all()
    assert abs(waits.mean() - 0.25) <= z * 0.25 / math.sqrt(n)  # Exp(rate): mean = std = 1/rate


def test_samplers_make_exactly_one_draw_even_when_degenerate() -> None:
    d = Deadline()  # drift = jitter = 0
    rng, ref = agent_clock_rng(2, 1), agent_clock_rng(2, 1)
    assert d.sample_drift(rng) == 0.0 and d.sample_jitter(rng) == 0.0
    ref.random(), ref.random()
    assert rng.random() == ref.random()


def test_agent_clock_rng_is_the_documented_seed_sequence() -> None:
    expected = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(2, 4))).random(3)
    np.testing.assert_array_equal(agent_clock_rng(7, 4).random(3), expected)
    assert agent_clock_rng(7, 4).random() != agent_clock_rng(7, 5).random()
    with pytest.raises(TimingError, match="agent"):
        agent_clock_rng(7, -1)


@pytest.mark.parametrize(
    "policy", [Lockstep(), Lockstep("stale"), Deadline(2.0, 0.4, 0.1, 0.5, "stale"), Async(3.0, 2), Async()]
)
def test_to_dict_round_trip(policy) -> None:
    assert timing_from_dict(policy.to_dict()) == policy


def test_from_dict_errors() -> None:
    with pytest.raises(TimingError, match="unknown timing kind 'sync'"):
        timing_from_dict({"kind": "sync"})
    with pytest.raises(TimingError, match="bad parameters"):
        timing_from_dict({"kind": "async", "speed": 1})


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Async(rate=0.0), r"^Async: rate must be > 0, got 0\.0$"),
        (lambda: Deadline(period="1"), r"^Deadline: period must be a real number, got '1'$"),
        (lambda: Deadline(jitter=-0.5), r"^Deadline: jitter must be >= 0, got -0\.5$"),
        (lambda: Async(staleness=0), r"^Async: staleness \(an integer or None\) must be >= 1, got 0$"),
        (lambda: Async(staleness=1.5), r"^Async: staleness \(an integer or None\) must be an integer, got 1\.5$"),
        (lambda: Deadline().round_start(0, 0.0, 0.0), r"^round k must be >= 1, got 0$"),
        (lambda: agent_clock_rng(-1, 0), r"^agent_clock_rng: seed must be >= 0, got -1$"),
        (lambda: agent_clock_rng(0, True), r"^agent_clock_rng: agent must be an integer, got True$"),
    ],
)
def test_messages_name_owner_parameter_and_value(build, message: str) -> None:
    """The shared checks (topology.validation) raise TimingError naming the owner, the parameter and the value."""
    with pytest.raises(TimingError, match=message):
        build()
