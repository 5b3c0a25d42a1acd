"""``adjacent_rendezvous_pairs`` draws adjacent pairs only: the moved address differs from the agent's own.

The strategy drew the agent's new address independently of its old one, so it could draw the same point (the
simplest example, every address at the origin, is the one Hypothesis tries first and shrinks to): a "pair" of two
identical problems, which :func:`~asyncdp.privacy.properties.assert_private` (through
:func:`~asyncdp.privacy.adjacency.check_adjacency`) refuses with ``AdjacencyError: adjacent scenarios have the same
costs for every agent``, so a property deciding the drawn pairs failed on a defect of the strategy, not the rule.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from asyncdp.privacy.adjacency import check_adjacency
from asyncdp.privacy.strategies import adjacent_rendezvous_pairs


@settings(max_examples=25, derandomize=True, database=None)
@given(adjacent_rendezvous_pairs(max_agents=3, max_horizon=3))
def test_every_drawn_pair_changes_exactly_its_agent(pair):
    scenario, adjacent, agent = pair
    own, moved = scenario.problem.costs.addresses[agent], adjacent.problem.costs.addresses[agent]
    assert not np.array_equal(own, moved)
    assert check_adjacency(scenario, adjacent).agent == agent
