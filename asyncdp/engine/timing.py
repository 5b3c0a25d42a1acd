"""Timing policies: when agents broadcast and combine (configuration only).

These are validated configuration objects; the engine interprets them.

* :class:`Lockstep` -- synchronous rounds with a barrier: every agent waits for
  all round-``k`` messages before combining.
* :class:`Deadline` -- each agent runs its own (drifting, jittered) clock and
  combines whatever round-``k`` messages have arrived by its deadline.
* :class:`Async` -- agents wake at Poisson times and combine the freshest value
  received from each neighbour.

Missing-message policies (``missing``):

* ``"renormalize"`` -- drop the missing neighbours and rescale the remaining
  combination weights to the row's original total (1 for a row-stochastic
  matrix; a push-sum row keeps its own mass);
* ``"stale"`` -- use the most recent value received earlier from that neighbour;
* ``None`` (:class:`Lockstep` only) -- a lost message is an error: the engine
  raises :class:`~asyncdp.errors.MessageLostError`.

Random stream of an agent's clock: ``numpy.random.default_rng(
numpy.random.SeedSequence(seed, spawn_key=(2, agent)))`` (:func:`agent_clock_rng`).
Draw order on it: :class:`Deadline` -- first the agent's drift (one
:meth:`Deadline.sample_drift`), then one :meth:`Deadline.sample_jitter` per
round in round order ``k = 1, 2, ...``; :class:`Async` -- one
:meth:`Async.sample_wait` per wake-up, in order. Each sampler always makes
exactly one draw, even when its parameter is 0. A subclass may draw from its
own distribution, but inside the declared support (:func:`check_clock_draws`,
which both engines apply): a drift in ``[-drift, drift]``, a jitter in
``[0, jitter]`` (what the non-overlap constraint of :class:`Deadline` is
computed from), a finite wait ``>= 0``.

Example:
    >>> d = Deadline(period=1.0, deadline=0.5)
    >>> d.round_start(3, 0.0, 0.0), d.combine_time(3, 0.0, 0.0)
    (2.0, 2.5)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from topology.validation import check_integer, check_nonnegative, check_positive, check_real

from ..errors import TimingError
from ..noise import CLOCK_KEY

__all__ = [
    "MISSING_POLICIES",
    "Lockstep",
    "Deadline",
    "Async",
    "TimingPolicy",
    "agent_clock_rng",
    "check_clock_draws",
    "check_clock_times",
    "deadline_times",
    "overrides_deadline_times",
    "timing_from_dict",
    "CLOCK_STREAM_KEY",
]

CLOCK_STREAM_KEY = CLOCK_KEY
"""First entry of an agent clock's ``spawn_key`` (see :func:`agent_clock_rng`)."""

MISSING_POLICIES: tuple[str, ...] = ("renormalize", "stale")
"""Policies for a message that has not arrived when an agent combines."""


def _missing(value: Any, owner: str, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, str) or value not in MISSING_POLICIES:
        allowed = ", ".join(repr(p) for p in ((None,) if allow_none else ()) + MISSING_POLICIES)
        raise TimingError(f"{owner}: missing must be one of {allowed}, got {value!r}")


def _check_samplers(timing: Any, base: type, pairs: tuple[tuple[str, str], ...]) -> None:
    """Refuse a subclass whose vectorized sampler (``sample_waits``) is not its one-draw form (``sample_wait``)
    called in order: the SimPy engine calls the one-draw form, the batch engine the vectorized one, so the two
    engines (and run 0 of a batch, the SimPy run of the seed) would draw other clocks. ``base``'s vectorized form
    calls the one-draw form; any other must be defined by the class defining the one-draw form."""
    cls = type(timing)
    for one, many in pairs:
        own_one, own_many = (next(c for c in cls.__mro__ if name in vars(c)) for name in (one, many))
        if own_many is base or own_many is own_one:
            continue
        if issubclass(own_many, own_one):
            raise TimingError(
                f"{cls.__name__} overrides {many} but not {one}: the SimPy engine draws with {one} (one draw per "
                f"call), the batch engine with {many}, so they would run other clocks; override {one} ({many} then "
                "calls it in order), or both with the same draws")
        raise TimingError(
            f"{cls.__name__} overrides {one} but not {many} ({own_many.__name__}.{many}, which does not call it): the "
            f"SimPy engine draws with {one}, the batch engine with {many}, so they would run other clocks; override "
            f"{many} too, with the same draws")


@dataclass(frozen=True)
class Lockstep:
    """Synchronous rounds with a barrier.

    Args:
        missing: policy for a *lost* message: None (default) makes a loss an
            error (:class:`~asyncdp.errors.MessageLostError`), or
            ``"renormalize"`` / ``"stale"``.

    Raises:
        TimingError: on any other ``missing``.

    Example:
        >>> Lockstep().to_dict()
        {'kind': 'lockstep', 'missing': None}
    """

    missing: str | None = None
    kind: ClassVar[str] = "lockstep"

    def __post_init__(self) -> None:
        _missing(self.missing, "Lockstep", allow_none=True)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description with a ``"kind"`` key."""
        return {"kind": self.kind, "missing": self.missing}


def _draws(timing: Any, base: type, method: str, rng: np.random.Generator, count: int,
           vectorized: Callable[[int], np.ndarray]) -> np.ndarray:
    """``count`` draws of ``timing.<method>(rng)``: ``vectorized(count)`` (the same values and stream position as
    the calls) when ``method`` is ``base``'s own, else the subclass's override called ``count`` times, in order."""
    if getattr(type(timing), method) is getattr(base, method):
        return vectorized(count)
    one = getattr(timing, method)
    return np.array([float(one(rng)) for _ in range(count)], dtype=float)


@dataclass(frozen=True)
class Deadline:
    """Per-agent clocks with a combine deadline.

    Agent ``i``'s round ``k`` (``k >= 1``) starts at
    ``(k - 1) * period * (1 + drift_i) + jitter_ik`` with ``drift_i ~ U[-drift, drift]``
    drawn once per agent and ``jitter_ik ~ U[0, jitter]`` per round. The agent
    broadcasts at the start of its round and combines at
    ``start + deadline * period`` whatever round-``k`` messages have arrived;
    missing ones are handled by ``missing``.

    Constraints: ``period > 0``; ``0 < deadline <= 1`` (a fraction of the
    period); ``0 <= drift < 1`` (relative clock-rate error); ``jitter >= 0``
    (time units); and ``deadline * period + jitter <= period * (1 - drift)``,
    so that every agent combines round ``k`` no later than the earliest
    moment its round ``k + 1`` can start (rounds never overlap).

    Args:
        period: nominal round length.
        deadline: combine offset as a fraction of ``period``.
        drift: maximal relative clock drift.
        jitter: maximal per-round start delay.
        missing: ``"renormalize"`` (default) or ``"stale"``.

    Raises:
        TimingError: naming the violated parameter and its value; a subclass overriding one of ``sample_drift`` and
            ``sample_drifts`` (or of ``sample_jitter`` and ``sample_jitters``) without the other (the engines'
            draws would differ); ``Deadline``'s vectorized forms call an overridden one-draw form.

    Example:
        >>> Deadline(period=2.0, deadline=0.5, jitter=0.5).combine_time(1, 0.0, 0.25)
        1.25
    """

    period: float = 1.0
    deadline: float = 0.9
    drift: float = 0.0
    jitter: float = 0.0
    missing: str = "renormalize"
    kind: ClassVar[str] = "deadline"

    def __post_init__(self) -> None:
        owner = "Deadline"
        period = check_positive(self.period, "period", error=TimingError, where=owner)
        deadline = check_real(self.deadline, "deadline", error=TimingError, where=owner)
        drift = check_real(self.drift, "drift", error=TimingError, where=owner)
        jitter = check_nonnegative(self.jitter, "jitter", error=TimingError, where=owner)
        if not 0 < deadline <= 1:
            raise TimingError(f"Deadline: deadline must be in (0, 1] (a fraction of the period), got {self.deadline!r}")
        if not 0 <= drift < 1:
            raise TimingError(f"Deadline: drift must be in [0, 1), got {self.drift!r}")
        if deadline * period + jitter > period * (1 - drift) * (1 + 1e-12):
            raise TimingError(
                f"Deadline: deadline * period + jitter = {deadline * period + jitter!r} exceeds "
                f"period * (1 - drift) = {period * (1 - drift)!r}; an agent could start round k+1 "
                f"before combining round k (lower deadline, drift or jitter)"
            )
        _missing(self.missing, owner, allow_none=False)
        _check_samplers(self, Deadline, (("sample_drift", "sample_drifts"), ("sample_jitter", "sample_jitters")))
        for name, v in (("period", period), ("deadline", deadline), ("drift", drift), ("jitter", jitter)):
            object.__setattr__(self, name, v)

    def round_start(self, k: int, drift_i: float, jitter_ik: float) -> float:
        """Start (= broadcast) time of round ``k`` for an agent with drift ``drift_i`` and jitter ``jitter_ik``.

        Raises:
            TimingError: if ``k < 1``.
        """
        return (check_integer(k, "round k", minimum=1, error=TimingError) - 1) * self.period * (1.0 + drift_i) + jitter_ik

    def combine_time(self, k: int, drift_i: float, jitter_ik: float) -> float:
        """Combine time of round ``k``: ``round_start(k, ...) + deadline * period``."""
        return self.round_start(k, drift_i, jitter_ik) + self.deadline * self.period

    def sample_drift(self, rng: np.random.Generator) -> float:
        """One agent's drift, ``U[-drift, drift]`` (exactly one draw)."""
        return float(rng.uniform(-self.drift, self.drift))

    def sample_jitter(self, rng: np.random.Generator) -> float:
        """One round's start jitter, ``U[0, jitter]`` (exactly one draw)."""
        return float(rng.uniform(0.0, self.jitter))

    def sample_drifts(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` agents' drifts at once: the values and stream position of ``count`` calls of :meth:`sample_drift`.

        ``Deadline`` draws them as one array (``rng.uniform`` fills it draw by
        draw); a subclass that overrides :meth:`sample_drift` but not this
        method gets its ``sample_drift`` called ``count`` times, in order (the
        batch engine calls this method and :meth:`sample_jitters` only).

        Args:
            rng: the generator.
            count: number of agents, >= 0.

        Returns:
            A float array of length ``count``.

        Raises:
            TimingError: a bad ``count``.

        Example:
            >>> d = Deadline(period=1.0, deadline=0.5, drift=0.1)
            >>> a, b = np.random.default_rng(3), np.random.default_rng(3)
            >>> d.sample_drifts(a, 4).tolist() == [d.sample_drift(b) for _ in range(4)]
            True
        """
        count = check_integer(count, "count", minimum=0, error=TimingError, where="Deadline.sample_drifts")
        return _draws(self, Deadline, "sample_drift", rng, count, lambda n: rng.uniform(-self.drift, self.drift, n))

    def sample_jitters(self, rng: np.random.Generator, rounds: int) -> np.ndarray:
        """``rounds`` start jitters at once: the values and stream position of ``rounds`` calls of :meth:`sample_jitter`.

        A subclass that overrides :meth:`sample_jitter` but not this method gets
        its ``sample_jitter`` called ``rounds`` times, in order (as
        :meth:`sample_drifts`).

        Args:
            rng: the agent's clock generator.
            rounds: number of rounds, >= 0.

        Returns:
            A float array of length ``rounds``.

        Raises:
            TimingError: a bad ``rounds``.

        Example:
            >>> d = Deadline(period=1.0, deadline=0.5, jitter=0.25)
            >>> a, b = np.random.default_rng(3), np.random.default_rng(3)
            >>> d.sample_jitters(a, 4).tolist() == [d.sample_jitter(b) for _ in range(4)]
            True
        """
        rounds = check_integer(rounds, "rounds", minimum=0, error=TimingError, where="Deadline.sample_jitters")
        return _draws(self, Deadline, "sample_jitter", rng, rounds, lambda n: rng.uniform(0.0, self.jitter, n))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description with a ``"kind"`` key."""
        return {
            "kind": self.kind,
            "period": self.period,
            "deadline": self.deadline,
            "drift": self.drift,
            "jitter": self.jitter,
            "missing": self.missing,
        }


@dataclass(frozen=True)
class Async:
    """Asynchronous agents waking at the times of a Poisson process.

    Each agent waits ``Exp(rate)`` (mean ``1 / rate``) between wake-ups; at a
    wake-up it combines the freshest value received from each neighbour. A
    neighbour's value older than ``staleness`` of that neighbour's rounds is
    treated as missing (renormalized); ``None`` means no limit.

    Args:
        rate: wake-up rate per unit time, > 0.
        staleness: maximal age in rounds, a positive int, or None.

    Raises:
        TimingError: naming the invalid parameter and value; a subclass overriding one of ``sample_wait`` and
            ``sample_waits`` without the other (the engines' draws would differ); ``Async.sample_waits`` calls an
            overridden ``sample_wait``.

    Example:
        >>> Async(rate=2.0).sample_wait(np.random.default_rng(0)) > 0
        True
    """

    rate: float = 1.0
    staleness: int | None = None
    kind: ClassVar[str] = "async"

    def __post_init__(self) -> None:
        rate = check_positive(self.rate, "rate", error=TimingError, where="Async")
        object.__setattr__(self, "rate", rate)
        _check_samplers(self, Async, (("sample_wait", "sample_waits"),))
        s = self.staleness
        if s is not None:
            object.__setattr__(self, "staleness", check_integer(s, "staleness (an integer or None)", minimum=1,
                                                                error=TimingError, where="Async"))

    def sample_wait(self, rng: np.random.Generator) -> float:
        """Time to the next wake-up, ``Exp(rate)`` (exactly one draw)."""
        return float(rng.exponential(1.0 / self.rate))

    def sample_waits(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` waits at once: the values and stream position of ``count`` calls of :meth:`sample_wait`.

        ``Async`` draws them as one array (``rng.exponential(1 / rate, count)``
        fills the array draw by draw, so it equals ``count`` single draws to
        the bit). A subclass that overrides :meth:`sample_wait` but not this
        method gets its ``sample_wait`` called ``count`` times, in order; a
        subclass may override both (the batch engine calls this method only).

        Args:
            rng: the agent's clock generator.
            count: number of waits, >= 0.

        Returns:
            A float array of length ``count``.

        Raises:
            TimingError: a bad ``count``.

        Example:
            >>> a, b = np.random.default_rng(3), np.random.default_rng(3)
            >>> Async(rate=2.0).sample_waits(a, 4).tolist() == [Async(rate=2.0).sample_wait(b) for _ in range(4)]
            True
        """
        count = check_integer(count, "count", minimum=0, error=TimingError, where="Async.sample_waits")
        return _draws(self, Async, "sample_wait", rng, count, lambda n: rng.exponential(1.0 / self.rate, n))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description with a ``"kind"`` key."""
        return {"kind": self.kind, "rate": self.rate, "staleness": self.staleness}


TimingPolicy = Lockstep | Deadline | Async
"""Any timing policy."""

_SUPPORT: dict[str, tuple[Callable[[Any], tuple[float, float]], str]] = {
    "sample_drift": (lambda d: (0.0 - d.drift, d.drift), "[-drift, drift]"),
    "sample_jitter": (lambda d: (0.0, d.jitter), "[0, jitter]"),
    "sample_wait": (lambda a: (0.0, sys.float_info.max), "[0, inf)"),  # finite
}


def check_clock_draws(timing: Deadline | Async, method: str, values: Any, *, agent: int | None = None,
                      round: int | None = None, run: int | None = None) -> None:
    """Refuse clock draws outside the support of ``timing`` (a subclass's own ``sample_*`` may return anything).

    Drifts must lie in ``[-drift, drift]`` and jitters in ``[0, jitter]``: the
    bounds :class:`Deadline` checks ``deadline * period + jitter <= period *
    (1 - drift)`` with, so that rounds never overlap (outside them the engines
    would silently start rounds late, run clocks backwards, or hang). Waits
    must be finite and ``>= 0``. NaN is never in the support.

    Args:
        timing: the timing policy whose ``method`` made the draws.
        method: ``"sample_drift"``, ``"sample_jitter"`` or ``"sample_wait"``.
        values: one draw (with ``agent`` and, per round, ``round``), or an
            array: drifts ``(N,)`` indexed by agent, per-round draws ``(T, N)``
            indexed by round - 1 and agent.
        agent, round: the agent and round of a single draw.
        run: the batch run the draws belong to (named in the error).

    Raises:
        TimingError: naming the timing, method, run, agent, round, value and support.

    Example:
        >>> check_clock_draws(Deadline(deadline=0.5, drift=0.1), "sample_drift", [0.1, -0.05])
        >>> check_clock_draws(Async(), "sample_wait", -1.0, agent=2, round=3)
        Traceback (most recent call last):
        ...
        asyncdp.errors.TimingError: Async.sample_wait returned -1.0 for agent 2, round 3, outside its support [0, inf)
    """
    bounds, text = _SUPPORT[method]
    lo, hi = bounds(timing)
    if isinstance(values, float) and lo <= values <= hi:  # the SimPy engine's one draw per call: no array
        return
    v = np.asarray(values, dtype=float)
    bad = ~((v >= lo) & (v <= hi))  # NaN fails both comparisons
    if not bad.any():
        return
    where = tuple(int(k) for k in np.argwhere(bad)[0]) if v.ndim else ()
    if v.ndim == 1 and method == "sample_drift":
        agent = where[0]
    elif v.ndim == 1:
        round = where[0] + 1
    elif v.ndim == 2:
        round, agent = where[0] + 1, where[1]
    at = [f"{name} {k}" for name, k in (("run", run), ("agent", agent), ("round", round)) if k is not None]
    value = float(v[where]) if v.ndim else float(v)
    rng_text = f"{text} = [{lo!r}, {hi!r}]" if method != "sample_wait" else text
    raise TimingError(f"{type(timing).__name__}.{method} returned {value!r}"
                      f"{' for ' + ', '.join(at) if at else ''}, outside its support {rng_text}")


def overrides_deadline_times(timing: Deadline) -> bool:
    """Whether ``timing``'s class overrides :meth:`Deadline.round_start` or :meth:`Deadline.combine_time`.

    Args:
        timing: a :class:`Deadline` (or subclass).

    Returns:
        True when the engines must call the methods for every run, agent and round (:func:`deadline_times`); False
        when ``Deadline``'s own formulas apply (computed on arrays by the batch engine).

    Example:
        >>> overrides_deadline_times(Deadline())
        False
    """
    cls = type(timing)
    return cls.round_start is not Deadline.round_start or cls.combine_time is not Deadline.combine_time


def deadline_times(timing: Deadline, k: int, drift_i: float, jitter_ik: float, *, agent: int,
                   run: int | None = None) -> tuple[float, float]:
    """``(timing.round_start(k, ...), timing.combine_time(k, ...))`` of one agent's round, as both engines use them.

    A subclass may override either method (e.g. an earlier combine in some rounds); its values must be real
    numbers, not NaN (the SimPy engine read a NaN combine time as "now" where the batch engine's times became
    NaN). An infinite time is left to :func:`check_clock_times` (an overflowed clock).

    Args:
        timing: the :class:`Deadline` (or subclass).
        k: the round, ``>= 1``.
        drift_i, jitter_ik: the agent's drift and the round's jitter.
        agent, run: where the times belong (named in the error).

    Returns:
        The round's start and combine times, as floats.

    Raises:
        TimingError: an override returned something else than a real number (a 0-d numeric array counts as one),
            or NaN.

    Example:
        >>> deadline_times(Deadline(period=1.0, deadline=0.5), 3, 0.0, 0.0, agent=0)
        (2.0, 2.5)
    """
    out = []
    for method in ("round_start", "combine_time"):
        value = getattr(timing, method)(k, drift_i, jitter_ik)
        real = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        if not real and not isinstance(value, (bool, np.bool_)):  # a 0-d array (np.where's result) is a number too
            arr = np.asarray(value)
            real = arr.ndim == 0 and arr.dtype.kind in "iuf"
        if not real or value != value:
            at = ", ".join(f"{name} {v}" for name, v in (("run", run), ("agent", agent), ("round", k)) if v is not None)
            raise TimingError(f"{type(timing).__name__}.{method} returned {value!r} for {at}: a round's start and "
                              "combine times must be real numbers, not NaN")
        out.append(float(value))
    return out[0], out[1]


_KINDS: dict[str, type] = {"lockstep": Lockstep, "deadline": Deadline, "async": Async}


def timing_from_dict(data: Mapping[str, Any]) -> TimingPolicy:
    """Rebuild a timing policy from its ``to_dict()`` form.

    Raises:
        TimingError: on an unknown kind or bad parameters.

    Example:
        >>> timing_from_dict({"kind": "async", "rate": 2.0})
        Async(rate=2.0, staleness=None)
    """
    if not isinstance(data, Mapping) or "kind" not in data:
        raise TimingError(f"timing description must be a mapping with a 'kind', got {data!r}")
    kind = data["kind"]
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise TimingError(f"unknown timing kind {kind!r}; known: {', '.join(_KINDS)}")
    params = {k: v for k, v in data.items() if k != "kind"}
    try:
        return cls(**params)
    except TypeError as exc:
        raise TimingError(f"timing kind {kind!r}: bad parameters {params!r} ({exc})") from None


def agent_clock_rng(seed: int, agent: int) -> np.random.Generator:
    """The clock generator of ``agent``.

    Exactly ``numpy.random.default_rng(numpy.random.SeedSequence(seed, spawn_key=(2, agent)))``.

    Raises:
        TimingError: if ``seed`` or ``agent`` is not a nonnegative int.

    Example:
        >>> agent_clock_rng(1, 0).random() == agent_clock_rng(1, 0).random()
        True
    """
    seed = check_integer(seed, "seed", minimum=0, error=TimingError, where="agent_clock_rng")
    agent = check_integer(agent, "agent", minimum=0, error=TimingError, where="agent_clock_rng")
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(CLOCK_STREAM_KEY, agent)))


def check_clock_times(times: Any, *, agent: int | None = None, round: int | None = None,
                      run: int | None = None) -> None:
    """Refuse simulated times that overflowed to infinity (or NaN): the clock no longer orders any event.

    Waits of a very low ``Async`` rate, a huge ``Deadline`` period or huge
    latencies add up past the largest float after enough rounds; unchecked,
    the SimPy engine failed on a link's send time and the batch engine with a
    bare ``IndexError``.

    Args:
        times: one time (with ``agent`` and ``round``), or an array ``(R, T, N)`` of the engines' event times
            (run, round - 1, agent).
        agent, round, run: where a single time belongs.

    Raises:
        TimingError: naming the run, agent and round of the first such time.

    Example:
        >>> check_clock_times(float("inf"), agent=1, round=4)
        Traceback (most recent call last):
        ...
        asyncdp.errors.TimingError: agent 1, round 4: the simulated clock overflowed (time inf): the waits, period or latencies are too large for this many rounds
    """
    if isinstance(times, (float, int)) and times < math.inf:  # one time (SimPy's now is an int until it moves)
        return
    v = np.asarray(times, dtype=float)
    bad = ~(v < np.inf)
    if not bad.any():
        return
    if v.ndim == 3:
        run, round, agent = (int(k) for k in np.argwhere(bad)[0])
        round += 1
        value = float(v[run, round - 1, agent])
    else:
        value = float(v)
    at = ", ".join(f"{name} {k}" for name, k in (("run", run), ("agent", agent), ("round", round)) if k is not None)
    raise TimingError(f"{at}: the simulated clock overflowed (time {value!r}): the waits, period or latencies are too "
                      f"large for this many rounds")
