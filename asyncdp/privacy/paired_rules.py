"""Both problems' rules of stacked candidates as one stacked rule: each step of the algorithm taken once for both.

:class:`Paired` is the replay's ``rule`` and ``rule_prime`` for stacked candidates under ``P`` then ``P'``;
:class:`PairRules` is :class:`Paired` for one pair's two problems, built anew for each replay's number of runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .stacked import Stacked

__all__ = ["Paired", "PairRules"]


class _Box:
    """One round's states of a :class:`Paired` replay (both problems' runs), the message means of its round once
    computed, or, between the two problems' U steps, what the second one completes."""

    __slots__ = ("state", "t", "means", "pending")

    def __init__(self, state: Any = None, pending: Any = None) -> None:
        self.state, self.pending = state, pending
        self.t: int | None = None
        self.means: dict[str, np.ndarray] = {}


class _Half:
    """One problem's state in a :class:`Paired` replay: its half of a :class:`_Box`."""

    __slots__ = ("box", "side")

    def __init__(self, box: _Box, side: int) -> None:
        self.box, self.side = box, side


class _Side:
    """One problem's rule of a :class:`Paired` replay (:attr:`Paired.p`, :attr:`Paired.q`)."""

    def __init__(self, pair: Paired, side: int) -> None:
        self.pair, self.side = pair, side

    def _mine(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        n = self.pair.runs
        return {c: m[:n] if self.side == 0 else m[n:] for c, m in arrays.items()}

    def initial_state(self, runs: int) -> _Half:
        pair = self.pair
        if runs != pair.runs:
            raise ValueError("stacked candidates are replayed as one chunk")
        if self.side == 0:
            pair.last = _Box(pair.both.initial_state(2 * runs))
        elif pair.last is None or pair.last.state is None:
            raise ValueError("paired replay: the adjacent problem's state before the problem's")
        return _Half(pair.last, self.side)

    def message_means(self, state: _Half, t: int) -> dict[str, np.ndarray]:
        box = state.box
        if box.state is None:
            raise ValueError("paired replay: a round's means before both problems' U steps")
        if box.t != t:
            box.means, box.t = self.pair.both.message_means(box.state, t), t
        return self._mine(box.means)

    def next_state(self, state: _Half, mixed: Any, t: int) -> _Half:
        pair = self.pair
        if self.side == 0:
            pair.last = _Box(pending=(state.box, dict(mixed), t))
            return _Half(pair.last, 0)
        box = pair.last
        if box is None or box.pending is None or box.pending[0] is not state.box or box.pending[2] != t:
            raise ValueError("paired replay: the problems' U steps out of order")
        prev, first, _ = box.pending
        if set(first) != set(mixed):
            raise ValueError("paired replay: the problems' combinations differ in their channels")
        box.state = pair.both.next_state(prev.state, {c: np.concatenate([first[c], mixed[c]]) for c in first}, t)
        box.pending = None
        return _Half(box, 1)


class Paired:
    """The rules of both problems of stacked candidates as one ``stacked.Stacked`` rule: ``both`` holds the
    candidates' runs under ``P`` (its first ``runs`` rows) then under ``P'`` (the next ``runs``), so each step of
    the algorithm is taken once for both problems (a replay with both problems takes it twice: once per rule).

    :attr:`p` and :attr:`q` are the two problems' rules for the replay
    (:func:`accounting.scheduled_replay.scheduled_replay`'s ``rule`` and ``rule_prime``). In every round the
    replay asks ``p``'s means then ``q``'s (computed once for both), and steps ``p`` then ``q``: ``p``'s step
    keeps its combinations, ``q``'s takes both problems' step at once, on the combinations of each half's own
    runs. The steps are per run, so each half gets what its own rule computes (the stacked candidates'
    argument, ``stacked.Stacked``). A call out of that order raises ``ValueError``; the states are not arrays, so a
    replay that records its states records none (use the two rules apart there).

    Args:
        both: the stacked rule of the ``2 K`` candidates (the ``K`` under ``P``, then the same ``K`` under
            ``P'``).
        runs: rows per problem (``K`` candidates' runs).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> from asyncdp.problems.costs import LinearOverride
        >>> sc = small_example()[0].scenario
        >>> alg, costs = sc.algorithm.bind(sc.problem), sc.problem.costs
        >>> sides = [LinearOverride(costs, 0, [1.0, 0.0]), LinearOverride(costs, 0, [-1.0, 0.0])]
        >>> pair = Paired(Stacked(alg, sides, sc.problem.domain, None, sc.initial_points(), 2), 2)
        >>> p, q = pair.p.initial_state(2), pair.q.initial_state(2)
        >>> mixed = {"y": np.zeros((2, 3, 2))}
        >>> p, q = pair.p.next_state(p, mixed, 1), pair.q.next_state(q, mixed, 1)
        >>> bool((pair.p.message_means(p, 2)["y"][:, 0] != pair.q.message_means(q, 2)["y"][:, 0]).any())
        True
    """

    def __init__(self, both: Stacked, runs: int) -> None:
        self.both, self.runs = both, runs
        self.last: _Box | None = None
        self.p, self.q = _Side(self, 0), _Side(self, 1)


class _PairSide:
    """One problem's rule of :class:`PairRules`: the :class:`Paired` side of the replay under way."""

    def __init__(self, rules: PairRules, side: int) -> None:
        self.rules, self.side = rules, side

    def _current(self) -> _Side:
        pair = self.rules.current
        if pair is None:
            raise ValueError("paired replay: the adjacent problem's state before the problem's")
        return pair.p if self.side == 0 else pair.q

    def initial_state(self, runs: int) -> Any:
        if self.side == 0:  # a replay begins: both problems' rule for its runs
            self.rules.current = self.rules.paired(runs)
        return self._current().initial_state(runs)

    def message_means(self, state: Any, t: int) -> dict[str, np.ndarray]:
        return self._current().message_means(state, t)

    def next_state(self, state: Any, mixed: Any, t: int) -> Any:
        return self._current().next_state(state, mixed, t)


class PairRules:
    """The rules of one pair's two problems (one algorithm, one domain, the same initial points) as one
    :class:`Paired` rule, built anew for each replay's number of runs: :attr:`p` and :attr:`q` are the replay's
    ``rule`` and ``rule_prime`` (:func:`accounting.scheduled_replay.scheduled_replay`), each step of the
    algorithm taken once for both problems, each problem's runs getting what its own rule computes
    (:class:`Paired`; the same call order, its states not arrays).

    Args:
        algorithm: the algorithm (bound).
        problem, problem_prime: the two problems (their cost families stack, ``stacked_costs.StackedCosts``).
        x0: the initial points.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> from asyncdp.problems.costs import LinearOverride
        >>> from asyncdp.problems.problem import Problem
        >>> sc = small_example()[0].scenario
        >>> alg, costs, dom = sc.algorithm.bind(sc.problem), sc.problem.costs, sc.problem.domain
        >>> rules = PairRules(alg, Problem(dom, LinearOverride(costs, 0, [1.0, 0.0])),
        ...                   Problem(dom, LinearOverride(costs, 0, [-1.0, 0.0])), sc.initial_points())
        >>> p, q = rules.p.initial_state(2), rules.q.initial_state(2)
        >>> mixed = {"y": np.zeros((2, 3, 2))}
        >>> p, q = rules.p.next_state(p, mixed, 1), rules.q.next_state(q, mixed, 1)
        >>> rules.p.message_means(p, 2)["y"][0, 0].tolist() != rules.q.message_means(q, 2)["y"][0, 0].tolist()
        True
    """

    def __init__(self, algorithm: Any, problem: Any, problem_prime: Any, x0: np.ndarray) -> None:
        self.algorithm, self.problems, self.x0 = algorithm, (problem, problem_prime), x0
        self.current: Paired | None = None
        self.p, self.q = _PairSide(self, 0), _PairSide(self, 1)

    def paired(self, runs: int) -> Paired:
        """Both problems' :class:`Paired` rule on ``runs`` runs each."""
        p, q = self.problems
        both = Stacked(self.algorithm, [p.costs, q.costs], p.domain, lambda: list(self.problems), self.x0, runs)
        return Paired(both, runs)
