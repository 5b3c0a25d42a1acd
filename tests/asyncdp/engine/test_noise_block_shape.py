"""A user's noise source must return blocks of exactly the requested shape, in both engines (``engine_noise``).

Before: a source that returned ``(N, n)`` for the batch engine's ``(R, N, n)``
(it forgot the run axis) was broadcast by numpy, so all ``R`` runs drew the
same noise, silently; a block of the wrong shape raised a bare ``IndexError``
in the SimPy engine and was broadcast in the batch.
"""

from __future__ import annotations

import numpy as np
import pytest

from asyncdp import REGISTRY
from asyncdp.engine.links import LinkModel, Links
from asyncdp.engine.timing import Deadline
from asyncdp.errors import NoiseError
from asyncdp.noise import NoiseSource, stream


class NoRunAxis(NoiseSource):
    """Gaussian blocks of the seed layout, but always ``(N, n)``: right for one SimPy run, wrong for a batch."""

    def broadcast(self, t, channel, distribution, shape):
        return stream(0, 0, t, channel).standard_normal(shape[-2:])

    def unicast(self, t, channel, distribution, sender, shape):
        return stream(0, 0, t, channel, 1 + sender).standard_normal(shape[-2:])


class OneRow(NoiseSource):
    """One row for every agent (shape ``(n,)``)."""

    def broadcast(self, t, channel, distribution, shape):
        return np.full(shape[-1:], 0.1)

    def unicast(self, t, channel, distribution, sender, shape):
        return np.full(shape[-1:], 0.1)


class ListNoise(NoiseSource):
    """Nested lists of the right shape are accepted (as float arrays)."""

    def broadcast(self, t, channel, distribution, shape):
        return np.ones(shape, dtype=int).tolist()

    def unicast(self, t, channel, distribution, sender, shape):
        return np.ones(shape, dtype=int).tolist()


SETTINGS = [{}, {"timing": Deadline(deadline=0.5), "links": Links(LinkModel(loss=0.2))}, {"mode": "unicast"}]


@pytest.mark.parametrize("extra", SETTINGS, ids=["lockstep", "deadline", "unicast"])
def test_a_batch_block_without_the_run_axis_is_refused(extra):
    sc = REGISTRY["huang2015"].example_scenario(seed=0).replace(noise=NoRunAxis(), horizon=3, **extra)
    sc.run()  # right for the SimPy engine
    kind = "unicast" if extra.get("mode") == "unicast" else "broadcast"
    with pytest.raises(NoiseError, match=rf"noise source NoRunAxis: {kind}\(round 1, channel 0.*\): returned a block "
                                         rf"of shape \(6, 2\), expected \(3, 6, 2\)"):
        sc.run(engine="batch", runs=3)


@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_a_block_of_another_shape_is_refused_by_both_engines(engine):
    sc = REGISTRY["showkatbakhsh"].example_scenario(seed=0).replace(noise=OneRow(), horizon=3)
    with pytest.raises(NoiseError, match=r"noise source OneRow: broadcast\(round 1, channel 0\): returned a block of "
                                         r"shape \(2,\), expected \("):
        sc.run(engine=engine)


def test_a_block_of_nested_lists_is_used_as_floats():
    sc = REGISTRY["showkatbakhsh"].example_scenario(seed=0).replace(noise=ListNoise(), horizon=3)
    assert np.array_equal(sc.run().trajectory, sc.run(engine="batch").trajectory[0])
