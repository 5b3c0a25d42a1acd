"""A rule that draws its noise from ``numpy.random`` instead of the engine's draws is refused, not refuted.

``OwnNoiseDGD`` is the private distributed gradient rule of ``examples/own_paper_private_dgd.py`` with its
Laplace noise drawn by the rule itself (``numpy.random.Generator.laplace`` at the declared scale), a plausible
slip. Its releases are those of the correct rule (fresh Laplace noise of the declared scale), whose claim holds
(the example's ``pass``): the claim is true. The check replays every release from the state and the engine's
noise (the noise-free value is the R step with zero noise), so for this rule the "noise-free" values are fresh
noise: it reported ``violation`` with a coverage witness (a round-1 release moving by tens where the lemma allows
0), a replay loss above 60 and a prober witness, all false. The check now calls the rule's R and U steps twice on
each agent's initial state and refuses a rule whose output differs (``ScenarioError`` naming the agent, round and
channel).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from asyncdp.errors import ScenarioError
from asyncdp.privacy import check_privacy

example_scripts = sys.modules["asyncdp_tests_example_scripts"]  # tests/fixtures/example_scripts.py, loaded by conftest.py
EX, _PAPERS = example_scripts.run_unregistered("own_paper_private_dgd.py")

_RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="module")
def _papers() -> None:
    """The script's paper records, registered for this module's tests only."""
    example_scripts.register_again(_PAPERS)


@dataclass(frozen=True)
class OwnNoiseDGD(EX["PrivateDGD"]):  # type: ignore[misc, valid-type]
    """PrivateDGD drawing its Laplace noise itself (the declared scale), not from the engine's ``noise``."""

    name: ClassVar[str] = "private-dgd-own-noise-test"

    def message(self, state: dict, t: int, noise: Any, agents: Any, problem: Any) -> dict:
        x = state["x"]
        return {"y": x + _RNG.laplace(0.0, self.scale(), size=x.shape)}


def test_a_rule_drawing_its_own_noise_is_refused_with_the_agent_round_and_channel():
    rule = OwnNoiseDGD(rounds=EX["HORIZON"])
    with pytest.raises(ScenarioError, match=r"agent 0.*round 1.*channel 'y'.*randomness"):
        check_privacy(EX["scenario"].replace(algorithm=rule), EX["adjacent"].replace(algorithm=rule), runs=50, seed=0)
