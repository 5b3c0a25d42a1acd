"""Several candidates' recursions in one replay: the runs of each candidate stacked, each step taken once.

The worst-case search (:mod:`asyncdp.privacy.worst_case`) evaluates many
candidate pairs on the same runs (:func:`asyncdp.privacy.constructed.constructed_replays`).
The candidates share the algorithm (bound to the user's problem), the domain
and the initial points, and differ in one cost family. Their runs are
stacked, candidate ``k`` on runs ``k R .. (k + 1) R - 1`` (``stack_runs.Tiled``
schedules), and :class:`Stacked` takes each of the algorithm's steps once
for every candidate, with a ``stacked_costs.StackedProblem`` whose cost families each
answer for their own runs (``stacked_costs.StackedCosts``): the steps are per run, so
every candidate gets what its own rule computes (``stack_runs.Blocks``, one rule
per candidate, which the stacked steps fall back to when the stacked problem
cannot answer a question as each candidate's own problem would,
``stacked_costs.Unstackable``).

The search's candidates are one base family with one linear member each
(:class:`~asyncdp.problems.costs.LinearOverride`,
:class:`~asyncdp.problems.online.LinearRound`), given by what makes them
linear (``stacked_gradients.LinearCosts``): their gradients are taken in one call of the
base for every run of the stack, each candidate's linear entries set to its
own ``g`` (``stacked_gradients._LinearStack``, the same values as each family's own
call), and their families are built only if a step needs more than that and
the base's structure. ``stack_runs.Tiled`` schedules keep each round's arrays and
a gather index derived from the copied schedules' own
(:func:`accounting.round_gather.tiled_gather_index`).

Three more ways of taking a step once: ``paired_rules.Paired`` runs both problems'
rules of the stacked candidates as one :class:`Stacked` rule (the runs under
``P``, then under ``P'``; the replay asks each problem's rule in turn, the
second one's step takes both); consecutive groups of candidates of different
kinds (a kinked pair's linear and kinked costs) each stack on their own
(``stacked_costs._groups``); and candidates may be evaluated on different numbers of
runs, each on its own first ones (``size`` per candidate, ``stack_runs.bounds``).
``paired_rules.PairRules`` is ``paired_rules.Paired`` for one pair's two problems, built anew
for each replay's number of runs (the worst pair's tilted transcripts,
:func:`asyncdp.privacy.profiles.scheduled_tilted_bound`).

Where each part lives: ``stack_runs`` (the runs' offsets, the copied schedules, one rule per candidate),
``stacked_gradients`` (the candidates' gradients in one call), ``stacked_costs`` (the stacked cost families
and problem) and ``paired_rules`` (both problems' rules as one); this module keeps :class:`Stacked` and
:func:`same_algorithm`.

Example:
    >>> from asyncdp.problems.costs import LinearOverride, RendezvousQuadratic
    >>> from asyncdp.privacy.stacked_costs import StackedCosts
    >>> base = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]])
    >>> costs = StackedCosts([LinearOverride(base, 1, [1.0, 0.0]), LinearOverride(base, 1, [0.0, 1.0])], 1)
    >>> costs.gradient(np.arange(2), np.zeros((2, 2, 2)))[:, 1].tolist()  # agent 1 of each candidate's run
    [[1.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .stack_runs import Blocks, bounds
from .stacked_costs import StackedProblem, Unstackable

__all__ = ["Stacked", "same_algorithm"]


class Stacked:
    """The candidates' rules (one algorithm, one initial point, one domain) in one call per step.

    The algorithm's R and U steps run once on the runs of every candidate, with a ``stacked_costs.StackedProblem``:
    each candidate's cost family answers for its own runs, and the steps are per-run, so every candidate gets
    what its own rule (``stack_runs.Blocks``) computes. A step that needs something the stacked problem cannot
    answer (``stacked_costs.Unstackable``) is computed with the candidates' own rules from then on (the state split
    by runs).

    Args:
        algorithm: the candidates' algorithm (one object).
        costs: each candidate's cost family.
        domain: the candidates' domain (one object).
        problems: ``() -> list`` of each candidate's problem (called only when needed).
        x0: the initial points (the same for every candidate).
        size: runs per candidate (or each candidate's).
    """

    def __init__(self, algorithm: Any, costs: Sequence[Any], domain: Any, problems: Any, x0: np.ndarray,
                 size: int | Sequence[int]) -> None:
        from .behavior import AlgorithmChannelRule

        self.size, self.count = size, len(costs)
        self._bounds = bounds(size, self.count)
        self.algorithm, self.x0, self._problems = algorithm, x0, problems
        self.one = AlgorithmChannelRule(algorithm, StackedProblem(costs, domain, problems, size), x0)
        self._blocks: Blocks | None = None

    @property
    def blocks(self) -> Blocks:
        """The candidates' own rules (built on first use)."""
        from .behavior import AlgorithmChannelRule

        if self._blocks is None:
            self._blocks = Blocks([AlgorithmChannelRule(self.algorithm, p, self.x0) for p in self._problems()],
                                   self.size)
        return self._blocks

    def _split(self, state: Any) -> list[Any]:
        b = self._bounds
        total = b[-1]
        if not isinstance(state, dict) or not all(isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == total
                                                  for v in state.values()):
            raise ValueError("stacked candidates: the algorithm's state is not split by runs")
        return [{k: v[b[i]:b[i + 1]] for k, v in state.items()} for i in range(self.count)]

    def initial_state(self, runs: int) -> Any:
        if runs != self._bounds[-1]:
            raise ValueError("stacked candidates are replayed as one chunk")
        try:
            return ("one", self.one.initial_state(runs))
        except Unstackable:
            return ("blocks", self.blocks.initial_state(runs))

    def message_means(self, state: Any, t: int) -> dict[str, np.ndarray]:
        kind, inner = state
        if kind == "one":
            try:
                return {c: np.asarray(m, dtype=float) for c, m in self.one.message_means(inner, t).items()}
            except Unstackable:
                inner = self._split(inner)
        return self.blocks.message_means(inner, t)

    def next_state(self, state: Any, mixed: Any, t: int) -> Any:
        kind, inner = state
        if kind == "one":
            try:
                return ("one", self.one.next_state(inner, mixed, t))
            except Unstackable:
                inner = self._split(inner)
        return ("blocks", self.blocks.next_state(inner, mixed, t))


def same_algorithm(a: Any, b: Any) -> bool:
    """Whether two algorithms are the same rule: one object, or equal (frozen dataclasses of equal parameters).

    Args:
        a, b: two algorithms.

    Returns:
        ``True`` when they are known to be the same rule (parameters that do not compare give ``False``).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> sc = small_example()[0].scenario
        >>> same_algorithm(sc.algorithm.bind(sc.problem), sc.algorithm.bind(sc.problem))
        True
    """
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - parameters that do not compare (arrays): not known to be the same
        return False
