"""Exact replay of recorded runs on their realized schedules, for any number of channels.

:mod:`accounting.replay` replays lockstep rounds with the topology's
weights. Real runs are asynchronous: an agent combines whatever messages it
has (the deadline's, the freshest, a stale one), with renormalized weights.
This module replays a run *as it happened*: its transcript (every message on
every channel) and its realized schedule (for each round and receiver, which
sender's message of which round entered the combination with which weight).

Why the replay is exact. Write ``S`` for the schedule and ``y`` for the
messages. In the engines ``S`` is drawn from the link and clock streams only
(never from the private data or the privacy noise), so ``p_P(y, S) = p(S)
p_P(y | S)`` and the schedule's density cancels in the privacy loss. Given
``S``, each message is ``y_i(t) = mu_i(t) + noise_i(t)``, where the noise-free
value ``mu_i(t)`` is the rule's R step at agent ``i``'s state after round
``t - 1``, and that state is a deterministic function of the messages agent
``i`` combined (named by ``S``) and of its own private cost. The map from the
noise to ``y`` is therefore triangular with unit Jacobian (in the causal order
of the run), so

    p_P(y | S) = prod_(i, t) p_noise(y_i(t) - mu_i(t)),

with every ``mu_i(t)`` computed from the *observed* ``y``, and the privacy
loss ``L = log p_P(y | S) - log p_P'(y | S)`` is exact: replaying ``P``'s and
``P'``'s rules on the same observed messages gives both products. Replay
needs no causal order (every message used is in the transcript), so rounds
are processed in order, every run and agent at once, every channel included
(e.g. DPSDA-PS's noise-free push-sum weights, Showkatbakhsh's noise-free
Stage II).

Channels: every channel of the transcript enters the density. A channel with
a positive noise scale contributes its noise densities; a noise-free channel
(or a round released with scale 0) is a point mass, handled as in
:mod:`accounting.replay` (loss 0, ``+inf`` or ``-inf``). The residuals
``y - mu_P`` of every noisy release are returned too: they are what the noise
conformance test (:mod:`accounting.conformance`) checks against the declared
noise.

Shapes: ``R`` runs, ``T`` rounds, ``N`` agents. Broadcast messages of a
channel are ``(R, T, N, d)``; unicast ``(R, T, N, N, d)`` with ``[r, t-1, i,
j]`` the copy ``i -> j`` (NaN where nothing was sent). A schedule is any
object with ``dense(t) -> (W, S)``: ``W[i, j]`` the weight receiver ``i``
applied to sender ``j``'s message of round ``S[i, j]`` (``S = 0`` where
unused). The schedules of the runs are a sequence of those, or one object
holding every run's (:class:`~accounting.replay_inputs.ScheduleBatch`: ``len()``, ``dense_runs(t)``
giving ``(R, N, N)`` arrays, slicing to a batch of fewer runs), which is read
without building any run's schedule. The self term ``(i, i)`` is the agent's own round-``t`` message
(broadcast) or the average of the copies it sent in round ``t`` (unicast; its
noise-free value if it sent none).

Cost. The rounds are sequential (each state depends on the previous), but
what does not depend on the states is done once: a round's combinations
read the transcript and the schedule only (shared by both problems), and
when every run has the same ``(W, S)`` in a round (lockstep runs) they are
computed per sender column (or per layer of senders) with the runs innermost
(:class:`~accounting.shared_rounds.SharedRound`, reusing its arrays from round to round) instead of
gathering ``R x N x N`` entries; without a tilted draw, each
round writes its residuals under both problems and the density ratios of
every noisy release are computed after the last round, for consecutive
rounds at once. Both are the same floating-point operations in the same
order as the round-by-round gather (the tests compare them to the bit).

Where the parts live: this module checks the arguments, splits the runs into
chunks and assembles the result; ``accounting.replay_inputs`` holds what the
replay takes (rules, schedules, noise, draws, pins), ``accounting.replay_chunk``
replays one chunk round by round, ``accounting.round_combinations`` computes a
round's combinations (by ``accounting.shared_rounds`` or the gather of
``accounting.round_gather``), ``accounting.schedule_reads`` reads the
schedules and ``accounting.replay_densities`` computes the noise densities.

Example:
    >>> import numpy as np
    >>> class Avg:  # x <- mixed; message = x
    ...     def initial_state(self, runs): return np.zeros((runs, 2, 1))
    ...     def message_means(self, x, t): return {"y": x}
    ...     def next_state(self, x, mixed, t): return mixed["y"]
    >>> class Sched:
    ...     def dense(self, t): return np.full((2, 2), 0.5), np.full((2, 2), t)
    >>> y = {"y": np.zeros((1, 3, 2, 1))}
    >>> out = scheduled_replay(y, [Sched()], {"y": ChannelNoise("laplace", np.ones(3))}, Avg(), Avg())
    >>> out.losses.tolist(), out.residuals["y"].shape
    ([0.0], (1, 3, 2, 1))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import AccountingError, UnknownMechanismError
from .replay import check_point_masses
from .replay_chunk import _replay_chunk
from .replay_inputs import ChannelNoise, ChannelRule, RunPins, ScheduleBatch, ScheduleLike, TiltedDraw

__all__ = ["ScheduledReplay", "scheduled_replay"]


_CHUNK_ENTRIES = 4_000_000
"""Largest ``runs x N x N x d`` gather per chunk of runs (memory stays bounded for large R and N)."""


@dataclass(frozen=True)
class ScheduledReplay:
    """What :func:`scheduled_replay` computed.

    Attributes:
        losses: the privacy loss of each run, ``(R,)`` (``None`` without ``rule_prime``).
        per_round: each round's contribution, ``(R, T)`` (``None`` without ``rule_prime``).
        residuals: per noisy channel, ``y - mu_P`` with the shape of its messages
            (NaN where nothing was observed or the round is noise-free).
        noise_free_mismatch: per channel, the first ``(run, round)`` whose
            noise-free messages differ from ``mu_P`` (beyond
            :data:`accounting.replay.NOISE_FREE_RTOL`), else ``None``: randomness
            the declarations do not account for.
        noise_free_gap: per channel, ``(T, 3)`` rows ``(gap, run, agent)``: round ``t``'s largest
            ``|y - mu_P|`` over its noise-free releases in floating-point spacings of the channel's magnitude
            and where it is (:func:`~accounting.replay_densities.noise_free_gap`; NaN rows for noisy rounds;
            with ``resume``, the run's magnitude counts from round ``t0``). A gap below the matching tolerance but above round-off is a
            release the replay does not explain.
        messages: the transcript replayed, per channel (the constructed one with ``pin_agent``).
        log_weights: with ``draw``: per run ``sum_t lambda_t (1 + lambda_t) mu_t^2 / 2 - lambda_t l_t``, the exact
            ``log p_P(y | S) - log q(y | S)`` of the tilted construction (once the transcript has settled).
        tilted_mu: with ``draw``: per run ``sqrt(sum mu_t^2)`` over the rounds of ``draw.rounds``.
        matched: with ``draw.offsets``: per run, whether every release of ``draw.rounds`` had its shift within
            ``draw.tolerance`` of its offset (:class:`~accounting.replay_inputs.TiltedDraw`).
        residuals_prime: per noisy channel, ``y - mu_P'`` (``None`` without ``rule_prime``): the residuals a
            second replay with ``P'``'s recursion as ``rule`` would give (the same combinations, computed
            by the same operations), so that ``residuals - residuals_prime`` is every release's realized
            shift without replaying again (:func:`accounting.coverage.realized_shifts`).
        states: with ``record``: per round ``t`` (entry ``t - 1``) copies of both recursions' states at its
            start, ``(state, state')``, what ``resume`` starts from (``None`` when not recorded).
    """

    losses: np.ndarray | None
    per_round: np.ndarray | None
    residuals: dict[str, np.ndarray]
    noise_free_mismatch: dict[str, tuple[int, int] | None]
    noise_free_gap: dict[str, np.ndarray]
    messages: dict[str, np.ndarray] | None = None
    log_weights: np.ndarray | None = None
    tilted_mu: np.ndarray | None = None
    matched: np.ndarray | None = None
    residuals_prime: dict[str, np.ndarray] | None = None
    states: tuple[Any, ...] | None = None


def scheduled_replay(
    messages: Mapping[str, np.ndarray],
    schedules: Sequence[ScheduleLike] | ScheduleBatch,
    noise: Mapping[str, ChannelNoise],
    rule: ChannelRule,
    rule_prime: ChannelRule | None = None,
    *,
    unicast: bool = False,
    pin_agent: int | Sequence[int] | RunPins | None = None,
    draw: TiltedDraw | None = None,
    record: bool = False,
    resume: tuple[int, ScheduledReplay] | None = None,
    losses: bool = True,
) -> ScheduledReplay:
    """Replay recorded runs on their realized schedules: residuals under ``P`` and each run's exact privacy loss.

    Args:
        messages: per channel, the observed messages ``(R, T, N, d)``
            (unicast ``(R, T, N, N, d)``); every channel the rule reads.
        schedules: one schedule per run (the same object may repeat: lockstep runs share one), or a
            :class:`~accounting.replay_inputs.ScheduleBatch` of every run's.
        noise: per channel, the declared noise (:class:`~accounting.replay_inputs.ChannelNoise`).
        rule: the recursion under ``P``; ``rule_prime``: under the adjacent
            ``P'`` (omit it for residuals only).
        unicast: the messages are per link.
        pin_agent: construct a transcript instead of reading one for this
            agent (or these agents: round adjacency of online losses changes
            every agent's input): each of its messages (every channel) is replaced by its
            noise-free value under ``P`` before anything uses it, and so is
            every agent's noise-free release (a point mass: any other value has
            probability 0). The other messages stay as given. Rounds are
            processed in order, so a combination that uses a message of a
            later round (asynchronous runs) may have read it before it was
            constructed: replay the returned transcript again to get its
            exact loss. The returned
            :attr:`ScheduledReplay.messages` holds the constructed transcript;
            with Laplace noise its loss is the largest the given schedule and
            other messages allow for that agent (each term is ``|mu - mu'|_1 / b``).
            A :class:`~accounting.replay_inputs.RunPins`: one agent per run (each run as if replayed alone,
            pinned to its agent).
        draw: with ``pin_agent`` (every agent) and ``rule_prime``: the noisy
            releases are drawn instead (:class:`~accounting.replay_inputs.TiltedDraw`; Gaussian channels;
            unicast: each copy its own draw, tilted by its own shift), and the result carries the tilt's exact log weights
            (:func:`accounting.tilted_replay.tilted_scheduled_transcripts`
            repeats the construction until the transcript settles).
        record: keep copies of the states at the start of every round
            (:attr:`ScheduledReplay.states`; not with ``draw``, and only when
            the runs are replayed as one chunk and the states are arrays,
            dicts, lists or tuples of them: otherwise ``states`` is ``None``).
        resume: ``(t0, previous)``: a replay whose rounds before ``t0`` are
            those of ``previous`` (a recorded replay of the same runs with the
            same rules and arguments): its states at the start of round
            ``t0``, its residuals, losses and noise-free mismatches of the
            earlier rounds are taken, and rounds ``t0 .. T`` are replayed.
            The caller vouches that every value the earlier rounds read is
            the same in ``messages`` as in ``previous``'s replay (e.g. a
            construction pass whose earlier rounds read no entry that
            changed); then the result is what the whole replay gives.
        losses: with ``rule_prime``, compute the privacy losses (``False``: only the residuals under both
            problems, e.g. for the realized shifts; ``losses`` and ``per_round`` are ``None``, and the noisy
            releases' density ratios, computed after the last round, are not computed at all). Everything
            else is checked as with losses: the noise-free releases against both problems' values, and no
            run matching ``P`` alone in one noise-free round and ``P'`` alone in another. Not with ``draw``
            or ``resume``.

    Returns:
        A :class:`ScheduledReplay`.

    Raises:
        AccountingError: shapes that disagree, a channel without a noise
            declaration, a combined message missing from the transcript,
            noise-free messages matching neither problem, or a draw without
            every agent pinned.

    Example:
        See the module docstring.
    """
    names = list(messages)
    if not names:
        raise AccountingError("messages must hold at least one channel")
    missing = [n for n in names if n not in noise]
    if missing:
        raise AccountingError(f"no noise declaration for channel(s) {missing}")
    arrays = {n: (np.array if pin_agent is not None else np.asarray)(messages[n], dtype=float) for n in names}
    pin = pin_agent if pin_agent is None or isinstance(pin_agent, (int, np.integer, RunPins)) else \
        np.asarray(pin_agent, dtype=np.int64)
    ndim = 5 if unicast else 4
    for n, a in arrays.items():
        if a.ndim != ndim:
            raise AccountingError(f"channel {n!r}: messages must have {ndim} axes "
                                  f"({'(R, T, N, N, d)' if unicast else '(R, T, N, d)'}), got shape {a.shape}")
    runs, horizon = arrays[names[0]].shape[:2]
    for n, a in arrays.items():
        if a.shape[:2] != (runs, horizon):
            raise AccountingError(f"channel {n!r} has {a.shape[:2]} (runs, rounds), channel {names[0]!r} has "
                                  f"{(runs, horizon)}")
        ch = noise[n]
        if ch.mechanism is not None and ch.scales.size != horizon:
            raise AccountingError(f"channel {n!r}: {ch.scales.size} noise scales for {horizon} rounds")
    if len(schedules) != runs:
        raise AccountingError(f"{len(schedules)} schedules for {runs} runs")
    if isinstance(pin, RunPins):
        n_all = arrays[names[0]].shape[2]
        agents = np.asarray(pin.agents)
        if agents.shape != (runs,) or agents.dtype.kind not in "iu" or (agents < 0).any() or (agents >= n_all).any():
            raise AccountingError(f"pin_agent: RunPins needs one agent in 0..{n_all - 1} per run ({runs}), got "
                                  f"agents of shape {agents.shape}")
    if not losses and (draw is not None or resume is not None):
        raise AccountingError("losses=False: not with draw or resume (their results are losses)")
    tilted = None
    if draw is not None:
        if pin is None or isinstance(pin, RunPins) or rule_prime is None:
            raise AccountingError("draw needs pin_agent (not per run) and rule_prime")
        n_all = arrays[names[0]].shape[2]
        if not np.array_equal(np.unique(np.asarray(pin)), np.arange(n_all)):  # the weights count every release
            raise AccountingError(f"draw needs every agent pinned (its weights are every release's density ratio "
                                  f"under the tilt), got pin_agent {pin_agent!r} of {n_all} agents")
        for n in names:
            if noise[n].mechanism == "laplace":
                raise UnknownMechanismError(f"channel {n!r}: a tilted draw needs Gaussian noise, got laplace")
            got = None if n not in draw.noise else np.shape(draw.noise[n])
            if noise[n].mechanism is not None and got != arrays[n].shape:
                raise AccountingError(f"channel {n!r}: draws of shape {got} for messages of shape {arrays[n].shape}")
        if np.shape(draw.rounds) != (horizon,):
            raise AccountingError(f"draw.rounds must have shape ({horizon},), got {np.shape(draw.rounds)}")
        if draw.offsets is not None:
            for n in names:
                got = None if n not in draw.offsets else np.shape(draw.offsets[n])
                if noise[n].mechanism is not None and got != arrays[n].shape:
                    raise AccountingError(f"channel {n!r}: offsets of shape {got} for messages of shape "
                                          f"{arrays[n].shape}")
                if noise[n].mechanism is not None and (draw.tolerance is None or n not in draw.tolerance):
                    raise AccountingError(f"channel {n!r}: offsets without a tolerance")
        tilted = {"log_w": np.zeros(runs), "mu2": np.zeros(runs), "matched": np.ones(runs, dtype=bool)}
    # every noisy round's residuals are written (by the replay, or from ``resume``): only the other rounds need NaN
    residuals = {n: _unwritten_nan(a.shape, noise[n]) for n, a in arrays.items() if noise[n].mechanism is not None}
    residuals_p = None if rule_prime is None else {n: _unwritten_nan(r.shape, noise[n]) for n, r in residuals.items()}
    mismatch: dict[str, tuple[int, int] | None] = {n: None for n in names}
    gaps = {n: np.full((horizon, 3), np.nan) for n in names}
    n_agents = arrays[names[0]].shape[2]
    width = max(a.shape[-1] for a in arrays.values())
    chunk = max(1, _CHUNK_ENTRIES // max(1, n_agents * n_agents * width))
    first, init, prefix = 1, None, None
    if resume is not None:
        first, init, prefix = _resumed(resume, horizon, runs, chunk, draw, rule_prime, residuals, residuals_p,
                                       mismatch, gaps)
    trace: list[Any] | None = [] if (record or resume is not None) and draw is None and runs <= chunk else None
    if trace is not None and resume is not None:
        assert resume[1].states is not None
        trace.extend(resume[1].states[:first - 1])
    parts = []
    for start in range(0, runs, chunk):
        stop = min(runs, start + chunk)
        # (every run in one chunk: the schedules as given, which a batch's slice of all its runs equals; slicing a
        # batch may copy and check its columns again)
        picked = schedules if (start, stop) == (0, runs) else schedules[start:stop]
        part = _replay_chunk({n: a[start:stop] for n, a in arrays.items()}, picked, noise, rule,
                             rule_prime, unicast, horizon, residuals, start, mismatch, gaps, pin, draw, tilted,
                             residuals_p, first, init, prefix, trace, densities=losses)
        if part is not None:
            parts.append(part)
    if trace is not None and trace and trace[-1] is None:  # a state could not be copied
        trace = None
    per_round = np.concatenate(parts) if parts else None
    run_losses = None
    if per_round is not None:
        check_point_masses(per_round, "run")  # (without the densities: the noise-free rounds' ratios, 0 or +-inf)
        if losses:
            run_losses = per_round.sum(axis=1)
        else:
            per_round = None
    return ScheduledReplay(losses=run_losses, per_round=per_round, residuals=residuals, noise_free_mismatch=mismatch,
                           noise_free_gap=gaps,
                           messages=arrays, log_weights=None if tilted is None else tilted["log_w"],
                           tilted_mu=None if tilted is None else np.sqrt(tilted["mu2"]),
                           matched=None if tilted is None or draw is None or draw.offsets is None else tilted["matched"],
                           residuals_prime=residuals_p,
                           states=None if trace is None else tuple(trace))


def _unwritten_nan(shape: tuple[int, ...], ch: ChannelNoise) -> np.ndarray:
    """An array for a noisy channel's residuals ``(R, T, ...)``: NaN in its rounds released without noise (scale 0),
    which nothing writes; the other rounds are left for the replay to write."""
    out = np.empty(shape)
    zero = np.flatnonzero(np.asarray(ch.scales) <= 0)
    if zero.size:
        out[:, zero] = np.nan
    return out


def _resumed(resume: tuple[int, ScheduledReplay], horizon: int, runs: int, chunk: int, draw: TiltedDraw | None,
             rule_prime: ChannelRule | None, residuals: dict[str, np.ndarray],
             residuals_p: dict[str, np.ndarray] | None, mismatch: dict[str, tuple[int, int] | None],
             gaps: dict[str, np.ndarray]) -> tuple[int, Any, np.ndarray | None]:
    """Check ``resume`` and fill the outputs of the rounds before ``t0`` from the previous replay; returns ``t0``,
    the states at its start and the earlier rounds' contributions."""
    t0, prev = resume
    if draw is not None or runs > chunk:
        raise AccountingError("resume: not with draw, and only for runs replayed as one chunk")
    if prev.states is None or not 1 <= t0 <= len(prev.states) or len(prev.states) != horizon:
        raise AccountingError(f"resume: round {t0} of a replay without recorded states for {horizon} rounds")
    if (prev.per_round is None) != (rule_prime is None) or set(prev.residuals) != set(residuals) or (
            prev.per_round is not None and prev.per_round.shape != (runs, horizon)):
        raise AccountingError("resume: the previous replay is not one of these runs with these rules")
    for n, r in residuals.items():
        r[:, :t0 - 1] = prev.residuals[n][:, :t0 - 1]
        if residuals_p is not None:
            assert prev.residuals_prime is not None
            residuals_p[n][:, :t0 - 1] = prev.residuals_prime[n][:, :t0 - 1]
    for n, m in prev.noise_free_mismatch.items():
        if m is not None and m[1] < t0:
            mismatch[n] = m
    for n, g in prev.noise_free_gap.items():
        gaps[n][:t0 - 1] = g[:t0 - 1]
    return t0, prev.states[t0 - 1], None if prev.per_round is None else prev.per_round[:, :t0 - 1]
