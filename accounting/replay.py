"""Exact (white-box) transcript replay and the privacy loss of each transcript.

For algorithms whose execution is a deterministic function of the observed
messages (Huang, Mitra and Vaidya, ICDCN 2015, Prop. 3; the same argument holds for
Showkatbakhsh, Karakus and Diggavi, arXiv 2019, and Cheng, Liao and Li, arXiv 2022),
the density of a transcript ``y = (y(1), ..., y(T))`` under a problem ``P``
factorises over rounds and agents into noise densities. Re-running ``P``'s and
an adjacent ``P'``'s updates on the *observed* messages gives both densities,
hence the privacy loss

    L(y) = log p_P(y) - log p_P'(y),

exactly. This module defines the small protocol it needs (:class:`ReplayRule`)
and never looks inside a simulator: a rule says what the mean of round ``t``'s
messages is given the replayed state, and how the state evolves from the
mixed messages.

Shapes: ``R`` transcripts, ``T`` rounds, ``N`` agents, ``n`` coordinates. A
batch of transcripts is an array ``Y`` of shape ``(R, T, N, n)``; ``Y[r, t-1, i]``
is agent ``i``'s round-``t`` broadcast in transcript ``r``.

Noise-free rounds. A round with scale 0 releases its messages exactly (e.g. a
message that carries no private information, or a release an algorithm forgot
to noise). Its density is a point mass at the message mean, so the round's
log-density ratio is ``0`` when the observed messages equal *both* problems'
means, ``+inf`` when they equal ``P``'s but not ``P'``'s, and ``-inf`` in the
converse case. "Equal" means ``|y - mean| <= 1e-9 (1 + |mean|)`` in every
coordinate of every released message (:data:`NOISE_FREE_RTOL`; it absorbs the
round-off between a simulator and the replay). Where the two means themselves
differ by more than round-off (:data:`NOISE_FREE_SPLIT_ULPS` spacings) yet both
lie within that tolerance of a message, the message equals the nearer one only
(:func:`noise_free_matches`): a data-dependent noise-free release below the
tolerance is not taken for a data-free one. Messages that equal neither
mean have probability 0 under both problems: :func:`replay_loss` raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from .errors import AccountingError, PrivacyParameterError, UnknownMechanismError

__all__ = ["ReplayRule", "ReplaySetup", "replay_loss", "sample_transcripts", "log_density", "NOISE_FREE_RTOL",
           "NOISE_FREE_SPLIT_ULPS", "noise_free_matches", "check_round_scales"]

NOISE_FREE_RTOL = 1e-9
"""A noise-free message ``y`` equals its mean when ``|y - mean| <= NOISE_FREE_RTOL (1 + |mean|)`` per coordinate."""

NOISE_FREE_SPLIT_ULPS = 64.0
"""Two problems' noise-free means differ by more than round-off when ``|mean - mean'|`` exceeds this many
floating-point spacings of ``max(|mean|, |mean'|)``. Both are computed by the same operations on each problem, so
a data-free release's two means are equal (measured: to the bit, on DPSDA-PS's weights and Showkatbakhsh's Stage II
under every timing and mode); the margin is for a product whose rows may round differently."""


def noise_free_matches(y: np.ndarray, mean: np.ndarray, mean_p: np.ndarray,
                       observed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per transcript: whether every observed message of a noise-free round equals ``P``'s mean and ``P'``'s.

    A coordinate equals a mean within :data:`NOISE_FREE_RTOL` ``(1 + |mean|)``. Where the two means differ by more
    than :data:`NOISE_FREE_SPLIT_ULPS` spacings, a coordinate within that tolerance of both equals only the nearer
    (a tie: both): a release that carries the data below the tolerance (``1 + 1e-10 x``) tells the problems
    apart, and was read as matching both (loss 0).

    Args:
        y: the round's messages, ``(R, ...)``; ``mean``, ``mean_p``: the problems' means, broadcastable to ``y``.
        observed: where ``y`` was released (broadcastable to ``y``); ``None``: everywhere.

    Returns:
        ``(in_p, in_q)``, boolean ``(R,)``.

    Example:
        >>> y = np.array([[1.0]])
        >>> [bool(v[0]) for v in noise_free_matches(y, np.array([[1.0]]), np.array([[1.0 + 1e-10]]))]
        [True, False]
        >>> [bool(v[0]) for v in noise_free_matches(y, np.array([[1.0]]), np.array([[1.0 + 1e-15]]))]
        [True, True]
    """
    dp, dq = np.abs(y - mean), np.abs(y - mean_p)
    close_p = dp <= NOISE_FREE_RTOL * (1.0 + np.abs(mean))
    close_q = dq <= NOISE_FREE_RTOL * (1.0 + np.abs(mean_p))
    split = np.abs(mean - mean_p) > NOISE_FREE_SPLIT_ULPS * np.spacing(np.maximum(np.abs(mean), np.abs(mean_p)))
    close_p, close_q = close_p & ~(split & (dp > dq)), close_q & ~(split & (dq > dp))
    if observed is not None:
        close_p, close_q = close_p | ~observed, close_q | ~observed
    return (close_p.reshape(close_p.shape[0], -1).all(axis=1), close_q.reshape(close_q.shape[0], -1).all(axis=1))


@runtime_checkable
class ReplayRule(Protocol):
    """A deterministic per-round recursion driven by the observed messages.

    Every method is vectorized over leading axes: ``state`` and the returned
    arrays have shape ``(R, N, n)``.
    """

    def initial_state(self, runs: int) -> np.ndarray:
        """The state before round 1, shape ``(runs, N, n)`` (does not depend on private data)."""

    def message_mean(self, state: np.ndarray, t: int) -> np.ndarray:
        """The noise-free value of round ``t``'s messages (what the noise masks)."""

    def next_state(self, state: np.ndarray, mixed: np.ndarray, t: int) -> np.ndarray:
        """The state after round ``t`` from ``mixed = W_t y(t)`` (row ``i``: ``sum_j W_ij y_j``)."""


@dataclass(frozen=True)
class ReplaySetup:
    """What replay needs besides the two rules: mixing weights and the noise.

    Attributes:
        weights: round ``t``'s ``N x N`` matrix is ``weights(t)`` (callable) or
            ``weights[t - 1]`` (sequence); row ``i`` = receiver.
        mechanism: ``"laplace"`` or ``"gaussian"``.
        scales: per-round noise scale ``(T,)`` (Laplace ``b`` or Gaussian
            standard deviation), as recorded in the ledger; 0 for a round
            released without noise (see the module docstring).

    Raises:
        UnknownMechanismError: an unknown mechanism.
        PrivacyParameterError: a scale that is negative or not finite.
    """

    weights: Callable[[int], Any] | Sequence[Any]
    mechanism: str
    scales: np.ndarray

    def __post_init__(self) -> None:
        if self.mechanism not in ("laplace", "gaussian"):
            raise UnknownMechanismError(f"unknown mechanism {self.mechanism!r}; known: laplace, gaussian")
        object.__setattr__(self, "scales", check_round_scales(self.scales))

    @property
    def horizon(self) -> int:
        return int(self.scales.size)

    def matrix(self, t: int) -> Any:
        w = self.weights(t) if callable(self.weights) else self.weights[t - 1]
        return w if sp.issparse(w) else np.asarray(w, dtype=float)


def check_round_scales(scales: Any) -> np.ndarray:
    """Per-round noise scales as a float array ``(T,)``: nonempty, 1-D, each finite and ``>= 0``.

    Raises:
        PrivacyParameterError: otherwise (the message names the first bad round).

    Example:
        >>> check_round_scales([1.0, 0.0]).tolist()
        [1.0, 0.0]
    """
    arr = np.asarray(scales, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise PrivacyParameterError(f"scales must be a nonempty 1-D array, got shape {arr.shape}")
    bad = ~(np.isfinite(arr) & (arr >= 0))
    if bad.any():
        t = int(np.flatnonzero(bad)[0]) + 1
        raise PrivacyParameterError(f"round {t}: noise scale must be >= 0 and finite, got {float(arr[t - 1])!r}")
    return arr


def check_point_masses(per_round: np.ndarray, what: str) -> None:
    """Raise if some row has ``+inf`` in one round and ``-inf`` in another (probability 0 under both problems).

    Args:
        per_round: per-round loss contributions ``(R, T)``.
        what: how a row is named in the message (``"transcript"``, ``"run"``).

    Raises:
        AccountingError: naming the first such row.

    Example:
        >>> check_point_masses(np.array([[0.0, np.inf]]), "run")
    """
    both = (per_round == np.inf).any(axis=1) & (per_round == -np.inf).any(axis=1)
    if both.any():
        r = int(np.flatnonzero(both)[0])
        raise AccountingError(f"{what} {r} matches only P in one noise-free round and only P' in another "
                              "(probability 0 under both)")


def _mix(w: Any, y: np.ndarray) -> np.ndarray:
    """``(R, N, n)`` -> ``(R, N, n)`` with row ``i`` = ``sum_j W_ij y_j``."""
    if sp.issparse(w):
        r, n_agents, n = y.shape
        flat = np.moveaxis(y, 1, 0).reshape(n_agents, r * n)
        return np.moveaxis((w @ flat).reshape(n_agents, r, n), 0, 1)
    return np.einsum("ij,rjk->rik", w, y)


def log_density(noise: np.ndarray, mechanism: str, scale: float) -> np.ndarray:
    """Sum of i.i.d. log-densities over the last two axes (agents, coordinates).

    Example:
        >>> float(log_density(np.zeros((1, 1, 1)), "laplace", 1.0)[0])  # log(1/2)
        -0.6931471805599453
    """
    k = noise.shape[-1] * noise.shape[-2]
    if mechanism == "laplace":
        return -np.abs(noise).sum(axis=(-1, -2)) / scale - k * np.log(2.0 * scale)
    if mechanism == "gaussian":
        return -(noise**2).sum(axis=(-1, -2)) / (2.0 * scale**2) - k * np.log(np.sqrt(2.0 * np.pi) * scale)
    raise UnknownMechanismError(f"unknown mechanism {mechanism!r}")


def _links(w: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense weights, the link mask ``[i, j]`` (message ``i -> j`` exists) and the diagonal."""
    dense = w.toarray() if sp.issparse(w) else np.asarray(w, dtype=float)
    mask = (dense.T > 0) & ~np.eye(dense.shape[0], dtype=bool)
    return dense, mask, np.diag(dense).copy()


def _unicast_mix(dense: np.ndarray, mask: np.ndarray, diag: np.ndarray, y: np.ndarray,
                 mean: np.ndarray) -> np.ndarray:
    """``z_j = W_jj own_j + sum_(i != j) W_ji y[i, j]`` for unicast messages ``y`` of shape (R, N, N, n).

    ``own_j`` is the average of the copies ``j`` sent that round (observed), or
    its noise-free message ``mean_j`` if it sent none.
    """
    filled = np.where(mask[None, :, :, None], y, 0.0)
    off = dense * mask.T  # off[j, i] = W_ji on links only
    outdeg = mask.sum(axis=1)
    own_sent = filled.sum(axis=2) / np.maximum(outdeg, 1)[None, :, None]
    own = np.where((outdeg > 0)[None, :, None], own_sent, mean)
    return np.einsum("ji,rijk->rjk", off, filled) + diag[None, :, None] * own


def _unicast_log_density(y: np.ndarray, mean: np.ndarray, mask: np.ndarray, mechanism: str,
                         scale: float) -> np.ndarray:
    noise = np.where(mask[None, :, :, None], y - mean[:, :, None, :], 0.0)
    k = int(mask.sum()) * y.shape[-1]
    if mechanism == "laplace":
        return -np.abs(noise).sum(axis=(1, 2, 3)) / scale - k * np.log(2.0 * scale)
    return -(noise**2).sum(axis=(1, 2, 3)) / (2.0 * scale**2) - k * np.log(np.sqrt(2.0 * np.pi) * scale)


def _noise_free_ratio(y: np.ndarray, mean: np.ndarray, mean_p: np.ndarray, mask: np.ndarray | None,
                      t: int) -> np.ndarray:
    """The log-density ratio of a noise-free round: 0, +inf or -inf per transcript (module docstring)."""
    if mask is not None:  # unicast: every copy i -> j on a link of mask is compared with mean[:, i]
        mean, mean_p, mask = mean[:, :, None, :], mean_p[:, :, None, :], mask[None, :, :, None]
    in_p, in_q = noise_free_matches(y, mean, mean_p, mask)
    if not (in_p | in_q).all():
        r = int(np.flatnonzero(~(in_p | in_q))[0])
        raise AccountingError(
            f"round {t} is noise-free but transcript {r}'s messages equal neither problem's message mean "
            "(probability 0 under both): wrong rule, setup or transcript?"
        )
    return np.where(in_p & in_q, 0.0, np.where(in_p, np.inf, -np.inf))


def replay_loss(
    transcripts: np.ndarray, setup: ReplaySetup, rule: ReplayRule, rule_prime: ReplayRule, *, per_round: bool = False
) -> Any:
    """The exact privacy loss ``log p_P(y) - log p_P'(y)`` of each transcript.

    Broadcast transcripts have shape ``(R, T, N, n)``: every agent sends one
    noisy message per round, mixed by every receiver (itself included).
    Unicast transcripts have shape ``(R, T, N, N, n)``: ``[r, t-1, i, j]`` is
    the independently noised message ``i -> j`` (entries of non-links are
    ignored); as its own term each agent mixes the average of the copies it
    sent that round (its noise-free value if it sent none).

    Args:
        transcripts: observed messages (a single transcript may omit the ``R`` axis).
        setup: weights and per-round noise scales.
        rule: the recursion under ``P``; ``rule_prime``: under ``P'``.
        per_round: also return the per-round contributions, shape ``(R, T)``.

    Returns:
        ``L`` of shape ``(R,)`` (or ``(L, per_round_L)``); ``+inf`` (``-inf``)
        where a noise-free round's messages match only ``P`` (only ``P'``).

    Raises:
        AccountingError: a bad shape, a horizon that differs from the setup's,
            or noise-free rounds whose messages match neither problem (or
            only ``P`` in one round and only ``P'`` in another).

    Example:
        See ``tests/accounting/test_replay_and_auditors.py``.
    """
    y = np.asarray(transcripts, dtype=float)
    if y.ndim == 3:
        y = y[None]
    if y.ndim not in (4, 5):
        raise AccountingError(f"transcripts must have shape (R, T, N, n) or (R, T, N, N, n), got {y.shape}")
    unicast = y.ndim == 5
    runs, horizon = y.shape[0], y.shape[1]
    if horizon != setup.horizon:
        raise AccountingError(f"transcripts have {horizon} rounds but the setup has {setup.horizon} noise scales")
    x, xp = rule.initial_state(runs), rule_prime.initial_state(runs)
    contributions = np.empty((runs, horizon))
    for t in range(1, horizon + 1):
        yt = y[:, t - 1]
        b = setup.scales[t - 1]
        mean, mean_p = rule.message_mean(x, t), rule_prime.message_mean(xp, t)
        if unicast:
            dense, mask, diag = _links(setup.matrix(t))
            if b == 0:
                contributions[:, t - 1] = _noise_free_ratio(yt, mean, mean_p, mask, t)
            else:
                lp = _unicast_log_density(yt, mean, mask, setup.mechanism, b)
                lq = _unicast_log_density(yt, mean_p, mask, setup.mechanism, b)
                contributions[:, t - 1] = lp - lq
            mixed, mixed_p = (_unicast_mix(dense, mask, diag, yt, mean), _unicast_mix(dense, mask, diag, yt, mean_p))
        else:
            if b == 0:
                contributions[:, t - 1] = _noise_free_ratio(yt, mean, mean_p, None, t)
            else:
                contributions[:, t - 1] = (log_density(yt - mean, setup.mechanism, b)
                                           - log_density(yt - mean_p, setup.mechanism, b))
            mixed = mixed_p = _mix(setup.matrix(t), yt)
        x, xp = rule.next_state(x, mixed, t), rule_prime.next_state(xp, mixed_p, t)
    check_point_masses(contributions, "transcript")
    total = contributions.sum(axis=1)
    return (total, contributions) if per_round else total


def sample_transcripts(
    setup: ReplaySetup, rule: ReplayRule, runs: int, *, seed: int = 0, mode: str = "broadcast"
) -> np.ndarray:
    """Sample ``runs`` transcripts under ``rule`` (lockstep rounds, no loss).

    Broadcast: ``y(t) = message_mean(state, t) + noise``, the state follows
    from ``W_t y(t)``. Unicast: one independent noise draw per link, the self
    term as in :func:`replay_loss`. Noise is drawn from
    ``numpy.random.default_rng(seed)`` in round order, one block per round
    with a positive scale; a noise-free round (scale 0) draws nothing and
    releases its message means exactly.

    Returns:
        ``(runs, T, N, n)`` (broadcast) or ``(runs, T, N, N, n)`` (unicast,
        ``nan`` where there is no link).

    Raises:
        PrivacyParameterError: ``runs`` is not a positive integer, or an unknown mode.
    """
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise PrivacyParameterError(f"runs must be a positive integer, got {runs!r}")
    if mode not in ("broadcast", "unicast"):
        raise PrivacyParameterError(f"mode must be 'broadcast' or 'unicast', got {mode!r}")
    rng = np.random.default_rng(seed)
    x = rule.initial_state(runs)
    n_agents = x.shape[1]
    shape = (runs, setup.horizon) + ((n_agents,) if mode == "unicast" else ()) + x.shape[1:]
    out = np.empty(shape)
    for t in range(1, setup.horizon + 1):
        b = setup.scales[t - 1]
        mean = rule.message_mean(x, t)
        block = (runs, n_agents, n_agents, x.shape[-1]) if mode == "unicast" else x.shape
        if b == 0:
            noise = np.zeros(block)
        elif setup.mechanism == "laplace":
            noise = rng.laplace(0.0, b, size=block)
        else:
            noise = rng.normal(0.0, b, size=block)
        if mode == "unicast":
            dense, mask, diag = _links(setup.matrix(t))
            yt = np.where(mask[None, :, :, None], mean[:, :, None, :] + noise, np.nan)
            mixed = _unicast_mix(dense, mask, diag, yt, mean)
        else:
            yt = mean + noise
            mixed = _mix(setup.matrix(t), yt)
        out[:, t - 1] = yt
        x = rule.next_state(x, mixed, t)
    return out
