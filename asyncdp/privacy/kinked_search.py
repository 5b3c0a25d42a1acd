"""The non-linear members of the class in the worst-case search: kinked, sawtooth and curved costs.

The kinked pairs (:mod:`asyncdp.privacy.kinked`) are placed at the states the reference linear pairs'
constructed transcripts visit (``_kinked_references``), replayed on the first ``_KINKED_RUNS`` runs and recorded
where the lemma's comparison reads them (``_evaluate_kinked``; a round class: ``_evaluate_kinked_rounds``);
``_kinked_ahead`` offers them to the search's stacked replays. ``curved_candidates`` are the smooth members
curved everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..papers import GradientClass, RoundClass
from ..problems.costs import LinearOverride
from ..problems.online import LinearRound, OnlineLoss
from ..problems.problem import Problem
from ..scenario import Scenario
from .candidate_evaluation import _CANDIDATE_RUNS, _KINKED_RUNS, _base_of, _Family, _known_key
from .candidate_pairs import EXTREMAL_ROUNDS, candidate_scenarios, reachable_rounds, round_scenarios
from .constructed import (CandidateCosts, CandidateRuns, constructed_replay, constructed_replays,
                          constructed_transcripts, stack_size)
from .stacked_gradients import LinearCosts

_KINKED_AXES = 2
"""The kinked pairs are placed along the first this many coordinates (both signs each)."""


KINKED_PROFILE_MARGIN = 1.5
"""A kinked pair (``_kinked_profile_evidence``) is checked as the worst pair when its objective on the first
``_KINKED_RUNS`` runs exceeds the worst linear pair's by this factor and a tenth of the claimed delta (below
it its engine runs' estimate is futile, :class:`accounting.sequential.SequentialPlan`): a pair only as bad (a rule
reading the gradient once moves by as much under the extremal linear pair) costs no second pair's engine runs. The
sawtooth pairs are built only when some kinked pair moves a round's releases further than this factor times every
linear pair's largest round."""


KINKED_ALPHA_FRACTION = 0.2
"""The part of the search's error rate (``alpha_share``) a kinked pair's delta evidence spends
(``_kinked_profile_evidence``); the worst linear pair's spends the rest wherever a kinked pair may follow it
(``_kinked_may_follow``): together they err with probability at most ``alpha_share``."""


def _reads_differences(fam: _Family, evaluated: CandidateRuns) -> bool:
    """Whether some kinked pair's largest round contribution exceeds :data:`KINKED_PROFILE_MARGIN` times every
    linear pair's of ``fam``'s agent (on the runs each was evaluated on; a NaN entry counts as below)."""
    kinked = max((float(np.nanmax(a)) for a in (np.asarray(evaluated.known[key][1], dtype=float)
                                                 for key in evaluated.kinked) if a.size and not np.isnan(a).all()),
                 default=-math.inf)
    if not kinked > 0:
        return False
    reach = kinked / KINKED_PROFILE_MARGIN
    for key, (_, per_round) in evaluated.known.items():  # the first linear pair reaching that far settles it
        if key[0] == fam.agent and key not in evaluated.kinked and np.max(per_round, initial=-math.inf) >= reach:
            return False
    return True


def _sawtooth_scored(fam: _Family, evaluated: CandidateRuns, scenario: Scenario
                     ) -> list[tuple[Any, Any, np.ndarray, np.ndarray]]:
    """The sawtooth pairs (:func:`~asyncdp.privacy.kinked.sawtooth_pairs`) of the ``+`` references of
    :func:`_kinked_candidates` (their kept transcripts), each ``(key, pair, losses, per_round)`` on the first
    ``_KINKED_RUNS`` runs (one replay).

    Raises:
        AccountingError: a reference's construction or a pair's replay fails.
    """
    from .kinked import sawtooth_pairs

    cls = fam.cls
    if not isinstance(cls, GradientClass):
        return []
    agent = fam.agent
    assert agent is not None
    n = scenario.problem.dim
    scale = cls.bound if cls.kind == "each" else 0.5 * cls.bound
    built, _ = _reference_transcripts(fam, evaluated, scenario, _kinked_references(fam, scenario), agent)
    if built is None:
        return []
    refs = [(k, s) for k in range(min(n, _KINKED_AXES)) for s in (1.0, -1.0)]
    runs = evaluated.prefix(_KINKED_RUNS)
    pairs = [p for (k, s), messages in zip(refs, built) if s > 0
             for p in sawtooth_pairs(messages, runs.schedules, agent, k, scale * np.eye(n)[k], scale)]
    if not pairs:
        return []
    user, base = _base_of(evaluated, scenario)
    cands = [_kinked_candidate(scenario, base, agent, pair) for pair in pairs]
    got = _kinked_replays(runs, cands, agent)
    return [((agent, id(user), None, np.asarray(pair.gradient, dtype=float).tobytes(), ("kinked", pair.label)),
             pair, losses, per_round) for pair, (losses, per_round) in zip(pairs, got)]


def _kinked_replays(runs: Any, cands: list[Any], pinned: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each kinked candidate's losses and per-round contributions: in one stacked replay, or one at a time where
    they cannot be stacked (which raises what a candidate raises)."""
    try:
        got = constructed_replays(runs, cands, pinned) if stack_size(runs) >= len(cands) else None
    except Exception:  # noqa: BLE001 - not stackable so: one at a time below (which raises what a pair raises)
        got = None
    if got is not None:
        return got
    out = []
    for c in cands:
        replay = constructed_replay(runs, *c.scenarios(), pinned)[1]
        assert replay.losses is not None and replay.per_round is not None
        out.append((replay.losses, replay.per_round))
    return out


def _evaluate_kinked(fam: _Family, evaluated: CandidateRuns, scenario: Scenario, changed_round: int | None = None
                     ) -> None:
    """Evaluates the kinked pairs of the class (:mod:`asyncdp.privacy.kinked`) on the first
    ``_KINKED_RUNS`` runs, recording each in ``evaluated.known`` (keyed apart from every linear candidate)
    and ``evaluated.kinked``, where ``_lemma_exceeded`` reads them.

    The references are the linear costs ``s C e_k`` (``C / 2`` for a difference class) of the first
    :data:`_KINKED_AXES` coordinates; each one's constructed transcript (run 0) gives the states its kinks are
    placed at, at most :data:`~asyncdp.privacy.kinked.MAX_KINKED_PAIRS` pairs against a linear cost, with the
    kinked costs against their mirror image or a far kink on top (:func:`_mirrored_families`), replayed stacked
    (one at a time where they cannot be). A round class: :func:`_evaluate_kinked_rounds` (``changed_round``: the user's).

    Raises:
        AccountingError: a reference's or a pair's construction does not settle, or its replay fails.
    """
    cls = fam.cls
    if fam.agent is None and isinstance(cls, RoundClass):
        _evaluate_kinked_rounds(fam, evaluated, scenario, changed_round)
        return
    found = _kinked_candidates(fam, evaluated, scenario)
    if not found:
        return
    assert fam.agent is not None
    _record_kinked(evaluated, found, fam.agent)


def _record_kinked(evaluated: CandidateRuns, found: list[tuple[Any, Any, CandidateCosts]], pinned: Any) -> None:
    """Records the kinked pairs ``found`` (``(key, pair, candidate)``) in ``evaluated.known`` and
    ``evaluated.kinked``: their losses on the first ``_KINKED_RUNS`` runs, from ``evaluated.spare`` when
    every one was evaluated already (stacked with another replay: ``_stack_other_agents``, or a batch of the
    search) on at least that many runs, else replayed now with ``pinned`` (the agent, or the pinned agents)."""
    runs = evaluated.prefix(_KINKED_RUNS)
    spare = [evaluated.spare.get(key) for key, _, _ in found]
    got = spare if all(s is not None and s[0].size >= runs.runs for s in spare) else \
        _kinked_replays(runs, [c for _, _, c in found], pinned)
    for (key, pair, _), known in zip(found, got):
        assert known is not None
        evaluated.known[key] = known
        evaluated.kinked[key] = pair


def _kinked_candidates(fam: _Family, evaluated: CandidateRuns, scenario: Scenario, kept_only: bool = False
                       ) -> list[tuple[Any, Any, CandidateCosts]] | None:
    """The kinked pairs of a one-agent class (:func:`_evaluate_kinked`) as ``(key, pair, candidate)``: the key
    they are recorded under, the :class:`~asyncdp.privacy.kinked.KinkedPair`, the candidate to replay (its
    linear cost against its kinked one). ``None`` for another class, or with ``kept_only`` when the references'
    transcripts were not kept by the extremal evaluation (they are replayed otherwise).

    Raises:
        AccountingError: a reference's construction does not settle, or its replay fails.
    """
    from .kinked import MAX_KINKED_PAIRS, kinked_pairs

    cls = fam.cls
    if fam.agent is None or not isinstance(cls, GradientClass):
        return None
    memo = ("kinked pairs", fam.agent, id(fam.cls), id(scenario))  # (of the kept references: the same every time)
    got = _memoized(evaluated, memo, fam, scenario)
    if got is not None:
        return got
    agent = fam.agent
    runs = evaluated.prefix(_KINKED_RUNS)
    n = scenario.problem.dim
    scale = cls.bound if cls.kind == "each" else 0.5 * cls.bound
    refs = [(k, s) for k in range(min(n, _KINKED_AXES)) for s in (1.0, -1.0)]
    user, base = _base_of(evaluated, scenario)
    built, kept = _reference_transcripts(fam, evaluated, scenario, _kinked_references(fam, scenario), agent,
                                         kept_only)
    if built is None:
        return None
    pairs = kinked_pairs(dict(zip(refs, built)), runs.schedules, agent, scale, n, MAX_KINKED_PAIRS // len(refs))
    pairs += _mirrored_families(pairs, [(k, agent, messages) for (k, s), messages in zip(refs, built) if s > 0],
                                runs.schedules, scale, n)
    found = [((agent, id(user), None, np.asarray(pair.gradient, dtype=float).tobytes(), ("kinked", pair.label)),
              pair, _kinked_candidate(scenario, base, agent, pair)) for pair in pairs]
    if kept:
        evaluated.memo[memo] = (scenario, found, fam.cls)
    return list(found)


def _mirrored_families(kinked: Sequence[Any], references: Sequence[tuple[int, int, dict[str, np.ndarray]]],
                       schedules: Any, scale: float, n: int, changed_round: int | None = None) -> list[Any]:
    """The pairs of kinked costs against their mirror image and of two far kinks (:mod:`asyncdp.privacy.kinked`)
    that come with the kinked pairs ``kinked``: those of the ``+`` references' kinks mirrored (the orientation is
    immaterial), then per reference ``(axis k, the agent reading it, its transcript)`` and channel a kink between
    where the agent is and where it moves (:func:`~asyncdp.privacy.kinked.mirrored_pairs`), kinks at the first
    points it reads, the gradient vanishing there (:func:`~asyncdp.privacy.kinked.vanishing_pairs`: a step
    preconditioned by the gradients seen so far moves furthest when they were small), and along axis 0 two
    kinks far away on either side (:func:`~asyncdp.privacy.kinked.offset_pairs`: opposite gradients, large
    values, for a rule reading the cost's value). ``changed_round``: round adjacency, the pairs are of that
    round's loss (read from that round on); ``None``: one agent's cost."""
    from .kinked import mirrored_pairs, offset_pairs, vanishing_pairs

    out = [p.mirror() for p in kinked if max(p.gradient) > 0]
    for make in (mirrored_pairs, vanishing_pairs, offset_pairs):
        out += [p for k, agent, messages in references if make is not offset_pairs or k == 0
                for p in make(messages, schedules, agent, k, scale * np.eye(n)[k], scale, changed_round)]
    return out


def _kinked_candidate(scenario: Scenario, base: Scenario, agent: int, pair: Any) -> CandidateCosts:
    """The candidate of a :class:`~asyncdp.privacy.kinked.KinkedPair` changing ``agent``'s cost: its linear cost
    (``P``; for a mirrored pair or one with a second kink, its kinked cost) against its kinked one (``P'``; the
    mirror image, or the second kink);
    ``base`` is ``_bound_base`` of ``scenario``."""
    costs = scenario.problem.costs

    def on(family: Any) -> Scenario:
        return scenario.replace(problem=Problem(scenario.problem.domain, family), algorithm=base.algorithm,
                                x0=base.x0)

    def scenarios() -> tuple[Scenario, Scenario]:
        p = on(pair.first_costs(costs, agent)) if pair.kinked_first else \
            candidate_scenarios(scenario, agent, pair.gradient, pair.gradient)[0]
        return p, on(pair.costs(costs, agent))
    first = pair.first_costs(costs, agent) if pair.kinked_first else \
        LinearCosts(LinearOverride, costs, agent, np.asarray(pair.gradient))
    return CandidateCosts(base, first, pair.costs(costs, agent), scenarios)


CURVED_POSITION = -100.0
"""Where the smooth curved members of the class (:func:`curved_candidates`) have their minimum along their axis:
far from the states the runs visit, so their gradient there is the extremal linear one up to ``~1 / (2 u^2)``
(``u`` the distance to it), yet not constant anywhere."""


def curved_candidates(fam: _Family, cand: CandidateRuns, scenario: Scenario) -> list[tuple[Any, Any, CandidateCosts]]:
    """Smooth members of a one-agent class curved everywhere, each against the opposite linear cost, as
    ``(key, pair, candidate)`` (:func:`_kinked_candidates`' form, keyed for ``cand``).

    For the first :data:`_KINKED_AXES` coordinates ``k``: the linear ``-s e_k`` (``P``) against
    ``f'(x) = s sqrt((x_k - c)^2 + 1)``, ``c =`` :data:`CURVED_POSITION` (``P'``: gradient
    ``s (x_k - c) / sqrt((x_k - c)^2 + 1) e_k``, norm below ``s``, about ``+s e_k`` where the runs go), ``s`` the
    class's bound (half of it for a difference class, whose pair's gradient difference then stays below the
    bound). A rule that treats a cost differently when its gradient is not constant (a curvature test) meets a
    cost of the class that is never linear, on every run these pairs are evaluated on.
    """
    from .kinked import KinkedPair

    cls = fam.cls
    if fam.agent is None or not isinstance(cls, GradientClass):
        return []
    user, base = _base_of(cand, scenario)
    scale = cls.bound if cls.kind == "each" else 0.5 * cls.bound
    out = []
    for k in range(min(scenario.problem.dim, _KINKED_AXES)):
        g = np.zeros(scenario.problem.dim)
        g[k] = -scale
        pair = KinkedPair(f"curved along coordinate {k} everywhere (its minimum at {CURVED_POSITION:g}) vs "
                          f"coordinate {k} (-)", tuple(g.tolist()), k, CURVED_POSITION, scale, 1.0)
        key = (fam.agent, id(user), None, g.tobytes(), ("curved", pair.label))
        out.append((key, pair, _kinked_candidate(scenario, base, fam.agent, pair)))
    return out


def _memoized(evaluated: CandidateRuns, memo: Any, fam: _Family, scenario: Scenario) -> list[Any] | None:
    """The kinked pairs kept under ``memo`` in ``evaluated.memo`` for ``scenario`` and ``fam``'s class (a copy
    of the list), or ``None``."""
    got = evaluated.memo.get(memo)
    if got is not None and got[0] is scenario and got[2] is fam.cls:
        return list(got[1])
    return None


def _reference_transcripts(fam: _Family, evaluated: CandidateRuns, scenario: Scenario,
                           references: Sequence[tuple[int | None, Any, Any]], pinned: Any, kept_only: bool = False
                           ) -> tuple[list[dict[str, np.ndarray]] | None, bool]:
    """The kinked pairs' references' constructed transcripts on the first ``_KINKED_RUNS`` rows, and whether
    the extremal evaluation kept them (:func:`_kept_transcripts`). Else they are replayed (``pinned``: the
    agent, or the pinned agents) in one stacked replay, or one at a time where they cannot be (which raises what
    a reference raises); with ``kept_only``, ``(None, False)`` instead.

    Raises:
        AccountingError: a reference's construction does not settle, or its replay fails.
    """
    runs = evaluated.prefix(_KINKED_RUNS)
    built = _kept_transcripts(fam, evaluated, scenario, references, runs.runs)
    if built is not None:
        return built, True
    if kept_only:
        return None, False
    base = _base_of(evaluated, scenario)[1]
    linear = [fam.candidate(base, scenario, t0, g, gp) for t0, g, gp in references]
    try:  # one stacked replay
        got = constructed_transcripts(runs, linear, pinned) if stack_size(runs) >= len(linear) > 1 else None
    except Exception:  # noqa: BLE001 - replayed one at a time below, which raises what a reference raises
        got = None
    if got is None:
        got = [constructed_replay(runs, c.scenarios()[0], None, pinned)[0] for c in linear]
    return got, False


def _kinked_references(fam: _Family, scenario: Scenario, changed_round: int | None = None
                       ) -> list[tuple[int | None, np.ndarray, np.ndarray]]:
    """The linear pairs ``(t0, g, g')`` whose constructed transcripts place the kinks (:func:`_evaluate_kinked`):
    one agent's class, ``g = s C e_k`` (``C / 2`` for a difference class) along the first :data:`_KINKED_AXES`
    coordinates, both signs, ``g' = -g``; a round class, ``L e_0`` against ``-L e_0`` in each round of
    :func:`_kinked_rounds`. Each is an extremal pair of the class
    (:func:`~asyncdp.privacy.candidate_pairs.extremal_pairs`,
    :func:`~asyncdp.privacy.candidate_pairs.extremal_round_pairs`: the same gradients), so the extremal evaluation
    may keep their transcripts
    (``_evaluate_all``'s ``keep``)."""
    from .kinked import MAX_KINKED_PAIRS

    cls, n = fam.cls, scenario.problem.dim
    if fam.agent is not None and isinstance(cls, GradientClass):
        scale = cls.bound if cls.kind == "each" else 0.5 * cls.bound
        return [(None, s * scale * np.eye(n)[k], -s * scale * np.eye(n)[k])
                for k in range(min(n, _KINKED_AXES)) for s in (1.0, -1.0)]
    if fam.agent is None and isinstance(cls, RoundClass):
        per_round = 2 * min(n, _KINKED_AXES)
        e0 = cls.bound * np.eye(n)[0]
        return [(t0, e0, -e0) for t0 in _kinked_rounds(fam, scenario, changed_round,
                                                       max(1, MAX_KINKED_PAIRS // per_round))]
    return []


def _kept_transcripts(fam: _Family, evaluated: CandidateRuns, scenario: Scenario,
                      references: Sequence[tuple[int | None, Any, Any]], count: int
                      ) -> list[dict[str, np.ndarray]] | None:
    """The references' constructed transcripts on the first ``count`` rows as the extremal evaluation kept them
    (:attr:`~asyncdp.privacy.constructed.CandidateRuns.transcripts`; each run's values are its own, so they
    are those of a replay of these rows), or ``None`` when one is not kept (they are then replayed)."""
    got = [evaluated.transcript(_known_key(evaluated, fam, scenario, t0, g, gp), count) for t0, g, gp in references]
    return None if not got or any(g is None for g in got) else got  # type: ignore[return-value]


def _kinked_rounds(fam: _Family, scenario: Scenario, changed_round: int | None, count: int) -> list[int]:
    """The changed rounds of the kinked pairs of a round class: of the rounds the extremal pairs change, the user's
    changed round first, then the earliest ones (an early change reaches the most releases), ``count`` at most."""
    # the rounds extremal_round_pairs changes (each with every direction of the class: at least one)
    every = reachable_rounds(scenario)
    rounds = sorted(set(every[:EXTREMAL_ROUNDS]) | ({changed_round} & set(every)))
    first = [changed_round] if changed_round in rounds else []
    return (first + [t for t in rounds if t != changed_round])[:count]


def _evaluate_kinked_rounds(fam: _Family, evaluated: CandidateRuns, scenario: Scenario,
                            changed_round: int | None) -> None:
    """:func:`_evaluate_kinked` of a round class: kinked losses of the changed round
    (:class:`~asyncdp.privacy.kinked.KinkedRound`, along the first :data:`_KINKED_AXES` coordinates, both signs)
    against the linear loss ``s L e_k`` of that round, the kinks placed at the points the node owning ``e_k``
    reads in that round (:func:`~asyncdp.privacy.kinked.kinked_round_pairs`). The rounds are those of the
    extremal pairs (:func:`_kinked_rounds`), as many as :data:`~asyncdp.privacy.kinked.MAX_KINKED_PAIRS` allows
    with one kink per reference and round; each round's reference transcript is that of its linear loss along
    coordinate 0 (every agent pinned, run 0). On top, as for one agent's cost (:func:`_mirrored_families`): those
    kinks' mirror images, and the mirrored, vanishing and far kinks of the first of those rounds (the user's
    changed round when it reaches a release). The pairs are replayed stacked (one at a time where they cannot
    be) on the first ``_KINKED_RUNS`` runs and recorded as :func:`_evaluate_kinked`'s, keyed by their round.

    Raises:
        AccountingError: a reference's or a pair's construction does not settle, or its replay fails.
    """
    found = _kinked_round_candidates(fam, evaluated, scenario, changed_round)
    if not found:
        return
    _record_kinked(evaluated, found, fam.pinned(scenario))


def _kinked_ahead(ctx: Any, fam: _Family, evaluated: CandidateRuns, scenario: Scenario) -> list[Any]:
    """Under a round class, the kinked pairs the lemma's check may evaluate after the search
    (:func:`_evaluate_kinked_rounds`), offered to the search's next stacked replay
    (:func:`~asyncdp.privacy.pair_search.search_pairs`'
    ``ahead``, ``[]`` when none is) when it replays the same runs (every schedule the
    kinked pairs are evaluated on is one the search's candidates are: at most ``_KINKED_RUNS`` distinct ones,
    e.g. lockstep runs) and the references' transcripts were kept: their losses go to
    :attr:`~asyncdp.privacy.constructed.CandidateRuns.spare`, where that check reads them."""
    if fam.agent is not None or ctx.sensitivity is None or \
            evaluated.prefix(_KINKED_RUNS).runs != evaluated.prefix(min(_CANDIDATE_RUNS, 8)).runs:
        return []
    try:
        found = _kinked_round_candidates(fam, evaluated, scenario, getattr(ctx, "changed_round", None), kept_only=True)
    except Exception:  # noqa: BLE001 - left to the check's own step (which raises what it raises)
        found = None
    rows = evaluated.prefix(_KINKED_RUNS).runs
    return [(key, c, None, rows) for key, _, c in found or []]


def _kinked_round_candidates(fam: _Family, evaluated: CandidateRuns, scenario: Scenario, changed_round: int | None,
                             kept_only: bool = False) -> list[tuple[Any, Any, CandidateCosts]] | None:
    """The kinked pairs of a round class (:func:`_evaluate_kinked_rounds`) as ``(key, pair, candidate)``
    (:func:`_kinked_candidates`' form). ``None`` without blocks of an online loss, or with ``kept_only`` when the
    references' transcripts were not kept by the extremal evaluation.

    Raises:
        AccountingError: a reference's construction does not settle, or its replay fails.
    """
    from .kinked import MAX_KINKED_PAIRS, kinked_round_pairs

    costs = scenario.problem.costs
    blocks = getattr(costs, "blocks", None)
    if not isinstance(costs, OnlineLoss) or blocks is None:
        return None
    memo = ("kinked round pairs", id(fam.cls), id(scenario), changed_round)  # (of the kept references: the same)
    got = _memoized(evaluated, memo, fam, scenario)
    if got is not None:
        return got
    n = scenario.problem.dim
    axes = list(range(min(n, _KINKED_AXES)))
    owners = {k: next(i for i, b in enumerate(blocks) if k in np.asarray(b).tolist()) for k in axes}
    per_round = 2 * len(axes)
    references = _kinked_references(fam, scenario, changed_round)
    rounds = [t0 for t0, _, _ in references]
    if not rounds:
        return []
    per_reference = max(1, MAX_KINKED_PAIRS // (per_round * len(rounds)))
    runs = evaluated.prefix(_KINKED_RUNS)
    bound = fam.cls.bound
    pinned = fam.pinned(scenario)
    user, base = _base_of(evaluated, scenario)
    built, kept = _reference_transcripts(fam, evaluated, scenario, references, pinned, kept_only)
    if built is None:
        return None
    pairs = kinked_round_pairs(dict(zip(rounds, built)), runs.schedules, owners, bound, per_reference, n)
    pairs = pairs[:MAX_KINKED_PAIRS]
    # the mirrored and far-kinked pairs of the first round (the user's changed round, if it reaches a release):
    # the losses of that round read at the points its owner nodes read from it on
    pairs += _mirrored_families(pairs, [(k, owners[k], built[0]) for k in axes], runs.schedules, bound, n, rounds[0])
    alg = base.algorithm

    def build(pair: Any) -> Any:
        t0 = pair.round_index

        def on(loss: Any) -> Scenario:
            return scenario.replace(problem=Problem(scenario.problem.domain, loss), algorithm=alg, x0=base.x0)

        def scenarios() -> tuple[Scenario, Scenario]:
            p = on(pair.round_costs(costs, first=True)) if pair.kinked_first else \
                round_scenarios(scenario, t0, pair.gradient, pair.gradient)[0]
            return p, on(pair.round_costs(costs))
        first = pair.round_costs(costs, first=True) if pair.kinked_first else \
            LinearCosts(LinearRound, costs, t0, np.asarray(pair.gradient))
        return CandidateCosts(base, first, pair.round_costs(costs), scenarios)

    found = [((None, id(user), pair.round_index, np.asarray(pair.gradient, dtype=float).tobytes(),
               ("kinked", pair.label)), pair, build(pair)) for pair in pairs]
    if kept:
        evaluated.memo[memo] = (scenario, found, fam.cls)
    return list(found)
