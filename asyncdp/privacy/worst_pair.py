"""The worst pair's verdict on a claim with ``delta > 0``: exact profiles, importance sampling, sequential runs.

The worst-case search (:mod:`asyncdp.privacy.worst_case`) constructs the
pair of the adjacency class with the largest privacy profile; this module
decides whether that pair refutes an ``(epsilon, delta)`` claim (or a Rényi
or zCDP claim through its conversion), from the strongest evidence that
applies (:func:`delta_evidence`).

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> from asyncdp.privacy.worst_case import search_worst_case
    >>> e = search_worst_case(*small_example(search_examples=2))
    >>> e.witness is None  # a pure claim of a gradient class: decided by the constructed transcript, not here
    True
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from ..scenario import Scenario
from .behavior import EngineRuns, declared_noise, replay_runs

__all__ = ["delta_evidence"]


def delta_evidence(ctx: Any, p: Scenario, q: Scenario, figures: dict[str, Any], base_witness: dict[str, Any],
                   pair_desc: str, fraction: float = 1.0) -> Any:
    """Whether the worst pair ``(p, q)`` refutes a claim with ``delta > 0``: exact profiles, importance sampling, runs.

    A value class's pairs (:mod:`asyncdp.privacy.value_class`) come here with pure claims too: the exact
    profile's ``delta(epsilon) > 0`` refutes them, as does a certified positive delta of the thresholds.

    The pair's engine runs (sides 2, 3, ... of the seed layout, one per look)
    follow an :class:`accounting.sequential.SequentialPlan`: looks at
    ``R/4, R/2, R`` runs (``R = options.runs``, the budget), stopping as soon as
    the evidence decides. In order, the first that refutes is reported:

    1. the exact profile of the pair's realized shifts on the first look's runs
       (``asyncdp.privacy.profiles.pair_profile``): exact under lockstep
       timing (confidence 1; a Renyi witness resting on escort draws, 1 - its share); under deadline or asynchronous timing, where the
       shifts are fixed given the schedule, the average of the exact
       per-schedule profiles over the sampled schedules;
    2. importance sampling (Gaussian noise, broadcast or unicast;
       ``asyncdp.privacy.profiles.scheduled_tilted_bound``): one tilted
       transcript on each realized schedule of the adjacent scenario's engine
       runs (the same timing model, drawn independently of the runs the search
       chose the pair on), exact likelihood ratios; valid when the shifts vary
       (a projection active on some runs);
    3. threshold events on the exact replay losses of the pair's engine runs,
       at every look of the plan (:meth:`accounting.sequential.SequentialPlan.decide`);
    4. for a Rényi or zCDP claim of a rule whose releases are not all Gaussian
       (no escort or tilted draws), a lower bound on the pair's divergence
       from the exact replay losses of the whole budget of runs
       (:func:`accounting.profiles.loss_renyi_lower`, truncated at the pure
       composition of the changed agent's releases): valid when the shifts
       vary (a projection active on some runs), where no exact profile exists.

    The check's per-method share ``alpha_share`` (times ``fraction``: the search
    may certify a second pair, and splits the share between the two in
    advance) is split evenly over the statistical tests fixed in advance (the schedule average unless the
    timing is lockstep without losses, where with Gaussian noise the escort draws of a divergence witness take
    its place, importance sampling where it applies, the thresholds, the divergence from losses), so together they err with probability at
    most ``alpha_share``.

    Args:
        ctx: the check's context.
        p, q: the worst pair's scenarios.
        figures: the evidence's figures so far (updated: ``worst_case_delta_lower``, ``worst_case_runs``).
        base_witness: the witness fields of the pair.
        pair_desc: the pair in words, for the reasons.
        fraction: the part of ``alpha_share`` this pair's tests spend, in ``(0, 1]``.

    Returns:
        Evidence ``"worst-case adjacency search"``.
    """
    from accounting.coverage import realized_shifts
    from accounting.errors import AccountingError
    from accounting.sequential import SequentialPlan

    from .behavior import _lockstep_lossless, run_engine
    from .evidence import Evidence
    from .profiles import escort_draws_renyi, pair_profile, realized_mu, scheduled_tilted_bound

    method, kind = "worst-case adjacency search", "constructed worst case"
    eps, delta = ctx.epsilon_claimed, ctx.delta_claimed
    budget = ctx.options.runs
    shared = _lockstep_lossless(p)
    mechanisms = [ch.mechanism for ch in declared_noise(p.algorithm.bind(p.problem), p.horizon).values()]
    gaussian = all(m != "laplace" for m in mechanisms)
    # the exact profile spends a share on the schedule average, or under lockstep with Gaussian noise on the
    # escort draws a Renyi witness rests on (profiles.escort_renyi_lower); a Renyi or zCDP claim of the whole run
    # one more on the escort draws per schedule where no exact profile exists (profiles.escort_draws_renyi)
    divergence = gaussian and ctx.focus is None and getattr(ctx.claim_form, "form", None) in ("renyi", "zcdp")
    # a Laplace rule's Renyi or zCDP claim of the whole run: one more on the divergence bound from the exact replay
    # losses of the whole budget (accounting.profiles.loss_renyi_lower, truncated at the releases' pure composition,
    # which a Gaussian release makes infinite), valid when shifts vary
    loss_divergence = (not gaussian and "gaussian" not in mechanisms and ctx.focus is None
                       and ctx.sensitivity is not None
                       and getattr(ctx.claim_form, "form", None) in ("renyi", "zcdp"))
    tests = (1 + (0 if shared and not gaussian else 1) + (1 if gaussian else 0) + (1 if divergence else 0)
             + (1 if loss_divergence else 0))
    share = ctx.options.alpha_share * fraction / tests
    plan = SequentialPlan(epsilon=eps, delta_claimed=delta, confidence=1.0 - share, budget=max(2, budget),
                          first=max(2, min(budget, max(2, budget // 4))))
    figures["worst_case_runs_budget"] = plan.budget

    def simulate(look: int, have: EngineRuns | None) -> tuple[EngineRuns, EngineRuns]:
        """Every run so far, and the look's new runs."""
        n = plan.looks[look] - (0 if have is None else have.runs)
        more = run_engine(p, n, seed=ctx.options.seed, side=2 + look, engine=ctx.options.engine)
        if have is None:
            return more, more
        rows = None if have.batch_rows is None or more.batch_rows is None else have.batch_rows + more.batch_rows
        return EngineRuns(more.engine, have.seeds + more.seeds,
                          {c: np.concatenate([have.messages[c], more.messages[c]]) for c in have.messages},
                          tuple(have.schedules) + tuple(more.schedules), have.unicast, batch_rows=rows), more

    def replayed(runs: EngineRuns) -> Any:
        return replay_runs(runs, p, q, algorithm=p.algorithm)

    worst_runs = simulate(0, None)[0]
    figures["worst_case_runs"] = worst_runs.runs
    try:
        out = replayed(worst_runs)
    except AccountingError as exc:
        return Evidence(method, kind, figures, reasons=(f"worst-case search: cannot replay the worst pair: {exc}",))
    assert out.losses is not None and out.per_round is not None
    # the residuals under q come with the replay (its residuals_prime: what a replay with q's recursion as the
    # rule computes, by the same operations), so the shifts need no second replay
    assert out.residuals_prime is not None
    try:
        shifts: Any = realized_shifts(out, SimpleNamespace(residuals=out.residuals_prime))
    except AccountingError as exc:
        shifts = exc
    from .lemma_reach import worst_pair_over_lemma
    over = worst_pair_over_lemma(ctx, shifts, p, base_witness, worst_runs, pair_desc)
    if over is not None:  # a release moved further than the lemma on one of these runs (asyncdp.privacy.lemma_reach)
        return Evidence(method, kind, figures, witness=over[0], reasons=(over[1],))
    exact = pair_profile(ctx, shifts, p, worst_runs, schedule_confidence=1.0 - share, adjacent=q, escort_error=share)
    figures["worst_case_profile"] = exact.reason
    common = {**base_witness, "runs": worst_runs.runs, "runs_budget": plan.budget, "profile": exact.reason}
    if exact.certain:
        figures["worst_case_delta_lower"] = 1.0
        witness = {**common, "method": "exact: a noise-free release differs", "confidence": 1.0,
                   "claim_form": ctx.form_name, "epsilon": eps, "delta_lower": 1.0}
        return Evidence(method, kind, figures, witness=witness, reasons=(f"worst case: {pair_desc}: {exact.reason}",))
    if exact.refutation is not None and exact.refutation.refuted:
        r = exact.refutation
        figures["worst_case_delta_lower"] = r.delta_witness
        witness = {**common, "method": r.method, "confidence": r.confidence, "claim_form": r.form,
                   "epsilon": r.epsilon, "delta_lower": r.delta_witness, "delta_allowed": r.delta_allowed,
                   "delta_meaning": r.delta_meaning}
        if r.alpha is not None:  # an exact Rényi divergence above the claim: its order and the two divergences
            witness.update(alpha=r.alpha, renyi_witness=r.renyi_witness, renyi_allowed=r.renyi_allowed)
        return Evidence(method, kind, figures, witness=witness, reasons=(
            f"worst case: {pair_desc}: {exact.reason}; {r.reason}",))
    if divergence and exact.refutation is None:  # no exact profile: the escort's own draws, one per schedule
        found, why = escort_draws_renyi(ctx, p, q, ctx.engine_runs(1), shifts, confidence=1.0 - share)
        if found is not None and found.refuted:
            figures["worst_case_renyi_lower"] = found.renyi_witness
            witness = {**common, "method": found.method, "confidence": found.confidence, "claim_form": found.form,
                       "epsilon": None, "delta_lower": None, "delta_allowed": None, "delta_meaning": found.delta_meaning,
                       "alpha": found.alpha, "renyi_witness": found.renyi_witness,
                       "renyi_allowed": found.renyi_allowed}
            return Evidence(method, kind, figures, witness=witness, reasons=(
                f"worst case: {pair_desc}: {exact.reason}; {found.reason}",))
        if why is not None:
            figures["worst_case_escort"] = why
    if gaussian:
        bound, why = scheduled_tilted_bound(ctx, p, q, ctx.engine_runs(1), confidence=1.0 - share,
                                            seed=ctx.options.seed + 7, mu=realized_mu(shifts, p, ctx.focus),
                                            pilot=worst_runs)
        if bound is not None and bound.lower > delta:
            figures["worst_case_delta_lower"] = float(bound.lower)
            n = bound.samples
            witness = {**common, "delta_lower": float(bound.lower), "epsilon": eps, "importance_samples": n,
                       "method": "importance sampling: one transcript of the worst pair per realized schedule of "
                       f"{n} engine runs, drawn under an exponential tilt toward the high-loss tail, exact likelihood "
                       "ratios, empirical Bernstein",
                       "confidence": float(bound.confidence), "claim_form": ctx.form_name}
            return Evidence(method, kind, figures, witness=witness, reasons=(
                f"worst case: {pair_desc}: importance sampling over {n} tilted transcripts (one per realized "
                f"schedule) certifies delta(epsilon={eps:.6g}) >= {bound.lower:.3g} > claimed delta {delta:.3g} "
                f"(confidence {bound.confidence:.6g}; {exact.reason})",))
        if why is not None:
            figures["worst_case_importance"] = why
    top = np.finfo(float).max
    look = 0
    per_round = out.per_round
    while True:
        losses = per_round[:, ctx.focus] if ctx.focus is not None else per_round.sum(axis=1)
        step = plan.decide(np.nan_to_num(losses, posinf=top, neginf=-top))
        figures["worst_case_runs"] = worst_runs.runs
        figures["worst_case_delta_lower"] = step.bound.lower
        if step.decision != "continue":
            break
        look += 1
        worst_runs, more = simulate(look, worst_runs)
        try:  # each run's loss is its own: the runs of the earlier looks are not replayed again
            out = replayed(more)
        except AccountingError as exc:
            return Evidence(method, kind, figures, reasons=(f"worst-case search: cannot replay the worst pair: {exc}",))
        assert out.losses is not None and out.per_round is not None
        per_round = np.concatenate([per_round, out.per_round])
    divergence_form = ctx.focus is None and getattr(ctx.claim_form, "form", None) in ("renyi", "zcdp")
    found_losses = None
    # under lockstep an exact profile's divergences are exact: the losses could not bound them closer
    if step.decision != "refuted" and loss_divergence and not (shared and exact.refutation is not None):
        while worst_runs.runs < plan.budget:  # the bound rests on the whole budget: a sample size fixed in advance
            look += 1
            worst_runs, more = simulate(look, worst_runs)
            try:
                out = replayed(more)
            except AccountingError as exc:
                return Evidence(method, kind, figures,
                                reasons=(f"worst-case search: cannot replay the worst pair: {exc}",))
            assert out.per_round is not None
            per_round = np.concatenate([per_round, out.per_round])
        found = found_losses = _losses_renyi(ctx, per_round.sum(axis=1), base_witness["agent"], 1.0 - share)
        figures["worst_case_runs"] = worst_runs.runs
        if found.refuted:
            figures["worst_case_renyi_lower"] = found.renyi_witness
            witness = {**common, "runs": worst_runs.runs, "method": found.method, "confidence": found.confidence,
                       "claim_form": found.form, "epsilon": None, "delta_lower": None, "delta_allowed": None,
                       "delta_meaning": found.delta_meaning, "alpha": found.alpha,
                       "renyi_witness": found.renyi_witness, "renyi_allowed": found.renyi_allowed}
            return Evidence(method, kind, figures, witness=witness, reasons=(
                f"worst case: {pair_desc}: over {worst_runs.runs} engine runs, {found.reason}",))
    if step.decision != "refuted":
        note = () if exact.note is None else (f"worst case: {pair_desc}: {exact.note}",)
        if exact.note is None and exact.refutation is not None and divergence_form:
            # what the exact profile found for a Renyi or zCDP claim (e.g. order statistics over the sampled
            # schedules just short of the claim): the engine runs' delta speaks of its conversion only
            note = (f"worst case: {pair_desc}: {exact.reason}; {exact.refutation.reason}",)
        if found_losses is not None:
            note += (f"worst case: {pair_desc}: over {worst_runs.runs} engine runs, {found_losses.reason}",)
        return Evidence(method, kind, figures, reasons=(f"worst case: {pair_desc}: engine runs: {step.reason}",) + note)
    witness = {**common, "runs": worst_runs.runs, "delta_lower": step.bound.lower,
               "method": "engine runs of the worst pair, exact replay losses, thresholds lower bound on "
               "delta(epsilon) (Clopper-Pearson counts of threshold events, union bound over a fixed grid), "
               f"sequential looks at {', '.join(map(str, plan.looks))} runs",
               "confidence": 1.0 - share, "claim_form": ctx.form_name}
    return Evidence(method, kind, figures, witness=witness, reasons=(
        f"worst case: {pair_desc}: over {worst_runs.runs} engine runs (of a budget of {plan.budget}), "
        f"delta(epsilon={eps:.6g}) >= {step.bound.lower:.3g} > claimed delta {delta:.3g} "
        f"(confidence {1.0 - share:.6g})",))


LOSS_ZCDP_ORDERS: tuple[float, ...] = (1.5, 2.0, 4.0, 8.0)
"""The orders at which a zCDP claim is compared with divergences bounded from replay losses (fixed in advance)."""


def _losses_renyi(ctx: Any, losses: np.ndarray, agent: int, confidence: float) -> Any:
    """:func:`accounting.refutation.refute` of the Renyi or zCDP claim by lower bounds on the pair's divergences
    from the exact losses of its engine runs (:func:`accounting.profiles.loss_renyi_lower`), truncated at the pure
    composition of ``agent``'s releases with the accountant's own sensitivity."""
    from accounting.composition import basic_composition
    from accounting.profiles import loss_renyi_lower
    from accounting.refutation import refute

    form = ctx.claim_form
    orders = [form.alpha] if form.form == "renyi" else list(LOSS_ZCDP_ORDERS)
    cap = basic_composition(ctx.ledger.for_agent(agent), ctx.release_sensitivity)
    if not (np.isfinite(cap) and cap > 0) or np.isnan(losses).any():
        return refute(form, alphas=())
    return refute(form, renyi_bounds=loss_renyi_lower(losses, orders, cap_epsilon=cap, confidence=confidence))
