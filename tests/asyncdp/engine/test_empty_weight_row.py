"""A round whose weight matrix gives an agent an empty row is refused by both engines, naming round and agent.

Before: the SimPy engine failed with a bare ``IndexError: tuple index out of
range`` while the batch engine silently mixed the agent to the zero vector
(under every timing). Only a user's own matrices can have such a row (every
weight rule of :mod:`topology` gives each node a self weight).
"""

from __future__ import annotations

import numpy as np
import pytest

import topology
from asyncdp import REGISTRY
from asyncdp.engine.links import LinkModel, Links
from asyncdp.engine.timing import Async, Deadline
from asyncdp.errors import TopologyMismatchError

SETTINGS = {
    "lockstep": {},
    "deadline": {"timing": Deadline(deadline=0.5), "links": Links(LinkModel(loss=0.2))},
    "async": {"timing": Async(rate=2.0)},
    "unicast": {"mode": "unicast"},
}


@pytest.mark.parametrize("engine", ["simpy", "batch"])
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_an_agent_without_any_weight_in_a_round_is_refused(engine, setting):
    base = REGISTRY["huang2015"].example_scenario(seed=0).replace(horizon=4)
    w0 = base.topology.weights(1).toarray()

    def round_matrix(t: int) -> np.ndarray:
        w = w0.copy()
        if t == 3:
            w[2] = 0.0
        return w

    sc = base.replace(topology=topology.generated(w0.shape[0], round_matrix), **SETTINGS[setting])
    with pytest.raises(TopologyMismatchError, match=r"^round 3: agent 2 has an empty row in the weight matrix"):
        sc.run(engine=engine)
