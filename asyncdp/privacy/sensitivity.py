"""The accountant's own sensitivity of a scenario, and the update pair the sensitivity prober searches.

* :func:`independent_sensitivity`: the sensitivity of every release on every
  noisy channel, from the paper record's lemma (:class:`asyncdp.papers.Paper`),
  never from the algorithm's claimed values;
* :func:`release_sensitivity`: the same as a function of a ledger release;
* :func:`update_pair`: one round's update of both problems as an
  :class:`accounting.prober.AdjacentPair`, for one noisy channel;
* :func:`message_pair`: one round's message step R of both problems (where
  private data enters the release directly, e.g. Wang and Başar's gradient
  step, Automatica 2023, Algorithm 2 step (a));
* :func:`state_beyond_decision`: why both pairs' ``initial_state(z)`` is a
  first round's state only (a counter, momentum, a tracker in the state);
* :func:`state_follows_history`: why the noise-free rounds' state is not
  the only state the agent can enter round ``t`` with (momentum, a tracker).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from accounting import prober
from accounting.ledger import Release

from ..papers import find_registered
from ..scenario import Scenario
from .behavior import ZeroNoise

__all__ = ["independent_sensitivity", "release_sensitivity", "update_pair", "message_pair", "state_beyond_decision",
           "state_follows_history"]


def independent_sensitivity(scenario: Scenario) -> dict[str, np.ndarray]:
    """The accountant's own sensitivity of every release: ``{noisy channel: (T,) array}``, from the paper's lemma.

    The record is the algorithm's paper, found through its class MRO
    (:func:`asyncdp.papers.paper_of`); its lemma reads the problem's
    declared constants and the algorithm's parameters and never the
    algorithm's claimed values (:meth:`asyncdp.papers.Paper.sensitivity`).

    Args:
        scenario: the scenario.

    Returns:
        Channel name -> the sensitivity of each round's release on it, ``(T,)``.

    Raises:
        NotImplementedError: no paper record for this algorithm.
        PaperError: the lemma's value is malformed (shape, NaN, negative).
        ScenarioError: the lemma does not apply to this scenario.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> independent_sensitivity(small_example()[0].scenario)["y"].shape
        (5,)
    """
    found = find_registered(scenario.algorithm)
    if found is None:
        raise NotImplementedError(f"no paper record (so no independent sensitivity) for {scenario.algorithm.name!r}")
    return found.paper.sensitivity(scenario)


def release_sensitivity(sensitivity: Mapping[str, np.ndarray]) -> Callable[[Release], float]:
    """``release -> float``: the sensitivity of a ledger release (its channel's value at its round).

    Example:
        >>> from accounting.ledger import Release
        >>> f = release_sensitivity({"y": np.array([0.0, 2.0])})
        >>> f(Release(agent=0, round=2, time=2.0, mechanism="laplace", scale=1.0, dimension=1, channel="y"))
        2.0
    """
    def of(release: Release) -> float:
        return float(sensitivity[release.channel][release.round - 1])

    return of


def _noisy_channel(alg: Any, channel: str | None, caller: str) -> str:
    """``channel`` checked against ``alg``'s noisy channels (the only one when ``None``).

    Raises:
        ValueError: ``channel`` is not a noisy channel, or is missing for a rule with several.
    """
    noisy = [c.name for c in alg.noisy_channels()]
    if channel is None:
        if len(noisy) != 1:
            raise ValueError(f"{caller}: {alg.name} has noisy channels {noisy}; name the one to probe")
        return noisy[0]
    if channel not in noisy:
        raise ValueError(f"{caller}: {channel!r} is not a noisy channel of {alg.name} ({noisy})")
    return channel


def _probed_agents(z: np.ndarray, agent: int | None, problem: Any) -> tuple[np.ndarray, Any]:
    """The probed points and agents: ``z`` for one agent, or ``z`` broadcast to every agent (round adjacency)."""
    z = np.asarray(z, dtype=float)
    if agent is not None:
        return z, agent
    n_agents = problem.num_agents
    return np.broadcast_to(z[..., None, :], z.shape[:-1] + (n_agents, z.shape[-1])).copy(), np.arange(n_agents)


def _adjacent_pair(rule: Callable[..., np.ndarray], scenario: Scenario, adjacent: Scenario, t: int
                   ) -> prober.AdjacentPair:
    """``rule`` as the prober's pair of the two problems, inside the problem's domain box if it has one."""
    domain = scenario.problem.domain
    box = (domain.low, domain.high) if hasattr(domain, "low") else None
    return prober.AdjacentPair(rule, scenario.problem, adjacent.problem, t=t, n=scenario.problem.dim, domain_box=box)


def update_pair(scenario: Scenario, adjacent: Scenario, agent: int | None, t: int,
                channel: str | None = None, warm: bool = False) -> prober.AdjacentPair:
    """Round ``t``'s update under both problems, seen through round ``t + 1``'s message on ``channel``.

    The prober's point ``z`` is a consensus configuration: the probed agents
    start round ``t`` from ``initial_state(z)``, every neighbour sends the
    same messages as they do (so the mixed channels are their own zero-noise
    messages, noise-free channels included), the rule's U step runs, and the
    probed value is the next round's zero-noise message on ``channel``: the
    value the release of round ``t + 1`` masks. The rule's whole state comes
    from ``initial_state``, so rules whose update reads state entries beyond
    ``x`` work too.

    ``agent`` given: only that agent's update is probed; the messages it
    receives in round ``t`` are the same under both problems (those of the
    first), as the privacy argument conditions on what was released.
    ``agent=None`` (round adjacency, where every agent's input changes):
    every agent is probed from its own problem's configuration and the value
    is the sum over agents of their messages.

    ``warm``: the state entering round ``t`` is that of ``t - 1`` noise-free
    consensus rounds from ``initial_state(z)`` under the first problem (the
    same for both), for a rule whose state keeps more than its decision
    (``state_beyond_decision``: an update counter, momentum); otherwise
    such a rule is probed as if in its first round (a step ``a / sqrt(k)``
    probed with ``k = 1`` in every round). Changes the state carries from
    earlier rounds (momentum's) are not probed (the same state on both
    sides); exact replay and the worst-case search, which run the rule on
    realized schedules, cover them. The L1
    change of that sum is a lower bound on the change of the stacked
    messages; it is equal when the agents' changes have disjoint supports,
    as with DPSDA's blocks.

    Args:
        scenario, adjacent: the two scenarios.
        agent: the changed agent, or ``None`` for round adjacency.
        t: the round whose update is probed.
        channel: the noisy channel whose next message is probed (default: the only one; required
            when the rule has several).
        warm: start round ``t`` from the state of ``t - 1`` noise-free consensus rounds (above).

    Returns:
        The :class:`accounting.prober.AdjacentPair` of the two updates.

    Raises:
        ValueError: ``channel`` is not a noisy channel of the rule, or is missing for a rule with several.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair = small_example()[0]
        >>> update_pair(pair.scenario, pair.adjacent, 0, 1).t
        1
    """
    alg = scenario.algorithm.bind(scenario.problem)
    channel = _noisy_channel(alg, channel, "update_pair")
    zero = ZeroNoise.of(alg)
    base = scenario.problem

    def rule(z: np.ndarray, t_: int, problem: Any) -> np.ndarray:
        pts, agents = _probed_agents(z, agent, problem)
        # one agent changed: both updates see the same received messages (those under P); every agent
        # changed: each problem's own consensus configuration
        given = base if agent is not None else problem
        lead = pts.shape[:-1]
        state = _warmed(alg, alg.initial_state(pts, agents, given), t_ if warm else 1, agents, base, zero, lead)
        mixed = alg.message(state, t_, zero(t_, lead), agents, given)
        new = alg.update(state, mixed, t_, agents, problem)
        out = np.asarray(alg.message(new, t_ + 1, zero(t_ + 1, lead), agents, problem)[channel])
        return out if agent is not None else out.sum(axis=-2)

    return _adjacent_pair(rule, scenario, adjacent, t)


def message_pair(scenario: Scenario, adjacent: Scenario, agent: int | None, t: int,
                 channel: str | None = None, warm: bool = False) -> prober.AdjacentPair:
    """Round ``t``'s message step R under both problems, from the same state: what private data adds to a release.

    The prober's point ``z`` is the probed agents' state (``initial_state(z)``);
    the probed value is the zero-noise message of round ``t`` on ``channel``
    under each problem. A rule whose data enters only through the update U
    gives 0 here (its releases are probed by :func:`update_pair`); a rule
    whose message reads the private cost (a gradient step inside R) is
    probed here directly. ``agent=None`` (round adjacency): every agent is
    probed and the value is the sum over agents, as in :func:`update_pair`.

    Args:
        scenario, adjacent: the two scenarios.
        agent: the changed agent, or ``None`` for round adjacency.
        t: the round whose message is probed.
        channel: the noisy channel (default: the only one; required when the rule has several).
        warm: start round ``t`` from the state of ``t - 1`` noise-free consensus rounds (:func:`update_pair`).

    Returns:
        The :class:`accounting.prober.AdjacentPair` of the two messages.

    Raises:
        ValueError: ``channel`` is not a noisy channel of the rule, or is missing for a rule with several.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair = small_example()[0]
        >>> message_pair(pair.scenario, pair.adjacent, 0, 1).t
        1
    """
    alg = scenario.algorithm.bind(scenario.problem)
    channel = _noisy_channel(alg, channel, "message_pair")
    zero = ZeroNoise.of(alg)
    base = scenario.problem

    def rule(z: np.ndarray, t_: int, problem: Any) -> np.ndarray:
        pts, agents = _probed_agents(z, agent, problem)
        state = _warmed(alg, alg.initial_state(pts, agents, problem), t_ if warm else 1, agents, base, zero,
                        pts.shape[:-1])
        out = np.asarray(alg.message(state, t_, zero(t_, pts.shape[:-1]), agents, problem)[channel])
        return out if agent is not None else out.sum(axis=-2)

    return _adjacent_pair(rule, scenario, adjacent, t)


def _warmed(alg: Any, state: Any, t: int, agents: Any, problem: Any, zero: ZeroNoise, lead: tuple[int, ...]) -> Any:
    """``state`` after rounds ``1 .. t - 1`` of noise-free consensus (each agent mixes its own message) under
    ``problem``: the state entering round ``t`` (``state`` itself for ``t = 1``)."""
    for s in range(1, t):
        state = alg.update(state, alg.message(state, s, zero(s, lead), agents, problem), s, agents, problem)
    return state


def _one_agent(scenario: Scenario, agent: int | None) -> tuple[Any, Any, int, np.ndarray, ZeroNoise]:
    """The problem, the bound rule, the agent run alone (agent 0 for round adjacency), a copy of its initial
    point and the rule's zero noise: what a noise-free run of one agent's own rounds starts from."""
    problem = scenario.problem
    alg = scenario.algorithm.bind(problem)
    who = 0 if agent is None else int(agent)
    x0 = np.array(np.asarray(scenario.initial_points(), dtype=float)[who], copy=True)
    return problem, alg, who, x0, ZeroNoise.of(alg)


def state_beyond_decision(scenario: Scenario, agent: int | None, rounds: int = 3) -> str | None:
    """Why :func:`update_pair` and :func:`message_pair` probe a first round's state only, or ``None``.

    Both start every round from ``initial_state(z)``. That is a state of a
    later round too when the rule's state is a function of its decision:
    after each of rounds ``1 .. rounds``' updates from the scenario's initial
    point (the agent's own zero-noise message as the mixed value, as the
    probes mix), ``initial_state(decision(state))`` gives the state back (a
    counter that starts counting in round 2 is seen there). A state entry
    that keeps more (an update counter read by a decaying step, momentum, a
    gradient tracker, a previous iterate) fails this: a probe of a later
    round from ``initial_state(z)`` is a state the agent is never in then
    (e.g. a step ``a / sqrt(k)`` probed with ``k = 1`` in every round).

    Args:
        scenario: the scenario.
        agent: the changed agent, or ``None`` for round adjacency (agent 0 is tried).
        rounds: how many rounds are run (at most the horizon).

    Returns:
        ``None``, or the reason naming the first state entry and round that differ.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> state_beyond_decision(small_example()[0].scenario, 0) is None
        True
    """
    problem, alg, who, x0, zero = _one_agent(scenario, agent)
    state = alg.initial_state(x0, who, problem)
    for s in range(1, max(1, min(int(rounds), scenario.horizon)) + 1):
        state = alg.update(state, alg.message(state, s, zero(s, ()), who, problem), s, who, problem)
        back = alg.initial_state(np.array(alg.decision(state), dtype=float, copy=True), who, problem)
        for key, value in state.items():
            if key not in back or not _same(value, back[key]):
                return (f"state entry {key!r} after round {s}'s update is not initial_state's of the agent's decision "
                        "(the rule keeps more than its decision: a counter, momentum, a tracker)")
    return None


def state_follows_history(scenario: Scenario, agent: int | None, rounds: int = 3) -> str | None:
    """Why a warm probe (:func:`update_pair` with ``warm=True``) does not see every state of round ``t``, or ``None``.

    A state entry that keeps more than the decision and is the same after
    ``t - 1`` rounds whatever the agent mixed and wherever it started (an
    update counter) makes the warm probe exact. One that follows what was
    mixed (momentum, a tracker, a scale grown by disagreement) can be
    anything the releases drive it to: the noise-free rounds' value is one of
    many, and ``initial_state(z)``'s may be another reachable one. Shown on
    behavior: the agent's rounds ``1 .. rounds`` from the scenario's initial
    point with its own zero-noise messages, against the same rounds with
    each mixed value moved by seeded Gaussian draws of scales 1e-3, 1e-2,
    ..., 1e12 and 1e100 (times ``1 + max |x0|``: a threshold on what was
    mixed is crossed by one of them), and from an initial point moved
    likewise; every entry that is not ``initial_state`` of the decision in
    some round must agree across them. A behavioral test: an entry that
    follows the releases only in a window these draws miss is taken for a
    counter.

    Args:
        scenario: the scenario.
        agent: the changed agent, or ``None`` for round adjacency (agent 0 is tried).
        rounds: how many rounds each trajectory runs (at most the horizon).

    Returns:
        ``None``, or the reason naming the first entry and round that differ (or the rule's error on a moved input).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> state_follows_history(small_example()[0].scenario, 0) is None
        True
    """
    problem, alg, who, x0, zero = _one_agent(scenario, agent)
    size = 1.0 + float(np.max(np.abs(x0), initial=0.0))
    rng = np.random.default_rng(20231)
    rounds = max(1, min(int(rounds), scenario.horizon))

    def trajectory(start: np.ndarray, scale: float) -> list[Any]:
        state, out = alg.initial_state(np.array(start, copy=True), who, problem), []
        for s in range(1, rounds + 1):
            mixed = dict(alg.message(state, s, zero(s, ()), who, problem))
            if scale > 0:
                mixed = {k: np.asarray(v, dtype=float) + scale * rng.standard_normal(np.shape(v))
                         for k, v in mixed.items()}
            state = alg.update(state, mixed, s, who, problem)
            out.append(state)
        return out

    free = trajectory(x0, 0.0)
    others: list[tuple[str, list[Any]]] = []
    keys: set[str] = set()
    try:
        with np.errstate(all="ignore"):  # a far input may overflow: a nan entry is not shown the same
            for scale in (*(10.0 ** np.arange(-3, 13)), 1e100):
                far = scale * size
                others.append((f"mixed values moved by draws of scale {far:.3g}", trajectory(x0, far)))
                others.append((f"an initial point moved by {far:.3g}",
                               trajectory(x0 + far * rng.standard_normal(x0.shape), 0.0)))
            for state in free + [st for _, traj in others for st in traj]:
                back = alg.initial_state(np.array(alg.decision(state), dtype=float, copy=True), who, problem)
                keys |= {k for k, v in state.items() if k not in back or not _same(v, back[k])}
    except Exception as err:  # noqa: BLE001 - a rule refusing a moved input is not shown history-free
        return f"the rule raised {type(err).__name__} on a moved input ({err}): not shown to forget its history"
    for why, traj in others:
        for s, (a, b) in enumerate(zip(free, traj), 1):
            for key in sorted(keys):
                if not _same(a.get(key), b.get(key)):
                    return (f"state entry {key!r} after round {s} differs with {why}: it follows what the agent "
                            "mixed or where it started, so the noise-free rounds' value is one of many")
    return None


def _same(a: Any, b: Any) -> bool:
    """Whether two state entries are equal (entries numpy cannot compare are not shown equal)."""
    try:
        return bool(np.array_equal(a, b))
    except (TypeError, ValueError):
        return False
