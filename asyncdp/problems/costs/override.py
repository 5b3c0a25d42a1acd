"""One agent's cost replaced, every other agent's kept: :class:`AgentOverride`, the linear
:class:`LinearOverride` and the radial :class:`RadialOverride`.

The privacy checker's worst-case search (:mod:`asyncdp.privacy.worst_case`)
builds adjacent problems whose changed agent has an extremal cost,
``f_k(x) = <g, x>``, with every other agent's cost kept. A linear cost has
the same gradient ``g`` everywhere, so a gradient bound ``||g|| <= C2`` holds
on any domain, noisy points included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domains import Domain
from ...errors import ProblemError
from .family import CostFamily, _fmt
from .function_class import FunctionClass
from .optimum import numeric_optimum
from .structure import Opaque, Structure

__all__ = ["AgentOverride", "LinearOverride", "RadialOverride"]


_SUBCLASS_HOOKS = frozenset({
    "_own_value", "_own_gradient", "_own_parameters", "function_class", "optimum", "with_agent", "to_dict",
    "private_fields", "__init__", "__repr__", "__doc__", "__module__", "__qualname__", "__dict__", "__weakref__",
    "__annotations__", "__abstractmethods__", "_abc_impl", "__firstlineno__", "__static_attributes__",
    "__orig_bases__", "__parameters__"})
"""What a subclass of :class:`AgentOverride` may define over it and keep its structure: the replaced agent's
hooks, the abstract parts that do not evaluate costs, and what Python puts in every class."""


class AgentOverride(CostFamily):
    """``base``'s costs, except agent ``agent``'s, given by a subclass's ``_own_value(x)`` and
    ``_own_gradient(x)``.

    Args:
        base: the cost family whose other agents' costs are kept.
        agent: the agent whose cost is replaced.

    Raises:
        ProblemError: a base that is not a :class:`~asyncdp.problems.costs.family.CostFamily`, or a bad agent.

    Example:
        >>> from asyncdp.problems.costs import RendezvousQuadratic
        >>> LinearOverride(RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]]), 1, [3.0, -4.0]).agent
        1
    """

    def __init__(self, base: CostFamily, agent: int) -> None:
        if not isinstance(base, CostFamily):
            raise ProblemError(f"base must be a CostFamily, got {type(base).__name__}")
        super().__init__(base.num_agents, base.dim)
        self._base = base
        self._agent = self._check_agent(agent)

    @property
    def base(self) -> CostFamily:
        """The family whose other agents' costs are kept."""
        return self._base

    @property
    def agent(self) -> int:
        """The agent whose cost is replaced."""
        return self._agent

    def _own_value(self, x: np.ndarray) -> np.ndarray:
        """The replaced cost at points ``x`` ``(..., n)``, shape ``x.shape[:-1]``."""
        raise NotImplementedError

    def _own_gradient(self, x: np.ndarray) -> np.ndarray:
        """The replaced cost's gradient at points ``x`` ``(..., n)``, broadcastable to ``x.shape``."""
        raise NotImplementedError

    def _value(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        base = np.asarray(self._base.value(a, x, round_index=round_index), dtype=float)
        return np.where(np.broadcast_to(a, base.shape) == self._agent, self._own_value(x), base)

    def _gradient(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        # ``a`` and ``x`` were validated by :meth:`gradient` (same agents and dimension as the base): the base's
        # gradients as its own :meth:`gradient` returns them (same broadcast, same finiteness check and error),
        # without validating them a second time (the worst-case search calls this every round of every replay)
        shape = np.broadcast_shapes(a.shape, x.shape[:-1])
        base = np.asarray(self._base._gradient(a, x, round_index), dtype=float)
        if base.shape != shape + (self.dim,):
            base = np.broadcast_to(base, shape + (self.dim,)).copy()
        self._base._check_finite(base, a, x, shape, "gradient", round_index)
        mine = np.broadcast_to(a, base.shape[:-1]) == self._agent
        return np.where(mine[..., None], self._own_gradient(x), base)

    def optimum(self, domain: Domain) -> np.ndarray:
        """Numeric minimizer (:func:`~asyncdp.problems.costs.optimum.numeric_optimum`)."""
        self._check_domain(domain)
        return numeric_optimum(self, domain)

    def _own_parameters(self) -> Any:
        """The replaced cost's parameters, compared exactly (:meth:`compare_agents`); the default is this family
        object itself (:class:`~asyncdp.problems.costs.structure.Opaque`: the same cost only in the same object).
        A subclass that returns parameters must return the default for its own subclasses."""
        return Opaque((self,))

    def _agent_structure(self) -> Structure | None:
        """The base's structure with the replaced agent's entry ``(class name, its parameters)``; ``None`` when the
        base has none, or when a subclass may compute the costs otherwise than through ``_own_value`` and
        ``_own_gradient``: it redefines anything of this class but the hooks (:data:`_SUBCLASS_HOOKS`), e.g. the
        public ``gradient``, which every engine calls."""
        cls = type(self)
        for sub in cls.__mro__[:cls.__mro__.index(AgentOverride)]:
            if any(hasattr(AgentOverride, name) and name not in _SUBCLASS_HOOKS for name in vars(sub)):
                return None
        base = self._base._described()
        if base is None:
            return None
        rows = list(base.rows)
        rows[self._agent] = (cls.__name__, self._own_parameters())
        return Structure(base.kind, base.shared, tuple(rows))

    def _same_agent(self, agent: int, changes: dict[str, Any]) -> None:
        """:meth:`with_agent`'s checks: known fields, and this override's agent.

        Raises:
            ProblemError: another agent, or an unknown field.
        """
        self._check_changes(changes)
        if self._check_agent(agent) != self._agent:
            raise ProblemError(f"{type(self).__name__} changes agent {self._agent} only, got agent {agent!r}")


class LinearOverride(AgentOverride):
    """``base``'s costs, except agent ``agent``'s, which is ``f(x) = <gradient, x>``.

    Args:
        base: the cost family whose other agents' costs are kept.
        agent: the agent whose cost is replaced.
        gradient: ``g``, shape ``(n,)``, finite.

    Raises:
        ProblemError: a bad agent, or a gradient of the wrong shape or not finite.

    Example:
        >>> from asyncdp.problems.costs import RendezvousQuadratic
        >>> fam = LinearOverride(RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]]), 1, [3.0, -4.0])
        >>> fam.gradient(np.arange(2), np.ones((2, 2))).tolist()
        [[2.0, 2.0], [3.0, -4.0]]
    """

    private_fields = ("gradient",)

    def __init__(self, base: CostFamily, agent: int, gradient: Any) -> None:
        super().__init__(base, agent)
        g = np.array(gradient, dtype=float)
        if g.shape != (base.dim,) or not np.isfinite(g).all():
            raise ProblemError(f"gradient must be a finite vector of shape ({base.dim},), got {_fmt(g)}")
        g.setflags(write=False)
        self._g = g

    @property
    def linear_gradient(self) -> np.ndarray:
        """``g`` (read-only)."""
        return self._g

    def _own_value(self, x: np.ndarray) -> np.ndarray:
        return x @ self._g

    def _own_gradient(self, x: np.ndarray) -> np.ndarray:
        return self._g

    def _own_parameters(self) -> Any:
        """``g`` (this class only)."""
        return self._g if type(self) is LinearOverride else super()._own_parameters()

    def function_class(self, domain: Domain) -> FunctionClass:
        """The base class widened by the linear cost: ``C2 = max(C2_base, ||g||)``, ``mu = 0``, ``C4``/``L`` kept."""
        base = self._base.function_class(domain)
        g = float(np.linalg.norm(self._g))
        return FunctionClass(diameter=base.diameter,
                             gradient_bound=None if base.gradient_bound is None else max(base.gradient_bound, g),
                             strong_convexity=0.0, hessian_bound=base.hessian_bound, smoothness=base.smoothness)

    def with_agent(self, agent: int, **changes: Any) -> LinearOverride:
        """Copy with ``gradient=`` of the overridden agent replaced (the only private field).

        Raises:
            ProblemError: another agent, or an unknown field.
        """
        self._same_agent(agent, changes)
        return LinearOverride(self._base, self._agent, changes["gradient"])

    def to_dict(self) -> dict[str, Any]:
        return {"type": "LinearOverride", "base": self._base.to_dict(), "agent": self._agent,
                "gradient": self._g.tolist()}


class RadialOverride(AgentOverride):
    """``base``'s costs, except agent ``agent``'s: ``f(x) = sign scale sqrt(||x - center||^2 + width^2)``.

    Its gradient ``sign scale (x - center) / sqrt(||x - center||^2 + width^2)`` has L2 norm below ``scale`` and
    points along ``x - center``: the cost and its mirror image (``sign = -1``) are, at each point more than a few
    ``width`` from the centre, the extremal linear pair of norm ``scale`` along ``x - center``. A search over
    points is then a search over the pair's directions (the privacy check's prober,
    ``asyncdp.privacy.steps.probe_update``).

    Args:
        base: the cost family whose other agents' costs are kept.
        agent: the agent whose cost is replaced.
        center: ``c``, a finite vector of shape ``(n,)``.
        scale: ``C > 0``, finite.
        width: ``eta > 0``, finite.
        sign: ``1`` (default) or ``-1``.

    Raises:
        ProblemError: a bad agent, a centre of the wrong shape or not finite, a scale or width that is not finite
            and positive, or a sign other than 1 and -1.

    Example:
        >>> from asyncdp.problems.costs import RendezvousQuadratic
        >>> fam = RadialOverride(RendezvousQuadratic([[0.0, 0.0], [1.0, 0.0]]), 1, [0.0, 0.0], 2.0, 1e-9)
        >>> fam.gradient(1, np.array([3.0, 4.0])).round(6).tolist()
        [1.2, 1.6]
    """

    private_fields = ("center",)

    def __init__(self, base: CostFamily, agent: int, center: Any, scale: float, width: float,
                 sign: float = 1.0) -> None:
        super().__init__(base, agent)
        c = np.array(center, dtype=float)
        if c.shape != (base.dim,) or not np.isfinite(c).all():
            raise ProblemError(f"center must be a finite vector of shape ({base.dim},), got {_fmt(c)}")
        for name, v in (("scale", scale), ("width", width)):
            if not np.isfinite(v) or not v > 0:
                raise ProblemError(f"{name} must be finite and > 0, got {_fmt(v)}")
        if isinstance(sign, bool) or sign not in (1, -1):
            raise ProblemError(f"sign must be 1 or -1, got {sign!r}")
        c.setflags(write=False)
        self._c, self._scale, self._eta, self._sign = c, float(scale), float(width), float(sign)

    def _radius(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``x - c`` and ``sqrt(||x - c||^2 + eta^2)`` (without overflow), the latter never below ``||x - c||``."""
        d = x - self._c
        r = np.linalg.norm(d, axis=-1, keepdims=True)
        return d, np.maximum(np.hypot(r, self._eta), r)

    def _own_value(self, x: np.ndarray) -> np.ndarray:
        return self._sign * self._scale * self._radius(x)[1][..., 0]

    def _own_gradient(self, x: np.ndarray) -> np.ndarray:
        d, root = self._radius(x)
        # (1 - 2^-48): the round-off of d / root and of a norm (a few units in the last place) never takes the
        # gradient's norm above scale
        return self._sign * self._scale * (1 - 2.0**-48) * (d / root)

    def _own_parameters(self) -> Any:
        """``(center, scale, width, sign)`` (this class only)."""
        if type(self) is not RadialOverride:
            return super()._own_parameters()
        return (tuple(self._c.tolist()), self._scale, self._eta, self._sign)

    def function_class(self, domain: Domain) -> FunctionClass:
        """The base class widened by the radial cost: ``C2 = max(C2_base, scale)``, smoothness at least
        ``scale / width`` (its Hessian's largest value, at the centre), ``mu = 0`` (``None`` for the concave mirror
        image)."""
        base = self._base.function_class(domain)
        curv = self._scale / self._eta
        return FunctionClass(diameter=base.diameter,
                             gradient_bound=None if base.gradient_bound is None else max(base.gradient_bound,
                                                                                         self._scale),
                             strong_convexity=0.0 if self._sign > 0 else None,
                             hessian_bound=None if base.hessian_bound is None else max(base.hessian_bound, curv),
                             smoothness=None if base.smoothness is None else max(base.smoothness, curv))

    def with_agent(self, agent: int, **changes: Any) -> RadialOverride:
        """Copy with ``center=`` of the overridden agent replaced (the only private field).

        Raises:
            ProblemError: another agent, or an unknown field.
        """
        self._same_agent(agent, changes)
        return RadialOverride(self._base, self._agent, changes["center"], self._scale, self._eta, self._sign)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "RadialOverride", "base": self._base.to_dict(), "agent": self._agent,
                "center": self._c.tolist(), "scale": self._scale, "width": self._eta, "sign": self._sign}
