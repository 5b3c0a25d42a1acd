"""What the worst-case search's pairs prove about the claim: a witness, the lemma's comparison, the probes.

A pair's evidence on a pure claim (:func:`pure_evidence`) or a claim with ``delta > 0``
(:func:`~asyncdp.privacy.worst_pair.delta_evidence`, through ``_pair_evidence``); every evaluated pair's rounds
against the sensitivity lemma (``_lemma_exceeded``); a kinked pair ranked with the linear ones
(``_kinked_profile_evidence``); the rule's releases probed for additive noise (``_probed``); the runnable script
of the worst pair (:func:`pair_script`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..papers import GradientClass
from ..scenario import Scenario
from .behavior import EngineRuns, declared_noise, run_origin
from .candidate_evaluation import CandidatePair, _base_of, _Family
from .constructed import CandidateRuns
from .kinked_search import (KINKED_ALPHA_FRACTION, KINKED_PROFILE_MARGIN, _kinked_candidate, _reads_differences,
                            _sawtooth_scored)
from .pair_search import _rank
from .search_objective import _round_loss

__all__ = ["pair_script", "pure_evidence"]


def _budget(ctx: Any, runs: EngineRuns) -> np.ndarray:
    """``asyncdp.privacy.roundoff._roundoff_budget(ctx, runs)`` (the most round-off adds to each round's loss),
    computed once per check for its runs and kept in the context's cache (several steps of the search compare a
    loss with it)."""
    from . import roundoff

    cache = getattr(ctx, "cache", None)
    got = None if cache is None else cache.get("roundoff_budget")
    if got is not None and got[0] is runs:
        return got[1]
    value = roundoff._roundoff_budget(ctx, runs)
    if cache is not None:
        cache["roundoff_budget"] = (runs, value)
    return value


def _round_bounds(ctx: Any, horizon: int, agent: int | None) -> np.ndarray | None:
    """Per round, the largest constructed loss the accountant's sensitivity allows ``agent``'s releases (every
    agent's under round adjacency, ``agent`` ``None``), ``(T,)``.

    A constructed transcript pins the changed agent's messages to their noise-free values under one problem,
    so its loss in round ``t`` is ``sum ||shift||^2 / (2 s^2)`` over that round's Gaussian releases and
    ``sum ||shift||_1 / b`` over its Laplace ones (every agent's releases under round adjacency): at most
    the same sums with each shift at its lemma. ``None`` without a sensitivity.
    """
    if ctx.sensitivity is None:
        return None
    scope = ctx.ledger if agent is None else ctx.ledger.for_agent(agent)  # (another agent's own scales)
    out = np.zeros(horizon)
    for r in scope:
        if 1 <= r.round <= horizon:
            ratio = float(ctx.release_sensitivity(r)) / r.scale
            out[r.round - 1] += ratio * ratio / 2.0 if r.mechanism == "gaussian" else ratio
    return out


def _lemma_exceeded(ctx: Any, fam: _Family, evaluated: CandidateRuns, scenario: Scenario, runs: EngineRuns
                    ) -> tuple[dict[str, Any], str] | None:
    """A pair the search evaluated (every one is in the lemma's adjacency class) whose constructed loss in some
    round exceeds what the lemma allows that round (:func:`_round_bounds`, plus round-off): the lemma does not
    cover it. Exact (confidence 1). ``(witness, reason)`` of the largest excess, or ``None``."""
    bounds = _round_bounds(ctx, scenario.horizon, fam.agent)
    if bounds is None:
        return None
    slack = _budget(ctx, runs)
    allowed = bounds * (1 + 1e-9) + 1e-12 + slack
    worst = None
    entries = [(key, per_round) for key, (_, per_round) in list(evaluated.known.items())
               if key[0] == fam.agent and per_round.shape[-1] == allowed.size]
    # which entries exceed somewhere, every entry's rows at once (the same differences); only those are looked at
    flat = [k for k, (_, a) in enumerate(entries) if a.ndim == 2]
    over = np.ones(len(entries), dtype=bool)
    if flat:
        stacked = np.concatenate([np.asarray(entries[k][1], dtype=float) for k in flat])
        owner = np.repeat(np.asarray(flat, dtype=np.int64), [entries[k][1].shape[0] for k in flat])
        over[flat] = False
        over[owner[((stacked - allowed[None, :]) > 0).any(axis=1)]] = True
    for key, per_round in (e for e, o in zip(entries, over) if o):
        excess = np.asarray(per_round, dtype=float) - allowed[None, :]
        if not (excess > 0).any():
            continue
        r, t = (int(v) for v in np.unravel_index(int(np.nanargmax(excess)), excess.shape))
        ratio = float(per_round[r, t]) / bounds[t] if bounds[t] > 0 else math.inf
        if worst is None or ratio > worst[0]:
            worst = (ratio, key, r, t, float(per_round[r, t]))
    if worst is None:
        return None
    ratio, key, r, t, value = worst
    run = evaluated.rows[r] if r < len(evaluated.rows) else r
    kinked = evaluated.kinked.get(key)
    if kinked is not None:
        against = ("a kinked cost against its mirror image" if kinked.mirrored else "two kinked costs" if
                   kinked.kinked_first else "a linear against a kinked cost")
        witness = {"kind": "sensitivity", "against": "lemma", "method": "worst-case adjacency search (constructed "
                   f"transcript of a pair of the lemma's adjacency class, {against}; exact)",
                   "confidence": 1.0, "claim_form": getattr(ctx.claim_form, "form", None), "agent": fam.agent,
                   "round": t + 1, "changed_round": kinked.round_index, "pair": kinked.label,
                   "gradient": None if kinked.kinked_first else list(kinked.gradient),
                   "kink": {"axis": kinked.axis, "position": kinked.position, "scale": kinked.scale,
                            "width": kinked.width, "mirrored": kinked.mirrored,
                            "prime_position": kinked.prime_position},
                   "run": int(run), **run_origin(runs, int(run)), "value": value, "claimed": float(bounds[t]),
                   "ratio": ratio}
        whose = (f"agent {fam.agent} with" if fam.agent is not None else
                 f"round {kinked.round_index}'s loss")
        reason = (f"worst case: {whose} {kinked.describe()} ({kinked.label}; both in the paper's "
                  f"adjacency class) moves round {t + 1}'s releases by a constructed loss of {value:.6g} (engine "
                  f"run {run}'s schedule) > the {float(bounds[t]):.6g} the sensitivity lemma allows that round "
                  f"(ratio {ratio:.3g}; {_origin(ctx)})")
        return witness, reason
    round_index, g, gp = key[-3], np.frombuffer(key[-2]), np.frombuffer(key[-1])
    who = f"agent {fam.agent} with f(x)" if fam.agent is not None else f"round {round_index}'s loss f(x)"
    witness = {"kind": "sensitivity", "against": "lemma", "method": "worst-case adjacency search (constructed "
               "transcript of a pair of the lemma's adjacency class; exact)", "confidence": 1.0,
               "claim_form": getattr(ctx.claim_form, "form", None), "agent": fam.agent, "round": t + 1,
               "changed_round": round_index, "gradient": g.tolist(), "gradient_prime": gp.tolist(), "run": int(run),
               **run_origin(runs, int(run)), "value": value, "claimed": float(bounds[t]), "ratio": ratio}
    reason = (f"worst case: {who} = <g, x>, g = {_fmt(g)} vs g' = {_fmt(gp)} (in the paper's adjacency class) moves "
              f"round {t + 1}'s releases by a constructed loss of {value:.6g} (engine run {run}'s schedule) > the "
              f"{float(bounds[t]):.6g} the sensitivity lemma allows that round (ratio {ratio:.3g}; {_origin(ctx)})")
    return witness, reason


def _origin(ctx: Any) -> str:
    paper = ctx.paper
    if paper is None:
        return "no paper record"
    if paper.published_for(ctx.algorithm):
        return f"paper {paper.paper.name!r}"
    if paper.published:
        return f"paper {paper.paper.name!r}, inherited by the subclass {type(ctx.algorithm).__name__}"
    return f"paper {paper.paper.name!r}, the user's own lemma from {paper.origin}"


def _whose_lemma(ctx: Any) -> str:
    """The untrusted lemma's owner in words: a user's record, or a published one a subclass inherits."""
    paper = ctx.paper
    if paper.published:
        return (f"paper {paper.paper.name!r}, inherited by the subclass {type(ctx.algorithm).__name__} of its rule "
                "(which may change any step)")
    return f"the user's paper record {paper.paper.name!r}"


def _refutes(ctx: Any, runs: EngineRuns, c: CandidatePair, scenario: Scenario) -> bool:
    """Whether a candidate's evaluation points at a refutation: its objective above the claimed delta when the
    objective is a privacy profile (delta > 0, Gaussian noise:
    :func:`~asyncdp.privacy.search_objective.profile_objective`; to be certified by
    :func:`~asyncdp.privacy.worst_pair.delta_evidence`), else a constructed loss above epsilon (less what
    round-off can add)."""
    eps = ctx.epsilon_claimed
    if not math.isfinite(eps) or math.isnan(c.loss):
        return False
    alg = scenario.algorithm.bind(scenario.problem)
    gaussian = all(ch.mechanism != "laplace" for ch in declared_noise(alg, scenario.horizon).values())
    if ctx.delta_claimed > 0 and gaussian:
        return c.objective > ctx.delta_claimed
    return c.loss - float(_budget(ctx, runs).sum()) > eps * (1 + 1e-9) + 1e-12


def _kinked_profile_evidence(evidence: Any, ctx: Any, fam: _Family, scenario: Scenario, runs: EngineRuns,
                             evaluated: CandidateRuns, best: CandidatePair, objective: Any) -> Any:
    """``evidence``, or the delta evidence (:func:`~asyncdp.privacy.worst_pair.delta_evidence`) of the kinked pair of
    the class with the largest objective, when it refutes the claim.

    The kinked pairs (``_evaluate_kinked``) are compared with the lemma round by round
    (:func:`_lemma_exceeded`); a rule whose lemma is right may still claim less than they give (a claim calibrated
    for a smaller ``mu``). When some kinked pair moves a round's releases further than every linear pair moves
    any round's (by ``KINKED_PROFILE_MARGIN``: the rule reads the gradient at two points, as gradient tracking
    does), the sawtooth pairs (:func:`~asyncdp.privacy.kinked.sawtooth_pairs`, kinked along every step the agent
    takes, of the references of ``_kinked_candidates``) are replayed on the same runs too: they move the
    releases that far in every round. A pure claim: the pair with the largest constructed loss is a witness when
    that loss exceeds epsilon (as ``best`` is, :func:`pure_evidence`). A claim with ``delta > 0``: the best
    pair's objective on the first ``_KINKED_RUNS`` runs must exceed ``best``'s by
    ``KINKED_PROFILE_MARGIN`` (and a tenth of the claimed delta); then its own engine runs, importance sampling
    or thresholds certify (or not) as for ``best``, at ``KINKED_ALPHA_FRACTION`` of the search's error rate,
    the witness naming the kinks. A sawtooth pair that cannot be built or replayed is a reason.
    """
    from accounting.errors import AccountingError

    from .worst_pair import delta_evidence

    if not math.isfinite(ctx.epsilon_claimed):
        return evidence
    assert fam.agent is not None
    scored = [(key, pair, *evaluated.known[key]) for key, pair in evaluated.kinked.items()]
    if _reads_differences(fam, evaluated):
        try:
            scored += _sawtooth_scored(fam, evaluated, scenario)
        except AccountingError as exc:  # the other kinked pairs are still ranked (as a kinked pair's failure)
            evidence = dataclasses.replace(evidence, reasons=(
                *evidence.reasons, f"worst-case search: the sawtooth pairs of the class cannot be replayed: {exc}"))
    pure = ctx.delta_claimed == 0  # (the objective is then the largest loss: the witness is exact or none)
    floor = -math.inf if pure else max(KINKED_PROFILE_MARGIN * _rank(best)[0], ctx.delta_claimed / 10)
    top = None
    for _, pair, losses, per_round in scored:
        # as the linear pairs' (_evaluate): a per-iteration claim's loss is a run's largest round's
        scores = losses if ctx.focus is None else np.asarray(per_round)[:, ctx.focus]
        measure = losses if ctx.focus is None else _round_loss(per_round)
        if np.isnan(scores).any() or np.isnan(measure).any():  # (a pair its runs cannot score is left out)
            continue
        value = float(objective(scores))
        if value > floor and (top is None or value > top[0]):
            top = (value, pair, measure)
    if top is None:
        return evidence
    value, pair, losses = top
    k = int(np.argmax(losses))
    run = evaluated.rows[k] if k < len(evaluated.rows) else k
    figures: dict[str, Any] = {"worst_case_loss": float(losses[k]), "worst_case_pair": pair.label,
                               "worst_case_objective": value, "worst_case_delta_lower": None,
                               "worst_pair_script": None}
    base_witness = {"kind": "worst-case", "pair": pair.label, "agent": fam.agent, "gradient": None,
                    "gradient_prime": None, "kink": {"axis": pair.axis, "position": pair.position,
                                                     "positions": pair.positions, "scale": pair.scale,
                                                     "width": pair.width, "mirrored": pair.mirrored,
                                                     "prime_position": pair.prime_position},
                    "run": int(run), **run_origin(runs, int(run)), "engine": runs.engine, "seed": ctx.options.seed,
                    "loss": float(losses[k]), "objective": value, "script": None, "claim_form": ctx.form_name}
    pair_desc = (f"{pair.label}: agent {fam.agent} with {pair.describe()} (objective {value:.3g} on "
                 f"{len(losses)} runs; the linear pairs' {best.objective:.3g})")
    if pure:
        got = pure_evidence(ctx, runs, float(losses[k]), int(run), figures, base_witness, pair_desc)
        return evidence if got.witness is None else dataclasses.replace(
            evidence, witness=got.witness, figures={**evidence.figures, **got.figures},
            reasons=(*evidence.reasons, *got.reasons))
    p, q = _kinked_candidate(scenario, _base_of(evaluated, scenario)[1], fam.agent, pair).scenarios()
    got = delta_evidence(ctx, p, q, figures, base_witness, pair_desc, KINKED_ALPHA_FRACTION)
    if got.witness is None:
        return dataclasses.replace(evidence, reasons=(*evidence.reasons, *got.reasons))
    return dataclasses.replace(evidence, witness=got.witness, figures={**evidence.figures, **got.figures},
                               reasons=(*evidence.reasons, *got.reasons))


_PROBE_RUNS = 2
"""Engine runs on whose states each probed candidate's R step is probed (:func:`_probed`)."""


_PROBE_PAIRS = 16
"""At most this many candidates are probed: the worst pair, then the extremal pairs in their order (every one
of a one-agent class in up to 3 dimensions; a round class's are many more: the first ones)."""


def _probed(evidence: Any, ctx: Any, fam: _Family, scenario: Scenario, evaluated: CandidateRuns,
            best: CandidatePair, extremes: Sequence[tuple[str, int | None, Any, Any]] | None = None) -> Any:
    """``evidence`` with a doubt when the rule does not release ``mu + s z`` under the worst pair or an extremal
    pair of the class (:func:`asyncdp.privacy.additivity.probe_pairs`; at most :data:`_PROBE_PAIRS` of them, on
    :data:`_PROBE_RUNS` runs): every candidate's loss was computed from noise-free values, which assumes it.
    ``extremes``: ``fam``'s extremal pairs when the caller has them (else computed here)."""
    from accounting.errors import AccountingError

    from .additivity import probe_pairs

    # the worst pair's two problems; of the extremal pairs, each one's first problem (the list has both signs of
    # every direction, so every extremal cost is some pair's first)
    pairs: list[tuple[str, Any, Any]] = [(best.label, *_pair_scenarios(fam, scenario, best, evaluated.memo))]
    seen = {(best.round_index, np.asarray(best.gradient, dtype=float).tobytes())}
    base = _base_of(evaluated, scenario)[1]
    if extremes is None:
        extremes = fam.extremes(scenario, getattr(ctx, "changed_round", None))
    for label, t0, g, gp in extremes:
        key = (t0, np.asarray(g, dtype=float).tobytes())
        if key not in seen and len(pairs) < _PROBE_PAIRS:
            seen.add(key)  # (by its cost families: its problems are built only if the probe needs them)
            pairs.append((label, fam.candidate(base, scenario, t0, g, gp), None))
    try:
        finding = probe_pairs(evaluated.prefix(_PROBE_RUNS), pairs, ctx.algorithm, ctx.options.seed)
    except AccountingError as exc:
        finding = f"the candidates' runs cannot be replayed to probe the rule: {exc}"
    if finding is None:
        return evidence
    doubt = (f"worst-case search: a release of a pair of the adjacency class is not its noise-free value plus the "
             f"declared noise: {finding}; the constructed losses (noise-free values) assume it")
    return dataclasses.replace(evidence, reasons=(*evidence.reasons, doubt),
                               doubt=doubt if evidence.doubt is None else f"{evidence.doubt}; {doubt}")


def _pair_scenarios(fam: _Family, scenario: Scenario, c: CandidatePair, memo: dict[Any, Any] | None = None
                    ) -> tuple[Scenario, Scenario]:
    """``fam.scenarios`` of a found pair, built once per search (``memo``: :attr:`~asyncdp.privacy.constructed.CandidateRuns.memo`;
    the delta evidence and the probes both read the worst pair's two problems)."""
    if memo is None:
        return fam.scenarios(scenario, c.round_index, c.gradient, c.gradient_prime)
    key = ("pair scenarios", fam.agent, id(fam.cls), id(scenario), c.round_index, c.gradient, c.gradient_prime)
    got = memo.get(key)
    if got is None or got[0] is not scenario or got[1] is not fam.cls:
        got = memo[key] = (scenario, fam.cls, fam.scenarios(scenario, c.round_index, c.gradient, c.gradient_prime))
    return got[2]


def _pair_evidence(ctx: Any, fam: _Family, scenario: Scenario, runs: EngineRuns, best: CandidatePair, method: str,
                   kind: Any, memo: dict[Any, Any] | None = None) -> Any:
    """:func:`~asyncdp.privacy.worst_case.search_worst_case`'s evidence of the worst pair found, ``best`` (its
    witness, if it refutes the claim)."""
    from .evidence import Evidence
    from .worst_pair import delta_evidence

    agent = best.agent  # the changed agent's, or another agent's worse pair (``_other_agents``)
    script = pair_script(ctx.options.script, best, ctx.options.seed)
    figures: dict[str, Any] = {"worst_case_loss": best.loss, "worst_case_pair": best.label,
                               "worst_case_objective": best.objective, "worst_case_delta_lower": None,
                               "worst_pair_script": script}
    eps = ctx.epsilon_claimed
    who = f"agent {agent} with f(x)" if agent is not None else f"round {best.round_index}'s loss f(x)"
    pair_desc = f"{best.label}: {who} = <g, x>, g = {_fmt(best.gradient)} vs g' = {_fmt(best.gradient_prime)}"
    base_witness = {"kind": "worst-case", "pair": best.label, "agent": agent, "gradient": list(best.gradient),
                    "gradient_prime": list(best.gradient_prime), "run": best.run,
                    **run_origin(runs, best.run or 0), "engine": runs.engine, "seed": ctx.options.seed,
                    "loss": best.loss, "objective": best.objective, "script": script, "claim_form": ctx.form_name}
    if agent is None:
        base_witness["round"] = best.round_index
    if not math.isfinite(eps):
        return Evidence(method, kind, figures)
    if ctx.delta_claimed == 0:
        found = pure_evidence(ctx, runs, best.loss, best.run, figures, base_witness, pair_desc)
        return found if found.witness is not None else _at_released_scale(ctx, fam, scenario, runs, best, found,
                                                                         base_witness, pair_desc, memo)
    p, q = _pair_scenarios(fam, scenario, best, memo)
    return delta_evidence(ctx, p, q, figures, base_witness, pair_desc,
                          1.0 - KINKED_ALPHA_FRACTION if _kinked_may_follow(ctx, fam) else 1.0)


def _at_released_scale(ctx: Any, fam: _Family, scenario: Scenario, runs: EngineRuns, best: CandidatePair,
                       found: Any, base_witness: dict[str, Any], pair_desc: str, memo: dict[Any, Any] | None) -> Any:
    """``found`` (the pair's evidence on a pure claim, no witness), or a witness when noise conformance found the
    released Laplace noise smaller than declared (:data:`~asyncdp.privacy.released_scale.SCALE_BOUNDS`) and the
    pair's constructed transcript on run ``best.run``'s schedule has a loss above epsilon at the upper confidence
    bounds of the released scales (:func:`~asyncdp.privacy.released_scale.scaled_constructed_losses`)."""
    from .released_scale import SCALE_BOUNDS, scaled_constructed_losses

    got = getattr(ctx, "cache", {}).get(SCALE_BOUNDS)
    if got is None or best.run is None:
        return found
    p, q = _pair_scenarios(fam, scenario, best, memo)
    losses = scaled_constructed_losses(ctx, p, q, best.agent, runs, [best.run], got)
    eps = ctx.epsilon_claimed
    if losses is None or not float(losses[0]) > eps * (1 + 1e-9) + 1e-12:
        return found
    loss = float(losses[0])
    witness = {**base_witness, "loss": loss, "confidence": 1.0 - got.error, "released_scale_upper": {
        c: float(np.nanmax(u)) for c, u in got.scale_upper.items()}, "method": _SEARCH_TRANSCRIPT.format(
        "its loss at upper confidence bounds of the released (smaller than declared) Laplace scales above epsilon, as "
        "is every transcript near it")}
    return dataclasses.replace(found, witness=witness, reasons=(*found.reasons, (
        f"worst case: {pair_desc} has a constructed transcript (engine run {best.run}'s realized schedule) with "
        f"privacy loss >= {loss:.6g} > epsilon {eps:.6g} at the released noise scales (upper confidence bounds from "
        f"the residuals, confidence {1 - got.error:.6g}: noise conformance found the noise smaller than declared); "
        "every transcript near it has loss > epsilon, a set of positive probability")))


def _kinked_may_follow(ctx: Any, fam: _Family) -> bool:
    """Whether the search may certify a kinked pair after the worst linear pair (:func:`_kinked_profile_evidence`,
    claims with ``delta > 0``): a lemma to check, one agent's cost of a gradient class, the user's changed agent."""
    return (ctx.sensitivity is not None and ctx.changed_agent is not None and fam.agent == ctx.changed_agent
            and isinstance(fam.cls, GradientClass))


_SEARCH_TRANSCRIPT = ("worst-case adjacency search (constructed transcript of the pair on an engine run's realized "
                     "schedule: {}; exact)")
"""The witness method of :func:`pure_evidence` for the search's pair; ``{}`` takes why the transcript refutes."""


def pure_evidence(ctx: Any, runs: EngineRuns, loss: float, run: int | None, figures: dict[str, Any],
                   base_witness: dict[str, Any], pair_desc: str, transcript: str = _SEARCH_TRANSCRIPT) -> Any:
    """The evidence of a pair on a pure claim: a witness when its constructed loss ``loss`` (on engine run
    ``run``'s realized schedule) exceeds epsilon by more than round-off can add (``_budget``), else none. The
    witness's method is ``transcript`` with why the transcript refutes the claim in its ``{}``.

    When every noisy release is Gaussian, any constructed loss beyond round-off is a witness: some release
    then moves by a shift ``d != 0``, and moving that release (the last such) by ``k`` along ``d`` adds
    ``k ||d|| / s^2`` to its loss while every later constructed release keeps a loss ``>= 0``, so the loss
    exceeds every epsilon near such a transcript (Gaussian noise is never pure DP)."""
    from .evidence import Evidence

    method, kind, eps = "worst-case adjacency search", "constructed worst case", ctx.epsilon_claimed
    slack = float(_budget(ctx, runs).sum())  # the most round-off can add to a constructed loss
    gaussian = all(r.mechanism == "gaussian" for r in ctx.ledger if r.scale > 0)
    if gaussian and math.isfinite(eps) and loss - slack > 1e-9 and not loss - slack > eps * (1 + 1e-9) + 1e-12:
        witness = {**base_witness, "confidence": 1.0, "method": transcript.format(
            "a Gaussian release moves with the data, and moving it along its shift makes the exact loss exceed "
            "any epsilon")}
        return Evidence(method, kind, figures, witness=witness, reasons=(
            f"worst case: {pair_desc} has a constructed transcript (engine run {run}'s realized schedule) "
            f"with privacy loss {loss:.6g} beyond round-off ({slack:.3g}) on Gaussian releases only: a released "
            f"value moves with the data, and transcripts moved along that shift have loss > epsilon {eps:.6g} "
            "(Gaussian noise is never pure DP), a set of positive probability",))
    if loss - slack > eps * (1 + 1e-9) + 1e-12:
        witness = {**base_witness, "confidence": 1.0, "method": transcript.format(
            "its exact loss above epsilon, as is every transcript near it")}
        return Evidence(method, kind, figures, witness=witness, reasons=(
            f"worst case: {pair_desc} has a constructed transcript (engine run {run}'s realized schedule) "
            f"with privacy loss {loss:.6g} > epsilon {eps:.6g}; every transcript near it has loss > "
            "epsilon, a set of positive probability",))
    return Evidence(method, kind, figures)


def _fmt(v: Sequence[float]) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in v) + ")"


def pair_script(script_path: str | Path | None, pair: CandidatePair, seed: int) -> str:
    """A runnable Python script that rebuilds the worst pair from the user's script.

    Args:
        script_path: the user's scenario script (``None``: the script says where to plug the scenario in).
        pair: the worst pair.
        seed: the check's seed.

    Returns:
        The script's text.

    Example:
        >>> text = pair_script("s.py", CandidatePair("x", 0, (1.0, 0.0), (-1.0, 0.0), 2.0, 3), 0)
        >>> "candidate_scenarios(base, 0, [1.0, 0.0], [-1.0, 0.0])" in text
        True
        >>> text = pair_script("s.py", CandidatePair("x", None, (1.0, 0.0), (-1.0, 0.0), 2.0, 3, round_index=2), 0)
        >>> "round_scenarios(base, 2, [1.0, 0.0], [-1.0, 0.0])" in text
        True
    """
    source = (f"from asyncdp import load_script\n\nbase = load_script({str(Path(script_path).resolve())!r}, "
              "names=('scenario', 'adjacent'))['scenario']\n") if script_path is not None else \
        "base = ...  # the scenario that was checked\n"
    g, gp = list(pair.gradient), list(pair.gradient_prime)
    if pair.agent is None:
        what = (f"round {pair.round_index}'s loss is linear, f(x) = <g, x> under `scenario` and <g', x> under\n"
                "`adjacent` (round adjacency of online losses); every other round's loss")
        build, call = "round_scenarios", f"round_scenarios(base, {pair.round_index}, {g!r}, {gp!r})"
    else:
        what = (f"agent {pair.agent}'s cost is linear, f(x) = <g, x> under `scenario` and <g', x> under\n"
                "`adjacent`; every other cost")
        build, call = "candidate_scenarios", f"candidate_scenarios(base, {pair.agent}, {g!r}, {gp!r})"
    return f'''"""The worst adjacent pair found by the privacy check (asyncdp.privacy.worst_case).

Pair: {pair.label}; {what} and the algorithm (bound to the original problem: same noise, same steps) are
kept. Constructed-transcript privacy loss {pair.loss:.6g} on the realized schedule of engine run {pair.run}
(check seed {seed}).

Run:  asyncdp privacy check THIS_FILE.py
"""

{source}
from asyncdp.privacy.candidate_pairs import {build}

scenario, adjacent = {call}
'''
