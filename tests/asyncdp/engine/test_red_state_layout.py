"""A state entry without per-agent axes (a Python counter, a tag string) is refused by the batch engine's timed path
with the entry named, and the privacy check runs such a rule on the SimPy engine.

A user's rule kept a round counter as a Python int (``{"x": x, "k": 0}``) or a phase tag as a string (the privacy
tests keep ``"phase": "descent"`` in a correct rule that must pass). Lockstep runs them on both engines. Under
asynchronous timing the batch engine gathers each (run, agent) pair's state on its own and raised a bare
``IndexError: index 1 is out of bounds for axis 0 with size 1`` (a list: ``cannot do a non-empty take from an
empty axes``), and ``asyncdp privacy check`` stopped with it. Now the batch engine names the entry and its shape,
and the check's automatic engine choice runs the rule on the SimPy engine (the report says why).
"""

from __future__ import annotations

from dataclasses import dataclass
import runpy
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp import REGISTRY, Async, Deadline
from asyncdp.errors import ScenarioError
from asyncdp.privacy import check_privacy

OWN = runpy.run_path(str(Path(__file__).parents[3] / "examples" / "privacy_check_own_algorithm.py"))


@dataclass(frozen=True)
class CountingConsensusGD(OWN["NoisyConsensusGD"]):  # type: ignore[misc, valid-type]
    """The example's rule with a round counter kept as a Python int and a phase tag (neither read by a step)."""

    name: ClassVar[str] = "test-counting-consensus-gd"

    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> dict:
        return {**super().initial_state(x0, agents, problem), "k": 0, "phase": "descent"}

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        return {**super().update(state, mixed, t, agents, problem), "k": state["k"] + 1, "phase": state["phase"]}


@pytest.mark.parametrize("timing", [Async(), Deadline(deadline=0.5, drift=0.2, missing="stale")])
def test_the_batch_engine_names_a_state_entry_without_per_agent_axes(timing):
    sc = REGISTRY["huang2015"].example_scenario(seed=4).replace(algorithm=CountingConsensusGD(), horizon=3,
                                                                 timing=timing)
    sc.run()  # the SimPy engine keeps each agent's state apart
    if isinstance(timing, Async):  # the deadline path gathers states only when a stale message is ahead
        with pytest.raises(ScenarioError, match=r"test-counting-consensus-gd: state entry 'k' \(\w+ of shape \(\)\) "
                                                r"has not the leading axes \(runs, agents\) = \(2, \d+\)"):
            sc.run("batch", runs=2)
    from asyncdp.engine.batch_engine import _check_batchable

    with pytest.raises(ScenarioError, match=r"state entry 'k'"):
        _check_batchable(sc)


def test_the_privacy_check_runs_such_a_rule_on_the_simpy_engine():
    rule = CountingConsensusGD()
    p, q = (OWN[k].replace(algorithm=rule, timing=Async()) for k in ("scenario", "adjacent"))
    report = check_privacy(p, q, runs=40, search_examples=0)
    assert report.engine.startswith("simpy (batch engine: test-counting-consensus-gd: state entry 'k'"), report.engine
    assert report.verdict == "inconclusive", report.reasons  # the example's verdict: no paper record
