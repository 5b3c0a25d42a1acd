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
profile above the claimed delta refutes the claim with no sampling error
(confidence 1; :func:`accounting.refutation.refute`). A noise-free release
that moves tells the problems apart with certainty (``delta = 1``).

The runs must share one schedule (lockstep timing) for the profile to be
*the* profile; under deadline or asynchronous timing each run's schedule
gives its own profile and :func:`pair_profile` refuses to combine them
(``reason`` says so).

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> from asyncdp.privacy.coverage import pair_shifts
    >>> pair, ctx = small_example()
    >>> out = pair_profile(ctx, pair_shifts(pair, ctx), pair.scenario, ctx.engine_runs(0))
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
from .behavior import EngineRuns, declared_noise

__all__ = ["ExactProfile", "pair_profile", "accountant_mu", "realized_mu", "same_round_weights", "tilted_pair_bound"]


@dataclass(frozen=True)
class ExactProfile:
    """The exact privacy profile of a pair, when its shifts are deterministic on the runs.

    Attributes:
        refutation: :func:`accounting.refutation.refute` of the claim by the profile (``None``: no exact profile).
        reason: one line: the profile's ``mu`` (Gaussian) or why there is none (e.g. the release whose shift varies).
        certain: a noise-free release moves: the problems are told apart with certainty (``delta = 1``).
    """

    refutation: Any
    reason: str
    certain: bool = False


def _one_schedule(runs: EngineRuns) -> bool:
    """Whether every run has the same realized schedule (lockstep timing without losses)."""
    first = runs.schedules[0]
    return all(s is first or s == first for s in runs.schedules)


def pair_profile(ctx: Any, shifts: Any, scenario: Scenario, runs: EngineRuns) -> ExactProfile:
    """The exact profile of a pair from its realized shifts, if they are the same on every run (module docstring).

    Args:
        ctx: the check's context (the claim, the focus round of a per-iteration claim).
        shifts: per noisy channel the realized shifts on the runs (:func:`accounting.coverage.realized_shifts`),
            or the replay's error.
        scenario: the pair's first scenario (its algorithm's declared noise).
        runs: the engine runs the shifts come from.

    Returns:
        An :class:`ExactProfile`.
    """
    from accounting.profiles import profile_from_shifts
    from accounting.refutation import refute

    if isinstance(shifts, AccountingError):
        return ExactProfile(None, f"no exact profile: {shifts}")
    if runs.runs < 2:
        return ExactProfile(None, "no exact profile: one run cannot show that the shifts are fixed")
    if not _one_schedule(runs):
        return ExactProfile(None, "no exact profile: the runs have different schedules (deadline or asynchronous "
                                  "timing, or lossy links): each schedule has its own profile")
    noise = {c: ch for c, ch in declared_noise(scenario.algorithm.bind(scenario.problem), scenario.horizon).items()
             if ch.mechanism is not None and c in shifts}
    use = {c: np.asarray(shifts[c], dtype=float) for c in noise}
    if ctx.focus is not None:  # a per-iteration claim: the focus round's release only
        keep = np.zeros(scenario.horizon, dtype=bool)
        keep[ctx.focus] = True
        use = {c: np.where(keep.reshape((1, -1) + (1,) * (s.ndim - 2)), s, np.nan) for c, s in use.items()}
    try:
        chk = profile_from_shifts(use, {c: ch.scales for c, ch in noise.items()},
                                  {c: str(ch.mechanism) for c, ch in noise.items()})
    except AccountingError as exc:
        return ExactProfile(None, f"no exact profile: {exc}")
    if chk.noise_free is not None:
        return ExactProfile(None, chk.reason, certain=True)
    if chk.profile is None:
        return ExactProfile(None, chk.reason)
    return ExactProfile(refute((ctx.epsilon_claimed, ctx.delta_claimed), profile=chk.profile,
                               delta=ctx.delta_claimed), chk.reason)


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


def realized_mu(shifts: Any, scenario: Scenario) -> float | None:
    """The median over runs of the pair's realized Gaussian ``mu = sqrt(sum_t ||shift_t / std_t||^2)``, or ``None``.

    From the realized shifts of engine runs drawn independently of the
    transcripts it will tilt (:func:`tilted_pair_bound`): it only sets how
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
    (channel, s), = shifts.items()
    ch = declared_noise(scenario.algorithm.bind(scenario.problem), scenario.horizon).get(channel)
    if ch is None or ch.mechanism != "gaussian" or np.ndim(s) != 4:
        return None
    scales = np.asarray(ch.scales, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(scales[None, :, None, None] > 0, s / np.where(scales > 0, scales, 1.0)[None, :, None, None], 0.0)
    mu = np.sqrt(np.nansum(z * z, axis=(1, 2, 3)))
    return float(np.median(mu)) if mu.size else None


def same_round_weights(schedule: Any, horizon: int) -> list[np.ndarray] | None:
    """The schedule's weights per round when every combination uses messages of its own round, else ``None``.

    Such a schedule (lockstep rounds, or deadline rounds in which every
    message arrived in time) is a lockstep replay with these weights.

    Example:
        >>> from asyncdp.engine.schedule import RealizedSchedule
        >>> s = RealizedSchedule.from_dense([np.array([[0.5, 0.5], [0.0, 1.0]])], [np.array([[1, 1], [0, 1]])])
        >>> same_round_weights(s, 1)[0].tolist()
        [[0.5, 0.5], [0.0, 1.0]]
    """
    out = []
    for t in range(1, horizon + 1):
        w, src = schedule.dense(t)
        w = np.asarray(w, dtype=float)
        if (np.asarray(src)[w != 0] != t).any():
            return None
        out.append(w)
    return out


def tilted_pair_bound(ctx: Any, p: Scenario, q: Scenario, *, runs: int, confidence: float, seed: int,
                      mu: float | None = None, schedule: Any = None) -> Any:
    """A certified lower bound on the pair's ``delta(epsilon)`` by importance sampling, or why there is none.

    Lockstep Gaussian transcripts of the pair are drawn under the round-by-round
    exponential tilt toward ``P``'s high-loss tail, with exact likelihood
    ratios (:func:`accounting.tilted_replay.tilted_transcripts`), and
    :func:`accounting.delta_bounds.importance_delta_lower` bounds
    ``delta(epsilon) = E_Q[w (1 - e^(epsilon - L))_+]`` from below at
    ``confidence`` (empirical Bernstein on summands truncated at the tilt's
    Chernoff cap; it holds whatever the cap). The tilt is set by the
    accountant's own ``mu`` (:func:`accountant_mu`), never by the rule's
    declarations. Applies to one Gaussian channel, broadcast, lockstep, a
    claim over the run (a per-iteration claim is left to the exact profile).
    ``mu`` (e.g. :func:`realized_mu` of independent runs of the pair) sets
    the tilt instead when given: the bound holds for any tilt.

    Args:
        ctx: the check's context.
        p, q: the pair.
        runs: transcripts to draw (``>= 2``).
        confidence: the bound's level.
        seed: the draw's seed.
        mu: the tilt's ``mu`` (default :func:`accountant_mu`).
        schedule: the realized schedule every run of the pair shares (its
            weights replace the topology's; it must use same-round messages
            only: :func:`same_round_weights`), or ``None`` for lockstep rounds.

    Returns:
        ``(bound, None)`` with a :class:`accounting.delta_bounds.DeltaLowerBound`, or ``(None, why)``.
    """
    from accounting.delta_bounds import importance_delta_lower
    from accounting.tilted_replay import tilted_transcripts

    from .replay import replay_rule, replay_setup

    if ctx.focus is not None:
        return None, "importance sampling: a per-iteration claim"
    if p.mode != "broadcast" or len(p.algorithm.noisy_channels()) != 1:
        return None, "importance sampling: needs one broadcast Gaussian channel"
    mu = accountant_mu(ctx, p) if mu is None or not mu > 0 else mu
    if mu is None or mu == 0:
        return None, "importance sampling: the accountant's sensitivity gives no finite Gaussian mu"
    setup = replay_setup(p)
    if schedule is not None:
        weights = same_round_weights(schedule, p.horizon)
        if weights is None:
            return None, "importance sampling: the schedule combines messages of other rounds"
        setup = dataclasses.replace(setup, weights=weights)
    try:
        t = tilted_transcripts(setup, replay_rule(p), replay_rule(q), runs, epsilon=ctx.epsilon_claimed,
                               mu_bound=mu, seed=seed)
        return importance_delta_lower(t.losses, t.log_weights, ctx.epsilon_claimed, confidence=confidence,
                                      cap=t.cap), None
    except AccountingError as exc:
        return None, f"importance sampling: {exc}"
