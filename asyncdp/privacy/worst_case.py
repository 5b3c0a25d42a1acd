"""The worst adjacent pair the accountant can construct: extremal members of the adjacency class plus a search.

The user's adjacent pair is one point of the adjacency class; a claim must
hold for every pair in it. The paper record's ``adjacency`` declares the
class, and one search covers both kinds:

* **one agent's cost** (:class:`~asyncdp.papers.GradientClass`, the
  sensitivity bound assumes only a gradient bound ``||grad f||_2 <= C2``, or a
  bound on the gradient difference): the changed agent's cost is replaced by
  linear costs (:class:`~asyncdp.problems.costs.LinearOverride`), opposite
  along every coordinate (``g = C2 e_k``) and, for an L1 bound, along sign
  patterns (``g = C2 s / sqrt(n)``), which attain Lemma-4-type bounds
  ``2 C2 sqrt(n) gamma``; for an L2 bound also along the two diagonals
  ``+-C2 (1, ..., 1) / sqrt(n)``, where a rule clipping each coordinate at
  ``C2 / sqrt(n)`` moves as far as its lemma allows;
* **one round's loss** (:class:`~asyncdp.papers.RoundClass`, round adjacency of
  online losses, Cheng, Liao and Li, arXiv 2022, Def. 1): round ``t0``'s loss
  is replaced by linear losses (:class:`~asyncdp.problems.online.LinearRound`)
  along the same sign patterns and coordinates, at the rounds ``t0 = 1..8``
  (:data:`~asyncdp.privacy.candidate_pairs.EXTREMAL_ROUNDS`: an early change reaches the most releases) and
  the user's changed round.

Then a search over pairs of the class (two gradients of the class's norm;
for round adjacency any round ``t0 = 1..T-1``), started from the best
extremal pairs (:func:`~asyncdp.privacy.pair_search.search_pairs`). Both kinds of class also get a few
non-linear members checked against the sensitivity lemma: kinked costs
whose gradient turns over just beyond the states the changed agent reads
(under round adjacency: kinked losses of the changed round, just beyond the
points the node owning the kink's coordinate reads in that round), paired
with the opposite extremal linear cost, and kinked costs against their
mirror image (of one agent, or of the changed round) (``asyncdp.privacy.kinked``; a rule that reacts to how the
gradient changes moves no further than the lemma under any linear cost,
one that reads a gradient difference moves twice as far under a
mirrored pair as under a linear one, and one that scales its step by the
gradients seen so far moves furthest when the gradient vanishes at the first
point it reads), and two kinked costs far away on either side (the extremal
gradients with large values, for a rule that reads the cost's value). A kinked pair of one agent's cost is also
ranked with the linear pairs by its objective (``_kinked_profile_evidence``): when some kinked pair moves a
round's releases further than every linear pair (a rule reading a gradient difference), a sawtooth cost kinked
along every step the agent takes, against its mirror image, is evaluated too (it moves every round that far, where
the mirrored kink moves one), and a kinked pair whose objective is the largest is certified as the worst pair is
(its own engine runs, :func:`~asyncdp.privacy.worst_pair.delta_evidence`; a pure claim: its constructed loss).
Every other cost, the algorithm
(bound to the user's problem: the same noise, clipping and steps) and the
initial points are kept. Only the candidate generation differs per class
(``_Family``); the search, the objective and the verdict are shared.
A :class:`~asyncdp.papers.ValueClass` (one agent's private value anywhere
in the domain: Muffliato) has no costs to construct: its antipodal pairs are
decided by :mod:`asyncdp.privacy.value_class` instead.

What is batched, and why that checks as much. Every candidate is evaluated
on the realized schedules of the same few engine runs, so candidates are
evaluated a batch at a time: one stacked replay
(:func:`~asyncdp.privacy.constructed.constructed_replays`) gives each
candidate of the batch exactly the losses its own replay gives, every step of
the algorithm taken once for all of them
(:mod:`asyncdp.privacy.stacked`; the linear costs' gradients too). The
extremal pairs are one batch (or a few: :func:`~asyncdp.privacy.constructed.stack_size`);
the search is ``CLIMB_ITERATIONS`` batches: its derandomized draws with
the first hill-climb moves from the best extremal pairs, then the moves from
the best candidates so far. It replaced a Hypothesis search (``examples``
examples one after another, each one candidate's replay: most of the check's
cost) and evaluates more candidates than it did: the same starts, as many
draws (none degenerate), and a climb over every coordinate of the best
points instead of Hypothesis's one-value-at-a-time targeting of the best
example (:func:`~asyncdp.privacy.pair_search.search_pairs` compares the two). A candidate already
evaluated on the runs is never replayed again.

What the later steps evaluate on the same runs rides along with these
replays instead of taking replays of its own (each candidate still gets
exactly its own replay's values: every run's values are its own, and a
candidate may be evaluated on fewer runs than the others of its stack). The
kinked pairs' references are extremal pairs, so the extremal evaluation
keeps their transcripts; the other agents' extremal pairs and the kinked
pairs join the search's next stacked replay when the extremal pairs do not
refute the claim (the other agents' are then evaluated after the search
unless it finds a pair that does), kept apart until the step that uses them
reads them (a step the check does not reach leaves nothing behind, so the
lemma's check reads exactly the pairs it did). What they cost is then only
their own rows of a replay.

The loss of a candidate is computed on the realized schedules of the
engine's runs of the user's scenario (the schedule does not depend on the
costs): the changed agent's messages (every agent's under round adjacency:
the change reaches each agent's block) are *constructed*, each equal to its
noise-free value under ``P`` (``pin_agent`` of
:func:`accounting.scheduled_replay.scheduled_replay`), the other agents'
are the recorded ones. With Laplace noise each release then contributes its
largest possible loss ``||mu - mu'||_1 / b``. The loss is continuous in the
transcript and the transcript density is positive everywhere, so a
constructed transcript with loss ``L > epsilon`` proves that a set of
positive probability has ``P(S) > e^epsilon P'(S)``: a pure-DP claim is
refuted, given the declared noise (which the conformance test checks).

The objective (:func:`~asyncdp.privacy.search_objective.profile_objective`). For a pure claim the search
maximizes the constructed loss, which is what refutes it. For a claim with
``delta > 0`` and Gaussian noise it maximizes the pair's privacy profile at
the claimed epsilon, ``delta(epsilon)``, not one transcript's loss: on a
constructed Gaussian transcript release ``r`` loses exactly ``mu_r^2 / 2``
(``y = m``: ``(||m - m'||^2) / (2 s^2)``), so each evaluated schedule gives
the composed ``mu_S = sqrt(2 L_S)`` of the pair's shifts along it, and the
objective is the average over the evaluated schedules of the exact Gaussian
profile ``delta_(mu_S)(epsilon)``. Where the shifts are fixed given the
schedule (linear costs, no projection or clipping active) that is the exact
profile of the pair on those schedules; where a projection makes them vary
it is a proxy (the composed ``mu`` of the shifts along the noise-free
transcript). The two objectives differ: a pair whose loss is large on one
schedule and small on the others has a larger largest loss but a smaller
profile than a pair with moderate shifts on every schedule. With Laplace
noise the largest loss stays the objective (its profile needs a privacy loss
distribution per candidate).

The found pair's verdict on a claim with ``delta > 0`` is
:func:`asyncdp.privacy.worst_pair.delta_evidence`.

Where each part lives: the class's extremal members and a member's scenario pair in
:mod:`asyncdp.privacy.candidate_pairs`; the search family and the stacked evaluation of candidates in
:mod:`asyncdp.privacy.candidate_evaluation`; the objective per claim form in
:mod:`asyncdp.privacy.search_objective`; the draws and the hill climb in :mod:`asyncdp.privacy.pair_search`; the
kinked, sawtooth and curved members in ``asyncdp.privacy.kinked_search``; the other agents' extremal pairs in
``asyncdp.privacy.other_agent_pairs``; what the pairs prove (witnesses, the lemma's comparison, the probes) in
:mod:`asyncdp.privacy.search_evidence`. This module is the check's step, :func:`search_worst_case`.

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> from asyncdp.privacy.candidate_pairs import extremal_pairs
    >>> pair, ctx = small_example()
    >>> pairs = extremal_pairs(pair.scenario, 0)
    >>> len(pairs), pairs[0][0]
    (8, 'sign pattern (+1, +1)')
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..papers import ValueClass
from ..scenario import Scenario
from .behavior import EngineRuns
from .candidate_evaluation import _CANDIDATE_RUNS, CandidatePair, _evaluate, _evaluate_all, _Family, _family, _key
from .candidate_pairs import adjacency_class
from .kinked_search import _evaluate_kinked, _kinked_ahead, _kinked_references
from .other_agent_pairs import _OTHER_AGENT_RUNS, _OTHER_AGENTS, _other_agents, _others_ahead, other_agents
from .pair_search import search_pairs
from .search_evidence import (_kinked_profile_evidence, _lemma_exceeded, _pair_evidence, _probed, _refutes,
                              _whose_lemma)
from .constructed import CandidateRuns
from .search_objective import _objective_of

__all__ = ["search_worst_case"]


def search_worst_case(pair: Any, ctx: Any) -> Any:
    """The check's step: the worst adjacent pair in the paper's class, and whether it refutes the claim.

    Tries every extremal pair of the class (:func:`~asyncdp.privacy.candidate_pairs.extremal_pairs`, or
    :func:`~asyncdp.privacy.candidate_pairs.extremal_round_pairs` under round adjacency), then
    a search with ``options.search_examples`` draws and a hill climb
    (:func:`~asyncdp.privacy.pair_search.search_pairs`),
    on the realized schedules of the engine's runs of the scenario, ranked by
    :func:`~asyncdp.privacy.search_objective.profile_objective`. A user's paper record without a class gets a
    doubt: its lemma is then untested, and the verdict is at best
    ``inconclusive``; so does one whose candidates cannot be replayed. A
    search that cannot replay a candidate keeps what the extremal pairs found
    (their witness), with the reason. Pure claims: a constructed transcript with loss above
    epsilon is a witness (module docstring). Claims with delta > 0:
    :func:`asyncdp.privacy.worst_pair.delta_evidence`.

    Args:
        pair: the :class:`~asyncdp.privacy.context.ScenarioPair`.
        ctx: the :class:`~asyncdp.privacy.context.CheckContext` (``changed_agent``, or ``changed_round``
            under round adjacency).

    Returns:
        Evidence ``"worst-case adjacency search"`` (constructed worst case)
        with figures ``worst_case_loss``, ``worst_case_pair``,
        ``worst_case_objective``, ``worst_case_delta_lower`` and
        ``worst_pair_script`` (a runnable script of the pair); witness
        ``{"kind": "worst-case", "agent", "round", ...}``.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = search_worst_case(*small_example(search_examples=5))
        >>> e.witness is None, round(e.figures["worst_case_loss"], 4)  # the composed bound, attained
        (True, 0.9877)
    """
    from accounting.errors import AccountingError

    from .evidence import Evidence

    method, kind = "worst-case adjacency search", "constructed worst case"
    empty = {"worst_case_loss": None, "worst_case_pair": None, "worst_case_delta_lower": None,
             "worst_case_objective": None, "worst_pair_script": None}
    scenario = pair.scenario
    agent = ctx.changed_agent
    # a user's lemma is trusted only once it has met the worst case of its class; so is a published lemma a
    # subclass of the paper's rule inherits (the subclass may change any step)
    users = ctx.paper is not None and not ctx.paper.published_for(ctx.algorithm)
    untested = (f"the sensitivity lemma of {_whose_lemma(ctx)} was not tested against the worst case of an adjacency "
                "class, so the bound composed with it is not trusted") if users else None
    fam = _family(scenario, agent)
    if fam is None and agent is not None and isinstance(adjacency_class(scenario), ValueClass):
        from .value_class import search_value_class

        return search_value_class(ctx, scenario, agent, untested)
    if fam is None:
        if agent is not None:
            why = (f"worst-case search: no adjacency class declared for {scenario.algorithm.name} (its paper record "
                   "has no adjacency, or there is no record): only the user's pair is checked")
        else:
            cls = adjacency_class(scenario)
            what = ("its paper record declares a class of one agent's costs, not round adjacency" if cls is not None
                    else "its paper record has no adjacency class for this scenario, or there is no record")
            why = (f"worst-case search: online losses (round adjacency) and no RoundClass for "
                   f"{scenario.algorithm.name} ({what}): only the user's pair is checked")
        return Evidence(method, kind, empty, doubt=untested, reasons=(why,))
    runs = ctx.engine_runs(0)
    objective = _objective_of(ctx, scenario)
    try:
        evaluated = CandidateRuns(runs, fam.rows(runs, _CANDIDATE_RUNS))
        extremes = fam.extremes(scenario, getattr(ctx, "changed_round", None))
        keep = {_key(t0, g, gp) for t0, g, gp in _kinked_references(fam, scenario, getattr(ctx, "changed_round", None))
                } if ctx.sensitivity is not None else ()
        scored = _evaluate_all(fam, evaluated, scenario, extremes,
                               _CANDIDATE_RUNS, objective, ctx.focus, keep)
    except AccountingError as exc:
        return Evidence(method, kind, empty, doubt=untested,
                        reasons=(f"worst-case search: cannot replay the candidates: {exc}",))
    scored.sort(key=lambda c: (-c.objective, -c.loss))
    best = scored[0]
    failed = None
    if ctx.options.search_examples > 0 and math.isfinite(best.loss):  # nothing beats an infinite loss
        ahead = _kinked_ahead(ctx, fam, evaluated, scenario) if agent is None else \
            _others_ahead(ctx, fam, evaluated, scenario, best)
        try:
            found = search_pairs(evaluated, scenario, agent, examples=ctx.options.search_examples, seed=ctx.options.seed,
                                 max_runs=min(_CANDIDATE_RUNS, 8), start=scored, objective=objective,
                                 focus=ctx.focus, ahead=ahead)
        except AccountingError as exc:  # the extremal pairs stay checked: their witness is kept
            failed = (f"worst-case search: the search beyond the extremal pairs cannot replay a candidate: {exc}; "
                      "only the extremal pairs are checked")
        else:
            if (found.objective, found.loss) > (best.objective, best.loss):
                best = found
    other = None
    if agent is not None and not _refutes(ctx, runs, best, scenario):
        try:
            other = _other_agents(ctx, fam, scenario, evaluated, objective)
        except AccountingError as exc:
            failed = f"worst-case search: the other agents' extremal pairs cannot be replayed: {exc}"
        if other is not None:
            best, fam = other, _Family(fam.cls, other.agent)
    best, every = _on_every_run(ctx, fam, scenario, runs, best, objective)
    evidence = _pair_evidence(ctx, fam, scenario, runs, best, method, kind, evaluated.memo)
    kinked_failed = None
    if evidence.witness is None and ctx.sensitivity is not None and fam.agent == agent:
        try:  # non-linear members of the class, for the lemma's check below
            _evaluate_kinked(fam, evaluated, scenario, changed_round=getattr(ctx, "changed_round", None))
        except AccountingError as exc:
            kinked_failed = f"worst-case search: the kinked costs of the class cannot be replayed: {exc}"
    if kinked_failed is not None:
        evidence = dataclasses.replace(evidence, reasons=(*evidence.reasons, kinked_failed))
    if evidence.witness is None:  # every pair evaluated is in the class the lemma covers: a round it moves further
        over = _lemma_exceeded(ctx, fam, evaluated, scenario, runs)
        if over is None and every is not None:  # the worst pair's rounds on every run
            over = _lemma_exceeded(ctx, fam, every, scenario, runs)
        if over is not None:
            evidence = dataclasses.replace(evidence, witness=over[0], reasons=(*evidence.reasons, over[1]))
    if evidence.witness is None and agent is not None and fam.agent == agent and evaluated.kinked:
        # a kinked pair (one agent's cost) with a larger profile than the linear pairs
        evidence = _kinked_profile_evidence(evidence, ctx, fam, scenario, runs, evaluated, best, objective)
    if evidence.witness is None and agent is not None:  # every other agent's pairs too (asyncdp.privacy.lemma_reach)
        from .lemma_reach import others_on_every_run, others_over_lemma
        evidence = others_over_lemma(evidence, ctx, fam, evaluated, scenario, runs, objective)
        evidence = others_on_every_run(evidence, ctx, fam, agent, evaluated, every, scenario, runs, objective)
    evidence = _probed(evidence, ctx, fam, scenario, evaluated, best,
                       extremes if fam.agent == agent else None)  # (another agent's pair: its own extremes)
    n_agents = scenario.problem.num_agents
    if agent is not None and n_agents - 1 > _OTHER_AGENTS:
        evidence = dataclasses.replace(evidence, reasons=(*evidence.reasons, (
            f"worst-case search: of the {n_agents - 1} agents the user's pair does not change, the extremal pairs "
            f"of agents {other_agents(n_agents, agent)} were evaluated (on {_OTHER_AGENT_RUNS} runs); the "
            "others' are not")))
    if other is not None:
        evidence = dataclasses.replace(evidence, reasons=(
            f"worst-case search: the claim is for a change of any agent's cost; agent {other.agent}'s extremal "
            f"pair {other.label!r} (evaluated on {_OTHER_AGENT_RUNS} runs) is worse than every pair of the "
            f"user's changed agent {agent}, and is the pair checked below", *evidence.reasons))
    if failed is None:
        return evidence
    partly = None if untested is None else (
        f"the sensitivity lemma of {_whose_lemma(ctx)} was tested against the extremal pairs of its adjacency class "
        "only (the search failed), so the bound composed with it is not trusted")
    return dataclasses.replace(evidence, reasons=(failed, *evidence.reasons),
                               doubt=evidence.doubt if evidence.doubt is not None else partly)


def _on_every_run(ctx: Any, fam: _Family, scenario: Scenario, runs: EngineRuns, best: CandidatePair,
                  objective: Any) -> tuple[CandidatePair, CandidateRuns | None]:
    """The worst pair evaluated on every engine run of the check, not only the search's first ones.

    The search ranks candidates on the first ``_CANDIDATE_RUNS`` runs; a rule whose sensitivity grows only
    on a rare event of the released values (say a neighbour's noise far in its tail, a few percent of the runs)
    shows it on none of them. So when the first runs do not refute the claim, the worst pair's constructed
    transcripts are replayed on every run the check made (one candidate's replay on them): their rounds are
    compared with the lemma (``_lemma_exceeded``, by the caller; for a claim with ``delta > 0`` the worst
    pair's own engine runs, :func:`~asyncdp.privacy.worst_pair.delta_evidence`, are a quarter of the budget at
    their first look), and for a pure claim, which one constructed transcript with loss above epsilon refutes
    (``_pair_evidence``), the pair's loss is taken over all of them.

    Returns:
        ``(pair, every)``: for a pure claim ``best`` evaluated on every run when that gives a larger loss (the run
        that gave it, an index into the check's runs: ``constructed_loss(runs, ..., max_runs=runs.runs)``
        reproduces it), else ``best``; and the runs it was evaluated on (their per-round losses), or ``None`` when
        it was not.
    """
    from accounting.errors import AccountingError

    if not math.isfinite(ctx.epsilon_claimed) or not math.isfinite(best.loss) \
            or _refutes(ctx, runs, best, scenario):  # (a refutation on the first runs stands as found)
        return best, None
    rows = fam.rows(runs, runs.runs)
    if len(rows) <= _CANDIDATE_RUNS:  # the search saw every run (or every distinct schedule) already
        return best, None
    every = CandidateRuns(runs, rows)
    try:
        found = _evaluate(fam, every, scenario, best.label, best.round_index, best.gradient, best.gradient_prime,
                          len(rows), objective, ctx.focus)
    except AccountingError:  # what the search found stays checked
        return best, None
    if ctx.delta_claimed != 0 or not found.loss > best.loss:
        return best, every
    return dataclasses.replace(best, loss=found.loss, run=found.run), every
