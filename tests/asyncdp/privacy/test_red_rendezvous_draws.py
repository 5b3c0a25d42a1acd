"""``adjacent_rendezvous_pairs`` draws adjacent pairs only (the moved address differs from the agent's own), and
names a bad bound of its own when it is built.

The strategy drew the agent's new address independently of its old one, so it could draw the same point (the
simplest example, every address at the origin, is the one Hypothesis tries first and shrinks to): a "pair" of two
identical problems, which :func:`~asyncdp.privacy.properties.assert_private` (through
:func:`~asyncdp.privacy.adjacency.check_adjacency`) refuses with ``AdjacencyError: adjacent scenarios have the same
costs for every agent``, so a property deciding the drawn pairs failed on a defect of the strategy, not the rule.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from asyncdp.errors import ScenarioError
from asyncdp.privacy.adjacency import check_adjacency
from asyncdp.privacy.strategies import adjacent_rendezvous_pairs


@settings(max_examples=25, derandomize=True, database=None)
@given(adjacent_rendezvous_pairs(max_agents=3, max_horizon=3))
def test_every_drawn_pair_changes_exactly_its_agent(pair):
    scenario, adjacent, agent = pair
    own, moved = scenario.problem.costs.addresses[agent], adjacent.problem.costs.addresses[agent]
    assert not np.array_equal(own, moved)
    assert check_adjacency(scenario, adjacent).agent == agent


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"max_horizon": 1}, "max_horizon must be >= 2, got 1"),
    ({"min_agents": 4, "max_agents": 2}, "max_agents must be >= 4, got 2"),
    ({"min_agents": 0}, "min_agents must be >= 1, got 0"),
])
def test_bad_bounds_are_named_when_the_strategy_is_built(kwargs, named):
    """They were errors of Hypothesis or of the topology strategy at the first draw (``max_value=1 < min_value=2``,
    ``min_nodes=4 exceeds max_nodes=2``), naming neither the argument nor the strategy."""
    with pytest.raises(ScenarioError, match=f"adjacent_rendezvous_pairs: {named}"):
        adjacent_rendezvous_pairs(**kwargs)
