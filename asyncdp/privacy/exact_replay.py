"""The exact replay step: every engine run's privacy loss on its realized schedule, audited.

``replay_exactly`` reads the scenario's engine runs replayed under both problems
(:meth:`~asyncdp.privacy.context.CheckContext.realized_replay`): a pure claim is compared with each run's loss,
a claim with delta > 0 with :func:`accounting.auditors.plrv_audit`'s certified lower bound on
``delta(epsilon)``, after the pair's exact profile where its shifts are fixed
(``asyncdp.privacy.profiles.pair_profile``); a per-iteration claim's other rounds are audited too.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from accounting import auditors
from accounting.errors import AccountingError

from .behavior import declared_noise, run_origin
from .conformance import _ranges
from .context import CheckContext, ScenarioPair
from .evidence import Evidence
from .released_scale import claimed_losses

__all__ = ["replay_exactly"]


def replay_exactly(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Exact privacy loss of every engine run on its realized schedule, audited.

    Works for every timing and link model (the schedule does not depend on
    the data or the noise: :mod:`accounting.scheduled_replay`), broadcast and
    unicast, any number of channels. Pure claims: any loss above epsilon is a
    witness (exact, given the declared noise that ``conformance.check_conformance``
    tests). Claims with delta > 0: :func:`accounting.auditors.plrv_audit`'s
    certified lower bound on ``delta(epsilon)`` at level ``alpha_share`` from
    threshold events ``{L > eps'}`` over a grid fixed before looking at the
    losses, each counted with a one-sided Clopper–Pearson bound (union bound
    over the grid; :func:`accounting.delta_bounds.threshold_delta_lower`):
    ``delta(eps) >= P[L > eps'] (1 - e^(eps - eps'))`` holds for every
    ``eps' >= eps``, so the largest certified product is a lower bound.
    Before that, a pair whose realized shifts are the same on every run of
    one schedule (lockstep) gets its exact profile
    (:func:`~asyncdp.privacy.profiles.pair_profile`): a delta above the
    claim there is a witness with no sampling error (Laplace noise, or a
    per-iteration claim); with Gaussian releases its divergence above the
    claim, less the margin of escort draws at half the share (the thresholds
    get the other half; :func:`~asyncdp.privacy.profiles.escort_renyi_lower`),
    refutes a Rényi, zCDP or pure claim (a Gaussian shift has
    ``D_alpha = alpha mu^2 / 2``, unbounded in ``alpha``, while its losses
    above epsilon are far too rare for the runs to show one). A
    per-iteration claim audits the focus round's loss; a pure one bounds
    every round's loss, so the largest round's (NaN rounds left out) is compared with epsilon
    (a round other than the focus round may release what the ledger does not
    hold, e.g. a noise-free channel from a later round on); with delta > 0
    every other round is audited too (:func:`_other_rounds_witness`, at
    :data:`OTHER_ROUNDS_FRACTION` of the audit's share), and one with an
    infinite loss in some run that gives no witness is a doubt.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"exact replay"`` (realized behavior) with figures
        ``replay_max_loss``, ``replay_exceed_fraction``, ``replay_runs``
        (``None``/0 when the runs cannot be replayed); witness ``{"kind":
        "replay", "run", "run_seed", "loss", ...}``; a doubt when some run's loss is undefined (NaN: a
        noise-free value is NaN under one problem), which the audit cannot count (it would read 0).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = replay_exactly(*small_example())
        >>> e.figures["replay_runs"], e.figures["replay_max_loss"] <= 1.0 + 1e-9, e.checked_against
        (200, True, 'realized behavior')
    """
    evidence = _replay_exactly(pair, ctx)
    replay = ctx.realized_replay()
    if isinstance(replay, AccountingError) or replay.losses is None:
        return evidence
    if ctx.focus is not None and ctx.delta_claimed > 0 and evidence.witness is None and replay.per_round is not None:
        evidence = _with_doubt(evidence, _unaudited_infinite_rounds(ctx, replay.per_round))
    undefined = int(np.isnan(replay.losses).sum())
    if not undefined:
        return evidence
    r = int(np.flatnonzero(np.isnan(replay.losses))[0])
    t = int(np.flatnonzero(np.isnan(replay.per_round[r]))[0]) + 1 if replay.per_round is not None else None
    doubt = (f"replay: {undefined} of {replay.losses.size} runs have an undefined (NaN) privacy loss (first: run {r}"
             f"{'' if t is None else f', round {t}'}): a noise-free value is NaN under one problem, so the release's "
             "density is not the declared noise's; those runs are not audited")
    return _with_doubt(evidence, doubt)


def _with_doubt(evidence: Evidence, doubt: str | None) -> Evidence:
    """``evidence`` with one more doubt (and its reason); unchanged for ``None``."""
    if doubt is None:
        return evidence
    return dataclasses.replace(evidence, reasons=(*evidence.reasons, doubt),
                               doubt=doubt if evidence.doubt is None else f"{evidence.doubt}; {doubt}")


OTHER_ROUNDS_FRACTION = 0.5
"""The part of the exact replay's audit share that an approximate per-iteration claim's rounds besides the focus
round spend (:func:`_other_rounds_witness`, Bonferroni over them); the focus round's audit keeps the rest."""


def _other_rounds_witness(ctx: CheckContext, per_round: np.ndarray, runs: Any, error: float
                          ) -> tuple[dict[str, Any], str] | None:
    """A certified witness against an approximate per-iteration claim from a round other than the focus round.

    The claim (``claim_level = "iteration"``, ``delta > 0``): for every past ``h`` (released transcript and schedule
    of rounds ``1..t-1``), the laws ``P_t(. | h)`` and ``P'_t(. | h)`` of round ``t``'s releases are ``(epsilon,
    delta)``-close. The replay's round-``t`` loss ``L_t = log dP_t(. | h) / dP'_t(. | h)`` at the release
    (``+inf`` where ``P'_t(. | h)`` gives it probability 0) has ``E[(1 - e^(epsilon - L_t))_+ | h] =
    delta_h(epsilon) <= delta`` for every ``h`` (the hockey-stick divergence; the term is 1 on the set
    ``E_h`` of releases ``P'`` cannot make, so ``P_t(E_h | h) <= delta``). Averaged over the pasts of ``P``'s runs,
    ``E[(1 - e^(epsilon - L_t))_+] <= delta`` too; the runs are i.i.d. under ``P``, so
    :func:`accounting.auditors.plrv_audit`'s threshold bound (``delta >= P[L_t > epsilon'] (1 - e^(epsilon -
    epsilon'))`` for each ``epsilon' >= epsilon``, one-sided Clopper-Pearson counts, union bound over a fixed
    grid) of one round's losses above ``delta`` refutes the claim; an infinite loss counts in every threshold
    event, so a fraction of runs with ``L_t = +inf`` whose lower bound exceeds ``delta`` (a noise-free release
    that moves with the data) is such a witness. Each of the ``T - 1`` rounds runs at ``error / (T - 1)``
    (Bonferroni), so a true claim gets this witness with probability at most ``error``; a round whose losses all
    stay at most ``epsilon`` has a zero bound and is not audited. A NaN loss (undefined) counts as no event.

    The replay reads a noise-free release that differs under ``P'`` as an infinite loss; that is evidence about
    the data only because the check refuses a rule whose R or U step draws randomness of its own into a release
    the replay does not explain (:meth:`~asyncdp.privacy.context.CheckContext.check_run_deterministic`; its fresh
    draws would otherwise read as such a shift).

    Args:
        ctx: the shared context (``focus`` set, ``delta_claimed > 0``).
        per_round: the ``(R, T)`` per-round losses (less the round-off budget).
        runs: the engine runs (:class:`~asyncdp.privacy.behavior.EngineRuns`), for the witness's origin.
        error: the error rate of the rounds together.

    Returns:
        ``(witness, reason)`` for the round with the largest certified delta above the claim, or ``None``.
    """
    eps, delta, focus = ctx.epsilon_claimed, ctx.delta_claimed, ctx.focus
    others = [t for t in range(per_round.shape[1]) if t != focus]
    if not others:
        return None
    top = np.finfo(float).max
    best = None
    for t in others:
        losses = np.nan_to_num(per_round[:, t], nan=0.0, posinf=top, neginf=-top)
        if not losses.max() > eps:
            continue
        report = auditors.plrv_audit(losses, eps, delta, confidence=1.0 - error / len(others),
                                     lower_bound="thresholds")
        if report.violation and (best is None or report.delta_lower > best[1].delta_lower):
            best = (t, report)
    if best is None:
        return None
    t, report = best
    run = int(np.argmax(np.nan_to_num(per_round[:, t], nan=-np.inf)))
    infinite = int(np.isposinf(per_round[:, t]).sum())
    confidence = 1.0 - error
    witness = {"kind": "replay", "run": run, **run_origin(runs, run), "engine": runs.engine, "seed": ctx.options.seed,
               "loss": float(per_round[run, t]), "round": t + 1, "claim_form": ctx.form_name,
               "delta_lower": report.delta_lower, "confidence": confidence, "infinite_loss_runs": infinite,
               "method": (f"per-iteration claim, round {t + 1}'s exact replay losses: {report.lower_method} lower "
                          "bound on delta(epsilon) averaged over the runs' pasts (Clopper-Pearson counts of threshold "
                          f"events; Bonferroni over the {len(others)} rounds besides the focus round)")}
    reason = (f"replay: round {t + 1} of the per-iteration claim: delta(epsilon={eps:.6g}) >= "
              f"{report.delta_lower:.3g} > claimed delta {delta:.3g} averaged over the runs' pasts, which the claim "
              f"bounds by delta for each past (confidence {confidence:.6g}); {infinite} of {per_round.shape[0]} runs "
              f"have an infinite loss there (a release the adjacent problem cannot make); engine run {run} has loss "
              f"{float(per_round[run, t]):.6g}")
    return witness, reason


def _unaudited_infinite_rounds(ctx: CheckContext, per_round: np.ndarray) -> str | None:
    """Why a per-iteration claim with delta > 0 is in doubt: a round other than the focus round has an infinite loss.

    The focus round and the other rounds are audited (:func:`_other_rounds_witness`); a round whose realized loss
    is infinite in some run released something the declared noise cannot explain (a noise-free value that moves,
    e.g. a flag sent from a later round on), which the focus round need not show: when too few runs show it for a
    witness, a delta that bounds its probability may still hold, so it is a doubt.

    Args:
        ctx: the shared context (``focus`` set, ``delta_claimed > 0``).
        per_round: the replay's ``(R, T)`` per-round losses.

    Returns:
        One sentence naming the rounds and the first run, or ``None``.
    """
    inf = np.isposinf(per_round)
    inf[:, ctx.focus] = False
    if not inf.any():
        return None
    rounds = [int(t) + 1 for t in np.flatnonzero(inf.any(axis=0))]
    run = int(np.flatnonzero(inf.any(axis=1))[0])
    return (f"replay: round(s) {_ranges(rounds)} of the per-iteration claim have an infinite privacy loss in "
            f"{int(inf.any(axis=1).sum())} of {per_round.shape[0]} runs (first: run {run}): a release the declared "
            "noise cannot explain, too rare for the audit of each round to certify a delta above the claim")


def _replay_exactly(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """:func:`replay_exactly` but for its doubt about undefined losses."""
    empty = {"replay_max_loss": None, "replay_exceed_fraction": None, "replay_runs": 0}
    replay = ctx.realized_replay()
    if isinstance(replay, AccountingError):
        return Evidence("exact replay", "realized behavior", empty, reasons=(f"no exact replay: {replay}",))
    assert replay.losses is not None and replay.per_round is not None
    runs = ctx.engine_runs(0)
    eps_claimed, delta_claimed, focus = ctx.epsilon_claimed, ctx.delta_claimed, ctx.focus
    from .search_evidence import _budget  # (the budget of these runs, once per check: the search reads it too)

    slack = _budget(ctx, runs)
    per_round = replay.per_round - slack[None, :]  # each round's loss, less what round-off can add to it
    # a pure per-iteration claim bounds every round's loss, not only the focus round's
    every_round = focus is not None and delta_claimed == 0
    losses = claimed_losses(ctx, per_round)
    if math.isinf(eps_claimed):
        return Evidence("exact replay", "realized behavior",
                        {"replay_max_loss": float(losses.max()), "replay_exceed_fraction": None,
                         "replay_runs": runs.runs})
    # the user's pair with fixed shifts on lockstep runs: its exact profile; a pure claim only with Gaussian
    # noise (delta(eps) > 0 at every eps, a loss above eps far too rare to show; a Laplace loss above eps shows)
    from .coverage import pair_shifts
    from .profiles import pair_profile

    gaussian = any(ch.mechanism == "gaussian" for ch in declared_noise(ctx.algorithm, pair.scenario.horizon).values())
    # Gaussian noise: a Renyi witness rests on escort draws (profiles.escort_renyi_lower), which spend half the share
    escort_error = ctx.options.alpha_share / 2 if gaussian else ctx.options.alpha_share
    audit_error = ctx.options.alpha_share - escort_error if gaussian else ctx.options.alpha_share
    # an approximate per-iteration claim: the rounds besides the focus round get their part of the audit's share
    others_error = audit_error * OTHER_ROUNDS_FRACTION if focus is not None and delta_claimed > 0 else 0.0
    audit_error -= others_error
    exact = (pair_profile(ctx, pair_shifts(pair, ctx), pair.scenario, runs, adjacent=pair.adjacent,
                          escort_error=escort_error)
             if delta_claimed > 0 or gaussian else None)
    refuted = exact is not None and exact.refutation is not None and exact.refutation.refuted
    if exact is not None and (refuted or exact.certain):
        r = exact.refutation
        figures = {"replay_max_loss": float(losses.max()), "replay_exceed_fraction": None,
                   "replay_runs": runs.runs}
        witness: dict[str, Any] = {
            "kind": "replay", "engine": runs.engine, "seed": ctx.options.seed, "runs": runs.runs,
            "method": "exact: a noise-free release differs" if r is None else r.method,
            "confidence": 1.0 if r is None else r.confidence, "claim_form": ctx.form_name if r is None else r.form,
            "epsilon": eps_claimed, "delta_lower": 1.0 if r is None else r.delta_witness,
            "delta_allowed": delta_claimed if r is None else r.delta_allowed, "profile": exact.reason}
        if focus is not None:
            witness["round"] = focus + 1
        if r is not None and r.alpha is not None:  # an exact Rényi divergence above a Rényi/zCDP claim
            witness.update(delta_lower=None, delta_allowed=None, alpha=r.alpha, renyi_allowed=r.renyi_allowed,
                           renyi_witness=r.renyi_witness)
            return Evidence("exact replay", "realized behavior", figures, witness=witness, reasons=(
                f"replay: the pair's exact privacy profile ({exact.reason}): {r.reason}",))
        return Evidence("exact replay", "realized behavior", figures, witness=witness, reasons=(
            f"replay: the pair's exact privacy profile ({exact.reason}) has delta(epsilon={eps_claimed:.6g}) = "
            f"{witness['delta_lower']:.3g} > claimed delta {delta_claimed:.3g} (no sampling error)",))
    # plrv_audit takes finite losses; an infinite loss enters its delta(epsilon)
    # estimate as the term (1 - e^(epsilon - L))_+ = 1, which the largest float gives exactly
    top = np.finfo(float).max
    report = auditors.plrv_audit(np.nan_to_num(losses, posinf=top, neginf=-top), eps_claimed, delta_claimed,
                                 confidence=1.0 - audit_error, lower_bound="thresholds")
    raw = claimed_losses(ctx, replay.per_round) if focus is not None else replay.losses
    figures = {"replay_max_loss": float(raw.max()), "replay_exceed_fraction": report.exceed_fraction,
               "replay_runs": runs.runs}
    reasons: tuple[str, ...] = ()
    if slack.sum() > 1e-3 * min(1.0, eps_claimed):  # worth a line only when it matters
        reasons = (f"replay: the witness test subtracts {float(slack.sum()):.3g} from every run's loss, the most "
                   "floating-point round-off can add where the noise scale nears the resolution of the released "
                   "values",)
    if exact is not None and exact.note is not None:  # the pair's exact divergence set aside (profiles.pair_profile)
        reasons += (f"replay: the user's pair: {exact.note}",)
    if not report.violation:
        other = _other_rounds_witness(ctx, per_round, runs, others_error) if others_error > 0 else None
        if other is None:
            return Evidence("exact replay", "realized behavior", figures, reasons=reasons)
        witness, reason = other
        return Evidence("exact replay", "realized behavior", figures, witness=witness, reasons=(*reasons, reason))
    run = report.witness if report.witness is not None else int(np.argmax(losses))
    witness = {"kind": "replay", "run": run, **run_origin(runs, run), "engine": runs.engine,
                               "seed": ctx.options.seed, "loss": float(losses[run])}
    if focus is not None:
        witness["round"] = int(np.argmax(np.nan_to_num(per_round[run], nan=-np.inf))) + 1 if every_round else focus + 1
    if math.isinf(losses[run]):
        witness["round"] = int(np.flatnonzero(np.isinf(per_round[run]))[0]) + 1
    witness["claim_form"] = ctx.form_name
    if delta_claimed > 0:
        witness.update(delta_lower=report.delta_lower, confidence=report.confidence,
                       method=f"exact replay losses, {report.lower_method} lower bound on delta(epsilon) "
                       "(Clopper-Pearson counts of threshold events, union bound over a fixed grid)")
    else:
        witness.update(confidence=1.0, method="exact replay loss above epsilon (given the declared noise)")
    if delta_claimed > 0:
        where = f" at round {witness['round']}" if witness.get("round") else ""
        reason = (f"replay: delta(epsilon={eps_claimed:.6g}) >= {report.delta_lower:.3g} > claimed delta "
                  f"{delta_claimed:.3g} (confidence {report.confidence:.6g}); engine run {run} has privacy loss "
                  f"{float(losses[run]):.6g}{where}")
    else:
        origin = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in run_origin(runs, run).items())
        reason = (f"replay: engine run {run} ({origin}) has privacy loss "
                  f"{float(losses[run]):.6g} > epsilon {eps_claimed:.6g}")
    return Evidence("exact replay", "realized behavior", figures, witness=witness, reasons=(*reasons, reason))
