"""The engine-independent algorithm interface.

A published private algorithm is written once, as a *pure per-agent rule*,
and both engines (the SimPy engine and the batch engine) call the same code.
One agent's round ``t`` has three steps, following the R/F/U template of
Alg. 1 of Huang, Mitra and Vaidya (ICDCN 2015):

1. **R** — :meth:`Algorithm.message`: from the agent's state and standard
   noise, the message(s) it sends on each channel;
2. **F** — the engine mixes each channel linearly with the round's weights,
   ``mixed_i = sum_j W_ij(t) * message_j`` (over the messages that arrived,
   under the run's missing-message policy);
3. **U** — :meth:`Algorithm.update`: the agent's new state from its old
   state and the mixed channels (any nonlinear post-combine step, such as a
   projection, belongs here).

States and messages are dictionaries of float arrays whose *last* axis is the
coordinate axis. Every method is vectorized over leading axes: the SimPy
engine calls it with arrays of shape ``(n,)`` and ``agents`` an ``int``; the
batch engine with ``(R, N, n)`` and ``agents = numpy.arange(N)``. Rules must
not keep engine state: an algorithm object holds only parameters and
schedules. Every engine calls R through :func:`rule_messages` and U through
:func:`rule_update`, which hold a rule to what both engines can compute alike:
R returns one message per declared channel; U returns the entries the state
has. A message is the values sent: a later in-place change of the state does
not reach it. R should only read the state: a write into it (a counter kept
in place) is not computed alike by the engines (a known limit, see
``tests/asyncdp/engine/test_batch_engine.py``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from accounting.ledger import Release

from ..errors import NoiseError, ScenarioError

__all__ = ["Channel", "NoiseDeclaration", "Algorithm", "State", "Messages", "claim_pair", "as_claim_form", "claimed_pair",
           "rule_messages", "rule_noise", "rule_update", "stated_claim"]

State = dict[str, np.ndarray]
Messages = dict[str, np.ndarray]


@dataclass(frozen=True)
class Channel:
    """A message channel.

    Attributes:
        name: the channel's name (``"y"``, ``"z"``, ``"w"`` ...).
        mechanism: ``"laplace"`` or ``"gaussian"`` for a noised channel,
            ``None`` for a noise-free one (its messages are not in the ledger).

    Raises:
        NoiseError: another mechanism (a discrete, uniform or other family is not modelled), naming the channel.

    Example:
        >>> Channel("y", "geometric")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        asyncdp.errors.NoiseError: Channel 'y': mechanism 'geometric' is not a noise the engines draw ...
    """

    name: str
    mechanism: str | None = None

    def __post_init__(self) -> None:
        from ..noise import DISTRIBUTIONS

        if self.mechanism is not None and self.mechanism not in DISTRIBUTIONS:
            raise NoiseError(f"Channel {self.name!r}: mechanism {self.mechanism!r} is not a noise the engines draw "
                             f"({', '.join(DISTRIBUTIONS)}, or None for a noise-free channel): another family "
                             "(geometric, discrete Gaussian, Skellam, randomized response, uniform, Student-t) is not "
                             "modelled by the engines or the privacy check")

    @property
    def noisy(self) -> bool:
        return self.mechanism is not None


@dataclass(frozen=True)
class NoiseDeclaration:
    """What the algorithm declares about one round's release on one channel.

    Attributes:
        mechanism: ``"laplace"`` or ``"gaussian"``.
        scale: Laplace ``b`` or Gaussian standard deviation per coordinate
            (0 when the noise is switched off, e.g. ``epsilon = inf``).
        dimension: number of noised coordinates.
        claimed_sensitivity: the sensitivity the algorithm claims for the value
            this message masks (L1 for Laplace, L2 for Gaussian).
    """

    mechanism: str
    scale: float
    dimension: int
    claimed_sensitivity: float

    def to_release(self, agent: int, t: int, time: float, channel: str, receiver: int | None = None) -> Release | None:
        """The ledger record of this round-``t`` release by ``agent``, or ``None`` if the noise is off.

        Only ``scale == 0`` means "no noise, nothing released"; any other scale
        must be valid for the mechanism (validated by
        :class:`~accounting.ledger.Release`), so a NaN or negative scale is an
        error, never a silently skipped release.

        Args:
            agent: the releasing agent.
            t: the round (1-based).
            time: simulated time of the release.
            channel: the channel's name.
            receiver: ``None`` for a broadcast, else the single receiver.

        Returns:
            A :class:`~accounting.ledger.Release`, or ``None`` when ``scale == 0``.

        Raises:
            PrivacyParameterError: a negative, NaN or infinite scale, or a bad
                dimension (the message names agent and round).
            UnknownMechanismError: an unknown mechanism.

        Example:
            >>> NoiseDeclaration("laplace", 0.0, 2, 1.0).to_release(0, 1, 0.0, "y") is None
            True
            >>> NoiseDeclaration("laplace", 2.0, 2, 1.0).to_release(3, 5, 4.5, "y").scale
            2.0
        """
        if self.scale == 0:
            return None
        return Release(agent=agent, round=t, time=float(time), mechanism=self.mechanism, scale=float(self.scale),
                       dimension=int(self.dimension), claimed_sensitivity=float(self.claimed_sensitivity),
                       channel=channel, receiver=receiver)


class Algorithm(ABC):
    """Base class of every per-agent rule (see the module docstring).

    Subclasses are frozen dataclasses holding parameters; :meth:`bind` returns
    a copy with the problem-dependent constants filled in and checked.
    """

    name: ClassVar[str]
    channels: ClassVar[tuple[Channel, ...]]
    claim_level: ClassVar[str] = "run"
    """Scope of :meth:`claimed_privacy`: ``"run"`` (the whole run) or ``"iteration"``
    (a per-iteration guarantee the paper never composes, e.g. Wang and Başar, Automatica 2023)."""

    def bind(self, problem: Any) -> Algorithm:
        """A copy of this rule specialised to ``problem`` (constants, dimension), validated."""
        return self

    @abstractmethod
    def initial_state(self, x0: np.ndarray, agents: Any, problem: Any) -> State:
        """The state before round 1 from initial points ``x0`` (shape ``(..., n)``)."""

    @abstractmethod
    def noise(self, t: int, channel: str) -> NoiseDeclaration | None:
        """The declared noise of round ``t`` on ``channel`` (``None`` for a noise-free channel)."""

    @abstractmethod
    def message(self, state: State, t: int, noise: Mapping[str, np.ndarray], agents: Any, problem: Any) -> Messages:
        """R: the messages of round ``t``; ``noise[c]`` is *standard* noise for noisy channel ``c``."""

    @abstractmethod
    def update(self, state: State, mixed: Mapping[str, np.ndarray], t: int, agents: Any, problem: Any) -> State:
        """U: the state after round ``t`` from the mixed channels (F is done by the engine)."""

    @abstractmethod
    def decision(self, state: State) -> np.ndarray:
        """The agent's current decision variable ``x_i`` (for trajectories and metrics)."""

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """The (epsilon, delta) the paper claims for ``horizon`` rounds; (inf, 0) if none."""
        return math.inf, 0.0

    def params(self) -> dict[str, Any]:
        """The algorithm's parameters, JSON-ready."""
        from dataclasses import asdict, is_dataclass

        return {k: v for k, v in asdict(self).items()} if is_dataclass(self) else {}

    @classmethod
    def example_scenario(cls, seed: int = 0) -> Any:
        """A small scenario that exercises this algorithm (used by the engine-equivalence test).

        Every registered algorithm must provide one, so that tests written once
        (e.g. "both engines agree") cover algorithms added later.
        """
        raise NotImplementedError(f"{cls.__name__} does not define example_scenario()")

    @classmethod
    def noisy_channels(cls) -> tuple[Channel, ...]:
        return tuple(c for c in cls.channels if c.noisy)


def claim_pair(raw: Any, who: str) -> tuple[float, float]:
    """A claim ``(epsilon, delta)`` as a rule states it, as two floats: exactly two real numbers.

    Args:
        raw: what the rule returned (``claimed_privacy``, or a ``claimed_form`` that returns a pair).
        who: the rule's name, for the message.

    Returns:
        ``(epsilon, delta)`` as floats (their ranges are the reader's to check).

    Raises:
        ScenarioError: not a tuple of two real numbers (one or three numbers, ``None``, a string, a bool).

    Example:
        >>> claim_pair((1, 0.0), "rule")
        (1.0, 0.0)
    """
    from numbers import Real

    if not isinstance(raw, tuple) or len(raw) != 2 or any(isinstance(v, bool) or not isinstance(v, Real)
                                                           for v in raw):
        raise ScenarioError(f"{who}: the claim {raw!r} is not an (epsilon, delta) pair of two real numbers "
                            "(or a claim form of accounting.claim_forms)")
    return float(raw[0]), float(raw[1])


def as_claim_form(raw: Any, who: str) -> Any:
    """A rule's ``claimed_form`` value that is not a pair, as an :mod:`accounting.claim_forms` form.

    Args:
        raw: a claim form or an :class:`~accounting.claims.Claim`.
        who: the rule's name, for the message.

    Returns:
        ``accounting.claim_forms.as_form(raw)``.

    Raises:
        ScenarioError: ``raw`` is neither (naming the rule and the value).

    Example:
        >>> from accounting.claim_forms import ZeroConcentratedDP
        >>> as_claim_form(ZeroConcentratedDP(0.5), "rule").form
        'zcdp'
    """
    from accounting.claim_forms import as_form
    from accounting.errors import AccountingError

    try:
        return as_form(raw)
    except AccountingError as exc:
        raise ScenarioError(f"{who}: the claim {raw!r} is not an (epsilon, delta) pair or a claim form: {exc}") from None


def stated_claim(alg: Any, method: str, horizon: int) -> Any:
    """``alg.<method>(horizon)`` (``claimed_form`` or ``claimed_privacy``), a claim form it fails to build named.

    Raises:
        ScenarioError: the method raised an accounting error (e.g. ``ZeroConcentratedDP(nan)``), naming the rule,
            the method and the horizon.

    Example:
        >>> from accounting.claim_forms import ZeroConcentratedDP
        >>> stated_claim(type("R", (), {"claimed_form": lambda self, h: ZeroConcentratedDP(h / 10)})(), "claimed_form", 5)
        ZeroConcentratedDP(rho=0.5)
    """
    from accounting.errors import AccountingError

    try:
        return getattr(alg, method)(horizon)
    except AccountingError as exc:
        raise ScenarioError(f"{getattr(alg, 'name', alg)}: {method}({horizon}) cannot state the claim: {exc}") from None


def claimed_pair(alg: Any, horizon: int) -> tuple[float, float]:
    """The rule's ``(epsilon, delta)`` claim for ``horizon`` rounds, as the engines record it in a result.

    A rule's ``claimed_form(horizon)``, when it defines one, is its claim (as the privacy check reads it:
    :func:`asyncdp.privacy.context.claimed`): a pair, a pure or ``(epsilon, delta)`` form, or a
    :class:`~accounting.claims.Claim` stating an ``(epsilon, delta)``, is recorded as that pair. A bare Rényi or
    zCDP form has no ``(epsilon, delta)`` of its own (its conversion depends on a delta the run does not choose):
    ``claimed_privacy(horizon)`` is recorded then, as for a rule without ``claimed_form``.

    Raises:
        ScenarioError: the claim is not a pair of two real numbers or a claim form.

    Example:
        >>> claimed_pair(type("R", (), {"claimed_privacy": lambda self, h: (1.0, 1e-6)})(), 5)
        (1.0, 1e-06)
        >>> from accounting.claim_forms import ApproxDP
        >>> claimed_pair(type("F", (), {"claimed_form": lambda self, h: ApproxDP(2.0, 1e-5)})(), 5)
        (2.0, 1e-05)
    """
    who = str(getattr(alg, "name", alg))
    custom = getattr(alg, "claimed_form", None)
    if callable(custom):
        raw = stated_claim(alg, "claimed_form", horizon)
        if isinstance(raw, tuple):
            return claim_pair(raw, who)
        form = as_claim_form(raw, who)
        if form.form in ("pure", "approximate"):
            return float(form.epsilon), float(getattr(form, "delta", 0.0))  # type: ignore[union-attr]
        if raw is not form and getattr(raw, "epsilon", None) is not None and getattr(raw, "delta", None) is not None:
            return float(raw.epsilon), float(raw.delta)  # a Claim's own (epsilon, delta) statement
    return claim_pair(stated_claim(alg, "claimed_privacy", horizon), who)


def rule_messages(alg: Algorithm, state: State, t: int, noise: Mapping[str, np.ndarray], agents: Any,
                  problem: Any) -> Messages:
    """R: ``alg.message(...)``, checked to hold one message per declared channel and no other (every engine's call).

    Both engines mix and record exactly the declared channels; a message on a channel the rule does not declare
    was mixed by the batch engine and dropped by the SimPy engine (the two computed different runs), and one left
    out failed deep inside the engine. Each message must be the call's leading axes (none for one agent, runs and
    agents for a batch) and one coordinate axis: a message without it (``x[..., 0]`` for ``x[..., :1]``) failed
    deep inside each engine, differently.

    Args:
        alg, state, t, noise, agents, problem: as :meth:`Algorithm.message`.

    Returns:
        The rule's messages.

    Raises:
        ScenarioError: the rule returned no mapping, its channels differ from ``alg.channels``, a message has
            not the call's leading axes and one coordinate axis, or a noisy channel's message has another number
            of coordinates than the noise drawn for it (the message names the rule, the round, the agent and the
            channels, or the channel and the shape).

    Example:
        >>> class R:
        ...     name, channels = "r", (Channel("y"),)
        ...     def message(self, state, t, noise, agents, problem):
        ...         return {"y": state["x"], "z": state["x"]}
        >>> rule_messages(R(), {"x": np.zeros(1)}, 2, {}, 0, None)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        asyncdp.errors.ScenarioError: r: round 2, agent 0: message() returned the channels ['y', 'z'] ...
    """
    out = alg.message(state, t, noise, agents, problem)
    channels = alg.channels
    known = _CHANNEL_NAMES.get(id(channels))
    if known is None or known[0] is not channels:
        known = _CHANNEL_NAMES[id(channels)] = (channels, frozenset(c.name for c in channels))
    if not isinstance(out, Mapping) or out.keys() != known[1]:
        got = sorted(map(str, out)) if isinstance(out, Mapping) else type(out).__name__
        raise ScenarioError(f"{_where(alg, t, agents)}: message() returned the channels {got}, but the rule declares "
                            f"{[c.name for c in channels]} (its channels attribute): declare every channel it sends "
                            "on, and send on each")
    axes = 1 if np.ndim(agents) == 0 else 3  # (n,) for one agent; (runs, agents, n) for a batch
    for name, value in out.items():
        if np.ndim(value) != axes:
            raise ScenarioError(f"{_where(alg, t, agents)}: message() returned on channel {name!r} an array of shape "
                                f"{np.shape(value)}, but a message is {'(runs, agents) and ' if axes == 3 else ''}"
                                "one coordinate axis (the last): send a scalar statistic as v[..., :1], not v[..., 0]")
        drawn = noise.get(name) if isinstance(noise, Mapping) else None
        if drawn is not None and np.shape(value)[-1] != np.shape(drawn)[-1]:
            raise ScenarioError(f"{_where(alg, t, agents)}: message() returned on channel {name!r} "
                                f"{np.shape(value)[-1]} coordinate(s), but the round's noise declaration (and the "
                                f"noise drawn for it) has {np.shape(drawn)[-1]}: every coordinate of a noisy "
                                "channel's message carries its noise")
    return out


def rule_noise(alg: Algorithm, t: int, channel: str) -> NoiseDeclaration:
    """``alg.noise(t, channel)`` of a noisy channel, checked to be a :class:`NoiseDeclaration` (every engine's call).

    A rule that returned ``None`` (say for a round it adds no noise in) failed inside each engine with an
    ``AttributeError``.

    Args:
        alg, t, channel: as :meth:`Algorithm.noise`.

    Returns:
        The round's declaration.

    Raises:
        ScenarioError: naming the rule, the round, the channel and what it returned.

    Example:
        >>> class R:
        ...     name = "r"
        ...     def noise(self, t, channel):
        ...         return None
        >>> rule_noise(R(), 3, "y")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        asyncdp.errors.ScenarioError: r: noise(3, 'y') returned None, but channel 'y' is noisy: ...
    """
    d = alg.noise(t, channel)
    if not isinstance(d, NoiseDeclaration):
        raise ScenarioError(f"{alg.name}: noise({t}, {channel!r}) returned {d!r}"[:200] + ", but channel "
                            f"{channel!r} is noisy: every round needs a NoiseDeclaration (scale 0 for none)")
    return d


def rule_update(alg: Algorithm, state: State, mixed: Mapping[str, np.ndarray], t: int, agents: Any,
                problem: Any) -> State:
    """U: ``alg.update(...)``, checked to return the entries ``state`` has (every engine's call).

    The batch engine's asynchronous path keeps each state entry of ``initial_state`` in an array of its own: an
    entry the update added was a bare ``KeyError`` there while the other engines ran on.

    Args:
        alg, state, mixed, t, agents, problem: as :meth:`Algorithm.update`.

    Returns:
        The new state.

    Raises:
        ScenarioError: the rule returned no mapping, or other entries (named with the rule, the round and the
            agent).

    Example:
        >>> class R:
        ...     name = "r"
        ...     def update(self, state, mixed, t, agents, problem):
        ...         return {"x": mixed["y"], "m": mixed["y"]}
        >>> rule_update(R(), {"x": np.zeros(2)}, {"y": np.ones(2)}, 1, 0, None)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        asyncdp.errors.ScenarioError: r: round 1, agent 0: update() returned the state entries ['m', 'x'] ...
    """
    new = alg.update(state, mixed, t, agents, problem)
    if not isinstance(new, Mapping) or new.keys() != state.keys():
        got = sorted(map(str, new)) if isinstance(new, Mapping) else type(new).__name__
        raise ScenarioError(f"{_where(alg, t, agents)}: update() returned the state entries {got}, but the state has "
                            f"{sorted(state)} (initial_state's): keep one set of entries for the whole run")
    return new


_CHANNEL_NAMES: dict[int, tuple[Any, frozenset[str]]] = {}
"""The names of each ``channels`` tuple :func:`rule_messages` has checked a message against (by identity)."""


def _where(alg: Any, t: int, agents: Any) -> str:
    """``"rule: round t, agent i"`` (or the first few agents of a batch call) for an error message."""
    who = f"agent {agents}" if isinstance(agents, (int, np.integer)) else "agents " + ", ".join(
        str(int(a)) for a in np.unique(np.asarray(agents))[:5])
    return f"{getattr(alg, 'name', type(alg).__name__)}: round {t}, {who}"
