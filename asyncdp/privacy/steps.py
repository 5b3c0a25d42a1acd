"""The methods of the privacy check, one step each: ``step(pair, context) -> Evidence``.

:data:`STEPS` is the ordered tuple :func:`~asyncdp.privacy.check_privacy`
runs; adding a method means writing one more step and adding it there. The
order is the order of the report's reasons and of the witnesses (the first
witness is the report's).

=============================  ==========================  ==============================================
step                           checked against             figures
=============================  ==========================  ==============================================
:func:`compose_basic`          declaration                 ``epsilon_ledger`` (bound at the claimed delta)
:func:`compose_pld`            declaration                 ``epsilon_tight`` (PLD at the option ``delta``)
:func:`compose_pld_at_claim`   declaration                 ``epsilon_at_claimed_delta`` (bound)
:func:`focus_per_iteration`    declaration                 ``focus_round``
:func:`probe_update`           constructed worst case      ``sensitivity_probe_max``, ``..._ratio``
:func:`replay_exactly`         declaration                 ``replay_max_loss``, ``replay_exceed_fraction``,
                                                           ``replay_runs``
:func:`audit_blackbox`         declaration                 ``empirical_epsilon_lower_bound``
=============================  ==========================  ==============================================

The compositions compose the ledger of declared scales. Exact replay and the
black-box audit sample transcripts from the accountant's sampler
(:func:`accounting.replay.sample_transcripts`) at the declared scales, so
they too check the declaration, not the run's realized messages. The prober
searches for the worst input it can construct.

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> pair, ctx = small_example()
    >>> [step(pair, ctx).method for step in STEPS][:3]
    ['basic composition', 'PLD', 'PLD at the claimed delta']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from accounting import auditors, composition, prober
from accounting.ledger import Ledger
from accounting.replay import replay_loss, sample_transcripts

from .context import CheckContext, ScenarioPair
from .evidence import Evidence
from .replay import _replayable
from .sensitivity import update_pair

__all__ = [
    "Step",
    "STEPS",
    "compose_basic",
    "compose_pld",
    "compose_pld_at_claim",
    "focus_per_iteration",
    "probe_update",
    "replay_exactly",
    "audit_blackbox",
]

Step = Callable[[ScenarioPair, CheckContext], Evidence]
"""A method of the check: the scenario pair and the shared context in, one :class:`Evidence` out."""

_PLD_INTERVAL = 1e-3
"""Value discretization interval of the PLD compositions."""


def compose_basic(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Basic composition of the realized ledger at the claimed delta, with the accountant's sensitivity.

    Per agent (network-wide under round adjacency). Gaussian releases with a
    pure-DP claim give ``inf`` (Gaussian noise is never pure DP); a round
    declared with scale 0 whose independent sensitivity is > 0 makes it
    ``inf`` (unprotected release). A per-iteration claim composes only the
    focus round's release.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"basic composition"`` with figure ``epsilon_ledger``, which is also its bound.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = compose_basic(*small_example())
        >>> e.checked_against, e.bound == e.figures["epsilon_ledger"] <= 1.0 + 1e-9
        ('declaration', True)
    """
    reasons = []
    sensitivity = ctx.release_sensitivity
    gaussian = any(r.mechanism == "gaussian" and sensitivity(r) > 0 for r in ctx.ledger)
    if gaussian and ctx.delta_claimed == 0:
        eps = math.inf
        reasons.append("the ledger has Gaussian releases but the claim has delta = 0: Gaussian noise is never "
                       "pure DP")
    else:
        eps = max(ctx.compose(composition.basic_composition, sensitivity=sensitivity,
                              delta=ctx.delta_claimed).values())
    if ctx.unnoised:
        eps = math.inf
        reasons.append(f"round(s) {list(ctx.unnoised)} release a value of independent sensitivity "
                       f"{', '.join(f'{ctx.sensitivity[t - 1]:.6g}' for t in ctx.unnoised)} without noise "
                       "(declared scale 0): unbounded privacy loss")
    if ctx.focus_release is not None and math.isfinite(eps):
        eps = composition.basic_composition(Ledger([ctx.focus_release]), sensitivity, delta=ctx.delta_claimed)
    return Evidence("basic composition", "declaration", {"epsilon_ledger": float(eps)}, reasons=tuple(reasons),
                    bound=float(eps))


def compose_pld(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """PLD composition of the whole realized ledger at the option ``delta`` (the tight epsilon).

    Not a bound at the claimed delta (the option's delta may differ), so it
    does not enter the verdict; ``inf`` when a round is released unnoised.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"PLD"`` with figure ``epsilon_tight``.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = compose_pld(*small_example())
        >>> e.bound is None and e.figures["epsilon_tight"] > 0
        True
    """
    eps = max(ctx.compose(composition.pld_epsilon, sensitivity=ctx.release_sensitivity, delta=ctx.options.delta,
                          value_discretization_interval=_PLD_INTERVAL).values())
    if ctx.unnoised:
        eps = math.inf
    return Evidence("PLD", "declaration", {"epsilon_tight": float(eps)})


def compose_pld_at_claim(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """PLD composition of the realized ledger at the claimed delta (claims with delta > 0 only).

    A per-iteration claim composes only the focus round's release; ``inf``
    when a round is released unnoised.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"PLD at the claimed delta"`` with figures
        ``epsilon_at_claimed_delta`` (``None`` for a pure-DP claim, which
        then gives no bound) and ``delta_claimed``.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> compose_pld_at_claim(*small_example()).figures["epsilon_at_claimed_delta"] is None  # pure claim
        True
    """
    eps: float | None = None
    if ctx.delta_claimed > 0:
        eps = max(ctx.compose(composition.pld_epsilon, sensitivity=ctx.release_sensitivity,
                              delta=ctx.delta_claimed, value_discretization_interval=_PLD_INTERVAL).values())
        if ctx.unnoised:
            eps = math.inf
        elif ctx.focus_release is not None and math.isfinite(eps):
            eps = composition.pld_epsilon(Ledger([ctx.focus_release]), ctx.release_sensitivity, ctx.delta_claimed,
                                          _PLD_INTERVAL)
    value = None if eps is None else float(eps)
    return Evidence("PLD at the claimed delta", "declaration",
                    {"epsilon_at_claimed_delta": value, "delta_claimed": float(ctx.delta_claimed)}, bound=value)


def focus_per_iteration(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """A per-iteration claim (class attribute ``claim_level = "iteration"``): which round the audits refer to.

    The claim bounds each round's release given the past, not the run, so
    the accountant's epsilon and the audits refer to the round with the
    largest sensitivity/scale (:attr:`CheckContext.focus`).

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"per-iteration focus"`` with figure ``focus_round``
        (1-based; ``None`` for a claim over the run).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> focus_per_iteration(*small_example()).figures["focus_round"] is None  # huang2015 claims the run
        True
    """
    if ctx.focus is None:
        return Evidence("per-iteration focus", "declaration", {"focus_round": None})
    return Evidence("per-iteration focus", "declaration", {"focus_round": ctx.focus + 1},
                    reasons=(f"per-iteration claim: epsilon_ledger and the audits refer to round {ctx.focus + 1} "
                             "(largest sensitivity/scale); epsilon_tight composes the whole run",))


def probe_update(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Search the changed agent's update for the largest change and compare it with the claimed sensitivity.

    :func:`accounting.prober.probe_sensitivity` on :func:`update_pair`, in
    the first ``probe_rounds`` rounds (round adjacency: the changed round's
    update only); L1 for Laplace, L2 for Gaussian noise. ``x(t)`` is masked
    by the release of round ``t + 1``, whose claimed sensitivity it is
    compared with.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"sensitivity prober"`` with figures ``sensitivity_probe_max``
        and ``sensitivity_probe_ratio`` (largest ratio to a positive claim);
        witness ``{"kind": "sensitivity", ...}`` for the first round whose
        update moves more than claimed.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = probe_update(*small_example())
        >>> e.checked_against, e.witness is None
        ('constructed worst case', True)
    """
    scenario, adjacent = pair.scenario, pair.adjacent
    channel = ctx.channel
    norm = "l2" if channel.mechanism == "gaussian" else "l1"
    probe_max, probe_ratio = 0.0, 0.0
    witness: dict[str, Any] | None = None
    reasons = []
    if ctx.changed_agent is not None:
        probed: Any = range(1, min(ctx.options.probe_rounds, scenario.horizon - 1) + 1)
    else:  # only round t0's update differs
        probed = [ctx.changed_round] if ctx.changed_round < scenario.horizon else []
    for t in probed:
        claimed = ctx.algorithm.noise(t + 1, channel.name).claimed_sensitivity  # y(t+1) masks x(t)
        res = prober.probe_sensitivity(update_pair(scenario, adjacent, ctx.changed_agent, t), samples=400,
                                       seed=ctx.options.seed + t, norm=norm, claimed=claimed if claimed > 0 else None)
        probe_max = max(probe_max, res.max_found)
        if claimed > 0:
            probe_ratio = max(probe_ratio, res.ratio_to_claim)
        if res.violation and witness is None:
            witness = {"kind": "sensitivity", "round": t, "z": res.witness_z.tolist(), "value": res.max_found,
                       "claimed": claimed}
            reasons.append(f"round {t}: the update moves by {res.max_found:.6g} > claimed sensitivity {claimed:.6g}")
    return Evidence("sensitivity prober", "constructed worst case",
                    {"sensitivity_probe_max": float(probe_max), "sensitivity_probe_ratio": float(probe_ratio)},
                    witness=witness, reasons=tuple(reasons))


def replay_exactly(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Exact replay: ``runs`` transcripts sampled under the scenario, their exact privacy losses audited.

    Applies to lockstep, lossless runs of one noisy channel
    (:mod:`accounting.replay`; an unnoised release that differs between the
    problems has loss ``inf``). The PLRV auditor
    (:func:`accounting.auditors.plrv_audit`) looks for losses above the
    claimed epsilon (pure claims) or a certified ``delta(epsilon)`` above the
    claimed delta. A per-iteration claim audits the focus round's loss.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"exact replay"`` with figures ``replay_max_loss``,
        ``replay_exceed_fraction`` (``None`` when replay does not apply) and
        ``replay_runs`` (0 then); witness ``{"kind": "replay", "run", "seed",
        "loss", ...}`` when the auditor refutes the claim.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = replay_exactly(*small_example())
        >>> e.figures["replay_runs"], e.figures["replay_max_loss"] <= 1.0 + 1e-9
        (200, True)
    """
    scenario = pair.scenario
    why_not = _replayable(scenario)
    if why_not is not None:
        return Evidence("exact replay", "declaration",
                        {"replay_max_loss": None, "replay_exceed_fraction": None, "replay_runs": 0},
                        reasons=(f"no exact replay: {why_not}",))
    opts = ctx.options
    eps_claimed, delta_claimed, focus = ctx.epsilon_claimed, ctx.delta_claimed, ctx.focus
    ys = sample_transcripts(ctx.setup, ctx.rule, opts.runs, seed=opts.seed, mode=scenario.mode)
    losses, per_round = replay_loss(ys, ctx.setup, ctx.rule, ctx.rule_adjacent, per_round=True)
    if focus is not None:
        losses = per_round[:, focus]
    # plrv_audit takes finite losses; an infinite loss enters its delta(epsilon)
    # estimate as the term (1 - e^(epsilon - L))_+ = 1, which the largest float gives exactly
    top = np.finfo(float).max
    report = auditors.plrv_audit(np.nan_to_num(losses, posinf=top, neginf=-top), eps_claimed, delta_claimed,
                                 confidence=opts.confidence)
    figures = {"replay_max_loss": float(losses.max()), "replay_exceed_fraction": report.exceed_fraction,
               "replay_runs": opts.runs}
    if not report.violation:
        return Evidence("exact replay", "declaration", figures)
    run = report.witness if report.witness is not None else int(np.argmax(losses))
    witness: dict[str, Any] = {"kind": "replay", "run": run, "seed": opts.seed, "loss": float(losses[run])}
    if focus is not None:
        witness["round"] = focus + 1
    if math.isinf(losses[run]):
        witness["round"] = int(np.flatnonzero(np.isinf(per_round[run]))[0]) + 1
    if delta_claimed > 0:
        witness["delta_lower"] = report.delta_lower
    if delta_claimed == 0:
        reason = (f"replay: transcript {run} (seed {opts.seed}) has privacy loss {float(losses[run]):.6g} > "
                  f"epsilon {eps_claimed:.6g}")
    else:
        where = f" at round {witness['round']}" if witness.get("round") else ""
        reason = (f"replay: delta(epsilon={eps_claimed:.6g}) >= {report.delta_lower:.3g} > claimed delta "
                  f"{delta_claimed:.3g} (confidence {opts.confidence}); transcript {run} (seed {opts.seed}) has "
                  f"privacy loss {float(losses[run]):.6g}{where}")
    return Evidence("exact replay", "declaration", figures, witness=witness, reasons=(reason,))


def audit_blackbox(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """A black-box lower bound on epsilon from a scalar statistic of sampled transcripts.

    The statistic is the changed agent's messages (every agent's under round
    adjacency) projected on the direction separating the two problems, which
    is estimated on a separate pilot sample; a per-iteration claim uses the
    focus round only. :func:`accounting.auditors.blackbox_audit` bounds
    epsilon from below.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"black-box audit"`` with figure
        ``empirical_epsilon_lower_bound``; witness ``{"kind": "blackbox", ...}``
        when the bound exceeds the claimed epsilon.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = audit_blackbox(*small_example())
        >>> e.witness is None and e.figures["empirical_epsilon_lower_bound"] <= 1.0
        True
    """
    scenario, opts, agent, focus = pair.scenario, ctx.options, ctx.changed_agent, ctx.focus
    setup, rule, rule_p = ctx.setup, ctx.rule, ctx.rule_adjacent
    pilot = sample_transcripts(setup, rule, 500, seed=opts.seed + 10_001, mode=scenario.mode)
    pilot_p = sample_transcripts(setup, rule_p, 500, seed=opts.seed + 10_002, mode=scenario.mode)
    cols = slice(None) if agent is None else agent  # round adjacency: every agent's messages
    direction = np.nan_to_num(pilot.mean(0) - pilot_p.mean(0))[:, cols]
    if focus is not None:
        direction[np.arange(direction.shape[0]) != focus] = 0.0
    axes = tuple(range(1, direction.ndim + 1))
    stat = np.nansum(sample_transcripts(setup, rule, opts.runs, seed=opts.seed + 20_001, mode=scenario.mode)[:, :, cols]
                     * direction, axis=axes)
    stat_p = np.nansum(sample_transcripts(setup, rule_p, opts.runs, seed=opts.seed + 20_002,
                                          mode=scenario.mode)[:, :, cols] * direction, axis=axes)
    bb = auditors.blackbox_audit(stat, stat_p, delta=ctx.delta_claimed, alpha=1 - opts.confidence)
    witness, reasons = None, ()
    if bb.epsilon_lower_bound > ctx.epsilon_claimed * (1 + 1e-9):
        witness = {"kind": "blackbox", "threshold": bb.threshold, "direction": bb.direction, "p": bb.p_hat,
                   "p_prime": bb.p_prime_hat}
        reasons = (f"black-box: epsilon >= {bb.epsilon_lower_bound:.6g} with confidence {bb.confidence}",)
    return Evidence("black-box audit", "declaration",
                    {"empirical_epsilon_lower_bound": float(bb.epsilon_lower_bound)}, witness=witness,
                    reasons=reasons)


STEPS: tuple[Step, ...] = (
    compose_basic,
    compose_pld,
    compose_pld_at_claim,
    focus_per_iteration,
    probe_update,
    replay_exactly,
    audit_blackbox,
)
"""The methods :func:`~asyncdp.privacy.check_privacy` runs, in order (reasons and witnesses follow this order)."""
