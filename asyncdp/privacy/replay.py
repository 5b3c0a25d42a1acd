"""The replay rule: an algorithm's R and U steps as an :class:`accounting.replay.ReplayRule`.

* :class:`ReplayState`: the algorithm's state dict, shown to the replay as its decision array;
* :class:`AlgorithmReplayRule`: an algorithm's R and U steps, vectorized over transcripts;
* :func:`replay_rule`, :func:`replay_setup`: the rule and the round weights and
  declared noise scales of a scenario;
* :func:`transcript_array`: a run's observed messages as an array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting.replay import ReplaySetup

from ..algorithms.base import Algorithm
from ..engine.timing import Lockstep
from ..errors import ScenarioError
from ..scenario import Scenario

__all__ = ["ReplayState", "AlgorithmReplayRule", "replay_rule", "replay_setup", "transcript_array"]


class ReplayState:
    """An algorithm's whole state dict during replay, shown to :mod:`accounting.replay` as its decision array.

    ``accounting.replay`` passes the state back to the rule untouched, except
    that it reads ``shape`` to size the noise blocks of the noisy channel,
    ``(R, N, n)``. Indexing and ``numpy.asarray`` give the decision array
    (e.g. ``x`` for huang2015, ``y`` for DPSDA).

    Attributes:
        state: the algorithm's state dict (arrays ``(R, N, ...)``).
        decision: ``algorithm.decision(state)``.
    """

    __slots__ = ("state", "decision")

    def __init__(self, state: dict[str, np.ndarray], decision: np.ndarray) -> None:
        self.state = state
        self.decision = np.asarray(decision, dtype=float)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.decision.shape

    def __getitem__(self, key: Any) -> np.ndarray:
        return self.decision[key]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.decision, dtype=dtype)


def _mix_matrix(w: Any, msg: np.ndarray) -> np.ndarray:
    """Row ``i``: ``sum_j W_ij msg[..., j, :]`` for ``msg`` of shape ``(R, N, k)``."""
    dense = w.toarray() if hasattr(w, "toarray") else np.asarray(w, dtype=float)
    return np.einsum("ij,rjk->rik", dense, msg)


@dataclass(frozen=True)
class AlgorithmReplayRule:
    """An algorithm with one noisy broadcast channel as an :class:`accounting.replay.ReplayRule`.

    The replayed state is the algorithm's whole state dict, carried in a
    :class:`ReplayState`. The message mean is the R step with zero noise. The
    next state is the U step. Its noisy channel is the observed mixture that
    ``accounting.replay`` supplies. Every noise-free channel carries no
    private data and is not in the transcript. Its messages are recomputed
    from the replayed state and mixed with the same round weights,
    ``weights(t)`` (e.g. the push-sum weights of DPSDA-PS). Everything is
    vectorized: ``(R, N, ...)``.

    Attributes:
        algorithm: the bound algorithm. problem: its problem. x0: initial points ``(N, n)``.
        weights: ``t -> W(t)``. It is required when the algorithm has noise-free channels.

    Raises:
        ScenarioError: noise-free channels without ``weights``, or a decision
            whose shape differs from the noisy message's (replay sizes the noise by it).
    """

    algorithm: Algorithm
    problem: Any
    x0: np.ndarray
    weights: Any = None

    def _zero(self, t: int, lead: tuple[int, ...]) -> dict[str, np.ndarray]:
        return {c.name: np.zeros(lead + (self.algorithm.noise(t, c.name).dimension,))
                for c in self.algorithm.noisy_channels()}

    def initial_state(self, runs: int) -> ReplayState:
        agents = np.arange(self.problem.num_agents)
        st = self.algorithm.initial_state(np.broadcast_to(self.x0, (runs,) + self.x0.shape), agents, self.problem)
        out = ReplayState(st, self.algorithm.decision(st))
        (channel,) = self.algorithm.noisy_channels()
        if out.shape[-1] != self.algorithm.noise(1, channel.name).dimension:
            raise ScenarioError(f"{self.algorithm.name}: replay needs the decision (dimension {out.shape[-1]}) and "
                                f"the noisy message (dimension {self.algorithm.noise(1, channel.name).dimension}) "
                                "to have the same shape")
        if self.weights is None and any(not c.noisy for c in self.algorithm.channels):
            raise ScenarioError(f"{self.algorithm.name} has noise-free channels: replay needs the round weights")
        return out

    def message_mean(self, state: ReplayState, t: int) -> np.ndarray:
        (channel,) = [c.name for c in self.algorithm.noisy_channels()]
        agents = np.arange(state.shape[-2])
        return self.algorithm.message(state.state, t, self._zero(t, state.shape[:-1]), agents, self.problem)[channel]

    def next_state(self, state: ReplayState, mixed: np.ndarray, t: int) -> ReplayState:
        (channel,) = [c.name for c in self.algorithm.noisy_channels()]
        agents = np.arange(state.shape[-2])
        mix = {channel: mixed}
        quiet = [c.name for c in self.algorithm.channels if not c.noisy]
        if quiet:
            msgs = self.algorithm.message(state.state, t, self._zero(t, state.shape[:-1]), agents, self.problem)
            w = self.weights(t)
            mix.update({name: _mix_matrix(w, np.asarray(msgs[name], dtype=float)) for name in quiet})
        out = self.algorithm.update(state.state, mix, t, agents, self.problem)
        return ReplayState(out, self.algorithm.decision(out))


def replay_rule(scenario: Scenario) -> AlgorithmReplayRule:
    """The replay rule of ``scenario`` (algorithm bound to its problem, the scenario's round weights).

    Args:
        scenario: the scenario to replay.

    Returns:
        Its :class:`AlgorithmReplayRule`.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> rule = replay_rule(small_example()[0].scenario)
        >>> rule.initial_state(4).shape
        (4, 3, 2)
    """
    return AlgorithmReplayRule(scenario.algorithm.bind(scenario.problem), scenario.problem, scenario.initial_points(),
                               scenario.topology.weights)


def replay_setup(scenario: Scenario) -> ReplaySetup:
    """Weights ``W_t`` and the per-round noise scales declared by the algorithm.

    A round declared with scale 0 is replayed as a noise-free release (see
    :mod:`accounting.replay`): it costs nothing when its messages do not depend
    on the private data, and infinitely much when they do.

    Args:
        scenario: a scenario whose algorithm has exactly one noisy channel.

    Returns:
        The :class:`accounting.replay.ReplaySetup` (weights, mechanism, scales ``(T,)``).

    Raises:
        ValueError: the algorithm has more than one noisy channel.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> replay_setup(small_example()[0].scenario).scales.shape
        (5,)
    """
    alg = scenario.algorithm.bind(scenario.problem)
    (channel,) = alg.noisy_channels()
    scales = np.array([alg.noise(t, channel.name).scale for t in range(1, scenario.horizon + 1)])
    return ReplaySetup(weights=scenario.topology.weights, mechanism=channel.mechanism, scales=scales)


def transcript_array(result: Any, channel: str = "y", mode: str = "broadcast") -> np.ndarray:
    """A run's observed messages: ``(T, N, n)`` for broadcast, ``(T, N, N, n)`` for unicast.

    Unicast entry ``[t - 1, i, j]`` is the message ``i -> j`` (``nan`` where no
    message was sent).

    Args:
        result: a run's result with a recorded transcript.
        channel: the channel whose messages to read.
        mode: ``"broadcast"`` or ``"unicast"``.

    Returns:
        The messages, ``nan`` where none was observed.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> transcript_array(small_example()[0].scenario.run()).shape
        (5, 3, 2)
    """
    horizon, n_agents, n = result.trajectory.shape[0] - 1, result.trajectory.shape[1], result.trajectory.shape[2]
    if mode == "unicast":
        out = np.full((horizon, n_agents, n_agents, n), np.nan)
        for (t, i, j), payload in result.transcript.observations_by_link(channel).items():
            out[t - 1, i, j] = payload
        return out
    out = np.full((horizon, n_agents, n), np.nan)
    for (t, i), payload in result.transcript.observations(channel).items():
        out[t - 1, i] = payload
    return out


def _replayable(scenario: Scenario) -> str | None:
    """Why exact replay does not apply to this scenario, or None if it does."""
    if not isinstance(scenario.timing, Lockstep):
        return "replay needs lockstep rounds (the weights actually used then equal the topology's)"
    if scenario.links.default.loss > 0 or any(m.loss > 0 for m in scenario.links.overrides.values()):
        return "replay needs lossless links"
    if len(scenario.algorithm.noisy_channels()) != 1:
        return "replay supports algorithms with one noisy channel"
    return None
