"""Private cost functions ``f_1, ..., f_N`` with their declared constants.

A *cost family* holds the private data of all N agents and evaluates any
agents' costs and gradients in one vectorized call. Each family declares the
constants of the function class it belongs to on a given domain
(:class:`FunctionClass`; Huang, Mitra and Vaidya, ICDCN 2015, Assumption 1;
Showkatbakhsh, Karakus and Diggavi, arXiv 2019, A2-A4) and the
minimizer ``x* = argmin_{x in X} sum_i f_i(x)``. Adjacent problems (Huang, Mitra and Vaidya, ICDCN 2015,
Def. 3: exactly one agent's cost differs) are built with
:meth:`CostFamily.with_agent`; :meth:`CostFamily.compare_agents` says, from
the families' parameters, which agents' costs differ between two families
(:mod:`~asyncdp.problems.costs.structure`), where comparing gradients at
finitely many points could only show that a cost differs, never that it is
the same.

Families:

* :class:`RendezvousQuadratic` -- ``f_i(x) = ||x - a_i||^2`` (Huang, Mitra and Vaidya, ICDCN 2015, Example 1);
* :class:`WeightedQuadratic` -- ``f_i(x) = (w_i / 2) ||x - a_i||^2`` (or diagonal weights);
* :class:`UserCost` -- arbitrary user callables with user-declared constants;
* :class:`LinearOverride` -- a family with one agent's cost replaced by a linear one
  (the extremal costs of the privacy checker's worst-case search);
* :class:`RadialOverride` -- one agent's cost replaced by ``C ||x - c||`` smoothed (a pair whose gradients point
  every way, for the privacy checker's prober).

:func:`check_constants` tests declared constants against sampled points;
:func:`numeric_optimum` minimizes ``sum_i f_i`` where no closed form exists.

Modules: :mod:`~asyncdp.problems.costs.function_class` (the constants),
:mod:`~asyncdp.problems.costs.family` (the abstract :class:`CostFamily`),
:mod:`~asyncdp.problems.costs.quadratics`, :mod:`~asyncdp.problems.costs.user`,
:mod:`~asyncdp.problems.costs.optimum`, :mod:`~asyncdp.problems.costs.checks` and
:mod:`~asyncdp.problems.costs.structure`.

Conventions: ``agents`` is an integer or an integer array; it is broadcast
against the leading axes of ``x`` (shape ``(..., dim)``), so ``value`` returns
shape ``broadcast(agents.shape, x.shape[:-1])`` -- which is ``x.shape[:-1]``
whenever ``agents`` broadcasts to it -- and ``gradient`` that shape plus
``(dim,)``.
"""

from __future__ import annotations

from .checks import ConstantCheck, check_constants
from .family import CostFamily
from .function_class import FunctionClass
from .optimum import numeric_optimum
from .override import AgentOverride, LinearOverride, RadialOverride
from .quadratics import RendezvousQuadratic, WeightedQuadratic
from .structure import Difference, Opaque, Structure
from .user import UserCost

__all__ = [
    "FunctionClass",
    "CostFamily",
    "RendezvousQuadratic",
    "WeightedQuadratic",
    "UserCost",
    "AgentOverride",
    "LinearOverride",
    "RadialOverride",
    "Difference",
    "Opaque",
    "Structure",
    "ConstantCheck",
    "check_constants",
    "numeric_optimum",
]
