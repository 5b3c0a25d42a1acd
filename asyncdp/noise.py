"""Noise sources and the documented random-stream layout of a run.

One integer ``seed`` determines every random draw of a scenario through
``numpy.random.SeedSequence(seed, spawn_key=KEY)``; each stream is a
``numpy.random.default_rng`` (PCG64) on its own key:

==========================  ==================================================
spawn key                   stream
==========================  ==================================================
``(0, t, c)``               privacy noise of round ``t``, channel ``c``
                            (broadcast): one block of shape ``(N, n)`` (or
                            ``(R, N, n)`` for ``R`` runs at once); agent ``i``
                            uses row ``i``
``(0, t, c, 1 + i)``        unicast noise of sender ``i`` in round ``t``: a block
                            of shape ``(N, n)``, row ``j`` for receiver ``j``
``(1, i, j)``               link ``i -> j``: loss and latency
``(2, i)``                  agent ``i``'s clock (drift, jitter, wake times)
``(3,)``                    reserved for random initial states (no
                            engine draws from it: ``x0`` is given or
                            ``Proj_X(0)``)
``(4, 0)``                  data sets: the split permutation of all samples
``(4, 1, e)``               data sets: the batch order of epoch ``e``
                            (:mod:`asyncdp.problems.datasets`)
``(5, t, i)``               DP-SDA's sampled-gradient noise of agent ``i`` in
                            round ``t`` (seeded by the algorithm's
                            ``xi_seed``; :mod:`asyncdp.papers.dpsda.rule`)
``(6, r)``                  batch engine, run ``r >= 1`` of a batch: all its
                            clock and link draws, as arrays (drifts and
                            jitters, or the async waits; the loss uniforms of
                            all messages; the latencies per link model). Run
                            0 uses ``(1, i, j)`` and ``(2, i)`` in the SimPy
                            layout (default for small runs: a one-run batch
                            is the SimPy run), or ``(6, 0)`` in the
                            vectorized layout of large runs (no generator per
                            link; ``layout=`` of the batch engine, chosen
                            automatically above 10^5 links, with a warning;
                            :mod:`asyncdp.engine.batch_draws`)
==========================  ==================================================

Every stream's first key is listed once, in :data:`STREAM_KEYS` below; the
modules that draw from a stream import their key from here, and a test checks
that no two streams share a key.

Because privacy noise is keyed by round and channel only, changing link
latencies, losses or clocks never changes the noise drawn; because it is
keyed by round, agents that run asynchronously still draw the same noise for
the same round. Tests inject fixed noise with :class:`InjectedNoise`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

import numpy as np

from .errors import NoiseError

__all__ = [
    "DISTRIBUTIONS",
    "NoiseSource",
    "SeededNoise",
    "InjectedNoise",
    "ZeroNoise",
    "engine_noise",
    "stream",
    "NOISE_KEY",
    "LINK_KEY",
    "CLOCK_KEY",
    "INIT_KEY",
    "DATA_KEY",
    "GRADIENT_NOISE_KEY",
    "BATCH_RUN_KEY",
    "STREAM_KEYS",
]

STREAM_KEYS: Mapping[str, int] = {
    "noise": 0,
    "link": 1,
    "clock": 2,
    "init": 3,
    "data": 4,
    "gradient_noise": 5,
    "batch_run": 6,
}
"""The first ``spawn_key`` entry of every random stream of a run (one entry per stream)."""

NOISE_KEY = STREAM_KEYS["noise"]
LINK_KEY = STREAM_KEYS["link"]
CLOCK_KEY = STREAM_KEYS["clock"]
INIT_KEY = STREAM_KEYS["init"]
DATA_KEY = STREAM_KEYS["data"]
GRADIENT_NOISE_KEY = STREAM_KEYS["gradient_noise"]
BATCH_RUN_KEY = STREAM_KEYS["batch_run"]

DISTRIBUTIONS = ("laplace", "gaussian")
"""Standard noise distributions: Laplace(0, 1) and N(0, 1), scaled by the algorithm."""


def stream(seed: int, *key: int) -> np.random.Generator:
    """The generator of one stream of the layout above.

    Example:
        >>> float(stream(7, 1, 0, 1).random()) == float(stream(7, 1, 0, 1).random())
        True
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)))


def _draw(rng: np.random.Generator, distribution: str, shape: tuple[int, ...]) -> np.ndarray:
    if distribution == "laplace":
        return rng.laplace(0.0, 1.0, size=shape)
    if distribution == "gaussian":
        return rng.standard_normal(size=shape)
    raise NoiseError(f"unknown noise distribution {distribution!r}; known: {', '.join(DISTRIBUTIONS)}")


class NoiseSource(ABC):
    """Supplies *standard* noise (Laplace(0,1) or N(0,1)); algorithms scale it."""

    @abstractmethod
    def broadcast(self, t: int, channel: int, distribution: str, shape: tuple[int, ...]) -> np.ndarray:
        """Round ``t``'s block for all agents: ``shape`` is ``(N, n)`` or ``(R, N, n)``."""

    @abstractmethod
    def unicast(self, t: int, channel: int, distribution: str, sender: int, shape: tuple[int, ...]) -> np.ndarray:
        """Sender ``sender``'s per-receiver block in round ``t``: ``shape`` is ``(N, n)``."""


class SeededNoise(NoiseSource):
    """Noise drawn from the seed layout of this module.

    Args:
        seed: the scenario seed (a nonnegative integer).

    Example:
        >>> a = SeededNoise(3).broadcast(1, 0, "laplace", (2, 2))
        >>> bool((a == SeededNoise(3).broadcast(1, 0, "laplace", (2, 2))).all())
        True
    """

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise NoiseError(f"seed must be a nonnegative integer, got {seed!r}")
        self.seed = int(seed)

    def broadcast(self, t: int, channel: int, distribution: str, shape: tuple[int, ...]) -> np.ndarray:
        return _draw(stream(self.seed, NOISE_KEY, t, channel), distribution, shape)

    def unicast(self, t: int, channel: int, distribution: str, sender: int, shape: tuple[int, ...]) -> np.ndarray:
        return _draw(stream(self.seed, NOISE_KEY, t, channel, 1 + sender), distribution, shape)


class ZeroNoise(NoiseSource):
    """All-zero standard noise (useful to compare against a noise-free recursion)."""

    def broadcast(self, t: int, channel: int, distribution: str, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape)

    def unicast(self, t: int, channel: int, distribution: str, sender: int, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape)


class InjectedNoise(NoiseSource):
    """Fixed, user-supplied standard noise.

    Args:
        broadcast: per channel index, an array of shape ``(T, *block)``: entry
            ``t - 1`` is round ``t``'s block.
        unicast: per channel index, an array of shape ``(T, N, N, n)``:
            ``[t - 1, i, j]`` is what sender ``i`` adds for receiver ``j``.

    Raises:
        NoiseError: on a round beyond the injected arrays or a shape mismatch.
    """

    def __init__(
        self,
        broadcast: Mapping[int, np.ndarray] | None = None,
        unicast: Mapping[int, np.ndarray] | None = None,
    ) -> None:
        self._b = {int(k): np.asarray(v, dtype=float) for k, v in (broadcast or {}).items()}
        self._u = {int(k): np.asarray(v, dtype=float) for k, v in (unicast or {}).items()}

    @staticmethod
    def _take(store: dict[int, np.ndarray], channel: int, t: int, what: str) -> np.ndarray:
        if channel not in store:
            raise NoiseError(f"no injected {what} noise for channel {channel}")
        arr = store[channel]
        if not 1 <= t <= arr.shape[0]:
            raise NoiseError(f"injected {what} noise for channel {channel} covers rounds 1..{arr.shape[0]}, not {t}")
        return arr[t - 1]

    def broadcast(self, t: int, channel: int, distribution: str, shape: tuple[int, ...]) -> np.ndarray:
        block = self._take(self._b, channel, t, "broadcast")
        if block.shape != tuple(shape):
            raise NoiseError(f"round {t}: injected noise block has shape {block.shape}, expected {tuple(shape)}")
        return block

    def unicast(self, t: int, channel: int, distribution: str, sender: int, shape: tuple[int, ...]) -> np.ndarray:
        block = self._take(self._u, channel, t, "unicast")[sender]
        if block.shape != tuple(shape):
            raise NoiseError(f"round {t}, sender {sender}: injected block has shape {block.shape}, expected {tuple(shape)}")
        return block


class _ShapeChecked(NoiseSource):
    """A user's noise source whose every block is checked to have the shape the engine asked for.

    Without the check numpy broadcasting hid a wrong block: an ``(N, n)`` block
    returned for ``(R, N, n)`` gave every batch run the same noise, silently.
    """

    def __init__(self, base: NoiseSource) -> None:
        self.base = base

    def _checked(self, block: object, shape: tuple[int, ...], where: str) -> np.ndarray:
        try:
            arr = np.asarray(block, dtype=float)
        except (TypeError, ValueError) as exc:
            raise NoiseError(f"noise source {type(self.base).__name__}: {where}: the block is not an array of "
                             f"numbers ({exc})") from None
        if arr.shape != tuple(shape):
            raise NoiseError(f"noise source {type(self.base).__name__}: {where}: returned a block of shape "
                             f"{arr.shape}, expected {tuple(shape)}")
        return arr

    def broadcast(self, t: int, channel: int, distribution: str, shape: tuple[int, ...]) -> np.ndarray:
        return self._checked(self.base.broadcast(t, channel, distribution, shape), shape,
                             f"broadcast(round {t}, channel {channel})")

    def unicast(self, t: int, channel: int, distribution: str, sender: int, shape: tuple[int, ...]) -> np.ndarray:
        return self._checked(self.base.unicast(t, channel, distribution, sender, shape), shape,
                             f"unicast(round {t}, channel {channel}, sender {sender})")


def engine_noise(noise: NoiseSource | None, seed: int) -> NoiseSource:
    """The noise source an engine draws from: ``SeededNoise(seed)`` for ``None``, else ``noise``.

    A source of another type than this module's is wrapped so that each block
    it returns is checked to be a float array of exactly the requested shape
    (``(N, n)`` for one run, ``(R, N, n)`` for ``R`` runs of the batch engine).

    Raises:
        NoiseError: (when drawing) a block of another shape, naming the source, round, channel and sender.

    Example:
        >>> class Flat(NoiseSource):  # forgets the batch's run axis
        ...     def broadcast(self, t, channel, distribution, shape): return np.zeros(shape[-2:])
        ...     def unicast(self, t, channel, distribution, sender, shape): return np.zeros(shape[-2:])
        >>> engine_noise(Flat(), 0).broadcast(1, 0, "laplace", (3, 2, 1))
        Traceback (most recent call last):
        ...
        asyncdp.errors.NoiseError: noise source Flat: broadcast(round 1, channel 0): returned a block of shape (2, 1), expected (3, 2, 1)
    """
    if noise is None:
        return SeededNoise(seed)
    if type(noise) in (SeededNoise, ZeroNoise, InjectedNoise):  # shapes are theirs by construction or checked
        return noise
    return _ShapeChecked(noise)
