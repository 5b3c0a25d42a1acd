"""A timed batch's plan: the scenario's rounds, messages and links as index arrays, shared by every run.

``_Plan`` numbers the messages round by round, in the CSR order of each
round's weight matrix, and finds the distinct links ``(sender, receiver)``
by one stable sort of the messages' keys (``_stable_order``, radix passes
of 16 bits); ``_Rounds`` gives a round's weight entries without holding any
per-entry array twice. No Python object is made per link, so a plan costs a
few numbers per message (:mod:`asyncdp.engine.batch_deadline` runs the
batch on it; ``asyncdp.engine.batch_levels`` reads it too).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import scipy.sparse as sp

from .schedule import check_rows_nonempty


_BLOCK = 1 << 20
"""Messages per block where a large run computes message-sized temporaries block by block (memory)."""


def _stable_order(key: Any, bits: int, dtype: Any = np.int64, size: int | None = None) -> np.ndarray:
    """The stable sorting permutation of nonnegative int64 ``key`` < ``2**bits``: LSD radix passes of 16 bits.

    numpy sorts 16-bit integers stably by radix sort (linear time), so each
    pass is linear; ties keep their index order. The permutation is returned
    as ``dtype`` (32 bits keep a large plan's memory down). ``key`` may also be
    a function of an index array or slice returning those keys (then ``size``
    is the number of keys): the keys are then computed block by block and
    never held whole.
    """
    key_of = key if callable(key) else key.__getitem__
    size = key.size if size is None else size
    digit = np.empty(size, dtype=np.uint16)
    order = None  # the identity before the first pass (its digits need no gather)
    for shift in range(0, max(bits, 1), 16):
        for lo in range(0, size, _BLOCK):  # in blocks: no key-sized 64-bit temporaries
            part = key_of(slice(lo, lo + _BLOCK) if order is None else order[lo:lo + _BLOCK])
            digit[lo:lo + _BLOCK] = (part >> shift) & 0xFFFF
        step = np.argsort(digit, kind="stable")
        order = step.astype(dtype) if order is None else order[step]
        del step
    return order if order is not None else np.arange(size, dtype=dtype)


class _Rounds:
    """Per round ``(indptr, rows, cols, data, entry_msg)``: the round's weight entries in CSR order.

    ``rows``/``cols`` are each entry's receiver and sender, ``data`` its weight and ``entry_msg`` its
    message number (-1 on the diagonal). Only ``indptr`` (``N + 1`` per round) is the plan's own: ``cols``
    and ``data`` are the round's weight matrix's arrays (not copied), and ``rows`` and ``entry_msg`` are
    recomputed from them when a round is asked for (the last round asked for is kept), so a large plan
    holds no per-entry array twice (the messages' senders and receivers are the plan's ``m_send`` and
    ``m_recv``).
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []  # (indptr, cols, data, first message)
        self.last: tuple[int, tuple] | None = None

    def __len__(self) -> int:
        return len(self.parts)

    def __getitem__(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        k = range(len(self.parts))[k]
        if self.last is not None and self.last[0] == k:
            return self.last[1]
        indptr, cols, data, start = self.parts[k]
        rows = np.repeat(np.arange(self.n, dtype=cols.dtype), np.diff(indptr))
        edge = rows != cols
        count = int(np.count_nonzero(edge))
        mtype = np.int32 if start + count < 2**31 - 1 else np.int64
        entry_msg = np.full(cols.size, -1, dtype=mtype)
        entry_msg[edge] = np.arange(start, start + count, dtype=mtype)
        out = (indptr, rows, cols, data, entry_msg)
        self.last = (k, out)
        return out


class _Plan:
    """The scenario's rounds as index arrays (shared by every run), with no per-link Python object.

    Messages are numbered round by round, in CSR order of the round's
    off-diagonal entries (``m_*`` arrays, length ``M``); links are the
    distinct ``(sender, receiver)`` pairs, sorted (``link_*`` arrays, length
    ``L``). The link models are the default's, and the few overridden links
    are found by a binary search among the sorted links: per-link arrays of
    loss and FIFO flags, and per latency model the messages it draws for.
    """

    def __init__(self, scenario: Any) -> None:
        n, horizon = scenario.problem.num_agents, scenario.horizon
        self.N, self.T = n, horizon
        self.rounds = _Rounds(n)  # per round: (indptr, rows, cols, data, entry_msg); agent indices in 32 bits
        m_send, m_recv = [], []
        count = 0
        self.round_start = np.zeros(horizon + 1, dtype=np.int64)  # message offset of round t at [t - 1]
        atype = np.int32 if n < 2**31 - 1 else np.int64
        for t in range(1, horizon + 1):
            w = sp.csr_array(scenario.topology.weights(t))
            check_rows_nonempty(w, t)
            indptr = w.indptr.astype(np.int64)
            cols = w.indices.astype(atype, copy=False)  # the matrix's own arrays where the dtypes agree
            data = np.asarray(w.data, dtype=float)
            del w
            rows = np.repeat(np.arange(n, dtype=atype), np.diff(indptr))
            edge = rows != cols
            k = int(np.count_nonzero(edge))
            self.round_start[t - 1] = count
            m_send.append(cols[edge])
            m_recv.append(rows[edge])
            del rows, edge
            self.rounds.parts.append((indptr, cols, data, count))
            count += k
        self.round_start[horizon] = count
        self.M = count
        # message-sized and link-sized arrays in 32 bits where the numbers fit (memory of large runs)
        small = max(self.M, n * (horizon + 1)) < 2**31 - 1
        itype = np.int32 if small else np.int64
        rtype = np.int16 if horizon < 2**15 - 2 else itype  # rounds (and T + 1) in 16 bits: cast before products
        self.m_round = np.repeat(np.arange(1, horizon + 1, dtype=rtype), np.diff(self.round_start))
        self.m_send = np.concatenate(m_send).astype(itype, copy=False) if m_send else np.zeros(0, dtype=itype)
        del m_send
        self.m_recv = np.concatenate(m_recv).astype(itype, copy=False) if m_recv else np.zeros(0, dtype=itype)
        del m_recv
        # links: the distinct (sender, receiver) keys, by one stable sort of the messages' keys (least significant
        # 16 bits first, each pass a radix sort): each link's messages end up together, in message (= round) order
        def key(at: Any) -> np.ndarray:  # the (sender, receiver) keys of some messages, never held for all
            return self.m_send[at].astype(np.int64) * n + self.m_recv[at]

        order = _stable_order(key, max(n * n - 1, 0).bit_length(), itype, size=self.M)
        first = np.ones(self.M, dtype=bool)  # a link's first message in the sorted order
        for lo in range(0, self.M, _BLOCK):  # blocks overlapping by one message
            part = key(order[lo:lo + _BLOCK + 1])
            first[lo + 1:lo + part.size] = part[1:] != part[:-1]
        starts = np.flatnonzero(first)
        del first
        self.L = starts.size
        # per link, its messages in round order: link_order[link_start[l]:link_start[l + 1]]
        self.link_order = order
        self.link_start = np.empty(self.L + 1, dtype=itype)
        self.link_start[:-1], self.link_start[-1] = starts, self.M
        del starts
        self.kmax = int(self.link_count.max(initial=0))
        # link models: the default everywhere, then the overridden links (Links.overrides order)
        links = scenario.links
        self.default = links.default
        self.link_fifo = np.full(self.L, not links.default.reorder, dtype=bool)
        self.override_links: list[tuple[int, Any]] = []  # (link index, model) of each overridden link in use
        if links.overrides:
            uniq = key(order[self.link_start[:-1]])  # the links' keys, sorted
            keys = np.array([s * n + r for s, r in links.overrides], dtype=np.int64)
            at = np.minimum(np.searchsorted(uniq, keys), max(self.L - 1, 0))
            found = (uniq[at] == keys) if self.L else np.zeros(keys.size, dtype=bool)
            for k, model, hit in zip(at.tolist(), links.overrides.values(), found.tolist()):
                if hit:
                    self.link_fifo[k] = not model.reorder
                    self.override_links.append((k, model))
        groups = [(links.default, None)]
        if self.override_links:
            overridden = np.zeros(self.L, dtype=bool)
            overridden[[k for k, _ in self.override_links]] = True
            groups = [(links.default, np.flatnonzero(~overridden[self.m_link]))]
            groups += [(model, self.messages_of(k)) for k, model in self.override_links]
        # per latency model, the messages it draws for (None: every message)
        self.groups = [(m, idx) for m, idx in groups if idx is None or idx.size]

    @property
    def link_count(self) -> np.ndarray:
        """Each link's number of messages (computed when asked for: a large plan does not hold it)."""
        return np.diff(self.link_start)

    @functools.cached_property
    def m_link(self) -> np.ndarray:
        """Each message's link; computed when first asked for (deadline timing without link overrides or stale
        messages never needs it, and a large plan saves its 4 bytes per message)."""
        m_link = np.empty(self.M, dtype=self.link_order.dtype)
        m_link[self.link_order] = np.repeat(np.arange(self.L, dtype=self.link_order.dtype), self.link_count)
        return m_link

    @property
    def link_send(self) -> np.ndarray:
        """Each link's sender."""
        return self.m_send[self.link_order[self.link_start[:-1]]]

    @property
    def link_recv(self) -> np.ndarray:
        """Each link's receiver."""
        return self.m_recv[self.link_order[self.link_start[:-1]]]

    @property
    def link_loss(self) -> np.ndarray:
        """Each link's loss probability."""
        loss = np.full(self.L, float(self.default.loss))
        for k, model in self.override_links:
            loss[k] = model.loss
        return loss

    def lossy(self) -> bool:
        """Whether some link in use loses messages."""
        return self.default.loss > 0 and len(self.override_links) < self.L or any(
            m.loss > 0 for _, m in self.override_links)

    def messages_of(self, k: int) -> np.ndarray:
        """Link ``k``'s messages, in round order."""
        return self.link_order[self.link_start[k]:self.link_start[k + 1]]

    def at_position(self, p: int, links: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(links, messages)``: the ``p``-th message (0-based, round order) of each link with more than ``p``.

        Args:
            p: the position.
            links: restrict to these links (sorted), or all.
        """
        if links is None:
            have = np.flatnonzero(self.link_count > p)
        else:
            have = links[self.link_start[links + 1] - self.link_start[links] > p]
        return have, self.link_order[self.link_start[have] + p]

    def model(self, k: int) -> Any:
        """Link ``k``'s :class:`~asyncdp.engine.links.LinkModel`."""
        for j, model in self.override_links:
            if j == k:
                return model
        return self.default

    def msg_loss(self) -> np.ndarray | float:
        """Each message's loss probability (a float when every link has the default's)."""
        if not self.override_links:
            return float(self.default.loss)
        return self.link_loss[self.m_link]

    def link_round_msg(self) -> np.ndarray:
        """``(L, T + 1)``: the message of link ``l`` in round ``t`` at ``[l, t]``, or -1."""
        table = np.full((self.L, self.T + 1), -1, dtype=np.int64)
        table[self.m_link, self.m_round] = np.arange(self.M)
        return table
