"""Bridges from scenarios to the independent accountant (:mod:`accounting`).

``accounting`` never imports ``asyncdp``; this module hands it plain data and
small adapters that satisfy the protocols ``accounting`` defines:

* :func:`find_changed_agent` — checks that two scenarios are adjacent (same
  everything, one agent's cost changed) and names the agent;
* :class:`AlgorithmReplayRule` — an algorithm's R and U steps as an
  :class:`accounting.replay.ReplayRule` (vectorized over transcripts);
* :func:`replay_setup` — the round weights and the per-round noise scales;
* :func:`transcript_array` — a run's broadcast transcript as ``(T, N, n)``;
* :func:`independent_sensitivity` — the accountant's own per-round
  sensitivity for a shipped algorithm, from the function-class constants;
* :func:`update_pair` — the U step of both problems as an
  :class:`accounting.prober.AdjacentPair` for the sensitivity prober.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting.errors import AdjacencyError
from accounting.replay import ReplaySetup

from .algorithms.base import Algorithm
from .scenario import Scenario

__all__ = [
    "find_changed_agent",
    "AlgorithmReplayRule",
    "replay_setup",
    "transcript_array",
    "independent_sensitivity",
]


def _same_topology(a: Scenario, b: Scenario) -> int | None:
    """First round (1..horizon) where the two scenarios' weights differ, else None."""
    for t in range(1, a.horizon + 1):
        wa, wb = a.topology.weights(t), b.topology.weights(t)
        if wa.shape != wb.shape or abs(wa - wb).max() > 0:
            return t
    return None


def find_changed_agent(scenario: Scenario, adjacent: Scenario, *, probes: int = 16, seed: int = 0) -> int:
    """Check that ``adjacent`` differs from ``scenario`` in exactly one agent's cost; return that agent.

    Everything else must be equal: domain, topology (over the horizon),
    algorithm and its parameters, timing, links, seed, horizon, initial points
    and mode. Costs are compared by their gradients at ``probes`` points of the
    domain (and its centre), so user-supplied costs are handled too.

    Raises:
        AdjacencyError: they differ elsewhere, in no agent, or in more than one
            agent (the message names what differs).
    """
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
    domain = scenario.problem.domain
    rng = np.random.default_rng(seed)
    points = np.concatenate([domain.sample(rng, probes), np.asarray(domain.center, dtype=float)[None]])
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


@dataclass(frozen=True)
class AlgorithmReplayRule:
    """An algorithm with one noisy broadcast channel as an :class:`accounting.replay.ReplayRule`.

    The replayed state is the algorithm's state dict flattened to its ``"x"``
    entry; the message mean is the R step with zero noise, the next state the
    U step on the mixed channel (both vectorized: ``(R, N, n)``).
    """

    algorithm: Algorithm
    problem: Any
    x0: np.ndarray

    def _state(self, x: np.ndarray) -> dict[str, np.ndarray]:
        return {"x": x}

    def initial_state(self, runs: int) -> np.ndarray:
        agents = np.arange(self.problem.num_agents)
        st = self.algorithm.initial_state(np.broadcast_to(self.x0, (runs,) + self.x0.shape), agents, self.problem)
        return np.array(st["x"], dtype=float)

    def message_mean(self, state: np.ndarray, t: int) -> np.ndarray:
        (channel,) = [c.name for c in self.algorithm.noisy_channels()]
        zero = {channel: np.zeros_like(state)}
        return self.algorithm.message(self._state(state), t, zero, np.arange(state.shape[-2]), self.problem)[channel]

    def next_state(self, state: np.ndarray, mixed: np.ndarray, t: int) -> np.ndarray:
        (channel,) = [c.name for c in self.algorithm.noisy_channels()]
        out = self.algorithm.update(self._state(state), {channel: mixed}, t, np.arange(state.shape[-2]), self.problem)
        return out["x"]


def replay_rule(scenario: Scenario) -> AlgorithmReplayRule:
    """The replay rule of ``scenario`` (algorithm bound to its problem)."""
    return AlgorithmReplayRule(scenario.algorithm.bind(scenario.problem), scenario.problem, scenario.initial_points())


def replay_setup(scenario: Scenario) -> ReplaySetup:
    """Weights ``W_t`` and the per-round noise scales declared by the algorithm.

    Raises:
        AdjacencyError: never; ``accounting.errors.PrivacyParameterError`` if a
            round has zero noise (e.g. ``epsilon = inf``: nothing to replay).
    """
    alg = scenario.algorithm.bind(scenario.problem)
    (channel,) = alg.noisy_channels()
    scales = np.array([alg.noise(t, channel.name).scale for t in range(1, scenario.horizon + 1)])
    return ReplaySetup(weights=scenario.topology.weights, mechanism=channel.mechanism, scales=scales)


def transcript_array(result: Any, channel: str = "y") -> np.ndarray:
    """A broadcast run's observed messages as ``(T, N, n)`` (round-major, agent order)."""
    obs = result.transcript.observations(channel)
    horizon, n_agents, n = result.trajectory.shape[0] - 1, result.trajectory.shape[1], result.trajectory.shape[2]
    out = np.full((horizon, n_agents, n), np.nan)
    for (t, i), payload in obs.items():
        out[t - 1, i] = payload
    return out


def independent_sensitivity(scenario: Scenario) -> np.ndarray:
    """The accountant's own sensitivity of each round's release, ``(T,)``, from plain constants.

    For ``huang2015``: ``accounting.sensitivity.huang2015_release_sensitivity``
    with ``C2`` and ``n`` from the problem's function class and ``c, q`` from
    the algorithm; the algorithm's claimed values are not used.

    Raises:
        NotImplementedError: an algorithm without an independent bound yet.
    """
    from accounting import sensitivity as S

    alg = scenario.algorithm.bind(scenario.problem)
    if alg.name == "huang2015":
        c2 = scenario.problem.constants.gradient_bound
        return np.array([
            S.huang2015_release_sensitivity(t, C2=c2, n=scenario.problem.dim, c=alg.c, q=alg.q)
            for t in range(1, scenario.horizon + 1)
        ])
    raise NotImplementedError(f"no independent sensitivity for {alg.name!r} yet")


def _finite(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")
