"""A round every run of a batch shares: its combinations computed per sender column (or per layer of senders)
with the runs innermost, without the general path's gather (:class:`SharedRound`), and the rounds kept by value
for the next replays (:func:`shared_round`)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .errors import AccountingError

__all__ = ["SharedRound", "shared_round"]


class SharedRound:
    """One round's ``(W, S)`` shared by every run of a batch (``(N, N)`` each), prepared for the replay's
    combinations (a :class:`~accounting.replay_inputs.ScheduleBatch` with ``shared_round(t)``; e.g. lockstep
    runs on lossless links).

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


_SHARED_KEPT: dict[bytes, tuple[SharedRound, int]] = {}
"""The last :class:`SharedRound` objects made by :func:`shared_round`, by their ``(W, S)``, with their sizes in
bytes (key included)."""


_SHARED_KEPT_BYTES = 64 << 20
"""At most this many bytes of :data:`_SHARED_KEPT` (the oldest go first); a round of more than an eighth of it
(about ``N >= 450`` agents) is made but not kept."""


_SHARED_SIZE = {"bytes": 0}


_SHARED_LOCK = threading.Lock()


def _one_round(w: np.ndarray, src: np.ndarray) -> bool:
    """Whether every run of round ``(W, S)`` ``(R, N, N)`` has the first run's weights and sender rounds.

    The second run is compared first: runs that combine differently (asynchronous timing, lossy links) usually
    differ there, and then the whole round is not compared (the same answer: a NaN weight equals nothing either way).

    Example:
        >>> w, src = np.full((3, 2, 2), 0.5), np.ones((3, 2, 2), dtype=np.int64)
        >>> _one_round(w, src), _one_round(w, np.concatenate([src[:2], 2 * src[2:]]))
        (True, False)
    """
    if len(src) > 1 and not (np.array_equal(src[1], src[0]) and np.array_equal(w[1], w[0])):
        return False
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
