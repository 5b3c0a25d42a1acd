"""Deadline runs whose stale messages come from rounds *ahead*: the rounds in dependency order (levels).

With ``missing="stale"`` and drifting clocks, an agent may combine, in its
round ``t``, the freshest message of a sender whose clock runs ahead: a
message of round ``s > t``, computed from that sender's state after its
round ``s - 1``. The round-by-round recursion of
:mod:`asyncdp.engine.batch_deadline` has not computed that state yet, but the
schedule (which message every combine uses) is known before any state, so
the combines can be ordered by their dependencies instead: the *level* of
agent ``i``'s round-``t`` combine in run ``r`` is one more than the largest
level of what it needs (its own round ``t - 1`` combine, and for every
message of round ``s`` it uses, the sender's round ``s - 1`` combine; the
initial states have level 0). Every combine of one level can then be
computed at once; within a level one agent of one run has at most one
combine (levels increase along an agent's rounds), and the level's combines
are grouped by round (a rule call takes one round ``t``).

The rules are called on the gathered ``(run, agent)`` pairs as a batch of
one run (``state[k]`` of shape ``(1, K, ...)``, ``agents`` the pairs' agents),
and the mixing is the same row-order sparse product over a store of every
message of the batch, so the numbers are those of the SimPy engine (as in
the round-by-round path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["levels", "run_levels"]


def levels(plan: Any, used: list[np.ndarray], source: list[np.ndarray]) -> np.ndarray:
    """The level of every combine (module docstring), by relaxation to the fixed point.

    Args:
        plan: the batch's rounds as index arrays (``batch_deadline._Plan``).
        used, source: per round ``(R, nnz)``: whether each weight entry is combined, and the round of its message.

    Returns:
        ``(R, N, T + 1)`` levels (index ``t``; index 0: the initial state, level 0).
    """
    runs = used[0].shape[0]
    lev = np.zeros((runs, plan.N, plan.T + 1), dtype=np.int64)
    lev[:, :, 1:] = np.arange(1, plan.T + 1)
    while True:
        changed = False
        for t in range(1, plan.T + 1):
            indptr, rows, cols, _, entry_msg = plan.rounds[t - 1]
            need = lev[:, :, t - 1] + 1
            edge = np.flatnonzero(entry_msg >= 0)
            rr, ee = np.nonzero(used[t - 1][:, edge])
            e = edge[ee]
            src = source[t - 1][rr, e]
            np.maximum.at(need, (rr, rows[e]), lev[rr, cols[e], src - 1] + 1)
            new = np.maximum(lev[:, :, t], need)
            if not np.array_equal(new, lev[:, :, t]):
                lev[:, :, t] = new
                changed = True
        if not changed:
            return lev


def _gather(state: dict[str, np.ndarray], rr: np.ndarray, ii: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[rr, ii][None] for k, v in state.items()}


def run_levels(alg: Any, problem: Any, noise: Any, plan: Any, state: dict[str, np.ndarray], used: list[np.ndarray],
               source: list[np.ndarray], weights: list[np.ndarray], unicast: bool, link_round: np.ndarray,
               decision0: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    """Every combine of every run in level order.

    Args:
        alg, problem, noise: the bound rule, the problem and the noise source.
        plan: the rounds as index arrays; state: the initial states ``(R, N, ...)`` (updated in place).
        used, source, weights: per round ``(R, nnz)``: the entries combined, their messages' rounds, the weights.
        unicast: the mode; link_round: ``(L, T + 1)`` message number of each link and round (unicast).
        decision0: the initial decisions ``(R, N, n)``.

    Returns:
        ``(trajectory (R, T + 1, N, n), final state, messages, staleness (R, T, N))``; ``messages`` in the
        batch engine's transcript layout (broadcast ``(R, T, N, d)``, unicast ``(R, T, N, N, d)`` with NaN).
    """
    runs = used[0].shape[0]
    n, horizon, total = plan.N, plan.T, plan.M
    lev = levels(plan, used, source)
    traj = np.empty((runs, horizon + 1) + decision0.shape[1:])
    traj[:, 0] = decision0
    staleness = np.zeros((runs, horizon, n), dtype=np.int64)
    noisy = [(c, ch) for c, ch in enumerate(alg.channels) if ch.noisy]
    decls = {t: {ch.name: alg.noise(t, ch.name) for _, ch in noisy} for t in range(1, horizon + 1)}
    own_rows = runs * horizon * n  # store: every agent's own message (broadcast: the message) of every round
    store: dict[str, np.ndarray] = {}
    if not unicast:
        blocks = {t: {ch.name: np.asarray(noise.broadcast(t, c, ch.mechanism, (runs, n, decls[t][ch.name].dimension)))
                      for c, ch in noisy} for t in range(1, horizon + 1)}
    else:
        copy_noise: dict[str, np.ndarray] = {}
        for t in range(1, horizon + 1):
            lo, hi = plan.round_start[t - 1], plan.round_start[t]
            e_send, e_recv = plan.m_send[lo:hi], plan.m_recv[lo:hi]
            for c, ch in noisy:
                dim = decls[t][ch.name].dimension
                buf = copy_noise.setdefault(ch.name, np.empty((runs, total, dim)))
                for i in np.unique(e_send):
                    sel = np.flatnonzero(e_send == i)
                    block = np.asarray(noise.unicast(t, c, ch.mechanism, int(i), (runs, n, dim)))
                    buf[:, lo + sel] = block[:, e_recv[sel]]

    def put(name: str, rows_: np.ndarray, values: np.ndarray) -> None:
        arr = store.get(name)
        if arr is None:
            extra = runs * total if unicast else 0
            arr = store[name] = np.full((own_rows + extra,) + values.shape[1:], np.nan)
        arr[rows_] = values

    def emit(rr: np.ndarray, ii: np.ndarray, s: int) -> None:
        """Round-``s`` messages of the pairs ``(rr, ii)`` (their states are after round ``s - 1``)."""
        own_at = (rr * horizon + (s - 1)) * n + ii
        if not unicast:
            std = {name: block[rr, ii][None] for name, block in blocks[s].items()}
            for name, arr in alg.message(_gather(state, rr, ii), s, std, ii, problem).items():
                put(name, own_at, np.asarray(arr)[0])
            return
        lo, hi = plan.round_start[s - 1], plan.round_start[s]
        e_send = plan.m_send[lo:hi]
        active = np.zeros((runs, n), dtype=bool)
        active[rr, ii] = True
        er, ee = np.nonzero(active[:, e_send])  # per pair, its copies in receiver order
        senders = e_send[ee]
        copies = {}
        if ee.size:
            std = {name: buf[er, lo + ee][None] for name, buf in copy_noise.items()}
            copies = {k: np.asarray(v)[0] for k, v in alg.message(_gather(state, er, senders), s, std, senders,
                                                                   problem).items()}
            for name, arr in copies.items():
                put(name, own_rows + er * total + lo + ee, arr)
        key = er * n + senders
        pair_key = rr * n + ii
        counts = np.zeros(runs * n, dtype=np.int64)
        np.add.at(counts, key, 1)
        count = counts[pair_key]
        silent = count == 0
        own: dict[str, np.ndarray] = {}
        if silent.any():
            zero = {ch.name: np.zeros((1, int(silent.sum()), decls[s][ch.name].dimension)) for _, ch in noisy}
            quiet = alg.message(_gather(state, rr[silent], ii[silent]), s, zero, ii[silent], problem)
            own = {k: np.empty((rr.size,) + np.asarray(v).shape[2:]) for k, v in quiet.items()}
            for k, v in quiet.items():
                own[k][silent] = np.asarray(v)[0]
        if ee.size:
            slot = np.full(runs * n, -1, dtype=np.int64)
            slot[pair_key] = np.arange(rr.size)
            first = np.cumsum(counts) - counts
            order = np.lexsort((ee, key))  # per pair, its copies in message (= receiver) order
            pos = np.arange(key.size) - first[key[order]]
            for name, arr in copies.items():
                acc = np.zeros((rr.size,) + arr.shape[1:])
                for p in range(int(count.max())):
                    take = order[pos == p]
                    acc[slot[key[take]]] = acc[slot[key[take]]] + arr[take]
                busy = ~silent
                acc[busy] = acc[busy] / count[busy].reshape((-1,) + (1,) * (acc.ndim - 1))
                if silent.any():
                    acc[silent] = own[name][silent]
                own[name] = acc
        for name, arr in own.items():
            put(name, own_at, arr)

    everyone = np.nonzero(np.ones((runs, n), dtype=bool))
    emit(everyone[0], everyone[1], 1)
    flat = lev[:, :, 1:].ravel()
    order = np.argsort(flat, kind="stable")
    bounds = np.searchsorted(flat[order], np.arange(1, int(flat.max()) + 2))
    for level in range(1, int(flat.max()) + 1):
        rr_all, ii_all, tt_all = np.unravel_index(order[bounds[level - 1]:bounds[level]], (runs, n, horizon))
        for t in np.unique(tt_all + 1).tolist():
            sel = tt_all + 1 == t
            rr, ii = rr_all[sel], ii_all[sel]
            indptr, rows, cols, _, entry_msg = plan.rounds[t - 1]
            lengths = indptr[ii + 1] - indptr[ii]
            ent = np.repeat(indptr[ii], lengths) + (np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths,
                                                                                       lengths))
            r_ent = np.repeat(rr, lengths)
            keep = used[t - 1][r_ent, ent]
            src = source[t - 1][r_ent, ent]
            if not unicast:
                col = (r_ent * horizon + (src - 1)) * n + cols[ent]
            else:
                diag = entry_msg[ent] < 0
                col = np.where(diag, (r_ent * horizon + (t - 1)) * n + rows[ent], 0)
                edge = ~diag & keep
                col[edge] = own_rows + r_ent[edge] * total + link_round[plan.m_link[entry_msg[ent[edge]]], src[edge]]
            counts = np.zeros(rr.size, dtype=np.int64)
            np.add.at(counts, np.repeat(np.arange(rr.size), lengths)[keep], 1)
            matrix = sp.csr_array((weights[t - 1][r_ent, ent][keep], col[keep],
                                   np.concatenate(([0], np.cumsum(counts)))), shape=(rr.size, next(iter(
                                       store.values())).shape[0]))
            mixed = {name: (matrix @ arr.reshape(arr.shape[0], -1)).reshape((1, rr.size) + arr.shape[1:])
                     for name, arr in store.items()}
            new = alg.update(_gather(state, rr, ii), mixed, t, ii, problem)
            for k, v in new.items():
                state[k][rr, ii] = np.asarray(v)[0]
            traj[rr, t, ii] = np.asarray(alg.decision(new))[0]
            age = np.where(keep, t - src, 0)
            pair = np.repeat(np.arange(rr.size), lengths)
            worst = np.zeros(rr.size, dtype=np.int64)
            np.maximum.at(worst, pair, age)
            staleness[rr, t - 1, ii] = worst
            if t < horizon:
                emit(rr, ii, t + 1)
    messages = {}
    for name, arr in store.items():
        if not unicast:
            messages[name] = arr[:own_rows].reshape((runs, horizon, n) + arr.shape[1:])
        else:
            out = np.full((runs, horizon, n, n) + arr.shape[1:], np.nan)
            copies = arr[own_rows:].reshape((runs, total) + arr.shape[1:])
            out[:, plan.m_round - 1, plan.m_send, plan.m_recv] = copies
            messages[name] = out
    return traj, state, messages, staleness
