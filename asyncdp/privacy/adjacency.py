"""Adjacency of two scenarios: which agent's cost (or which round's loss) the adjacent scenario changed.

* :func:`find_changed_agent`: the two scenarios are equal but for one agent's
  cost; returns the agent;
* :func:`find_changed_round`: the same for online loss sequences (one round's
  loss changed, Cheng, Liao and Li, arXiv 2022, Def. 1); returns the round.

Both raise :class:`accounting.errors.AdjacencyError` naming what differs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from accounting.errors import AdjacencyError

from ..scenario import Scenario

__all__ = ["find_changed_agent", "find_changed_round"]


def _same_topology(a: Scenario, b: Scenario) -> int | None:
    """First round (1..horizon) where the two scenarios' weights differ, else None (one topology object: None)."""
    if a.topology is b.topology:
        return None
    for t in range(1, a.horizon + 1):
        wa, wb = a.topology.weights(t), b.topology.weights(t)
        if wa.shape != wb.shape or abs(wa - wb).max() > 0:
            return t
    return None


def _online(problem: Any) -> bool:
    """Whether the costs are a round-indexed loss sequence (they expose ``num_rounds``; :mod:`asyncdp.problems.online`)."""
    return getattr(problem.costs, "num_rounds", None) is not None


def _check_same_setup(scenario: Scenario, adjacent: Scenario) -> None:
    """Everything but the costs must be equal (see :func:`find_changed_agent`)."""
    if scenario.problem.num_agents != adjacent.problem.num_agents or scenario.problem.dim != adjacent.problem.dim:
        raise AdjacencyError("adjacent scenarios must have the same number of agents and dimension")
    if scenario.problem.domain != adjacent.problem.domain:
        raise AdjacencyError(f"adjacent scenarios differ in the domain: {scenario.problem.domain!r} vs "
                             f"{adjacent.problem.domain!r}")
    for name in ("algorithm", "timing", "links", "seed", "horizon", "mode"):
        if getattr(scenario, name) != getattr(adjacent, name):
            raise AdjacencyError(f"adjacent scenarios differ in {name}: {getattr(scenario, name)!r} vs "
                                 f"{getattr(adjacent, name)!r}")
    if not np.array_equal(scenario.initial_points(), adjacent.initial_points()):
        raise AdjacencyError("adjacent scenarios differ in the initial points x0")
    t = _same_topology(scenario, adjacent)
    if t is not None:
        raise AdjacencyError(f"adjacent scenarios differ in topology at round {t}")


def find_changed_round(scenario: Scenario, adjacent: Scenario, *, probes: int = 16, seed: int = 0) -> int:
    """For online losses: check that exactly one round's loss differs; return that round.

    The adjacency of Cheng, Liao and Li (arXiv 2022), Def. 1.

    Online losses expose ``num_rounds`` and evaluate round ``t``'s loss with
    ``round_index=t`` (:mod:`asyncdp.problems.online`). Everything but the losses must
    be equal, as in :func:`find_changed_agent`. Rounds ``1..horizon`` are
    compared by every agent's gradient at ``probes`` points of the domain and
    its centre. Such a change moves every agent's input, so all agents are affected.

    Args:
        scenario, adjacent: the two scenarios.
        probes: random points of the domain at which gradients are compared.
        seed: seed of those points.

    Returns:
        The changed round (1-based).

    Raises:
        AdjacencyError: they differ elsewhere, one of them is not online, or
            the losses differ in no round or in more than one round of the horizon.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair = small_example()[0]
        >>> find_changed_round(pair.scenario, pair.adjacent)
        Traceback (most recent call last):
        ...
        accounting.errors.AdjacencyError: round adjacency needs two online problems (costs with num_rounds)
    """
    if not (_online(scenario.problem) and _online(adjacent.problem)):
        raise AdjacencyError("round adjacency needs two online problems (costs with num_rounds)")
    _check_same_setup(scenario, adjacent)
    points = _probe_points(scenario.problem.domain, probes, seed)
    agents = np.arange(scenario.problem.num_agents)[:, None]
    changed = []
    for t in range(1, scenario.horizon + 1):
        g = scenario.problem.costs.gradient(agents, points[None], round_index=t)
        gp = adjacent.problem.costs.gradient(agents, points[None], round_index=t)
        if np.abs(g - gp).max() > 0:
            changed.append(t)
    if not changed:
        raise AdjacencyError(f"adjacent scenarios have the same loss in every round 1..{scenario.horizon}")
    if len(changed) > 1:
        raise AdjacencyError(f"adjacent scenarios differ in more than one round's loss: rounds {changed}")
    return changed[0]


def _probe_points(domain: Any, probes: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([domain.sample(rng, probes), np.asarray(domain.center, dtype=float)[None]])


def find_changed_agent(scenario: Scenario, adjacent: Scenario, *, probes: int = 16, seed: int = 0) -> int:
    """Check that ``adjacent`` differs from ``scenario`` in exactly one agent's cost; return that agent.

    Everything else must be equal: domain, topology (over the horizon),
    algorithm and its parameters, timing, links, seed, horizon, initial points
    and mode. Costs are compared by their gradients at ``probes`` points of the
    domain (and its centre), so user-supplied costs are handled too.

    Args:
        scenario, adjacent: the two scenarios.
        probes: random points of the domain at which gradients are compared.
        seed: seed of those points.

    Returns:
        The changed agent.

    Raises:
        AdjacencyError: they differ elsewhere, in no agent, or in more than one
            agent (the message names what differs).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair = small_example()[0]
        >>> find_changed_agent(pair.scenario, pair.adjacent)
        0
    """
    _check_same_setup(scenario, adjacent)
    points = _probe_points(scenario.problem.domain, probes, seed)
    n_agents = scenario.problem.num_agents
    agents = np.arange(n_agents)[:, None]
    g = scenario.problem.costs.gradient(agents, points[None])
    gp = adjacent.problem.costs.gradient(agents, points[None])
    changed = [int(i) for i in np.flatnonzero(np.abs(g - gp).max(axis=(1, 2)) > 0)]
    if not changed:
        raise AdjacencyError("adjacent scenarios have the same costs for every agent")
    if len(changed) > 1:
        raise AdjacencyError(f"adjacent scenarios differ in more than one agent's cost: agents {changed}")
    return changed[0]
