"""User-supplied costs with user-declared constants: :class:`UserCost`."""

from __future__ import annotations

import dataclasses
from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from ..domains import Domain
from ...errors import ProblemError
from .family import CostFamily, _fmt, _where
from .function_class import FunctionClass
from .optimum import numeric_optimum
from .structure import Opaque, Structure

__all__ = ["UserCost"]


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


class UserCost(CostFamily):
    """User-supplied costs with user-declared constants.

    Each callable works on one point: ``value_fns[i](x) -> float`` and
    ``gradient_fns[i](x) -> array of shape (n,)`` with ``x`` of shape ``(n,)``
    (a copy, so the callables may not modify our arrays). Vectorized calls
    loop over agents and points in Python. Outputs are checked: NaN/inf
    raises :class:`CostValueError` naming the agent, the round (when the
    caller passes ``round_index``) and the point.

    Two families are compared agent by agent by their callables' identity
    (:meth:`~asyncdp.problems.costs.CostFamily.compare_agents`): the same
    objects are the same cost; other objects may compute anything, even when
    they compute the same cost, so build adjacent families with
    :meth:`with_agent` (or ``Problem.adjacent``), which keeps every other
    agent's objects.

    Args:
        value_fns: N callables.
        gradient_fns: N callables, matching ``value_fns``.
        constants: the declared :class:`FunctionClass` (trusted; verify with
            :func:`check_constants`).
        dim: the dimension n.
        name: optional label for provenance.

    Raises:
        ProblemError: lengths differ, non-callables, bad ``dim``/``constants``.

    Example:
        >>> fc = FunctionClass(gradient_bound=2.0, strong_convexity=2.0, hessian_bound=2.0)
        >>> fam = UserCost([lambda x: float(x @ x)], [lambda x: 2 * x], fc, dim=2)
        >>> fam.gradient(0, [1.0, 0.0])
        array([2., 0.])
    """

    private_fields = ("value_fn", "gradient_fn")

    def __init__(
        self,
        value_fns: Sequence[Callable[[np.ndarray], float]],
        gradient_fns: Sequence[Callable[[np.ndarray], np.ndarray]],
        constants: FunctionClass,
        *,
        dim: int,
        name: str | None = None,
    ) -> None:
        vf, gf = list(value_fns), list(gradient_fns)
        if len(vf) < 1 or len(vf) != len(gf):
            raise ProblemError(
                f"value_fns and gradient_fns must be non-empty lists of equal length, "
                f"got lengths {len(vf)} and {len(gf)}"
            )
        for label, fns in (("value_fns", vf), ("gradient_fns", gf)):
            for i, fn in enumerate(fns):
                if not callable(fn):
                    raise ProblemError(f"{label}[{i}] (agent {i}) is not callable: {fn!r}")
        if not isinstance(constants, FunctionClass):
            raise ProblemError(
                f"constants must be a FunctionClass, got {type(constants).__name__}"
            )
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ProblemError(f"dim must be a positive integer, got {dim!r}")
        super().__init__(len(vf), int(dim))
        self._value_fns = vf
        self._gradient_fns = gf
        self.constants = constants
        self.name = name

    def _value(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        shape = np.broadcast_shapes(a.shape, x.shape[:-1])
        ab = np.broadcast_to(a, shape)
        xb = np.broadcast_to(x, shape + (self._dim,))
        out = np.empty(shape)
        for idx in np.ndindex(*shape):
            i = int(ab[idx])
            raw = self._value_fns[i](np.array(xb[idx]))
            try:
                out[idx] = float(np.asarray(raw, dtype=float).reshape(()))
            except (TypeError, ValueError):
                raise ProblemError(
                    f"{_where(i, round_index)}: value_fns[{i}] must return a scalar, "
                    f"got {raw!r} at x = {_fmt(xb[idx])}"
                ) from None
        return out

    def _gradient(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        shape = np.broadcast_shapes(a.shape, x.shape[:-1])
        ab = np.broadcast_to(a, shape)
        xb = np.broadcast_to(x, shape + (self._dim,))
        out = np.empty(shape + (self._dim,))
        for idx in np.ndindex(*shape):
            i = int(ab[idx])
            raw = self._gradient_fns[i](np.array(xb[idx]))
            try:
                g = np.asarray(raw, dtype=float)
            except (TypeError, ValueError):
                g = None
            if g is None or g.shape != (self._dim,):
                raise ProblemError(
                    f"{_where(i, round_index)}: gradient_fns[{i}] must return shape "
                    f"({self._dim},), got {raw!r} at x = {_fmt(xb[idx])}"
                )
            out[idx] = g
        return out

    def function_class(self, domain: Domain) -> FunctionClass:
        """The declared constants; a missing C1 is filled with ``domain.diameter``."""
        self._check_domain(domain)
        if self.constants.diameter is None and domain.bounded:
            return dataclasses.replace(self.constants, diameter=domain.diameter)
        return self.constants

    def optimum(self, domain: Domain) -> np.ndarray:
        """Numeric minimizer of ``sum_i f_i`` over ``domain`` (:func:`numeric_optimum`)."""
        self._check_domain(domain)
        return numeric_optimum(self, domain)

    def _agent_structure(self) -> Structure | None:
        """Each agent's callables, known by identity only (:class:`~asyncdp.problems.costs.structure.Opaque`):
        the same objects are the same cost, other objects may compute anything; this class only."""
        if type(self) is not UserCost:
            return None
        return Structure("UserCost", self._dim, tuple(Opaque((v, g)) for v, g in zip(self._value_fns,
                                                                                     self._gradient_fns)))

    def with_agent(self, agent: int, **changes: Any) -> UserCost:
        """Copy with agent's ``value_fn=`` and ``gradient_fn=`` (both required) replaced."""
        i = self._check_agent(agent)
        self._check_changes(changes)
        if set(changes) != {"value_fn", "gradient_fn"}:
            raise ProblemError(
                "UserCost.with_agent needs both value_fn and gradient_fn, "
                f"got only {sorted(changes)}"
            )
        vf, gf = list(self._value_fns), list(self._gradient_fns)
        for label, fn in changes.items():
            if not callable(fn):
                raise ProblemError(f"{label} for agent {i} is not callable: {fn!r}")
        vf[i], gf[i] = changes["value_fn"], changes["gradient_fn"]
        return UserCost(vf, gf, self.constants, dim=self._dim, name=self.name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "UserCost",
            "name": self.name,
            "num_agents": self._num_agents,
            "dim": self._dim,
            "value_fns": [_name(f) for f in self._value_fns],
            "gradient_fns": [_name(f) for f in self._gradient_fns],
            "constants": self.constants.to_dict(),
        }
