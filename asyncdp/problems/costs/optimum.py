"""Numeric minimizer of ``sum_i f_i`` over a domain: :func:`numeric_optimum`.

For families without a closed-form optimum. scipy.optimize is imported inside
the function, so importing :mod:`asyncdp` does not import it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domains import Ball, Box, Domain, Reals
from ...errors import ProblemError
from .family import CostFamily, _fmt

__all__ = ["numeric_optimum"]


def numeric_optimum(
    family: CostFamily, domain: Domain, *, x0: Any = None, tol: float = 1e-12
) -> np.ndarray:
    """Minimize ``sum_i f_i`` over ``domain`` with scipy.

    Box: L-BFGS-B with bounds; Ball: SLSQP with the constraint
    ``r^2 - ||x - c||^2 >= 0``; Reals: unconstrained L-BFGS-B. The result is
    projected onto ``domain``. If scipy reports failure the point is still
    accepted when its projected-gradient residual ``||x - Proj(x - grad f(x))||``
    is below ``1e-6 (1 + sum_i ||grad f_i(x)||)``.

    Args:
        family: the cost family.
        domain: the feasible set (Box, Ball or Reals).
        x0: start point (default ``domain.center``), projected onto ``domain``.
        tol: optimizer tolerance.

    Returns:
        The minimizer, shape ``(dim,)``.

    Raises:
        ProblemError: unsupported domain type, or the optimizer failed.

    Example:
        >>> from asyncdp.problems.costs import RendezvousQuadratic
        >>> fam = RendezvousQuadratic([[2.0, 0.0]])
        >>> np.round(numeric_optimum(fam, Box(-1.0, 1.0, dim=2)), 8)
        array([1., 0.])
    """
    from scipy import optimize

    family._check_domain(domain)
    agents = np.arange(family.num_agents)
    start = domain.center if x0 is None else domain.project(x0)

    def fun(x: np.ndarray) -> float:
        return float(np.sum(family.value(agents, x)))

    def jac(x: np.ndarray) -> np.ndarray:
        return family.gradient(agents, x).sum(axis=0)

    if isinstance(domain, Box):
        res = optimize.minimize(
            fun, start, jac=jac, method="L-BFGS-B",
            bounds=list(zip(domain.low, domain.high)),
            options={"ftol": tol * 1e-3, "gtol": tol, "maxiter": 20000, "maxls": 100},
        )  # fmt: skip
    elif isinstance(domain, Ball):
        c, r = domain.center, domain.radius
        cons = {
            "type": "ineq",
            "fun": lambda x: r * r - float((x - c) @ (x - c)),
            "jac": lambda x: -2.0 * (x - c),
        }
        res = optimize.minimize(
            fun, start, jac=jac, method="SLSQP", constraints=[cons],
            options={"ftol": tol * 1e-3, "maxiter": 2000},
        )  # fmt: skip
    elif isinstance(domain, Reals):
        res = optimize.minimize(
            fun, start, jac=jac, method="L-BFGS-B",
            options={"ftol": tol * 1e-3, "gtol": tol, "maxiter": 20000, "maxls": 100},
        )  # fmt: skip
    else:
        raise ProblemError(
            f"no numeric optimizer for domain type {type(domain).__name__}; "
            "use Box, Ball or Reals"
        )
    if not np.all(np.isfinite(res.x)):
        raise ProblemError(f"numeric optimum on {domain!r} failed: non-finite x = {_fmt(res.x)}")
    x = _polish(family, domain, domain.project(res.x))
    if not res.success:
        g_all = family.gradient(agents, x)
        scale = 1.0 + float(np.linalg.norm(g_all, axis=-1).sum())
        residual = float(np.linalg.norm(x - domain.project(x - g_all.sum(axis=0))))
        if residual > 1e-6 * scale:
            raise ProblemError(
                f"numeric optimum on {domain!r} failed: {res.message} "
                f"(projected-gradient residual {residual:.3g} at x = {_fmt(x)})"
            )
    return x


def _polish(family: CostFamily, domain: Domain, x: np.ndarray, iters: int = 500) -> np.ndarray:
    """Refine ``x`` by projected-gradient steps of length ``1 / (N L)``.

    Optimizers stop when function values stop changing, which limits the
    accuracy of ``x`` to about ``sqrt(machine eps)``; gradients stay accurate,
    so a few gradient-only steps recover the remaining digits. Skipped when L
    is unknown; the refined point is kept only if its projected-gradient
    residual is smaller than the starting one.
    """
    try:
        lip = family.function_class(domain).smoothness
    except ProblemError:
        return x
    if not lip:
        return x
    step = 1.0 / (lip * family.num_agents)

    def mapped(z: np.ndarray) -> np.ndarray:
        return domain.project(z - step * family.total_gradient(z))

    start_res = float(np.linalg.norm(mapped(x) - x))
    y = x
    for _ in range(iters):
        y_new = mapped(y)
        done = np.linalg.norm(y_new - y) <= 1e-16 * (1.0 + np.linalg.norm(y))
        y = y_new
        if done or not np.all(np.isfinite(y)):
            break
    if np.all(np.isfinite(y)) and float(np.linalg.norm(mapped(y) - y)) < start_res:
        return y
    return x
