"""Several candidates' recursions in one replay: the runs of each candidate stacked, each step taken once.

The worst-case search (:mod:`asyncdp.privacy.worst_case`) evaluates many
candidate pairs on the same runs (:func:`asyncdp.privacy.constructed.constructed_replays`).
The candidates share the algorithm (bound to the user's problem), the domain
and the initial points, and differ in one cost family. Their runs are
stacked, candidate ``k`` on runs ``k R .. (k + 1) R - 1`` (:class:`Tiled`
schedules), and :class:`Stacked` takes each of the algorithm's steps once
for every candidate, with a :class:`StackedProblem` whose cost families each
answer for their own runs (:class:`StackedCosts`): the steps are per run, so
every candidate gets what its own rule computes (:class:`Blocks`, one rule
per candidate, which the stacked steps fall back to when the stacked problem
cannot answer a question as each candidate's own problem would,
:class:`Unstackable`).

The search's candidates are one base family with one linear member each
(:class:`~asyncdp.problems.costs.LinearOverride`,
:class:`~asyncdp.problems.online.LinearRound`), given by what makes them
linear (:class:`LinearCosts`): their gradients are taken in one call of the
base for every run of the stack, each candidate's linear entries set to its
own ``g`` (:class:`_LinearStack`, the same values as each family's own
call), and their families are built only if a step needs more than that and
the base's structure. :class:`Tiled` schedules keep each round's arrays and
a gather index derived from the copied schedules' own
(:func:`accounting.round_gather.tiled_gather_index`).

Three more ways of taking a step once: :class:`Paired` runs both problems'
rules of the stacked candidates as one :class:`Stacked` rule (the runs under
``P``, then under ``P'``; the replay asks each problem's rule in turn, the
second one's step takes both); consecutive groups of candidates of different
kinds (a kinked pair's linear and kinked costs) each stack on their own
(:func:`_groups`); and candidates may be evaluated on different numbers of
runs, each on its own first ones (``size`` per candidate, :func:`bounds`).
:class:`PairRules` is :class:`Paired` for one pair's two problems, built anew
for each replay's number of runs (the worst pair's tilted transcripts,
:func:`asyncdp.privacy.profiles.scheduled_tilted_bound`).

Example:
    >>> from asyncdp.problems.costs import LinearOverride, RendezvousQuadratic
    >>> base = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]])
    >>> costs = StackedCosts([LinearOverride(base, 1, [1.0, 0.0]), LinearOverride(base, 1, [0.0, 1.0])], 1)
    >>> costs.gradient(np.arange(2), np.zeros((2, 2, 2)))[:, 1].tolist()  # agent 1 of each candidate's run
    [[1.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from accounting.schedule_reads import dense_round

from ..problems.finite import all_finite

__all__ = ["bounds", "Tiled", "Blocks", "Unstackable", "LinearCosts", "StackedCosts", "StackedProblem", "Stacked", "Paired",
           "PairRules", "same_algorithm"]


def bounds(size: int | Sequence[int], count: int) -> list[int]:
    """Where each stacked candidate's runs start, and where the last one's end: ``count + 1`` offsets. ``size``:
    every candidate's number of runs, or each one's (the first ``size[k]`` runs of the stacked schedules).

    Example:
        >>> bounds(3, 2), bounds([3, 1, 2], 3)
        ([0, 3, 6], [0, 3, 4, 6])
    """
    if isinstance(size, (int, np.integer)):
        return [k * int(size) for k in range(count + 1)]
    sizes = [int(v) for v in size]
    if len(sizes) != count:
        raise ValueError(f"stacked candidates: {len(sizes)} sizes for {count} candidates")
    out = [0]
    for v in sizes:
        out.append(out[-1] + v)
    return out


def _per_run(values: Any, size: int | Sequence[int], axis: int | None = None) -> np.ndarray:
    """Each candidate's value repeated over its runs (``numpy.repeat`` by ``size`` or by each one's)."""
    return np.repeat(values, size if isinstance(size, (int, np.integer)) else np.asarray(size, dtype=np.int64),
                     axis=axis)


class Tiled:
    """``copies`` copies of a batch of schedules, one after the other (the runs of stacked candidates); with
    ``sizes``, copy ``k`` is the first ``sizes[k]`` runs of the batch (candidates evaluated on fewer runs)."""

    def __init__(self, schedules: Any, copies: int, sizes: Sequence[int] | None = None) -> None:
        self._schedules, self._copies = schedules, copies
        self._sizes = None if sizes is None or all(v == len(schedules) for v in sizes) else [int(v) for v in sizes]
        if self._sizes is not None and (len(self._sizes) != copies or
                                        not all(0 < v <= len(schedules) for v in self._sizes)):
            raise ValueError(f"stacked candidates: sizes {sizes} for {copies} copies of {len(schedules)} runs")
        self._rounds: dict[Any, Any] = {}  # each round's arrays and gather index, for every pass of the replay

    def __len__(self) -> int:
        return len(self._schedules) * self._copies if self._sizes is None else sum(self._sizes)

    def __getitem__(self, runs: slice) -> Tiled:
        if range(len(self))[runs] != range(len(self)):
            raise ValueError("stacked candidates are replayed as one chunk")
        return self

    def dense_runs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        got = self._rounds.get(t)
        if got is None and self._sizes is not None:  # each copy its own first runs
            w, src = dense_round(self._schedules, t)
            got = self._rounds[t] = (np.concatenate([w[:v] for v in self._sizes]),
                                     np.concatenate([src[:v] for v in self._sizes]))
        if got is None:
            tiled = getattr(self._schedules, "tiled_round", None)  # kept by the schedules for every stack of them
            if tiled is not None:
                got = self._rounds[t] = tiled(t, self._copies)
            else:
                w, src = dense_round(self._schedules, t)
                got = self._rounds[t] = (np.concatenate([w] * self._copies), np.concatenate([src] * self._copies))
        return got

    def shared_round(self, t: int) -> Any:
        """The copied schedules' ``shared_round(t)`` (:meth:`~asyncdp.privacy.constructed.DenseSchedules.shared_round`:
        copies of runs that all have round ``t``'s ``(W, S)`` have it too), ``None`` when they have none."""
        shared = getattr(self._schedules, "shared_round", None)
        return None if shared is None else shared(t)

    def gather_index(self, t: int) -> Any:
        """:func:`accounting.round_gather.gather_index` of round ``t``, from the copied schedules' (kept by
        them when they keep it: :class:`~asyncdp.privacy.constructed.DenseSchedules`)."""
        from accounting.round_gather import gather_index, tiled_gather_index

        key = ("index", t)
        got = self._rounds.get(key)
        if got is None and self._sizes is not None:
            got = self._rounds[key] = gather_index(self.dense_runs(t)[1])
        if got is None:
            one = self._schedules.gather_index(t) if hasattr(self._schedules, "gather_index") else \
                gather_index(dense_round(self._schedules, t)[1])
            got = self._rounds[key] = tiled_gather_index(one, self._copies)
        return got


class Blocks:
    """Several :class:`~accounting.replay_inputs.ChannelRule` s, rule ``k`` on runs ``k size .. (k + 1) size - 1``.

    Each rule sees exactly its own runs, as in a replay of its own; the state is the list of the rules' states.
    """

    def __init__(self, rules: Sequence[Any], size: int | Sequence[int]) -> None:
        self.rules, self.size = list(rules), size
        self._bounds = bounds(size, len(self.rules))

    def initial_state(self, runs: int) -> list[Any]:
        if runs != self._bounds[-1]:
            raise ValueError("stacked candidates are replayed as one chunk")
        b = self._bounds
        return [r.initial_state(b[k + 1] - b[k]) for k, r in enumerate(self.rules)]

    def message_means(self, state: list[Any], t: int) -> dict[str, np.ndarray]:
        parts = [r.message_means(s, t) for r, s in zip(self.rules, state)]
        return {c: np.concatenate([np.asarray(p[c], dtype=float) for p in parts]) for c in parts[0]}

    def next_state(self, state: list[Any], mixed: Any, t: int) -> list[Any]:
        b = self._bounds
        return [r.next_state(s, {c: m[b[k]:b[k + 1]] for c, m in mixed.items()}, t)
                for k, (r, s) in enumerate(zip(self.rules, state))]


class Unstackable(Exception):
    """A call the stacked problem cannot answer as each candidate's own problem would (:class:`Stacked`)."""


def _same(a: Any, b: Any) -> bool:
    """Whether two attribute values are interchangeable: the same object, equal arrays, or equal plain values."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.array_equal(a, b)))
    if isinstance(a, (tuple, list)) and type(a) is type(b):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    if isinstance(a, (bool, int, float, str, np.integer, np.floating)) and type(a) is type(b):
        return bool(a == b)
    return False


def _common(objects: Sequence[Any], name: str) -> Any:
    """``name`` of the objects when every one has the same plain value (:func:`_same`), else :class:`Unstackable`."""
    values = [getattr(o, name) for o in objects]
    if callable(values[0]) or not all(_same(values[0], v) for v in values[1:]):
        raise Unstackable(name)
    return values[0]


class LinearCosts:
    """A candidate's cost family given by its linear member: ``family_class(base, index, gradient)``
    (:class:`~asyncdp.problems.costs.LinearOverride` of agent ``index``, or
    :class:`~asyncdp.problems.online.LinearRound` of round ``index``), built only when asked (:meth:`family`).

    The worst-case search evaluates hundreds of candidates whose families differ only in ``g`` (and the
    round): :class:`StackedCosts` answers their gradients from the base and ``g`` (:class:`_LinearStack`) and
    their other attributes from one of them, so the others need not be built. The arguments are checked
    as the family checks them (a family that would reject them is built at once, which raises).

    Args:
        family_class: ``LinearOverride`` or ``LinearRound``.
        base: the base family.
        index: the changed agent, or the changed round.
        gradient: ``g``.
        finite: ``True`` when the caller has checked that every entry of ``gradient`` is finite (e.g. for many
            candidates at once, :meth:`finite_rows`), else ``None`` (checked here).

    Example:
        >>> from asyncdp.problems.costs import LinearOverride, RendezvousQuadratic
        >>> c = LinearCosts(LinearOverride, RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]]), 1, [3.0, -4.0])
        >>> c.family().gradient(np.arange(2), np.ones((2, 2))).tolist()
        [[2.0, 2.0], [3.0, -4.0]]
    """

    __slots__ = ("family_class", "base", "index", "gradient", "_built")

    def __init__(self, family_class: type, base: Any, index: int, gradient: Any, finite: bool | None = None) -> None:
        self.family_class, self.base, self.index = family_class, base, index
        self.gradient = np.array(gradient, dtype=float)
        self._built: Any = None
        fine = _structure_fine(family_class, base, index)
        fine = fine and self.gradient.shape == (base.dim,) and (
            finite is True or bool(np.isfinite(self.gradient).all()))
        if not fine:
            self.family()  # what the family raises

    @staticmethod
    def finite_rows(gradients: Sequence[Any], dim: int) -> list[bool] | None:
        """Per gradient, whether every entry is finite (one check for all of them: the ``finite`` argument of
        their :class:`LinearCosts`), or ``None`` when they are not all float vectors of length ``dim``.

        Example:
            >>> LinearCosts.finite_rows([[1.0, 2.0], [np.inf, 0.0]], 2)
            [True, False]
        """
        try:
            rows = np.array(gradients, dtype=float)
        except (TypeError, ValueError):
            return None
        if rows.ndim != 2 or rows.shape[1] != dim:
            return None
        return np.isfinite(rows).all(axis=1).tolist()

    def family(self) -> Any:
        """The family (built on the first call)."""
        if self._built is None:
            self._built = self.family_class(self.base, self.index, self.gradient)
        return self._built


_STRUCTURE: dict[tuple[type, int, Any], tuple[Any, bool]] = {}
""":func:`_structure_fine` answers, by class, base identity and index (the base kept, so its identity is not
reused); the search asks the same question for each of its hundreds of candidates."""

_STRUCTURE_ENTRIES = 64


def _structure_fine(family_class: type, base: Any, index: Any) -> bool:
    """Whether ``family_class(base, index, g)`` accepts ``base`` and ``index`` (:class:`LinearCosts`' check of
    everything but ``g``), else ``False``; a class other than ``LinearOverride`` or ``LinearRound`` raises."""
    fine = not isinstance(index, bool) and isinstance(index, (int, np.integer))
    key = (family_class, id(base), int(index) if fine else None)
    got = _STRUCTURE.get(key) if fine else None
    if got is not None and got[0] is base:  # (only a class checked below is kept)
        return got[1]
    from ..problems.costs import CostFamily, LinearOverride
    from ..problems.online import LinearRound, OnlineLoss

    if family_class not in (LinearOverride, LinearRound):
        raise TypeError(f"LinearCosts: family_class must be LinearOverride or LinearRound, got {family_class!r}")
    if family_class is LinearOverride:
        fine = fine and isinstance(base, CostFamily) and 0 <= index < base.num_agents
    else:
        fine = fine and isinstance(base, OnlineLoss) and 1 <= index <= base.num_rounds
    if key[2] is not None:
        if len(_STRUCTURE) >= _STRUCTURE_ENTRIES:
            _STRUCTURE.clear()
        _STRUCTURE[key] = (base, bool(fine))
    return bool(fine)


def _family(c: Any) -> Any:
    """A cost family, or the family of a :class:`LinearCosts`."""
    return c.family() if isinstance(c, LinearCosts) else c


def _linear_parts(c: Any) -> tuple[type, Any, Any, np.ndarray]:
    """``(class, base, agent or round, g)`` of a linear family or a :class:`LinearCosts`."""
    if isinstance(c, LinearCosts):
        return c.family_class, c.base, c.index, c.gradient
    index = c.agent if hasattr(c, "agent") else c.round_index
    return type(c), c.base, index, c.linear_gradient


def _base_gradient(base: Any, a: np.ndarray, x: np.ndarray, kwargs: dict[str, Any],
                   checked: dict[tuple[str, bytes], bool]) -> np.ndarray:
    """``base.gradient(a, x, **kwargs)``. For the replay's call (a float ``(R, N', d)`` array of points and ``N'``
    valid agents, at most a round as keyword) the base family's own computation without its input checks, which
    that call passes (``CostFamily._prepare``: it would return ``a`` and ``x`` as they are): the same ``_gradient``,
    the same shape and finiteness checks; anything else, or a result that fails them, is the family's own call
    (which raises what it raises). ``checked``: the stack's answers of :func:`_agents_fine`."""
    from ..problems.costs import CostFamily

    if (type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 3 and type(a) is np.ndarray
            and a.ndim == 1 and x.shape[1] == a.shape[0] and isinstance(base, CostFamily)
            and type(base).gradient is CostFamily.gradient and type(base)._prepare is CostFamily._prepare
            and x.shape[2] == base.dim and set(kwargs) <= {"round_index"}
            and _agents_fine(checked, a, base.num_agents)):
        out = np.asarray(base._gradient(a, x, kwargs.get("round_index")), dtype=float)
        if out.shape == x.shape and all_finite(out):
            return out
    return base.gradient(a, x, **kwargs)


def _agents_fine(checked: dict[tuple[str, bytes], bool], a: np.ndarray, num_agents: int) -> bool:
    """Whether ``a`` is integers in ``[0, num_agents)`` (``CostFamily._prepare``'s check), kept in ``checked`` by
    value."""
    if a.dtype.kind not in "iu":
        return False
    key = (a.dtype.str, a.tobytes())
    fine = checked.get(key)
    if fine is None:
        fine = checked[key] = bool(a.size == 0 or (a.min() >= 0 and a.max() < num_agents))
    return fine


class _LinearStack:
    """The candidates' cost families when each is one base family with one linear member (the worst-case
    search's candidates): their gradients in one call for every run of the stack.

    * :class:`~asyncdp.problems.costs.LinearOverride` (one base, one agent ``k``, candidate ``c``'s cost of
      agent ``k`` is ``<g_c, x>``): the base's :meth:`gradient` at every point of the stack, then agent ``k``'s
      entries of candidate ``c``'s runs set to ``g_c``. That is what each candidate's own call computes on
      its runs (the base's gradients, their finiteness check, the same selection of ``g``). Candidates that
      each change their own agent ``k_c`` (one base): each run's agent ``k_c`` entries set so.
    * :class:`~asyncdp.problems.online.LinearRound` (one base sequence, candidate ``c``'s round ``t_c`` loss
      ``<g_c, x>``), asked for round ``t``'s gradient: the base's round-``t`` gradient at every point (unless
      every candidate's linear round is ``t``), the runs of the candidates with ``t_c = t`` set to their
      ``g_c``, times the agents' block mask, as each candidate's :meth:`OnlineLoss._gradient` does.

    Both are per-entry operations on the runs' points, so each run's entries are those of its candidate's own
    call, bit for bit (tests/asyncdp/privacy/test_constructed.py compares them). A call this does not cover
    (another keyword, a sum over rounds, an argument the families would reject, a non-finite gradient)
    gives ``None``, and the candidates' own calls answer it (raising what they raise).
    """

    varying = ("linear_gradient", "round_index")
    """The attributes that may differ between such families; every other one is the base's structure, the same
    for all of them (the number of agents, the dimension, the rounds, an online loss's blocks and mask)."""

    def __init__(self, kind: str, parts: Sequence[tuple[type, Any, Any, np.ndarray]], costs: Sequence[Any],
                 size: int | Sequence[int]) -> None:
        self.kind, self.size, self._costs = kind, size, costs
        self.bounds = bounds(size, len(parts))
        self.base, self.agent = parts[0][1], parts[0][2]
        self._checked: dict[tuple[str, bytes], bool] = {}
        self.rows = _per_run(np.array([p[3] for p in parts], dtype=float), size, axis=0)  # each run's g
        self.rounds = np.array([p[2] for p in parts]) if kind == "round" else None
        # kind "agents": each run's changed agent (its candidate's)
        self.agents = _per_run(np.array([int(p[2]) for p in parts]), size) if kind == "agents" else None
        if kind == "agents":  # (the changed agent differs too: every candidate answers it, _common)
            self.varying = (*_LinearStack.varying, "agent")

    @property
    def first(self) -> Any:
        """The first candidate's family (built if it was given by a :class:`LinearCosts`)."""
        return _family(self._costs[0])

    @classmethod
    def of(cls, costs: Sequence[Any], size: int | Sequence[int]) -> _LinearStack | None:
        """The stack of ``costs`` when they are such families or :class:`LinearCosts` (two at least), else
        ``None``."""
        from ..problems.costs import LinearOverride
        from ..problems.online import LinearRound

        if len(costs) < 2 or not all(isinstance(c, (LinearCosts, LinearOverride, LinearRound)) for c in costs):
            return None
        parts = [_linear_parts(c) for c in costs]
        kind, base, index, _ = parts[0]
        if kind is LinearOverride and all(p[0] is LinearOverride and p[1] is base and p[2] == index for p in parts):
            return cls("agent", parts, costs, size)
        if kind is LinearOverride and all(p[0] is LinearOverride and p[1] is base for p in parts):
            return cls("agents", parts, costs, size)  # each candidate changes its own agent
        if kind is LinearRound and all(p[0] is LinearRound and p[1] is base for p in parts):
            return cls("round", parts, costs, size)
        return None

    def gradient(self, a: np.ndarray, x: np.ndarray, kwargs: dict[str, Any]) -> np.ndarray | None:
        """The stacked gradients of agents ``a`` at the stack's points ``x`` (one per run), or ``None``."""
        try:
            if self.kind == "agent":
                return self._agent(a, x, kwargs)
            if self.kind == "agents":
                return self._agents(a, x, kwargs)
            return self._round(a, x, kwargs)
        except Exception:  # noqa: BLE001 - the candidates' own calls answer (and raise what they raise)
            return None

    def _per_run(self, ndim: int) -> np.ndarray:
        return self.rows.reshape((self.rows.shape[0],) + (1,) * (ndim - 2) + (self.rows.shape[1],))

    def set_own(self, out: np.ndarray, a: np.ndarray) -> None:
        """Kinds ``"agent"`` and ``"agents"``: in the base's gradients ``out`` ``(R, N', d)`` (one row per run of the
        stack, agents ``a`` ``(N',)``), each run's changed agent's entries set to its ``g``, in place (the entries
        :meth:`gradient`'s ``np.where`` of every entry selects)."""
        if self.kind == "agent":
            where = np.flatnonzero(a == self.agent)
            if where.size == 1:  # (one column: the same entries set, by a plain index)
                out[:, int(where[0])] = self.rows
            else:
                out[:, where] = self.rows[:, None, :]
            return
        assert self.agents is not None
        runs, cols = np.nonzero(a[None, :] == self.agents[:, None])
        out[runs, cols] = self.rows[runs]

    def _agent(self, a: np.ndarray, x: np.ndarray, kwargs: dict[str, Any]) -> np.ndarray:
        out = _base_gradient(self.base, a, x, kwargs, self._checked)
        if a.ndim == 1 and out.ndim == 3 and out.shape[1] == a.shape[0]:  # every run's agents a: their columns
            out = np.array(out)  # the base's array is left as it gave it
            self.set_own(out, a)
            return out
        mine = np.broadcast_to(a, out.shape[:-1]) == self.agent
        return np.where(mine[..., None], self._per_run(out.ndim), out)

    def _agents(self, a: np.ndarray, x: np.ndarray, kwargs: dict[str, Any]) -> np.ndarray:
        """Kind ``"agents"``: as :meth:`_agent`, each run's own changed agent's entries set to its ``g``."""
        assert self.agents is not None
        out = _base_gradient(self.base, a, x, kwargs, self._checked)
        if out.shape[0] != self.agents.shape[0]:
            raise ValueError("not one point per run")
        if a.ndim == 1 and out.ndim == 3 and out.shape[1] == a.shape[0]:  # every run's agents a: their columns
            out = np.array(out)  # the base's array is left as it gave it
            self.set_own(out, a)
            return out
        mine = np.broadcast_to(a, out.shape[:-1]) == self.agents.reshape((-1,) + (1,) * (out.ndim - 2))
        return np.where(mine[..., None], self._per_run(out.ndim), out)

    def _round(self, a: np.ndarray, x: np.ndarray, kwargs: dict[str, Any]) -> np.ndarray | None:
        fam = self.first
        t = kwargs.get("round_index")
        if set(kwargs) != {"round_index"} or isinstance(t, bool) or not isinstance(t, (int, np.integer)) \
                or not 1 <= t <= fam.num_rounds:
            return None
        xx = np.asarray(x, dtype=float)
        if a.dtype.kind not in "iu" or (a.size and (a.min() < 0 or a.max() >= fam.num_agents)) \
                or xx.shape[-1] != fam.dim:
            return None
        shape = np.broadcast_shapes(a.shape, xx.shape[:-1]) + (fam.dim,)
        assert self.rounds is not None
        linear = np.flatnonzero(self.rounds == t)
        if linear.size == self.rounds.size:
            grad = np.empty(xx.shape)
        else:
            grad = np.array(fam.base.round_gradient(t, xx), dtype=float)
            if grad.shape != xx.shape:
                return None
        b = self.bounds
        for k in linear.tolist():
            grad[b[k]:b[k + 1]] = self.rows[b[k]]
        out = grad * fam.mask[a]
        if out.shape != shape:
            out = np.broadcast_to(out, shape).copy()
        return out if bool(np.isfinite(out).all()) else None


class _KinkedStack:
    """The candidates' cost families when each is one base family with one agent's kinked cost
    (:class:`~asyncdp.privacy.kinked.KinkedOverride`, the worst-case search's kinked pairs), or one base loss
    sequence with one round's kinked loss (:class:`~asyncdp.privacy.kinked.KinkedRound`, every node's block of
    it in that round): the base's
    :meth:`gradient` at every point of the stack, then the agent's entries of each candidate's runs set to its
    kinked gradient, by the same per-entry operations as each family's own call (so the same values). A call
    this does not cover gives ``None`` and the candidates' own calls answer it."""

    def __init__(self, costs: Sequence[Any], size: int | Sequence[int]) -> None:
        from .kinked import KinkedRound

        first = costs[0]
        self.base, self.dim = first._base, first.dim
        # one agent's kinked cost, or (round adjacency) one round's kinked loss, every node reading its block
        self.agent = None if isinstance(first, KinkedRound) else first.agent
        self.rounds = _per_run([c.round_index for c in costs], size) if self.agent is None else None
        self.axis = _per_run([c._axis for c in costs], size)
        self.c = _per_run([c._c for c in costs], size)
        self.scale = _per_run([c.signed_scale for c in costs], size)
        self.eta = _per_run([c._eta for c in costs], size)
        self._checked: dict[tuple[str, bytes], bool] = {}  # (_agents_fine's answers)

    @classmethod
    def of(cls, costs: Sequence[Any], size: int | Sequence[int]) -> _KinkedStack | None:
        """The stack of ``costs`` when they are kinked families of one base and agent, or kinked loss sequences
        (:class:`~asyncdp.privacy.kinked.KinkedRound`) of one base (two at least), else ``None``."""
        from .kinked import KinkedOverride, KinkedRound

        if len(costs) < 2:
            return None
        if all(type(c) is KinkedRound for c in costs):
            return cls(costs, size) if all(c._base is costs[0]._base for c in costs) else None
        if not all(type(c) is KinkedOverride for c in costs):
            return None
        if not all(c._base is costs[0]._base and c.agent == costs[0].agent for c in costs):
            return None
        return cls(costs, size)

    def gradient(self, a: np.ndarray, x: np.ndarray, kwargs: dict[str, Any]) -> np.ndarray | None:
        """The stacked gradients of agents ``a`` at the stack's points ``x`` (one per run), or ``None``."""
        if not (a.ndim == 1 and x.ndim == 3 and x.shape[1] == a.shape[0] and x.shape[0] == self.axis.size):
            return None
        try:
            out = np.array(_base_gradient(self.base, a, x, kwargs, self._checked), dtype=float)
        except Exception:  # noqa: BLE001 - the candidates' own calls answer (and raise what they raise)
            return None
        if out.shape != x.shape:
            return None
        if self.agent is None:
            got = self._round_gradient(out, a, x, kwargs.get("round_index"))
        else:
            self.set_own(out, a, x)
            got = out
        # a kinked entry at an infinite point is inf / inf: the candidates' own calls raise the cost's error
        return got if got is None or np.isfinite(got).all() else None

    def set_own(self, out: np.ndarray, a: np.ndarray, x: np.ndarray) -> None:
        """One agent's kinked costs: in the base's gradients ``out`` at the stack's points ``x`` ``(R, N', d)`` (agents
        ``a`` ``(N',)``), the agent's entries of each run set to its candidate's kinked gradient, in place."""
        from .kinked import kink_slope

        runs = np.arange(x.shape[0])
        for col in np.flatnonzero(a == self.agent).tolist():
            t = x[runs, col, self.axis] - self.c
            out[:, col] = 0.0
            out[runs, col, self.axis] = self.scale * kink_slope(t, self.eta)

    def _round_gradient(self, out: np.ndarray, a: np.ndarray, x: np.ndarray, round_index: Any) -> np.ndarray | None:
        """The runs whose candidate's kinked round is ``round_index``: each node's block of the kinked gradient
        (as :meth:`~asyncdp.privacy.kinked.KinkedRound.gradient`: the gradient, then times the node's mask);
        the base's elsewhere (the other rounds are the base's)."""
        from .kinked import kink_slope

        if round_index is None:  # (the cumulative loss: the candidates' own calls answer)
            return None
        assert self.rounds is not None
        runs = np.flatnonzero(self.rounds == round_index)
        if runs.size == 0:
            return out
        axis, mask = self.axis[runs], self.base.mask[a]  # (r,), (N, d)
        t = x[runs[:, None], np.arange(a.size)[None, :], axis[:, None]] - self.c[runs, None]  # (r, N)
        mine = np.zeros((runs.size, a.size, self.dim))
        mine[np.arange(runs.size)[:, None], np.arange(a.size)[None, :], axis[:, None]] = \
            self.scale[runs, None] * kink_slope(t, self.eta[runs, None])
        out[runs] = mine * mask[None, :, :]
        return out


def _groups(costs: Sequence[Any], size: int | Sequence[int]) -> list[tuple[int, int, Any]] | None:
    """The candidates as consecutive groups each of which stacks (:class:`_LinearStack`, :class:`_KinkedStack`)
    or is one candidate: ``[(first, stop, stack or None)]``, or ``None`` when some group of several does not
    stack, or there is one group (e.g. a replay of both problems of kinked pairs: the linear costs, then the
    kinked ones)."""
    from ..problems.costs import LinearOverride
    from ..problems.online import LinearRound
    from .kinked import KinkedOverride, KinkedRound

    def kind(c: Any) -> str:
        if isinstance(c, LinearCosts) or type(c) in (LinearOverride, LinearRound):
            return "linear"
        return "kinked" if type(c) in (KinkedOverride, KinkedRound) else f"other {id(c)}"

    kinds = [kind(c) for c in costs]
    bounds = [0] + [k for k in range(1, len(costs)) if kinds[k] != kinds[k - 1]] + [len(costs)]
    if len(bounds) <= 2:
        return None
    out = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        part = costs[start:stop]
        stack: Any = None
        if stop - start > 1:
            mine = size if isinstance(size, (int, np.integer)) else list(size)[start:stop]
            stack = _LinearStack.of(part, mine) if kinds[start] == "linear" else _KinkedStack.of(part, mine)
            if stack is None:
                return None
        out.append((start, stop, stack))
    return out


def _shared_base(groups: list[tuple[int, int, Any]] | None) -> Any:
    """The base family of ``groups`` (:func:`_groups`) when every group is a stack over that one object of one agent's
    linear costs, each run's own agent's, or one agent's kinked costs (their gradients then share one base call:
    :meth:`StackedCosts._grouped_shared`), else ``None``."""
    if not groups:
        return None
    stacks = [stack for _, _, stack in groups]
    if not all((isinstance(s, _LinearStack) and s.kind in ("agent", "agents"))
               or (isinstance(s, _KinkedStack) and s.agent is not None) for s in stacks):
        return None
    base = stacks[0].base
    return base if all(s.base is base for s in stacks) else None


class StackedCosts:
    """The candidates' cost families as one, candidate ``k``'s on runs ``k size .. (k + 1) size - 1`` (or on its
    own number of runs, ``size[k]``, one candidate's after the other's).

    :meth:`gradient` and :meth:`value` split the points along their run axis and ask each candidate's own family
    (so each candidate's equations are its own); any other attribute is answered only when every candidate's
    is the same plain value (the number of agents, the blocks of an online loss, ...), anything else (another
    method, a value that differs) raises :class:`Unstackable`. ``isinstance`` sees the candidates' class.
    """

    def __init__(self, costs: Sequence[Any], size: int | Sequence[int]) -> None:
        self._given, self._size = list(costs), size
        self._bounds = bounds(size, len(self._given))
        self._built: list[Any] | None = None
        self._known: dict[str, Any] = {}  # the families do not change: an answer holds for the whole replay
        self._linear = _LinearStack.of(self._given, size)
        self._kinked = None if self._linear is not None else _KinkedStack.of(self._given, size)
        self._groups = None if self._linear is not None or self._kinked is not None else _groups(self._given, size)
        self._shared = _shared_base(self._groups)
        self._checked: dict[tuple[str, bytes], bool] = {}  # (_agents_fine's answers for the shared base)

    @property
    def _costs(self) -> list[Any]:
        """Every candidate's family (those given by a :class:`LinearCosts` built on first use)."""
        if self._built is None:
            self._built = [_family(c) for c in self._given]
        return self._built

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105 - isinstance checks see what each candidate's family is
        kinds = [c.family_class if isinstance(c, LinearCosts) else type(c) for c in self._given]
        # the most derived class every candidate's family is an instance of (its own class when they share it)
        return next(k for k in kinds[0].__mro__ if all(issubclass(other, k) for other in kinds))

    def _split_runs(self, agents: Any, x: Any) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(agents, points, whether the agents carry the run axis)`` of a call with one point per run of the
        stack, else :class:`Unstackable`."""
        xx = np.asarray(x)
        total = self._bounds[-1]
        if xx.ndim < 2 or xx.shape[0] != total:  # not one point per run: no candidate to give it to
            raise Unstackable(f"points of shape {xx.shape}")
        a = np.asarray(agents)
        if xx.ndim == 2 and a.ndim >= 1:  # one point per agent (N, d) or per run (R, d): not told apart
            raise Unstackable(f"points of shape {xx.shape} for agents of shape {a.shape}")
        if a.ndim == xx.ndim - 1 and a.shape[0] != 1:  # the agents carry the run axis too
            if a.shape[0] != total:
                raise Unstackable(f"agents of shape {a.shape}")
            return a, xx, True
        if a.ndim >= xx.ndim:
            raise Unstackable(f"agents of shape {a.shape}")
        return a, xx, False

    def _parts(self, agents: Any, x: Any) -> list[tuple[Any, np.ndarray]]:
        a, xx, per_run = self._split_runs(agents, x)
        b = self._bounds
        if per_run:
            return [(a[b[k]:b[k + 1]], xx[b[k]:b[k + 1]]) for k in range(len(self._given))]
        return [(agents, xx[b[k]:b[k + 1]]) for k in range(len(self._given))]

    def gradient(self, agents: Any, x: Any, **kwargs: Any) -> np.ndarray:
        if len(self._given) == 1:  # one candidate: its own family answers every call
            return self._costs[0].gradient(agents, x, **kwargs)
        if self._linear is not None:
            a, xx, _ = self._split_runs(agents, x)  # the checks of the call below, before anything is computed
            got = self._linear.gradient(a, xx, kwargs)
            if got is not None:
                return got
        if self._kinked is not None:
            a, xx, per_run = self._split_runs(agents, x)
            got = None if per_run else self._kinked.gradient(a, xx, kwargs)
            if got is not None:
                return got
        if self._groups is not None:
            got = self._grouped(agents, x, kwargs)
            if got is not None:
                return got
        return np.concatenate([c.gradient(a, xk, **kwargs)
                               for c, (a, xk) in zip(self._costs, self._parts(agents, x))])

    def _grouped(self, agents: Any, x: Any, kwargs: dict[str, Any]) -> np.ndarray | None:
        """The gradients of a stack of consecutive groups of candidates (:func:`_groups`): each group's from its
        own stack (or its one candidate's family), on its own runs; ``None`` when a group's stack does not cover
        the call or a call raises (the candidates' own calls then answer, raising what they raise in order)."""
        a, xx, per_run = self._split_runs(agents, x)
        b = self._bounds
        assert self._groups is not None
        if self._shared is not None and not per_run and a.ndim == 1 and xx.ndim == 3 and xx.shape[1] == a.shape[0]:
            return self._grouped_shared(a, xx, kwargs)
        parts = []
        try:
            for start, stop, stack in self._groups:
                ak, xk = (a[b[start]:b[stop]] if per_run else a), xx[b[start]:b[stop]]
                if stack is None:  # (only this candidate's family is built)
                    got = np.asarray(_family(self._given[start]).gradient(ak, xk, **kwargs), dtype=float)
                elif isinstance(stack, _KinkedStack):
                    got = None if per_run else stack.gradient(ak, xk, kwargs)
                else:
                    got = stack.gradient(ak, xk, kwargs)
                if got is None or got.shape[:1] != xk.shape[:1]:
                    return None
                parts.append(got)
        except Exception:  # noqa: BLE001 - the candidates' own calls answer (and raise what they raise)
            return None
        return np.concatenate(parts)

    def _grouped_shared(self, a: np.ndarray, x: np.ndarray, kwargs: dict[str, Any]) -> np.ndarray | None:
        """:meth:`_grouped` when every group is a stack of one agent's (or each run's own agent's) costs over one
        base family (:func:`_shared_base`): the base's gradients at every point of the stack in one call, then each
        group's runs' changed entries set (each group's own call computes the base's gradients at its own points:
        the same per-entry values), ``None`` where a group's own call gives ``None`` (a non-finite kinked
        gradient; the base's call failing)."""
        try:
            out = np.array(_base_gradient(self._shared, a, x, kwargs, self._checked), dtype=float)
            if out.shape != x.shape:
                return None
            b = self._bounds
            assert self._groups is not None
            for start, stop, stack in self._groups:
                block = out[b[start]:b[stop]]
                if isinstance(stack, _KinkedStack):
                    stack.set_own(block, a, x[b[start]:b[stop]])
                    if not np.isfinite(block).all():  # (as the group's own call: the candidates' calls answer)
                        return None
                else:
                    stack.set_own(block, a)
        except Exception:  # noqa: BLE001 - the candidates' own calls answer (and raise what they raise)
            return None
        return out

    def value(self, agents: Any, x: Any, **kwargs: Any) -> np.ndarray:
        if len(self._given) == 1:
            return self._costs[0].value(agents, x, **kwargs)
        return np.concatenate([np.asarray(c.value(a, xk, **kwargs))
                               for c, (a, xk) in zip(self._costs, self._parts(agents, x))])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_given", "_built", "_size", "_bounds", "_known", "_linear", "_kinked",
                                             "_groups"):
            raise AttributeError(name)
        if name not in self._known:
            if self._linear is not None and name not in self._linear.varying:  # the base's structure: one answers
                self._known[name] = _common([self._linear.first], name)
            elif self._groups is not None:  # each group's: a linear group's structure from its first family
                answer: list[Any] = []
                for start, stop, stack in self._groups:
                    if isinstance(stack, _LinearStack) and name not in stack.varying:
                        answer.append(stack.first)
                    else:
                        answer.extend(_family(c) for c in self._given[start:stop])
                self._known[name] = _common(answer, name)
            else:
                self._known[name] = _common(self._costs, name)
        return self._known[name]


class StackedProblem:
    """The candidates' problems as one: their costs as :class:`StackedCosts`, their (common) domain, and every
    other attribute as :func:`_common` of the problems (built on the first such question: ``problems()``)."""

    def __init__(self, costs: Sequence[Any], domain: Any, problems: Any, size: int | Sequence[int]) -> None:
        self.costs = StackedCosts(costs, size)
        self.domain = domain
        self._problems = problems
        self.num_agents = self.costs.num_agents  # as Problem.num_agents: the costs'
        self.dim = domain.dim  # as Problem.dim: the domain's

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105 - isinstance checks see a Problem, as each candidate's is
        from ..problems.problem import Problem

        return Problem

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_problems":
            raise AttributeError(name)
        return _common(self._problems(), name)


class Stacked:
    """The candidates' rules (one algorithm, one initial point, one domain) in one call per step.

    The algorithm's R and U steps run once on the runs of every candidate, with a :class:`StackedProblem`:
    each candidate's cost family answers for its own runs, and the steps are per-run, so every candidate gets
    what its own rule (:class:`Blocks`) computes. A step that needs something the stacked problem cannot
    answer (:class:`Unstackable`) is computed with the candidates' own rules from then on (the state split
    by runs).

    Args:
        algorithm: the candidates' algorithm (one object).
        costs: each candidate's cost family.
        domain: the candidates' domain (one object).
        problems: ``() -> list`` of each candidate's problem (called only when needed).
        x0: the initial points (the same for every candidate).
        size: runs per candidate (or each candidate's).
    """

    def __init__(self, algorithm: Any, costs: Sequence[Any], domain: Any, problems: Any, x0: np.ndarray,
                 size: int | Sequence[int]) -> None:
        from .behavior import AlgorithmChannelRule

        self.size, self.count = size, len(costs)
        self._bounds = bounds(size, self.count)
        self.algorithm, self.x0, self._problems = algorithm, x0, problems
        self.one = AlgorithmChannelRule(algorithm, StackedProblem(costs, domain, problems, size), x0)
        self._blocks: Blocks | None = None

    @property
    def blocks(self) -> Blocks:
        """The candidates' own rules (built on first use)."""
        from .behavior import AlgorithmChannelRule

        if self._blocks is None:
            self._blocks = Blocks([AlgorithmChannelRule(self.algorithm, p, self.x0) for p in self._problems()],
                                   self.size)
        return self._blocks

    def _split(self, state: Any) -> list[Any]:
        b = self._bounds
        total = b[-1]
        if not isinstance(state, dict) or not all(isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == total
                                                  for v in state.values()):
            raise ValueError("stacked candidates: the algorithm's state is not split by runs")
        return [{k: v[b[i]:b[i + 1]] for k, v in state.items()} for i in range(self.count)]

    def initial_state(self, runs: int) -> Any:
        if runs != self._bounds[-1]:
            raise ValueError("stacked candidates are replayed as one chunk")
        try:
            return ("one", self.one.initial_state(runs))
        except Unstackable:
            return ("blocks", self.blocks.initial_state(runs))

    def message_means(self, state: Any, t: int) -> dict[str, np.ndarray]:
        kind, inner = state
        if kind == "one":
            try:
                return {c: np.asarray(m, dtype=float) for c, m in self.one.message_means(inner, t).items()}
            except Unstackable:
                inner = self._split(inner)
        return self.blocks.message_means(inner, t)

    def next_state(self, state: Any, mixed: Any, t: int) -> Any:
        kind, inner = state
        if kind == "one":
            try:
                return ("one", self.one.next_state(inner, mixed, t))
            except Unstackable:
                inner = self._split(inner)
        return ("blocks", self.blocks.next_state(inner, mixed, t))


class _Box:
    """One round's states of a :class:`Paired` replay (both problems' runs), the message means of its round once
    computed, or, between the two problems' U steps, what the second one completes."""

    __slots__ = ("state", "t", "means", "pending")

    def __init__(self, state: Any = None, pending: Any = None) -> None:
        self.state, self.pending = state, pending
        self.t: int | None = None
        self.means: dict[str, np.ndarray] = {}


class _Half:
    """One problem's state in a :class:`Paired` replay: its half of a :class:`_Box`."""

    __slots__ = ("box", "side")

    def __init__(self, box: _Box, side: int) -> None:
        self.box, self.side = box, side


class _Side:
    """One problem's rule of a :class:`Paired` replay (:attr:`Paired.p`, :attr:`Paired.q`)."""

    def __init__(self, pair: Paired, side: int) -> None:
        self.pair, self.side = pair, side

    def _mine(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        n = self.pair.runs
        return {c: m[:n] if self.side == 0 else m[n:] for c, m in arrays.items()}

    def initial_state(self, runs: int) -> _Half:
        pair = self.pair
        if runs != pair.runs:
            raise ValueError("stacked candidates are replayed as one chunk")
        if self.side == 0:
            pair.last = _Box(pair.both.initial_state(2 * runs))
        elif pair.last is None or pair.last.state is None:
            raise ValueError("paired replay: the adjacent problem's state before the problem's")
        return _Half(pair.last, self.side)

    def message_means(self, state: _Half, t: int) -> dict[str, np.ndarray]:
        box = state.box
        if box.state is None:
            raise ValueError("paired replay: a round's means before both problems' U steps")
        if box.t != t:
            box.means, box.t = self.pair.both.message_means(box.state, t), t
        return self._mine(box.means)

    def next_state(self, state: _Half, mixed: Any, t: int) -> _Half:
        pair = self.pair
        if self.side == 0:
            pair.last = _Box(pending=(state.box, dict(mixed), t))
            return _Half(pair.last, 0)
        box = pair.last
        if box is None or box.pending is None or box.pending[0] is not state.box or box.pending[2] != t:
            raise ValueError("paired replay: the problems' U steps out of order")
        prev, first, _ = box.pending
        if set(first) != set(mixed):
            raise ValueError("paired replay: the problems' combinations differ in their channels")
        box.state = pair.both.next_state(prev.state, {c: np.concatenate([first[c], mixed[c]]) for c in first}, t)
        box.pending = None
        return _Half(box, 1)


class Paired:
    """The rules of both problems of stacked candidates as one :class:`Stacked` rule: ``both`` holds the
    candidates' runs under ``P`` (its first ``runs`` rows) then under ``P'`` (the next ``runs``), so each step of
    the algorithm is taken once for both problems (a replay with both problems takes it twice: once per rule).

    :attr:`p` and :attr:`q` are the two problems' rules for the replay
    (:func:`accounting.scheduled_replay.scheduled_replay`'s ``rule`` and ``rule_prime``). In every round the
    replay asks ``p``'s means then ``q``'s (computed once for both), and steps ``p`` then ``q``: ``p``'s step
    keeps its combinations, ``q``'s takes both problems' step at once, on the combinations of each half's own
    runs. The steps are per run, so each half gets what its own rule computes (the stacked candidates'
    argument, :class:`Stacked`). A call out of that order raises ``ValueError``; the states are not arrays, so a
    replay that records its states records none (use the two rules apart there).

    Args:
        both: the stacked rule of the ``2 K`` candidates (the ``K`` under ``P``, then the same ``K`` under
            ``P'``).
        runs: rows per problem (``K`` candidates' runs).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> from asyncdp.problems.costs import LinearOverride
        >>> sc = small_example()[0].scenario
        >>> alg, costs = sc.algorithm.bind(sc.problem), sc.problem.costs
        >>> sides = [LinearOverride(costs, 0, [1.0, 0.0]), LinearOverride(costs, 0, [-1.0, 0.0])]
        >>> pair = Paired(Stacked(alg, sides, sc.problem.domain, None, sc.initial_points(), 2), 2)
        >>> p, q = pair.p.initial_state(2), pair.q.initial_state(2)
        >>> mixed = {"y": np.zeros((2, 3, 2))}
        >>> p, q = pair.p.next_state(p, mixed, 1), pair.q.next_state(q, mixed, 1)
        >>> bool((pair.p.message_means(p, 2)["y"][:, 0] != pair.q.message_means(q, 2)["y"][:, 0]).any())
        True
    """

    def __init__(self, both: Stacked, runs: int) -> None:
        self.both, self.runs = both, runs
        self.last: _Box | None = None
        self.p, self.q = _Side(self, 0), _Side(self, 1)


class _PairSide:
    """One problem's rule of :class:`PairRules`: the :class:`Paired` side of the replay under way."""

    def __init__(self, rules: PairRules, side: int) -> None:
        self.rules, self.side = rules, side

    def _current(self) -> _Side:
        pair = self.rules.current
        if pair is None:
            raise ValueError("paired replay: the adjacent problem's state before the problem's")
        return pair.p if self.side == 0 else pair.q

    def initial_state(self, runs: int) -> Any:
        if self.side == 0:  # a replay begins: both problems' rule for its runs
            self.rules.current = self.rules.paired(runs)
        return self._current().initial_state(runs)

    def message_means(self, state: Any, t: int) -> dict[str, np.ndarray]:
        return self._current().message_means(state, t)

    def next_state(self, state: Any, mixed: Any, t: int) -> Any:
        return self._current().next_state(state, mixed, t)


class PairRules:
    """The rules of one pair's two problems (one algorithm, one domain, the same initial points) as one
    :class:`Paired` rule, built anew for each replay's number of runs: :attr:`p` and :attr:`q` are the replay's
    ``rule`` and ``rule_prime`` (:func:`accounting.scheduled_replay.scheduled_replay`), each step of the
    algorithm taken once for both problems, each problem's runs getting what its own rule computes
    (:class:`Paired`; the same call order, its states not arrays).

    Args:
        algorithm: the algorithm (bound).
        problem, problem_prime: the two problems (their cost families stack, :class:`StackedCosts`).
        x0: the initial points.

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> from asyncdp.problems.costs import LinearOverride
        >>> from asyncdp.problems.problem import Problem
        >>> sc = small_example()[0].scenario
        >>> alg, costs, dom = sc.algorithm.bind(sc.problem), sc.problem.costs, sc.problem.domain
        >>> rules = PairRules(alg, Problem(dom, LinearOverride(costs, 0, [1.0, 0.0])),
        ...                   Problem(dom, LinearOverride(costs, 0, [-1.0, 0.0])), sc.initial_points())
        >>> p, q = rules.p.initial_state(2), rules.q.initial_state(2)
        >>> mixed = {"y": np.zeros((2, 3, 2))}
        >>> p, q = rules.p.next_state(p, mixed, 1), rules.q.next_state(q, mixed, 1)
        >>> rules.p.message_means(p, 2)["y"][0, 0].tolist() != rules.q.message_means(q, 2)["y"][0, 0].tolist()
        True
    """

    def __init__(self, algorithm: Any, problem: Any, problem_prime: Any, x0: np.ndarray) -> None:
        self.algorithm, self.problems, self.x0 = algorithm, (problem, problem_prime), x0
        self.current: Paired | None = None
        self.p, self.q = _PairSide(self, 0), _PairSide(self, 1)

    def paired(self, runs: int) -> Paired:
        """Both problems' :class:`Paired` rule on ``runs`` runs each."""
        p, q = self.problems
        both = Stacked(self.algorithm, [p.costs, q.costs], p.domain, lambda: list(self.problems), self.x0, runs)
        return Paired(both, runs)


def same_algorithm(a: Any, b: Any) -> bool:
    """Whether two algorithms are the same rule: one object, or equal (frozen dataclasses of equal parameters).

    Args:
        a, b: two algorithms.

    Returns:
        ``True`` when they are known to be the same rule (parameters that do not compare give ``False``).

    Example:
        >>> from asyncdp.privacy.context import small_example
        >>> sc = small_example()[0].scenario
        >>> same_algorithm(sc.algorithm.bind(sc.problem), sc.algorithm.bind(sc.problem))
        True
    """
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - parameters that do not compare (arrays): not known to be the same
        return False
