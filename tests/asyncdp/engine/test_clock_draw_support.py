"""A timing subclass's own clock draws must lie in the declared support, in both engines (``check_clock_draws``).

``Deadline`` checks ``deadline * period + jitter <= period * (1 - drift)`` so
that rounds never overlap; a subclass overriding ``sample_drift`` /
``sample_jitter`` / ``sample_wait`` could return values outside the bounds
that check used. Before: a Gaussian wait below 0 made the SimPy engine fail
with SimPy's bare ``ValueError: Negative delay`` while the batch engine ran on
with a clock going backwards (a silent result); a NaN drift ran silently in
SimPy (``max(0.0, nan)`` is 0) and failed in the batch on a ledger time; an
exponential jitter ran silently in both (rounds overlapping, starts clipped to
"now"); a drift below -1 with zero latency hung the batch engine.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from asyncdp.engine.links import ConstantLatency, LinkModel, Links
from asyncdp.engine.timing import Async, Deadline, check_clock_draws
from asyncdp.errors import TimingError


def _builders():
    name = "asyncdp_tests_engine_oracle_builders"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("test_engine_oracle.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@dataclass(frozen=True)
class GaussianAsync(Async):
    """Waits N(1, 0.8^2): negative now and then (a plausible modelling slip)."""

    def sample_wait(self, rng: np.random.Generator) -> float:
        return float(rng.normal(1.0, 0.8))


@dataclass(frozen=True)
class NanDriftDeadline(Deadline):
    def sample_drift(self, rng: np.random.Generator) -> float:
        return float("nan")


@dataclass(frozen=True)
class ExpJitterDeadline(Deadline):
    """Unbounded jitter: rounds may overlap, which the Deadline constraint rules out."""

    def sample_jitter(self, rng: np.random.Generator) -> float:
        return float(rng.exponential(self.jitter))


@dataclass(frozen=True)
class BackwardClockDeadline(Deadline):
    """Drift below -1: the agent's rounds start earlier the later they are (hung the batch engine)."""

    def sample_drift(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(-3.0, -1.5))


CASES = [
    (GaussianAsync(), r"GaussianAsync\.sample_wait returned -0\.85\d* for (run 0, )?agent 2, round 3, outside "
                      r"its support \[0, inf\)"),
    (NanDriftDeadline(deadline=0.5, drift=0.1), r"NanDriftDeadline\.sample_drift returned nan for (run 0, )?agent 0"),
    (ExpJitterDeadline(deadline=0.5, jitter=0.2), r"sample_jitter returned \d\.\d+ for (run 0, )?agent \d, round \d+, "
                                                  r"outside its support \[0, jitter\] = \[0\.0, 0\.2\]"),
    (BackwardClockDeadline(deadline=0.5, drift=0.1), r"sample_drift returned -[12]\.\d+ for (run 0, )?agent 0"),
]


@pytest.mark.parametrize("engine", ["simpy", "batch"])
@pytest.mark.parametrize("timing, message", CASES, ids=[type(c[0]).__name__ for c in CASES])
def test_clock_draws_outside_the_support_are_refused_by_both_engines(timing, message, engine):
    sc = _builders().huang_scenario(4, "complete", 6).replace(timing=timing, links=Links(LinkModel(loss=0.2)), seed=2)
    with pytest.raises(TimingError, match=message):
        sc.run(engine=engine)


def test_the_batch_names_the_run_whose_draws_are_outside():
    drift = Deadline(deadline=0.5, drift=0.1)
    check_clock_draws(drift, "sample_drift", np.array([-0.1, 0.0, 0.1]))  # the closed support is fine
    with pytest.raises(TimingError, match=r"sample_jitter returned 0\.5 for run 3, agent 1, round 2"):
        check_clock_draws(Deadline(deadline=0.5, jitter=0.25), "sample_jitter", np.array([[0.0, 0.1], [0.2, 0.5]]),
                          run=3)
    with pytest.raises(TimingError, match=r"sample_wait returned inf for agent 0, round 1"):
        check_clock_draws(Async(), "sample_wait", np.array([[np.inf]]))


OVERFLOWS = {
    "async-rate-1e-307": ({"timing": Async(rate=1e-307)}, r"agent \d, round 1[34]"),
    "lockstep-latency-1e307": ({"links": Links(LinkModel(ConstantLatency(1e307)))}, r"agent 0, round 18"),
    "deadline-period-1e307": ({"timing": Deadline(period=1e307, deadline=0.5)}, r"agent 0, round 19"),
}


@pytest.mark.parametrize("engine", ["simpy", "batch"])
@pytest.mark.parametrize("case", sorted(OVERFLOWS))
def test_a_clock_that_overflows_is_named_by_both_engines(engine, case):
    """Before: SimPy failed on a link's send time ('send_time must be finite'), the batch with a bare IndexError."""
    extra, where = OVERFLOWS[case]
    sc = _builders().huang_scenario(6, "complete", 30).replace(**extra)
    with pytest.raises(TimingError, match=rf"^(run 0, )?{where}: the simulated clock overflowed \(time (inf|nan)\)"):
        sc.run(engine=engine)


@dataclass(frozen=True)
class ForgetfulAsync(Async):
    """Overrides ``sample_waits`` but returns one wait for all ``count`` (numpy broadcast it silently); its
    ``sample_wait`` is the parent's draw."""

    def sample_wait(self, rng: np.random.Generator) -> float:
        return float(rng.exponential(1.0 / self.rate))

    def sample_waits(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return rng.exponential(1.0 / self.rate)


def test_a_sample_waits_override_of_the_wrong_length_is_refused_by_the_batch():
    """Before: batch run 0 used one wait per agent for every wake-up and silently differed from the SimPy run."""
    sc = _builders().huang_scenario(4, "complete", 5).replace(timing=ForgetfulAsync())
    sc.run()  # the SimPy engine calls sample_wait
    with pytest.raises(TimingError, match=r"ForgetfulAsync\.sample_waits\(rng, 5\) returned shape \(\), expected \(5,\)"):
        sc.run(engine="batch")


@dataclass(frozen=True)
class UniformWaitsAsync(Async):
    """Uniform waits in ``[0, 2 / rate]``, written as the batch engine's vectorized ``sample_waits`` only."""

    def sample_waits(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return rng.uniform(0.0, 2.0 / self.rate, count)


@dataclass(frozen=True)
class TwoPointJitters(Deadline):
    def sample_jitters(self, rng: np.random.Generator, rounds: int) -> np.ndarray:
        return self.jitter * rng.integers(0, 2, rounds)


@pytest.mark.parametrize("make, message", [
    (lambda: UniformWaitsAsync(), r"^UniformWaitsAsync overrides sample_waits but not sample_wait: the SimPy engine "),
    (lambda: TwoPointJitters(deadline=0.5, jitter=0.1), r"^TwoPointJitters overrides sample_jitters but not "
                                                        r"sample_jitter"),
])
def test_a_subclass_overriding_only_the_vectorized_sampler_is_refused(make, message):
    """The SimPy engine calls ``sample_wait`` (the parent's exponential), the batch engine ``sample_waits`` (the
    subclass's uniform): a one-run batch was not the SimPy run of its seed (other wake-ups and states)."""
    with pytest.raises(TimingError, match=message):
        make()


@dataclass(frozen=True)
class UniformAsync(Async):
    """Uniform waits in ``[0, 2 / rate]``, both forms with the same draws (allowed)."""

    def sample_wait(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(0.0, 2.0 / self.rate))

    def sample_waits(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return rng.uniform(0.0, 2.0 / self.rate, count)


@dataclass(frozen=True)
class ShorterWaits(UniformAsync):
    """Overrides its parent's ``sample_waits`` only: the SimPy engine still drew the parent's ``sample_wait``."""

    def sample_waits(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return rng.uniform(0.0, 1.0 / self.rate, count)


@dataclass(frozen=True)
class ShorterWait(UniformAsync):
    """Overrides its parent's ``sample_wait`` only: the batch engine still drew the parent's ``sample_waits``."""

    def sample_wait(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(0.0, 1.0 / self.rate))


def test_a_subclass_of_a_subclass_must_keep_its_samplers_paired():
    """The sampler pair is checked against the class defining each form, not against ``Async``: a subclass of a
    subclass overriding one form of its parent's pair passed, and its SimPy run and one-run batch woke at other times
    on the same seed. A subclass keeping its parent's pair, or overriding both, runs alike on both engines."""
    for make, message in ((ShorterWaits, r"^ShorterWaits overrides sample_waits but not sample_wait: "),
                          (ShorterWait, r"^ShorterWait overrides sample_wait but not sample_waits "
                                        r"\(UniformAsync\.sample_waits, which does not call it\): .* override "
                                        r"sample_waits too")):
        with pytest.raises(TimingError, match=message):
            make(rate=1.0)

    @dataclass(frozen=True)
    class Renamed(UniformAsync):
        label: str = "uniform"

    sc = _builders().huang_scenario(4, "complete", 5).replace(timing=Renamed(rate=1.0))
    assert np.array_equal(sc.run().times, sc.run(engine="batch").run(0).times)
