"""Sensitivity coverage: does the accountant's per-release bound cover the shifts a pair actually produces?

The accountant composes releases with the sensitivity the caller vouches for
(:mod:`accounting.composition`). That bound is about an *adjacency class*: the
pairs of problems the claim speaks of. For a concrete pair ``(P, P')``,
replay gives every release's noise-free value under both problems on every
run; their difference is the release's realized shift. A shift above the
bound (in the mechanism's norm: L1 for Laplace, L2 for Gaussian) means one of
two things, which only the caller can tell apart:

* the pair lies outside the class the bound assumes: the pair must be
  refused (it says nothing about the claim);
* the pair is in the class and the bound is wrong: the release is a
  witness against the bound, and any verdict resting on it is void.

Either way, nothing composed from that bound may ``pass`` the pair.
:func:`uncovered_releases` returns the offending releases (agent, round,
channel, the largest shift over the runs, the bound, the run).

Example:
    >>> shifts = {"y": np.zeros((2, 3, 2, 1))}
    >>> shifts["y"][1, 0, 0, 0] = 0.05  # run 1, round 1, agent 0
    >>> [u.to_dict() for u in uncovered_releases(shifts, {"y": 0.02}, {"y": "gaussian"})]
    [{'channel': 'y', 'agent': 0, 'round': 1, 'receiver': None, 'shift': 0.05, 'bound': 0.02, 'run': 1, 'runs_over': 1, 'norm': 'l2'}]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from topology.validation import check_nonnegative

from .errors import PrivacyParameterError, UnknownMechanismError

__all__ = ["NORMS", "UncoveredRelease", "Bound", "release_norms", "realized_shifts", "uncovered_releases",
           "uncovered_by_norms"]

NORMS: dict[str, str] = {"laplace": "l1", "gaussian": "l2", "l1": "l1", "l2": "l2"}
"""Mechanism (or norm) name to the norm its sensitivity is measured in."""

Bound = float | Callable[[int, int], float] | Mapping[tuple[int, int], float] | np.ndarray
"""A per-release sensitivity bound: one float; a callable ``(agent, round) -> float``; a mapping
``(agent, round) -> float``; or an array ``(T, N)`` indexed ``[round - 1, agent]``."""


@dataclass(frozen=True)
class UncoveredRelease:
    """A release whose realized shift exceeds the accountant's bound.

    Attributes:
        channel: the channel's name.
        agent: the sender.
        round: the round (1-based).
        receiver: the receiver for a unicast channel, ``None`` for a broadcast.
        shift: the largest realized shift over the runs (in ``norm``).
        bound: the accountant's sensitivity bound for the release.
        run: the run with that shift.
        runs_over: in how many runs the shift exceeds the bound.
        norm: ``"l1"`` or ``"l2"``.
    """

    channel: str
    agent: int
    round: int
    receiver: int | None
    shift: float
    bound: float
    run: int
    runs_over: int
    norm: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field."""
        return dict(self.__dict__)

    def describe(self) -> str:
        """One line, e.g. ``"channel y, agent 0, round 1: shift 0.0447 > bound 0.02 (l2, run 3)"``."""
        to = "" if self.receiver is None else f" -> {self.receiver}"
        return (f"channel {self.channel}, agent {self.agent}{to}, round {self.round}: shift {self.shift:.6g} > bound "
                f"{self.bound:.6g} ({self.norm}, run {self.run}, {self.runs_over} run(s) over)")


def release_norms(shift: Any, norm: str, channel: str = "") -> np.ndarray:
    """The norm of every release's shift vector (last axis), NaN where nothing was released.

    Args:
        shift: ``(..., d)`` realized shifts; a release with every coordinate NaN was not sent.
        norm: ``"l1"``, ``"l2"`` or a mechanism name (:data:`NORMS`).
        channel: the channel's name, for messages.

    Returns:
        ``shift.shape[:-1]`` norms.

    Raises:
        UnknownMechanismError: an unknown norm.
        PrivacyParameterError: a release with some but not all coordinates NaN, or infinite shifts.

    Example:
        >>> release_norms([[3.0, -4.0], [np.nan, np.nan]], "l1").tolist()
        [7.0, nan]
    """
    if norm not in NORMS:
        raise UnknownMechanismError(f"channel {channel!r}: unknown norm or mechanism {norm!r}; known: {sorted(NORMS)}")
    s = np.asarray(shift, dtype=float)
    if s.shape[-1] == 0:  # no coordinate: nothing was sent
        return np.full(s.shape[:-1], np.nan)
    # one pass for the norms; NaN (not released) and infinite entries propagate into them, and only then are
    # the entries read again to tell a release that was not sent from a malformed one
    out = _sum_last(np.abs(s)) if NORMS[norm] == "l1" else np.sqrt(_sum_last(s * s))
    missing = np.isnan(out)
    if missing.any():
        nan = np.isnan(s[missing])
        partial = ~nan.all(axis=-1)
        if partial.any():
            where = tuple(int(i) for i in np.argwhere(missing)[int(np.argmax(partial))])
            raise PrivacyParameterError(f"channel {channel!r}: release at index {where} has some coordinates NaN, "
                                        "not all")
    if np.isinf(out).any() and np.isinf(s).any():  # (a finite shift whose square overflows is not an error)
        where = tuple(int(i) for i in np.argwhere(np.isinf(s))[0])
        raise PrivacyParameterError(f"channel {channel!r}: infinite shift at index {where}")
    return out


def _sum_last(a: np.ndarray) -> np.ndarray:
    """``a.sum(axis=-1)``, to the bit, without numpy's slow reduction over a short last axis.

    Over fewer than 8 entries numpy adds the entries of the last axis in
    order, left to right (its pairwise summation starts at 8), which is what
    the loop below does with whole slices; longer axes are left to numpy.
    """
    d = a.shape[-1]
    if d >= 8 or d == 0:
        return a.sum(axis=-1)
    out = a[..., 0].copy()
    for k in range(1, d):
        out += a[..., k]
    return out


def realized_shifts(replay_p: Any, replay_p_prime: Any, out: Mapping[str, np.ndarray] | None = None
                    ) -> dict[str, np.ndarray]:
    """Per noisy channel, every release's realized shift from two replays of the same runs.

    :func:`accounting.scheduled_replay.scheduled_replay` with ``rule`` set to
    ``P``'s recursion gives the residuals ``y - mu_P``; called again on the
    same messages and schedules with ``P'``'s recursion as ``rule`` it gives
    ``y - mu_P'``. Their difference is ``mu_P - mu_P'``: the shift of every
    release on every run (NaN where nothing was released or the round is
    noise-free; noise-free releases are compared by the replay itself, its
    ``noise_free_mismatch`` and infinite losses).

    Args:
        replay_p, replay_p_prime: the two
            :class:`~accounting.scheduled_replay.ScheduledReplay` results (anything with ``residuals``).
        out: per channel, an array of the messages' shape to write the shifts into (e.g. views of one larger
            array holding the shifts of several sets of runs); ``None``: new arrays.

    Returns:
        Per channel, ``mu_P - mu_P'`` with the messages' shape (``out``'s arrays when given).

    Raises:
        PrivacyParameterError: the two replays have different channels or shapes, or ``out`` lacks a channel
            or has another shape.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> realized_shifts(NS(residuals={"y": np.array([0.5])}), NS(residuals={"y": np.array([1.5])}))["y"].tolist()
        [1.0]
    """
    a, b = replay_p.residuals, replay_p_prime.residuals
    if set(a) != set(b):
        raise PrivacyParameterError(f"the replays have different channels: {sorted(a)} and {sorted(b)}")
    shifts = {}
    for c in a:
        ra, rb = np.asarray(a[c], dtype=float), np.asarray(b[c], dtype=float)
        if ra.shape != rb.shape:
            raise PrivacyParameterError(f"channel {c!r}: residual shapes differ, {ra.shape} and {rb.shape}")
        if out is None:
            shifts[c] = rb - ra
            continue
        if c not in out or np.shape(out[c]) != ra.shape:
            raise PrivacyParameterError(f"channel {c!r}: out needs an array of shape {ra.shape}, got "
                                        f"{np.shape(out[c]) if c in out else None}")
        shifts[c] = np.subtract(rb, ra, out=out[c])
    return shifts


def _bound_table(bound: Any, rounds: int, agents: int, channel: str) -> np.ndarray:
    """The bound as a ``(T, N)`` array, every entry checked ``>= 0``."""
    if isinstance(bound, np.ndarray):
        table = np.asarray(bound, dtype=float)
        if table.shape != (rounds, agents):
            raise PrivacyParameterError(f"channel {channel!r}: bound array has shape {table.shape}, "
                                        f"expected (rounds, agents) = {(rounds, agents)}")
    elif isinstance(bound, Mapping) or callable(bound):
        table = np.empty((rounds, agents))
        for t in range(1, rounds + 1):
            for i in range(agents):
                if isinstance(bound, Mapping):
                    if (i, t) not in bound:
                        raise PrivacyParameterError(f"channel {channel!r}: bound has no entry for (agent, round) = "
                                                    f"{(i, t)!r}")
                    table[t - 1, i] = bound[(i, t)]
                else:
                    table[t - 1, i] = bound(i, t)
    else:
        table = np.full((rounds, agents), check_nonnegative(bound, "bound", error=PrivacyParameterError,
                                                           where=f"channel {channel!r}"))
    bad = ~(np.isfinite(table) & (table >= 0))
    if bad.any():
        t, i = (int(x) for x in np.argwhere(bad)[0])
        raise PrivacyParameterError(f"channel {channel!r}: bound for agent {i}, round {t + 1} must be finite and "
                                    f">= 0, got {table[t, i]!r}")
    return table


def uncovered_releases(shifts: Mapping[str, Any], bounds: Mapping[str, Any], norms: Mapping[str, str] | str, *,
                       rtol: float = 1e-9, atol: float = 1e-12) -> list[UncoveredRelease]:
    """The releases whose realized shift exceeds the accountant's sensitivity bound, on some run.

    A release is uncovered when ``shift > bound (1 + rtol) + atol`` in its
    norm (the tolerances absorb round-off between the two replays). A bound
    of 0 (a release the accountant counts as free) is uncovered by any
    shift above ``atol``: a channel the accountant forgot is found too.

    Args:
        shifts: per channel the realized shifts (noise-free value under ``P``
            minus under ``P'``): broadcast ``(R, T, N, d)`` (``[run, round - 1,
            agent]``) or unicast ``(R, T, N, N, d)`` (``[run, round - 1,
            sender, receiver]``), NaN where nothing was released.
        bounds: per channel a :data:`Bound` (per sender and round; a unicast
            copy has its sender's bound). Every channel of ``shifts`` needs one.
        norms: per channel ``"l1"``/``"l2"`` or ``"laplace"``/``"gaussian"``, or one for all.
        rtol, atol: tolerances, ``>= 0``.

    Returns:
        The uncovered releases (one per release, its worst run), by round, agent, channel.

    Raises:
        PrivacyParameterError: a channel without a bound, shapes that are not 4-D/5-D, bad bounds
            (naming the channel, agent and round), bad tolerances.
        UnknownMechanismError: an unknown norm.

    Example:
        >>> s = {"y": np.full((1, 2, 1, 2), 0.5)}  # l1 shift 1.0 per release
        >>> [(u.round, u.shift) for u in uncovered_releases(s, {"y": {(0, 1): 1.0, (0, 2): 0.5}}, "laplace")]
        [(2, 1.0)]
    """
    check_nonnegative(rtol, "rtol", error=PrivacyParameterError)
    check_nonnegative(atol, "atol", error=PrivacyParameterError)
    norms_of: dict[str, np.ndarray] = {}
    for channel, shift in shifts.items():
        norm = _channel_norm(channel, bounds, norms)
        s = np.asarray(shift, dtype=float)
        if s.ndim not in (4, 5):
            raise PrivacyParameterError(f"channel {channel!r}: shifts must be (R, T, N, d) or (R, T, N, N, d), "
                                        f"got shape {s.shape}")
        norms_of[channel] = release_norms(s, norm, channel)  # (R, T, N) or (R, T, N, N)
    return uncovered_by_norms(norms_of, bounds, norms, rtol=rtol, atol=atol)


def uncovered_by_norms(norms_of: Mapping[str, np.ndarray], bounds: Mapping[str, Any], norms: Mapping[str, str] | str,
                       *, rtol: float = 1e-9, atol: float = 1e-12) -> list[UncoveredRelease]:
    """:func:`uncovered_releases` from the releases' norms already computed (:func:`release_norms` of the shifts).

    For a caller that also needs the norms (e.g. for the largest shift over
    bound): the norms are computed once. Same result as
    :func:`uncovered_releases` on the shifts.

    Args:
        norms_of: per channel ``release_norms(shifts, norm)``: ``(R, T, N)`` or ``(R, T, N, N)``.
        bounds, norms, rtol, atol: as :func:`uncovered_releases`.

    Returns:
        The uncovered releases, ordered as :func:`uncovered_releases` orders them.

    Raises:
        PrivacyParameterError: as :func:`uncovered_releases` (shapes: 3-D or 4-D norms).
        UnknownMechanismError: an unknown norm.

    Example:
        >>> s = {"y": np.full((1, 2, 1, 2), 0.5)}  # l1 shift 1.0 per release
        >>> b = {"y": {(0, 1): 1.0, (0, 2): 0.5}}
        >>> uncovered_by_norms({"y": release_norms(s["y"], "l1")}, b, "laplace") == uncovered_releases(s, b, "laplace")
        True
    """
    rt = check_nonnegative(rtol, "rtol", error=PrivacyParameterError)
    at = check_nonnegative(atol, "atol", error=PrivacyParameterError)
    out: list[UncoveredRelease] = []
    for channel, mags in norms_of.items():
        norm = _channel_norm(channel, bounds, norms)
        if norm not in NORMS:
            raise UnknownMechanismError(f"channel {channel!r}: unknown norm or mechanism {norm!r}; known: "
                                        f"{sorted(NORMS)}")
        m = np.asarray(mags, dtype=float)
        if m.ndim not in (3, 4):
            raise PrivacyParameterError(f"channel {channel!r}: release norms must be (R, T, N) or (R, T, N, N), "
                                        f"got shape {m.shape}")
        out.extend(_uncovered(channel, m, bounds[channel], norm, rt, at))
    out.sort(key=lambda u: (u.round, u.agent, u.channel, -1 if u.receiver is None else u.receiver))
    return out


def _channel_norm(channel: Any, bounds: Mapping[str, Any], norms: Mapping[str, str] | str) -> str:
    """The norm of ``channel``'s releases, after checking that the channel has a bound and a norm."""
    if channel not in bounds:
        raise PrivacyParameterError(f"channel {channel!r} has shifts but no sensitivity bound")
    norm = norms if isinstance(norms, str) else norms.get(channel)
    if norm is None:
        raise PrivacyParameterError(f"channel {channel!r} has shifts but no norm")
    return norm


def _uncovered(channel: Any, mags: np.ndarray, bound: Any, norm: str, rt: float, at: float) -> list[UncoveredRelease]:
    """The uncovered releases of one channel from its release norms (unsorted)."""
    out: list[UncoveredRelease] = []
    _, rounds, agents = mags.shape[:3]
    table = _bound_table(bound, rounds, agents, channel)
    limit = table * (1 + rt) + at
    if mags.ndim == 4:
        limit = limit[:, :, None]
    with np.errstate(invalid="ignore"):
        over = mags > limit[None]  # NaN (nothing released) compares False
    if not over.any():
        return out
    worst = np.where(np.isnan(mags), -np.inf, mags)
    for idx in np.argwhere(over.any(axis=0)):
        t, i = int(idx[0]), int(idx[1])
        j = int(idx[2]) if mags.ndim == 4 else None
        sel = (slice(None), t, i) if j is None else (slice(None), t, i, j)
        run = int(np.argmax(worst[sel]))
        out.append(UncoveredRelease(str(channel), i, t + 1, j, float(worst[sel][run]), float(table[t, i]), run,
                                    int(over[sel].sum()), NORMS[norm]))
    return out
