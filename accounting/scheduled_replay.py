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
holding every run's (:class:`ScheduleBatch`: ``len()``, ``dense_runs(t)``
giving ``(R, N, N)`` arrays, slicing to a batch of fewer runs), which is read
without building any run's schedule. The self term ``(i, i)`` is the agent's own round-``t`` message
(broadcast) or the average of the copies it sent in round ``t`` (unicast; its
noise-free value if it sent none).

Cost. The rounds are sequential (each state depends on the previous), but
what does not depend on the states is done once: a round's combinations
read the transcript and the schedule only (shared by both problems), and
when every run has the same ``(W, S)`` in a round (lockstep runs) they are
computed per sender column (or per layer of senders) with the runs innermost
(:class:`SharedRound`, reusing its arrays from round to round) instead of
gathering ``R x N x N`` entries; without a tilted draw, each
round writes its residuals under both problems and the density ratios of
every noisy release are computed after the last round, for consecutive
rounds at once. Both are the same floating-point operations in the same
order as the round-by-round gather (the tests compare them to the bit).

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

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import AccountingError, UnknownMechanismError
from .replay import NOISE_FREE_RTOL, check_point_masses, check_round_scales, noise_free_matches

__all__ = ["ChannelRule", "ChannelNoise", "ScheduleLike", "ScheduleBatch", "ScheduledReplay", "SharedRound", "TiltedDraw",
           "RunPins", "shared_round",
           "scheduled_replay", "noise_free_gap", "reads_ahead", "later_reads", "dense_round", "gather_index", "tiled_gather_index"]

_CHUNK_ENTRIES = 4_000_000
"""Largest ``runs x N x N x d`` gather per chunk of runs (memory stays bounded for large R and N)."""


@runtime_checkable
class ChannelRule(Protocol):
    """A per-round recursion driven by observed messages on named channels (vectorized over runs and agents)."""

    def initial_state(self, runs: int) -> Any:
        """The state before round 1 for ``runs`` runs (independent of the private data)."""

    def message_means(self, state: Any, t: int) -> Mapping[str, np.ndarray]:
        """The noise-free messages of round ``t`` on every channel, ``(R, N, d_c)``."""

    def next_state(self, state: Any, mixed: Mapping[str, np.ndarray], t: int) -> Any:
        """The state after round ``t`` from each channel's combination ``(R, N, d_c)``."""


@runtime_checkable
class ScheduleLike(Protocol):
    """A realized schedule: ``dense(t)`` gives round ``t``'s weights and sender rounds, ``N x N`` each."""

    def dense(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """``(W, S)`` of round ``t``."""


@runtime_checkable
class ScheduleBatch(Protocol):
    """The schedules of ``R`` runs in one object: ``dense_runs(t)`` gives round ``t`` of every run.

    ``batch[a:b]`` must be the batch of runs ``a .. b - 1`` (the replay works on chunks of runs). A batch
    replayed many times may also keep each round's ``gather_index`` (``gather_index(t)``). A batch whose runs
    all share round ``t``'s ``(W, S)`` may say so with ``shared_round(t)``, giving that round's
    :class:`SharedRound` (e.g. kept per round); the replay then combines broadcast messages without gathering
    ``R x N x N`` entries (the same numbers).
    """

    def __len__(self) -> int:
        """``R``."""

    def __getitem__(self, runs: slice) -> Any:
        """The batch of the runs ``runs``."""

    def dense_runs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """``(W, S)`` of round ``t``, ``(R, N, N)`` each (row ``r``: run ``r``'s ``dense(t)``)."""


@dataclass(frozen=True)
class ChannelNoise:
    """The noise declared on one channel.

    Attributes:
        mechanism: ``"laplace"``, ``"gaussian"``, or ``None`` for a noise-free channel.
        scales: per-round scale ``(T,)`` (Laplace ``b`` or Gaussian standard
            deviation); 0 for a round released without noise. Ignored (may be
            ``None``) for a noise-free channel.

    Raises:
        UnknownMechanismError: an unknown mechanism.
        PrivacyParameterError: a negative or non-finite scale.
    """

    mechanism: str | None
    scales: Any = None

    def __post_init__(self) -> None:
        if self.mechanism not in (None, "laplace", "gaussian"):
            raise UnknownMechanismError(f"unknown mechanism {self.mechanism!r}; known: laplace, gaussian, None")
        if self.mechanism is None:
            return
        object.__setattr__(self, "scales", check_round_scales(self.scales))

    def scale(self, t: int) -> float:
        """The scale of round ``t`` (0 for a noise-free channel)."""
        return 0.0 if self.mechanism is None else float(self.scales[t - 1])


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
            and where it is (:func:`noise_free_gap`; NaN rows for noisy rounds; with ``resume``, the run's
            magnitude counts from round ``t0``). A gap below the matching tolerance but above round-off is a
            release the replay does not explain.
        messages: the transcript replayed, per channel (the constructed one with ``pin_agent``).
        log_weights: with ``draw``: per run ``sum_t lambda_t (1 + lambda_t) mu_t^2 / 2 - lambda_t l_t``, the exact
            ``log p_P(y | S) - log q(y | S)`` of the tilted construction (once the transcript has settled).
        tilted_mu: with ``draw``: per run ``sqrt(sum mu_t^2)`` over the rounds of ``draw.rounds``.
        matched: with ``draw.offsets``: per run, whether every release of ``draw.rounds`` had its shift within
            ``draw.tolerance`` of its offset (:class:`TiltedDraw`).
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


@dataclass(frozen=True)
class TiltedDraw:
    """Standard normal draws and a tilt for constructing Gaussian transcripts (``draw`` of :func:`scheduled_replay`).

    Each noisy release of a pinned agent (unicast: each copy it sends) becomes ``mu + lambda_t (mu - mu') + s_t z``
    (``mu``, ``mu'`` its noise-free values under ``P`` and ``P'`` given the
    transcript so far, ``s_t`` the declared standard deviation, ``z`` the
    draw), with ``lambda_t = tilt`` on the rounds of ``rounds`` and 0
    elsewhere: the exponential tilt of :mod:`accounting.tilted_replay`.

    With ``offsets`` each such release moves by ``lambda_t`` times its FIXED offset instead (the tilt of a pair whose
    shifts are those offsets), ``mu + lambda_t o + s_t z``; the log weights are then that proposal's exact ones,
    ``sum (lambda_t^2 ||o||^2 / 2 - lambda_t o . (y - mu)) / s_t^2``, ``tilted_mu`` is the offsets' composed ``mu``,
    and each run reports whether every tilted release's shift ``mu - mu'`` lies within ``tolerance`` of its offset,
    coordinate by coordinate (:attr:`ScheduledReplay.matched`).

    Attributes:
        noise: per channel, standard normal draws shaped like its messages.
        tilt: ``lambda >= 0``.
        rounds: ``(T,)`` booleans, the rounds tilted and weighted (the loss they add is the one bounded).
        offsets: per noisy channel, the fixed shift ``mu - mu'`` of every release, shaped like its messages
            (``None``: each release moves by its own shift).
        tolerance: with ``offsets``, per noisy channel the largest ``|mu - mu' - o|`` per coordinate a matched
            release may have (broadcastable to one run's messages, ``(T, N, d)``; unicast ``(T, N, N, d)``).
    """

    noise: Mapping[str, np.ndarray]
    tilt: float
    rounds: np.ndarray
    offsets: Mapping[str, np.ndarray] | None = None
    tolerance: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RunPins:
    """One pinned agent per run (``pin_agent`` of :func:`scheduled_replay`): run ``r`` constructs the messages
    of agent ``agents[r]``, e.g. stacked candidates that each change another agent.

    Each run is constructed as a replay of that run alone pinned to its agent constructs it: the same values.

    Attributes:
        agents: ``(R,)`` agent indices, one per run.

    Example:
        >>> RunPins(np.repeat([1, 2], 3)).agents.tolist()
        [1, 1, 1, 2, 2, 2]
    """

    agents: np.ndarray


def _offset(draw: TiltedDraw, name: str, offset: int, runs: int, t: int, pins: Any) -> np.ndarray:
    """Round ``t``'s fixed offsets of channel ``name`` for the chunk's runs and the pinned agents (NaN: 0)."""
    assert draw.offsets is not None
    return _nan_to_num(np.asarray(draw.offsets[name][offset:offset + runs, t - 1], dtype=float)[:, pins])


def _nan_to_num(a: np.ndarray) -> np.ndarray:
    """``numpy.nan_to_num(a)`` of a float array (NaN -> 0, +-inf -> the largest finite magnitude), in fewer steps
    for the usual arrays without infinities (the replay calls it several times per round)."""
    out = np.where(np.isnan(a), 0.0, a)
    return out if np.isfinite(out).all() else np.nan_to_num(out)


def _log_density(noise: np.ndarray, mechanism: str, scale: float) -> np.ndarray:
    """Sum over every axis but the first of the noise log-density, constants dropped (they cancel in ratios)."""
    axes = tuple(range(1, noise.ndim))
    if mechanism == "laplace":
        return -np.abs(noise).sum(axis=axes) / scale
    return -(noise**2).sum(axis=axes) / (2.0 * scale**2)


def _log_density_rounds(noise: np.ndarray, mechanism: str, scales: Sequence[float]) -> np.ndarray:
    """:func:`_log_density` of every round at once: ``noise`` ``(R, T', ...)``, ``scales`` the ``T'`` rounds'
    scales; ``(R, T')`` (each round's divisor computed as :func:`_log_density` computes it, in Python floats)."""
    return _log_density_sums(_round_sums(_terms(noise, mechanism)), mechanism, scales)


def _terms(noise: np.ndarray, mechanism: str) -> np.ndarray:
    """Each entry's term of the noise log density, as a new array: ``|noise|`` (Laplace) or ``noise ** 2``."""
    return np.abs(noise) if mechanism == "laplace" else noise**2


def _round_sums(terms: np.ndarray) -> np.ndarray:
    """Each run's and round's sum of ``terms`` ``(R, T', ...)``, ``(R, T')``."""
    return terms.sum(axis=tuple(range(2, terms.ndim)))


def _log_density_sums(sums: np.ndarray, mechanism: str, scales: Sequence[float]) -> np.ndarray:
    """:func:`_log_density_rounds` from each run's and round's sum of ``|noise|`` (Laplace) or ``noise ** 2``."""
    if mechanism == "laplace":
        return -sums / np.array([float(s) for s in scales])
    return -sums / np.array([2.0 * s**2 for s in scales])


def _point_mass_ratio(y: np.ndarray, mu: np.ndarray, mu_p: np.ndarray, observed: np.ndarray, t: int) -> np.ndarray:
    """A noise-free release's log-density ratio per run: 0, ``+inf`` or ``-inf`` (see :mod:`accounting.replay`).

    Only observed entries are compared, by :func:`accounting.replay.noise_free_matches`.
    """
    in_p, in_q = noise_free_matches(y, mu, mu_p, observed)
    if not (in_p | in_q).all():
        r = int(np.flatnonzero(~(in_p | in_q))[0])
        raise AccountingError(f"round {t} is noise-free but run {r}'s messages equal neither problem's message mean "
                              "(probability 0 under both): wrong rule, declaration or transcript?")
    return np.where(in_p & in_q, 0.0, np.where(in_p, np.inf, -np.inf))


def noise_free_gap(y: np.ndarray, mu: np.ndarray, observed: np.ndarray, peak: np.ndarray) -> tuple[float, int, int]:
    """The largest gap between a round's noise-free releases and their replayed values, in floating-point spacings
    of the channel's magnitude in the run so far.

    The round-off of a combination ``sum_j W_ij y_j`` (weights in ``[0, 1]`` summing to at most 1) is relative
    to the terms combined, not to its result (consensus cancels: Showkatbakhsh's Stage II releases ``2e-5``
    after rounds of values near 1), so each coordinate's gap ``|y - mu|`` is counted in spacings of ``peak``,
    the largest ``|y|``, ``|mu|`` the run's noise-free releases of the channel reached so far (``inf`` where
    either is not finite). A by-product of the comparison the replay makes anyway.

    Args:
        y: the round's releases ``(R, N, ...)`` (NaN where nothing was observed); ``mu``: the replayed
            noise-free values, broadcastable to ``y``; ``observed``: where ``y`` was released.
        peak: ``(R,)``, each run's magnitude before this round, updated in place.

    Returns:
        ``(gap, run, agent)`` of the largest gap (``(0.0, 0, 0)`` when nothing was observed).

    Example:
        >>> y = np.array([[[1.0], [1.0 + 1e-11]]])
        >>> g, r, a = noise_free_gap(y, np.ones((1, 2, 1)), np.ones(y.shape, dtype=bool), np.zeros(1))
        >>> round(g), r, a
        (45036, 0, 1)
    """
    runs = y.shape[0]
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(observed, np.nan_to_num(np.abs(y - mu), nan=np.inf), 0.0)
        size = np.where(observed, np.nan_to_num(np.maximum(np.abs(y), np.abs(mu)), nan=np.inf), 0.0)
        if size.size:
            np.maximum(peak, size.reshape(runs, -1).max(axis=1), out=peak)
        gap = diff / np.spacing(peak).reshape((runs,) + (1,) * (diff.ndim - 1))
    gap = np.nan_to_num(gap, nan=np.inf)
    if gap.size == 0:
        return 0.0, 0, 0
    where = np.unravel_index(int(np.argmax(gap)), gap.shape)
    return float(gap[where]), int(where[0]), int(where[1])


def dense_round(schedules: Sequence[ScheduleLike] | ScheduleBatch, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Round ``t``'s ``(W, S)`` of every run, ``(R, N, N)`` each, as the replay reads them (a batch's
    ``dense_runs``, else each run's ``dense``, computed once per distinct schedule object).

    Example:
        >>> class One:
        ...     def dense(self, t): return np.eye(2), np.eye(2, dtype=int) * t
        >>> w, src = dense_round([One(), One()], 3)
        >>> w.shape, src[1].tolist()
        ((2, 2, 2), [[3, 0], [0, 3]])
    """
    if hasattr(schedules, "dense_runs"):
        w, src = schedules.dense_runs(t)
        return np.asarray(w, dtype=float), np.asarray(src, dtype=np.int64)
    alive = list(schedules)  # schedules made on access stay alive while they are read, so that no id is reused
    if not alive:
        raise ValueError("need at least one schedule")
    ids = np.fromiter(map(id, alive), dtype=np.int64, count=len(alive))
    _, first, which = np.unique(ids, return_index=True, return_inverse=True)  # each distinct schedule, once
    order = np.argsort(first)  # the distinct schedules in the order they first occur
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    ws, ss = [], []
    for k in first[order].tolist():
        w, src = alive[k].dense(t)
        ws.append(np.asarray(w, dtype=float))
        ss.append(np.asarray(src, dtype=np.int64))
    if len(ws) == len(alive):  # every run its own schedule, in order
        return np.stack(ws), np.stack(ss)
    runs = rank[which.ravel()]
    return np.stack(ws)[runs], np.stack(ss)[runs]


def reads_ahead(schedules: Sequence[ScheduleLike] | ScheduleBatch, horizon: int, written: np.ndarray,
                readers: np.ndarray | None = None) -> bool:
    """Whether some run's combination in round ``t`` uses another agent's message of a later round that a
    construction writes (``written[s - 1, j]``: sender ``j``'s round-``s`` message is written).

    ``readers`` (``(N,)`` booleans) restricts the question to the combinations of those receivers (default:
    every agent's).

    A replay with ``pin_agent`` processes rounds in order and writes round
    ``t``'s messages (the pinned agents', every agent's in a round released
    without noise) before round ``t``'s combinations. Without such a read,
    every value the pass reads is final when read, so its computations are
    those of a replay of its output: the construction has settled after one
    pass.

    Example:
        >>> class Ahead:  # receiver 1 combines sender 0's message of round 2 in round 1
        ...     def dense(self, t): return np.full((2, 2), 0.5), np.array([[t, t], [min(t + 1, 2), t]])
        >>> written = np.array([[True, False], [True, False]])  # agent 0's messages are constructed
        >>> reads_ahead([Ahead()], 2, written), reads_ahead([Ahead()], 2, ~written)
        (True, False)
        >>> reads_ahead([Ahead()], 2, written, readers=np.array([True, False]))  # only agent 0's combinations
        False
    """
    keep = None if readers is None else np.asarray(readers, dtype=bool)
    for t in range(1, horizon + 1):
        r, i, s, j = _later_round(dense_round(schedules, t)[1], t)
        if keep is not None:
            r, i, s, j = (a[keep[i]] for a in (r, i, s, j))
        if r.size and written[s - 1, j].any():
            return True
    return False


def _later_round(src: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Round ``t``'s reads of another agent's message of a later round, from its sender rounds ``src``
    ``(R, N, N)``: ``(run, receiver, sender round, sender)`` arrays (the self term is the own round-``t`` message)."""
    later = src > t
    n = src.shape[1]
    later[:, np.arange(n), np.arange(n)] = False
    r, i, j = np.nonzero(later)
    return r, i, src[r, i, j], j


def later_reads(schedules: Sequence[ScheduleLike] | ScheduleBatch, horizon: int) -> tuple[np.ndarray, ...]:
    """Every read of another agent's message of a later round: ``(t, r, s, j, i)`` arrays, receiver ``i`` of run
    ``r`` combining sender ``j``'s message of round ``s > t`` in round ``t`` (what :func:`reads_ahead` asks about).
    A round the batch's runs share (``shared_round(t)``) is read once, not run by run.

    Example:
        >>> class Ahead:  # receiver 1 combines sender 0's message of round 2 in round 1
        ...     def dense(self, t): return np.full((2, 2), 0.5), np.array([[t, t], [min(t + 1, 2), t]])
        >>> [a.tolist() for a in later_reads([Ahead()], 2)]
        [[1], [0], [2], [0], [1]]
    """
    parts = []
    shared = getattr(schedules, "shared_round", None)
    for t in range(1, horizon + 1):
        one = shared(t) if shared is not None else None
        if one is not None:  # every run reads what the shared round reads: its reads, repeated for each run
            _, i, s, j = _later_round(one.src[None], t)
            runs = len(schedules)
            r, i, s, j = np.repeat(np.arange(runs), i.size), np.tile(i, runs), np.tile(s, runs), np.tile(j, runs)
        else:
            r, i, s, j = _later_round(dense_round(schedules, t)[1], t)
        parts.append((np.full(r.size, t), r, s, j, i))
    if not parts:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(5))
    return tuple(np.concatenate(c) for c in zip(*parts))


class _RoundIndex:
    """What the combinations of one round read, from its sender rounds ``src`` ``(R, N, N)`` alone (shared by
    every channel of the round): the index arrays of the gather and which entries are used."""

    __slots__ = ("src", "rr", "idx", "jj", "ii", "used", "any_used", "_flat")

    def __init__(self, src: np.ndarray) -> None:
        self.src = src
        runs, n_agents = src.shape[0], src.shape[1]
        self.rr = np.arange(runs)[:, None, None]
        self.jj = np.arange(n_agents)[None, None, :]
        self.ii = np.arange(n_agents)[None, :, None]
        self.idx = np.maximum(src - 1, 0)
        used = src > 0
        used[:, np.arange(n_agents), np.arange(n_agents)] = False  # the self term is added separately
        self.used = used[..., None]
        self.any_used = bool(used.any())
        self._flat: dict[tuple[Any, ...], Any] = {}

    def misfit(self, shape: tuple[int, ...], unicast: bool) -> str | None:
        """What of these sender rounds does not fit messages of shape ``shape`` (another number of runs or agents,
        or a sender round after the transcript's last), else ``None`` (computed once per shape). The flat gather
        (:meth:`flat`) would read another run's or round's row for such an entry instead of failing."""
        key = ("misfit", shape, unicast)
        if key not in self._flat:
            self._flat[key] = _misfit(self.src, shape, unicast)
        return self._flat[key]

    def flat(self, shape: tuple[int, ...], unicast: bool) -> tuple[np.ndarray, np.ndarray]:
        """For messages of shape ``shape`` (C-ordered), the gather's entries as row numbers of the messages seen
        as ``(-1, d)`` rows (``(R, N, N)``), and which entries of the gathered ``(R, N, N, d)`` array, flattened,
        are unused (computed once per shape; ``shape`` must fit, :meth:`misfit`)."""
        got = self._flat.get((shape, unicast))
        if got is None:
            horizon, n = shape[1], shape[2]
            rows = (self.rr * horizon + self.idx) * n + self.jj
            if unicast:
                rows = rows * n + self.ii
            got = self._flat[(shape, unicast)] = (rows, np.repeat(~self.used.ravel(), shape[-1]))
        return got

    def tiled_flat(self, copies: int, shape: tuple[int, ...], unicast: bool) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`flat` of ``copies`` copies of these runs one after the other (``shape``: one copy's messages).
        Kept for the most copies asked so far: fewer copies are its first rows."""
        key = ("tiled", shape, unicast)
        got: Any = self._flat.get(key)
        if got is None or got[0] < copies:
            rows, unused = self.flat(shape, unicast)
            per_copy = shape[0] * math.prod(shape[1:-1])  # a copy's messages, as rows
            moved = rows[None] + (np.arange(copies) * per_copy)[:, None, None, None]
            got = self._flat[key] = (copies, moved.reshape((-1,) + rows.shape[1:]), np.tile(unused, copies))
        return got[1][:copies * shape[0]], got[2][:copies * _unused_size(self, shape)]


def _misfit(src: np.ndarray, shape: tuple[int, ...], unicast: bool) -> str | None:
    """:meth:`_RoundIndex.misfit` of sender rounds ``src`` ``(R, N, N)`` for messages of shape ``shape``."""
    runs, horizon, n = shape[0], shape[1], shape[2]
    if src.shape != (runs, n, n) or (unicast and shape[3] != n):
        return f"sender rounds of shape {src.shape} for messages of shape {shape}"
    if src.size and int(src.max()) > horizon:
        r, i, j = (int(v) for v in np.argwhere(src > horizon)[0])
        return (f"receiver {i} combined sender {j}'s message of round {int(src[r, i, j])} (run {r}), after the "
                f"transcript's last round {horizon}")
    return None


def _unused_size(index: _RoundIndex, shape: tuple[int, ...]) -> int:
    """Entries of one gather of ``index`` for messages of shape ``shape``: ``R N N d``."""
    return int(index.used.size * shape[-1])


class _TiledIndex:
    """The :class:`_RoundIndex` of ``copies`` copies of one round's sender rounds, one after the other (the runs
    of stacked candidates), derived from the index of one copy: the row numbers of copy ``k`` are the first
    copy's moved by ``k`` copies' messages. The index arrays of the plain gather are built only if asked."""

    __slots__ = ("_one", "_copies", "_full", "_flat", "any_used")

    def __init__(self, one: _RoundIndex, copies: int) -> None:
        self._one, self._copies = one, copies
        self._full: _RoundIndex | None = None
        self._flat: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}
        self.any_used = one.any_used

    def misfit(self, shape: tuple[int, ...], unicast: bool) -> str | None:
        if shape[0] != self._one.src.shape[0] * self._copies:
            return f"sender rounds of {self._copies} copies of {self._one.src.shape[0]} runs for messages of shape {shape}"
        return self._one.misfit((shape[0] // self._copies,) + tuple(shape[1:]), unicast)

    def flat(self, shape: tuple[int, ...], unicast: bool) -> tuple[np.ndarray, np.ndarray]:
        got = self._flat.get((shape, unicast))
        if got is None:
            one = (shape[0] // self._copies,) + tuple(shape[1:])
            got = self._flat[(shape, unicast)] = self._one.tiled_flat(self._copies, one, unicast)
        return got

    def __getattr__(self, name: str) -> Any:  # rr, idx, jj, ii, used: the plain gather's
        if name not in ("src", "rr", "idx", "jj", "ii", "used"):
            raise AttributeError(name)
        if self._full is None:
            self._full = _RoundIndex(np.tile(self._one.src, (self._copies, 1, 1)))
        return getattr(self._full, name)


def gather_index(src: np.ndarray) -> Any:
    """What the replay's combinations of one round read, from its sender rounds ``src`` ``(R, N, N)`` alone.

    A batch of schedules may keep it: the replay asks ``schedules.gather_index(t)`` (when the batch has it)
    instead of computing it from round ``t``'s ``dense_runs`` each time; the batch must return the index of the
    ``src`` it gives for ``t``.

    Example:
        >>> ix = gather_index(np.array([[[1, 0], [2, 1]]]))
        >>> ix.used[..., 0].tolist(), ix.any_used
        ([[[False, False], [True, False]]], True)
    """
    return _RoundIndex(np.asarray(src, dtype=np.int64))


def tiled_gather_index(index: Any, copies: int) -> Any:
    """The :func:`gather_index` of ``copies`` copies of the sender rounds whose index is ``index``, one after the
    other along the runs (``numpy.concatenate([src] * copies)``), computed from ``index``.

    Example:
        >>> src = np.array([[[1, 0], [2, 1]]])
        >>> two = tiled_gather_index(gather_index(src), 2)
        >>> y = np.arange(2 * 2 * 2 * 1, dtype=float).reshape(2, 2, 2, 1)  # two runs, two rounds, two agents
        >>> _gather(y, np.concatenate([src] * 2), 1, False, two)[..., 0].tolist()
        [[[0.0, 0.0], [2.0, 0.0]], [[0.0, 0.0], [6.0, 0.0]]]
    """
    return _TiledIndex(index, copies) if copies > 1 else index


def _gather(y: np.ndarray, src: np.ndarray, t: int, unicast: bool, index: _RoundIndex | None = None) -> np.ndarray:
    """``out[r, i, j] = y[r, src[r, i, j] - 1, j]`` (unicast: the copy ``j -> i``), 0 where ``src == 0``."""
    ix = _RoundIndex(src) if index is None else index
    flat = getattr(ix, "flat", None)  # a batch's own index (runs sharing one schedule) may gather by slices instead
    bad = ix.misfit(y.shape, unicast) if flat is not None else None
    if bad is not None:  # a schedule that does not fit the transcript: never read another run's or round's row
        raise AccountingError(f"round {t}: the schedule does not fit the transcript: {bad}")
    if flat is not None and y.flags.c_contiguous:  # one take of whole rows by their row numbers: the same entries
        rows, unused = flat(y.shape, unicast)
        out = np.take(y.reshape(-1, y.shape[-1]), rows, axis=0)
        np.putmask(out.reshape(-1), unused, 0.0)
    else:
        out = y[ix.rr, ix.idx, ix.jj, ix.ii] if unicast else y[ix.rr, ix.idx, ix.jj]
        out = np.where(ix.used, out, 0.0)
    if ix.any_used and np.isnan(out).any():  # NaN left only where a used entry is missing
        r, i, j, _ = (int(v) for v in np.argwhere(np.isnan(out))[0])
        raise AccountingError(f"round {t}: receiver {i} combined sender {j}'s message of round {int(src[r, i, j])} "
                              f"(run {r}), which is not in the transcript")
    return out


class SharedRound:
    """One round's ``(W, S)`` shared by every run of a batch (``(N, N)`` each), prepared for the replay's
    combinations (a :class:`ScheduleBatch` with ``shared_round(t)``; e.g. lockstep runs on lossless links).

    When every run combines with the same weights and sender rounds, the
    other agents' terms ``sum_j W[i, j] y[r, S[i, j] - 1, j]`` need no
    ``(R, N, N, d)`` gather: for each sender ``j`` the column ``y[:, s - 1, j]``
    (one sender round ``s`` for all its receivers, the usual case) or the
    rows it sends to are scaled by the column ``W[:, j]`` and added, senders
    in increasing order, with the runs as the innermost axis (long
    contiguous operations even for a few agents and coordinates). That is the order in which :func:`numpy.einsum`
    accumulates the general path's sum over the senders for messages of
    width ``d >= 2`` (every product is the same, so the terms are the same
    to the bit; the tests compare both paths); for ``d = 1`` numpy sums the
    senders in another order, and the general path is taken. A sparse round
    (few senders per receiver, one sender round) is added in layers instead:
    layer ``k`` is every receiver's ``k``-th sender at once (one gather, one
    multiply, one add), which adds each receiver's terms in the same order
    (see ``_layers``).

    Args:
        w: the weights ``W`` ``(N, N)``.
        src: the sender rounds ``S`` ``(N, N)`` (0 where unused).

    Example:
        >>> sr = SharedRound(np.full((2, 2), 0.5), np.full((2, 2), 1))
        >>> y = np.arange(2 * 1 * 2 * 2, dtype=float).reshape(2, 1, 2, 2)
        >>> sr.others(y)[0].tolist(), sr.diag.tolist()
        ([[1.0, 1.5], [0.0, 0.5]], [0.5, 0.5])
    """

    __slots__ = ("w", "src", "diag", "usable", "columns", "rounds", "last", "layers")

    def __init__(self, w: Any, src: Any) -> None:
        self.w = np.asarray(w, dtype=float)
        self.src = np.asarray(src, dtype=np.int64)
        n = self.w.shape[0]
        if self.w.shape != (n, n) or self.src.shape != (n, n):
            raise AccountingError(f"a shared round needs (N, N) weights and sender rounds, got {self.w.shape} and "
                                  f"{self.src.shape}")
        self.diag = self.w.diagonal().copy()
        used = self.src > 0
        used[np.arange(n), np.arange(n)] = False  # the self term is added separately
        # non-finite weights: the general path multiplies them with the zeros of unused entries
        self.usable = bool(np.isfinite(self.w).all())
        columns: list[tuple[int, int | None, np.ndarray, np.ndarray | None, np.ndarray]] = []
        for j in range(n):
            rows = used[:, j]
            if not rows.any():
                continue
            s = self.src[rows, j]
            if (s == s[0]).all():  # one sender round: scale its column for every receiver (0 where unused)
                columns.append((j, int(s[0]), np.where(rows, self.w[:, j], 0.0)[:, None, None], None, s))
            else:
                which = np.flatnonzero(rows)
                columns.append((j, None, self.w[which, j][:, None, None], which, s - 1))
        self.columns = tuple(columns)
        self.rounds = tuple(sorted({c[1] for c in columns if c[1] is not None}))
        self.last = int(self.src.max()) if self.src.size else 0
        self.layers = _layers(self.w, used, self.columns, self.rounds)

    def others(self, y: np.ndarray, work: dict[Any, np.ndarray] | None = None) -> np.ndarray | None:
        """The other agents' terms ``(R, N, d)`` of broadcast messages ``y`` ``(R, T, N, d)``, or ``None`` when the
        general path must compute them (``d = 1``, a non-finite weight or used message, a missing message or a
        sender round outside the transcript: the general path names what is wrong).

        ``work``: arrays the computation may reuse from call to call (a replay's own dict; the result is a new
        array either way)."""
        got = self._terms(y, None, work)
        return None if got is None else got[0].transpose(2, 0, 1).copy()  # (a new array, never a view of work's)

    def mixed(self, y: np.ndarray, t: int, work: dict[Any, np.ndarray] | None = None) -> np.ndarray | None:
        """Round ``t``'s combinations ``(R, N, d)``: :meth:`others` plus each agent's self weight times its own
        round-``t`` message, the replay's ``_mixed`` for an own message that is present and finite (else ``None``:
        the general path checks and cleans it). ``work`` as for :meth:`others`."""
        got = self._terms(y, t, work)
        if got is None:
            return None
        out, cols = got
        tmp = _buffer(work, "tmp", out.shape)
        np.multiply(self.diag[:, None, None], cols[t], out=tmp)  # (out += diag * own, without a temporary)
        np.add(out, tmp, out=out)
        return out.transpose(2, 0, 1).copy()  # (a new array, never a view of work's: the rule may keep it)

    def _terms(self, y: np.ndarray, own: int | None, work: dict[Any, np.ndarray] | None = None
               ) -> tuple[np.ndarray, dict[int, np.ndarray]] | None:
        """The other agents' terms with the runs innermost, ``(N, d, R)``, and the sender rounds' messages read
        whole (and round ``own``'s), ``(N, d, R)`` each, all finite; ``None`` when the general path must work.
        The arrays are taken from ``work`` when given (valid until its next use)."""
        runs, horizon, n, d = y.shape
        if not self.usable or d < 2 or n != self.w.shape[0] or self.last > horizon or (
                own is not None and not 1 <= own <= horizon):
            return None
        # the runs innermost, (N, d, R): each sender's term is one long contiguous multiply-add
        shape = (n, d, runs)
        cols: dict[int, np.ndarray] = {}
        for k, s in enumerate(self.rounds if own is None or own in self.rounds else self.rounds + (own,)):
            cols[s] = _buffer(work, ("round", k), shape)
            np.copyto(cols[s], y[:, s - 1].transpose(1, 2, 0))  # each round read whole, checked once
            if not np.isfinite(cols[s]).all():
                return None
        out = _buffer(work, "out", shape)
        out.fill(0.0)
        tmp = _buffer(work, "tmp", shape)
        if self.layers is not None:  # the k-th sender of every receiver at once (see _layers)
            sent = cols[self.rounds[0]]
            for senders, wk in self.layers:
                np.take(sent, senders, axis=0, out=tmp, mode="clip")  # (valid indices: clip spares a buffer)
                np.multiply(wk, tmp, out=tmp)
                np.add(out, tmp, out=out)
            return out, cols
        for j, one, wj, which, rounds in self.columns:
            if one is not None:
                np.multiply(wj, cols[one][j], out=tmp)
                np.add(out, tmp, out=out)
            else:
                col = y[:, rounds, j].transpose(1, 2, 0)
                if not np.isfinite(col).all():
                    return None
                out[which] += wj * col
        return out, cols


def _buffer(work: dict[Any, np.ndarray] | None, key: Any, shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialized float array of shape ``shape``: ``work[key]`` when it has that shape (kept there), else new
    (a replay's rounds reuse their arrays instead of allocating, and touching, fresh memory every round)."""
    if work is None:
        return np.empty(shape)
    got = work.get(key)
    if got is None or got.shape != shape:
        got = work[key] = np.empty(shape)
    return got


def _layers(w: np.ndarray, used: np.ndarray, columns: tuple[Any, ...], rounds: tuple[int, ...]
            ) -> tuple[tuple[np.ndarray, np.ndarray], ...] | None:
    """The other agents' terms of a shared round as layers, when that takes fewer operations than the columns.

    Layer ``k`` holds every receiver's ``k``-th used sender (in increasing order) and its weight (a receiver
    with fewer senders: weight 0 on sender 0). Adding the layers in order adds each receiver's terms in the
    order of the columns (increasing senders); the columns also add ``0 * y`` for the receivers a sender does
    not reach, and the padding adds such terms too: neither changes a sum that starts at ``+0.0`` (with finite
    messages, which :meth:`SharedRound._terms` checks). A layer takes 3 operations (gather, multiply, add), a
    column 2, so layers are used when ``3 K < 2 C`` (``K`` the most senders of a receiver, ``C`` the columns),
    and only when every used message is of one sender round (``None`` otherwise: the columns are used).
    """
    if len(rounds) != 1 or any(c[1] is None for c in columns):
        return None
    n = w.shape[0]
    per_receiver = [np.flatnonzero(used[i]) for i in range(n)]
    depth = max((len(s) for s in per_receiver), default=0)
    if not 3 * depth < 2 * len(columns):
        return None
    layers = []
    for k in range(depth):
        senders = np.zeros(n, dtype=np.intp)
        wk = np.zeros(n)
        for i, s in enumerate(per_receiver):
            if k < len(s):
                senders[i], wk[i] = s[k], w[i, s[k]]
        layers.append((senders, wk[:, None, None]))
    return tuple(layers)


_SHARED_RUNS = 32
"""Fewest runs for which a round that every run has alike is combined as a :class:`SharedRound` (with fewer, the
general path's gather is as fast)."""

_SHARED_KEPT: dict[bytes, tuple[SharedRound, int]] = {}
"""The last :class:`SharedRound` objects made by :func:`shared_round`, by their ``(W, S)``, with their sizes in
bytes (key included)."""

_SHARED_KEPT_BYTES = 64 << 20
"""At most this many bytes of :data:`_SHARED_KEPT` (the oldest go first); a round of more than an eighth of it
(about ``N >= 450`` agents) is made but not kept."""

_SHARED_SIZE = {"bytes": 0}

_SHARED_LOCK = threading.Lock()


def _one_round(w: np.ndarray, src: np.ndarray) -> bool:
    """Whether every run of round ``(W, S)`` ``(R, N, N)`` has the first run's weights and sender rounds."""
    return bool((src == src[:1]).all() and (w == w[:1]).all())


def _nbytes(r: SharedRound) -> int:
    """The bytes a kept :class:`SharedRound` holds (its arrays and its columns')."""
    size = r.w.nbytes + r.src.nbytes + r.diag.nbytes
    for _, _, wj, which, rounds in r.columns:
        size += wj.nbytes + rounds.nbytes + (0 if which is None else which.nbytes)
    for senders, wk in r.layers or ():
        size += senders.nbytes + wk.nbytes
    return size


def shared_round(w: Any, src: Any) -> SharedRound:
    """``SharedRound(w, src)``, kept by value: the next replays that meet the same ``(W, S)`` share it.

    The kept rounds hold read-only copies of ``w`` and ``src`` and take at most 64 MiB in all (the oldest
    go first); a round of more than 8 MiB (about ``N >= 450`` agents) is made but not kept.

    Example:
        >>> w, src = np.full((2, 2), 0.5), np.full((2, 2), 1)
        >>> shared_round(w, src) is shared_round(w.copy(), src.copy())
        True
    """
    w, src = np.asarray(w, dtype=float), np.asarray(src, dtype=np.int64)
    key = np.ascontiguousarray(w, dtype=float).tobytes() + np.ascontiguousarray(src, dtype=np.int64).tobytes() + \
        str(w.shape).encode()
    with _SHARED_LOCK:
        kept = _SHARED_KEPT.get(key)
    if kept is not None:
        return kept[0]
    w, src = w.copy(), src.copy()  # (its own copies: the caller's arrays may change later; read-only)
    w.setflags(write=False)
    src.setflags(write=False)
    got = SharedRound(w, src)
    size = len(key) + _nbytes(got)
    if size > _SHARED_KEPT_BYTES // 8:
        return got
    with _SHARED_LOCK:  # (replays may run in threads)
        if key not in _SHARED_KEPT:
            while _SHARED_KEPT and _SHARED_SIZE["bytes"] + size > _SHARED_KEPT_BYTES:
                _SHARED_SIZE["bytes"] -= _SHARED_KEPT.pop(next(iter(_SHARED_KEPT)))[1]
            _SHARED_KEPT[key] = (got, size)
            _SHARED_SIZE["bytes"] += size
        return _SHARED_KEPT[key][0]


def _own(y_t: np.ndarray, mean: np.ndarray, unicast: bool) -> np.ndarray:
    """The self term of round ``t``: the own message (broadcast) or the average of the copies sent (unicast)."""
    if not unicast:
        return y_t
    sent = ~np.isnan(y_t).any(axis=-1)  # (R, N, N): copy i -> j observed
    n_sent = sent.sum(axis=2)
    avg = np.where(sent[..., None], y_t, 0.0).sum(axis=2) / np.maximum(n_sent, 1)[..., None]
    return np.where((n_sent > 0)[..., None], avg, mean)


def _others(y: np.ndarray, w: np.ndarray, src: np.ndarray, t: int, unicast: bool,
            index: _RoundIndex | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The combinations' terms from the other agents' messages ``(R, N, d)``, and the self weights ``(R, N)``.

    They depend on the transcript and the schedule only, so one computation serves both problems' combinations.
    """
    return np.einsum("rij,rijk->rik", w, _gather(y, src, t, unicast, index)), np.einsum("rii->ri", w)


def _mixed(others: tuple[np.ndarray, np.ndarray], own: np.ndarray, t: int) -> np.ndarray:
    """One problem's combinations: the other agents' terms plus the self weight times its own term."""
    terms, diag = others
    nan = np.isnan(own)
    if nan.any() and (diag > 0).any():
        bad = nan.any(axis=-1) & (diag > 0)
        if bad.any():
            r, i = (int(v) for v in np.argwhere(bad)[0])
            raise AccountingError(f"round {t}: agent {i}'s own message (run {r}) is not in the transcript but "
                                  "enters its combination")
    clean = np.where(nan, 0.0, own)
    if not np.isfinite(clean).all():
        clean = np.nan_to_num(clean)
    return terms + diag[..., None] * clean


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


def _combine(y: np.ndarray, yt: np.ndarray, mu: np.ndarray, mp_all: np.ndarray | None, t: int, unicast: bool,
             name: str, mixed: dict[str, np.ndarray], mixed_p: dict[str, np.ndarray], one: SharedRound | None,
             schedules: Any, w: Any, src: Any, index: Any, work: dict[Any, np.ndarray] | None = None) -> None:
    """Round ``t``'s combinations of channel ``name`` under both problems, into ``mixed`` and ``mixed_p``
    (``work``: the replay's arrays a shared round may reuse, :meth:`SharedRound.mixed`)."""
    if one is not None:
        both = one.mixed(y, t, work)
        if both is not None:
            mixed[name] = both
            if mp_all is not None:  # broadcast: the same combinations under both problems
                mixed_p[name] = both.copy()
            return
    terms = one.others(y, work) if one is not None else None
    if terms is not None:
        assert one is not None
        others: tuple[np.ndarray, np.ndarray] = (terms, one.diag)
    else:
        if w is None:  # the general path computes (or names what is wrong with) what the shared one did not
            w, src = dense_round(schedules, t)
        if index is None:
            index = schedules.gather_index(t) if hasattr(schedules, "gather_index") else _RoundIndex(src)
        others = _others(y, w, src, t, unicast, index)  # shared by both problems' combinations
    mixed[name] = _mixed(others, _own(yt, mu, unicast), t)
    if mp_all is not None:
        # broadcast: the self term is the own message under both problems, so are the combinations
        mixed_p[name] = mixed[name].copy() if not unicast else _mixed(others, _own(yt, mp_all, unicast), t)


def _deferred_densities(y: np.ndarray, resid: np.ndarray, resid_p: np.ndarray, ch: ChannelNoise,
                        scales: list[float], start: int, contributions: np.ndarray) -> None:
    """The density ratios of one channel's noisy releases in rounds ``start .. T``, every round at once, added to
    ``contributions``.

    ``resid`` (``resid_p``) holds each noisy round's ``y - mu_P`` (``y - mu_P'``), ``y`` the transcript. Every
    operation is the one the round-by-round replay applies to round ``t`` (the log densities summed over each
    release's entries, NaN entries: nothing observed), applied to consecutive rounds at once: the same numbers.
    """
    assert ch.mechanism is not None
    picked = [t - 1 for t in range(start, len(scales) + 1) if scales[t - 1] > 0]
    spans: list[list[int]] = []  # the noisy rounds as runs of consecutive rounds: each is a slice (views)
    for k in picked:
        if spans and spans[-1][1] == k:
            spans[-1][1] = k + 1
        else:
            spans.append([k, k + 1])
    for first, stop in spans:
        sel = slice(first, stop)
        s = scales[first:stop]
        # under P': the terms of y - mu_P' with 0 where nothing was observed (the terms of those entries set to
        # 0, the term of a 0 entry, rather than the entries: one array fewer)
        terms_p = _terms(resid_p[:, sel], ch.mechanism)
        np.copyto(terms_p, 0.0, where=np.isnan(y[:, sel]))
        contributions[:, sel] += (_log_density_observed(resid[:, sel], ch.mechanism, s)
                                  - _log_density_sums(_round_sums(terms_p), ch.mechanism, s))


def _log_density_observed(resid: np.ndarray, mechanism: str, scales: Sequence[float]) -> np.ndarray:
    """``_log_density_rounds(_nan_to_num(resid), mechanism, scales)`` in fewer passes over ``resid``.

    Each entry's term (``|r|`` or ``r ** 2``) is taken first and a NaN term set to 0 (``fmax``), which is the
    term of ``nan_to_num``'s 0; a finite entry's term is its own either way. An infinite entry (whose
    ``nan_to_num`` is the largest float) makes its run's sum infinite, and so does a sum that overflows: then
    the rounds are computed as :func:`_nan_to_num` and :func:`_log_density_rounds` compute them.
    """
    terms = _terms(resid, mechanism)
    np.fmax(terms, 0.0, out=terms)
    sums = _round_sums(terms)
    if not np.isfinite(sums).all():
        return _log_density_rounds(_nan_to_num(resid), mechanism, scales)
    return _log_density_sums(sums, mechanism, scales)


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
            :class:`ScheduleBatch` of every run's.
        noise: per channel, the declared noise (:class:`ChannelNoise`).
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
            A :class:`RunPins`: one agent per run (each run as if replayed alone, pinned to its agent).
        draw: with ``pin_agent`` (every agent) and ``rule_prime``: the noisy
            releases are drawn instead (:class:`TiltedDraw`; Gaussian channels;
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
        part = _replay_chunk({n: a[start:stop] for n, a in arrays.items()}, schedules[start:stop], noise, rule,
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
