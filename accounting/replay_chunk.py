"""One chunk of runs replayed round by round: the constructed releases (pinned agents, tilted draws), the
residuals, the noise-free checks and gaps, the density ratios, the combinations and both recursions' steps,
and the copies of the states a later replay resumes from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .replay import NOISE_FREE_RTOL
from .replay_densities import _deferred_densities, _log_density, _nan_to_num, _point_mass_ratio, noise_free_gap
from .replay_inputs import ChannelNoise, ChannelRule, RunPins, ScheduleBatch, ScheduleLike, TiltedDraw
from .round_combinations import _combine
from .round_gather import _RoundIndex
from .schedule_reads import dense_round
from .shared_rounds import _one_round, shared_round


def _offset(draw: TiltedDraw, name: str, offset: int, runs: int, t: int, pins: Any) -> np.ndarray:
    """Round ``t``'s fixed offsets of channel ``name`` for the chunk's runs and the pinned agents (NaN: 0)."""
    assert draw.offsets is not None
    return _nan_to_num(np.asarray(draw.offsets[name][offset:offset + runs, t - 1], dtype=float)[:, pins])


_SHARED_RUNS = 32
"""Fewest runs for which a round that every run has alike is combined as a :class:`SharedRound` (with fewer, the
general path's gather is as fast)."""


class _NoSnapshot(Exception):
    """A state :func:`_snapshot` cannot copy."""


def _snapshot(state: Any) -> Any:
    """A copy of a rule's state that no later in-place change of the state reaches (arrays copied; dicts, lists
    and tuples of them rebuilt; immutable scalars kept); :class:`_NoSnapshot` for anything else."""
    if isinstance(state, np.ndarray):
        return state.copy()
    if isinstance(state, dict):
        return {k: _snapshot(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_snapshot(v) for v in state) if type(state) in (list, tuple) else _no_snapshot(state)
    if state is None or isinstance(state, (bool, int, float, complex, str, bytes, np.generic)):
        return state
    return _no_snapshot(state)


def _no_snapshot(state: Any) -> Any:
    raise _NoSnapshot(type(state).__name__)


def _replay_chunk(messages: Mapping[str, np.ndarray], schedules: Sequence[ScheduleLike] | ScheduleBatch,
                  noise: Mapping[str, ChannelNoise], rule: ChannelRule, rule_prime: ChannelRule | None,
                  unicast: bool, horizon: int, residuals: dict[str, np.ndarray], offset: int,
                  mismatch: dict[str, tuple[int, int] | None], gaps: dict[str, np.ndarray],
                  pin: int | np.ndarray | RunPins | None, draw: TiltedDraw | None = None, tilted: dict[str, np.ndarray] | None = None,
                  residuals_p: dict[str, np.ndarray] | None = None, start: int = 1, init: Any = None,
                  prefix: np.ndarray | None = None, trace: list[Any] | None = None,
                  densities: bool = True) -> np.ndarray | None:
    runs = len(schedules)
    by_run = None
    if isinstance(pin, RunPins):  # (rows, agents) of this chunk's runs
        by_run = (np.arange(runs), pin.agents[offset:offset + runs])
        pin = None
    pins: Any = pin
    n_agents = next(iter(messages.values())).shape[2]
    if isinstance(pin, np.ndarray) and pin.shape == (n_agents,) and (pin == np.arange(n_agents)).all():
        pins = slice(None)  # every agent pinned, in order: their messages as a slice (views, the same entries)
    if init is None:
        x = rule.initial_state(runs)
        xp = rule_prime.initial_state(runs) if rule_prime is not None else None
    else:  # resumed at round ``start`` from copies of the states recorded there
        x, xp = _snapshot(init[0]), _snapshot(init[1])
    contributions = np.zeros((runs, horizon)) if rule_prime is not None else None
    if contributions is not None and prefix is not None:
        contributions[:, :start - 1] = prefix
    scales = {name: [noise[name].scale(t) for t in range(1, horizon + 1)] for name in messages}
    shared = getattr(schedules, "shared_round", None) if not unicast else None
    # without a tilted draw, each noisy release's residuals under both problems are written round by round and
    # its density ratios are computed after the last round, for every round at once (a round's transcript entries
    # are final once the round is processed: a construction writes round t's messages in round t only)
    # (a list in the messages' order: the channels' terms are added in that order, as per round)
    deferred = [name for name in messages
                if draw is None and any(sc > 0 for sc in scales[name][start - 1:])]
    diffs = {name: residuals[name][offset:offset + runs] for name in deferred}
    diffs_p = {} if rule_prime is None else {
        name: (residuals_p[name][offset:offset + runs] if residuals_p is not None else np.empty(y.shape))
        for name, y in messages.items() if name in deferred}
    peaks = {name: np.zeros(runs) for name in messages}  # each run's noise-free magnitude so far (noise_free_gap)
    step: np.ndarray | None = None  # one round's residuals (reused by every round and channel of its shape)
    work: dict[Any, np.ndarray] = {}  # the arrays the shared rounds' combinations reuse (SharedRound.mixed)
    for t in range(start, horizon + 1):
        if trace is not None:
            try:
                trace.append((_snapshot(x), _snapshot(xp)))
            except _NoSnapshot:  # a state that cannot be copied: nothing is recorded
                trace.clear()
                trace.append(None)
                trace = None
        one = shared(t) if shared is not None else None
        w: Any = None
        src: Any = None
        index: Any = None
        if one is None:
            w, src = dense_round(schedules, t)
            if not unicast and runs >= _SHARED_RUNS and _one_round(w, src):  # every run combines alike
                one = shared_round(w[0], src[0])
            else:
                index = schedules.gather_index(t) if hasattr(schedules, "gather_index") else _RoundIndex(src)
        mean = rule.message_means(x, t)
        mean_p = rule_prime.message_means(xp, t) if rule_prime is not None else None
        mixed: dict[str, np.ndarray] = {}
        mixed_p: dict[str, np.ndarray] = {}
        for name, y in messages.items():
            scale = scales[name][t - 1]
            mu = np.asarray(mean[name], dtype=float)
            mp_all = None if mean_p is None else np.asarray(mean_p[name], dtype=float)
            if by_run is not None:  # a constructed transcript, run r pinned to agent by_run[1][r] (RunPins)
                value = mu[by_run][:, None, :] if unicast else mu[by_run]
                if not unicast and y.flags.c_contiguous:  # the pinned messages as rows of y seen as (-1, d): one
                    n_y = y.shape[2]  # index array instead of two (the same entries)
                    rows = by_run[0] * (horizon * n_y) + ((t - 1) * n_y) + by_run[1]
                    flat = y.reshape(-1, y.shape[-1])
                    flat[rows] = np.where(np.isnan(np.take(flat, rows, axis=0)), np.nan, value)
                else:
                    seen = ~np.isnan(y[by_run[0], t - 1, by_run[1]])
                    y[by_run[0], t - 1, by_run[1]] = np.where(seen, value, np.nan)
                if scale == 0:  # a noise-free release of anyone is its noise-free value
                    seen_all = ~np.isnan(y[:, t - 1])
                    y[:, t - 1] = np.where(seen_all, mu[:, :, None, :] if unicast else mu, np.nan)
            elif pin is not None:  # a constructed transcript: the pinned agent releases its noise-free values
                seen = ~np.isnan(y[:, t - 1, pins])
                value = mu[:, pins, None, :] if unicast else mu[:, pins]
                if draw is not None and scale > 0:  # ... or its tilted noisy release
                    assert mp_all is not None
                    lam_t = draw.tilt if draw.rounds[t - 1] else 0.0
                    mp = mp_all[:, pins, None, :] if unicast else mp_all[:, pins]  # unicast: every copy's shift
                    move = (value - mp) if draw.offsets is None else _offset(draw, name, offset, runs, t, pins)
                    value = value + lam_t * move + scale * draw.noise[name][offset:offset + runs, t - 1][:, pins]
                y[:, t - 1, pins] = np.where(seen, value, np.nan)
                if scale == 0:  # a noise-free release of anyone is its noise-free value
                    seen_all = ~np.isnan(y[:, t - 1])
                    y[:, t - 1] = np.where(seen_all, mu[:, :, None, :] if unicast else mu, np.nan)
            yt = y[:, t - 1]
            mu_obs = mu[:, :, None, :] if unicast else mu
            if scale > 0 and name in deferred:  # its density: after the last round (_deferred_densities)
                # y - mu (NaN where y is: nothing observed), computed into a contiguous row of rounds and copied
                # into round t of the residuals (a subtraction into their strided rows is slower than the copy)
                if step is None or step.shape != yt.shape:
                    step = np.empty(yt.shape)
                np.subtract(yt, mu_obs, out=step)
                np.copyto(diffs[name][:, t - 1], step)
                if mp_all is not None:
                    np.subtract(yt, mp_all[:, :, None, :] if unicast else mp_all, out=step)
                    np.copyto(diffs_p[name][:, t - 1], step)
                _combine(y, yt, mu, mp_all, t, unicast, name, mixed, mixed_p, one, schedules, w, src, index, work)
                continue
            observed = ~np.isnan(yt)
            resid = np.where(observed, yt - mu_obs, np.nan)
            ch = noise[name]
            if scale > 0:
                residuals[name][offset:offset + runs, t - 1] = resid
            else:
                g, r, a = noise_free_gap(yt, mu_obs, observed, peaks[name])
                row = gaps[name][t - 1]
                if not g <= row[0]:  # the round's largest gap over the chunks (NaN: none yet)
                    row[:] = (g, offset + r, a)
            if scale == 0 and mismatch.get(name) is None:
                off = np.abs(_nan_to_num(resid)) > NOISE_FREE_RTOL * (1.0 + np.abs(np.broadcast_to(mu_obs, yt.shape)))
                if off.any():
                    mismatch[name] = (offset + int(np.argwhere(off)[0][0]), t)
            if contributions is not None and mp_all is not None:
                mu_p_obs = mp_all[:, :, None, :] if unicast else mp_all
                if scale > 0:
                    assert ch.mechanism is not None
                    d_p = yt - mu_p_obs
                    if residuals_p is not None:
                        residuals_p[name][offset:offset + runs, t - 1] = np.where(observed, d_p, np.nan)
                    part = (_log_density(_nan_to_num(resid), ch.mechanism, scale)
                            - _log_density(np.where(observed, d_p, 0.0), ch.mechanism, scale))
                    contributions[:, t - 1] += part
                    if draw is not None and tilted is not None and draw.rounds[t - 1]:
                        d = np.where(observed, mu_obs - mu_p_obs, 0.0)
                        if draw.offsets is None:
                            m2 = (d * d).reshape(runs, -1).sum(axis=1) / (scale * scale)
                            log_w = draw.tilt * (1.0 + draw.tilt) * m2 / 2.0 - draw.tilt * part
                        else:  # the proposal moved each release by lambda times its fixed offset
                            o = np.where(observed, _offset(draw, name, offset, runs, t, slice(None)), 0.0)
                            m2 = (o * o).reshape(runs, -1).sum(axis=1) / (scale * scale)
                            along = (o * _nan_to_num(resid)).reshape(runs, -1).sum(axis=1) / (scale * scale)
                            log_w = draw.tilt * draw.tilt * m2 / 2.0 - draw.tilt * along
                            assert draw.tolerance is not None
                            tol = np.broadcast_to(np.asarray(draw.tolerance[name], dtype=float),
                                                  np.shape(draw.offsets[name])[1:])[t - 1]
                            off = observed & ~(np.abs(d - o) <= tol)
                            tilted["matched"][offset:offset + runs] &= ~off.reshape(runs, -1).any(axis=1)
                        tilted["log_w"][offset:offset + runs] += log_w
                        tilted["mu2"][offset:offset + runs] += m2
                else:
                    contributions[:, t - 1] += _point_mass_ratio(yt, mu_obs, mu_p_obs, observed, t)
            _combine(y, yt, mu, mp_all, t, unicast, name, mixed, mixed_p, one, schedules, w, src, index, work)
        x = rule.next_state(x, mixed, t)
        if rule_prime is not None:
            xp = rule_prime.next_state(xp, mixed_p, t)
    if contributions is not None and densities:
        for name in deferred:
            _deferred_densities(messages[name], diffs[name], diffs_p[name], noise[name], scales[name], start,
                                contributions)
    return contributions
