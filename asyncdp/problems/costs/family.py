"""The abstract cost family :class:`CostFamily` and helpers shared by the families.

A cost family holds the private data of all N agents and evaluates any agents'
costs and gradients in one vectorized call; :class:`CostFamily` validates the
inputs, broadcasts, and raises :class:`~asyncdp.errors.CostValueError` on
NaN/inf output (with a fast path for one agent at one point).
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from ..domains import Domain
from ...errors import CostValueError, ProblemError
from ..finite import all_finite
from .function_class import FunctionClass
from .structure import Difference, Structure, compare, family_name, shadowed

__all__ = ["CostFamily"]

_FEW_AGENTS = 64
"""Agents arrays of at most this many entries are range-checked as Python ints (:meth:`CostFamily._prepare`)."""


def _fmt(a: Any) -> str:
    """Compact one-line rendering of a point, e.g. ``[0.5, -1, nan]``."""
    arr = np.asarray(a, dtype=float)
    if arr.ndim == 0:
        return f"{float(arr):.10g}"
    return "[" + ", ".join(_fmt(v) for v in arr) + "]"


def _where(agent: int | None, round_index: int | None) -> str:
    parts = []
    if agent is not None:
        parts.append(f"agent {agent}")
    if round_index is not None:
        parts.append(f"round {round_index}")
    return ", ".join(parts)


class CostFamily(abc.ABC):
    """Private costs of all N agents, vectorized over agents and points.

    Subclasses implement ``_value``, ``_gradient``,
    :meth:`function_class`, :meth:`optimum`, :meth:`with_agent` and
    :meth:`to_dict`. The public :meth:`value` and :meth:`gradient` validate
    inputs, broadcast, and raise :class:`CostValueError` on NaN/inf output.

    Attributes:
        private_fields: keyword names accepted by :meth:`with_agent`.
    """

    private_fields: tuple[str, ...] = ()

    def __init__(self, num_agents: int, dim: int) -> None:
        self._num_agents = int(num_agents)
        self._dim = int(dim)

    @property
    def num_agents(self) -> int:
        """Number of agents N."""
        return self._num_agents

    @property
    def dim(self) -> int:
        """Dimension n of the decision variable."""
        return self._dim

    # ----------------------------------------------------------- validation
    def _prepare(
        self, agents: Any, x: Any, round_index: int | None
    ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
        if self._one_point(agents, x):
            return np.asarray(agents), x, ()  # fast path for one agent and one point (the SimPy engine)

        def prefix() -> str:
            where = _where(None, round_index)
            return f"{where}: " if where else ""

        try:
            xx = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            raise ProblemError(f"{prefix()}x must be a numeric array, got {x!r}") from None
        if xx.ndim == 0 or xx.shape[-1] != self._dim:
            raise ProblemError(
                f"{prefix()}x must have shape (..., {self._dim}), got shape {xx.shape}"
            )
        a = np.asarray(agents)
        if a.dtype.kind not in "iu":
            raise ProblemError(f"{prefix()}agents must be integers, got {agents!r}")
        if a.size:
            # a few agents (a replay's or an engine's agents array) are compared as Python ints: a tenth of the
            # cost of numpy's two reductions
            ids = a.ravel().tolist() if a.size <= _FEW_AGENTS else None
            low, high = (min(ids), max(ids)) if ids is not None else (a.min(), a.max())
            if low < 0 or high >= self._num_agents:
                bad = a[(a < 0) | (a >= self._num_agents)].flat[0]
                raise ProblemError(
                    f"{prefix()}agents must lie in [0, {self._num_agents}), got agent {int(bad)}"
                )
        if a.ndim == 1 and xx.ndim > 1 and xx.shape[-2] == a.shape[0]:
            shape = xx.shape[:-1]  # one agent per row of points: what broadcast_shapes gives, without its call
        else:
            try:
                shape = np.broadcast_shapes(a.shape, xx.shape[:-1])
            except ValueError:
                raise ProblemError(
                    f"{prefix()}agents of shape {a.shape} do not broadcast against "
                    f"x of shape {xx.shape} (leading axes {xx.shape[:-1]})"
                ) from None
        return a, xx, shape

    def _one_point(self, agents: Any, x: Any) -> bool:
        """Whether the call is for one valid agent (an ``int``) at one float point of the right dimension."""
        return (type(agents) is int and type(x) is np.ndarray and x.ndim == 1 and x.dtype == np.float64
                and x.shape[0] == self._dim and 0 <= agents < self._num_agents)

    def _check_finite(
        self,
        out: np.ndarray,
        a: np.ndarray,
        x: np.ndarray,
        shape: tuple[int, ...],
        kind: str,
        round_index: int | None,
    ) -> None:
        if all_finite(out):
            return
        finite = np.isfinite(out)
        if kind == "gradient":
            finite = np.all(finite, axis=-1)
        if finite.all():
            return
        idx = tuple(int(i) for i in np.argwhere(~finite)[0])
        agent = int(np.broadcast_to(a, shape)[idx])
        point = np.array(np.broadcast_to(x, shape + (self._dim,))[idx])
        raise CostValueError(
            f"{_where(agent, round_index)}: {kind} is not finite ({_fmt(out[idx])}) "
            f"at x = {_fmt(point)}",
            agent=agent,
            round_index=round_index,
            point=point,
        )

    def _check_agent(self, agent: Any) -> int:
        if isinstance(agent, bool) or not isinstance(agent, (int, np.integer)):
            raise ProblemError(f"agent must be an integer, got {agent!r}")
        if not 0 <= int(agent) < self._num_agents:
            raise ProblemError(f"agent must lie in [0, {self._num_agents}), got {agent!r}")
        return int(agent)

    def _check_changes(self, changes: dict[str, Any]) -> None:
        unknown = sorted(set(changes) - set(self.private_fields))
        if unknown:
            raise ProblemError(
                f"{type(self).__name__} private data has fields {self.private_fields}, "
                f"got unknown field(s) {unknown}"
            )
        if not changes:
            raise ProblemError(
                f"no private data given; pass one of {self.private_fields} as a keyword"
            )

    def _check_domain(self, domain: Domain) -> None:
        if not isinstance(domain, Domain):
            raise ProblemError(f"domain must be a Domain, got {type(domain).__name__}")
        if domain.dim != self._dim:
            raise ProblemError(
                f"domain dim = {domain.dim} ({domain!r}) differs from cost dim = {self._dim}"
            )

    # ----------------------------------------------------------- public API
    def value(self, agents: Any, x: Any, *, round_index: int | None = None) -> np.ndarray:
        """Costs ``f_agents(x)``.

        Args:
            agents: an int or int array broadcastable against ``x.shape[:-1]``.
            x: points of shape ``(..., dim)``.
            round_index: the current round, quoted in error messages.

        Returns:
            Array of shape ``broadcast(agents.shape, x.shape[:-1])`` (a numpy
            float for a single agent and point).

        Raises:
            ProblemError: bad shapes or agent indices.
            CostValueError: a cost is NaN or infinite (names agent, round, point).

        Example:
            >>> from asyncdp.problems.costs import RendezvousQuadratic
            >>> fam = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]])
            >>> fam.value(np.arange(2), np.zeros((3, 2, 2))).shape
            (3, 2)
        """
        a, xx, shape = self._prepare(agents, x, round_index)
        out = np.asarray(self._value(a, xx, round_index), dtype=float)
        if out.shape != shape:
            out = np.broadcast_to(out, shape).copy()
        self._check_finite(out, a, xx, shape, "cost", round_index)
        return out[()]

    def gradient(self, agents: Any, x: Any, *, round_index: int | None = None) -> np.ndarray:
        """Gradients ``grad f_agents(x)``.

        Args:
            agents: an int or int array broadcastable against ``x.shape[:-1]``.
            x: points of shape ``(..., dim)``.
            round_index: the current round, quoted in error messages.

        Returns:
            Array of shape ``broadcast(agents.shape, x.shape[:-1]) + (dim,)``.

        Raises:
            ProblemError: bad shapes or agent indices.
            CostValueError: a gradient entry is NaN or infinite.

        Example:
            >>> from asyncdp.problems.costs import RendezvousQuadratic
            >>> RendezvousQuadratic([[1.0, 0.0]]).gradient(0, [0.0, 0.0])
            array([-2.,  0.])
        """
        if self._one_point(agents, x):  # the SimPy engine's call: fewer steps, the same checks
            a = np.asarray(agents)
            out = np.asarray(self._gradient(a, x, round_index), dtype=float)
            if out.shape == x.shape and all_finite(out):
                return out
            if out.shape != x.shape:
                out = np.broadcast_to(out, x.shape).copy()
            self._check_finite(out, a, x, (), "gradient", round_index)
            return out
        a, xx, shape = self._prepare(agents, x, round_index)
        full = shape + (self._dim,)
        out = np.asarray(self._gradient(a, xx, round_index), dtype=float)
        if out.shape != full:
            out = np.broadcast_to(out, full).copy()
        self._check_finite(out, a, xx, shape, "gradient", round_index)
        return out

    def total_value(self, x: Any, *, round_index: int | None = None) -> np.ndarray:
        """``f(x) = sum_i f_i(x)`` for points of shape ``(..., dim)``; shape ``x.shape[:-1]``."""
        xx = np.asarray(x, dtype=float)
        if xx.ndim == 0:
            raise ProblemError(f"x must have shape (..., {self._dim}), got a scalar {x!r}")
        vals = self.value(np.arange(self._num_agents), xx[..., None, :], round_index=round_index)
        return np.asarray(vals.sum(axis=-1))[()]

    def total_gradient(self, x: Any, *, round_index: int | None = None) -> np.ndarray:
        """``grad f(x) = sum_i grad f_i(x)``; shape ``x.shape``."""
        xx = np.asarray(x, dtype=float)
        if xx.ndim == 0:
            raise ProblemError(f"x must have shape (..., {self._dim}), got a scalar {x!r}")
        g = self.gradient(np.arange(self._num_agents), xx[..., None, :], round_index=round_index)
        return g.sum(axis=-2)

    def replace_agent(self, agent: int, new_data: Any) -> CostFamily:
        """Adjacent family: agent ``agent`` gets ``new_data``, all others unchanged.

        ``new_data`` is the value of the single private field (e.g. the new
        address) or a dict of private fields, forwarded to :meth:`with_agent`.
        """
        if isinstance(new_data, dict):
            return self.with_agent(agent, **new_data)
        if len(self.private_fields) != 1:
            raise ProblemError(
                f"{type(self).__name__} has private fields {self.private_fields}; "
                "pass new_data as a dict"
            )
        return self.with_agent(agent, **{self.private_fields[0]: new_data})

    # ------------------------------------------------------- adjacency
    def _agent_structure(self) -> Structure | None:
        """The agents' costs described by their parameters (:mod:`~asyncdp.problems.costs.structure`), or ``None``.

        The default describes none: every agent of such a family is *unknown* to :meth:`compare_agents`. A
        family that describes its costs must return ``None`` for a subclass that may compute its costs otherwise
        (its parameters would then not determine them).
        """
        return None

    def _described(self) -> Structure | None:
        """:meth:`_agent_structure`, or ``None`` when an instance attribute shadows one of the class's (a method
        replaced on the instance: the class's description would not describe the costs this object computes)."""
        return None if shadowed(self) else self._agent_structure()

    def compare_agents(self, other: CostFamily) -> Difference:
        """Which agents' costs differ between this family and ``other``, read from their structure.

        Parametric families of the same kind compare each agent's parameters
        exactly (differ or the same); user callables are the same only when
        they are the same objects (otherwise *unknown*); families of different
        kinds, or without structure, leave every agent unknown; so do a
        family whose instance shadows one of its class's methods
        (:func:`~asyncdp.problems.costs.structure.shadowed`). The same
        family object differs in nothing. :meth:`Problem.adjacent
        <asyncdp.problems.problem.Problem.adjacent>` (:meth:`with_agent`)
        builds a family that differs from this one in the changed agent only.

        Args:
            other: a family of the same number of agents.

        Returns:
            The :class:`~asyncdp.problems.costs.structure.Difference` (agents that differ, agents unknown).

        Raises:
            ProblemError: ``other`` is not a cost family, or has another number of agents.

        Example:
            >>> from asyncdp.problems.costs import RendezvousQuadratic
            >>> fam = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0], [0.5, 0.5]])
            >>> d = fam.compare_agents(fam.with_agent(1, address=[0.0, 1.0]))
            >>> sorted(d.differ), sorted(d.unknown)
            ([1], [])
        """
        if not isinstance(other, CostFamily):
            raise ProblemError(f"other must be a CostFamily, got {type(other).__name__}")
        if other.num_agents != self._num_agents:
            raise ProblemError(f"the families have {self._num_agents} and {other.num_agents} agents")
        if other is self:
            return Difference(frozenset(), frozenset())
        return compare(self._described(), other._described(), self._num_agents,
                       names=(family_name(self), family_name(other)))

    def differing_agents(self, other: CostFamily) -> frozenset[int] | None:
        """The agents whose costs differ between this family and ``other``, or ``None`` when the structure
        cannot tell for some agent (:meth:`compare_agents`).

        Example:
            >>> from asyncdp.problems.costs import RendezvousQuadratic
            >>> fam = RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]])
            >>> fam.differing_agents(RendezvousQuadratic([[0.0, 0.5], [1.0, 0.0]]))
            frozenset({0})
        """
        return self.compare_agents(other).exact

    # ------------------------------------------------------- abstract parts
    @abc.abstractmethod
    def _value(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray: ...

    @abc.abstractmethod
    def _gradient(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray: ...

    @abc.abstractmethod
    def function_class(self, domain: Domain) -> FunctionClass:
        """Declared constants C1..C4, L of this family on ``domain``."""

    @abc.abstractmethod
    def optimum(self, domain: Domain) -> np.ndarray:
        """``x* = argmin_{x in domain} sum_i f_i(x)``, shape ``(dim,)``."""

    @abc.abstractmethod
    def with_agent(self, agent: int, **changes: Any) -> CostFamily:
        """A new family in which only ``agent``'s private data differs (Huang, Mitra and Vaidya, ICDCN 2015, Def. 3)."""

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable description for provenance."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_agents={self._num_agents}, dim={self._dim})"
