"""Each release's residual against the draw the engine handed it: the draw-by-draw check of the declared noise.

The declarations state ``released = noise-free value + scale * (a fresh standard draw)``; ``side_draws``
compares every residual of one side's engine runs with its declared scale times the draw the engine recorded,
up to round-off (``asyncdp.privacy.roundoff``), and bounds the probability of draws too small to tell apart
from 0. The noise conformance step (``asyncdp.privacy.conformance``) reads its answer; the context calls it to
replay the first run with a release off its draw twice (a rule drawing randomness of its own is refused).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .behavior import declared_noise
from .context import CheckContext
from .roundoff import _roundoff_floor

__all__ = ["side_draws"]


_EXACT_ULPS = 8.0
"""Round-off allowed between a residual and its declared scale times the engine's draw, in floating-point
spacings of the larger of the released value and the scaled draw, or the smaller of the round's round-off bound
(``roundoff._roundoff_floor``) and :data:`_EXACT_RELATIVE` of the scale, whichever is larger..."""
_EXACT_RELATIVE = 1e-10
"""... a cap in units of the declared scale on that bound (measured on the
shipped scenarios under every timing and mode before ``roundoff._roundoff_floor``: at most 1.1e-11 of the scale,
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
    (``roundoff._roundoff_floor``) and :data:`_EXACT_RELATIVE` of the scale; a residual beyond it is a mismatch
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
        # (consecutive rounds, e.g. every round, as a slice: views of the same entries, not copies)
        pick: Any = slice(int(rounds[0]), int(rounds[-1]) + 1) if rounds[-1] - rounds[0] + 1 == rounds.size \
            else rounds
        sub_res, sub_exp, sub_tol = res[:, pick], expected[:, pick], tol[:, pick]
        bad_minus = ~(np.abs(sub_res + sub_exp) <= sub_tol) & released[:, pick]
        minus = bad_minus.sum(axis=axes) < plus_count[rounds]
        if minus.any():
            flip = rounds[minus]
            bad[:, flip] = bad_minus[:, minus]
            expected[:, flip] = -expected[:, flip]
    count = int(np.count_nonzero(bad))
    first: tuple[Any, ...] = ()
    if count:
        idx = tuple(int(k) for k in np.unravel_index(int(np.argmax(bad)), bad.shape))  # the first (argwhere's)
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
