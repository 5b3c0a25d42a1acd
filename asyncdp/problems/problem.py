"""The private distributed optimization problem ``min_{x in X} sum_i f_i(x)``.

A :class:`Problem` bundles the feasible set ``X``, the agents' private costs
and the constants of their function class: the part of a PDOP (Huang, Mitra and Vaidya, ICDCN 2015, §3)
that does not depend on the network. :meth:`Problem.adjacent` builds the
adjacent problem of Huang, Mitra and Vaidya, ICDCN 2015, Def. 3 (same ``X`` and class, exactly one
agent's cost changed), which privacy tests compare against.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .costs import CostFamily, FunctionClass, RendezvousQuadratic
from .domains import Box, Domain
from ..errors import ConstantViolationError, ProblemError

__all__ = ["Problem", "rendezvous_problem"]


@dataclass(frozen=True)
class Problem:
    """A feasible set, N private costs and their declared constants.

    Args:
        domain: the feasible set ``X``.
        costs: the cost family (all agents' private data).
        constants: declared constants of the function class; default
            ``costs.function_class(domain)``. Declared constants may be looser
            than the family's derived ones but not tighter.

    Raises:
        ProblemError: wrong types, or ``costs.dim != domain.dim``.
        ConstantViolationError: a declared constant is tighter than the one
            the family guarantees (e.g. a C2 below ``2 diam X`` for rendezvous).

    Example:
        >>> p = rendezvous_problem([[0.5, 0.5], [-0.5, 0.5]])
        >>> p.optimum, round(p.constants.C2, 6)
        (array([0. , 0.5]), 5.656854)
    """

    domain: Domain
    costs: CostFamily
    constants: FunctionClass | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.domain, Domain):
            raise ProblemError(f"domain must be a Domain, got {type(self.domain).__name__}")
        if not isinstance(self.costs, CostFamily):
            raise ProblemError(f"costs must be a CostFamily, got {type(self.costs).__name__}")
        if self.costs.dim != self.domain.dim:
            raise ProblemError(
                f"costs.dim = {self.costs.dim} differs from domain.dim = {self.domain.dim} "
                f"({self.domain!r})"
            )
        derived = self.costs.function_class(self.domain)
        if self.constants is None:
            object.__setattr__(self, "constants", derived)
        elif not isinstance(self.constants, FunctionClass):
            raise ProblemError(
                f"constants must be a FunctionClass or None, got {type(self.constants).__name__}"
            )
        else:
            conflicts = self.constants.conflicts_with(derived)
            if conflicts:
                raise ConstantViolationError(
                    "declared constants claim more than the cost family guarantees: "
                    + "; ".join(conflicts)
                )

    @property
    def num_agents(self) -> int:
        """Number of agents N."""
        return self.costs.num_agents

    @property
    def dim(self) -> int:
        """Dimension n."""
        return self.domain.dim

    @functools.cached_property
    def optimum(self) -> np.ndarray:
        """``x* = argmin_{x in X} sum_i f_i(x)``, shape ``(dim,)`` (read-only, cached)."""
        x = np.array(self.costs.optimum(self.domain), dtype=float)
        x.setflags(write=False)
        return x

    @functools.cached_property
    def optimal_value(self) -> float:
        """``f* = sum_i f_i(x*)``."""
        return float(self.costs.total_value(self.optimum))

    def adjacent(self, agent: int, **new_private_data: Any) -> Problem:
        """The adjacent problem where only ``agent``'s cost differs (Huang, Mitra and Vaidya, ICDCN 2015, Def. 3).

        The domain and the declared constants are kept; the new cost must still
        belong to the class those constants describe. Every other agent keeps
        its cost (the same parameters, or the same callables), so
        :meth:`~asyncdp.problems.costs.CostFamily.compare_agents` shows from
        the structure alone that only ``agent``'s cost differs: the privacy
        check needs that, since gradients compared at finitely many points
        never show that a cost is unchanged.

        Args:
            agent: index of the agent whose private data changes.
            **new_private_data: the family's private fields, e.g. ``address=``
                for :class:`RendezvousQuadratic`.

        Returns:
            A new :class:`Problem`.

        Raises:
            ProblemError: bad agent/field, or the new data leaves the class
                (e.g. an address outside ``X``).
            ConstantViolationError: the new cost needs looser constants.

        Example:
            >>> p = rendezvous_problem([[0.5, 0.5], [-0.5, 0.5]])
            >>> p.adjacent(1, address=[0.5, -1.0]).optimum
            array([ 0.5 , -0.25])
        """
        new_costs = self.costs.with_agent(agent, **new_private_data)
        return Problem(self.domain, new_costs, self.constants)

    def to_dict(self, *, include_optimum: bool = False) -> dict[str, Any]:
        """Provenance record: domain, costs, constants (and ``x*``, ``f*`` on request)."""
        out: dict[str, Any] = {
            "num_agents": self.num_agents,
            "dim": self.dim,
            "domain": self.domain.to_dict(),
            "costs": self.costs.to_dict(),
            "constants": self.constants.to_dict() if self.constants else None,
        }
        if include_optimum:
            out["optimum"] = self.optimum.tolist()
            out["optimal_value"] = self.optimal_value
        return out


def rendezvous_problem(addresses: Any, low: float = -1.0, high: float = 1.0) -> Problem:
    """Private rendezvous on a box (Huang, Mitra and Vaidya, ICDCN 2015, Examples 1-2; default box ``[-1, 1]^n``).

    Args:
        addresses: array of shape ``(N, n)``, every address inside the box.
        low: lower bound of every coordinate (scalar or length-n array).
        high: upper bound of every coordinate (scalar or length-n array).

    Returns:
        ``Problem(Box(low, high), RendezvousQuadratic(addresses))``.

    Raises:
        ProblemError: bad addresses, bad bounds, or an address outside the box.

    Example:
        >>> rendezvous_problem([[0.0, 0.0], [1.0, 1.0]]).num_agents
        2
    """
    costs = RendezvousQuadratic(addresses)
    return Problem(Box(low, high, dim=costs.dim), costs)
