"""A plain-data description of a linear gossip protocol on a realized schedule.

The model (scalar state per agent; vector data factorizes, see
:mod:`.gaussian_views`):

* ``x(0) = data``, the private inputs (agent ``u``'s input changes by the sensitivity under adjacency);
* round ``t = 1..T``: every agent ``j`` releases the message
  ``y_j(t) = x_j(t-1) + noise_scale[t-1, j] * xi_j(t)``, ``xi`` i.i.d. ``N(0, 1)``
  (a scale of 0 releases the state as is; one positive scale per agent and
  round is one noise injection, so noise once at the start, or at every
  step, are both covered);
* then every receiver ``i`` combines messages:
  ``x_i(t) = state_weight[t-1, i] * x_i(t-1) + sum of weight * y_sender(sender_round)``
  over the schedule's entries ``(t, i, sender, weight, sender_round)``,
  ``sender_round <= t``; ``state_weight`` (default 0) is the weight on the
  agent's own *noise-free* previous state, for rules that keep it rather than
  their noisy message.
  An agent's own term is an entry with ``sender == receiver`` (its own message
  of that round, or an older one: the Chebyshev recursion
  ``x(t) = gamma W x(t-1) + (1 - gamma) x(t-2)`` is the self entry of
  ``sender_round = t - 1`` with weight ``1 - gamma``).

This is the layout of a realized schedule (one entry per round, receiver and
sender, with the weight applied and the round of the message used), so a
simulator can convert its own record entry by entry. The schedule is data
independent: it is drawn from link and clock randomness only, and the
observer sees it.

Every message is affine in ``(data, xi)``: ``y = D data + N xi``.
:func:`message_maps` computes ``D`` and ``N`` round by round (dense, ``n T``
messages by ``n + #noise`` columns: meant for small and medium ``n``; the
synchronous fixed-graph case at ``n = 2048`` has a streaming path in
:mod:`.muffliato`).

Example:
    >>> import numpy as np
    >>> s = LinearSchedule.from_mixing([np.full((2, 2), 0.5)] * 2, noise_scale=[[1.0, 1.0], [0.0, 0.0]])
    >>> d, n, msgs = message_maps(s)
    >>> msgs, d.tolist(), n.tolist()
    ([(1, 0), (1, 1), (2, 0), (2, 1)], [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.5, 0.5]], \
[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.5, 0.5]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import AccountingError

__all__ = ["ScheduleError", "LinearSchedule", "message_maps"]


class ScheduleError(AccountingError):
    """A malformed linear schedule: bad shapes, an agent or round out of range, a non-finite weight."""


def _int_column(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ScheduleError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ScheduleError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


@dataclass(frozen=True, eq=False)
class LinearSchedule:
    """The realized combinations of one synchronous or asynchronous linear gossip run (module docstring).

    Args:
        num_agents: ``n`` >= 1.
        noise_scale: shape ``(T, n)``: the standard deviation of the noise added to ``y_j(t)`` (>= 0).
        round, receiver, sender: int arrays of one length (rounds 1-based, agents 0-based).
        weight: the weight the receiver applied (finite).
        sender_round: the round of the message used, in ``[1, round]``.
        state_weight: optional ``(T, n)`` weights on the own noise-free previous state (default zeros).

    Raises:
        ScheduleError: shapes differ, an index is out of range, a weight or scale is not finite,
            a scale is negative, a message from the future is used.

    Example:
        >>> LinearSchedule(2, [[1.0, 1.0]], [1], [0], [1], [1.0], [1]).horizon
        1
    """

    num_agents: int
    noise_scale: np.ndarray
    round: np.ndarray
    receiver: np.ndarray
    sender: np.ndarray
    weight: np.ndarray
    sender_round: np.ndarray
    state_weight: np.ndarray

    def __init__(self, num_agents: int, noise_scale: Any, round: Any, receiver: Any, sender: Any, weight: Any,
                 sender_round: Any, state_weight: Any = None) -> None:
        if isinstance(num_agents, bool) or not isinstance(num_agents, (int, np.integer)) or num_agents < 1:
            raise ScheduleError(f"num_agents must be an integer >= 1, got {num_agents!r}")
        n = int(num_agents)
        scale = np.asarray(noise_scale, dtype=float)
        if scale.ndim != 2 or scale.shape[1] != n or scale.shape[0] < 1:
            raise ScheduleError(f"noise_scale must have shape (T, {n}) with T >= 1, got {scale.shape}")
        bad = np.argwhere(~(np.isfinite(scale) & (scale >= 0)))
        if bad.size:
            t, j = (int(x) for x in bad[0])
            raise ScheduleError(f"noise_scale of agent {j} in round {t + 1} must be finite and >= 0, "
                                f"got {scale[t, j]!r}")
        horizon = scale.shape[0]
        rnd, recv, send, srnd = (_int_column(c, name) for c, name in
                                 ((round, "round"), (receiver, "receiver"), (sender, "sender"),
                                  (sender_round, "sender_round")))
        w = np.asarray(weight, dtype=float)
        if w.ndim != 1 or len({rnd.shape, recv.shape, send.shape, srnd.shape, w.shape}) != 1:
            raise ScheduleError("round, receiver, sender, weight and sender_round must be 1-D arrays of one length")
        for name, col, hi in (("round", rnd, horizon), ("sender_round", srnd, horizon)):
            out = np.flatnonzero((col < 1) | (col > hi))
            if out.size:
                raise ScheduleError(f"{name} of entry {int(out[0])} must lie in [1, {hi}], got {int(col[out[0]])}")
        for name, col in (("receiver", recv), ("sender", send)):
            out = np.flatnonzero((col < 0) | (col >= n))
            if out.size:
                raise ScheduleError(f"{name} of entry {int(out[0])} must lie in [0, {n}), got {int(col[out[0]])}")
        out = np.flatnonzero(srnd > rnd)
        if out.size:
            e = int(out[0])
            raise ScheduleError(f"entry {e}: receiver {int(recv[e])} in round {int(rnd[e])} uses the message of "
                                f"round {int(srnd[e])} of agent {int(send[e])}, which is not released yet")
        out = np.flatnonzero(~np.isfinite(w))
        if out.size:
            raise ScheduleError(f"weight of entry {int(out[0])} must be finite, got {w[out[0]]!r}")
        sw = np.zeros_like(scale) if state_weight is None else np.asarray(state_weight, dtype=float)
        if sw.shape != scale.shape:
            raise ScheduleError(f"state_weight must have shape {scale.shape}, got {sw.shape}")
        bad = np.argwhere(~np.isfinite(sw))
        if bad.size:
            t, j = (int(x) for x in bad[0])
            raise ScheduleError(f"state_weight of agent {j} in round {t + 1} must be finite, got {sw[t, j]!r}")
        for name, val in (("num_agents", n), ("noise_scale", scale), ("round", rnd), ("receiver", recv),
                          ("sender", send), ("weight", w), ("sender_round", srnd), ("state_weight", sw)):
            if isinstance(val, np.ndarray):
                val.flags.writeable = False
            object.__setattr__(self, name, val)

    @property
    def horizon(self) -> int:
        """``T``, the number of rounds."""
        return int(self.noise_scale.shape[0])

    @classmethod
    def from_mixing(cls, mixing: Sequence[Any], noise_scale: Any, lag2: Sequence[Any] | None = None
                    ) -> LinearSchedule:
        """From per-round mixing matrices: ``x(t) = W_t y(t)`` (+ ``diag(lag2_t) y(t-1)`` if given).

        Args:
            mixing: ``W_1 .. W_T``, ``n x n`` (dense or scipy sparse); ``W_t[i, j]`` is the weight receiver
                ``i`` applies to sender ``j``'s round-``t`` message.
            noise_scale: ``(T, n)`` standard deviations, or one number for every message.
            lag2: optional per-round vectors (length ``n``): the weight each agent applies to its own
                message of the previous round (``lag2[0]`` must be zero: there is none).

        Returns:
            The schedule.

        Raises:
            ScheduleError: matrices of the wrong shape, ``lag2`` of the wrong length or nonzero in round 1.

        Example:
            >>> import numpy as np
            >>> LinearSchedule.from_mixing([np.eye(3)], 1.0).round.tolist()
            [1, 1, 1]
        """
        if len(mixing) < 1:
            raise ScheduleError("mixing must hold at least one round")
        n = np.shape(mixing[0])[0]
        scale = np.asarray(noise_scale, dtype=float)
        if scale.ndim == 0:
            scale = np.full((len(mixing), n), float(scale))
        cols: list[list[np.ndarray]] = [[], [], [], [], []]
        for t, w in enumerate(mixing, start=1):
            m = sp.coo_array(sp.csr_array(w))
            if m.shape != (n, n):
                raise ScheduleError(f"mixing matrix of round {t} must be {n} x {n}, got {m.shape}")
            parts = [np.full(m.nnz, t), m.row, m.col, m.data, np.full(m.nnz, t)]
            if lag2 is not None:
                c = np.asarray(lag2[t - 1], dtype=float)
                if c.shape != (n,):
                    raise ScheduleError(f"lag2 of round {t} must have length {n}, got shape {c.shape}")
                nz = np.flatnonzero(c)
                if nz.size and t == 1:
                    raise ScheduleError("lag2 of round 1 must be zero: there is no round-0 message")
                parts = [np.concatenate([p, q]) for p, q in
                         zip(parts, [np.full(nz.size, t), nz, nz, c[nz], np.full(nz.size, t - 1)])]
            for col, p in zip(cols, parts):
                col.append(p)
        rnd, recv, send, w, srnd = (np.concatenate(c) for c in cols)
        return cls(n, scale, rnd.astype(np.int64), recv.astype(np.int64), send.astype(np.int64), w,
                   srnd.astype(np.int64))


def message_maps(schedule: LinearSchedule) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """Every message as an affine map of the data and the noise: ``y = D data + N xi``.

    Args:
        schedule: the :class:`LinearSchedule`.

    Returns:
        ``(D, N, messages)``: ``D`` is ``(n T, n)``, ``N`` is ``(n T, K)`` with one column per positive
        noise scale (ordered by round, then agent; unit-variance ``xi``, the scale is inside ``N``), and
        ``messages[r] = (t, j)`` names row ``r`` (round-major).

    Raises:
        ScheduleError: via the schedule only (it is validated on construction).

    Example:
        >>> s = LinearSchedule(1, [[2.0], [0.0]], [1, 2], [0, 0], [0, 0], [1.0, 1.0], [1, 1])
        >>> d, n, _ = message_maps(s)
        >>> d.ravel().tolist(), n.ravel().tolist()
        ([1.0, 1.0], [2.0, 2.0])
    """
    n, horizon = schedule.num_agents, schedule.horizon
    noisy = np.argwhere(schedule.noise_scale > 0)  # (t-1, j), round-major
    k = len(noisy)
    col_of = {(int(t), int(j)): c for c, (t, j) in enumerate(noisy)}
    d_rows = np.zeros((horizon, n, n))
    n_rows = np.zeros((horizon, n, k))
    state_d, state_n = np.eye(n), np.zeros((n, k))  # x(0)
    order = np.argsort(schedule.round, kind="stable")
    starts = np.searchsorted(schedule.round[order], np.arange(1, horizon + 2))
    for t in range(1, horizon + 1):
        d_rows[t - 1] = state_d
        n_rows[t - 1] = state_n
        for j in np.flatnonzero(schedule.noise_scale[t - 1] > 0):
            n_rows[t - 1, j, col_of[(t - 1, int(j))]] += schedule.noise_scale[t - 1, j]
        sel = order[starts[t - 1]:starts[t]]
        sw = schedule.state_weight[t - 1][:, None]
        new_d, new_n = sw * state_d, sw * state_n
        for s in np.unique(schedule.sender_round[sel]):
            e = sel[schedule.sender_round[sel] == s]
            w = sp.csr_array((schedule.weight[e], (schedule.receiver[e], schedule.sender[e])), shape=(n, n))
            new_d += w @ d_rows[s - 1]
            new_n += w @ n_rows[s - 1]
        state_d, state_n = new_d, new_n
    messages = [(t, j) for t in range(1, horizon + 1) for j in range(n)]
    return d_rows.reshape(horizon * n, n), n_rows.reshape(horizon * n, k), messages
