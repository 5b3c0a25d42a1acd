"""The members of an adjacency class the worst-case search starts from, and the scenario pair of a member.

The paper record's class (:func:`adjacency_class`) gives the bound and the norm; its extremal pairs
(:func:`extremal_pairs` for one agent's cost, :func:`extremal_round_pairs` for one round's loss) are linear costs
along sign patterns, coordinates and diagonals; :func:`candidate_scenarios`, :func:`round_scenarios` and
:func:`pair_with_costs` build the pair of scenarios of a member, everything but the changed cost kept
(:mod:`asyncdp.privacy.worst_case` describes the search these feed).

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> pairs = extremal_pairs(small_example()[0].scenario, 0)
    >>> len(pairs), pairs[0][0]
    (8, 'sign pattern (+1, +1)')
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..papers import AdjacencyClass, GradientClass, RoundClass, ValueClass, find_paper
from ..problems.costs import LinearOverride
from ..problems.online import LinearRound
from ..problems.problem import Problem
from ..scenario import Scenario

__all__ = ["adjacency_class", "extremal_pairs", "extremal_round_pairs", "candidate_scenarios", "round_scenarios",
           "MAX_SIGN_PATTERNS", "EXTREMAL_ROUNDS", "reachable_rounds", "pair_with_costs"]


MAX_SIGN_PATTERNS = 64
"""At most this many sign patterns are tried (all of them for ``n <= 6``)."""


EXTREMAL_ROUNDS = 8
"""Round adjacency: the extremal pairs change rounds ``1..EXTREMAL_ROUNDS`` (and the user's changed round); the
search draws from every round, so a long horizon does not multiply the candidates."""


def adjacency_class(scenario: Scenario) -> AdjacencyClass | None:
    """The adjacency class the algorithm's paper record declares for ``scenario``, or ``None``.

    Raises:
        PaperError: the record's ``adjacency`` raises (a :class:`~asyncdp.errors.ScenarioError` passes through) or
            returns something other than a :class:`~asyncdp.papers.GradientClass`, :class:`~asyncdp.papers.RoundClass` or
            :class:`~asyncdp.papers.ValueClass`.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> adjacency_class(small_example()[0].scenario).norm
        'l1'
    """
    from ..papers import PaperError

    from ..errors import ScenarioError

    paper = find_paper(scenario.algorithm)
    if paper is None or paper.adjacency is None:
        return None
    try:
        cls = paper.adjacency(scenario)
    except ScenarioError:
        raise
    except Exception as exc:  # a user's adjacency: report it as its fault, in one line (as the lemma's)
        raise PaperError(f"paper {paper.name!r}: the adjacency class raised {type(exc).__name__}: {exc}") from exc
    if cls is not None and not isinstance(cls, (GradientClass, RoundClass, ValueClass)):
        raise PaperError(f"paper {paper.name!r}: adjacency must return a GradientClass, a RoundClass, a ValueClass "
                         f"or None, got {cls!r}"[:300])
    return cls


def _sign_pattern(s: Any, bound: float) -> tuple[str, np.ndarray]:
    """The sign pattern ``s`` scaled to ``bound`` in L2 norm, with its label."""
    return f"sign pattern ({', '.join(f'{v:+.0f}' for v in s)})", bound * np.array(s, dtype=float) / math.sqrt(len(s))


def _directions(n: int, bound: float, norm: str) -> list[tuple[str, np.ndarray]]:
    """Sign patterns (an L1 bound) then coordinates, each scaled to ``bound`` in L2 norm; an L2 bound (``n >= 2``)
    also gets the two diagonal patterns ``+-(1, ..., 1)`` after the coordinates: a rule that clips each coordinate
    at ``bound / sqrt(n)`` (within an L2 lemma of ``2 bound``) moves by ``2 bound`` only there, by ``2 bound /
    sqrt(n)`` along a coordinate."""
    out: list[tuple[str, np.ndarray]] = []
    if norm == "l1":
        patterns: Any = itertools.product((1.0, -1.0), repeat=n)
        for s in itertools.islice(patterns, MAX_SIGN_PATTERNS):
            out.append(_sign_pattern(s, bound))
    if not (norm == "l1" and n == 1):  # in one dimension the sign patterns are the coordinates
        for k in range(n):
            for sign in (1.0, -1.0):
                out.append((f"coordinate {k} ({'+' if sign > 0 else '-'})", sign * bound * np.eye(n)[k]))
    if norm == "l2" and n >= 2:
        out.extend(_sign_pattern((sign,) * n, bound) for sign in (1.0, -1.0))
    return out


def extremal_pairs(scenario: Scenario, agent: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The extremal gradient pairs of a one-agent class (:mod:`asyncdp.privacy.worst_case`), ``[]`` without one.

    Args:
        scenario: the scenario (its paper record's adjacency class gives ``C2`` and the norm).
        agent: the changed agent (unused by the construction, named for symmetry with :func:`candidate_scenarios`).

    Returns:
        ``[(label, g, g')]``.
    """
    cls = adjacency_class(scenario)
    if not isinstance(cls, GradientClass):  # none, or round adjacency (extremal_round_pairs)
        return []
    n = scenario.problem.dim
    if cls.kind == "difference":  # g - g' on the extreme points of the norm ball of radius bound
        half = 0.5 * cls.bound
        out = [(f"difference along coordinate {k} ({'+' if s > 0 else '-'})", s * half * np.eye(n)[k],
                -s * half * np.eye(n)[k]) for k in range(n) for s in (1.0, -1.0)]
        if cls.norm == "l2" and n >= 2:  # and along the diagonals (see _directions)
            diagonal = half * np.ones(n) / math.sqrt(n)
            out.extend((f"difference along the diagonal ({'+' if s > 0 else '-'})", s * diagonal, -s * diagonal)
                       for s in (1.0, -1.0))
        return out
    return [(label, g, -g) for label, g in _directions(n, cls.bound, cls.norm)]


def reachable_rounds(scenario: Scenario) -> list[int]:
    """The rounds whose change can reach a release: ``1..T-1`` (``[1]`` when ``T = 1``).

    Args:
        scenario: the scenario (its horizon ``T``).

    Returns:
        The rounds, in order.

    Example:
        >>> from asyncdp.papers.dpsda.rule import DPSDAC
        >>> reachable_rounds(DPSDAC.example_scenario())[:3]
        [1, 2, 3]
    """
    return list(range(1, max(scenario.horizon, 2)))


def extremal_round_pairs(scenario: Scenario, cls: RoundClass | None = None, changed_round: int | None = None
                         ) -> list[tuple[str, int, np.ndarray, np.ndarray]]:
    """The extremal pairs of a round class (:mod:`asyncdp.privacy.worst_case`), ``[]`` without one.

    Args:
        scenario: an online scenario (its paper record's class gives ``L``, unless ``cls`` is given).
        cls: the class (default: the paper record's, :func:`adjacency_class`).
        changed_round: the user's changed round, also tried (if it reaches a release).

    Returns:
        ``[(label, t0, g, g')]``, round by round.

    Example:
        >>> from asyncdp.papers.dpsda.rule import DPSDAC
        >>> pairs = extremal_round_pairs(DPSDAC.example_scenario())
        >>> len(pairs), sorted({t0 for _, t0, _, _ in pairs}), pairs[0][:2]
        (736, [1, 2, 3, 4, 5, 6, 7, 8], ('round 1, sign pattern (+1, +1, +1, +1, +1, +1, +1, +1, +1, +1, +1, +1, +1, +1)', 1))
    """
    if cls is None:
        found = adjacency_class(scenario)
        cls = found if isinstance(found, RoundClass) else None
    if cls is None:
        return []
    shapes = _directions(scenario.problem.dim, cls.bound, cls.norm)
    rounds = reachable_rounds(scenario)
    tried = sorted(set(rounds[:EXTREMAL_ROUNDS]) | ({changed_round} & set(rounds)))
    return [(f"round {t0}, {label}", t0, g, -g) for t0 in tried for label, g in shapes]


def candidate_scenarios(scenario: Scenario, agent: int, gradient: Any, gradient_prime: Any
                        ) -> tuple[Scenario, Scenario]:
    """The scenario pair of a candidate: agent ``agent``'s cost linear, the algorithm bound to the user's problem.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> p, q = candidate_scenarios(small_example()[0].scenario, 0, [1.0, 0.0], [-1.0, 0.0])
        >>> p.problem.costs.gradient(0, [0.0, 0.0]).tolist()
        [1.0, 0.0]
    """
    return pair_with_costs(scenario, _override(agent), gradient, gradient_prime)


def round_scenarios(scenario: Scenario, round_index: int, gradient: Any, gradient_prime: Any
                    ) -> tuple[Scenario, Scenario]:
    """The scenario pair of a candidate: round ``round_index``'s loss linear, the algorithm bound to the user's problem.

    Example:
        >>> from asyncdp.papers.dpsda.rule import DPSDAC
        >>> sc = DPSDAC.example_scenario()
        >>> p, q = round_scenarios(sc, 2, np.ones(14), -np.ones(14))
        >>> q.problem.costs.round_gradient(2, np.zeros(14))[:3].tolist()
        [-1.0, -1.0, -1.0]
    """
    return pair_with_costs(scenario, _linear_round(round_index), gradient, gradient_prime)


def _override(agent: int) -> Any:
    """``(costs, g) ->`` the costs with agent ``agent``'s linear with gradient ``g``."""
    return lambda costs, g: LinearOverride(costs, agent, g)


def _linear_round(round_index: int) -> Any:
    """``(costs, g) ->`` the losses with round ``round_index``'s linear with gradient ``g``."""
    return lambda costs, g: LinearRound(costs, round_index, g)


def _bound_base(scenario: Scenario) -> Scenario:
    """``scenario`` with what every candidate keeps: the algorithm bound to its problem, the initial points."""
    return scenario.replace(algorithm=scenario.algorithm.bind(scenario.problem), x0=scenario.initial_points())


def pair_with_costs(scenario: Scenario, build: Any, gradient: Any, gradient_prime: Any) -> tuple[Scenario, Scenario]:
    """The scenario pair whose costs are ``build(costs, gradient)`` and ``build(costs, gradient_prime)``, everything
    else the scenario's: the algorithm bound to its problem (its constants kept), its initial points.

    Args:
        scenario: the scenario to build around.
        build: ``(costs, member) ->`` the costs with the changed agent's cost (or round's loss) ``member``'s.
        gradient, gradient_prime: the two members (a gradient of a linear cost, or any object ``build`` reads).

    Returns:
        ``(P, P')``.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> from asyncdp.problems.costs import LinearOverride
        >>> p, q = pair_with_costs(small_example()[0].scenario, lambda costs, g: LinearOverride(costs, 1, g),
        ...                        [0.0, 1.0], [0.0, -1.0])
        >>> q.problem.costs.gradient(1, [0.0, 0.0]).tolist()
        [0.0, -1.0]
    """
    alg = scenario.algorithm.bind(scenario.problem)  # its constants are filled: rebinding keeps them
    base = scenario.problem

    def one(g: Any) -> Scenario:
        problem = Problem(base.domain, build(base.costs, g))
        return scenario.replace(problem=problem, algorithm=alg, x0=scenario.initial_points())

    return one(gradient), one(gradient_prime)
