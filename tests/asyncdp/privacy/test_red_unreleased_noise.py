"""A finite claim whose declared noise no release carries gets an error that says so, not "epsilon = inf?".

Muffliato's own scenario mixes with the identity in round 1 (every agent keeps its noisy value). Run in unicast
mode, no agent has an out-neighbour in round 1: nobody sends, the noise drawn there is never released, and each
agent's state after round 1 is its noise-free value (the self term of an agent that sends nothing), which round 2
sends to its neighbours in the clear.

Independent truth: agent 0's round-2 message is ``x_0`` exactly, so two adjacent values give disjoint transcripts:
the privacy loss is infinite and the claimed ``(14.8, 1e-6)`` is false. The check said "the scenario releases no
noisy values (epsilon = inf?): nothing to check", which reads as "no claim". It now names the claim, the round
whose noise went unreleased and the silent agents.
"""

from __future__ import annotations

import numpy as np
import pytest

from asyncdp.errors import ScenarioError
from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy import check_privacy


def _unicast_pair():
    scenario = Muffliato.example_scenario().replace(mode="unicast")
    p = scenario.problem
    return scenario, scenario.replace(problem=p.adjacent(0, address=np.asarray(p.costs.addresses[0]) + 0.05))


def test_the_round_two_message_is_the_private_value_in_the_clear():
    scenario, _ = _unicast_pair()
    result = scenario.replace(record_transcript=True).run()
    assert len(result.ledger) == 0  # no noisy release at all
    y2 = np.asarray(result.messages["y"])[1]  # round 2: one message per link
    assert np.isclose(y2[..., 0], scenario.problem.costs.addresses[0, 0]).any()  # agent 0's value, exactly


def test_a_finite_claim_on_unreleased_noise_is_named_not_called_infinite():
    scenario, adjacent = _unicast_pair()
    with pytest.raises(ScenarioError) as info:
        check_privacy(scenario, adjacent, runs=20, search_examples=0)
    msg = str(info.value)
    assert "epsilon = inf" not in msg
    assert msg.startswith("the scenario claims (14.8155, 1e-06)")
    assert "round 1 declares noise" in msg and "unicast mode agent(s) [0, 1, 2, 3, 4] ..." in msg
