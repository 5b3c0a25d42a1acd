"""A user's latency model must sample finite delays >= 0, of the requested count, in both engines (``checked_delays``).

Before: Gaussian latencies (negative now and then) ran silently in both
engines, delivering messages before they were sent, and under Async timing
the two engines released different values for the same seed; NaN delays ran
silently in SimPy and failed in the batch on a ledger time (lockstep) or ran
silently (deadline, async); a model returning one scalar for ``size=m`` gave
every message of batch runs ``r >= 1`` the same delay. CallableLatency
already checked its own draws; a LatencyModel subclass was not checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from asyncdp import REGISTRY
from asyncdp.cli.run import seed_reaches_the_schedule
from asyncdp.engine.links import ConstantLatency, LatencyModel, LinkModel, Links, LogNormalLatency, ZeroLatency
from asyncdp.engine.timing import Async, Deadline, Lockstep
from asyncdp.errors import LinkModelError


@dataclass(frozen=True)
class GaussianLatency(LatencyModel):
    """N(0.2, 0.3^2) delays: negative about one time in four."""

    kind: ClassVar[str] = "gaussian"
    mean: ClassVar[float] = 0.2
    std: ClassVar[float] = 0.3

    def sample(self, rng, size=None):
        return float(rng.normal(0.2, 0.3)) if size is None else rng.normal(0.2, 0.3, size)

    def to_dict(self):
        return {"kind": self.kind}


@dataclass(frozen=True)
class ScalarLatency(LatencyModel):
    """Ignores ``size``: one delay for all the messages asked for."""

    kind: ClassVar[str] = "scalar"
    mean: ClassVar[float] = 0.5
    std: ClassVar[float] = 0.3

    def sample(self, rng, size=None):
        return float(rng.random())

    def to_dict(self):
        return {"kind": self.kind}


TIMINGS = {"lockstep": Lockstep("stale"), "deadline": Deadline(deadline=0.5, missing="stale"), "async": Async()}


def scenario(latency: LatencyModel, timing):
    return REGISTRY["huang2015"].example_scenario(seed=0).replace(horizon=5, timing=timing,
                                                                  links=Links(LinkModel(latency, loss=0.1)))


@pytest.mark.parametrize("engine", ["simpy", "batch"])
@pytest.mark.parametrize("timing", sorted(TIMINGS))
def test_a_negative_delay_is_refused_by_both_engines(engine, timing):
    with pytest.raises(LinkModelError, match=r"^link \d -> \d: GaussianLatency sampled the delay -0\.\d+ "
                                             r"\(must be finite and >= 0\)"):
        scenario(GaussianLatency(), TIMINGS[timing]).run(engine=engine)


def test_an_overflowing_lognormal_delay_is_refused():
    with pytest.raises(LinkModelError, match=r"LogNormalLatency sampled the delay inf"):
        scenario(LogNormalLatency(0.2, 400.0), TIMINGS["deadline"]).run(engine="batch", runs=2)


@pytest.mark.parametrize("timing", sorted(TIMINGS))
def test_a_scalar_for_a_batch_run_is_refused(timing):
    sc = scenario(ScalarLatency(), TIMINGS[timing])
    single = sc.run()  # one delay per call: right for the SimPy engine and batch run 0
    assert np.array_equal(sc.run(engine="batch").trajectory[0], single.trajectory)
    with pytest.raises(LinkModelError, match=r"^run 1, the links of the default model: ScalarLatency\.sample\(rng, "
                                             r"size=\d+\) returned shape \(\), expected \(\d+,\)"):
        sc.run(engine="batch", runs=2)


def test_a_negative_delay_of_an_array_drawn_run_names_run_and_link():
    """Runs drawn as arrays (stream (6, r); here every run: the vectorized layout) are checked too."""
    sc = scenario(GaussianLatency(), TIMINGS["deadline"])
    with pytest.raises(LinkModelError, match=r"^run 0, link \d -> \d: GaussianLatency sampled the delay -0\.\d+"):
        sc.run(engine="batch", runs=2, layout="vectorized")


@dataclass(frozen=True)
class Float32Latency(LatencyModel):
    """Every delay the float32 just below 0.5 (as float32 or, for ``integers``, 0 as int64): a user's model may
    return any numeric dtype."""

    kind: ClassVar[str] = "float32"
    mean: ClassVar[float] = 0.5
    std: ClassVar[float] = 0.0

    def sample(self, rng, size=None):
        v = np.nextafter(np.float32(0.5), np.float32(0.0))
        return v if size is None else np.full(size, v, dtype=np.float32)

    def to_dict(self):
        return {"kind": self.kind}


@dataclass(frozen=True)
class IntegerLatency(Float32Latency):
    kind: ClassVar[str] = "integer"

    def sample(self, rng, size=None):
        return 0 if size is None else np.zeros(size, dtype=np.int64)


@pytest.mark.parametrize("latency", [Float32Latency(), IntegerLatency()])
def test_a_one_run_batch_computes_arrivals_in_float64_whatever_dtype_the_model_returns(latency):
    """A one-run vectorized batch keeps the model's own array: it was not converted to float, so int64 zeros
    failed in the in-place arrival sum (UFuncTypeError) and float32 delays summed in float32 (round 2's arrival
    1 + 0.49999997 rounded to the deadline 1.5: run 0 differed from run 0 of a two-run batch and from SimPy)."""
    sc = scenario(latency, Deadline(deadline=0.5, missing="stale")).replace(links=Links(LinkModel(latency)))
    one = sc.run(engine="batch", runs=1, layout="vectorized").trajectory[0]
    assert np.array_equal(one, sc.run(engine="batch", runs=2, layout="vectorized").trajectory[0])
    assert np.array_equal(one, sc.run().trajectory)  # no loss, every delay one value: the SimPy run's too


@dataclass(frozen=True)
class JitteredLatency(ConstantLatency):
    """A researcher's constant delay plus a uniform jitter in ``[0, spread]``, as a ``ConstantLatency`` subclass: its
    ``sample`` draws, unlike the parent's."""

    spread: float = 0.3

    def sample(self, rng, size=None):
        return self.delay + (float(rng.uniform(0, self.spread)) if size is None else rng.uniform(0, self.spread, size))


@dataclass(frozen=True)
class LateZeroLatency(ZeroLatency):
    """A ``ZeroLatency`` subclass that delays every message by 0.5."""

    def sample(self, rng, size=None):
        return 0.5 if size is None else np.full(size, 0.5)


@pytest.mark.parametrize("timing", sorted(TIMINGS))
def test_a_subclass_of_a_drawless_latency_is_drawn_as_the_simpy_engine_draws_it(timing):
    """A subclass of ``ConstantLatency`` or ``ZeroLatency`` may draw: the batch engine's run 0 drew its link's loss
    uniforms as one array before the latencies (the parents draw none), where the SimPy engine interleaves one loss
    uniform and one latency per message; the same seed lost 10 messages instead of 13 and ran other states. A
    ``ZeroLatency`` subclass that delays ran lockstep rounds on the batch engine's untimed path (every time 0), and
    ``asyncdp run --seed`` warned that the seed changes nothing over lossless jittered links."""
    sc = scenario(JitteredLatency(0.3), TIMINGS[timing]).replace(links=Links(LinkModel(JitteredLatency(0.3), loss=0.3)))
    single, batch = sc.run(), sc.run(engine="batch")
    view = batch.run(0)
    assert (view.messages_lost, view.messages_sent) == (single.messages_lost, single.messages_sent)
    assert np.array_equal(batch.trajectory[0], single.trajectory)
    assert seed_reaches_the_schedule(sc.replace(links=Links(LinkModel(JitteredLatency(0.3)))))
    late = scenario(LateZeroLatency(), TIMINGS[timing]).replace(links=Links(LinkModel(LateZeroLatency())))
    single, batch = late.run(), late.run(engine="batch")
    assert np.array_equal(batch.run(0).times, single.times)
    assert timing != "lockstep" or single.times[1].min() == 0.5  # round 1 ends when its messages arrived
    assert np.array_equal(batch.trajectory[0], single.trajectory)
