"""Per-link latency and loss models (pure: no SimPy).

A directed link ``sender -> receiver`` is described by a :class:`LinkModel`:
a latency distribution, a loss probability and whether messages may overtake
each other. :class:`Links` maps every link of a network to its model (one
default plus per-link overrides), and :class:`LinkChannel` is the per-link
sampler the engine calls once per message.

Random stream of a link
    The engine creates link ``i -> j``'s generator as
    ``numpy.random.default_rng(numpy.random.SeedSequence(seed, spawn_key=(1, i, j)))``
    (:func:`link_rng`), the ``(1, i, j)`` entry of the seed layout of
    :mod:`asyncdp.noise`. Nothing else draws from it.

Draw order per message (fixed)
    1. one uniform ``u = rng.random()``; the message is lost iff ``u < loss``;
    2. one latency ``rng``-draw from the latency model (``sample(rng)``).

    Both draws are made for *every* message, lost or not, so the stream
    position after ``m`` messages does not depend on which were lost: a
    lossless and a lossy link on the same seed see the same latencies.
    (:class:`ZeroLatency` and :class:`ConstantLatency` consume no draws in
    step 2; the count still depends on the model only, never on outcomes.)

Example:
    >>> ch = LinkChannel(LinkModel(ConstantLatency(0.5)), link_rng(0, 0, 1))
    >>> ch.transmit(1.0)
    1.5
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from topology.validation import check_integer, check_nonnegative, check_positive

from ..errors import LinkModelError
from ..noise import LINK_KEY

__all__ = [
    "LatencyModel",
    "ZeroLatency",
    "ConstantLatency",
    "ExponentialLatency",
    "LogNormalLatency",
    "CallableLatency",
    "LinkModel",
    "Links",
    "LinkChannel",
    "checked_delays",
    "link_rng",
    "latency_from_dict",
    "LINK_STREAM_KEY",
]

LINK_STREAM_KEY = LINK_KEY
"""First entry of a link's ``spawn_key`` (see :func:`link_rng`)."""


# --------------------------------------------------------------------------- latency


def checked_delays(latency: LatencyModel, delays: Any, count: int, where: str) -> np.ndarray:
    """``latency.sample(rng, count)``'s result as a float array, checked: length ``count``, each finite and >= 0.

    A user's :class:`LatencyModel` subclass may return anything; unchecked, a
    negative delay delivered messages before they were sent (the engines then
    disagreed), NaN was silently never "arrived" in one engine and an error in
    the other, and a scalar returned for ``size=count`` gave every message of a
    batch run the same delay.

    Args:
        latency: the model that drew ``delays`` (named in the error).
        delays: what its ``sample`` returned.
        count: the number of delays asked for.
        where: the link or run, for the error message.

    Returns:
        A float array of shape ``(count,)``.

    Raises:
        LinkModelError: a wrong shape or a bad delay, naming ``where``, the model and the value.

    Example:
        >>> checked_delays(ZeroLatency(), [0.5, -1.0], 2, "link 0 -> 1")
        Traceback (most recent call last):
        ...
        asyncdp.errors.LinkModelError: link 0 -> 1: ZeroLatency sampled the delay -1.0 (must be finite and >= 0)
    """
    try:
        arr = np.asarray(delays, dtype=float)
    except (TypeError, ValueError):
        raise LinkModelError(f"{where}: {type(latency).__name__} sampled non-number delays {delays!r}") from None
    if arr.shape != (count,):
        raise LinkModelError(f"{where}: {type(latency).__name__}.sample(rng, size={count}) returned shape "
                             f"{arr.shape}, expected ({count},)")
    bad = ~((arr >= 0.0) & (arr < np.inf))  # NaN fails both
    if bad.any():
        value = float(arr[np.argmax(bad)])
        raise LinkModelError(f"{where}: {type(latency).__name__} sampled the delay {value!r} (must be finite and >= 0)")
    return arr



class LatencyModel:
    """Base class of latency distributions (delays in simulated time units, >= 0).

    Subclasses implement ``sample(rng, size=None)``, ``mean``, ``std`` and
    ``to_dict()``.
    """

    kind: ClassVar[str] = ""

    def sample(self, rng: np.random.Generator, size: int | None = None) -> float | np.ndarray:
        """Draw delays: a float if ``size`` is None, else an array of ``size`` delays."""
        raise NotImplementedError

    @property
    def mean(self) -> float | None:  # pragma: no cover - overridden
        """Expected delay."""
        raise NotImplementedError

    @property
    def std(self) -> float | None:  # pragma: no cover - overridden
        """Standard deviation of the delay."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - overridden
        """A JSON-able description (``{"kind": ..., <parameters>}``)."""
        raise NotImplementedError


@dataclass(frozen=True)
class ZeroLatency(LatencyModel):
    """Instantaneous delivery (delay 0); consumes no random draws.

    Example:
        >>> ZeroLatency().sample(np.random.default_rng(0))
        0.0
    """

    kind: ClassVar[str] = "zero"

    def sample(self, rng: np.random.Generator, size: int | None = None) -> float | np.ndarray:
        return 0.0 if size is None else np.zeros(size)

    @property
    def mean(self) -> float:
        return 0.0

    @property
    def std(self) -> float:
        return 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind}


@dataclass(frozen=True)
class ConstantLatency(LatencyModel):
    """A fixed delay; consumes no random draws.

    Args:
        delay: the delay, finite and >= 0.

    Raises:
        LinkModelError: if ``delay`` is negative, NaN or infinite.

    Example:
        >>> ConstantLatency(0.25).sample(np.random.default_rng(0), size=2)
        array([0.25, 0.25])
    """

    delay: float = 0.0
    kind: ClassVar[str] = "constant"

    def __post_init__(self) -> None:
        d = check_nonnegative(self.delay, "delay", error=LinkModelError, where="ConstantLatency")
        object.__setattr__(self, "delay", d)

    def sample(self, rng: np.random.Generator, size: int | None = None) -> float | np.ndarray:
        return self.delay if size is None else np.full(size, self.delay)

    @property
    def mean(self) -> float:
        return self.delay

    @property
    def std(self) -> float:
        return 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "delay": self.delay}


@dataclass(frozen=True)
class ExponentialLatency(LatencyModel):
    """Exponentially distributed delay, ``rng.exponential(mean)``.

    Args:
        mean: the expected delay, finite and > 0 (the standard deviation equals it).

    Raises:
        LinkModelError: if ``mean`` is <= 0, NaN or infinite.

    Example:
        >>> ExponentialLatency(2.0).std
        2.0
    """

    mean: float = 1.0  # type: ignore[assignment]
    kind: ClassVar[str] = "exponential"

    def __post_init__(self) -> None:
        m = check_positive(self.mean, "mean", error=LinkModelError, where="ExponentialLatency")
        object.__setattr__(self, "mean", m)

    def sample(self, rng: np.random.Generator, size: int | None = None) -> float | np.ndarray:
        return float(rng.exponential(self.mean)) if size is None else rng.exponential(self.mean, size)

    @property
    def std(self) -> float:
        return self.mean

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "mean": self.mean}


@dataclass(frozen=True)
class LogNormalLatency(LatencyModel):
    """Log-normal delay ``median * exp(sigma * Z)``, ``Z ~ N(0, 1)``.

    Parametrized by the **median** (``exp`` of the underlying normal's mean)
    and the underlying normal's standard deviation ``sigma``. Analytically
    ``mean = median * exp(sigma**2 / 2)`` and
    ``std = mean * sqrt(exp(sigma**2) - 1)``. Draws use
    ``rng.lognormal(log(median), sigma)``.

    Args:
        median: median delay, finite and > 0.
        sigma: log-scale standard deviation, finite and >= 0 (0 = constant ``median``).

    Raises:
        LinkModelError: if ``median`` <= 0 or ``sigma`` < 0, or either is NaN/inf.

    Example:
        >>> round(LogNormalLatency(1.0, 0.0).mean, 12)
        1.0
    """

    median: float = 1.0
    sigma: float = 0.5
    kind: ClassVar[str] = "lognormal"

    def __post_init__(self) -> None:
        m = check_positive(self.median, "median", error=LinkModelError, where="LogNormalLatency")
        s = check_nonnegative(self.sigma, "sigma", error=LinkModelError, where="LogNormalLatency")
        object.__setattr__(self, "median", m)
        object.__setattr__(self, "sigma", s)
        object.__setattr__(self, "_mu", math.log(m))  # not a field: no effect on eq, hash or repr

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, also from versions that did not store ``_mu``."""
        self.__dict__.update(state)
        if "_mu" not in state:
            object.__setattr__(self, "_mu", math.log(self.median))

    def sample(self, rng: np.random.Generator, size: int | None = None) -> float | np.ndarray:
        if size is None:
            return rng.lognormal(self._mu, self.sigma)  # a Python float
        return rng.lognormal(self._mu, self.sigma, size)

    @property
    def mean(self) -> float:
        return self.median * math.exp(self.sigma**2 / 2.0)

    @property
    def std(self) -> float:
        return self.mean * math.sqrt(math.expm1(self.sigma**2))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "median": self.median, "sigma": self.sigma}


@dataclass(frozen=True)
class CallableLatency(LatencyModel):
    """A user-supplied delay sampler ``fn(rng) -> float``, called once per delay.

    Every sampled delay is checked: a negative, NaN or infinite value raises
    :class:`LinkModelError` (a :class:`LinkChannel` adds the link to the message).
    ``fn`` must draw only from the ``rng`` it is given, so runs stay reproducible.

    Args:
        fn: the sampler.
        mean: the analytic mean, if known (reported by ``mean``; else None).
        std: the analytic standard deviation, if known.

    Raises:
        LinkModelError: if ``fn`` is not callable, or from ``sample`` on a bad delay.

    Example:
        >>> CallableLatency(lambda rng: 0.1 + rng.random()).sample(np.random.default_rng(0)) >= 0.1
        True
    """

    fn: Callable[[np.random.Generator], float]
    mean: float | None = None  # type: ignore[assignment]
    std: float | None = None  # type: ignore[assignment]
    kind: ClassVar[str] = "callable"

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise LinkModelError(f"CallableLatency: fn must be callable, got {self.fn!r}")
        for name in ("mean", "std"):
            v = getattr(self, name)
            if v is not None:
                v = check_nonnegative(v, name, error=LinkModelError, where="CallableLatency")
                object.__setattr__(self, name, v)

    def _one(self, rng: np.random.Generator) -> float:
        raw = self.fn(rng)
        try:
            d = float(raw)
        except (TypeError, ValueError):
            raise LinkModelError(f"CallableLatency: fn returned a non-number delay {raw!r}") from None
        if not (d >= 0.0 and math.isfinite(d)):
            raise LinkModelError(f"CallableLatency: fn returned an invalid delay {raw!r} (must be finite and >= 0)")
        return d

    def sample(self, rng: np.random.Generator, size: int | None = None) -> float | np.ndarray:
        if size is None:
            return self._one(rng)
        return np.array([self._one(rng) for _ in range(int(size))], dtype=float)

    def to_dict(self) -> dict[str, Any]:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        return {"kind": self.kind, "fn": name, "mean": self.mean, "std": self.std}


_LATENCY_KINDS: dict[str, type[LatencyModel]] = {
    "zero": ZeroLatency,
    "constant": ConstantLatency,
    "exponential": ExponentialLatency,
    "lognormal": LogNormalLatency,
}


def latency_from_dict(data: Mapping[str, Any]) -> LatencyModel:
    """Rebuild a built-in latency model from its ``to_dict()`` form.

    Args:
        data: ``{"kind": "zero" | "constant" | "exponential" | "lognormal", <parameters>}``.

    Returns:
        The latency model.

    Raises:
        LinkModelError: on an unknown kind (including ``"callable"``, which cannot
            be rebuilt from a description) or bad parameters.

    Example:
        >>> latency_from_dict({"kind": "exponential", "mean": 2.0})
        ExponentialLatency(mean=2.0)
    """
    if not isinstance(data, Mapping) or "kind" not in data:
        raise LinkModelError(f"latency description must be a mapping with a 'kind', got {data!r}")
    params = {k: v for k, v in data.items() if k != "kind"}
    kind = data["kind"]
    cls = _LATENCY_KINDS.get(kind)
    if cls is None:
        raise LinkModelError(f"unknown latency kind {kind!r}; known: {', '.join(_LATENCY_KINDS)}")
    try:
        return cls(**params)
    except TypeError as exc:
        raise LinkModelError(f"latency kind {kind!r}: bad parameters {params!r} ({exc})") from None


def _as_latency(value: Any) -> LatencyModel:
    if isinstance(value, LatencyModel):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return ZeroLatency() if float(value) == 0.0 else ConstantLatency(value)
    if callable(value):
        return CallableLatency(value)
    raise LinkModelError(f"LinkModel: latency must be a LatencyModel, a number or a callable, got {value!r}")


# --------------------------------------------------------------------------- link model


@dataclass(frozen=True)
class LinkModel:
    """Latency, loss and ordering of one directed link.

    Args:
        latency: a :class:`LatencyModel`; a number is shorthand for
            :class:`ConstantLatency` and a callable for :class:`CallableLatency`.
        loss: probability in [0, 1] that a message is lost.
        reorder: if False (default) the link is FIFO (no overtaking); if True
            delivery times are independent and later messages may overtake.

    Raises:
        LinkModelError: if ``loss`` is outside [0, 1] (or NaN), ``reorder`` is
            not a bool, or ``latency`` is invalid.

    Example:
        >>> LinkModel(ExponentialLatency(0.2), loss=0.1).to_dict()["loss"]
        0.1
    """

    latency: LatencyModel = field(default_factory=ZeroLatency)
    loss: float = 0.0
    reorder: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "latency", _as_latency(self.latency))
        loss = self.loss
        if isinstance(loss, bool) or not isinstance(loss, numbers.Real) or not 0.0 <= float(loss) <= 1.0:
            raise LinkModelError(f"LinkModel: loss must be a probability in [0, 1], got {loss!r}")
        object.__setattr__(self, "loss", float(loss))
        if not isinstance(self.reorder, (bool, np.bool_)):
            raise LinkModelError(f"LinkModel: reorder must be True or False, got {self.reorder!r}")
        object.__setattr__(self, "reorder", bool(self.reorder))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description: ``{"latency": {...}, "loss": p, "reorder": b}``."""
        return {"latency": self.latency.to_dict(), "loss": self.loss, "reorder": self.reorder}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinkModel:
        """Inverse of :meth:`to_dict` (missing keys take the defaults).

        Raises:
            LinkModelError: on unknown keys or invalid values.
        """
        if not isinstance(data, Mapping):
            raise LinkModelError(f"link model description must be a mapping, got {data!r}")
        unknown = set(data) - {"latency", "loss", "reorder"}
        if unknown:
            raise LinkModelError(f"link model: unknown keys {sorted(unknown)}")
        lat = data.get("latency", {"kind": "zero"})
        latency = latency_from_dict(lat) if isinstance(lat, Mapping) else lat
        return cls(latency=latency, loss=data.get("loss", 0.0), reorder=data.get("reorder", False))


def _link_key(key: Any) -> tuple[int, int]:
    if not isinstance(key, tuple) or len(key) != 2:
        raise LinkModelError(f"Links: override key must be a (sender, receiver) pair, got {key!r}")
    s = check_integer(key[0], f"sender of override link {key!r}", minimum=0, error=LinkModelError, where="Links")
    r = check_integer(key[1], f"receiver of override link {key!r}", minimum=0, error=LinkModelError, where="Links")
    if s == r:
        raise LinkModelError(f"Links: override link {key!r} is a self-loop; links join distinct nodes")
    return s, r


@dataclass(frozen=True)
class Links:
    """The link model of every directed link: a default plus per-link overrides.

    Args:
        default: model of every link without an override.
        overrides: ``{(sender, receiver): LinkModel}`` for specific links
            (values may also be ``to_dict()`` mappings).

    Raises:
        LinkModelError: if a key is not a pair of distinct nonnegative ints or
            a value is not a link model; a subclass that overrides :meth:`model`
            or :meth:`channel` (the batch engine, the privacy checker and
            ``asyncdp run`` read ``default`` and ``overrides``: a subclass's own
            per-link models ran in the SimPy engine only, so the two engines ran
            other networks on the same seed; give them as ``overrides``).

    Example:
        >>> links = Links(LinkModel(loss=0.1), {(0, 1): LinkModel(loss=0.5)})
        >>> links.model(0, 1).loss, links.model(1, 0).loss
        (0.5, 0.1)
    """

    default: LinkModel = field(default_factory=LinkModel)
    overrides: Mapping[tuple[int, int], LinkModel] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cls = type(self)
        own = [name for name in ("model", "channel") if getattr(cls, name) is not getattr(Links, name)]
        if own:
            raise LinkModelError(
                f"{cls.__name__}: a Links subclass may not override {' or '.join(own)}(): the engines read a "
                "network's link models from default and overrides only; give each link's own model as an override, "
                "e.g. Links(default, {(i, j): LinkModel(...) for i, j in links})")
        default = self.default
        if isinstance(default, Mapping):
            default = LinkModel.from_dict(default)
        if not isinstance(default, LinkModel):
            raise LinkModelError(f"Links: default must be a LinkModel, got {default!r}")
        if not isinstance(self.overrides, Mapping):
            raise LinkModelError(
                f"Links: overrides must be a mapping {{(sender, receiver): LinkModel}}, got {self.overrides!r}"
            )
        clean: dict[tuple[int, int], LinkModel] = {}
        for key, model in self.overrides.items():
            k = _link_key(key)
            if isinstance(model, Mapping):
                model = LinkModel.from_dict(model)
            if not isinstance(model, LinkModel):
                raise LinkModelError(f"Links: override for link {k[0]} -> {k[1]} must be a LinkModel, got {model!r}")
            if k in clean:
                raise LinkModelError(f"Links: link {k[0]} -> {k[1]} is overridden twice")
            clean[k] = model
        object.__setattr__(self, "default", default)
        object.__setattr__(self, "overrides", MappingProxyType(dict(sorted(clean.items()))))

    def __hash__(self) -> int:
        return hash((self.default, tuple(self.overrides.items())))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Links):
            return NotImplemented
        return self.default == other.default and dict(self.overrides) == dict(other.overrides)

    def model(self, sender: int, receiver: int) -> LinkModel:
        """The model of link ``sender -> receiver``.

        Example:
            >>> Links().model(0, 1) == LinkModel()
            True
        """
        return self.overrides.get((int(sender), int(receiver)), self.default)

    def validate(self, num_nodes: int) -> None:
        """Check every override names a link between nodes ``0..num_nodes-1``.

        Raises:
            LinkModelError: naming the first override link outside the network.
        """
        if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)) or num_nodes < 1:
            raise LinkModelError(f"Links.validate: num_nodes must be a positive integer, got {num_nodes!r}")
        for s, r in self.overrides:
            if s >= num_nodes or r >= num_nodes:
                raise LinkModelError(
                    f"Links: override link {s} -> {r} names a node outside 0..{int(num_nodes) - 1} "
                    f"(the network has {int(num_nodes)} nodes)"
                )

    def channel(self, seed: int, sender: int, receiver: int) -> LinkChannel:
        """A fresh :class:`LinkChannel` for ``sender -> receiver`` on :func:`link_rng`."""
        return LinkChannel(self.model(sender, receiver), link_rng(seed, sender, receiver), link=(sender, receiver))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description; overrides are a list of ``{"link": [s, r], **model}``."""
        return {
            "default": self.default.to_dict(),
            "overrides": [{"link": [s, r], **m.to_dict()} for (s, r), m in self.overrides.items()],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Links:
        """Inverse of :meth:`to_dict`.

        Raises:
            LinkModelError: on a malformed description.
        """
        if not isinstance(data, Mapping):
            raise LinkModelError(f"links description must be a mapping, got {data!r}")
        overrides: dict[tuple[int, int], LinkModel] = {}
        for entry in data.get("overrides", []):
            if not isinstance(entry, Mapping) or "link" not in entry:
                raise LinkModelError(f"links override must be a mapping with a 'link', got {entry!r}")
            link = entry["link"]
            key = _link_key(tuple(link) if isinstance(link, (list, tuple)) else link)
            if key in overrides:
                raise LinkModelError(f"Links: link {key[0]} -> {key[1]} is overridden twice")
            overrides[key] = LinkModel.from_dict({k: v for k, v in entry.items() if k != "link"})
        return cls(LinkModel.from_dict(data.get("default", {})), overrides)


# --------------------------------------------------------------------------- sampling


def link_rng(seed: int, sender: int, receiver: int) -> np.random.Generator:
    """The random generator of link ``sender -> receiver``.

    Exactly ``numpy.random.default_rng(numpy.random.SeedSequence(seed, spawn_key=(1, sender, receiver)))``.

    Raises:
        LinkModelError: if ``seed``, ``sender`` or ``receiver`` is not a nonnegative int.

    Example:
        >>> link_rng(5, 0, 1).random() == link_rng(5, 0, 1).random()
        True
    """
    seed = check_integer(seed, "seed", minimum=0, error=LinkModelError, where="link_rng")
    s = check_integer(sender, "sender", minimum=0, error=LinkModelError, where="link_rng")
    r = check_integer(receiver, "receiver", minimum=0, error=LinkModelError, where="link_rng")
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(LINK_STREAM_KEY, s, r)))


class LinkChannel:
    """Per-link message sampler (the engine holds one per directed link).

    Per message the draws are, in this order and always both: a uniform for
    loss (lost iff ``u < loss``), then one latency sample. With
    ``reorder=False`` delivery is FIFO: ``max(send_time + latency, last
    delivery time on this link)`` (lost messages do not affect the order of
    later ones); with ``reorder=True`` it is ``send_time + latency``.

    Args:
        model: the link's model.
        rng: the link's generator (normally :func:`link_rng`).
        link: ``(sender, receiver)``, used in error messages only.

    Attributes:
        sent, lost: messages transmitted and lost so far.
        last_delivery: latest delivery time so far (``-inf`` before the first).

    Example:
        >>> ch = LinkChannel(LinkModel(loss=1.0), link_rng(0, 1, 2))
        >>> ch.transmit(0.0) is None
        True
    """

    __slots__ = ("model", "rng", "link", "sent", "lost", "last_delivery", "_loss", "_fifo", "_sample")

    def __init__(self, model: LinkModel, rng: np.random.Generator, link: tuple[int, int] | None = None) -> None:
        if not isinstance(model, LinkModel):
            raise LinkModelError(f"LinkChannel: model must be a LinkModel, got {model!r}")
        if not isinstance(rng, np.random.Generator):
            raise LinkModelError(f"LinkChannel: rng must be a numpy.random.Generator, got {rng!r}")
        self.model = model
        self.rng = rng
        self.link = link
        self.sent = 0
        self.lost = 0
        self.last_delivery = -math.inf
        self._loss = model.loss
        self._fifo = not model.reorder
        self._sample = model.latency.sample

    def _name(self) -> str:
        return "link" if self.link is None else f"link {self.link[0]} -> {self.link[1]}"

    def draw(self) -> tuple[bool, float]:
        """The raw draws of one message: ``(lost, latency)``; no FIFO, no counters.

        Example:
            >>> LinkChannel(LinkModel(ConstantLatency(2.0)), link_rng(0, 0, 1)).draw()
            (False, 2.0)
        """
        rng = self.rng
        lost = rng.random() < self._loss  # a Python bool
        try:
            delay = float(self._sample(rng))  # a user model may return a numpy scalar (e.g. float32)
        except LinkModelError as exc:
            raise LinkModelError(f"{self._name()}: {exc}") from exc
        if not 0.0 <= delay < math.inf:
            checked_delays(self.model.latency, [delay], 1, self._name())
        return lost, delay

    def draws(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The raw draws of the next ``count`` messages: exactly ``count`` calls of :meth:`draw`, as arrays.

        The stream ends where ``count`` calls of :meth:`draw` leave it, and the
        values are those calls' to the bit. A link whose latency consumes no
        draws (:class:`ZeroLatency`, :class:`ConstantLatency`) draws the loss
        uniforms as one array (``rng.random(count)`` is ``count`` calls of
        ``rng.random()``); any other model, a subclass of those two included
        (its ``sample`` may draw), is drawn message by message
        (ziggurat samplers use a variable number of raw draws, so the
        interleaved loss and latency draws cannot be split into two arrays).
        No FIFO, no counters (as :meth:`draw`).

        Args:
            count: number of messages, >= 0.

        Returns:
            ``(lost, latency)``: a bool array and a float array of length ``count``.

        Raises:
            LinkModelError: a bad ``count``, or an invalid sampled delay.

        Example:
            >>> model = LinkModel(ExponentialLatency(0.5), loss=0.5)
            >>> lost, delay = LinkChannel(model, link_rng(0, 0, 1)).draws(3)
            >>> one = LinkChannel(model, link_rng(0, 0, 1))
            >>> list(zip(lost.tolist(), delay.tolist())) == [one.draw() for _ in range(3)]
            True
        """
        if type(count) is not int or count < 0:
            count = check_integer(count, "count", minimum=0, error=LinkModelError, where="LinkChannel.draws")
        rng, latency = self.rng, self.model.latency
        if type(latency) in (ZeroLatency, ConstantLatency):  # a subclass may draw: message by message below
            lost = rng.random(count) < self._loss
            return lost, np.asarray(latency.sample(rng, count), dtype=float)
        # the loop of draw(), unrolled: the same draws in the same order (built-in models call the
        # generator's method their sample() calls, with the same arguments)
        if type(latency) is ExponentialLatency:
            one = functools.partial(rng.exponential, latency.mean)
        elif type(latency) is LogNormalLatency:
            one = functools.partial(rng.lognormal, latency._mu, latency.sigma)  # type: ignore[attr-defined]
        else:
            one = functools.partial(self._sample, rng)
        uniform = rng.random
        try:
            pairs = np.array([(uniform(), one()) for _ in range(count)], dtype=float).reshape(count, 2)
        except LinkModelError as exc:
            raise LinkModelError(f"{self._name()}: {exc}") from exc
        return pairs[:, 0] < self._loss, checked_delays(latency, pairs[:, 1].copy(), count, self._name())

    def transmit(self, send_time: float) -> float | None:
        """Send one message at ``send_time``.

        Args:
            send_time: simulated time the message leaves the sender (finite).

        Returns:
            The delivery time, or None if the message is lost.

        Raises:
            LinkModelError: on a non-finite ``send_time`` or an invalid sampled delay.

        Example:
            >>> ch = LinkChannel(LinkModel(ConstantLatency(1.0)), link_rng(0, 0, 1))
            >>> ch.transmit(0.0), ch.transmit(0.5)
            (1.0, 1.5)
        """
        t = float(send_time)
        if not math.isfinite(t):
            raise LinkModelError(f"{self._name()}: send_time must be finite, got {send_time!r}")
        lost, delay = self.draw()
        self.sent += 1
        if lost:
            self.lost += 1
            return None
        deliver = t + delay
        if self._fifo and deliver < self.last_delivery:
            deliver = self.last_delivery
        if deliver > self.last_delivery:
            self.last_delivery = deliver
        return deliver

    def __repr__(self) -> str:
        return f"LinkChannel({self.model!r}, link={self.link!r}, sent={self.sent}, lost={self.lost})"
