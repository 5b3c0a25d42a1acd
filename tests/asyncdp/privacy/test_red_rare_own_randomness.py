"""A rule that draws randomness of its own only in states some runs reach, but not run 0, is refused.

``RareOwnNoiseDGD`` is the private distributed gradient rule of ``examples/own_paper_private_dgd.py``; in round
``at`` an agent whose state sits in the box's corner ``(5, 5)`` (about 12% of the runs, not engine run 0 of either
scenario) releases its state plus Laplace noise of the declared scale drawn from its own generator instead of the
engine's draw: the same law, so the claim holds. ``RareOwnStepDGD`` instead adds such a draw to its next state
(independent of the data: the claim still holds). The determinism check replayed engine run 0 of each scenario
only, so both passed it, and every replay read the fresh draws as a shift of the data: ``violation`` (coverage,
exact replay and the worst-case search). A run whose releases the replay does not explain (the additivity probe,
a residual off its engine draw) is now checked too, and the error names it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp.errors import ScenarioError
from asyncdp.privacy import check_privacy
from asyncdp.privacy.behavior import run_engine
from asyncdp.privacy.context import check_deterministic

example_scripts = sys.modules["asyncdp_tests_example_scripts"]  # tests/fixtures/example_scripts.py, loaded by conftest.py
EX, _PAPERS = example_scripts.run_unregistered("own_paper_private_dgd.py")

_RNG = np.random.default_rng(123)


_papers = example_scripts.records_fixture(_PAPERS)  # the script's records, for this module's tests only


def _corner(x: np.ndarray) -> np.ndarray:
    return (x[..., :1] >= 5.0) & (x[..., 1:] >= 5.0)


@dataclass(frozen=True)
class RareOwnNoiseDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD releasing its own Laplace draw (the declared scale) in round ``at`` from the corner state."""

    at: int = 3
    name: ClassVar[str] = "private-dgd-rare-own-noise-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        own = _RNG.laplace(0.0, self.scale(), size=x.shape)
        return {"y": x + np.where(_corner(x) & (t == self.at), own, self.scale() * noise["y"])}


@dataclass(frozen=True)
class RareOwnStepDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD adding its own draw to its next state in round ``at`` from the corner state."""

    at: int = 3
    name: ClassVar[str] = "private-dgd-rare-own-step-test"

    def update(self, state: dict, mixed: Any, t: int, agents: Any, problem: Any) -> dict:
        new = super().update(state, mixed, t, agents, problem)
        own = _RNG.normal(0.0, 1.0, size=new["x"].shape)
        return {"x": np.where(_corner(state["x"]) & (t == self.at), new["x"] + own, new["x"])}


@pytest.mark.parametrize("cls, step", [(RareOwnNoiseDGD, "message"), (RareOwnStepDGD, "update")])
def test_randomness_in_states_run_0_does_not_reach_is_refused_naming_the_run(cls, step):
    rule = cls(rounds=EX["HORIZON"])
    sc, adj = (s.replace(algorithm=rule) for s in (EX["scenario"], EX["adjacent"]))
    for side, s in enumerate((sc, adj)):  # run 0 of either scenario never draws: its check passes
        assert check_deterministic(s, rule.bind(s.problem), run_engine(s, 1, seed=0, side=side)) is None
    with pytest.raises(ScenarioError, match=rf"{step}\(\) of agent \d in round 3 returned different values .*"
                                            r"replayed along engine run [1-9]\d*\).*randomness"):
        check_privacy(sc, adj, runs=200, seed=0, search_examples=0)
