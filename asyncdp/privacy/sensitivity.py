"""The accountant's own sensitivity of a scenario, and the update pair the sensitivity prober searches.

* :func:`independent_sensitivity`: the per-round sensitivity from the
  function-class constants (through the algorithm's adapter), never from the
  algorithm's claimed values;
* :func:`update_pair`: the U step of both problems as an
  :class:`accounting.prober.AdjacentPair`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting import prober

from ..scenario import Scenario
from ..algorithms import registry as _papers

__all__ = ["independent_sensitivity", "update_pair"]


def independent_sensitivity(scenario: Scenario) -> np.ndarray:
    """The accountant's own sensitivity of each round's release, ``(T,)``, from plain constants.

    Dispatches to ``asyncdp.privacy.adapters.<algorithm name>`` (``-`` read as
    ``_``), whose ``sensitivity(scenario)`` hands the problem's function-class
    constants and the algorithm's parameters to :mod:`accounting.sensitivity`
    and never uses the algorithm's claimed values.

    Args:
        scenario: the scenario.

    Returns:
        The sensitivity of each round's release, ``(T,)``.

    Raises:
        NotImplementedError: no adapter for this algorithm.
        ScenarioError: the adapter's bound does not apply to this scenario.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> independent_sensitivity(small_example()[0].scenario).shape
        (5,)
    """
    adapter = _papers.adapter(scenario.algorithm.name)
    if adapter is None:
        raise NotImplementedError(f"no independent sensitivity for {scenario.algorithm.name!r} yet")
    return np.asarray(adapter.sensitivity(scenario), dtype=float)


def update_pair(scenario: Scenario, adjacent: Scenario, agent: int | None, t: int) -> prober.AdjacentPair:
    """The U step of ``agent`` at round ``t`` under both problems, for :func:`accounting.prober.probe_sensitivity`.

    The prober's point ``z`` is the agent's combined value ``z_i(t)``; the
    "cost" handed to the prober is the problem itself.

    ``agent=None`` (round adjacency, where every agent's input changes):
    every agent starts round ``t`` from ``initial_state(z)``, a consensus
    configuration. Every neighbour sends the same message, so the mixed
    channels are the agents' own zero-noise messages. The probed value is
    the sum over agents of the next round's zero-noise noisy-channel messages,
    the values the next release masks. The L1 change of that sum is a lower
    bound on the change of the stacked messages. It is equal when the agents'
    changes have disjoint supports, as with DPSDA's blocks.

    Args:
        scenario, adjacent: the two scenarios.
        agent: the changed agent, or ``None`` for round adjacency.
        t: the round whose update is probed.

    Returns:
        The :class:`accounting.prober.AdjacentPair` of the two updates.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair = small_example()[0]
        >>> update_pair(pair.scenario, pair.adjacent, 0, 1).t
        1
    """
    alg = scenario.algorithm.bind(scenario.problem)
    (channel,) = [c.name for c in alg.noisy_channels()]
    n = scenario.problem.dim

    def rule(z: np.ndarray, t_: int, problem: Any) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        if agent is not None:
            return alg.update({"x": z}, {channel: z}, t_, agent, problem)["x"]
        n_agents = problem.num_agents
        pts = np.broadcast_to(z[..., None, :], z.shape[:-1] + (n_agents, n)).copy()
        agents = np.arange(n_agents)

        def zero(s: int) -> dict[str, np.ndarray]:
            return {c.name: np.zeros(pts.shape[:-1] + (alg.noise(s, c.name).dimension,)) for c in alg.noisy_channels()}

        state = alg.initial_state(pts, agents, problem)
        new = alg.update(state, alg.message(state, t_, zero(t_), agents, problem), t_, agents, problem)
        return alg.message(new, t_ + 1, zero(t_ + 1), agents, problem)[channel].sum(axis=-2)

    domain = scenario.problem.domain
    box = (domain.low, domain.high) if hasattr(domain, "low") else None
    return prober.AdjacentPair(rule, scenario.problem, adjacent.problem, t=t, n=n, domain_box=box)
