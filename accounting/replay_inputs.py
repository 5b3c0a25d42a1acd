"""What the exact replay on realized schedules takes besides the transcript.

The protocols of its rules (:class:`ChannelRule`) and of the runs' schedules
(:class:`ScheduleLike`, one run's; :class:`ScheduleBatch`, every run's in one
object), the noise declared on a channel (:class:`ChannelNoise`), the draws
and tilt of a constructed Gaussian transcript (:class:`TiltedDraw`) and one
pinned agent per run (:class:`RunPins`). The replay itself is
:func:`accounting.scheduled_replay.scheduled_replay`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import UnknownMechanismError
from .replay import check_round_scales

__all__ = ["ChannelRule", "ChannelNoise", "ScheduleLike", "ScheduleBatch", "TiltedDraw", "RunPins"]


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
    :class:`~accounting.shared_rounds.SharedRound` (e.g. kept per round); the replay then combines broadcast
    messages without gathering ``R x N x N`` entries (the same numbers).
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
class TiltedDraw:
    """Standard normal draws and a tilt for constructing Gaussian transcripts (``draw`` of
    :func:`~accounting.scheduled_replay.scheduled_replay`).

    Each noisy release of a pinned agent (unicast: each copy it sends) becomes ``mu + lambda_t (mu - mu') + s_t z``
    (``mu``, ``mu'`` its noise-free values under ``P`` and ``P'`` given the
    transcript so far, ``s_t`` the declared standard deviation, ``z`` the
    draw), with ``lambda_t = tilt`` on the rounds of ``rounds`` and 0
    elsewhere: the exponential tilt of :mod:`accounting.tilted_replay`.

    With ``offsets`` each such release moves by ``lambda_t`` times its FIXED offset instead (the tilt of a pair whose
    shifts are those offsets), ``mu + lambda_t o + s_t z``; the log weights are then that proposal's exact ones,
    ``sum (lambda_t^2 ||o||^2 / 2 - lambda_t o . (y - mu)) / s_t^2``, ``tilted_mu`` is the offsets' composed ``mu``,
    and each run reports whether every tilted release's shift ``mu - mu'`` lies within ``tolerance`` of its offset,
    coordinate by coordinate (:attr:`~accounting.scheduled_replay.ScheduledReplay.matched`).

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
    """One pinned agent per run (``pin_agent`` of :func:`~accounting.scheduled_replay.scheduled_replay`): run
    ``r`` constructs the messages of agent ``agents[r]``, e.g. stacked candidates that each change another agent.

    Each run is constructed as a replay of that run alone pinned to its agent constructs it: the same values.

    Attributes:
        agents: ``(R,)`` agent indices, one per run.

    Example:
        >>> RunPins(np.repeat([1, 2], 3)).agents.tolist()
        [1, 1, 1, 2, 2, 2]
    """

    agents: np.ndarray
