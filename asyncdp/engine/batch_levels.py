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
and the mixing forms the sums of the row-order sparse product (from 0, each
used entry in its weight row's order) over a store of every message of the
batch, so the numbers are those of the SimPy engine (as in the round-by-round
path). Each round's combines are sorted once by level (a group is a range of
them); when a round's first group comes, the store rows and realized weights
of all its combines' entries are gathered once, slot by slot (slot ``p``: the
``p``-th entry of the weight row), in the sorted order and slot-major, so a
group's terms of one slot are one contiguous range: a group then costs one
gather of the store, one product and one sum per slot, whatever its size
(the group's Python and numpy-call overhead, not its arithmetic, dominates
small batches). The staleness of every combine is computed per round, and
the curves are recorded over blocks of rounds after the last group.

Memory layout: the message store and the trajectory are round-major (row
``((round - 1) * R + run) * N + agent``), so a group (one round) reads and
writes a few rounds' blocks instead of one row per run spread over the whole
array; under broadcast each channel's noise is drawn into the store's rows
and every message is written over its own noise row once that is read.
Fresh memory is costly (first-touch page faults), so the path avoids
per-round copies of ``R``-sized arrays where a group can gather instead, and
a round's gathered rows live only from its first group to its last (later
rounds reuse that memory).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from ..algorithms.base import rule_messages, rule_update
from ..errors import ScenarioError

__all__ = ["levels", "run_levels"]


def levels(plan: Any, used: list[np.ndarray], source: list[np.ndarray],
           plan_rounds: list[tuple[np.ndarray, ...]] | None = None) -> np.ndarray:
    """The level of every combine (module docstring), by relaxation to the fixed point.

    One pass goes through the rounds in order, each round's combines taking
    the largest level of what they need (one gather and one maximum over the
    entries of each row, all runs at once), so a pass settles every
    dependency on an earlier round; passes repeat while a dependency on a
    round ahead raised some level.

    A round is computed again only when a round it reads changed since its
    last computation.

    Args:
        plan: the batch's rounds as index arrays (``batch_plan._Plan``).
        used, source: per round ``(R, nnz)``: whether each weight entry is combined, and the round of its message.
        plan_rounds: ``plan.rounds`` as a list, if the caller has it (each round is made once).

    Returns:
        ``(T + 1, R, N)`` levels (first index ``t``; 0: the initial state, level 0), 32-bit integers where they fit.
    """
    runs = used[0].shape[0]
    n, horizon = plan.N, plan.T
    if plan_rounds is None:
        plan_rounds = [plan.rounds[k] for k in range(horizon)]
    # computed as (T + 1, N, R): what a round's combines need is a gather of rows of R contiguous levels
    small = (horizon + 1) * n * runs < 2**31 - 1  # levels (at most (T + 1) N R) fit 32 bits
    itype = np.int32 if small else np.int64
    lev = np.zeros((horizon + 1, n, runs), dtype=itype)
    lev[1:] = np.arange(1, horizon + 1, dtype=itype)[:, None, None]
    flat = lev.reshape(-1)
    run = np.arange(runs, dtype=np.intp)
    # per round: (W, N, R) the levels each combine reads besides its own previous round's (always the contiguous
    # block lev[t - 1], never gathered): the messages of its in-neighbours, as flat indices (round * N + agent) * R
    # + run into the (T + 1, N, R) levels, padded (unused entries, fewer in-neighbours) with its own previous round
    width = 0
    for t in range(1, horizon + 1):
        rows_t = plan_rounds[t - 1][1][plan_rounds[t - 1][4] >= 0]
        width = max(width, int(np.bincount(rows_t, minlength=1).max(initial=0)))
    local = np.empty((horizon, width, n, runs), dtype=np.intp)
    deps = []  # per round: the rounds its combines read (a range containing them, as (first, end))
    for t in range(1, horizon + 1):
        _, rows, cols, _, entry_msg = plan_rounds[t - 1]
        edge = np.flatnonzero(entry_msg >= 0)
        e_rows = rows[edge]
        other = used[t - 1][:, edge].T  # (edges, R)
        agent = np.where(other, cols[edge][:, None], e_rows[:, None]).astype(np.intp)
        rnd = np.where(other, source[t - 1][:, edge].T - 1, t - 1).astype(np.intp)
        idx = local[t - 1]  # written in place
        idx[:] = (((t - 1) * n + np.arange(n, dtype=np.intp)) * runs)[None, :, None] + run
        pos = np.arange(edge.size) - np.searchsorted(e_rows, e_rows)  # an edge's rank among its row's edges
        idx[pos, e_rows] = (rnd * n + agent) * runs + run
        lo, hi = (int(rnd.min()), int(rnd.max())) if rnd.size else (t - 1, t - 1)
        deps.append((min(lo, t - 1), max(hi, t - 1) + 1))
    needs = local
    changed_at = [0] * (horizon + 1)  # step of the last change of each round's levels
    done_at = [-1] * (horizon + 1)  # step of each round's last computation
    step = 0
    gathered = np.empty(needs.shape[1:], dtype=itype)  # one round's needs, gathered (no allocation per round)
    need = np.empty((n, runs), dtype=itype)
    above = np.empty((n, runs), dtype=bool)
    while True:
        changed = False
        for t in range(1, horizon + 1):
            first, end = deps[t - 1]
            if done_at[t] >= max(changed_at[first:end]):
                continue  # nothing it reads has changed since
            step += 1
            done_at[t] = step
            np.copyto(need, lev[t - 1])
            if width:
                np.take(flat, needs[t - 1], out=gathered, mode="clip")  # in range by construction; unbuffered
                for k in range(width):
                    np.maximum(need, gathered[k], out=need)
            need += 1
            if np.greater(need, lev[t], out=above).any():
                np.maximum(lev[t], need, out=lev[t])
                changed_at[t] = step
                done_at[t] = step - 1  # a combine may read another agent's same round: computed again
                changed = True
        if not changed:
            return np.ascontiguousarray(lev.transpose(0, 2, 1))  # (T + 1, R, N): a round's levels, one block


def check_per_agent_state(alg: Any, state: Any, runs: int, n: int) -> None:
    """Raise unless every entry of the initial ``state`` has the leading axes ``(runs, n)``: this path gathers and
    writes back each (run, agent) pair's state on its own.

    Args:
        alg: the rule (for its name); state: its ``initial_state`` for ``runs`` runs of ``n`` agents.

    Raises:
        ScenarioError: an entry without those axes (a Python counter, a string, a list), named with its shape.

    Example:
        >>> class R:
        ...     name = "r"
        >>> check_per_agent_state(R(), {"x": np.zeros((2, 3, 1)), "k": 0}, 2, 3)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        asyncdp.errors.ScenarioError: r: state entry 'k' (int of shape ()) ...
    """
    for key, value in state.items():
        if np.shape(value)[:2] != (runs, n):
            raise ScenarioError(
                f"{getattr(alg, 'name', type(alg).__name__)}: state entry {key!r} ({type(value).__name__} of shape "
                f"{np.shape(value)}) has not the leading axes (runs, agents) = {(runs, n)} of x0: the batch engine "
                "under deadline or asynchronous timing keeps each agent's state apart; make it an array with those "
                "axes (e.g. np.zeros(x0.shape[:-1] + (1,)) for a counter), or run engine='simpy'")


def _gather(state: dict[str, np.ndarray], flat: np.ndarray) -> dict[str, np.ndarray]:
    """The states ``(R, N, ...)`` of the pairs with flat indices ``run * N + agent``, as a batch of one run."""
    return {k: np.take(v.reshape((-1,) + v.shape[2:]), flat, axis=0)[None] for k, v in state.items()}


def _mix_rows(store: np.ndarray, col: np.ndarray, weight: np.ndarray, used: np.ndarray | None) -> np.ndarray:
    """Row ``k`` of the result is ``sum_p w[p, k] store[col[p, k]]`` over the slots ``p`` used by row ``k``.

    The sum is formed as the row-order sparse product forms it (from 0, adding each used entry's product
    in slot order), so the bits are those of ``csr_matrix @ store``. ``col`` ``(P, K)``: slot by slot, the
    rows' store rows (any row where a slot is not used); ``weight`` ``(P, K, 1)`` their weights (finite
    where a slot is not used); ``used`` ``(P, K, 1)`` which slots are used, ``None`` if all are.
    Slot-major, so that each slot's terms are one contiguous block.

    Example:
        >>> store = np.array([[1.0], [2.0], [4.0]])
        >>> col, w = np.array([[0, 1], [2, 0]]), np.array([[[0.5], [1.0]], [[0.25], [3.0]]])
        >>> _mix_rows(store, col, w, None).ravel().tolist()
        [1.5, 5.0]
        >>> _mix_rows(store, col, w, np.array([[[True], [True]], [[False], [True]]])).ravel().tolist()
        [0.5, 5.0]
    """
    slots, k = col.shape
    out = np.zeros((k, store.shape[1]))
    term = np.take(store, col, axis=0)  # (P, K, width): every slot's rows at once
    if used is None:
        np.multiply(term, weight, out=term)
        for p in range(slots):
            np.add(out, term[p], out=out)
    else:
        # masked ufunc loops are slow: the unused slots' rows (never written, NaN, in the unicast store) are
        # replaced by +0.0, so their products are zeros (their weights are finite), and adding a zero leaves
        # the sum's bits as they are (a sum started at +0.0 is never -0.0): the sums of skipping them
        term[~used[:, :, 0]] = 0.0
        np.multiply(term, weight, out=term)
        for p in range(slots):
            np.add(out, term[p], out=out)
    return out


def _row_view(arr: np.ndarray) -> np.ndarray | None:
    """``arr`` ``(M, ...)`` as ``M`` opaque elements of one row's bytes (a view), or ``None`` if not C-contiguous."""
    width = arr.dtype.itemsize * math.prod(arr.shape[1:])
    if not arr.flags.c_contiguous or width <= 0 or arr.ndim < 1:
        return None
    return arr.reshape(arr.shape[0], -1).view(np.dtype((np.void, width)))[:, 0]


def _put_rows(arr: np.ndarray, rows: np.ndarray, values: np.ndarray, view: np.ndarray | None = None) -> None:
    """``arr[rows] = values`` (``rows`` distinct), each row copied as one block of bytes when the layouts allow.

    numpy's fancy assignment of rows of a few floats is about ten times slower than that of one
    element per row, so contiguous rows of the same dtype are assigned through a view of each row as one
    opaque element (the same bytes land in the same places). ``view``: :func:`_row_view` of ``arr``, if the
    caller keeps it (it is made here otherwise).

    Example:
        >>> arr = np.zeros((3, 2))
        >>> _put_rows(arr, np.array([2, 0]), np.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> arr.tolist()
        [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]]
    """
    if (values.dtype == arr.dtype and values.shape[1:] == arr.shape[1:] and values.shape[0] == rows.shape[0]
            and rows.ndim == 1):
        if view is None:
            view = _row_view(arr)
        if view is not None:
            view[rows] = np.ascontiguousarray(values).reshape(values.shape[0], -1).view(view.dtype)[:, 0]
            return
    arr[rows] = values


def run_levels(alg: Any, problem: Any, noise: Any, plan: Any, state: dict[str, np.ndarray], used: list[np.ndarray],
               source: list[np.ndarray], weights: list[np.ndarray], unicast: bool, link_round: np.ndarray,
               decision0: np.ndarray, with_staleness: bool = True, with_messages: bool = True
               ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray | None]:
    """Every combine of every run in level order.

    Args:
        alg, problem, noise: the bound rule, the problem and the noise source.
        plan: the rounds as index arrays; state: the initial states ``(R, N, ...)`` (updated in place).
        used, source, weights: per round ``(R, nnz)``: the entries combined, their messages' rounds, the weights.
        unicast: the mode; link_round: ``(L, T + 1)`` message number of each link and round (unicast).
        decision0: the initial decisions ``(R, N, n)``.
        with_staleness: compute the staleness (``False``: ``None`` is returned in its place).
        with_messages: return the messages (``False``: an empty dict; unicast messages are then not
            scattered into the ``(R, T, N, N, d)`` transcript layout, which only transcripts need).

    Returns:
        ``(trajectory (T + 1, R, N, n), final state, messages, staleness (R, T, N))``: the trajectory
        round-major (a group's combines are of one round); ``messages`` in the
        batch engine's transcript layout (broadcast ``(R, T, N, d)``, unicast ``(R, T, N, N, d)`` with NaN).
    """
    runs = used[0].shape[0]
    n, horizon, total = plan.N, plan.T, plan.M
    check_per_agent_state(alg, state, runs, n)
    plan_rounds = [plan.rounds[k] for k in range(horizon)]  # each round's index arrays, made once
    lev = levels(plan, used, source, plan_rounds)
    # round-major (T + 1, R, N, n): a group's combines (one round) write into one block of R N rows
    traj = np.empty((horizon + 1, runs) + decision0.shape[1:])
    traj[0] = decision0
    staleness = np.zeros((runs, horizon, n), dtype=np.int64) if with_staleness else None
    noisy = [(c, ch) for c, ch in enumerate(alg.channels) if ch.noisy]
    decls = {t: {ch.name: alg.noise(t, ch.name) for _, ch in noisy} for t in range(1, horizon + 1)}
    # store: every agent's own message (broadcast: the message) of every round, round-major (row
    # ((round - 1) * R + run) * N + agent), so a group's reads and writes stay within a few rounds' blocks
    own_rows = runs * horizon * n
    store: dict[str, np.ndarray] = {}
    # broadcast: each channel's noise of every round in the store's row layout; a pair's noise row is read once,
    # by its own message, so the message of that channel (if it has the noise's shape) is then written over it
    # and the noise needs no memory of its own
    pool: dict[str, np.ndarray] = {}
    blocks: dict[int, dict[str, np.ndarray]] = {t: {} for t in range(1, horizon + 1)}
    if not unicast:
        for _, ch in noisy:
            dims = {decls[t][ch.name].dimension for t in range(1, horizon + 1)}
            if len(dims) == 1:
                pool[ch.name] = np.empty((own_rows, dims.pop()))
        for t in range(1, horizon + 1):
            for c, ch in noisy:
                block = np.asarray(noise.broadcast(t, c, ch.mechanism, (runs, n, decls[t][ch.name].dimension)))
                if ch.name in pool:
                    pool[ch.name][(t - 1) * runs * n:t * runs * n] = block.reshape(runs * n, -1)
                else:
                    blocks[t][ch.name] = block
                del block
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

    views: dict[str, np.ndarray | None] = {}  # each store array's rows as opaque elements (_row_view)

    def put(name: str, rows_: np.ndarray, values: np.ndarray) -> None:
        arr = store.get(name)
        if arr is None:
            # broadcast: every row is written before it is read (round 1 of every agent below, round t + 1 by its
            # round-t combine, which every agent of every run has), so the store needs no filling
            noise_rows = pool.get(name)
            if noise_rows is not None and noise_rows.shape[1:] == values.shape[1:] and values.dtype == noise_rows.dtype:
                arr = store[name] = noise_rows  # written over the noise rows, each after its one reading
            else:
                arr = store[name] = (np.full((own_rows + runs * total,) + values.shape[1:], np.nan) if unicast else
                                     np.empty((own_rows,) + values.shape[1:]))
            views[name] = _row_view(arr)
        _put_rows(arr, rows_, values, views[name])

    def emit(rr: np.ndarray, ii: np.ndarray, s: int, current: dict[str, np.ndarray] | None = None,
             fi: np.ndarray | None = None) -> None:
        """Round-``s`` messages of the pairs ``(rr, ii)`` (their states are after round ``s - 1``).

        ``current``: those states as a batch of one run (``(1, K, ...)``), if the caller has them;
        ``fi``: the pairs' flat indices ``rr * N + ii``, if the caller has them.
        """
        own_at = ((s - 1) * runs + rr) * n + ii if fi is None else fi + (s - 1) * runs * n
        if not unicast:
            flat = rr * n + ii if fi is None else fi
            std = {name: np.take(block.reshape((runs * n,) + block.shape[2:]), flat, axis=0)[None]
                   for name, block in blocks[s].items()}
            std.update({name: np.take(rows_, own_at, axis=0)[None] for name, rows_ in pool.items()})
            mine = _gather(state, flat) if current is None else current
            for name, arr in rule_messages(alg, mine, s, std, ii, problem).items():
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
            sent = rule_messages(alg, _gather(state, er * n + senders), s, std, senders, problem)
            copies = {k: np.asarray(v)[0] for k, v in sent.items()}
            for name, arr in copies.items():
                put(name, own_rows + (lo + ee) * runs + er, arr)
        key = er * n + senders
        pair_key = rr * n + ii
        counts = np.zeros(runs * n, dtype=np.int64)
        np.add.at(counts, key, 1)
        count = counts[pair_key]
        silent = count == 0
        own: dict[str, np.ndarray] = {}
        if silent.any():
            zero = {ch.name: np.zeros((1, int(silent.sum()), decls[s][ch.name].dimension)) for _, ch in noisy}
            quiet = rule_messages(alg, _gather(state, rr[silent] * n + ii[silent]), s, zero, ii[silent], problem)
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
    rows_total = next(iter(store.values())).shape[0]
    groups, rounds = _round_groups(plan, used, source, weights, lev, unicast, link_round, own_rows, total,
                                   rows_total, staleness, plan_rounds)
    state = {k: np.ascontiguousarray(v) for k, v in state.items()}  # flat views below write into these
    flat_state = {k: v.reshape((runs * n,) + v.shape[2:]) for k, v in state.items()}
    flat_traj = traj.reshape(((horizon + 1) * runs * n,) + traj.shape[3:])
    flat_store = {name: arr.reshape(arr.shape[0], -1) for name, arr in store.items()}
    state_views = {k: _row_view(v) for k, v in flat_state.items()}
    traj_view = _row_view(flat_traj)
    shapes = {name: (1, -1) + store[name].shape[1:] for name in flat_store}
    left = Counter(t for _, t, _, _ in groups)  # per round, its groups not yet computed
    live: dict[int, tuple[Any, ...]] = {}  # the rows of the rounds begun and not finished (_round_rows)
    for _, t, lo, hi in groups:
        made = live.get(t)
        if made is None:
            made = live[t] = _round_rows(rounds[t - 1], weights[t - 1], n)
            rounds[t - 1] = ()  # its store rows are in the made rows now
        rows_fi, rows_run, rows_agent, round_col, round_w, round_used, full = made
        every = full[lo]
        left[t] -= 1
        if not left[t]:
            del live[t]  # its last group
        fi = rows_fi[lo:hi]  # (run, agent) rows of the flattened states, by run then agent
        rr, agents = rows_run[lo:hi], rows_agent[lo:hi]
        col, w, use = round_col[:, lo:hi], round_w[:, lo:hi], None if every else round_used[:, lo:hi]
        mixed = {name: _mix_rows(arr, col, w, use).reshape(shapes[name]) for name, arr in flat_store.items()}
        mine = {k: np.take(v, fi, axis=0)[None] for k, v in flat_state.items()}
        new = {k: np.asarray(v) for k, v in rule_update(alg, mine, mixed, t, agents, problem).items()}
        for k, v in new.items():
            _put_rows(flat_state[k], fi, v[0], state_views[k])
        _put_rows(flat_traj, t * runs * n + fi, np.asarray(alg.decision(new))[0], traj_view)
        if t < horizon:
            emit(rr, agents, t + 1, new, fi)
    messages = {}
    for name, arr in store.items() if with_messages else ():
        if not unicast:
            messages[name] = np.ascontiguousarray(arr[:own_rows].reshape((horizon, runs, n) + arr.shape[1:]).swapaxes(0, 1))
        else:
            out = np.full((runs, horizon, n, n) + arr.shape[1:], np.nan)
            copies = arr[own_rows:].reshape((total, runs) + arr.shape[1:])
            out[:, plan.m_round - 1, plan.m_send, plan.m_recv] = copies.swapaxes(0, 1)
            messages[name] = out
    return traj, state, messages, staleness


def _round_groups(plan: Any, used: list[np.ndarray], source: list[np.ndarray], weights: list[np.ndarray],
                  lev: np.ndarray, unicast: bool, link_round: np.ndarray, own_rows: int, total: int, rows_total: int,
                  staleness: np.ndarray | None, plan_rounds: list[tuple[np.ndarray, ...]]
                  ) -> tuple[list[tuple[int, int, int, int]], list[tuple[Any, ...]]]:
    """Per round, every run's realized rows over the message store, rows sorted by level.

    Round ``t``'s rows are its combines ``(run, agent)``, ordered by level, then run, then agent (a stable
    sort of ``run * N + agent`` by level). Slot ``p`` of a row is the ``p``-th entry of the agent's weight
    row (CSR order): the store row of its message (-1 if the entry is not combined) and its realized weight,
    gathered for every row of the round at once by :func:`_round_rows` when the round's first group comes.
    The store's rows: broadcast, ``((round - 1) * R + run) * N + agent`` (the agent's message of that
    round; round-major, so that a group's reads fall in a few rounds' blocks); unicast, the senders' own
    terms likewise, then ``own_rows + message * R + run`` for the copies. Fills ``staleness`` ``(R, T, N)``
    (each combine's oldest message used, 0 if none), unless it is ``None``. ``plan_rounds``:
    ``plan.rounds`` as a list.

    Returns:
        ``(groups, rounds)``: ``groups`` the ``(level, round, first row, end row)`` of every group of
        combines of one level and one round, in level order; ``rounds[t - 1]`` what :func:`_round_rows`
        makes the round's sorted rows from (``P`` the round's longest weight row).
    """
    runs = used[0].shape[0]
    n, horizon = plan.N, plan.T
    itype = np.int32 if rows_total < 2**31 - 1 else np.int64
    run = np.arange(runs, dtype=itype)[:, None]
    groups: list[tuple[int, int, int, int]] = []
    rounds: list[tuple[Any, ...]] = []
    small_levels = int(lev.max(initial=0)) < 2**16
    for t in range(1, horizon + 1):
        indptr, rows, cols, _, entry_msg = plan_rounds[t - 1]
        use, src = used[t - 1], source[t - 1]
        if not unicast:
            col = ((src.astype(itype) - 1) * itype(runs) + run) * itype(n) + cols.astype(itype)[None, :]
        else:
            col = np.empty(use.shape, dtype=itype)
            diag = entry_msg < 0
            col[:, diag] = (itype(t - 1) * itype(runs) + run) * itype(n) + rows[diag].astype(itype)[None, :]
            edge = np.flatnonzero(~diag)
            msg = link_round[plan.m_link[entry_msg[edge]][None, :], np.where(use[:, edge], src[:, edge], 0)]
            col[:, edge] = own_rows + msg.astype(itype) * itype(runs) + run
        # slot p of agent i: entry indptr[i] + p of the round (entry 0 and "absent" if the row is shorter)
        lengths = np.diff(indptr)
        has = lengths[:, None] > np.arange(int(lengths.max(initial=0)))  # (N, P)
        every_has = bool(has.all())
        entry = np.where(has, indptr[:-1, None] + np.arange(has.shape[1]), 0).astype(np.intp)
        if staleness is not None:  # the largest age over each row's used entries (0 if none), slot by slot
            age = np.where(use, t - src, 0)
            oldest = np.zeros((runs, n), dtype=staleness.dtype)
            for p in range(has.shape[1]):
                age_p = np.take(age, entry[:, p], axis=1)
                np.maximum(oldest, age_p, out=oldest, where=True if every_has else has[:, p])
            staleness[:, t - 1] = oldest
        level = lev[t].reshape(-1)
        # the same stable order; numpy sorts 16-bit integers by radix sort (levels are at most a few per round)
        perm = np.argsort(level.astype(np.uint16) if small_levels else level, kind="stable").astype(itype)
        ordered = level[perm]
        col[~use] = -1  # an entry not combined
        cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
        starts = np.concatenate(([0], cuts)).tolist()
        ends = np.concatenate((cuts, [perm.size])).tolist()
        groups += [(int(ordered[a]), t, a, b) for a, b in zip(starts, ends)]
        rounds.append((perm, col, entry.reshape(-1), has, every_has, starts))
    groups.sort(key=lambda g: (g[0], g[1]))
    return groups, rounds


def _round_rows(pending: tuple[Any, ...], weights: np.ndarray, n: int) -> tuple[Any, ...]:
    """One round's rows in sorted order (:func:`_round_groups`), made when the round's first group comes.

    Every row's slots are gathered once (a group is then a range of rows), slot-major ``(P, R N)``: a
    group's terms of one slot are one contiguous range. Made per round and dropped after its last group,
    so that the rounds' rows share memory instead of each touching fresh pages.

    Args:
        pending: the round's ``(permutation, store rows (R, nnz) (-1: not combined), each agent's entry per
            slot (N P,), which agents have each slot (N, P), all have, the groups' first rows)``.
        weights: the round's realized weights ``(R, nnz)``; n: the number of agents.

    Returns:
        ``(flat index run * N + agent, run, agent, store rows (P, R N), weights (P, R N, 1), used (P, R N, 1),
        all used)``; ``all used`` maps each group's first row to whether every slot of its rows is used.
    """
    perm, col, entry, has, every_has, starts = pending
    fi = perm.astype(np.intp)
    rr, agents = np.divmod(fi, n)
    slot_shape = (fi.size, has.shape[1])
    row_col = np.ascontiguousarray(np.take(np.take(col, entry, axis=1).reshape(slot_shape), fi, axis=0).T)
    row_used = row_col >= 0
    if not every_has:
        row_used &= np.take(has.T, agents, axis=1)
    row_w = np.ascontiguousarray(np.take(np.take(weights, entry, axis=1).reshape(slot_shape), fi, axis=0).T)
    row_w[~row_used] = 0.0  # an unused slot's weight is finite (_mix_rows)
    # a group whose every slot is used mixes without masks
    full = np.asarray(np.logical_and.reduceat(row_used, starts, axis=1).all(axis=0)) if fi.size else np.ones(0, bool)
    return fi, rr, agents, row_col, row_w[:, :, None], row_used[:, :, None], dict(zip(starts, map(bool, full)))
