"""The noise conformance step: the noise the engine released, tested against the declared noise.

:func:`check_conformance` reads the engine's runs of the scenario and of the adjacent scenario, shared through
the context (:meth:`~asyncdp.privacy.context.CheckContext.engine_runs`), never transcripts the accountant
samples itself: the residuals of every release (released minus the noise-free value the accountant recomputes
by replay on the realized schedule) against the declared noise, draw by draw (``asyncdp.privacy.noise_draws``)
or by distribution (:func:`accounting.conformance.noise_conformance`), and against the independence the
declarations state (:mod:`asyncdp.privacy.dependence`). The other steps on the engine's runs are
``asyncdp.privacy.exact_replay`` and ``asyncdp.privacy.blackbox_audit``.

Every statistical witness is certified at ``(1 - confidence) / 4``
(:data:`~asyncdp.privacy.context.STATISTICAL_METHODS`).

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> pair, ctx = small_example(runs=200)
    >>> e = check_conformance(pair, ctx)
    >>> e.checked_against, e.witness is None, e.figures["engine"]
    ('realized behavior', True, 'batch')
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from accounting.conformance import noise_conformance
from accounting.errors import AccountingError

from .context import CheckContext, ScenarioPair
from .dependence import DEPENDENCE_ALPHA_FRACTION, cancelling_audit, interleave_channels, noise_dependence
from .evidence import Evidence
from .noise_draws import _noisy_declared, side_draws
from .released_scale import SCALE_BOUNDS, released_scale_witness
from .roundoff import _gap_allowance, _round_magnitude

__all__ = ["check_conformance"]

_MIN_SAMPLES = 20
"""Residuals a conformance test needs; fewer runs leave the declared noise unverified."""


def check_conformance(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Test the released noise against the declared noise, per release, round and agent.

    The accountant replays the engine's runs on their realized schedules with
    the algorithm's R and U steps (nothing the algorithm declares about its
    sensitivity or noise enters), takes released minus noise-free values, and
    runs :func:`accounting.conformance.noise_conformance` at family-wise
    level ``alpha_share`` less the dependence share. An under-noised release
    is a witness only when the privacy loss it implies exceeds the claim
    (:func:`~asyncdp.privacy.released_scale.released_scale_witness`: the runs' losses at upper confidence bounds
    of the released scales, with the pair's realized shifts, at the same share, which the witness rests on
    alone); else it is a doubt (less noise than declared may leave the claim true). An over-noised one, a release that should be noise-free but
    is not, or runs too few to test leave the declaration unverified (a
    doubt: no ``pass``). The residuals are also tested for dependence across
    rounds and agents (:func:`~asyncdp.privacy.dependence.noise_dependence`):
    a rejection is a doubt, and a pooled conformance rejection (one that
    assumes independent draws) is then no witness; the cancelling audit
    (:func:`~asyncdp.privacy.dependence.cancelling_audit`) on the scenario's
    and the adjacent scenario's runs turns the dependence into a witness when
    the noise cancels between two releases and exposes a loss above the
    claim. Each runs at :data:`~asyncdp.privacy.dependence.DEPENDENCE_ALPHA_FRACTION`
    of ``alpha_share``.

    Every release is first compared with the standard draw the engine handed
    it (``noise_draws._exact_draws``). When every release matches, the released noise
    is the declared noise draw by draw, and the distribution and dependence
    tests, which would then test the engine's generator, are not run
    (:func:`_verified_by_draws`); they run whenever a release does not match.
    The adjacent scenario's releases are compared with their draws too, under
    its own problem, and its noise-free releases with their replayed values
    (:func:`_adjacent_draws`): a release off there is a doubt.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"noise conformance"`` (realized behavior) with figures
        ``conformance_tests``, ``conformance_min_scale_ratio``,
        ``conformance_rejected``, ``conformance_by_draws``, ``noise_draws_*`` and ``engine``; witness ``{"kind":
        "conformance", "channel", "round", "agent", "declared_scale",
        "estimated_scale", "p_value", ...}``, or ``{"kind": "dependence",
        "method", "channel", "across", "rounds", "agents", "coordinate",
        "statistic", "beta", "event", "counts", "epsilon_lower_bound",
        "delta_lower_bound", "confidence", "claim_form", "dependence_test", ...}``.

    Example:
        See the module docstring.
    """
    runs = ctx.engine_runs(0)
    figures: dict[str, Any] = {"engine": runs.engine, "conformance_tests": 0, "conformance_rejected": 0,
                               "conformance_min_scale_ratio": None, "conformance_by_draws": False}
    replay = ctx.realized_replay()
    additivity = ctx.cache.get("additivity")
    not_additive = None if additivity is None else (
        f"the released noise is not the declared noise added to the noise-free value: {additivity}; the residuals, "
        "the exact replay's losses and every bound assume y = mu + s z with fresh standard noise z "
        "(asyncdp.privacy.additivity)")
    if isinstance(replay, AccountingError):
        why = f"the runs cannot be replayed on their realized schedules: {replay}"
        doubt = why if not_additive is None else f"{why}; {not_additive}"
        return Evidence("noise conformance", "realized behavior", figures, reasons=(doubt,), doubt=doubt)
    declared = _noisy_declared(ctx)
    exact, exact_doubt = side_draws(ctx, 0, replay)
    figures.update(exact)
    adjacent_doubts = _adjacent_draws(ctx, declared)
    if exact_doubt is None and exact["noise_draws_checked"]:
        return _verified_by_draws(replay, runs, figures, not_additive, adjacent_doubts)
    magnitude = {name: _round_magnitude(runs.messages[name]) for name in declared}
    # the conformance tests get the method's share less what the dependence audit uses (module dependence)
    report = noise_conformance(replay.residuals, declared,
                               confidence=1.0 - ctx.options.alpha_share * (1.0 - DEPENDENCE_ALPHA_FRACTION),
                               min_samples=_MIN_SAMPLES, magnitude=magnitude)
    figures.update(conformance_tests=report.tests, conformance_rejected=len(report.rejected),
                   conformance_min_scale_ratio=None if math.isnan(report.min_scale_ratio)
                   else report.min_scale_ratio)
    reasons, doubts = [], []
    witness = None
    if report.witness is not None:
        w = report.witness
        where = (f"agent {w['agent'] if w['agent'] is not None else 'all'}, round "
                 f"{w['round'] if w['round'] is not None else 'all'}, channel {w['channel']!r}")
        est = "" if w["estimated_scale"] is None else f", estimated {w['estimated_scale']:.6g}"
        decl = "" if w["declared_scale"] is None else f"declared scale {w['declared_scale']:.6g}{est}"
        smaller = (f"noise conformance: the released noise is smaller than declared at {where}: {decl} "
                   f"(scale ratio {w['scale_ratio']:.3g}, KS p-value {w['p_value']:.3g} < {report.threshold:.3g}, "
                   f"{w['samples']} residuals of {runs.runs} engine runs)")
        # the witness rests on the loss bound alone (the KS rejection only selects it), at the conformance's share
        bound, why = released_scale_witness(pair, ctx,
                                            error=ctx.options.alpha_share * (1.0 - DEPENDENCE_ALPHA_FRACTION))
        if bound is None:
            reasons.append(smaller)
            doubts.append(f"{smaller}, but {why}: the declared noise is false, the claim not refuted")
        else:
            reasons.append(f"{smaller}; {why}")
            witness = {**w, **bound, "engine": runs.engine, "runs": runs.runs, "seed": ctx.options.seed,
                       "claim_form": ctx.form_name}
    if report.unresolved:
        rounds = sorted({t for _, t in report.unresolved})
        reasons.append(f"noise conformance: round(s) {_ranges(rounds)} not tested: their noise scale is below "
                       "1e4 floating-point spacings of the released values (round-off, not noise, would be tested)")
    if report.over_noised:
        o = report.over_noised[0]
        doubts.append(f"{len(report.over_noised)} conformance test(s) reject the declared noise with a larger "
                      f"estimated scale (e.g. channel {o.channel!r}, round {o.round}, agent {o.agent}: ratio "
                      f"{o.scale_ratio:.3g}): the bounds are computed for noise the run does not release")
    dep_reasons, dep_doubt, dep_witness = _dependence(pair, ctx, replay, declared, runs)
    if dep_doubt is not None:
        doubts.append(dep_doubt)
        reasons.extend(dep_reasons)
        # the scale bounds sum residuals as independent draws: under dependence the search gets none of them
        ctx.cache.pop(SCALE_BOUNDS, None)
        if witness is not None and (witness.get("round") is None or witness.get("agent") is None):
            # a pooled test assumes independent draws: under dependence its rejection is no witness of under-noise
            reasons[:] = [r for r in reasons if not r.startswith("noise conformance: the released noise is smaller")]
            witness = None
        if dep_witness is not None and witness is None:
            witness = dep_witness
    if exact_doubt is not None:
        doubts.append(exact_doubt)
    doubts.extend(adjacent_doubts)
    doubts.extend(_replay_doubts(replay, not_additive))
    if report.tests == 0 and witness is None:
        doubts.append(f"no conformance test had {_MIN_SAMPLES} residuals (runs = {runs.runs}): the declared noise "
                      "is unverified")
    reasons.extend(doubts)
    return Evidence("noise conformance", "realized behavior", figures, witness=witness, reasons=tuple(reasons),
                    doubt="; ".join(doubts) if doubts else None)


def _replay_doubts(replay: Any, not_additive: str | None, adjacent: bool = False) -> list[str]:
    """The doubts of the replay itself: a rule that is not additive (the probe's finding), a channel declared
    noise-free whose releases differ from their noise-free values, and one whose releases match them only
    within the matching tolerance.

    The replay matches a noise-free release with its replayed value within ``NOISE_FREE_RTOL (1 + |mean|)``
    (:mod:`accounting.replay`), far above round-off: a release that hides something below it (another
    channel's noise draw, ``w + 1e-11 z``) matches both problems' values and its round's loss is 0. So each
    round's largest gap (:attr:`accounting.scheduled_replay.ScheduledReplay.noise_free_gap`) must be
    round-off (``roundoff._gap_allowance``); a larger gap is a doubt, not a witness (a user's rule may combine in
    another order than the replay, or amplify round-off, and the gap alone shows no loss).

    ``adjacent``: the replay holds the adjacent scenario's runs, whose noise-free releases are compared with their
    values under the scenario's problem (:func:`_adjacent_draws`); a mismatch there is undeclared randomness or a
    noise-free channel that reads the private data, and the doubt names both.
    """
    doubts = [] if not_additive is None else [not_additive]
    mismatch = {c: v for c, v in replay.noise_free_mismatch.items() if v is not None}
    if mismatch:
        c, (r, t) = next(iter(mismatch.items()))
        cause = ("undeclared randomness, or a noise-free channel that reads the private data (its values are "
                 "replayed under the scenario's problem)" if adjacent else "undeclared randomness")
        doubts.append(f"channel {c!r} round {t} (run {r}) is declared noise-free but its released values differ "
                      f"from the noise-free values: {cause}")
    for c, rows in replay.noise_free_gap.items():
        n_agents = replay.messages[c].shape[2]
        allowed = np.array([_gap_allowance(t, n_agents) for t in range(1, rows.shape[0] + 1)])
        excess = np.where(np.isnan(rows[:, 0]), 0.0, rows[:, 0] / allowed)
        t = int(np.argmax(excess))
        if c not in mismatch and excess[t] > 1.0:
            doubts.append(f"channel {c!r} round {t + 1} (run {int(rows[t, 1])}, agent {int(rows[t, 2])}) is released "
                          f"{rows[t, 0]:.3g} floating-point spacings of its magnitude from its replayed noise-free "
                          f"value (round-off allows {allowed[t]:g}): it carries something the replay does not "
                          "explain, below the matching tolerance (e.g. another channel's noise)")
    return doubts


def _adjacent_draws(ctx: CheckContext, declared: dict[str, Any]) -> list[str]:
    """The adjacent scenario's releases against the draws the engine handed them (``noise_draws._exact_draws``
    on its runs, residuals under its own problem), and its noise-free releases against their replayed values
    (:func:`_replay_doubts`): the doubts, each naming the first release off.

    The replay's density of a release under ``P'`` is the declared noise around ``P'``'s noise-free value; the
    scenario's runs and the probe of the R step (:mod:`asyncdp.privacy.additivity`, one standard draw per run and
    coordinate, shared by the rounds) test it only at the draws they make. A rule that releases otherwise under
    ``P'`` alone and only on rare draws (its noise dropped beyond ``|z| > 9``, or its public round counter moved
    by ``1e-11`` then: about 4 of 1000 runs show a value no release under ``P`` takes) escaped both; the adjacent
    runs hold every draw ``P'`` released. A noise-free release is compared with its value under ``P`` (the
    replay's first problem): under a rule whose noise-free channels do not read the private data, as the exact
    replay requires, it is the value under ``P'`` too.
    """
    replay = ctx.adjacent_replay()
    if isinstance(replay, AccountingError):
        return [f"the adjacent scenario's runs cannot be replayed on their realized schedules ({replay}): their "
                "released noise is not verified draw by draw"]
    _, doubt = side_draws(ctx, 1, replay)
    return [f"the adjacent scenario's runs: {d}" for d in ([] if doubt is None else [doubt]) +
            _replay_doubts(replay, None, adjacent=True)]


def _verified_by_draws(replay: Any, runs: Any, figures: dict[str, Any], not_additive: str | None,
                       adjacent_doubts: list[str]) -> Evidence:
    """The evidence when every release carries its declared scale times the standard draw the engine handed it.

    Each residual is then (up to round-off, ``noise_draws._exact_draws``) the declared
    scale times a draw of the declared mechanism, made by the engine from the
    seed layout (:mod:`asyncdp.noise`) for that release alone: the released
    noise *is* the declared noise, independent across releases, run by run.
    The distribution tests (:func:`accounting.conformance.noise_conformance`)
    and the dependence test would test the engine's generator, not the rule,
    and could only reject by chance; they are not run (figure
    ``conformance_by_draws``). They run whenever a release does not match
    its draw, where their rejection is the statistical witness.
    """
    figures.update(conformance_by_draws=True, conformance_tests=0, conformance_rejected=0,
                   conformance_min_scale_ratio=None)
    line = (f"noise conformance: each of the {figures['noise_draws_checked']} released coordinates of {runs.runs} "
            "engine runs is its declared scale times the standard draw the engine handed it (up to round-off): the "
            "released noise is the declared noise, draw by draw; the distribution and dependence tests, which "
            "would test the engine's generator, are not run")
    doubts = _replay_doubts(replay, not_additive) + adjacent_doubts
    return Evidence("noise conformance", "realized behavior", figures, reasons=(line, *doubts),
                    doubt="; ".join(doubts) if doubts else None)


def _dependence(pair: ScenarioPair, ctx: CheckContext, replay: Any, declared: dict[str, Any], runs: Any
                ) -> tuple[list[str], str | None, dict[str, Any] | None]:
    """The dependence test and, when it rejects, the cancelling audit (:mod:`asyncdp.privacy.dependence`).

    Returns:
        ``(reasons, doubt, witness)``: the audit's lines, the doubt naming the
        dependence (``None`` when independence is not rejected) and the
        witness when the audit certifies a loss above the claim.
    """
    residuals = {c: r for c, r in replay.residuals.items() if c in declared and np.ndim(r) == 4}
    alpha = ctx.options.alpha_share * DEPENDENCE_ALPHA_FRACTION
    scales = {c: np.asarray(sc_, dtype=float) for c, (_, sc_) in declared.items()}
    # channels of one shape are also tested against each other, round by round (one draw added to two channels):
    # each family of tests at half the error
    joint = [c for c in residuals if np.shape(residuals[c]) == np.shape(next(iter(residuals.values())))]
    joint = joint if len(joint) > 1 and len(joint) == len(residuals) else []
    dep = noise_dependence(residuals, scales, alpha / 2 if joint else alpha)
    name = "+".join(joint)
    if dep is None and joint:
        dep = noise_dependence({name: interleave_channels([residuals[c] for c in joint])},
                               {name: interleave_channels([np.reshape(scales[c], (1, -1, 1, 1)) for c in joint])
                                .reshape(-1)}, alpha / 2)
    if dep is None:
        return [], None, None

    def release(v: int) -> str:  # a 1-based round of the test, as channel and round
        return f"channel {joint[(v - 1) % len(joint)]!r} round {(v - 1) // len(joint) + 1}" \
            if dep["channel"] == name and joint else f"round {v}"

    where = (f"{release(dep['rounds'][0])} and {release(dep['rounds'][1])} of agent {dep['agents'][0]}"
             if dep["across"] == "rounds" else
             f"agents {dep['agents'][0]} and {dep['agents'][1]} in {release(dep['rounds'][0])}")
    pooled = dep["channel"] == name and bool(joint)
    across = "channels and rounds" if pooled else dep["across"]
    test = (f"correlation of residuals across {across} (Fisher z, Bonferroni over {dep['tests']} tests)")
    noise = f"channels {' and '.join(repr(k) for k in joint)}" if pooled else f"channel {dep['channel']!r}"
    doubt = (f"noise dependence: the released noise of {noise} is correlated across {across} ({where}, coordinate "
             f"{dep['coordinate']}: correlation {dep['correlation']:.3g} over "
             f"{dep['runs']} runs, Fisher p-value {dep['p_value']:.3g} < {dep['threshold']:.3g}, Bonferroni over "
             f"{dep['tests']} tests, confidence {1.0 - alpha:.6g}); the declarations state independent draws, "
             "which every bound assumes")
    c = dep["channel"]
    if math.isinf(ctx.epsilon_claimed) or getattr(replay, "residuals_prime", None) is None:
        return [], doubt, None
    audit = None
    try:
        other = ctx.adjacent_replay()  # the adjacent runs' residuals under P (its first problem), shared
        if isinstance(other, AccountingError):
            raise other
        cs = joint if c == name and joint else [c]
        agents = list(range(residuals[cs[0]].shape[2])) if ctx.changed_agent is None else [ctx.changed_agent]
        audit = cancelling_audit(interleave_channels([residuals[k] for k in cs]),
                                 interleave_channels([replay.residuals_prime[k] - residuals[k] for k in cs]),
                                 interleave_channels([other.residuals[k] for k in cs]),
                                 agents=agents, epsilon=ctx.epsilon_claimed, delta=ctx.delta_claimed, alpha=alpha,
                                 per_round=ctx.focus is not None)
    except AccountingError as exc:
        return [f"noise dependence: no cancelling audit: the adjacent runs cannot be replayed: {exc}"], doubt, None
    if audit is None:
        return ["noise dependence: no cancelling audit (too few runs)"], doubt, None
    (ta, tb), (ia, ib) = audit["rounds"], audit["agents"]
    combo = (f"g = r({release(tb)}, agent {ib}) - {audit['beta']:.6g} r({release(ta)}, agent {ia}), coordinate "
             f"{audit['coordinate']}, residuals r under the scenario's problem")
    k1, n1 = audit["counts"]["adjacent"]
    k0, n0 = audit["counts"]["scenario"]
    found = (f"event |g - {audit['center']:.3g}| > {audit['tau']:.3g}: {k1} of {n1} adjacent runs, {k0} of {n0} "
             f"held-out scenario runs; epsilon >= {audit['epsilon_lower_bound']:.6g}, delta(epsilon="
             f"{audit['epsilon_allowed']:.6g}) >= {audit['delta_lower_bound']:.3g} (confidence "
             f"{audit['confidence']:.6g})")
    if not audit["violation"]:
        return [f"noise dependence: the cancelling audit ({combo}) does not refute the claim: {found}"], doubt, None
    method = ("cancelling audit: a combination of two releases whose dependent noise cancels, chosen on half of "
              "the scenario's runs; Clopper-Pearson counts of one event on the other half and the adjacent runs")
    rounds, channels = audit["rounds"], None
    if c == name and joint:  # the interleaved rounds as each release's channel and round
        channels = [joint[(v - 1) % len(joint)] for v in rounds]
        rounds = [(v - 1) // len(joint) + 1 for v in rounds]
    witness = {"kind": "dependence", "method": method, "channel": c, "across": across,
               **({"channels": channels} if channels else {}),
               "rounds": rounds, "agents": audit["agents"], "coordinate": audit["coordinate"],
               "statistic": combo, "beta": audit["beta"], "selection_correlation": audit["selection_correlation"],
               "event": f"|g - {audit['center']:.6g}| > {audit['tau']:.6g}", "counts": audit["counts"],
               "epsilon_lower_bound": audit["epsilon_lower_bound"], "delta_lower_bound": audit["delta_lower_bound"],
               "epsilon_allowed": audit["epsilon_allowed"], "delta_allowed": audit["delta_allowed"],
               "confidence": audit["confidence"], "claim_form": ctx.form_name,
               "dependence_test": test, "dependence_rounds": dep["rounds"], "dependence_agents": dep["agents"],
               "dependence_correlation": dep["correlation"], "dependence_p_value": dep["p_value"],
               "declared": "independent draws", "engine": runs.engine, "runs": runs.runs, "seed": ctx.options.seed}
    line = (f"noise dependence: the dependent noise cancels, and the cancelling audit refutes the claim ({combo}; "
            f"{found})")
    return [line], doubt, witness


def _ranges(rounds: list[int]) -> str:
    """``[1, 2, 3, 7]`` as ``"1-3, 7"``."""
    out, start = [], None
    for k, t in enumerate(rounds):
        if start is None:
            start = t
        if k + 1 == len(rounds) or rounds[k + 1] != t + 1:
            out.append(str(start) if start == t else f"{start}-{t}")
            start = None
    return ", ".join(out)
