"""A lower bound on the privacy loss of releases whose noise is smaller than declared.

A rejected one-sided conformance test (:func:`accounting.conformance.noise_conformance`) shows that a release
carries less noise than its rule declares. That alone refutes no claim: a rule that releases ``k (x + b z)``
with a public ``k < 1`` shrinks its shift with its noise (its loss is the declared one), and a claim may have
slack for a smaller scale. :func:`released_scale_losses` bounds each engine run's privacy loss from below with
what the releases really carry: the realized shifts of the user's pair (``mu_P - mu_P'`` of every release,
:func:`asyncdp.privacy.coverage.pair_shifts`) and confidence bounds of the realized noise scale.

**Assumption** (the declared family at another scale): the noise of channel ``c``'s release by agent ``i`` in
round ``t`` is ``s_ti z`` with ``z`` the declared standard law, i.i.d. over runs and coordinates, and one scale
``s_ti`` across runs. Then (Laplace) ``sum |residual| / s ~ Gamma(n, 1)`` and (Gaussian)
``sum residual^2 / s^2 ~ chi2(n)`` over the group's ``n`` residuals, which give ``s_lo <= s <= s_up``. A scale
that moves with the state or the data from run to run is outside it (the bounds are then those of a mixture), as
is a law of another shape; the additivity probe (:mod:`asyncdp.privacy.additivity`) sets aside every law that is
no rescaled draw, not a scale that moves.

A release's loss ``log p_P(y) / p_P'(y)`` is ``N / b`` (Laplace, ``N = |r + shift|_1 - |r|_1``) or
``N / (2 s^2)`` (Gaussian, ``N = |r + shift|^2 - |r|^2``), ``r`` its residual under ``P``: linear in ``1 / b``
(``1 / s^2``) at the realized ``y``. So ``N / b_up`` (``N >= 0``) or ``N / b_lo`` (``N < 0``) is at most the true
term, and their sum at most the run's true loss. As ``(1 - e^(epsilon - L))_+`` grows with ``L``, the threshold
counts of :func:`accounting.auditors.plrv_audit` on these sums bound ``delta(epsilon)`` from below.

A coordinate released at its noise-free value under ``P`` (within ``ATOM_RTOL`` of the declared scale) and not
under ``P'`` is a dropped draw: an atom of ``P`` where ``P'`` has a density, an infinite loss (:func:`_atoms`).

When the user's pair stays within a pure Laplace claim, the bounds are kept (:data:`SCALE_BOUNDS`) for the
worst-case search, whose pair's constructed transcript is bounded at the same scales
(:func:`scaled_constructed_losses`): this reads the assumption as one scale per channel, round and agent whatever
the data, the scales of every pair's releases.

The same linearity says when the declared law's loss (the exact replay's) is a lower bound: ``N / b_declared``
is at most ``N / b_true`` for ``N >= 0`` when ``b_true <= b_declared``, but above it for ``N < 0``. Only with
one common factor ``b_true = c b_declared`` over every release is the declared run loss ``c`` times the true
one, so a declared loss above ``epsilon > 0`` stays above it. This module does not change those methods.

Example:
    >>> from asyncdp.privacy.context import small_example
    >>> pair, ctx = small_example(runs=200)
    >>> got = released_scale_losses(pair, ctx, error=0.01)
    >>> got.losses.shape, bool(got.losses.max() < 1.0)
    ((200,), True)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from accounting.errors import AccountingError

from .behavior import declared_noise
from .context import CheckContext, ScenarioPair

__all__ = ["ReleasedScaleLosses", "released_scale_losses", "scaled_constructed_losses", "constructed_losses",
           "claimed_losses", "released_scale_witness", "SCALE_BOUNDS"]


SCALE_BOUNDS = "realized scale bounds"
"""The context's cache key of the :class:`ReleasedScaleLosses` of an under-noised check whose pure Laplace claim the
user's pair does not refute (the worst-case search's pair is then bounded at those scales too)."""


@dataclass(frozen=True)
class ReleasedScaleLosses:
    """Outcome of :func:`released_scale_losses`.

    Attributes:
        losses: ``(R,)`` a lower bound of each run's privacy loss in the claim's scope (:func:`claimed_losses`).
        per_round: ``(R, T)`` the lower bounds per round.
        scale_upper: per channel ``(T, N)`` the upper confidence bounds of the released scale (NaN: untested).
        error: the probability that some scale bound fails.
        bounds: per channel ``(s_lo, s_up)``, each ``(T, N)``.
        noise: the noisy channels' declarations.
    """

    losses: np.ndarray
    per_round: np.ndarray
    scale_upper: dict[str, np.ndarray]
    error: float
    bounds: dict[str, tuple[np.ndarray, np.ndarray]]
    noise: dict[str, Any]


def claimed_losses(ctx: Any, per_round: np.ndarray) -> np.ndarray:
    """Each run's loss in the claim's scope, from its per-round losses ``(R, T)``: the sum over rounds; the focus
    round's of a per-iteration claim; the largest round's of a pure per-iteration claim (it bounds every round)."""
    focus = ctx.focus
    if focus is not None and ctx.delta_claimed == 0:
        return np.fmax.reduce(per_round, axis=1)
    return per_round[:, focus] if focus is not None else per_round.sum(axis=1)


def _scale_bounds(r: np.ndarray, mechanism: str, error: float) -> tuple[np.ndarray, np.ndarray]:
    """``(s_lo, s_up)`` per ``(round, sender)`` of residuals ``r`` ``(R, T, N, ...)`` (module docstring), each bound
    failing with probability at most ``error``; NaN where the group holds no residual."""
    moved = np.moveaxis(r, 0, -1).reshape(r.shape[1], r.shape[2], -1)  # (T, N, everything else)
    n = np.count_nonzero(~np.isnan(moved), axis=-1)
    if mechanism == "laplace":
        s = _nansum_terms(np.abs(moved), -1)
        low_q, high_q = stats.gamma.ppf(error, np.maximum(n, 1)), stats.gamma.isf(error, np.maximum(n, 1))
        lo, up = s / high_q, s / low_q
    else:
        s = _nansum_terms(moved**2, -1)
        low_q, high_q = stats.chi2.ppf(error, np.maximum(n, 1)), stats.chi2.isf(error, np.maximum(n, 1))
        lo, up = np.sqrt(s / high_q), np.sqrt(s / low_q)
    return np.where(n > 0, lo, np.nan), np.where(n > 0, up, np.nan)


def _nansum_terms(terms: np.ndarray, axis: Any) -> np.ndarray:
    """``numpy.nansum(terms, axis=axis)`` of a new array of terms ``|r|`` or ``r ** 2`` (non-negative or NaN),
    which it overwrites: each NaN set to 0 by ``fmax`` (the other terms kept), then the sum ``nansum`` takes of its
    copy with NaN set to 0 (the same values in the same layout: the same sums, bit for bit).

    Example:
        >>> t = np.array([[1.0, np.nan], [np.nan, np.nan]])
        >>> _nansum_terms(t.copy(), 1).tolist() == np.nansum(t, axis=1).tolist()
        True
    """
    np.fmax(terms, 0.0, out=terms)
    return terms.sum(axis=axis)


def _noisy_rounds(r: np.ndarray, scales: Any) -> np.ndarray:
    """``r`` ``(R, T, ...)`` with NaN in the rounds declared with scale 0 (``r`` itself when every round is noisy:
    the same values, without a copy)."""
    noisy = np.asarray(scales, dtype=float) > 0
    if noisy.all():
        return r
    return np.where(noisy.reshape((1, -1) + (1,) * (r.ndim - 2)), r, np.nan)


def _per_round(residuals: dict[str, np.ndarray], primed: dict[str, np.ndarray], noise: dict[str, Any],
               bounds: dict[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """``(R, T)`` a lower bound of each round's loss of transcripts whose releases have residuals ``r = y - mu_P``
    and ``r' = y - mu_P'`` (module docstring), at scales within ``bounds`` (per channel ``(s_lo, s_up)``)."""
    first = residuals[next(iter(noise))]
    per_round = np.zeros(first.shape[:2])
    for c, ch in noise.items():
        lo, up = bounds[c]
        r, r2 = _noisy_rounds(residuals[c], ch.scales), _noisy_rounds(primed[c], ch.scales)
        coords = tuple(range(3, r.ndim))  # (a per-link channel's receivers too: the sender's scale)
        if ch.mechanism == "laplace":
            n = _nansum_terms(np.abs(r2), coords) - _nansum_terms(np.abs(r), coords)
            scale_up, scale_lo = up, lo
        else:
            n = (_nansum_terms(r2**2, coords) - _nansum_terms(r**2, coords)) / 2.0
            scale_up, scale_lo = up**2, lo**2
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(n >= 0, n / scale_up[None], n / scale_lo[None])
        per_round += np.nan_to_num(np.where(n == 0, 0.0, term), nan=0.0).sum(axis=2)
    return per_round


def _roundoff(ctx: CheckContext, noise: dict[str, Any], bounds: dict[str, tuple[np.ndarray, np.ndarray]]
              ) -> np.ndarray:
    """``(T,)`` the most round-off adds to a round's loss (the replay's budget at the declared scale), grown to the
    smallest scale the bounds allow."""
    from .search_evidence import _budget

    budget = _budget(ctx, ctx.engine_runs(0))
    ratio = np.ones(budget.shape)
    for c, ch in noise.items():
        scales = np.asarray(ch.scales, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            grown = np.nanmax(scales[:, None] / bounds[c][0], axis=1, initial=1.0)
        ratio = np.maximum(ratio, np.where(scales > 0, grown ** (1 if ch.mechanism == "laplace" else 2), 1.0))
    return budget * ratio


def released_scale_losses(pair: ScenarioPair, ctx: CheckContext, *, error: float
                          ) -> ReleasedScaleLosses | AccountingError:
    """A lower bound of each engine run's privacy loss at the realized noise scale (module docstring).

    Args:
        pair: the scenario pair.
        ctx: the shared context (its realized replay and the pair's realized shifts).
        error: the probability, in ``(0, 1)``, that some scale bound fails (half of it, Bonferroni over both
            bounds of every noisy release group) or a dropped draw is read where the law has none (at most half,
            :func:`_atoms`).

    Returns:
        :class:`ReleasedScaleLosses` (valid with probability ``1 - got.error >= 1 - error`` under the module's
        assumption), or the replay's error.
    """
    from .coverage import pair_shifts

    replay = ctx.realized_replay()
    if isinstance(replay, AccountingError):
        return replay
    shifts = pair_shifts(pair, ctx)
    if isinstance(shifts, AccountingError):
        return shifts
    noise = {c: ch for c, ch in declared_noise(ctx.algorithm, pair.scenario.horizon).items()
             if ch.mechanism is not None and c in shifts}
    groups = sum(int(np.count_nonzero(np.asarray(ch.scales) > 0)) * replay.residuals[c].shape[2]
                 for c, ch in noise.items())
    each = error / 2 / max(1, 2 * groups)  # half of the error to the scale bounds, at most half to the atoms
    bounds = {c: _scale_bounds(_noisy_rounds(replay.residuals[c], ch.scales), str(ch.mechanism), each)
              for c, ch in noise.items()}
    runs = replay.residuals[next(iter(noise))].shape[0]
    primed = {c: replay.residuals[c] + np.asarray(shifts[c], dtype=float)[:runs] for c in noise}
    per_round = _per_round(replay.residuals, primed, noise, bounds) - _roundoff(ctx, noise, bounds)[None, :]
    hits, atom_error = _atoms(replay.residuals, primed, noise, bounds)
    if atom_error <= error / 2:  # (else the tolerance is too coarse for so many residuals: no atom is read)
        per_round[hits] = np.inf
    spent = error / 2 + (atom_error if atom_error <= error / 2 else 0.0)
    return ReleasedScaleLosses(claimed_losses(ctx, per_round), per_round, {c: b[1] for c, b in bounds.items()},
                               spent, bounds, noise)


ATOM_RTOL = 1e-9
"""A residual within this fraction of the declared scale of 0 is read as a dropped draw (:func:`_atoms`)."""


def _atoms(residuals: dict[str, np.ndarray], primed: dict[str, np.ndarray], noise: dict[str, Any],
           bounds: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, float]:
    """``(R, T)`` the rounds of the engine runs with a dropped draw that moves: a noisy release's coordinate within
    ``ATOM_RTOL s`` of its noise-free value under ``P`` but not under ``P'`` (a point mass of ``P`` where ``P'``
    has only a density: an infinite loss), and the probability of such a coordinate under the continuous law at
    scales within ``bounds`` (densities at most ``1 / (2 s)``: ``tol / s_lo`` per coordinate, a union bound)."""
    first = residuals[next(iter(noise))]
    hits = np.zeros(first.shape[:2], dtype=bool)
    error = 0.0
    for c, ch in noise.items():
        scales = np.asarray(ch.scales, dtype=float)
        tol = (ATOM_RTOL * scales).reshape((1, -1) + (1,) * (residuals[c].ndim - 2))
        noisy = tol > 0
        with np.errstate(invalid="ignore"):  # (in place: two arrays of the residuals' size, not six)
            size = np.abs(residuals[c])
            at = np.less_equal(size, tol)
            at &= np.greater(np.abs(primed[c], out=size), 2 * tol, out=np.empty(size.shape, dtype=bool))
            at &= noisy
        hits |= at.reshape(at.shape[0], at.shape[1], -1).any(axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.nanmax(ATOM_RTOL * scales[:, None] / bounds[c][0], initial=0.0)
        seen = np.logical_not(np.isnan(residuals[c], out=at), out=at)
        seen &= noisy
        error += float(per) * int(np.count_nonzero(seen))
    return hits, error


def scaled_constructed_losses(ctx: CheckContext, p: Any, q: Any, agent: int | None, runs: Any, chosen: list[int],
                              got: ReleasedScaleLosses) -> np.ndarray | None:
    """A lower bound of the loss of agent ``agent``'s constructed transcripts of the pair ``(p, q)`` (its releases
    pinned to their noise-free values under ``p``, :func:`~asyncdp.privacy.constructed.constructed_replay`) on the
    schedules of engine runs ``chosen``, at the scales within ``got``'s bounds: ``(len(chosen),)``, or ``None``
    (round adjacency, or the construction fails).

    Laplace densities are positive and continuous: a loss above ``epsilon`` there holds on a neighbourhood of the
    transcript, which refutes a pure claim (as the worst-case search's constructed transcripts do). The scales are
    those measured on the scenario's runs: the module's assumption (one scale per channel, round and agent) makes
    them the scales of any pair's releases.
    """
    from .constructed import CandidateRuns, constructed_replay

    if agent is None:
        return None
    try:
        _, out = constructed_replay(CandidateRuns(runs, chosen).runs, p, q, agent)
    except AccountingError:
        return None
    if out.residuals_prime is None:
        return None
    per_round = _per_round(out.residuals, out.residuals_prime, got.noise, got.bounds)
    return claimed_losses(ctx, per_round - _roundoff(ctx, got.noise, got.bounds)[None, :])


def constructed_losses(pair: ScenarioPair, ctx: CheckContext, got: ReleasedScaleLosses, runs: int = 20
                       ) -> np.ndarray | None:
    """:func:`scaled_constructed_losses` of the user's pair's changed agent on the first ``runs`` engine runs."""
    engine = ctx.engine_runs(0)
    alg = pair.scenario.algorithm.bind(pair.scenario.problem)  # (both bound to the user's problem)
    return scaled_constructed_losses(ctx, pair.scenario.replace(algorithm=alg), pair.adjacent.replace(algorithm=alg),
                                     ctx.changed_agent, engine, list(range(min(runs, engine.runs))), got)


def released_scale_witness(pair: ScenarioPair, ctx: CheckContext, *, error: float) -> tuple[dict | None, str]:
    """Does the run losses' lower bound at the realized scale (:func:`released_scale_losses`) exceed the claim?

    Half of ``error`` goes to the scale bounds and the dropped draws (:func:`released_scale_losses`), half to
    :func:`accounting.auditors.plrv_audit`'s threshold lower bound of ``delta(epsilon)`` (a pure claim: a run's
    loss bound above ``epsilon``, no sampling error; for a pure Laplace claim the user's pair's constructed
    transcripts too, :func:`constructed_losses`).

    Args:
        pair: the scenario pair.
        ctx: the shared context.
        error: the witness's error rate, in ``(0, 1)``.

    Returns:
        ``(fields, sentence)``: the witness's fields (``method``, ``confidence``, ``delta_lower`` or ``loss`` and
        ``run``, ``scale_upper``) and why, or ``None`` and why the claim is not refuted.
    """
    from accounting import auditors

    eps, delta = ctx.epsilon_claimed, ctx.delta_claimed
    if not np.isfinite(eps):
        return None, "no finite epsilon is claimed"
    got = released_scale_losses(pair, ctx, error=error / 2)
    if isinstance(got, AccountingError):
        return None, f"the realized shifts are unknown ({got})"
    moving = ctx.cache.get("additivity moving scale")  # (the probe of the replay that released_scale_losses ran)
    if moving is not None:  # e.g. k (x + b z) with a public k that differs between runs: no one scale to bound
        return None, (f"the released scale moves from run to run ({moving}), and the scale bounds assume one scale "
                      "per channel, round and agent (asyncdp.privacy.additivity)")
    top = np.finfo(float).max
    report = auditors.plrv_audit(np.nan_to_num(got.losses, posinf=top, neginf=-top), eps, delta,
                                 confidence=1.0 - error / 2, lower_bound="thresholds")
    run = int(np.argmax(got.losses))
    largest = float(got.losses[run])
    how = "engine run"
    pure_laplace = delta == 0 and all(ch.mechanism == "laplace" for ch in got.noise.values())
    built = constructed_losses(pair, ctx, got) if pure_laplace and largest <= eps else None
    if built is not None and built.max() > largest:
        run, largest, how = int(np.argmax(built)), float(built.max()), "the changed agent's constructed transcript on run"
        report = dataclasses.replace(report, violation=largest > eps)
    if not report.violation:
        if pure_laplace:  # the worst-case search's pair may refute it at these scales (search_evidence)
            ctx.cache[SCALE_BOUNDS] = got
        built_too = " and the changed agent's constructed transcripts" if built is not None else ""
        return None, (f"the engine runs'{built_too} losses at the realized scale (the pair's shifts over upper "
                      f"confidence bounds of the released scales, confidence {1 - got.error:.6g}) stay within the "
                      f"claim (largest {largest:.6g} against epsilon {eps:.6g}; delta(epsilon) lower bound "
                      f"{report.delta_lower:.3g} against {delta:.3g})")
    fields: dict[str, Any] = {"scale_upper": {c: np.nanmax(u).item() for c, u in got.scale_upper.items()},
                              "method": ("noise conformance: the released noise is smaller than declared, and the "
                                         "runs' privacy losses at an upper confidence bound of the released scale "
                                         "(the pair's realized shifts) exceed the claim")}
    if delta > 0:
        confidence = 1.0 - got.error - error / 2
        fields.update(delta_lower=report.delta_lower, confidence=confidence)
        what = (f"delta(epsilon={eps:.6g}) >= {report.delta_lower:.3g} > claimed delta {delta:.3g} "
                f"(confidence {confidence:.6g})")
    else:
        fields.update(run=run, loss=largest, confidence=1.0 - got.error, transcript=how)
        what = f"{how} {run} has privacy loss >= {largest:.6g} > epsilon {eps:.6g} (confidence {1 - got.error:.6g})"
    return fields, f"at the released scale (upper confidence bounds, the pair's realized shifts): {what}"
