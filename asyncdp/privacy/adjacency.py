"""Adjacency of two scenarios: which agent's cost (or which round's loss) the adjacent scenario changed.

* :func:`find_changed_agent`: the two scenarios are equal but for one agent's
  cost; returns the agent;
* :func:`find_changed_round`: the same for online loss sequences (one round's
  loss changed, Cheng, Liao and Li, arXiv 2022, Def. 1); returns the round.

Both raise :class:`accounting.errors.AdjacencyError` naming what differs.

Gradients compared at finitely many points can show that a cost differs,
never that it is the same: a cost may differ from another everywhere but at
the points compared. So the costs are also compared by their structure
(:meth:`~asyncdp.problems.costs.CostFamily.compare_agents`,
:meth:`~asyncdp.problems.online.OnlineLoss.compare_rounds`): parameters that
differ count as a change; an agent (round) whose cost the structure cannot
show unchanged (a user's callable that is another object than the scenario's)
is *unverified*. :func:`check_adjacency` returns the changed agent (or round)
with a doubt naming the unverified ones, which the privacy check reports
(``inconclusive``, never ``pass``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting.errors import AdjacencyError

from ..algorithms.base import stated_claim
from ..errors import ProblemError
from ..problems.costs.structure import Difference, same_value
from ..scenario import Scenario
from .evidence import Evidence

__all__ = ["Adjacency", "adjacency_after_runs", "check_adjacency", "find_changed_agent", "find_changed_round"]


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
        a, b = scenario.problem, adjacent.problem
        raise AdjacencyError(f"adjacent scenarios must have the same number of agents and dimension, got "
                             f"{a.num_agents} agents in dimension {a.dim} vs {b.num_agents} in dimension {b.dim}")
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
    _check_same_binding(scenario, adjacent)


def _check_same_binding(scenario: Scenario, adjacent: Scenario) -> None:
    """The rule bound to each problem must be one mechanism: the same type, the same parameters (dataclass fields
    and every other attribute the binding set), and the same noise declarations and claim in every round.

    The check replays both problems with the rule bound to the scenario's problem; a binding that reads the
    private costs would run another mechanism on the adjacent data than the one the check models.

    Raises:
        AdjacencyError: naming the parameter, or the channel and round, that differs.
    """
    a, b = scenario.algorithm.bind(scenario.problem), adjacent.algorithm.bind(adjacent.problem)
    why = ("the rule's binding reads the problem, so the two datasets run different mechanisms (its parameters "
           "must be public)")
    if scenario.problem.constants != adjacent.problem.constants:
        why += (f"; the problems declare different constants ({scenario.problem.constants!r} vs "
                f"{adjacent.problem.constants!r}), which the rule reads when bound: build the adjacent problem "
                "with Problem.adjacent, or pass the same constants=")
    if type(a) is not type(b):
        raise AdjacencyError(f"the rule bound to the adjacent problem is a {type(b).__name__}, the rule bound to the "
                             f"scenario's problem a {type(a).__name__}; {why}")
    # a binding that returns the rule itself read nothing from the problem (the unbound rules are compared in
    # _check_same_setup); comparing their attributes would compare what their use left in them (memo caches)
    pa, pb = ({}, {}) if a is scenario.algorithm and b is adjacent.algorithm else (_parameters(a), _parameters(b))
    for name in sorted(set(pa) | set(pb), key=str):
        va, vb = pa.get(name, _MISSING), pb.get(name, _MISSING)
        if not same_value(va, vb):
            raise AdjacencyError(f"the rule bound to the adjacent problem differs from the rule bound to the "
                                 f"scenario's problem in {name}: {_short(va)} vs {_short(vb)}; {why}")
    for t in range(1, scenario.horizon + 1):
        for c in a.channels:
            da, db = a.noise(t, c.name), b.noise(t, c.name)
            if not _same_declaration(da, db):
                raise AdjacencyError(f"the rule bound to the adjacent problem declares other noise on channel "
                                     f"{c.name!r} in round {t}: {db!r} vs {da!r}; {why}")
    claim_a, claim_b = (stated_claim(r, "claimed_privacy", scenario.horizon) for r in (a, b))
    if claim_a != claim_b:
        raise AdjacencyError(f"the rule bound to the adjacent problem claims {claim_b} against {claim_a}; {why}")


_MISSING = object()
"""An attribute one bound rule has and the other has not."""


def _same_declaration(a: Any, b: Any) -> bool:
    """Whether two rounds' noise declarations are the same, field by field (:func:`same_value`: a NaN scale on both
    sides is the same declaration, left to the engines' checks, which name the agent and round; ``!=`` said the two
    bindings declared different noise).

    Example:
        >>> from asyncdp.algorithms import NoiseDeclaration
        >>> _same_declaration(NoiseDeclaration("gaussian", float("nan"), 2, 1.0),
        ...                   NoiseDeclaration("gaussian", float("nan"), 2, 1.0))
        True
    """
    if dataclasses.is_dataclass(a) and not isinstance(a, type) and type(a) is type(b):
        return same_value(dataclasses.astuple(a), dataclasses.astuple(b))
    return same_value(a, b)


def _parameters(rule: Any) -> dict[str, Any]:
    """Everything a bound rule holds: its dataclass fields and every instance attribute.

    Not only the fields: a binding may set an attribute that is no field (``object.__setattr__`` on a frozen
    dataclass, or any attribute of a plain class), and the rule's steps read it all the same.
    """
    out: dict[str, Any] = {}
    if dataclasses.is_dataclass(rule):
        out.update((f.name, getattr(rule, f.name)) for f in dataclasses.fields(rule))
    out.update(getattr(rule, "__dict__", {}))
    for cls in type(rule).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and hasattr(rule, name):
                out.setdefault(name, getattr(rule, name))
    return out


def _short(value: Any) -> str:
    return "(none)" if value is _MISSING else repr(value)[:80]


def _probe_points(domain: Any, probes: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([domain.sample(rng, probes), np.asarray(domain.center, dtype=float)[None]])


@dataclass(frozen=True)
class Adjacency:
    """What changed between two adjacent scenarios, and what could not be shown unchanged.

    Attributes:
        agent: the changed agent (``None`` under round adjacency).
        round: the changed round of an online loss sequence (``None`` under agent adjacency).
        unverified: the other agents (or rounds) whose costs the structure could not show unchanged
            (:meth:`~asyncdp.problems.costs.CostFamily.compare_agents`); their gradients agree at every probe
            point, which does not show that they agree elsewhere.
        doubt: one sentence naming them and how to build the pair so that they are verified, or ``None``.
    """

    agent: int | None
    round: int | None
    unverified: tuple[int, ...] = ()
    doubt: str | None = None

    def evidence(self) -> Evidence | None:
        """The doubt as the check's evidence ``"adjacency"`` (never ``pass``; see
        :func:`~asyncdp.privacy.verdict.decide`), or ``None`` without one."""
        if self.doubt is None:
            return None
        what = "adjacency_unverified_rounds" if self.agent is None else "adjacency_unverified_agents"
        return Evidence("adjacency", "declaration", {what: list(self.unverified)}, reasons=(self.doubt,),
                        doubt=self.doubt)


def _changed(probed: list[int], diff: Difference, what: str, same: str) -> tuple[int, tuple[int, ...], str | None]:
    """The changed entry from the probes and the structure, the unverified others, and the doubt.

    Raises:
        AdjacencyError: no entry changed, or more than one (naming them, and which the structure shows).
    """
    changed = sorted(set(probed) | diff.differ)
    if not changed:
        hint = (f" at every probe point, and the structure shows no {what} changed ({what}s {sorted(diff.unknown)} "
                f"are not compared: {diff.why})" if diff.unknown else "")
        raise AdjacencyError(f"adjacent scenarios have the same {same}{hint}")
    if len(changed) > 1:
        how = []
        if diff.differ:
            shared = f" ({diff.why})" if diff.why and not diff.unknown else ""  # (why names the unknown ones else)
            how.append(f"{what}s {sorted(diff.differ)} by their parameters{shared}")
        if set(probed) - diff.differ:
            how.append(f"{what}s {sorted(set(probed) - diff.differ)} by their gradients at the probe points")
        noun = "loss" if what == "round" else "cost"
        raise AdjacencyError(f"adjacent scenarios differ in more than one {what}'s {noun}: {what}s {changed} "
                             f"({'; '.join(how)})")
    unverified = tuple(sorted(diff.unknown - {changed[0]}))
    if not unverified:
        return changed[0], (), None
    noun = "losses" if what == "round" else "costs"
    doubt = (f"adjacency: the {noun} of {what}(s) {list(unverified)} could not be shown unchanged: their gradients "
             f"agree at the probe points, which cannot rule out a change elsewhere ({diff.why}); a second change "
             f"may be hidden from the check: build the adjacent problem with "
             + ("adjacent_online_problem (OnlineLoss.with_round)" if what == "round" else "Problem.adjacent")
             + f", or reuse the scenario's cost objects for every unchanged {what}")
    return changed[0], unverified, doubt


def _round_adjacency(scenario: Scenario, adjacent: Scenario, probes: int, seed: int) -> Adjacency:
    if not (_online(scenario.problem) and _online(adjacent.problem)):
        raise AdjacencyError("round adjacency needs two online problems (costs with num_rounds)")
    _check_same_setup(scenario, adjacent)
    points = _probe_points(scenario.problem.domain, probes, seed)
    agents = np.arange(scenario.problem.num_agents)[:, None]
    probed = []
    for t in range(1, scenario.horizon + 1):
        g = scenario.problem.costs.gradient(agents, points[None], round_index=t)
        gp = adjacent.problem.costs.gradient(agents, points[None], round_index=t)
        if np.abs(g - gp).max() > 0:
            probed.append(t)
    costs, other = scenario.problem.costs, adjacent.problem.costs
    compare = getattr(costs, "compare_rounds", None)
    if compare is None:
        horizon = frozenset(range(1, scenario.horizon + 1))
        diff = Difference(frozenset(), horizon, f"{type(costs).__name__} describes no rounds to compare")
    else:
        try:
            diff = compare(other)
        except ProblemError as exc:  # (another number of rounds: not two sequences of Def. 1)
            raise AdjacencyError(f"adjacent scenarios' loss sequences cannot be compared round by round: {exc}"
                                 ) from None
    # rounds after the horizon are never evaluated: they may differ
    rounds = frozenset(range(1, scenario.horizon + 1))
    diff = Difference(diff.differ & rounds, diff.unknown & rounds, diff.why)
    t, unverified, doubt = _changed(probed, diff, "round", f"loss in every round 1..{scenario.horizon}")
    return Adjacency(None, t, unverified, doubt)


def _agent_adjacency(scenario: Scenario, adjacent: Scenario, probes: int, seed: int) -> Adjacency:
    _check_same_setup(scenario, adjacent)
    points = _probe_points(scenario.problem.domain, probes, seed)
    n_agents = scenario.problem.num_agents
    agents = np.arange(n_agents)[:, None]
    g = scenario.problem.costs.gradient(agents, points[None])
    gp = adjacent.problem.costs.gradient(agents, points[None])
    probed = [int(i) for i in np.flatnonzero(np.abs(g - gp).max(axis=(1, 2)) > 0)]
    diff = scenario.problem.costs.compare_agents(adjacent.problem.costs)
    agent, unverified, doubt = _changed(probed, diff, "agent", "costs for every agent")
    return Adjacency(agent, None, unverified, doubt)


def check_adjacency(scenario: Scenario, adjacent: Scenario, *, probes: int = 16, seed: int = 0) -> Adjacency:
    """Check that the scenarios are adjacent; return the changed agent (or round) and what is unverified.

    Online losses (:mod:`asyncdp.problems.online`) are compared round by round
    (:func:`find_changed_round`), other costs agent by agent
    (:func:`find_changed_agent`). An entry changed when its gradients differ at
    a probe point or its parameters differ
    (:meth:`~asyncdp.problems.costs.CostFamily.compare_agents`); exactly one
    may. An other entry whose cost the structure cannot show unchanged (a user
    callable that is not the scenario's object) is *unverified*: the
    returned doubt names it.

    Args:
        scenario, adjacent: the two scenarios.
        probes: random points of the domain at which gradients are compared.
        seed: seed of those points.

    Returns:
        The :class:`Adjacency`.

    Raises:
        AdjacencyError: they differ elsewhere, in no entry, or in more than one (naming them).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair = small_example()[0]
        >>> check_adjacency(pair.scenario, pair.adjacent)
        Adjacency(agent=0, round=None, unverified=(), doubt=None)
    """
    if _online(scenario.problem):
        return _round_adjacency(scenario, adjacent, probes, seed)
    return _agent_adjacency(scenario, adjacent, probes, seed)


def find_changed_round(scenario: Scenario, adjacent: Scenario, *, probes: int = 16, seed: int = 0) -> int:
    """For online losses: check that exactly one round's loss differs; return that round.

    The adjacency of Cheng, Liao and Li (arXiv 2022), Def. 1.

    Online losses expose ``num_rounds`` and evaluate round ``t``'s loss with
    ``round_index=t`` (:mod:`asyncdp.problems.online`). Everything but the losses must
    be equal, as in :func:`find_changed_agent`. Rounds ``1..horizon`` are
    compared by every agent's gradient at ``probes`` points of the domain and
    its centre, and by the sequences' structure
    (:meth:`~asyncdp.problems.online.OnlineLoss.compare_rounds`: a round whose
    batch differs changed). Such a change moves every agent's input, so all
    agents are affected. Rounds the structure cannot show unchanged are
    reported by :func:`check_adjacency`.

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
    t = _round_adjacency(scenario, adjacent, probes, seed).round
    assert t is not None
    return t


def find_changed_agent(scenario: Scenario, adjacent: Scenario, *, probes: int = 16, seed: int = 0) -> int:
    """Check that ``adjacent`` differs from ``scenario`` in exactly one agent's cost; return that agent.

    Everything else must be equal: domain, topology (over the horizon),
    algorithm and its parameters, timing, links, seed, horizon, initial points
    and mode, and the rule bound to each problem (its parameters, its noise
    declarations and its claim: a binding that reads the problem, e.g. its
    declared constants, must read the same from both). Costs are compared by their gradients at ``probes`` points of the
    domain (and its centre), so user-supplied costs are handled too, and by
    the families' structure
    (:meth:`~asyncdp.problems.costs.CostFamily.compare_agents`): an agent whose
    parameters differ changed even where its gradients agree at the probes.
    Agents the structure cannot show unchanged are reported by
    :func:`check_adjacency`.

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
    agent = _agent_adjacency(scenario, adjacent, probes, seed).agent
    assert agent is not None
    return agent


def adjacency_after_runs(scenario: Scenario, adjacent: Scenario, before: Adjacency | None) -> Evidence | None:
    """The adjacency checked again once the check's runs are done: a doubt when the pair changed while it ran.

    The engines and the replays hand the rule each problem; a rule (or a cost) that rewrites a problem's private
    data (say another agent's callables, when it recognises the adjacent data) runs on a pair other than the one
    whose adjacency :func:`~asyncdp.privacy.context.prepare` checked, and sampling cannot see a change that
    agrees at every point the runs visit.

    Args:
        scenario, adjacent: the pair, after the check's steps.
        before: what :func:`check_adjacency` found before the runs (``None``: nothing
            to compare).

    Returns:
        Evidence ``"adjacency"`` with a doubt naming what changed, or ``None`` when the pair is as it was.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair, ctx = small_example()
        >>> adjacency_after_runs(pair.scenario, pair.adjacent, ctx.adjacency) is None
        True
    """
    if before is None:
        return None
    try:
        after = check_adjacency(scenario, adjacent)
    except (AdjacencyError, ProblemError) as exc:  # (a rewritten cost may also fail its own checks now)
        now = str(exc)
    else:
        if after == before:
            return None
        now = after.doubt or f"agent {after.agent}, round {after.round} changed"
        now = now.removeprefix("adjacency: ")
    doubt = (f"adjacency: the pair changed while the check ran (the rule or a cost rewrote a problem's private "
             f"data): {now}; the runs checked are not runs of the pair whose adjacency was checked")
    return Evidence("adjacency", "declaration", {"adjacency_changed_during_check": True}, reasons=(doubt,),
                    doubt=doubt)
