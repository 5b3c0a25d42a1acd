"""Hypothesis strategies for privacy property tests: adjacent scenario pairs.

For users' own tests as much as ours. Each strategy draws a small scenario
and an adjacent one (one agent's private cost changed within its declared
function class), on topologies from :mod:`topology.strategies`; they shrink
toward few agents, short horizons and nearby addresses.

Example:
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=3, deadline=None)
    ... @given(adjacent_rendezvous_pairs())
    ... def test_adjacent(pair):
    ...     scenario, adjacent, agent = pair
    ...     assert scenario.problem.num_agents == adjacent.problem.num_agents
    >>> test_adjacent()
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

import topology
from topology.strategies import doubly_stochastic_matrices

from ..papers.huang2015.rule import Huang2015
from ..problems.problem import rendezvous_problem
from ..scenario import Scenario

__all__ = ["addresses", "huang2015_parameters", "adjacent_rendezvous_pairs"]


def addresses(num_agents: int, dim: int = 2) -> st.SearchStrategy[np.ndarray]:
    """Private rendezvous addresses in the box ``[-1, 1]^dim``, shape ``(num_agents, dim)``."""
    coord = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
    return st.lists(st.lists(coord, min_size=dim, max_size=dim), min_size=num_agents, max_size=num_agents).map(
        lambda rows: np.array(rows, dtype=float)
    )


@st.composite
def huang2015_parameters(draw: Any, schedule: str = "eq8") -> Huang2015:
    """Valid ``(epsilon, c, q, p)`` for the rendezvous class (``C3 = 2``, so ``c < 1/2``)."""
    epsilon = draw(st.sampled_from([0.1, 0.5, 1.0, 2.0]))
    c = draw(st.floats(0.01, 0.49))
    q = draw(st.floats(0.05, 0.9))
    p = draw(st.floats(q + 0.02, 0.99)) if q + 0.02 < 0.99 else 0.99
    return Huang2015(epsilon=epsilon, c=c, q=q, p=p, schedule=schedule)


@st.composite
def adjacent_rendezvous_pairs(
    draw: Any, *, min_agents: int = 2, max_agents: int = 5, max_horizon: int = 8, schedule: str = "eq8",
) -> tuple[Scenario, Scenario, int]:
    """``(scenario, adjacent, changed_agent)`` for ``huang2015`` on private rendezvous in ``[-1, 1]^2``.

    The topology is one doubly stochastic matrix with a minimum weight (static),
    drawn from :func:`topology.strategies.doubly_stochastic_matrices`; the
    adjacent problem moves one agent's address anywhere in the box.
    """
    w = draw(doubly_stochastic_matrices(min_nodes=min_agents, max_nodes=max_agents, min_weight=0.1))
    n_agents = w.shape[0]
    addr = draw(addresses(n_agents))
    agent = draw(st.integers(0, n_agents - 1))
    moved = draw(addresses(1))[0]
    horizon = draw(st.integers(2, max_horizon))
    problem = rendezvous_problem(addr)
    scenario = Scenario(problem, topology.static(w), draw(huang2015_parameters(schedule)), horizon=horizon,
                        seed=draw(st.integers(0, 2**16)))
    adjacent = scenario.replace(problem=problem.adjacent(agent, address=moved))
    return scenario, adjacent, agent
