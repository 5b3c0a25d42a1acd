"""The worst-case search's candidates evaluated on the engine runs' realized schedules, a stack at a time.

A candidate pair (:class:`CandidatePair`) of the class's search family (``_Family``: its extremal pairs, its
scenarios, its cost families) is scored by its constructed-transcript losses (:func:`constructed_losses`,
:func:`construct_transcript`); many candidates share one stacked replay (``_evaluate_all``), and a candidate
already evaluated on the same runs is never replayed (:mod:`asyncdp.privacy.worst_case` describes the batching).

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> pair, ctx = small_example()
    >>> loss, run = constructed_loss(ctx.engine_runs(0), pair.scenario, 0, [1.0, 0.0], [-1.0, 0.0], max_runs=2)
    >>> loss > 0, run in (0, 1)
    (True, True)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..papers import GradientClass, RoundClass
from ..problems.costs import LinearOverride
from ..problems.online import LinearRound
from ..scenario import Scenario
from .behavior import EngineRuns
from .candidate_pairs import (_bound_base, adjacency_class, candidate_scenarios, extremal_pairs, extremal_round_pairs,
                              reachable_rounds, round_scenarios)
from .constructed import CandidateCosts, CandidateRuns, constructed_replay, constructed_replays, stack_size
from .search_objective import _round_loss
from .stacked_gradients import LinearCosts

__all__ = ["CandidatePair", "constructed_loss", "constructed_losses", "construct_transcript"]


_CANDIDATE_RUNS = 16
"""Engine runs whose realized schedules each extremal candidate is evaluated on."""


_KINKED_RUNS = 2
"""Engine runs on whose schedules the kinked pairs are evaluated (``_evaluate_kinked``)."""


@dataclass(frozen=True)
class CandidatePair:
    """A constructed adjacent pair: the changed agent's (or round's) linear costs under ``P`` and ``P'``.

    Attributes:
        label: how it was built (e.g. ``"sign pattern (+1, -1)"``, ``"round 1, coordinate 0 (+)"``,
            ``"search: hill climb"``).
        agent: the changed agent (``None`` under round adjacency: every agent's input changes).
        gradient, gradient_prime: ``g`` and ``g'`` of ``f = <g, x>``, ``f' = <g', x>``.
        loss: the largest constructed-transcript loss found for it (for a per-iteration claim, of one round's
            releases; ``nan`` before evaluation).
        run: the engine run whose schedule gave that loss.
        round_index: the changed round ``t0`` under round adjacency, else ``None``.
        objective: what the search maximized (:func:`~asyncdp.privacy.search_objective.profile_objective`;
            ``nan`` before evaluation).
    """

    label: str
    agent: int | None
    gradient: tuple[float, ...]
    gradient_prime: tuple[float, ...]
    loss: float = math.nan
    run: int | None = None
    round_index: int | None = None
    objective: float = math.nan


def construct_transcript(runs: EngineRuns, scenario: Scenario, agent: int | Sequence[int]) -> dict[str, np.ndarray]:
    """The runs' transcripts with ``agent``'s messages (and every noise-free release) set to their values under ``scenario``.

    One pass of :func:`accounting.scheduled_replay.scheduled_replay` with
    ``pin_agent`` processes rounds in order; under asynchronous timing a
    combination may read a message of a later round before that message was
    constructed, so a noise-free release computed from it matches neither
    problem. The construction is therefore repeated on its own output until
    nothing changes: every pass fixes the next events in the run's causal
    order (which is acyclic), so at most ``horizon + 1`` passes are needed.

    Args:
        runs: the engine runs (schedules and the other agents' messages).
        scenario: the problem whose noise-free values are pinned (the candidate's ``P``).
        agent: the pinned agent, or agents (round adjacency: all of them).

    Returns:
        Per channel, the constructed messages.

    Raises:
        AccountingError: the construction does not settle within ``horizon + 1`` passes.
    """
    return constructed_replay(runs, scenario, None, agent)[0]


@dataclass(frozen=True)
class _Family:
    """The class-specific part of the search: candidate generation for one adjacency class.

    Attributes:
        cls: the class.
        agent: the changed agent (one agent's cost), or ``None`` (round adjacency).
        rounds: the rounds the search may change (round adjacency), else ``()``.
    """

    cls: GradientClass | RoundClass
    agent: int | None
    rounds: tuple[int, ...] = ()

    def extremes(self, scenario: Scenario, changed_round: int | None) -> list[tuple[str, int | None, Any, Any]]:
        if self.agent is not None:
            return [(label, None, g, gp) for label, g, gp in extremal_pairs(scenario, self.agent)]
        assert isinstance(self.cls, RoundClass)
        return [(label, t0, g, gp) for label, t0, g, gp in extremal_round_pairs(scenario, self.cls, changed_round)]

    def scenarios(self, scenario: Scenario, round_index: int | None, g: Any, gp: Any) -> tuple[Scenario, Scenario]:
        if self.agent is not None:
            return candidate_scenarios(scenario, self.agent, g, gp)
        assert round_index is not None
        return round_scenarios(scenario, round_index, g, gp)

    def candidate(self, base: Scenario, scenario: Scenario, round_index: int | None, g: Any, gp: Any,
                  finite: tuple[bool | None, bool | None] = (None, None)) -> CandidateCosts:
        """The candidate by its cost families (``asyncdp.privacy.stacked_gradients.LinearCosts``: built only when a step
        needs more than their gradients and structure; its scenarios, :meth:`scenarios`, only when asked).

        ``base`` is ``_bound_base`` of ``scenario``; ``finite``: the two gradients' ``finite`` arguments of
        ``asyncdp.privacy.stacked_gradients.LinearCosts`` (:meth:`candidates`).
        """
        if self.agent is not None:
            kind, index = LinearOverride, self.agent
        else:
            assert round_index is not None
            kind, index = LinearRound, round_index
        costs = scenario.problem.costs
        return CandidateCosts(base, LinearCosts(kind, costs, index, g, finite[0]),
                              LinearCosts(kind, costs, index, gp, finite[1]),
                              functools.partial(self.scenarios, scenario, round_index, g, gp))

    def candidates(self, base: Scenario, scenario: Scenario, items: Sequence[tuple[int | None, Any, Any]]
                   ) -> list[CandidateCosts]:
        """:meth:`candidate` of each ``(round_index, g, g')``, in order: the same candidates, every gradient's
        finiteness checked at once (a gradient that fails it is checked by its own
        ``asyncdp.privacy.stacked_gradients.LinearCosts``, which raises what its family raises, in the same order)."""
        finite = LinearCosts.finite_rows([g for _, g, _ in items] + [gp for _, _, gp in items],
                                         scenario.problem.costs.dim) if len(items) > 1 else None
        if finite is None:
            return [self.candidate(base, scenario, t0, g, gp) for t0, g, gp in items]
        half = len(items)
        return [self.candidate(base, scenario, t0, g, gp, (finite[k] or None, finite[half + k] or None))
                for k, (t0, g, gp) in enumerate(items)]

    def rows(self, runs: EngineRuns, limit: int) -> list[int]:
        """The runs a candidate is evaluated on: the first ``limit`` (with distinct schedules when every agent is
        pinned: equal schedules then give equal losses)."""
        if self.agent is not None:
            return list(range(min(limit, runs.runs)))
        seen: set[int] = set()
        alive = []  # a batch's schedules are views made on access: kept alive so that no id is reused
        out = []
        for r, s in enumerate(runs.schedules):
            alive.append(s)
            if id(s) not in seen:
                seen.add(id(s))
                out.append(r)
                if len(out) == limit:
                    break
        return out

    def pinned(self, scenario: Scenario) -> int | list[int]:
        return self.agent if self.agent is not None else list(range(scenario.problem.num_agents))

    def scaled(self, u: Sequence[float], v: Sequence[float]) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Two search directions in ``[-1, 1]^n`` as a pair of the class (``None`` for a degenerate draw).

        ``kind="each"`` and round classes: two gradients of L2 norm ``bound``;
        ``kind="difference"``: ``g = d / 2``, ``g' = -d / 2`` with ``||d|| = bound`` in the class's norm.
        """
        def scale(w: Sequence[float], order: float = 2) -> np.ndarray | None:
            a = np.asarray(w, dtype=float)
            # numpy.linalg.norm's own computation of a vector's L2 norm (sqrt of its dot product), without its
            # dispatch: the same value
            norm = math.sqrt(float(a.dot(a))) if order == 2 and a.ndim == 1 else float(np.linalg.norm(a, ord=order))
            return None if norm < 1e-6 else self.cls.bound * a / norm

        if isinstance(self.cls, GradientClass) and self.cls.kind == "difference":
            d = scale(u, 1 if self.cls.norm == "l1" else 2)
            return (None, None) if d is None else (0.5 * d, -0.5 * d)
        return scale(u), scale(v)

    def scaled_rows(self, us: np.ndarray, vs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """:meth:`scaled` of each row of ``us`` and ``vs`` (``(M, n)`` floats; ``None`` for a degenerate one): the
        same values (each row's norm as :meth:`scaled` computes it, then every row scaled at once by the same
        elementwise operations).

        Example:
            >>> from asyncdp.papers import GradientClass
            >>> fam = _Family(GradientClass(2.0, "l2"), 0)
            >>> rows = np.array([[3.0, 4.0], [0.0, 0.0]])
            >>> [None if r is None else r[0].tolist() for r in fam.scaled_rows(rows, rows)]
            [[1.2, 1.6], None]
        """
        difference = isinstance(self.cls, GradientClass) and self.cls.kind == "difference"
        order = (1 if self.cls.norm == "l1" else 2) if difference else 2

        def scale(a: np.ndarray) -> tuple[np.ndarray, list[bool]]:
            norms = [math.sqrt(float(r.dot(r))) for r in a] if order == 2 else \
                [float(np.linalg.norm(r, ord=order)) for r in a]
            fine = [v >= 1e-6 for v in norms]
            return self.cls.bound * a / np.array([v if f else 1.0 for v, f in zip(norms, fine)])[:, None], fine

        d, fine = scale(us)
        if difference:
            return [(0.5 * d[i], -0.5 * d[i]) if fine[i] else None for i in range(len(fine))]
        e, fine_v = scale(vs)
        return [(d[i], e[i]) if fine[i] and fine_v[i] else None for i in range(len(fine))]


def _family(scenario: Scenario, agent: int | None) -> _Family | None:
    """The search family of the scenario's class for a change of ``agent`` (``None``: round adjacency)."""
    cls = adjacency_class(scenario)
    if agent is not None and isinstance(cls, GradientClass):
        return _Family(cls, agent)
    if agent is None and isinstance(cls, RoundClass):
        return _Family(cls, None, tuple(reachable_rounds(scenario)))
    return None


def constructed_losses(runs: EngineRuns, scenario: Scenario, agent: int | None, gradient: Any, gradient_prime: Any,
                       max_runs: int | None = None, round_index: int | None = None,
                       focus: int | None = None) -> tuple[np.ndarray, list[int]]:
    """The constructed-transcript loss of a candidate on each evaluated run's schedule.

    Args:
        runs: the engine runs of the user's scenario (their schedules and the other agents' messages).
        scenario: the user's scenario.
        agent: the changed agent, or ``None`` for round adjacency (``round_index`` then names the round).
        gradient, gradient_prime: the candidate's ``g`` and ``g'``.
        max_runs: evaluate on at most this many runs (default all; distinct schedules under round adjacency).
        round_index: the changed round (round adjacency).
        focus: a per-iteration claim's round (0-based): that round's loss only.

    Returns:
        ``(losses, runs used)``.

    Raises:
        PaperError: the scenario's paper record declares no class for this kind of change.
    """
    from ..papers import PaperError

    fam = _family(scenario, agent)
    if fam is None:
        raise PaperError(f"no adjacency class of the right kind for {scenario.algorithm.name} "
                           f"({'round' if agent is None else 'one agent'}'s change)")
    total, per_round, rows = _losses(fam, runs, scenario, round_index, gradient, gradient_prime,
                                     runs.runs if max_runs is None else max_runs)
    return (per_round[:, focus] if focus is not None else total), rows


def _key(round_index: int | None, g: Any, gp: Any) -> tuple[int | None, bytes, bytes]:
    """A candidate's key within one search (one scenario, one changed agent or round adjacency)."""
    return round_index, np.asarray(g, dtype=float).tobytes(), np.asarray(gp, dtype=float).tobytes()


def _known_key(cand: CandidateRuns, fam: _Family, scenario: Scenario, round_index: int | None, g: Any, gp: Any
               ) -> tuple[Any, ...]:
    """A candidate's key in :attr:`~asyncdp.privacy.constructed.CandidateRuns.known`: the changed agent and the
    scenario too (the same runs may evaluate another agent's or scenario's candidates: the same gradients are
    then another candidate). The scenario is kept in ``cand.bases``, so that its identity is not reused."""
    return (fam.agent, id(_base_of(cand, scenario)[0])) + _key(round_index, g, gp)


def _base_of(cand: CandidateRuns, scenario: Scenario) -> tuple[Scenario, Scenario]:
    """``(scenario, _bound_base(scenario))``, computed once per scenario evaluated on ``cand``."""
    base = cand.bases.get(id(scenario))
    if base is None:
        base = cand.bases[id(scenario)] = (scenario, _bound_base(scenario))
    return base


def _evaluate_all(fam: _Family, cand: CandidateRuns, scenario: Scenario,
                  candidates: Sequence[tuple[str, int | None, Any, Any]], limit: int, objective: Any,
                  focus: int | None, keep: Any = (), ahead: list[Any] | None = None) -> list[CandidatePair]:
    """:func:`_evaluate` of each candidate, in order, their replays stacked a group at a time
    (:func:`~asyncdp.privacy.constructed.constructed_replays`: the same losses, fewer replays). A candidate
    already evaluated on these runs (:attr:`~asyncdp.privacy.constructed.CandidateRuns.known`) or met earlier in
    the list is not replayed again (a run's loss depends on that run alone). A group whose stacked replay fails
    is evaluated one candidate at a time, which raises what the failing candidate raises. ``keep``: the
    candidates (:func:`_key`) whose constructed transcripts on the first :data:`_KINKED_RUNS` rows are kept
    (:attr:`~asyncdp.privacy.constructed.CandidateRuns.transcripts`, from their stacked replay: the kinked pairs'
    references, ``_kinked_references``, read them instead of replaying them again). ``ahead``: the later
    steps' candidates the first stacked replay may take along (:func:`_riding`); the list is emptied once a replay
    took them, or once their replay failed (they are then left to their own step)."""
    runs = cand.prefix(limit)
    size = stack_size(runs)
    base = _base_of(cand, scenario)[1]
    count = min(limit, len(cand.rows))
    todo: dict[Any, tuple[int | None, Any, Any]] = {}
    head = (fam.agent, id(_base_of(cand, scenario)[0]))  # _known_key's, the same for every candidate
    keys = [head + _key(t0, g, gp) for _, t0, g, gp in candidates]
    for key, (_, t0, g, gp) in zip(keys, candidates):
        known = cand.known.get(key)
        if key not in todo and (known is None or known[0].size < count):
            todo[key] = (t0, g, gp)
    pending = list(todo.items())
    for start in range(0, len(pending) if size > 1 else 0, size):
        group = pending[start:start + size]
        cands = fam.candidates(base, scenario, [item for _, item in group])
        more = _riding(ahead, fam, runs, len(group), size)
        try:
            if more:  # each on its own first runs; pinned to its own agent where it has one (one pass settles each)
                pins = None if all(e[2] is None for e in more) else \
                    [int(fam.pinned(scenario))] * len(group) + [int(e[2]) for e in more]  # type: ignore[call-overload]
                got = constructed_replays(runs, cands + [e[1] for e in more], fam.pinned(scenario), pins=pins,
                                          sizes=[runs.runs] * len(group) + [e[3] for e in more])
            else:
                got = constructed_replays(runs, cands, fam.pinned(scenario))
        except Exception:  # noqa: BLE001 - the candidates are then replayed one by one (and raise there)
            if not more:
                continue
            more = []  # (left to their own step) this group alone, as without them
            assert ahead is not None
            ahead.clear()
            try:
                got = constructed_replays(runs, cands, fam.pinned(scenario))
            except Exception:  # noqa: BLE001 - as above
                continue
        if more:
            for entry, known in zip(more, got[len(group):]):
                cand.spare[entry[0]] = known
            assert ahead is not None
            ahead.clear()
        for k, ((key, _), known) in enumerate(zip(group, got)):
            if key not in cand.known or cand.known[key][0].size < count:
                cand.known[key] = known
            if keep and key[2:] in keep and key not in cand.transcripts:
                cand.transcripts[key] = {c: m.copy() for c, m in got.transcript(k, _KINKED_RUNS).items()}
    many = getattr(objective, "many", None)
    if many is None or not candidates:
        return [_evaluate(fam, cand, scenario, label, t0, g, gp, limit, objective, focus)
                for label, t0, g, gp in candidates]
    rows = cand.rows[:count]
    entries = [cand.known.get(key) for key in keys]  # (what _losses reads; it replays a candidate left out)
    if all(e is not None and e[0].size >= count for e in entries):  # every candidate's losses at once
        losses = np.stack([e[0][:count] if focus is None else _round_loss(e[1][:count])  # type: ignore[index]
                           for e in entries])
        scored = losses if focus is None else np.stack([e[1][:count, focus] for e in entries])  # type: ignore[index]
        # a row with a NaN is scored alone, in the candidates' order (what is wrong is named in that order)
        early = {k: float(objective(scored[k])) for k in np.flatnonzero(np.isnan(scored).any(axis=1)).tolist()}
    else:
        each, parts, early = [], [], {}
        for k, (key, (_, t0, g, gp)) in enumerate(zip(keys, candidates)):
            e = cand.known.get(key)
            one, per_round = (e[0][:count], e[1][:count]) if e is not None and e[0].size >= count else \
                _losses(fam, cand, scenario, t0, g, gp, limit)[:2]
            each.append(one if focus is None else _round_loss(per_round))
            parts.append(one if focus is None else per_round[:, focus])
            if np.isnan(parts[-1]).any():  # scored in turn, as one at a time, before the next one is replayed
                early[k] = float(objective(parts[-1]))
        losses, scored = np.stack(each), np.stack(parts)
    scores = many(scored).tolist()
    best = losses.argmax(axis=1)  # each row's first largest loss (a NaN counts as largest), as np.argmax of the row
    worst = losses[np.arange(len(candidates)), best].tolist()
    return [CandidatePair(label, fam.agent, tuple(np.asarray(g, dtype=float).tolist()),
                          tuple(np.asarray(gp, dtype=float).tolist()), worst[k], rows[r], t0, early.get(k, scores[k]))
            for k, ((label, t0, g, gp), r) in enumerate(zip(candidates, best.tolist()))]


def _riding(ahead: Sequence[Any] | None, fam: _Family, runs: EngineRuns, count: int, size: int) -> list[Any]:
    """The later steps' candidates (``ahead``: ``(key, candidate, pinned agent or None, runs)``, from
    ``_kinked_ahead`` or ``_others_ahead``) that a stacked replay of ``count`` of ``fam``'s candidates on
    ``runs`` takes along: all of them when they fit in the stack (``size``) and in the runs (each on its own first
    ones), those with an agent of their own only when ``fam`` pins one agent (else none)."""
    more = ahead
    if not more or count + len(more) > size or any(e[3] > runs.runs for e in more):
        return []
    if any(e[2] is not None for e in more) and fam.agent is None:
        return []
    return list(more)


def _losses(fam: _Family, runs: EngineRuns | CandidateRuns, scenario: Scenario, round_index: int | None, g: Any, gp: Any,
            limit: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Per evaluated run the constructed loss, its rounds' contributions, and the runs used (the first ``limit``
    of ``runs``' rows when ``runs`` is a :class:`~asyncdp.privacy.constructed.CandidateRuns`)."""
    from accounting.errors import AccountingError

    cand = runs if isinstance(runs, CandidateRuns) else CandidateRuns(runs, fam.rows(runs, limit))
    count = min(limit, len(cand.rows))
    key = _known_key(cand, fam, scenario, round_index, g, gp)
    known = cand.known.get(key)  # a candidate already evaluated on these runs (each run's loss is its own)
    if known is not None and known[0].size >= count:
        return known[0][:count], known[1][:count], cand.rows[:count]
    one = fam.candidate(_base_of(cand, scenario)[1], scenario, round_index, g, gp)
    try:  # by its cost families: its problems are built only if a step needs them
        (losses, per_round), = constructed_replays(cand.prefix(limit), [one], fam.pinned(scenario))
    except AccountingError:
        raise
    except Exception:  # noqa: BLE001 - not replayable so (e.g. more runs than one chunk): the plain construction,
        # which raises what the candidate raises
        _, out = constructed_replay(cand.prefix(limit), *one.scenarios(), fam.pinned(scenario))
        assert out.losses is not None and out.per_round is not None
        losses, per_round = out.losses, out.per_round
    cand.known[key] = (losses, per_round)
    return losses, per_round, cand.rows[:count]


def constructed_loss(runs: EngineRuns, scenario: Scenario, agent: int, gradient: Any, gradient_prime: Any,
                     max_runs: int | None = None) -> tuple[float, int]:
    """The largest constructed-transcript loss of a one-agent candidate over the recorded runs' schedules.

    Args:
        runs, scenario, agent, gradient, gradient_prime, max_runs: as :func:`constructed_losses`.

    Returns:
        ``(loss, run)``.
    """
    losses, rows = constructed_losses(runs, scenario, agent, gradient, gradient_prime, max_runs)
    r = int(np.argmax(losses))
    return float(losses[r]), rows[r]


def _evaluate(fam: _Family, runs: EngineRuns | CandidateRuns, scenario: Scenario, label: str, round_index: int | None, g: Any,
              gp: Any, limit: int, objective: Any, focus: int | None) -> CandidatePair:
    losses, per_round, rows = _losses(fam, runs, scenario, round_index, g, gp, limit)
    scored = losses if focus is None else per_round[:, focus]
    return _scored(fam, label, round_index, g, gp, losses if focus is None else _round_loss(per_round), rows,
                   float(objective(scored)))


def _scored(fam: _Family, label: str, round_index: int | None, g: Any, gp: Any, losses: np.ndarray, rows: list[int],
            objective: float) -> CandidatePair:
    """The evaluated candidate: its largest loss, the run that gave it, and its objective."""
    k = int(np.argmax(losses))
    return CandidatePair(label, fam.agent, tuple(np.asarray(g, dtype=float).tolist()),
                         tuple(np.asarray(gp, dtype=float).tolist()), float(losses[k]), rows[k], round_index, objective)
