"""The stacked candidates' gradients in one call: candidates given by their linear member, and the stacks of
one base family with one linear or kinked member each.

The worst-case search's candidates are one base family with one linear (or kinked) member each
(:class:`LinearCosts`, :class:`~asyncdp.privacy.kinked.KinkedOverride`); ``_LinearStack`` and ``_KinkedStack`` answer
their gradients on every run of the stack from one call of the base, with the values each candidate's own call
gives (``asyncdp.privacy.stacked_costs.StackedCosts`` asks them first).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..problems.finite import all_finite
from .stack_runs import _per_run, bounds

__all__ = ["LinearCosts"]


class LinearCosts:
    """A candidate's cost family given by its linear member: ``family_class(base, index, gradient)``
    (:class:`~asyncdp.problems.costs.LinearOverride` of agent ``index``, or
    :class:`~asyncdp.problems.online.LinearRound` of round ``index``), built only when asked (:meth:`family`).

    The worst-case search evaluates hundreds of candidates whose families differ only in ``g`` (and the
    round): ``stacked_costs.StackedCosts`` answers their gradients from the base and ``g`` (:class:`_LinearStack`) and
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
