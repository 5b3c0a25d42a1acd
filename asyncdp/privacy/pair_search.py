"""The worst-case search beyond the extremal pairs: derandomized draws of the class, then a batched hill climb.

:func:`search_pairs` ranks candidates by ``(objective, loss)`` (``_rank``), starting from the best extremal
pairs; its draws come from the check seed's own stream (``SEARCH_STREAM``), so a seed gives one pair.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..papers import GradientClass
from ..scenario import Scenario
from .behavior import EngineRuns
from .candidate_evaluation import CandidatePair, _evaluate_all, _Family, _family, _key
from .constructed import CandidateRuns

__all__ = ["search_pairs"]


SEARCH_STREAM = 1000
"""The search's draws (:func:`search_pairs`) come from ``numpy.random.SeedSequence(seed, spawn_key=(SEARCH_STREAM,))``
with the check's ``seed``: the same seed gives the same pair, another seed another search. The key lies far
above the engine runs' sides (``spawn_key=(side,)``, :mod:`asyncdp.privacy.behavior`), so the two never share a
stream."""


SEARCH_STARTS = 5
"""The search starts from this many of the best extremal pairs."""


CLIMB_POINTS = 2
"""The hill climb moves this many of the best candidates at each iteration."""


CLIMB_ITERATIONS = 4
"""Batches of hill-climb moves (the first one replayed with the draws). Four rather than two: on 220 generated
scenarios (every paper with an adjacency class, n = 1..14, every timing, pure and delta > 0 claims) two batches
left the search's objective below the Hypothesis search it replaced in up to 6 of them, depending on the draws,
four in 2 to 4, for about 10% more search time (:func:`search_pairs`)."""


CLIMB_STEP = 0.5
"""A climb's first step along a coordinate of a direction (each direction's coordinates are at most 1)."""


CLIMB_COORDINATES = 16
"""In dimension ``n`` above this, each climb move of a point changes this many coordinates, drawn anew (without
repetition) for every point and iteration: the batches stay of bounded size in any dimension."""


def _rank(c: CandidatePair) -> tuple[float, float]:
    """A candidate's rank in the search: ``(objective, loss)``, NaN as ``-inf``."""
    o, loss = c.objective, c.loss
    return (-math.inf if math.isnan(o) else o, -math.inf if math.isnan(loss) else loss)


def _directions_of(fam: _Family, c: CandidatePair) -> tuple[np.ndarray, np.ndarray]:
    """The search's parameters ``(u, v)`` of a pair (``_Family.scaled`` maps them back to it): its gradients
    over the class's bound, or for a difference class its difference over the bound (``v`` unused)."""
    g, gp = np.asarray(c.gradient, dtype=float), np.asarray(c.gradient_prime, dtype=float)
    bound = float(fam.cls.bound) if fam.cls.bound else 1.0
    if isinstance(fam.cls, GradientClass) and fam.cls.kind == "difference":
        return (g - gp) / bound, (g - gp) / bound
    return g / bound, gp / bound


def _moves(fam: _Family, c: CandidatePair, step: float, label: Any, coordinates: Any = None
           ) -> list[tuple[str, int | None, Any, Any]]:
    """The hill climb's neighbours of ``c``: each coordinate (of ``coordinates``, default all) of each direction
    moved by ``+-step`` (the direction then scaled back to the class), and under round adjacency the same
    directions one round earlier and later (``label(t0)``: a move's label)."""
    u, v = _directions_of(fam, c)
    difference = isinstance(fam.cls, GradientClass) and fam.cls.kind == "difference"
    out: list[tuple[str, int | None, Any, Any]] = []
    moved = [(which, k, sign) for which in ((0,) if difference else (0, 1))
             for k in (range(u.size) if coordinates is None else coordinates) for sign in (1.0, -1.0)]
    if moved:  # every move's directions, one row each (the moved entry plus +-step), scaled together
        us, vs = np.tile(u, (len(moved), 1)), np.tile(v, (len(moved), 1))
        for i, (which, k, sign) in enumerate(moved):
            (us if which == 0 else vs)[i, k] += sign * step
        name = label(c.round_index)
        out.extend((name, c.round_index, *pair) for pair in fam.scaled_rows(us, vs) if pair is not None)
    if fam.rounds and c.round_index is not None:
        for t0 in (c.round_index - 1, c.round_index + 1):
            if t0 in fam.rounds:
                out.append((label(t0), t0, np.asarray(c.gradient, dtype=float), np.asarray(c.gradient_prime, dtype=float)))
    return out


def search_pairs(runs: EngineRuns | CandidateRuns, scenario: Scenario, agent: int | None, *, examples: int = 30,
                 seed: int = 0,
                 max_runs: int = 8, start: Sequence[CandidatePair] = (), objective: Any = None,
                 focus: int | None = None, ahead: list[Any] | None = None) -> CandidatePair:
    """A batched search for the pair of the class with the largest objective: draws, then a hill climb.

    Every candidate is evaluated on the same ``max_runs`` schedules, a batch of candidates at a time in one
    stacked replay (``_evaluate_all``); the draws come from ``seed``'s search stream (``SEARCH_STREAM``), so the
    same inputs and seed give the same pair. It ranks candidates by ``(objective, loss)``.

    1. *Starts*: the first ``SEARCH_STARTS`` of ``start`` (the best extremal pairs), on these runs (read from
       the extremal evaluation when it had them: not replayed).
    2. *Draws*: ``examples`` pairs, two directions drawn uniformly in ``[-1, 1]^n`` and scaled to the class as
       ``_Family.scaled`` does (two gradients of L2 norm ``bound``, or a difference of norm ``bound`` in the
       class's norm); under round adjacency the changed round is drawn from every round ``1..T-1`` too. Then
       ``examples // 2`` pairs inside the class (the same kind of draw, each gradient scaled by a radius drawn
       uniformly in ``[0, 1]``; one radius for a difference class), from a stream of their own
       (``SEARCH_STREAM, 1``): a rule need not be monotone in the gradient's norm.
    3. *Hill climb* (``CLIMB_ITERATIONS`` batches): the ``CLIMB_POINTS`` best candidates so far are each
       moved along every coordinate of each direction by ``+-step`` (above ``CLIMB_COORDINATES`` dimensions,
       along that many coordinates drawn for the point) and one round earlier and later under round
       adjacency; a point whose best move improves on it is replaced by that move, keeping its step, one
       whose moves do not improve divides its step by 4 (from ``CLIMB_STEP``). The first batch climbs from
       the starts and is replayed with the draws.

    Why it is as strong as the Hypothesis search it replaces (``examples`` Hypothesis examples, the starts as
    explicit examples, ``hypothesis.target`` on the objective). That search evaluated at most ``examples``
    drawn pairs, some degenerate (Hypothesis favours zeros and tiny values; a direction of norm below 1e-6 was
    skipped), and its targeted phase moved the one best example's drawn values one at a time with the rest of
    the same budget (the optimiser starts at half of it). This one evaluates the same starts, ``examples``
    non-degenerate draws, and a climb that moves every coordinate of each of the ``CLIMB_POINTS`` best
    points in both directions at every iteration: more candidates, from more points, along the same kind of
    moves (on the shipped examples and the Gaussian two-stage example under every timing it finds an objective
    at least the old search's, up to 27% larger). It does not dominate it on every scenario: on 220 generated
    scenarios (every paper with a class, ``n = 1..14``, every timing, broadcast and unicast, pure and
    ``delta > 0`` claims; check seed 0) its objective was larger on 90 and equal on 126, and smaller on 4
    Gaussian ``delta > 0`` ones (two with objectives below 1e-16, two by 14% and 25%; none had a witness under
    either search); a Laplace claim's loss was never smaller. Neither is
    a local-optimum guarantee: the extremal pairs (:func:`~asyncdp.privacy.candidate_pairs.extremal_pairs`) carry
    the class's known maximizers. Hypothesis's own generation of 30 examples
    took 18 ms (``n = 2``) to 32 ms (``n = 14``) of CPU before any replay, more than this whole search on a
    lockstep scenario.

    Args:
        runs, scenario: as in :func:`~asyncdp.privacy.candidate_evaluation.constructed_losses` (``runs`` may be the
            :class:`~asyncdp.privacy.constructed.CandidateRuns` the extremal pairs were evaluated on: their
            first ``max_runs`` rows are then used, and a start candidate is not replayed again).
        agent: the changed agent, or ``None`` for round adjacency.
        examples: pairs drawn.
        seed: the check's seed (the draws' stream, ``SEARCH_STREAM``).
        max_runs: runs whose schedules each candidate is evaluated on.
        start: candidates to start from, best first (the extremal pairs).
        objective: ``losses -> float`` (:func:`~asyncdp.privacy.search_objective.profile_objective`); default the
            largest loss.
        focus: a per-iteration claim's round (0-based) for the objective.
        ahead: candidates a later step of the check evaluates on these runs (``(key, candidate, pinned agent or
            None, runs)``: ``_kinked_ahead``, ``_others_ahead``), taken along by the first stacked replay they fit
            in, their losses kept in ``runs.spare``; the list is emptied then.

    Returns:
        The best :class:`~asyncdp.privacy.candidate_evaluation.CandidatePair` found: a start (its own label, its
        objective on these runs), or a pair
        labelled ``"search: drawn"`` or ``"search: hill climb"`` (``"round t0, search: ..."`` under round
        adjacency).

    Raises:
        PaperError: no class of the right kind.
        AccountingError: a candidate's construction does not settle, or its replay fails.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair, ctx = small_example()
        >>> found = search_pairs(ctx.engine_runs(0), pair.scenario, 0, examples=4)
        >>> found.label.startswith("search: "), found.loss > 0
        (True, True)
    """
    from ..papers import PaperError

    fam = _family(scenario, agent)
    if fam is None:
        raise PaperError(f"no adjacency class of the right kind for {scenario.algorithm.name}")
    score = objective if objective is not None else (lambda losses: float(np.max(losses)))
    n = scenario.problem.dim
    if not isinstance(runs, CandidateRuns):
        runs = CandidateRuns(runs, fam.rows(runs, max_runs))

    def named(t0: int | None, how: str) -> str:
        return f"search: {how}" if fam.agent is not None else f"round {t0}, search: {how}"

    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(SEARCH_STREAM,)))
    drawn: list[tuple[str, int | None, Any, Any]] = []
    for _ in range(examples):
        t0 = int(fam.rounds[int(rng.integers(len(fam.rounds)))]) if fam.rounds else None
        u, v = rng.uniform(-1.0, 1.0, n), rng.uniform(-1.0, 1.0, n)
        g, gp = fam.scaled(u, v)
        if g is not None and gp is not None:
            drawn.append((named(t0, "drawn"), t0, g, gp))
    # half as many again inside the class (gradients of norm below its bound; a stream of their own, so the draws
    # above are unchanged): a rule need not be monotone in the gradient's norm, and a sensitivity that exceeds the
    # lemma only for smaller gradients never shows on the sphere
    inner = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(SEARCH_STREAM, 1)))
    for _ in range(examples // 2):
        t0 = int(fam.rounds[int(inner.integers(len(fam.rounds)))]) if fam.rounds else None
        u, v = inner.uniform(-1.0, 1.0, n), inner.uniform(-1.0, 1.0, n)
        radius = inner.uniform(0.0, 1.0, 2)
        g, gp = fam.scaled(u, v)
        if g is not None and gp is not None:
            difference = isinstance(fam.cls, GradientClass) and fam.cls.kind == "difference"  # g' = -g: one radius
            drawn.append((named(t0, "drawn inside"), t0, radius[0] * g, radius[0 if difference else 1] * gp))
    starts = [(c.label, c.round_index, np.asarray(c.gradient, dtype=float), np.asarray(c.gradient_prime, dtype=float))
              for c in start[:SEARCH_STARTS]]
    found: dict[Any, CandidatePair] = {}  # every candidate evaluated, by key, in the order first met
    ranks: list[tuple[float, float, int]] = []  # their sort keys in best(), in that order
    steps: dict[Any, float] = {}

    def evaluate(batch: list[tuple[str, int | None, Any, Any]]) -> list[CandidatePair]:
        got = _evaluate_all(fam, runs, scenario, batch, max_runs, score, focus,  # type: ignore[arg-type]
                            ahead=ahead)
        for c in got:
            key = _key(c.round_index, c.gradient, c.gradient_prime)
            if key not in found:
                found[key] = c
                rank = _rank(c)
                ranks.append((-rank[0], -rank[1], len(ranks)))
        return got

    def best(pool: Sequence[CandidatePair], count: int) -> list[CandidatePair]:
        ranked = [_rank(c) for c in pool]
        order = heapq.nsmallest(count, range(len(pool)), key=lambda i: (-ranked[i][0], -ranked[i][1], i))
        return [pool[i] for i in order]

    def best_found(count: int) -> list[CandidatePair]:
        """``best(list(found.values()), count)``, from the kept sort keys."""
        pool = list(found.values())
        return [pool[i] for _, _, i in heapq.nsmallest(count, ranks)]

    points = best(evaluate(starts), CLIMB_POINTS)
    batch = list(drawn)
    for _ in range(CLIMB_ITERATIONS if examples > 0 else 0):
        moves = []
        for p in points:
            step = steps.setdefault(_key(p.round_index, p.gradient, p.gradient_prime), CLIMB_STEP)
            coordinates = None if n <= CLIMB_COORDINATES else \
                np.sort(rng.choice(n, size=CLIMB_COORDINATES, replace=False)).tolist()
            moves.append(_moves(fam, p, step, lambda t0: named(t0, "hill climb"), coordinates))
        got = evaluate(batch + [m for ms in moves for m in ms])
        offset = len(batch)
        for p, ms in zip(points, moves):
            mine = got[offset:offset + len(ms)]
            offset += len(ms)
            key = _key(p.round_index, p.gradient, p.gradient_prime)
            top = best(mine, 1)
            if top and _rank(top[0]) > _rank(p):
                steps.setdefault(_key(top[0].round_index, top[0].gradient, top[0].gradient_prime), steps[key])
            else:
                steps[key] = steps[key] / 4.0
        batch = []
        points = best_found(CLIMB_POINTS)
    ranked = best_found(1)
    if not ranked:
        return CandidatePair(named(fam.rounds[0] if fam.rounds else None, "drawn"), agent, (0.0,) * n, (0.0,) * n,
                             -math.inf, None, fam.rounds[0] if fam.rounds else None, -math.inf)
    return ranked[0]
