"""A message without its coordinate axis is refused by every engine with the rule, round, agent and channel named.

A user's rule with a scalar statistic beside its iterate (here agent ``i``'s first coordinate on a second channel
``s``) wrote it as ``state["x"][..., 0]`` where the layout wants ``state["x"][..., :1]`` (messages end with the
coordinate axis, :mod:`asyncdp.algorithms.base`). The SimPy engine raised a bare ``IndexError: tuple index out of
range`` while recording the transcript, the batch engine ``ValueError: not enough values to unpack``, and the
privacy check stopped with the first of them. Both engines now raise a ``ScenarioError`` naming the rule, the
round, the agent, the channel and the shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp import REGISTRY, Async, Deadline, Lockstep
from asyncdp.algorithms.base import Algorithm, Channel, NoiseDeclaration
from asyncdp.errors import ScenarioError


@dataclass(frozen=True)
class ScalarOnSecondChannel(Algorithm):
    """Gossip of ``x`` on a Gaussian channel ``y``; its first coordinate on a noise-free channel ``s``."""

    axis: bool = False
    name: ClassVar[str] = "test-scalar-on-second-channel"
    channels: ClassVar[tuple[Channel, ...]] = (Channel("y", "gaussian"), Channel("s"))

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {"x": np.array(x0, dtype=float)}

    def noise(self, t: int, channel: str) -> NoiseDeclaration:
        return NoiseDeclaration("gaussian", 0.5, 2, 1.0)

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        s = state["x"][..., :1] if self.axis else state["x"][..., 0]
        return {"y": state["x"] + 0.5 * noise["y"], "s": s}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {"x": mixed["y"] + 0.0 * mixed["s"]}

    def decision(self, state: dict) -> np.ndarray:
        return state["x"]


@pytest.mark.parametrize("timing", [Lockstep(), Deadline(deadline=0.5, drift=0.2, missing="stale"), Async()])
@pytest.mark.parametrize("engine", ["simpy", "batch"])
def test_a_message_without_its_coordinate_axis_is_refused_by_every_engine(timing, engine):
    sc = REGISTRY["huang2015"].example_scenario(seed=4).replace(algorithm=ScalarOnSecondChannel(), horizon=3,
                                                                 timing=timing)
    with pytest.raises(ScenarioError, match=r"round 1, agents? \d.*channel 's'.*shape \((\d+, \d+)?\).*coordinate "
                                            r"axis"):
        sc.run(engine) if engine == "simpy" else sc.run(engine, runs=2, transcripts=True)


@pytest.mark.parametrize("timing", [Lockstep(), Async()])
def test_the_same_rule_with_the_axis_runs_alike_on_both_engines(timing):
    sc = REGISTRY["huang2015"].example_scenario(seed=4).replace(algorithm=ScalarOnSecondChannel(axis=True),
                                                                 horizon=3, timing=timing)
    assert np.array_equal(sc.run("batch", runs=1).trajectory[0], sc.run().trajectory)
