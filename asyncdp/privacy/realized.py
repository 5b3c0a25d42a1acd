"""The steps of the privacy check that read what the engine actually released.

Each step runs on the engine's runs of the scenario (and, for the black-box
audit, of the adjacent scenario), shared through the context
(:meth:`~asyncdp.privacy.context.CheckContext.engine_runs`), never on
transcripts the accountant samples itself:

* :func:`check_conformance`: the residuals of every release (released minus
  the noise-free value the accountant recomputes by replay on the realized
  schedule) against the declared noise (:func:`accounting.conformance.noise_conformance`),
  and against the independence the declarations state (:mod:`asyncdp.privacy.dependence`);
* :func:`replay_exactly`: each run's exact privacy loss on its realized
  schedule (:func:`accounting.scheduled_replay.scheduled_replay`), audited by
  :func:`accounting.auditors.plrv_audit`;
* :func:`audit_blackbox`: the black-box auditor (:func:`accounting.auditing.audit_samples`)
  on the engine's transcripts of both scenarios.

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

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from accounting import auditors
from accounting.conformance import noise_conformance
from accounting.errors import AccountingError

from .behavior import declared_noise, run_origin
from .dependence import DEPENDENCE_ALPHA_FRACTION, cancelling_audit, interleave_channels, noise_dependence
from .context import CheckContext, ScenarioPair
from .evidence import Evidence
from .realized_scale import claimed_losses, realized_scale_witness

__all__ = ["check_conformance", "replay_exactly", "audit_blackbox", "transcript_features"]

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
    (:func:`~asyncdp.privacy.realized_scale.realized_scale_witness`: the runs' losses at upper confidence bounds
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
    it (:func:`_exact_draws`). When every release matches, the released noise
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
        bound, why = realized_scale_witness(pair, ctx,
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


def _gap_allowance(t: int, n_agents: int) -> float:
    """The round-off a correct rule's noise-free release of round ``t`` may show against the replay, in spacings
    of the channel's magnitude (:func:`accounting.replay_densities.noise_free_gap`).

    The engine and the replay compute a noise-free value by the same message and update steps on the same
    combinations; only the order of a combination's sum may differ. Two orders of a sum of at most ``N`` terms
    ``W_ij y_j`` (weights in ``[0, 1]`` summing to at most 1, ``|y_j| <= m``) differ by at most
    ``2 (N - 1) 2**-53 m < 2 N spacing(m)`` (Higham, Accuracy and Stability of Numerical Algorithms, 2002,
    eq. (3.5)); through a non-expansive recursion (averaging, push-sum weights) the differences of rounds
    ``1..t`` add up: ``2 t N`` spacings. Measured on every example: DPSDA-PS's weights 0, Showkatbakhsh's
    Stage II at most 0.01 of it (e.g. 256 spacings of a released ``2e-5``, far below one of the run's ``0.7``).

    Example:
        >>> _gap_allowance(3, 4)
        24.0
    """
    return 2.0 * t * n_agents


def _replay_doubts(replay: Any, not_additive: str | None, adjacent: bool = False) -> list[str]:
    """The doubts of the replay itself: a rule that is not additive (the probe's finding), a channel declared
    noise-free whose releases differ from their noise-free values, and one whose releases match them only
    within the matching tolerance.

    The replay matches a noise-free release with its replayed value within ``NOISE_FREE_RTOL (1 + |mean|)``
    (:mod:`accounting.replay`), far above round-off: a release that hides something below it (another
    channel's noise draw, ``w + 1e-11 z``) matches both problems' values and its round's loss is 0. So each
    round's largest gap (:attr:`accounting.scheduled_replay.ScheduledReplay.noise_free_gap`) must be
    round-off (:func:`_gap_allowance`); a larger gap is a doubt, not a witness (a user's rule may combine in
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
    """The adjacent scenario's releases against the draws the engine handed them (:func:`_exact_draws` on its runs,
    residuals under its own problem), and its noise-free releases against their replayed values
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

    Each residual is then (up to round-off, :func:`_exact_draws`) the declared
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


_EXACT_ULPS = 8.0
"""Round-off allowed between a residual and its declared scale times the engine's draw, in floating-point
spacings of the larger of the released value and the scaled draw, or the smaller of the round's round-off bound
(:func:`_roundoff_floor`) and :data:`_EXACT_RELATIVE` of the scale, whichever is larger..."""
_EXACT_RELATIVE = 1e-10
"""... a cap in units of the declared scale on that bound (measured on the
shipped scenarios under every timing and mode before :func:`_roundoff_floor`: at most 1.1e-11 of the scale,
7e3 spacings of the released value on an online DP-SDA run under asynchronous timing)."""
_HIDDEN_FRACTION = 0.1
"""The draws within the tolerance of 0 could be replaced unseen (e.g. by 0, an atom at the noise-free value):
their probability per run in the claim's scope must stay below this fraction of the claimed delta..."""
_HIDDEN_PURE = 1e-4
"""... or, for a pure claim, below this probability per run (below what any sampling method of the check
resolves at up to 10^4 runs; floating-point Laplace samplers already break pure DP on events of this kind,
Mironov, CCS 2012)."""


def _noisy_declared(ctx: CheckContext) -> dict[str, Any]:
    """Per noisy channel, ``(mechanism, scales)`` (:func:`~asyncdp.privacy.behavior.declared_noise`)."""
    assert ctx.pair is not None
    return {name: (ch.mechanism, ch.scales) for name, ch in declared_noise(ctx.algorithm,
                                                                          ctx.pair.scenario.horizon).items()
            if ch.mechanism is not None}


def side_draws(ctx: CheckContext, side: int, replay: Any) -> tuple[dict[str, Any], str | None]:
    """:func:`_exact_draws` of one side's engine runs under its own problem (the scenario's runs, ``side`` 0, with
    ``replay.residuals``; the adjacent scenario's, 1, with ``replay.residuals_prime``), once per side.

    The first run with a release off its draw is first replayed twice
    (:meth:`~asyncdp.privacy.context.CheckContext.check_run_deterministic`): a rule drawing randomness of its own
    there is refused, not doubted.

    Args:
        ctx: the shared context.
        side: 0 or 1.
        replay: that side's runs replayed under both problems (:meth:`~asyncdp.privacy.context.CheckContext.realized_replay`
            or :meth:`~asyncdp.privacy.context.CheckContext.adjacent_replay`).

    Returns:
        :func:`_exact_draws`'s ``(figures, doubt)``.

    Raises:
        ScenarioError: the rule's steps returned different values for the same inputs along that run.
    """
    key = ("exact draws", side)
    if key not in ctx.cache:
        ctx.cache[key] = _exact_draws(ctx.engine_runs(side), replay.residuals if side == 0 else replay.residuals_prime,
                                      _noisy_declared(ctx), ctx.changed_agent, ctx.delta_claimed, ctx.state_magnitude,
                                      lambda run: ctx.check_run_deterministic(side, run, side))
    return ctx.cache[key]


def _exact_draws(runs: Any, residuals: dict[str, np.ndarray], declared: dict[str, Any],
                 agent: int | None = None, delta: float = 0.0, state_magnitude: float = 0.0,
                 on_mismatch: Callable[[int], None] | None = None) -> tuple[dict[str, Any], str | None]:
    """Is every release's residual its declared scale times the standard draw the engine handed it?

    The declarations state ``released = noise-free value + scale * (a fresh standard draw)`` (or minus it:
    one sign per round for every run and agent, which no draw can choose). The KS tests cannot see a
    deviation on a small fraction of releases (e.g. the draw replaced by 0 when it is small: an atom at the
    noise-free value, which no (epsilon, delta) with delta below that fraction survives), so each residual
    is compared with the draw the engine handed out (recorded by
    :class:`~asyncdp.privacy.behavior.RecordingNoise`), up to round-off: the larger of
    :data:`_EXACT_ULPS` spacings of the values and the smaller of the replay's round-off bound
    (:func:`_roundoff_floor`) and :data:`_EXACT_RELATIVE` of the scale; a residual beyond it is a mismatch
    (data can hide between the round-off and a looser tolerance). A draw smaller than that tolerance could be replaced unseen: the probability of such a draw among one run's releases in the
    claim's scope (``agent``'s, or every agent's) must stay below :data:`_HIDDEN_FRACTION` of ``delta``
    (:data:`_HIDDEN_PURE` for a pure claim), else the noise is not verified to the claim.

    Args:
        runs: the engine runs (their recorded draws).
        residuals: per noisy channel, released minus noise-free values.
        declared: per noisy channel, ``(mechanism, scales)``.
        agent: the changed agent (``None``: every agent, round adjacency).
        delta: the claimed delta.
        state_magnitude: the largest absolute state
            (:attr:`~asyncdp.privacy.context.CheckContext.state_magnitude`).
        on_mismatch: called with the run of the first mismatched release, before the doubt is returned (the
            determinism check of that run, :meth:`~asyncdp.privacy.context.CheckContext.check_run_deterministic`).

    Returns:
        ``(figures, doubt)``: figures ``noise_draws_checked``, ``noise_draws_mismatched`` and
        ``noise_draws_unresolved`` (the probability above; ``None`` when the draws were not recorded), and the
        doubt naming the first mismatched release or the unresolved probability, or ``None``.
    """
    figures: dict[str, Any] = {"noise_draws_checked": None, "noise_draws_mismatched": None,
                               "noise_draws_unresolved": None}
    if runs.noise is None:
        return figures, "the engine's noise draws were not recorded: the released noise is not verified draw by draw"
    checked = mismatched = 0
    first = None
    hidden = None
    for name, (mechanism, scales) in declared.items():
        res, draws, msgs = residuals.get(name), runs.noise.get(name), runs.messages.get(name)
        if res is None or draws is None or res.shape != draws.shape:
            return figures, (f"channel {name!r}: the engine's noise draws do not have the shape of the residuals "
                             "(a message wider than its noise?): the released noise is not verified draw by draw")
        scales = np.asarray(scales, dtype=float)
        # the replay's round-off bound where it is the tighter one (never looser than the measured floor: a large
        # state magnitude or a long recursion makes the bound looser, and a looser tolerance hides more draws; its
        # running peak is the rule's to inflate); a
        # residual beyond it is a mismatch, not a reason to loosen the tolerance: a rule may hide its data in
        # the room between the round-off and a looser floor (releases on a lattice of step 5e-11 of the scale)
        floor = np.minimum(_roundoff_floor(msgs, state_magnitude), _EXACT_RELATIVE * scales)
        count, first_here, per_run, n_released = _draws_match(res, draws, msgs, scales, mechanism, agent, floor)
        checked += n_released
        if count and first is None:
            first = (name, *first_here)
        mismatched += count
        hidden = per_run if hidden is None else hidden + per_run
    worst_hidden = 0.0 if hidden is None or hidden.size == 0 else float(hidden.max())
    figures.update(noise_draws_checked=checked, noise_draws_mismatched=mismatched,
                   noise_draws_unresolved=worst_hidden)
    if first is not None:
        name, idx, got, want = first
        if on_mismatch is not None:
            on_mismatch(int(idx[0]))
        where = (f"run {idx[0]}, round {idx[1] + 1}, agent {idx[2]}" +
                 (f", receiver {idx[3]}" if len(idx) > 4 else "") + f", coordinate {idx[-1]}")
        return figures, (f"noise draws: {mismatched} of {checked} released coordinates do not carry their declared "
                         f"scale times the standard draw the engine handed them (first: channel {name!r}, {where}: "
                         f"residual {got:.6g}, declared scale x draw {want:.6g}); the declaration states that draw, "
                         "and a deviation on a fraction of releases too small for the distribution tests (an atom "
                         "at the noise-free value) can leak beyond the claim: the released noise is not verified")
    limit = _HIDDEN_FRACTION * delta if delta > 0 else _HIDDEN_PURE
    if worst_hidden > limit:
        bound = ("a tenth of the delta the claim is tested at: its own, or --delta for a Renyi or zCDP claim"
                 if delta > 0 else "the bound for a pure claim")
        return figures, (f"noise draws: each release matches its draw only up to the floating-point resolution of "
                         f"the released values, and a draw within that resolution of 0 could be replaced unseen: "
                         f"probability {worst_hidden:.3g} per run in the claim's scope, above {limit:.3g} ({bound}): "
                         "the noise is too small for the magnitude of the released values to be verified to the claim")
    return figures, None


def _roundoff_floor(messages: np.ndarray, state_magnitude: float) -> np.ndarray:
    """Per round, the most round-off a correct rule's residual may carry beyond a few spacings of its own value,
    ``(T,)``: :func:`_gap_allowance` spacings of the largest of the channel's released values so far (over the
    runs; NaN read as 0, an infinity as the largest float) and ``state_magnitude``.

    A residual is a released value minus the noise-free value the replay recomputes by the rule's own steps on
    the released messages; the two differ only in the order of a combination's sums, through the recursion
    rounds ``1..t``: the bound of the noise-free releases (:func:`_replay_doubts`), in spacings of the values
    the means are computed from (consensus cancels: a small release may come from large terms). Measured on
    every shipped privacy example under lockstep, deadline and asynchronous timing (with and without a
    staleness limit, lossy links): at most 3.1 spacings of that magnitude (Wang and Başar's 400 rounds), far below
    the bound (2 t N spacings in round t, 2 N already in round 1).

    Example:
        >>> m = np.array([[[[1.0]], [[0.5]], [[np.nan]]]])  # runs, rounds, agents, coordinates
        >>> bool(np.all(_roundoff_floor(m, 0.0) == np.array([2.0, 4.0, 6.0]) * np.spacing(1.0)))
        True
    """
    peak = np.maximum.accumulate(_round_magnitude(messages)) if np.size(messages) else np.zeros(0)
    with np.errstate(over="ignore"):
        spacing = np.spacing(np.nan_to_num(np.maximum(peak, state_magnitude)))
    n_agents = messages.shape[2] if messages.ndim > 2 else 1
    return np.array([_gap_allowance(t, n_agents) for t in range(1, len(peak) + 1)]) * spacing


def _spacing(a: np.ndarray) -> np.ndarray:
    """``np.spacing(np.nan_to_num(a))`` of non-negative (or NaN, or ``+inf``) ``a``, overwriting ``a``: NaN reads
    as 0, an infinity as the largest float (whose spacing is ``inf``)."""
    np.fmax(a, 0.0, out=a)  # NaN -> 0 (fmax takes the number): nan_to_num's values, in two passes instead of six
    np.minimum(a, np.finfo(float).max, out=a)
    with np.errstate(over="ignore"):
        return np.spacing(a, out=a)


def _spread(per_round: Any, run: tuple[int, ...]) -> np.ndarray:
    """A value per round ``(T,)`` spread over one run's entries ``run = (T, ...)``, contiguous.

    Combined with ``(R, T, ...)`` arrays, numpy then loops over a whole run at a time, where a ``(1, T, 1, ...)``
    operand makes it loop over one release's few entries (the same values, elementwise).
    """
    values = np.asarray(per_round, dtype=float).reshape((-1,) + (1,) * (len(run) - 1))
    return np.ascontiguousarray(np.broadcast_to(values, run))


_CHUNK = 1 << 16
"""Values per block of :func:`_draws_match` (512 kB per float array: the blocks' arrays stay in the cache and
reuse their memory, where arrays of every value cost fresh memory pages)."""


def _draws_match(res: np.ndarray, draws: np.ndarray, msgs: np.ndarray, scales: np.ndarray, mechanism: str,
                 agent: int | None, floor: np.ndarray) -> tuple[int, tuple[Any, ...], np.ndarray, int]:
    """One channel of :func:`_exact_draws`: ``(mismatched, (index, residual, expected), per-run hidden
    probability, released)``.

    The tolerance of each value is the larger of :data:`_EXACT_ULPS` spacings of ``max(|released value|,
    |scale x draw|)`` (NaN read as 0, infinities as the largest float) and its round's ``floor`` (``(T,)``).
    Each round takes the sign (``+`` or ``-`` the scaled draw) with fewer mismatches, ``+`` on ties. The runs
    are read in blocks of :data:`_CHUNK` values (each run's hidden probability is its own sum, as on the whole
    array); when a release mismatches the ``+`` sign the whole arrays are compared again with both signs
    (:func:`_draws_match_whole`), so the figures are those of one pass over the whole arrays.
    """
    msgs = np.broadcast_to(msgs, res.shape)
    draws = np.broadcast_to(draws, res.shape)
    per = max(1, int(np.prod(res.shape[1:])))
    step = max(1, _CHUNK // per)
    parts, released_count = [], 0
    for a in range(0, res.shape[0], step):
        b = a + step
        count, _, per_run, n_released = _draws_match_whole(res[a:b], draws[a:b], msgs[a:b], scales, mechanism, agent,
                                                           floor, plus_only=True)
        if count:
            return _draws_match_whole(res, draws, msgs, scales, mechanism, agent, floor)
        parts.append(per_run)
        released_count += n_released
    per_run = np.concatenate(parts) if parts else np.zeros(0)
    return 0, (), per_run, released_count


def _draws_match_whole(res: np.ndarray, draws: np.ndarray, msgs: np.ndarray, scales: np.ndarray, mechanism: str,
                       agent: int | None, floor: np.ndarray, plus_only: bool = False
                       ) -> tuple[int, tuple[Any, ...], np.ndarray, int]:
    """:func:`_draws_match` on the whole arrays at once (when some release mismatches the ``+`` sign).

    ``plus_only``: a block of runs; only whether some release mismatches the ``+`` sign is decided (the count
    is then that of ``+`` mismatches and the first index is not given).

    The tolerance of each value is the larger of :data:`_EXACT_ULPS` spacings of ``max(|released value|,
    |scale x draw|)`` (NaN read as 0, infinities as the largest float) and its round's ``floor``.
    Each round takes the sign (``+`` or ``-`` the scaled draw) with fewer mismatches, ``+`` on ties; the ``-``
    side is compared only in rounds where ``+`` mismatches somewhere (elsewhere ``-`` cannot have fewer).
    """
    scale = _spread(scales, res.shape[1:])  # (T, ...): one run's entries
    positive = scale > 0
    expected = scale * draws
    released = np.isfinite(res)
    released &= positive
    # max(|msgs|, |expected|) with NaN as 0 and +-inf as the largest float (as nan_to_num of each, then max)
    tol = np.abs(msgs)
    np.fmax(tol, np.abs(expected), out=tol)
    tol = _spacing(tol)
    tol *= _EXACT_ULPS
    np.maximum(tol, _spread(floor, res.shape[1:]), out=tol)
    # a NaN draw behind a release is a mismatch too; a rule may subtract its draw instead (-z is as fresh a
    # draw as z): one sign per round, the same for every run, agent and coordinate, so never chosen by a draw
    gap = np.subtract(res, expected)
    np.abs(gap, out=gap)
    bad = gap <= tol
    np.logical_not(bad, out=bad)
    bad &= released
    if plus_only:
        count = int(np.count_nonzero(bad))
        if count:
            return count, (), np.zeros(0), 0
    axes = tuple(k for k in range(res.ndim) if k != 1)
    plus_count = bad.sum(axis=axes) if bad.any() else np.zeros(res.shape[1], dtype=int)  # (T,)
    rounds = np.flatnonzero(plus_count)
    if rounds.size:  # the rounds where minus can do better: compare them with -expected
        sub_res, sub_exp, sub_tol = res[:, rounds], expected[:, rounds], tol[:, rounds]
        bad_minus = ~(np.abs(sub_res + sub_exp) <= sub_tol) & released[:, rounds]
        minus = bad_minus.sum(axis=axes) < plus_count[rounds]
        if minus.any():
            flip = rounds[minus]
            bad[:, flip] = bad_minus[:, minus]
            expected[:, flip] = -expected[:, flip]
    count = int(np.count_nonzero(bad))
    first: tuple[Any, ...] = ()
    if count:
        idx = tuple(int(k) for k in np.argwhere(bad)[0])
        first = (idx, float(res[idx]), float(expected[idx]))
    # P(|z| <= tol / scale) per released coordinate: <= 2 phi(0) u (normal), 1 - e^-u <= u (Laplace)
    divisor = np.where(positive, scale, 1.0)
    if agent is None:
        tol_s, rel_s = tol, released
    else:
        tol_s, rel_s, divisor = tol[:, :, agent], released[:, :, agent], divisor[:, agent]
    u = tol_s / divisor
    np.copyto(u, 0.0, where=~rel_s)  # 0 where nothing is released
    if mechanism == "gaussian":
        u *= 2.0 / math.sqrt(2.0 * math.pi)
    p = np.minimum(1.0, u, out=u)
    per_run = p.reshape(p.shape[0], -1).sum(axis=1)
    return count, first, per_run, int(np.count_nonzero(released))


def _round_magnitude(messages: np.ndarray) -> np.ndarray:
    """The largest absolute released value of each round, ``(T,)`` (0 for a round with nothing released).

    ``fmax`` skips NaN (nothing released) unless a round has nothing else: that round's NaN becomes 0. The
    largest and smallest value over the runs first (run after run, whole rounds at a time; ``max |x|`` is the
    larger of ``|max x|`` and ``|min x|``, exactly, without an array of every ``|x|``), then within each round.

    Example:
        >>> _round_magnitude(np.array([[[[1.0, -3.0]], [[np.nan, np.nan]]], [[[2.0, np.nan]], [[np.nan, np.nan]]]]))
        array([3., 0.])
    """
    m = np.asarray(messages, dtype=float)
    m = m.reshape(m.shape[0], m.shape[1], -1)
    top, bottom = np.fmax.reduce(m, axis=0), np.fmin.reduce(m, axis=0)
    a = np.fmax(np.abs(top, out=top), np.abs(bottom, out=bottom), out=top)
    return np.nan_to_num(np.fmax.reduce(a, axis=1), nan=0.0)


def release_spacing(messages: np.ndarray, magnitude: Any) -> np.ndarray:
    """The floating-point spacing of the released values at ``magnitude``: float32's when every finite release
    is a float32 number (a rule that releases float32 rounds each release to that resolution), else float64's.

    Example:
        >>> m = np.array([[[[0.5, 1.25]]]])
        >>> bool(release_spacing(m, 1.0) == np.spacing(np.float32(1.0)))
        True
    """
    mag = np.asarray(magnitude, dtype=float)
    return np.spacing(mag.astype(np.float32)).astype(np.float64) if _all_float32(messages) else np.spacing(mag)


_FLOAT32_HEAD = 1024
"""Values :func:`_all_float32` reads first: one finite float64 number among them settles the answer."""


def _all_float32(messages: Any) -> bool:
    """Whether ``messages`` has a finite value and every finite value is a float32 number.

    The first :data:`_FLOAT32_HEAD` values are read first: a finite value among them that float32 does not hold
    (the usual float64 release) answers ``False`` without reading the rest, as the whole comparison would.

    Example:
        >>> _all_float32(np.array([0.5, np.nan])), _all_float32(np.array([np.nan, 0.1])), _all_float32(np.array([np.nan]))
        (True, False, False)
    """
    m = np.asarray(messages, dtype=float).reshape(-1)
    with np.errstate(over="ignore"):
        for part in (m[:_FLOAT32_HEAD], m):
            finite = part[np.isfinite(part)]
            if not np.all(finite.astype(np.float32).astype(np.float64) == finite):
                return False
    return bool(finite.size)


def _roundoff_budget(ctx: CheckContext, runs: Any) -> np.ndarray:
    """Per round, the most floating-point round-off can add to a run's replayed loss, ``(T,)``.

    The loss of a round sums ``(|y - mu'| - |y - mu|) / b`` (Laplace) or the
    Gaussian analogue over the changed agent's coordinates (every agent's
    under round adjacency; the others' terms are exactly 0: both replays
    compute their means by the same operations). Each residual carries at
    most a few floating-point spacings of the values its mean is computed from,
    the released value or the state (:attr:`~asyncdp.privacy.context.CheckContext.state_magnitude`:
    a rule releasing offsets from states near ``1e8`` rounds its means at 1.5e-8), so a round
    can gain at most ``4 k spacing(max(max |y|, max |x|)) / b`` (Laplace; the Gaussian term
    is bounded likewise with the largest residual). It is negligible unless
    the noise scale nears that resolution. The spacing is
    float32's for a rule that releases float32 numbers (:func:`release_spacing`):
    its means are rounded to that resolution.
    """
    horizon = ctx.pair.scenario.horizon if ctx.pair is not None else 0
    budget = np.zeros(horizon)
    for name, ch in declared_noise(ctx.algorithm, horizon).items():
        if ch.mechanism is None:
            continue
        msgs = runs.messages[name]
        mag = _round_magnitude(msgs)
        coords = int(np.prod(msgs.shape[3:])) * (msgs.shape[2] if ctx.changed_agent is None else 1)
        scales = np.where(ch.scales > 0, ch.scales, np.inf)
        err = 4.0 * release_spacing(msgs, np.maximum(mag, ctx.state_magnitude))
        if ch.mechanism == "laplace":
            budget += coords * err / scales
        else:  # |(y - mu')^2 - (y - mu)^2| changes by at most 2 (|y - mu| + |y - mu'|) err; |y - mu| <= 2 max|y|
            budget += coords * 8.0 * mag * err / (2.0 * scales**2)
    return budget


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


def replay_exactly(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """Exact privacy loss of every engine run on its realized schedule, audited.

    Works for every timing and link model (the schedule does not depend on
    the data or the noise: :mod:`accounting.scheduled_replay`), broadcast and
    unicast, any number of channels. Pure claims: any loss above epsilon is a
    witness (exact, given the declared noise that :func:`check_conformance`
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


def transcript_features(ctx: CheckContext, side: int) -> np.ndarray:
    """The engine's transcripts of one side as a sample matrix for the black-box auditor.

    The changed agent's whole message sequence on every channel (every
    agent's under round adjacency, where every agent's input changes; the
    focus round only for a per-iteration claim), flattened per run, NaN
    where nothing was released. The other agents' messages carry the changed
    agent's data only through what they combined from it; leaving them out
    keeps the learned score's dimension, and its training time, down.

    Returns:
        ``(R, features)``.
    """
    runs = ctx.engine_runs(side)
    cols = []
    for arr in runs.messages.values():
        a = arr if ctx.focus is None else arr[:, ctx.focus:ctx.focus + 1]
        if ctx.changed_agent is not None:
            a = a[:, :, ctx.changed_agent]
        cols.append(a.reshape(a.shape[0], -1))
    return np.concatenate(cols, axis=1)


BLACKBOX_FIT_ROWS = 250
"""Rows per side that fit the black-box auditor's learned score (``max_train`` of
:func:`accounting.auditing.audit_samples`); the other runs choose the event and certify it. The fit is the
audit's cost, and it grew with ``--runs`` (a quarter of the runs); a score on at most a few hundred features
learns no better from more rows, while every row kept for certification tightens the bounds."""


def audit_blackbox(pair: ScenarioPair, ctx: CheckContext) -> Evidence:
    """The black-box auditor on the engine's transcripts of both scenarios.

    :func:`accounting.auditing.audit_samples` learns an event from part of
    the runs of each side (:func:`transcript_features`; the score is fitted on
    at most :data:`BLACKBOX_FIT_ROWS` runs per side) and certifies a lower
    bound on epsilon (and on delta at the claimed epsilon) on the others, at
    level ``alpha_share``. Its candidate scores include the low-bits score
    (``low_bits=True``, :mod:`accounting.auditing.lowbits`): every other
    method models releases as real numbers, so a rule that writes its data
    into the last mantissa bits of its releases (one unit in the last place)
    is seen only here. The transcripts are float64 (the engines store
    messages so); a rule's float32 releases are read at their own lowest
    bits, NaN entries (nothing released) by their bit pattern, which is the
    same under both problems. Honest floating-point releases leak through
    their last bits too, far less (that module gives the numbers); a witness
    whose event is on the low-bits score is a leak of the releases as
    floats.

    Args:
        pair: the scenario pair.
        ctx: the shared context.

    Returns:
        Evidence ``"black-box audit"`` (realized behavior) with figure
        ``empirical_epsilon_lower_bound``; witness ``{"kind": "blackbox", ...}``
        when the auditor refutes the claim; a doubt when the batch and SimPy engines released other values
        for the same seed on either side (``EngineRuns.disagreement`` of :mod:`asyncdp.privacy.behavior`: the
        runs every method read are then not the runs of both engines).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> e = audit_blackbox(*small_example())
        >>> e.witness is None and e.figures["empirical_epsilon_lower_bound"] <= 1.0
        True
    """
    from accounting.auditing import audit_samples

    a, b = transcript_features(ctx, 0), transcript_features(ctx, 1)
    # every method reads these runs: if the other engine runs another mechanism, none of them has seen it
    split = [f"{side} side: {d}" for side, d in (("scenario", ctx.engine_runs(0).disagreement),
                                                 ("adjacent", ctx.engine_runs(1).disagreement)) if d is not None]
    doubt = "; ".join(split) if split else None
    eps = ctx.epsilon_claimed if math.isfinite(ctx.epsilon_claimed) else 30.0  # no claim: any finite epsilon
    try:
        report = audit_samples(a, b, epsilon=eps, delta=ctx.delta_claimed, confidence=1.0 - ctx.options.alpha_share,
                               seed=ctx.options.seed, max_train=BLACKBOX_FIT_ROWS, low_bits=True)
    except AccountingError as exc:
        return Evidence("black-box audit", "realized behavior", {"empirical_epsilon_lower_bound": 0.0},
                        reasons=(f"no black-box audit: {exc}",) + tuple(split), doubt=doubt)
    figures = {"empirical_epsilon_lower_bound": float(report.epsilon_lower_bound),
               "blackbox_delta_lower_bound": report.delta_lower_bound}
    if not (report.violation and math.isfinite(ctx.epsilon_claimed)):
        return Evidence("black-box audit", "realized behavior", figures, reasons=tuple(split), doubt=doubt)
    witness = {"kind": "blackbox", "event": report.event, "counts": dict(report.counts), "method": report.method,
               "epsilon_lower_bound": float(report.epsilon_lower_bound), "seed": ctx.options.seed,
               "runs": ctx.options.runs, "claim_form": ctx.form_name}
    what = (f"epsilon >= {report.epsilon_lower_bound:.6g}" if report.epsilon_lower_bound > ctx.epsilon_claimed
            else f"delta(epsilon={ctx.epsilon_claimed:.6g}) >= {report.delta_lower_bound:.3g}")
    floats = ("; the event reads the releases' lowest mantissa bits: the released floating-point numbers "
              "leak what their real values need not (Mironov, CCS 2012)") if "low-bits" in str(report.event) else ""
    return Evidence("black-box audit", "realized behavior", figures, witness=witness, doubt=doubt,
                    reasons=(f"black-box ({report.method}): {what} with confidence {report.confidence:.6g} on the "
                             f"engine's transcripts (event: {report.event}){floats}",) + tuple(split))
