"""Exact privacy profiles of a pair whose realized shifts are deterministic: :func:`pair_profile`.

A pair whose every release is a fixed shift of the same noise under both
problems (e.g. costs whose gradient difference does not depend on ``x`` —
linear costs, or quadratics differing in their linear term — with no
projection or clipping active on the runs) composes into shifted Gaussian
(or Laplace) mechanisms with known shifts, so its privacy profile is exact:
for Gaussian noise one ``mu = sqrt(sum ||shift / std||^2)`` in closed form
(:mod:`accounting.profiles`). Whether the shifts are fixed is checked on the
runs (:func:`accounting.profiles.profile_from_shifts`), never assumed: the
shifts come from replaying the engine's runs under both problems
(:func:`accounting.coverage.realized_shifts`). ``delta(epsilon)`` of the
profile above the claimed delta refutes the claim
(:func:`accounting.refutation.refute`), as its Rényi divergence does a Rényi
or zCDP claim, once transcripts drawn where that witness weighs them (a tilt
beyond the runs) keep the profile's shifts (:func:`escort_shifts_hold`); with
Gaussian releases the divergence then refutes less the margin those draws
certify (:func:`escort_renyi_lower`), and under lockstep an approximate claim's
``delta(epsilon)`` less the margin of draws that kept every release's shift
(:func:`exact_delta_lower`). A
noise-free release that moves tells the problems apart with certainty
(``delta = 1``).

The runs must share one schedule (lockstep timing) for the profile to be
*the* profile; under deadline or asynchronous timing each run's schedule
gives its own profile, and :func:`pair_profile` (with
``schedule_confidence``) bounds their average over the sampled schedules
from below. A pair whose shifts vary from run to run (a projection active on
some runs) has no exact profile: :func:`scheduled_tilted_bound` bounds its
``delta(epsilon)`` by importance sampling on realized schedules instead.

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> from asyncdp.privacy.coverage import pair_shifts
    >>> pair, ctx = small_example()
    >>> out = pair_profile(ctx, pair_shifts(pair, ctx), pair.scenario, ctx.engine_runs(0), escort_error=0.0125)
    >>> out.refutation is None or not out.refutation.refuted
    True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting.errors import AccountingError

from ..scenario import Scenario
from .behavior import EngineRuns, declared_noise, schedule_batch
from .coverage import coordinate_roundoff

__all__ = ["ExactProfile", "pair_profile", "escort_shifts_hold", "escort_renyi_lower", "exact_delta_lower",
           "ESCORT_MU_RTOL",
           "accountant_mu", "realized_mu", "scheduled_tilted_bound", "escort_draws_renyi"]


@dataclass(frozen=True)
class ExactProfile:
    """The exact privacy profile of a pair, when its shifts are deterministic on the runs.

    Attributes:
        refutation: :func:`accounting.refutation.refute` of the claim by the profile (``None``: no exact profile).
        reason: one line: the profile's ``mu`` (Gaussian) or why there is none (e.g. the release whose shift varies).
        certain: a noise-free release moves: the problems are told apart with certainty (``delta = 1``).
        note: why the profile's Rényi divergence was set aside (:func:`escort_shifts_hold`), or ``None``.
    """

    refutation: Any
    reason: str
    certain: bool = False
    note: str | None = None


def _one_schedule(runs: EngineRuns) -> bool:
    """Whether every run has the same realized schedule (lockstep timing without losses)."""
    first = runs.schedules[0]
    return all(s is first or s == first for s in runs.schedules)


def _shrunk(shifts: np.ndarray, roundoff: float) -> np.ndarray:
    """Every coordinate of the realized shifts moved toward 0 by ``roundoff`` (not past it; NaN kept).

    A realized shift carries up to ``roundoff`` per coordinate (:func:`asyncdp.privacy.coverage.coordinate_roundoff`:
    the spacing of the released values or of the states they are computed from), so the shrunk shifts are at most
    the pair's in real arithmetic, coordinate by coordinate: their profile is a lower bound on its profile. A rule
    releasing offsets from states near ``1e8`` computes a shift at the lemma as the lemma + 1.2e-8 on every run,
    which the profile read as a larger ``mu`` than the claim's, exact to the last digit: a violation of a true claim.

    Example:
        >>> _shrunk(np.array([0.3 + 1e-8, -1e-9, np.nan]), 2e-8).tolist()
        [0.29999999, -0.0, nan]
    """
    return np.sign(shifts) * np.maximum(np.abs(shifts) - roundoff, 0.0)


def pair_profile(ctx: Any, shifts: Any, scenario: Scenario, runs: EngineRuns, *, escort_error: float,
                 schedule_confidence: float | None = None, adjacent: Scenario | None = None) -> ExactProfile:
    """The exact profile of a pair from its realized shifts, if they are fixed given the schedule (module docstring).

    One schedule (lockstep): the shifts must be the same on every run; the
    profile is then exact, and a refutation has confidence 1 unless it rests on escort draws (below). Several
    schedules (deadline or asynchronous timing, lossy links), only with
    ``schedule_confidence``: each run's schedule ``S`` has its own exact
    profile ``delta_S``, known when the shifts are fixed given ``S`` — checked
    on the runs: either every run has the same shifts (then every sampled
    schedule has that profile), or the runs are grouped by schedule and every
    group (at least 2 runs each) has fixed shifts. The pair's
    ``delta(epsilon) = E_S[delta_S(epsilon)]`` (the observer sees the
    schedule) is then bounded from below from the runs' i.i.d. schedules by
    :func:`accounting.profiles.schedule_average_lower` at
    ``schedule_confidence``: exact profiles, the sampling of schedules the only error. A Rényi or zCDP claim
    is also compared with the pair's divergences, bounded from below from the same profiles
    (:func:`accounting.profiles.schedule_renyi_lower`; each test at half the error): its conversion to
    ``(epsilon, delta)`` is much weaker than the claim, as under lockstep, where the exact divergence is compared.

    A divergence of order ``alpha`` is an expectation under the order-``alpha`` escort of the pair (its Gaussian
    releases' noise moved by ``(alpha - 1)`` times their shifts, far beyond where the runs go), and ``delta(epsilon)``
    weighs losses near ``epsilon`` (the releases moved about ``epsilon / mu^2 - 1/2`` times their shifts), so shifts
    found fixed on the runs need not hold there: a projection onto a box that no run reaches shrinks them there, and
    the pair is far below the closed form. A refutation is kept only when the pair's transcripts drawn under that
    tilt (:func:`escort_shifts_hold`) keep the profile's shifts, and then a divergence refutes only as the bound
    those draws certify at confidence ``1 - escort_error`` (:func:`escort_renyi_lower`; under several schedules,
    order statistics counting a schedule only where its draw kept ``mu``). An approximate claim's Gaussian
    ``delta(epsilon)`` under one schedule refutes as the closed form less the margin of tilted draws that kept
    every release's shift (:func:`exact_delta_lower`, at confidence ``1 - escort_error``); under several
    schedules, or for another claim form, not at all (draws that keep the composed ``mu`` certify no margin for
    it). A divergence set aside leaves the claim's ``(epsilon, delta)`` conversion to be tested (under its own
    tilt), a ``delta`` set aside nothing.

    Args:
        ctx: the check's context (the claim, the focus round of a per-iteration claim).
        shifts: per noisy channel the realized shifts on the runs (:func:`accounting.coverage.realized_shifts`),
            or the replay's error.
        scenario: the pair's first scenario (its algorithm's declared noise).
        runs: the engine runs the shifts come from.
        escort_error: the error rate of the lockstep escort draws a Gaussian divergence witness rests on, in
            ``(0, 1)`` (its confidence is ``1 - escort_error``).
        schedule_confidence: the level of the average over schedules (``None``: one schedule only).
        adjacent: the pair's second scenario (its rule's steps draw the escort transcripts); ``None``: no
            refutation by a divergence of a profile with Gaussian releases.

    Returns:
        An :class:`ExactProfile`.
    """
    from accounting.claim_forms import as_form
    from accounting.profiles import PrivacyProfile, profile_from_shifts, schedule_average_lower, schedule_renyi_lower
    from accounting.refutation import DEFAULT_ALPHAS, check_epsilon, refute

    if isinstance(shifts, AccountingError):
        return ExactProfile(None, f"no exact profile: {shifts}")
    if runs.runs < 2:
        return ExactProfile(None, "no exact profile: one run cannot show that the shifts are fixed")
    one = _one_schedule(runs)
    if not one and schedule_confidence is None:
        return ExactProfile(None, "no exact profile: the runs have different schedules (deadline or asynchronous "
                                  "timing, or lossy links): each schedule has its own profile")
    noise = {c: ch for c, ch in declared_noise(scenario.algorithm.bind(scenario.problem), scenario.horizon).items()
             if ch.mechanism is not None and c in shifts}
    use = {c: _shrunk(np.asarray(shifts[c], dtype=float), coordinate_roundoff(runs.messages[c], ctx.state_magnitude))
           for c in noise}
    if ctx.focus is not None:  # a per-iteration claim: the focus round's release only
        keep = np.zeros(scenario.horizon, dtype=bool)
        keep[ctx.focus] = True
        use = {c: np.where(keep.reshape((1, -1) + (1,) * (s.ndim - 2)), s, np.nan) for c, s in use.items()}
    scales = {c: ch.scales for c, ch in noise.items()}
    mechs = {c: str(ch.mechanism) for c, ch in noise.items()}
    try:
        chk = profile_from_shifts(use, scales, mechs)
        groups: list[list[int]] = []
        if not one and chk.profile is None and chk.noise_free is None:  # fixed given each schedule?
            by_id: dict[int, list[int]] = {}
            alive = []  # a batch's schedules are views made on access: kept alive so that no id is reused
            for r, sched in enumerate(runs.schedules):
                alive.append(sched)
                by_id.setdefault(id(sched), []).append(r)
            groups = list(by_id.values())
            if min(len(g) for g in groups) < 2:
                return ExactProfile(None, f"{chk.reason}; the runs' schedules differ and some were sampled once, so "
                                          "no per-schedule profile can be checked")
            checks = [profile_from_shifts({c: s[g] for c, s in use.items()}, scales, mechs) for g in groups]
    except AccountingError as exc:
        return ExactProfile(None, f"no exact profile: {exc}")
    if chk.noise_free is not None:
        return ExactProfile(None, chk.reason, certain=True)
    claim = (ctx.epsilon_claimed, ctx.delta_claimed)
    if one:
        if chk.profile is None:
            return ExactProfile(None, chk.reason)
        # a Rényi or zCDP claim is refuted by an exact divergence above it too (its conversion is weaker)
        form = getattr(ctx, "claim_form", None)
        exact_claim = form if getattr(form, "form", None) in ("renyi", "zcdp") else claim
        profiles = [chk.profile] * runs.runs
        found = refute(exact_claim, profile=chk.profile, delta=ctx.delta_claimed)
        doubt = None
        if found.refuted and _escort_applies(ctx, profiles):  # Gaussian: the witness weighs transcripts off the runs
            if found.alpha is None and as_form(exact_claim).form == "approximate":
                bound, doubt = exact_delta_lower(ctx, scenario, adjacent, runs, use, scales, found.epsilon,
                                                 escort_error)
                if doubt is None:
                    found = refute(exact_claim, bounds=[bound], delta=ctx.delta_claimed, alphas=())
                    if not found.refuted:
                        doubt = _margin_doubt(bound)
            else:
                doubt = _tilt_doubt(ctx, scenario, adjacent, runs, found, profiles)  # a delta's: always a reason
            lowered = _escort_lowered(exact_claim, chk.profile, runs.runs, escort_error)
            if lowered.refuted:
                held = (doubt if lowered.alpha == found.alpha else
                        escort_shifts_hold(ctx, scenario, adjacent, runs, profiles, alpha=lowered.alpha))
                doubt = held if held is None else "; ".join(dict.fromkeys(filter(None, [doubt, held])))
                found = lowered if held is None else found
            elif found.alpha is not None and doubt is None:
                doubt = (f"the exact Renyi divergence of order {found.alpha:.6g} ({found.renyi_witness:.6g}) exceeds "
                         f"the claim's {found.renyi_allowed:.6g} by less than the margin its {runs.runs} escort "
                         "draws certify (escort_renyi_lower)")
        if doubt:
            return ExactProfile(_set_aside(claim, ctx.delta_claimed, found, doubt), f"{chk.reason}; {doubt}",
                                note=doubt)
        return ExactProfile(found, chk.reason)
    assert schedule_confidence is not None
    form = getattr(ctx, "claim_form", None)
    divergence = getattr(form, "form", None) in ("renyi", "zcdp")
    combined = ("delta averaged over the runs' schedules" +
                (", and their Renyi divergences bounded by order statistics" if divergence else ""))
    if groups:
        bad = next((c for c in checks if c.profile is None), None)
        if bad is not None:
            return ExactProfile(None, bad.reason, certain=bad.noise_free is not None)
        per_run: list[Any] = [None] * runs.runs
        for g, c in zip(groups, checks):
            for r in g:
                per_run[r] = c.profile
        reason = (f"the shifts are fixed given each of the {len(groups)} sampled schedules: one exact profile per "
                  "schedule, " + combined)
    else:
        assert chk.profile is not None
        per_run = [chk.profile] * runs.runs
        reason = (f"{chk.reason}, on {runs.runs} runs with different schedules: every sampled schedule has this "
                  "exact profile, " + combined)
    eps = check_epsilon(claim, ctx.delta_claimed)
    # a Rényi or zCDP claim's conversion is far weaker than the claim: its divergences are tested as well, each
    # test at half the error (union bound)
    level = 1.0 - (1.0 - schedule_confidence) / 2 if divergence else schedule_confidence
    bound = schedule_average_lower(per_run, eps, confidence=level)
    bound = dataclasses.replace(bound, method="schedule average of exact profiles")
    found = refute(claim, bounds=[bound], delta=ctx.delta_claimed)
    doubts = [_tilt_doubt(ctx, scenario, adjacent, runs, found, per_run)]
    if doubts[0] is not None:
        found = _set_aside(claim, ctx.delta_claimed, found, doubts[0])
    if divergence and not found.refuted:
        orders = [form.alpha] if form.form == "renyi" else DEFAULT_ALPHAS
        if _escort_applies(ctx, per_run) and not any(pr.laplace_ratios for pr in per_run):
            # a schedule counts only where its escort draw keeps mu: floor 0 (with a Laplace channel nothing is drawn)
            kept = {id(pr): PrivacyProfile(pr.gaussian_mu * (1 - ESCORT_MU_RTOL)) for pr in per_run}
            bounds = schedule_renyi_lower([kept[id(pr)] for pr in per_run], orders, confidence=level, floor=0.0)
        else:
            bounds = schedule_renyi_lower(per_run, orders, confidence=level)
        by_divergence = refute(form, renyi_bounds=bounds)
        doubts.append(_tilt_doubt(ctx, scenario, adjacent, runs, by_divergence, per_run))
        if by_divergence.refuted and doubts[-1] is None:
            found = by_divergence
        elif not found.refuted and not by_divergence.refuted:  # how near the divergences came, not only the delta
            found = dataclasses.replace(found, reason=f"{found.reason}; "
                                                      f"{by_divergence.reason.removeprefix('not refuted: ')}")
    doubt = "; ".join(d for d in doubts if d is not None) or None
    return ExactProfile(found, reason if doubt is None else f"{reason}; {doubt}", note=doubt)


def _tilt_doubt(ctx: Any, p: Scenario, q: Scenario | None, runs: EngineRuns, found: Any, profiles: Any) -> str | None:
    """:func:`escort_shifts_hold` for the witness of a refutation ``found`` (``None`` when it refutes nothing): its
    order's escort for a Rényi witness, the tilt toward its epsilon for a ``delta(epsilon)`` witness."""
    if not found.refuted:
        return None
    if found.alpha is not None:
        return escort_shifts_hold(ctx, p, q, runs, profiles, alpha=found.alpha)
    return escort_shifts_hold(ctx, p, q, runs, profiles, epsilon=found.epsilon)


def _set_aside(claim: Any, delta: float, found: Any, doubt: str) -> Any:
    """The refutation ``found`` set aside (:func:`escort_shifts_hold` said why): not refuted, the reason kept."""
    from accounting.refutation import refute

    if not found.refuted:
        return found
    return dataclasses.replace(refute(claim, delta=delta, alphas=()), reason=f"not refuted: {doubt}")


ESCORT_MU_RTOL = 1e-6
"""How far below its run's composed ``mu`` a tilted transcript's may be and still keep it (relative round-off)."""


def _escort_applies(ctx: Any, profiles: Any) -> bool:
    """Whether :func:`escort_shifts_hold` draws tilted transcripts for ``profiles``: a Gaussian release, no focus."""
    mus = np.array([pr.gaussian_mu for pr in profiles], dtype=float)
    return bool((mus > 0).any()) and ctx.focus is None


def escort_renyi_lower(closed: float, alpha: float, n: int, error: float) -> Any:
    """The lower bound on ``D_alpha`` left of a Gaussian profile's closed form ``closed`` once ``n`` escort draws kept
    its ``mu`` (:func:`escort_shifts_hold`): ``closed (1 - ESCORT_MU_RTOL)^2 - log(1/error) / (n (alpha - 1))``.

    The sequential escort releases each value at ``m + (alpha - 1)(m - m')`` plus noise, and
    ``E_P[exp((alpha - 1) L)] = E_escort[exp(alpha (alpha - 1) mu^2 / 2)]`` with ``mu`` the transcript's composed
    shift (each release's normaliser). Dropping the transcripts whose ``mu`` is below the profile's
    ``mu_0 (1 - ESCORT_MU_RTOL)`` (escort mass ``f``) lowers it: ``D_alpha >= alpha mu_0^2 (1 - ESCORT_MU_RTOL)^2 / 2
    - log(1 / (1 - f)) / (alpha - 1)``. All ``n`` draws keep ``mu`` with probability ``(1 - f)^n``, so unless an
    event of probability at most ``error`` happened, ``1 - f >= error^(1/n)``: the margin above.

    Args:
        closed: the profile's closed-form ``D_alpha`` (``alpha mu_0^2 / 2``: Gaussian releases only).
        alpha: the order, ``> 1``.
        n: the escort draws that kept ``mu``, ``>= 1``.
        error: the probability that the bound fails, in ``(0, 1)``.

    Returns:
        An :class:`accounting.profiles.RenyiLowerBound` at confidence ``1 - error``.

    Example:
        >>> b = escort_renyi_lower(46.08, 256.0, 400, 0.0125)
        >>> round(46.08 - b.lower, 7), b.confidence
        (0.0001351, 0.9875)
    """
    from accounting.profiles import RenyiLowerBound

    margin = np.log(1.0 / error) / (n * (alpha - 1.0))
    lower = max(0.0, closed * (1.0 - ESCORT_MU_RTOL) ** 2 - margin)
    return RenyiLowerBound(f"exact renyi divergence less the escort margin {margin:.3g} ({n} escort draws)",
                           float(alpha), float(lower), 1.0 - error, n)


def _escort_lowered(claim: Any, profile: Any, n: int, error: float) -> Any:
    """:func:`accounting.refutation.refute` of ``claim`` by ``profile``'s divergences less the margin of ``n`` escort
    draws (:func:`escort_renyi_lower`): the claim's order, or the first of ``DEFAULT_ALPHAS`` (zCDP, pure) where the
    bound exceeds the claim; an approximate claim bounds no divergence (not refuted)."""
    from accounting.claim_forms import as_form
    from accounting.refutation import DEFAULT_ALPHAS, refute

    form = as_form(claim)
    if form.form == "approximate":
        return refute(form, alphas=())
    orders = [form.alpha] if form.form == "renyi" else DEFAULT_ALPHAS
    return refute(form, renyi_bounds=[escort_renyi_lower(profile.renyi(a), a, n, error) for a in orders], alphas=())


def escort_shifts_hold(ctx: Any, p: Scenario, q: Scenario | None, runs: EngineRuns, profiles: Any, *,
                       alpha: float | None = None, epsilon: float | None = None) -> str | None:
    """Why the closed form of ``profiles`` (its order-``alpha`` divergence, or its ``delta(epsilon)``) may not be the
    pair's, or ``None`` when transcripts drawn where that quantity weighs them keep the profile's shifts.

    ``D_alpha`` of a Gaussian composition is ``log E[exp((alpha - 1) L)] / (alpha - 1)``, an expectation under the
    escort ``p^alpha q^(1 - alpha)``, which releases each value at ``m + (alpha - 1)(m - m')`` plus the noise: the
    exponential tilt ``lambda = alpha - 1`` of :func:`accounting.tilted_replay.tilted_scheduled_transcripts`.
    Under unicast each copy ``i -> j`` is a Gaussian release of its own (its own noise, mean ``m_i``): the escort
    of the whole transcript is the product of the copies' escorts, each copy moved by ``(alpha - 1)`` times its own
    shift ``m_i - m'_i`` with normaliser ``exp(alpha (alpha - 1) ||m_i - m'_i||^2 / (2 s^2))``, so the argument
    below holds with ``mu`` composed over copies (as the profile's is) and the draws' weights are exact.
    ``delta(epsilon) = E[(1 - exp(epsilon - L))_+]`` weighs losses near ``epsilon``, where the tilt
    :func:`accounting.tilting.chernoff_tilt` (about ``epsilon / mu^2 - 1/2``) centres them. The closed form holds
    there only if the shifts do; the runs showed them fixed where the noise is typical, and a projection that none
    of them reaches can be active at every tilted transcript (a box of half-width 15 around a unit-noise walk,
    order 256: the tilt moves each release by 51). So one tilted transcript per run of ``runs`` (its schedule) is
    drawn with the rule's own steps, and each must keep the composed ``mu`` of its run's profile (up to ``1e-6``
    relative: :data:`ESCORT_MU_RTOL`; a non-finite ``mu`` does not). If the tilt puts mass ``f`` where ``mu`` is
    smaller, ``n`` draws all keep it with probability ``(1 - f)^n``, so ``f <= 1 - a^(1/n)`` at confidence ``1 - a``.
    The escort weighs a transcript by ``exp(alpha (alpha - 1) mu^2 / 2)`` of its composed ``mu`` alone, so a kept
    divergence is a bound at confidence ``1 - a``: the closed form less ``log(1/a) / (n (alpha - 1))``
    (:func:`escort_renyi_lower`; the caller lowers the witness by it). ``delta(epsilon)`` depends on the law of the
    loss under the tilt, which draws that keep the composed ``mu`` do not pin down (a release whose shift shrinks
    while another grows keeps ``mu`` and changes the loss): they certify no margin, so a kept ``delta`` witness is
    set aside too, with that reason (under one schedule, :func:`exact_delta_lower` checks every release's shift
    instead and certifies a margin). A profile without Gaussian releases needs no check (a Laplace escort stays
    within the shift and a few scales of ``P``'s releases), nor one of a per-iteration claim: the tilt moves the
    focus round's releases only, and each of them is computed from earlier releases, which it leaves as the runs
    drew them.

    Args:
        ctx: the check's context (the focus round of a per-iteration claim, the seed).
        p, q: the pair (``q`` ``None``: nothing can be drawn).
        runs: the runs whose schedules the tilted transcripts follow.
        profiles: the :class:`~accounting.profiles.PrivacyProfile` of each run.
        alpha: the order of a divergence witness, or
        epsilon: the epsilon of a ``delta(epsilon)`` witness (exactly one of the two).

    Returns:
        ``None`` (a divergence whose draws kept ``mu``, or no check needed), or one line naming the witness and what
        differs, why no tilted transcript could be drawn, or that kept draws certify no ``delta``.

    Raises:
        ValueError: neither or both of ``alpha`` and ``epsilon``.
    """
    from accounting.tilting import chernoff_tilt

    if (alpha is None) == (epsilon is None):
        raise ValueError(f"escort_shifts_hold needs exactly one of alpha and epsilon, got {alpha!r} and {epsilon!r}")
    mus = np.array([pr.gaussian_mu for pr in profiles], dtype=float)
    if not _escort_applies(ctx, profiles):
        return None
    if alpha is not None:
        what, under, eps = f"the exact Renyi divergence of order {alpha:.6g} is not used", "its escort", 0.0
        tilt = alpha - 1.0
    else:
        assert epsilon is not None
        eps = epsilon
        what, under = f"the exact delta({eps:.6g}) is not used", "the tilt toward losses near epsilon"
        tilt = chernoff_tilt(eps, gaussian_mus=[float(mus.max())])
    if q is None:
        return f"{what}: the pair's second scenario is not known, so transcripts under {under} cannot be drawn"
    try:
        tilted = _tilted_draws(p, q)
        got = tilted(runs.messages, schedule_batch(runs.schedules), epsilon=eps, mu_bound=float(mus.max()),
                     seed=ctx.options.seed + 11, tilt=tilt).realized_mu
    except (AccountingError, ValueError) as exc:
        return f"{what}: transcripts under {under} (where it weighs them) cannot be drawn: {exc}"
    low = np.flatnonzero(~(got >= mus * (1 - ESCORT_MU_RTOL)))
    if low.size:
        r = int(low[0])
        return (f"{what}: on {low.size} of {got.size} transcripts drawn under {under} (each release moved by "
                f"{tilt:.6g} times its shift, where it weighs them) the shifts are smaller than on the runs (run "
                f"{r}: mu {got[r]:.6g} < {mus[r]:.6g}; a projection or nonlinearity active there)")
    if epsilon is not None:
        return (f"{what}: its {got.size} transcripts drawn under {under} keep the composed mu, but delta(epsilon) "
                "depends on the law of the loss, not on mu alone, so they certify no margin below the closed form "
                "(a screen, not a bound)")
    return None


def _margin_doubt(bound: Any) -> str:
    """Why :func:`exact_delta_lower`'s ``bound`` does not refute: its draws left the profile's shifts, or its margin."""
    n, misses = bound.samples, bound.details["misses"]
    where = (f"on {misses} of {n} transcripts drawn under the tilt toward losses near epsilon (each release moved by "
             f"{bound.details['tilt']:.6g} times its shift on the runs) the shifts are not the runs' (a projection or "
             "nonlinearity active there)" if misses else f"its {n} transcripts drawn under the tilt toward losses near "
             "epsilon keep every release's shift")
    got = f"only {bound.lower:.6g}" if bound.lower > 0 else "nothing"  # -e^-700 when the margin takes it all
    return (f"the exact delta({bound.epsilon:.6g}) is not used: {where}, so it certifies {got} "
            f"(the closed form {bound.estimate:.6g} less the tilt margin), not above the claim's delta")


_DRAWS_SEED = 13
"""Offset of the check's seed for the tilted draws of :func:`exact_delta_lower`."""


def exact_delta_lower(ctx: Any, p: Scenario, q: Scenario | None, runs: EngineRuns, shifts: Any, scales: Any,
                      epsilon: float, error: float) -> tuple[Any, str | None]:
    """A certified lower bound on a lockstep Gaussian pair's ``delta(epsilon)`` from its exact profile, or why none.

    The pair's shifts were fixed on the runs; the closed form weighs transcripts near ``epsilon``, where they may not
    be (a projection no run reaches). One transcript per run is drawn with the rule's own steps, every release moved
    by the Chernoff tilt ``lambda`` (:func:`accounting.tilting.chernoff_tilt` at the profile's ``mu``) times run 0's
    shift of that release (the offsets ``o``: the shrunk realized shifts the profile composes), and each reports
    whether all its releases kept their offsets within ``tau = 2 rho + 1e-12 + 1e-9 |o|`` per coordinate (``rho``
    the runs' round-off, :func:`~asyncdp.privacy.coverage.coordinate_roundoff`; the profile's own test of fixed
    shifts, plus the shrink). :func:`accounting.profiles.matched_tilt_delta_lower` then bounds ``delta(epsilon)``
    from below by the closed form at ``epsilon + Delta`` less ``cap q`` (``q`` the Clopper–Pearson bound on the
    tilt's mass outside the kept shifts), at confidence ``1 - error``: on the kept event the real transcript is the
    fixed-shift one, whose loss is the closed form's up to ``Delta`` (a real shift lies within
    ``eta = tau + rho'`` of its offset, ``rho'`` the larger of the runs' and the draws' round-off: the project's
    round-off convention). One schedule only (lockstep, lossless links): the caller's duty.

    Args:
        ctx: the check's context (the seed, the state magnitude).
        p, q: the pair (``q`` ``None``: nothing can be drawn).
        runs: the engine runs (one schedule), one tilted transcript each.
        shifts: per Gaussian channel the shrunk realized shifts ``(R, T, ...)`` (NaN: no noisy release).
        scales: per channel the declared standard deviations per round ``(T,)``.
        epsilon: where ``delta`` is bounded.
        error: the bound's error rate, in ``(0, 1)``.

    Returns:
        ``(bound, None)`` with a :class:`~accounting.delta_bounds.DeltaLowerBound`, or ``(None, why)``.
    """
    from accounting.profiles import matched_tilt_delta_lower
    from accounting.tilting import chernoff_tilt

    what = f"the exact delta({epsilon:.6g}) is not used"
    if q is None:
        return None, f"{what}: the pair's second scenario is not known, so tilted transcripts cannot be drawn"
    offsets, tol, rho, per_round = {}, {}, {}, {}
    mu2 = 0.0
    for c, s in shifts.items():
        o = np.asarray(s, dtype=float)[0]
        sc = np.asarray(scales[c], dtype=float).reshape((-1,) + (1,) * (o.ndim - 1))
        rho[c] = coordinate_roundoff(runs.messages[c], ctx.state_magnitude)
        tol[c] = 2.0 * rho[c] + 1e-12 + 1e-9 * np.abs(np.nan_to_num(o))
        offsets[c] = np.broadcast_to(o, np.shape(runs.messages[c]))
        inv = np.where(np.isfinite(o) & (sc > 0), 1.0 / np.where(sc > 0, sc, 1.0) ** 2, 0.0)
        per_round[c] = (np.nan_to_num(o), inv)
        mu2 += float(np.sum(np.nan_to_num(o) ** 2 * inv))
    mu = float(np.sqrt(mu2))
    if not mu > 0:
        return None, f"{what}: the profile's Gaussian releases do not move"
    tilt = chernoff_tilt(epsilon, gaussian_mus=[mu])
    try:
        tilted = _tilted_draws(p, q)
        got = tilted(runs.messages, schedule_batch(runs.schedules), epsilon=epsilon, mu_bound=mu,
                     seed=ctx.options.seed + _DRAWS_SEED, tilt=tilt, offsets=offsets, tolerance=tol)
    except (AccountingError, ValueError) as exc:
        return None, f"{what}: tilted transcripts (where it weighs them) cannot be drawn: {exc}"
    assert got.matched is not None
    drift = spread = 0.0
    for c, (o, inv) in per_round.items():
        eta = tol[c] + max(rho[c], coordinate_roundoff(got.messages[c], ctx.state_magnitude))
        drift += float(np.sum(eta * np.abs(o) * inv))
        spread += float(np.sum(eta * eta * inv))
    misses = int((~got.matched).sum())
    return matched_tilt_delta_lower(mu, epsilon, tilt, int(got.matched.size), misses, error, drift=drift,
                                    spread=spread), None


def accountant_mu(ctx: Any, scenario: Scenario) -> float | None:
    """The composed Gaussian ``mu`` the accountant's own sensitivity allows one agent: ``sqrt(sum (s_t / std_t)^2)``.

    ``None`` without a sensitivity, with several noisy channels, Laplace noise, or a round whose positive
    sensitivity is released without noise (then no finite ``mu`` bounds the pair).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair, ctx = small_example()
        >>> accountant_mu(ctx, pair.scenario) is None  # Laplace noise
        True
    """
    if ctx.sensitivity is None or len(ctx.sensitivity) != 1:
        return None
    (channel, sens), = ctx.sensitivity.items()
    ch = declared_noise(scenario.algorithm.bind(scenario.problem), scenario.horizon).get(channel)
    if ch is None or ch.mechanism != "gaussian":
        return None
    scales = np.asarray(ch.scales, dtype=float)
    if ((scales == 0) & (sens > 0)).any():
        return None
    ratio = np.where(sens > 0, sens / np.where(scales > 0, scales, 1.0), 0.0)
    return float(np.sqrt((ratio**2).sum()))


def _run_mus(shifts: Any, scenario: Scenario, focus: int | None = None) -> np.ndarray | None:
    """Per run, the pair's realized Gaussian ``mu = sqrt(sum ||shift / std||^2)`` over every Gaussian channel (round
    ``focus`` only, if given), or ``None`` when a noisy channel is not Gaussian or the shifts are an error."""
    if isinstance(shifts, AccountingError) or not shifts:
        return None
    noise = declared_noise(scenario.algorithm.bind(scenario.problem), scenario.horizon)
    total = None
    for channel, s in shifts.items():
        ch = noise.get(channel)
        if ch is None or ch.mechanism != "gaussian" or np.ndim(s) not in (4, 5):  # broadcast or unicast (every copy)
            return None
        scales = np.asarray(ch.scales, dtype=float).reshape((1, -1) + (1,) * (np.ndim(s) - 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(scales > 0, s / np.where(scales > 0, scales, 1.0), 0.0)
        if focus is not None:
            z = z[:, focus:focus + 1]
        part = np.nansum(z * z, axis=tuple(range(1, np.ndim(s))))
        total = part if total is None else total + part
    return None if total is None else np.sqrt(total)


def realized_mu(shifts: Any, scenario: Scenario, focus: int | None = None) -> float | None:
    """The median over runs of the pair's realized Gaussian ``mu = sqrt(sum_t ||shift_t / std_t||^2)``, or ``None``.

    ``focus`` (a per-iteration claim's round, 0-based) keeps that round only.

    From the realized shifts of engine runs drawn independently of the
    transcripts it will tilt (:func:`scheduled_tilted_bound`): it only sets how
    tight the importance-sampling bound is, never whether it holds.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> from asyncdp.privacy.coverage import pair_shifts
        >>> pair, ctx = small_example()
        >>> realized_mu(pair_shifts(pair, ctx), pair.scenario) is None  # Laplace noise
        True
    """
    if isinstance(shifts, AccountingError) or len(shifts) != 1:
        return None
    mu = _run_mus(shifts, scenario, focus)
    return float(np.median(mu)) if mu is not None and mu.size else None


def escort_draws_renyi(ctx: Any, p: Scenario, q: Scenario, runs: EngineRuns, pilot_shifts: Any, *,
                       confidence: float) -> Any:
    """A Rényi or zCDP claim against the order statistics of escort draws, one per realized schedule of ``runs``.

    For adaptively composed Gaussian releases (each one's shift a function of the earlier releases and the
    schedule ``S``), ``exp((alpha - 1) D_alpha(P_S || Q_S)) = E_escort[exp(alpha (alpha - 1) mu^2 / 2)]``, with
    equality: release ``t``'s density given the past is ``p_t`` under ``P`` and ``q_t`` under ``Q`` (Gaussians of
    means ``m``, ``m'``), and ``p_t^alpha q_t^(1 - alpha) = Z_t e_t`` with ``e_t`` the Gaussian of mean ``m + (alpha
    - 1)(m - m')`` (the release's own escort) and ``Z_t = exp(alpha (alpha - 1) mu_t^2 / 2)``, ``mu_t`` its shift
    over the noise; by the chain rule ``int p^alpha q^(1 - alpha) = E[prod_t Z_t]`` over a transcript drawn
    release by release from the ``e_t`` (not the joint escort ``p^alpha q^(1 - alpha) / Z``, whose releases are
    reweighted by the later ``Z_t``; :func:`accounting.tilted_replay.tilted_scheduled_transcripts` at tilt ``alpha
    - 1``, ``mu`` the shifts it measures along its own draw). So ``X = exp(alpha (alpha - 1) mu^2 / 2) >= 1`` of
    one such draw per schedule has mean ``exp((alpha - 1) D_alpha)``, the pair's (the observer sees the
    schedule), whether or not the shifts are fixed given ``S`` (a projection, clipping or a step that depends on
    the schedule), and the order statistics of the draws bound it from below
    (:func:`accounting.profiles.schedule_renyi_lower` with floor 1, distribution-free; each draw's ``mu`` lowered
    by :data:`ESCORT_MU_RTOL` for round-off, a non-finite one counted as 0, i.e. ``X = 1``: never above the
    draw's). The order is the claim's for a Rényi claim; for zCDP the one of
    :data:`accounting.refutation.DEFAULT_ALPHAS` where the same bound on the pilot's realized ``mu`` (engine runs
    drawn independently of ``runs``; it only chooses the order) exceeds the claim most, relative to it. The bound
    holds with probability ``confidence`` (its share of the check's error, counted by
    :func:`asyncdp.privacy.worst_pair.delta_evidence`).

    Args:
        ctx: the check's context (its claim form; a per-iteration claim gets nothing here).
        p, q: the pair.
        runs: engine runs drawn independently of the pair's choice and of ``pilot_shifts``: one draw per schedule.
        pilot_shifts: the pair's realized shifts on other engine runs (they choose a zCDP claim's order).
        confidence: the bound's level.

    Returns:
        ``(refutation, None)`` (:func:`accounting.refutation.refute` of the claim form by the bound), or
        ``(None, why)``.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> pair, ctx = small_example()
        >>> escort_draws_renyi(ctx, pair.scenario, pair.adjacent, ctx.engine_runs(1), {}, confidence=0.99)[0] is None
        True
    """
    from accounting.profiles import PrivacyProfile, schedule_renyi_lower
    from accounting.refutation import DEFAULT_ALPHAS, refute

    form = getattr(ctx, "claim_form", None)
    if getattr(form, "form", None) not in ("renyi", "zcdp") or ctx.focus is not None:
        return None, "escort draws: only a Renyi or zCDP claim of the whole run is compared with them"
    if runs.runs < 2:
        return None, "escort draws: fewer than 2 schedules"
    pilot = _run_mus(pilot_shifts, p)
    if pilot is None or pilot.size < 2 or not np.isfinite(pilot).all():
        return None, "escort draws: no finite Gaussian mu of every run to draw them from"
    if form.form == "renyi":
        alpha = float(form.alpha)
    else:
        guess = schedule_renyi_lower([PrivacyProfile(float(m)) for m in pilot], DEFAULT_ALPHAS, confidence=confidence)
        alpha = max(guess, key=lambda b: b.lower / max(form.renyi_bound(b.alpha), 1e-300)).alpha
    try:
        tilted = _tilted_draws(p, q)
        got = tilted(runs.messages, schedule_batch(runs.schedules), epsilon=0.0, mu_bound=float(pilot.max()),
                     seed=ctx.options.seed + 19, tilt=alpha - 1.0).realized_mu
    except (AccountingError, ValueError) as exc:
        return None, f"escort draws: transcripts under the escort of order {alpha:.6g} cannot be drawn: {exc}"
    kept = np.where(np.isfinite(got), got, 0.0) * (1.0 - ESCORT_MU_RTOL)
    (bound,) = schedule_renyi_lower([PrivacyProfile(float(m)) for m in kept], [alpha], confidence=confidence)
    bound = dataclasses.replace(bound, method="order statistics of escort draws (one per realized schedule) of "
                                              "Renyi divergences")
    return refute(form, renyi_bounds=[bound]), None


def _pair_rules(alg: Any, p: Scenario, q: Scenario) -> Any:
    """The replay rules of ``p`` and ``q`` with both problems' steps taken at once
    (``asyncdp.privacy.paired_rules.PairRules``: each problem's runs get what its own rule computes) when they
    share the domain and the initial points and their cost families stack, else ``None``."""
    from .paired_rules import PairRules
    from .stacked_costs import StackedCosts

    x0 = p.initial_points()
    costs = StackedCosts([p.problem.costs, q.problem.costs], 1)
    if p.problem.domain is q.problem.domain and np.array_equal(x0, q.initial_points()) and (
            costs._linear is not None or costs._kinked is not None or costs._groups is not None):
        return PairRules(alg, p.problem, q.problem, x0)
    return None


def scheduled_tilted_bound(ctx: Any, p: Scenario, q: Scenario, runs: EngineRuns, *, confidence: float, seed: int,
                           mu: float | None = None, pilot: EngineRuns | None = None) -> Any:
    """A certified lower bound on the pair's ``delta(epsilon)`` by importance sampling on realized schedules.

    Any timing: one transcript of the pair per realized schedule of ``runs``
    is drawn under the release-by-release exponential tilt toward ``P``'s
    high-loss tail (:func:`accounting.tilted_replay.tilted_scheduled_transcripts`:
    the algorithm's own R and U steps, every agent's releases drawn in the
    run's causal order, the declared Gaussian noise, exact likelihood
    ratios), and :func:`accounting.delta_bounds.importance_delta_lower` bounds
    ``delta(epsilon) = E_S E_Q[w (1 - e^(epsilon - L))_+ | S]`` from below at
    ``confidence`` (empirical Bernstein on summands truncated at the tilt's
    Chernoff cap: valid whatever the realized shifts, e.g. a projection active
    on some runs). Why it is sound:

    * the schedules of ``runs`` are i.i.d. draws of the engine's timing
      model, independent of the data and the noise, and (the caller's duty)
      of how the pair was chosen: the summands are then i.i.d. with mean the
      pair's ``delta(epsilon)`` given that the observer sees the schedule
      (the convention of the exact replay);
    * the transcripts follow the algorithm's own steps on those schedules,
      so their law under ``P`` is the engine's given the declared noise,
      which the conformance test checks on the engine's runs;
    * the tilt and the cap are fixed before the draw: from ``mu`` if given,
      else from the median realized ``mu`` of untilted transcripts on the
      schedules of ``pilot`` (independent of ``runs`` and of the draw), else
      the accountant's own (:func:`accountant_mu`). They set how tight the
      bound is, never whether it holds.

    A per-iteration claim tilts and bounds the focus round only. Applies to
    runs whose noisy channels are all Gaussian, broadcast or unicast (each copy tilted by its own shift, its
    weight exact: :mod:`accounting.tilted_replay`).

    Args:
        ctx: the check's context (the claim's epsilon, the focus round).
        p, q: the pair.
        runs: engine runs whose schedules (and which releases happened) are used, one transcript each.
        confidence: the bound's level.
        seed: the draws' seed.
        mu: the tilt's ``mu``.
        pilot: engine runs whose schedules set ``mu`` (first 32).

    Returns:
        ``(bound, None)`` with a :class:`accounting.delta_bounds.DeltaLowerBound`, or ``(None, why)``.
    """
    from accounting.delta_bounds import importance_delta_lower

    try:
        tilted = _tilted_draws(p, q)
    except ValueError as exc:
        return None, f"importance sampling: {exc}"
    rounds = None
    if ctx.focus is not None:
        rounds = np.zeros(p.horizon, dtype=bool)
        rounds[ctx.focus] = True
    eps = ctx.epsilon_claimed
    try:
        if (mu is None or not mu > 0) and pilot is not None:
            k = min(32, pilot.runs)
            if k >= 2:
                plain = tilted({c: m[:k] for c, m in pilot.messages.items()}, schedule_batch(pilot.schedules[:k]),
                               epsilon=eps, mu_bound=1.0, seed=seed + 1, tilt=0.0, rounds=rounds)
                mu = float(np.median(plain.realized_mu))
        if mu is None or not mu > 0:
            mu = accountant_mu(ctx, p)
        if mu is None or not mu > 0:
            return None, "importance sampling: no finite Gaussian mu to set the tilt"
        t = tilted(runs.messages, schedule_batch(runs.schedules), epsilon=eps, mu_bound=mu, seed=seed, rounds=rounds)
        if not t.cap > 0:  # the Chernoff cap underflows: delta(epsilon) at this mu is below 1e-308
            return None, (f"importance sampling: at mu {mu:.6g} the tilt's cap on delta({eps:.6g}) underflows to 0 "
                          "(below 1e-308): nothing to certify")
        return importance_delta_lower(t.losses, t.log_weights, eps, confidence=confidence, cap=t.cap), None
    except AccountingError as exc:
        return None, f"importance sampling: {exc}"


def _tilted_draws(p: Scenario, q: Scenario) -> Any:
    """``tilted(messages, schedules, **kwargs)``: :func:`accounting.tilted_replay.tilted_scheduled_transcripts` of the
    pair ``(p, q)``, both problems' steps at once where they stack; where that replay fails other than by the
    accounting's own error, replayed with each problem's own rule (which raises what it raises).

    Raises:
        ValueError: a noisy channel that is not Gaussian (no tilted draw for it).
    """
    from accounting.tilted_replay import tilted_scheduled_transcripts

    from .behavior import AlgorithmChannelRule

    alg = p.algorithm.bind(p.problem)
    noise = declared_noise(alg, p.horizon)
    if any(ch.mechanism == "laplace" for ch in noise.values()) or not any(ch.mechanism for ch in noise.values()):
        raise ValueError("needs Gaussian noise on every noisy channel")
    paired = _pair_rules(alg, p, q)

    def tilted(messages: Any, schedules: Any, **kwargs: Any) -> Any:
        if paired is not None:
            try:
                return tilted_scheduled_transcripts(messages, schedules, noise, paired.p, paired.q, **kwargs)
            except AccountingError:
                raise
            except Exception:  # noqa: BLE001 - each problem's own rule below
                pass
        return tilted_scheduled_transcripts(messages, schedules, noise,
                                            AlgorithmChannelRule(alg, p.problem, p.initial_points()),
                                            AlgorithmChannelRule(alg, q.problem, q.initial_points()), **kwargs)

    return tilted
