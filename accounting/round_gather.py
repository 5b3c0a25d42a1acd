"""The general path's gather: for one round, the other agents' messages each receiver combines, read from the
transcript by the round's sender rounds (``out[r, i, j] = y[r, S[r, i, j] - 1, j]``), with the index arrays a
batch of schedules may keep (:func:`gather_index`), also for stacked copies of its runs
(:func:`tiled_gather_index`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import AccountingError

__all__ = ["gather_index", "tiled_gather_index"]


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
