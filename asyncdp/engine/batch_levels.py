"""Runs whose combines read messages of rounds *ahead*: the combines in dependency order (levels).

Under :class:`~asyncdp.engine.timing.Async` timing (a neighbour's freshest
message is often of a round ahead of the receiver's), and with
``missing="stale"`` and drifting deadline clocks, an agent may combine, in
its round ``t``, a message of round ``s > t``, computed from that sender's
state after its round ``s - 1``. The round-by-round recursion of
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

    One pass goes through the rounds in order, each round's combines taking
    the largest level of what they need (one gather and one maximum over the
    entries of each row, all runs at once), so a pass settles every
    dependency on an earlier round; passes repeat while a dependency on a
    round ahead raised some level.

    A round is computed again only when a round it reads changed since its
    last computation.

    Args:
        plan: the batch's rounds as index arrays (``batch_deadline._Plan``).
        used, source: per round ``(R, nnz)``: whether each weight entry is combined, and the round of its message.

    Returns:
        ``(R, N, T + 1)`` levels (index ``t``; index 0: the initial state, level 0).
    """
    runs = used[0].shape[0]
    n, horizon = plan.N, plan.T
    # computed as (T + 1, N, R): what a round's combines need is a gather of rows of R contiguous levels
    small = (horizon + 1) * n * runs < 2**31 - 1  # indices and levels (at most (T + 1) N R) fit 32 bits
    itype = np.int32 if small else np.int64
    lev = np.zeros((horizon + 1, n, runs), dtype=itype)
    lev[1:] = np.arange(1, horizon + 1, dtype=itype)[:, None, None]
    flat = lev.reshape(-1)
    run = np.arange(runs, dtype=itype)[None, None, :]
    # per round: (W, N, R) what each combine needs, as a level index (round * N + agent) within its run, padded
    # with the combine's own previous round
    width = max(int(np.diff(plan.rounds[t - 1][0]).max(initial=0)) for t in range(1, horizon + 1)) + 1
    local = np.empty((horizon, width, n, runs), dtype=itype)
    deps = []  # per round: the rounds its combines read (a range containing them)
    for t in range(1, horizon + 1):
        indptr, rows, cols, _, entry_msg = plan.rounds[t - 1]
        other = (entry_msg >= 0)[:, None] & used[t - 1].T  # (nnz, R)
        agent = np.where(other, cols[:, None], rows[:, None])
        rnd = np.where(other, source[t - 1].T - 1, t - 1)
        idx = local[t - 1]
        idx[:] = ((t - 1) * n + np.arange(n, dtype=itype))[None, :, None]
        pos = np.arange(rows.size) - indptr[rows] + 1
        idx[pos, rows] = rnd.astype(itype) * n + agent.astype(itype)
        lo, hi = (int(rnd.min()), int(rnd.max())) if rnd.size else (t - 1, t - 1)
        deps.append(list(range(min(lo, t - 1), max(hi, t - 1) + 1)))
    needs = local * np.asarray(runs, dtype=itype) + run[None]  # flat indices into the (T + 1, N, R) levels
    del local
    changed_at = [0] * (horizon + 1)  # step of the last change of each round's levels
    done_at = [-1] * (horizon + 1)  # step of each round's last computation
    step = 0
    while True:
        changed = False
        for t in range(1, horizon + 1):
            if done_at[t] >= max(changed_at[d] for d in deps[t - 1]):
                continue  # nothing it reads has changed since
            step += 1
            done_at[t] = step
            need = flat[needs[t - 1]].max(axis=0) + 1
            if (need > lev[t]).any():
                np.maximum(lev[t], need, out=lev[t])
                changed_at[t] = step
                done_at[t] = step - 1  # a combine may read another agent's same round: computed again
                changed = True
        if not changed:
            return np.ascontiguousarray(lev.transpose(2, 1, 0)).astype(np.int64, copy=False)


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
            e_send, e_recv = plan.m_send[lo:hi].astype(np.int64), plan.m_recv[lo:hi].astype(np.int64)
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

    def emit(rr: np.ndarray, ii: np.ndarray, s: int, current: dict[str, np.ndarray] | None = None) -> None:
        """Round-``s`` messages of the pairs ``(rr, ii)`` (their states are after round ``s - 1``).

        ``current``: those states as a batch of one run (``(1, K, ...)``), if the caller has them.
        """
        own_at = (rr * horizon + (s - 1)) * n + ii
        if not unicast:
            std = {name: block[rr, ii][None] for name, block in blocks[s].items()}
            mine = _gather(state, rr, ii) if current is None else current
            for name, arr in alg.message(mine, s, std, ii, problem).items():
                put(name, own_at, np.asarray(arr)[0])
            return
        lo, hi = plan.round_start[s - 1], plan.round_start[s]
        e_send = plan.m_send[lo:hi].astype(np.int64)
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
    # the combines grouped by (level, round), in that order; within a group by run, then agent
    key = lev[:, :, 1:] * (horizon + 1) + np.arange(1, horizon + 1)
    flat = key.ravel()
    top = int(flat.max(initial=0))
    order = np.argsort(flat.astype(np.int16 if top < 2**15 else np.int32 if top < 2**31 else np.int64),
                       kind="stable")  # radix sort for 16-bit keys
    sorted_keys = flat[order]
    cuts = np.flatnonzero(np.diff(sorted_keys)) + 1
    starts, ends = np.concatenate(([0], cuts)), np.concatenate((cuts, [flat.size]))
    group_rounds = (sorted_keys[starts] % (horizon + 1)).tolist()
    for lo, hi, t in zip(starts.tolist(), ends.tolist(), group_rounds):
        rr, ii, _ = np.unravel_index(order[lo:hi], (runs, n, horizon))
        indptr, rows, cols, _, entry_msg = plan.rounds[t - 1]
        lengths = indptr[ii + 1] - indptr[ii]
        ent = np.repeat(indptr[ii], lengths) + (np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths,
                                                                                   lengths))
        r_ent = np.repeat(rr, lengths)
        at = r_ent * used[t - 1].shape[1] + ent
        keep = used[t - 1].reshape(-1)[at]
        src = source[t - 1].reshape(-1)[at]
        if not unicast:
            col = (r_ent * horizon + (src - 1)) * n + cols[ent]
        else:
            diag = entry_msg[ent] < 0
            col = np.where(diag, (r_ent * horizon + (t - 1)) * n + rows[ent], 0)
            edge = ~diag & keep
            col[edge] = own_rows + r_ent[edge] * total + link_round[plan.m_link[entry_msg[ent[edge]]], src[edge]]
        pair = np.repeat(np.arange(rr.size), lengths)
        counts = np.bincount(pair[keep], minlength=rr.size)
        matrix = sp.csr_array((weights[t - 1].reshape(-1)[at[keep]], col[keep],
                               np.concatenate(([0], np.cumsum(counts)))), shape=(rr.size, next(iter(
                                   store.values())).shape[0]))
        mixed = {name: (matrix @ arr.reshape(arr.shape[0], -1)).reshape((1, rr.size) + arr.shape[1:])
                 for name, arr in store.items()}
        new = {k: np.asarray(v) for k, v in alg.update(_gather(state, rr, ii), mixed, t, ii, problem).items()}
        for k, v in new.items():
            state[k][rr, ii] = np.asarray(v)[0]
        traj[rr, t, ii] = np.asarray(alg.decision(new))[0]
        age = np.where(keep, t - src, 0)
        worst = np.zeros(rr.size, dtype=np.int64)
        busy = lengths > 0
        if age.size:
            worst[busy] = np.maximum(np.maximum.reduceat(age, (np.cumsum(lengths) - lengths)[busy]), 0)
        staleness[rr, t - 1, ii] = worst
        if t < horizon:
            emit(rr, ii, t + 1, new)
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
