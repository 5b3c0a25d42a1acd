"""Hypothesis strategies for privacy property tests: adjacent scenario pairs.

For users' own tests as much as ours:

* :func:`adjacent_scenarios`: for any scenario whose rule's paper record declares an adjacency class
  (:func:`~asyncdp.privacy.candidate_pairs.adjacency_class`; a user's own rule as much as a seed paper's), pairs
  ``(P, P', changed)`` of members of that class, built as the check builds its own candidates and checked with
  the check's own relations (:func:`~asyncdp.privacy.adjacency.check_adjacency`,
  :func:`~asyncdp.privacy.coverage.class_measure`) before they are returned;
* :func:`adjacent_rendezvous_pairs`: small ``huang2015`` scenarios on private rendezvous, on topologies from
  :mod:`topology.strategies`; they shrink toward few agents, short horizons and nearby addresses.

Decide a drawn pair with :func:`asyncdp.privacy.properties.assert_private`.

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

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

import topology
from topology.strategies import doubly_stochastic_matrices
from topology.validation import check_integer

from accounting.errors import AdjacencyError

from ..errors import ScenarioError
from ..papers import GradientClass, RoundClass, ValueClass
from ..papers.huang2015.rule import Huang2015
from ..problems.costs import LinearOverride
from ..problems.online import LinearRound
from ..problems.problem import rendezvous_problem
from ..scenario import Scenario
from .adjacency import check_adjacency
from .coverage import CLASS_RTOL, class_measure
from .value_class import value_scenarios
from .kinked import KinkedOverride, KinkedRound
from .candidate_pairs import adjacency_class, candidate_scenarios, pair_with_costs, reachable_rounds, round_scenarios

__all__ = ["addresses", "huang2015_parameters", "adjacent_rendezvous_pairs", "adjacent_scenarios", "KINK_REACH"]

_DEGENERATE = 1e-6
"""A drawn direction of norm below this is replaced by the class's extremal one (the check's search does the same)."""


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


def adjacent_rendezvous_pairs(*, min_agents: int = 2, max_agents: int = 5, max_horizon: int = 8, schedule: str = "eq8"
                              ) -> st.SearchStrategy[tuple[Scenario, Scenario, int]]:
    """``(scenario, adjacent, changed_agent)`` for ``huang2015`` on private rendezvous in ``[-1, 1]^2``.

    The topology is one doubly stochastic matrix with a minimum weight (static),
    drawn from :func:`topology.strategies.doubly_stochastic_matrices`; the
    adjacent problem moves one agent's address anywhere else in the box.

    Raises:
        ScenarioError: ``min_agents < 1``, ``max_agents < min_agents`` or ``max_horizon < 2``, naming it.
    """
    where = "adjacent_rendezvous_pairs"
    low = check_integer(min_agents, "min_agents", minimum=1, error=ScenarioError, where=where)
    check_integer(max_agents, "max_agents", minimum=low, error=ScenarioError, where=where)
    check_integer(max_horizon, "max_horizon", minimum=2, error=ScenarioError, where=where)
    return _rendezvous_pairs(min_agents, max_agents, max_horizon, schedule)


@st.composite
def _rendezvous_pairs(draw: Any, min_agents: int, max_agents: int, max_horizon: int, schedule: str
                      ) -> tuple[Scenario, Scenario, int]:
    """:func:`adjacent_rendezvous_pairs`' draws."""
    w = draw(doubly_stochastic_matrices(min_nodes=min_agents, max_nodes=max_agents, min_weight=0.1))
    n_agents = w.shape[0]
    addr = draw(addresses(n_agents))
    agent = draw(st.integers(0, n_agents - 1))
    moved = draw(addresses(1))[0]
    assume(not np.array_equal(moved, addr[agent]))  # the same address: no change, not an adjacent pair
    horizon = draw(st.integers(2, max_horizon))
    problem = rendezvous_problem(addr)
    scenario = Scenario(problem, topology.static(w), draw(huang2015_parameters(schedule)), horizon=horizon,
                        seed=draw(st.integers(0, 2**16)))
    adjacent = scenario.replace(problem=problem.adjacent(agent, address=moved))
    return scenario, adjacent, agent


def _directions(dim: int) -> st.SearchStrategy[np.ndarray]:
    """Vectors of ``[-1, 1]^dim``; they shrink toward 0 (where :func:`_member` puts the class's extremal members)."""
    coord = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
    return st.lists(coord, min_size=dim, max_size=dim).map(lambda xs: np.array(xs, dtype=float))


def _member(u: np.ndarray, bound: float, order: float, extreme: np.ndarray) -> np.ndarray:
    """``bound u / max(1, ||u||)`` (norm ``order``): a vector of norm at most ``bound``; ``extreme`` for ``u ~ 0``."""
    norm = float(np.linalg.norm(u, ord=order))
    return extreme if norm < _DEGENERATE else bound * u / max(1.0, norm)


def _class_points(scenario: Scenario) -> np.ndarray:
    """Where a drawn pair's gradients are checked against its class: the initial points and the domain's centre."""
    return np.vstack([scenario.initial_points(), np.asarray(scenario.problem.domain.center, dtype=float)[None]])


def _gradient_pair(draw: Any, cls: GradientClass | RoundClass, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(g, g')`` of the class: two gradients of L2 norm at most ``bound`` (``kind="each"``), or ``c +- d / 2``
    with ``||d|| <= bound`` in the class's norm and any ``||c||_2 <= bound`` (``kind="difference"``). Shrinks to
    the extremal pair along coordinate 0: ``+-bound e_0`` (``+-bound e_0 / 2`` for a difference)."""
    e0 = np.eye(dim)[0] * cls.bound
    u, v = draw(_directions(dim)), draw(_directions(dim))
    if cls.kind == "difference":
        d = _member(u, cls.bound, 1 if cls.norm == "l1" else 2, e0)
        c = _member(v, cls.bound, 2, np.zeros(dim))
        return c + 0.5 * d, c - 0.5 * d
    g, gp = _member(u, cls.bound, 2, e0), _member(v, cls.bound, 2, -e0)
    if np.array_equal(g, gp):  # one cost twice: no change
        gp = -g
    return g, gp


@dataclass(frozen=True)
class _Side:
    """One side of a drawn pair of one agent's costs: ``<gradient, x>``, or (``axis`` set) the kinked cost
    ``sign scale sqrt((x_axis - position)^2 + width^2)`` (:class:`~asyncdp.privacy.kinked.KinkedOverride`), whose
    gradient has norm below ``scale`` in every ``l_p`` norm (its width drawn log-uniformly in ``[1e-3, 1]``: how
    sharply the gradient turns over)."""

    gradient: tuple[float, ...] = ()
    axis: int | None = None
    position: float = 0.0
    scale: float = 0.0
    width: float = 0.0
    sign: float = 1.0

    def costs(self, base: Any, index: int, rounds: bool) -> Any:
        """``base`` with agent ``index``'s cost (``rounds``: round ``index``'s loss) this side's."""
        if self.axis is None:
            return (LinearRound if rounds else LinearOverride)(base, index, np.array(self.gradient))
        return (KinkedRound if rounds else KinkedOverride)(base, index, self.axis, self.position, self.scale,
                                                           self.width, self.sign)


KINK_REACH = 1.0
"""A drawn kink lies within this distance of the changed agent's initial point along its axis (where it reads; the
mean initial point for a round's loss)."""


def _side(draw: Any, bound: float, order: float, anchor: np.ndarray) -> _Side:
    """A member of norm at most ``bound``: linear (first: it shrinks there) or kinked near ``anchor``."""
    dim = anchor.shape[0]
    if not draw(st.booleans()):
        return _Side(tuple(_member(draw(_directions(dim)), bound, order, np.eye(dim)[0] * bound)))
    axis = draw(st.integers(0, dim - 1))
    offset = draw(st.floats(-KINK_REACH, KINK_REACH, allow_nan=False))
    return _Side(axis=axis, position=float(anchor[axis] + offset), scale=bound * draw(st.floats(1e-3, 1.0)),
                 width=10.0 ** draw(st.floats(-3.0, 0.0)), sign=draw(st.sampled_from([1.0, -1.0])))


def _kinked_pair(draw: Any, cls: GradientClass | RoundClass, anchor: np.ndarray) -> tuple[tuple[_Side, _Side],
                                                                                          np.ndarray]:
    """Two members, at least one kinked near ``anchor``: each of norm at most ``bound`` (``kind="each"``, L2) or
    ``bound / 2`` (``kind="difference"``, in its norm: their difference is within ``bound``); and the kinks, where
    they are checked."""
    difference = cls.kind == "difference"
    bound = 0.5 * cls.bound if difference else cls.bound
    order = (1 if cls.norm == "l1" else 2) if difference else 2
    first, second = _side(draw, bound, order, anchor), _side(draw, bound, order, anchor)
    if first.axis is None and second.axis is None:  # at least one kink: the simplest, at the agent's start
        second = _Side(axis=0, position=float(anchor[0]), scale=bound, width=0.5)
    assume(first != second)
    kinks = [anchor.copy() for side in (first, second) if side.axis is not None]
    for point, side in zip(kinks, [side for side in (first, second) if side.axis is not None]):
        assert side.axis is not None
        point[side.axis] = side.position
    return (first, second), np.array(kinks)


FAR = 10.0 ** np.arange(-4, 4)
"""Distances from a kink along each axis where a drawn pair is checked: a kinked member's gradient is zero at its
kink and nears its scale only many widths away (within ``1e-6`` of it at ``1e3`` for a width of at most 1)."""


def _along_axes(points: np.ndarray) -> np.ndarray:
    """``points`` and, for each, the points at the distances :data:`FAR` either side along every axis, ``(k, d)``."""
    d = points.shape[1]
    steps = np.concatenate([FAR, -FAR])[:, None, None] * np.eye(d)[None]  # (2 |FAR|, d, d)
    return np.vstack([points, (points[:, None, None, :] + steps[None]).reshape(-1, d)])


def _check_member(cls: Any, p: Scenario, q: Scenario, changed: int, drawn: Any, points: np.ndarray | None = None
                  ) -> None:
    """The drawn pair passes the check's own relations: one agent (round) changed, ``changed``, and no point where
    its gradients leave the class (at the initial points, the domain's centre, and ``points``, the kinks, with
    points far along every axis through them: :func:`_along_axes`; a value class: the new value lies in the domain).

    Raises:
        AdjacencyError: naming the class, the change and the value (a defect of the strategy, never expected).
    """
    adjacency = check_adjacency(p, q)
    got = adjacency.round if isinstance(cls, RoundClass) else adjacency.agent
    if got != changed or adjacency.doubt is not None:
        raise AdjacencyError(f"adjacent_scenarios: the drawn pair of {cls!r} changed {got} (doubt: "
                             f"{adjacency.doubt}), not {changed}")
    if isinstance(cls, ValueClass):
        value = q.problem.costs.addresses[changed]
        if not bool(np.all(q.problem.domain.contains(value))):
            raise AdjacencyError(f"adjacent_scenarios: agent {changed}'s drawn value {value.tolist()} lies outside "
                                 f"{q.problem.domain!r}")
        return
    pts = _class_points(p) if points is None else np.vstack([_class_points(p), _along_axes(points)])
    if isinstance(cls, RoundClass):
        g, gp = p.problem.costs.round_gradient(changed, pts), q.problem.costs.round_gradient(changed, pts)
    else:
        g, gp = p.problem.costs.gradient(changed, pts), q.problem.costs.gradient(changed, pts)
    worst = float(np.max(class_measure(cls, g, gp)))
    if worst > cls.bound * (1 + CLASS_RTOL):
        raise AdjacencyError(f"adjacent_scenarios: the drawn pair {drawn} of agent/round {changed} measures "
                             f"{worst!r} > the bound {cls.bound!r} of {cls!r}")


def adjacent_scenarios(scenario: Scenario, *, value_radius: float | None = None
                       ) -> st.SearchStrategy[tuple[Scenario, Scenario, int]]:
    """Pairs ``(P, P', changed)`` of the adjacency class the scenario's rule declares, drawn around ``scenario``.

    Everything but the changed cost is the scenario's (topology, timing, seed, initial points, the rule bound to
    its problem), as in the privacy check's own candidates:

    * :class:`~asyncdp.papers.GradientClass` ``kind="each"``: a random agent's cost is ``<g, x>`` under ``P`` and
      ``<g', x>`` under ``P'``, ``||g||_2, ||g'||_2 <= C``
      (:func:`~asyncdp.privacy.candidate_pairs.candidate_scenarios`); ``kind="difference"``: ``g = c + d / 2``,
      ``g' = c - d / 2`` with ``||d|| <= C`` in the class's norm; or either side a kinked cost
      (:class:`~asyncdp.privacy.kinked.KinkedOverride`, its gradient turning over within :data:`KINK_REACH` of the
      agent's initial point; scale at most ``C``, ``C / 2`` for a difference), the other linear or kinked;
    * :class:`~asyncdp.papers.RoundClass`: a random round ``t0`` of ``1..T-1``, its loss linear with two such
      gradients (:func:`~asyncdp.privacy.candidate_pairs.round_scenarios`) or kinked
      (:class:`~asyncdp.privacy.kinked.KinkedRound`, near the mean initial point); ``changed`` is then ``t0``;
    * :class:`~asyncdp.papers.ValueClass`: a random agent's private value moved anywhere in the domain
      (:func:`~asyncdp.privacy.value_class.value_scenarios`).

    Draws shrink toward agent 0 (round 1), the extremal pair along coordinate 0 (a value: the domain's centre).
    Every pair is checked before it is returned: :func:`~asyncdp.privacy.adjacency.check_adjacency` finds exactly
    ``changed`` changed, and the class's own measure (:func:`~asyncdp.privacy.coverage.class_measure`) at the
    initial points, the domain's centre and the kinks (and far along every axis through them) is within its bound
    (the new value within the domain).

    Args:
        scenario: the scenario to draw around; its rule's paper record must declare an adjacency class.
        value_radius: a value class on an unbounded domain: values within this distance of the domain's centre
            (default: the domain's own radius; required when that is infinite).

    Returns:
        A strategy of ``(P, P', changed)``.

    Raises:
        ScenarioError: ``scenario`` is not a Scenario; the rule declares no adjacency class (naming it); a value
            class on an unbounded domain without ``value_radius``, or ``value_radius`` not finite and positive, or
            given for another class.

    Example:
        >>> from hypothesis import given, settings
        >>> from asyncdp.privacy.context import small_example
        >>> @settings(max_examples=3, deadline=None)
        ... @given(adjacent_scenarios(small_example()[0].scenario))
        ... def test_one_agent_changed(pair):
        ...     p, q, agent = pair
        ...     assert check_adjacency(p, q).agent == agent
        >>> test_one_agent_changed()
    """
    if not isinstance(scenario, Scenario):  # e.g. a drawn (P, P', changed) or a (scenario, adjacent) pair
        raise ScenarioError(f"adjacent_scenarios: scenario must be an asyncdp Scenario, got {scenario!r}"[:200])
    cls = adjacency_class(scenario)
    rule = f"{getattr(scenario.algorithm, 'name', type(scenario.algorithm).__name__)!r} " \
           f"({type(scenario.algorithm).__name__})"
    if cls is None:
        raise ScenarioError(f"adjacent_scenarios: rule {rule} declares no adjacency class: its paper record has no "
                            "adjacency (register a Paper with adjacency=lambda scenario: GradientClass(...), "
                            "RoundClass(...) or ValueClass())")
    dim, n_agents = scenario.problem.dim, scenario.problem.num_agents
    radius = 0.0
    if value_radius is not None and not isinstance(cls, ValueClass):
        raise ScenarioError(f"adjacent_scenarios: value_radius draws the values of a value class; rule {rule} "
                            f"declares {cls!r}, got value_radius={value_radius!r}")
    if isinstance(cls, ValueClass):
        radius = scenario.problem.domain.radius_bound if value_radius is None else float(value_radius)
        if not math.isfinite(radius) or radius <= 0:
            raise ScenarioError(f"adjacent_scenarios: the value class of rule {rule} draws values of the domain "
                                f"{scenario.problem.domain!r}; pass a finite value_radius > 0, got {value_radius!r}")

    @st.composite
    def pairs(draw: Any) -> tuple[Scenario, Scenario, int]:
        drawn: Any = None
        points = None
        if isinstance(cls, (GradientClass, RoundClass)):
            rounds = isinstance(cls, RoundClass)
            changed = draw(st.sampled_from(reachable_rounds(scenario)) if rounds else st.integers(0, n_agents - 1))
            if draw(st.booleans()):  # a kinked member on either side (False first: shrinks to linear costs)
                start = np.asarray(scenario.initial_points(), dtype=float)
                drawn, points = _kinked_pair(draw, cls, start.mean(axis=0) if rounds else start[changed])
                p, q = pair_with_costs(scenario, lambda costs, member: member.costs(costs, changed, rounds), *drawn)
            else:
                drawn = _gradient_pair(draw, cls, dim)
                p, q = (round_scenarios if rounds else candidate_scenarios)(scenario, changed, *drawn)
        else:
            changed = draw(st.integers(0, n_agents - 1))
            domain = scenario.problem.domain
            value = domain.project(np.asarray(domain.center, dtype=float) + radius * draw(_directions(dim)))
            own = scenario.problem.costs.addresses[changed]
            assume(not np.array_equal(value, own))
            p, q = value_scenarios(scenario, changed, own, value)
        _check_member(cls, p, q, changed, drawn, points)
        return p, q, changed

    return pairs()
