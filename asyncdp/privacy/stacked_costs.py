"""The stacked candidates' cost families and problems as one: each candidate's family answers for its own runs.

:class:`StackedCosts` splits a call along the run axis (or answers it from a stack's one call,
``asyncdp.privacy.stacked_gradients``) and answers any other attribute only when every candidate's is the same
plain value; :class:`StackedProblem` is a problem with those costs. A question they cannot answer as each
candidate's own would raises :class:`Unstackable`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .stack_runs import bounds
from .stacked_gradients import LinearCosts, _base_gradient, _family, _KinkedStack, _LinearStack

__all__ = ["Unstackable", "StackedCosts", "StackedProblem"]


class Unstackable(Exception):
    """A call the stacked problem cannot answer as each candidate's own problem would (``stacked.Stacked``)."""


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


def _groups(costs: Sequence[Any], size: int | Sequence[int]) -> list[tuple[int, int, Any]] | None:
    """The candidates as consecutive groups each of which stacks (``stacked_gradients._LinearStack``,
    ``stacked_gradients._KinkedStack``) or is one candidate: ``[(first, stop, stack or None)]``, or ``None`` when
    some group of several does not stack, or there is one group (e.g. a replay of both problems of kinked pairs:
    the linear costs, then the kinked ones)."""
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
        """Every candidate's family (those given by a ``stacked_gradients.LinearCosts`` built on first use)."""
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
