"""Empirical check of declared constants: :func:`check_constants`, :class:`ConstantCheck`.

Samples points and pairs of points of a bounded domain and compares the
observed gradient norms, monotonicity and Lipschitz quotients with the
declared C1..C4, L. Sampling can only show a violation, never prove a bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..domains import Domain
from ...errors import ConstantViolationError, ProblemError
from .family import CostFamily, _fmt
from .function_class import _LABELS, FunctionClass

__all__ = ["ConstantCheck", "check_constants"]


@dataclass(frozen=True)
class ConstantCheck:
    """Outcome of :func:`check_constants`.

    Attributes:
        holds: True when no declared constant was contradicted.
        violations: human-readable messages (constant, declared, observed,
            agent, point).
        observed: extreme observed values: ``diameter`` (exact, of the domain),
            ``gradient_bound`` (largest gradient norm), ``strong_convexity``
            (smallest monotonicity quotient), ``smoothness`` (largest gradient
            difference quotient).
        declared: the constants that were checked.
    """

    holds: bool
    violations: list[str]
    observed: dict[str, float]
    declared: FunctionClass

    def raise_if_violated(self) -> None:
        """Raise :class:`ConstantViolationError` listing the violations, if any."""
        if not self.holds:
            raise ConstantViolationError("; ".join(self.violations))


def check_constants(
    family: CostFamily,
    domain: Domain,
    *,
    samples: int = 2000,
    seed: int = 0,
    rtol: float = 1e-9,
    atol: float = 0.0,
    constants: FunctionClass | None = None,
) -> ConstantCheck:
    """Test declared constants against sampled points and pairs of points.

    Points are the domain's extreme points plus ``samples`` uniform draws; the
    pairs match them with (reversed) extreme points plus fresh draws. For every
    agent it computes the largest ``||grad f_i(x)||`` (vs C2), the smallest
    ``<g(x) - g(y), x - y> / ||x - y||^2`` (vs C3), the largest
    ``||g(x) - g(y)|| / ||x - y||`` (vs L and C4) and compares ``diam X`` with
    C1. Sampling can only show a violation, never prove a bound.

    Args:
        family: the cost family.
        domain: a bounded domain.
        samples: number of random points (and of random pairs).
        seed: seed of the sampling RNG.
        rtol: relative slack: a bound is violated when
            ``observed > declared (1 + rtol) + atol``; mu when
            ``observed < declared (1 - rtol) - atol``.
        atol: absolute slack.
        constants: the constants to check; default ``family.function_class(domain)``.

    Returns:
        A :class:`ConstantCheck`.

    Raises:
        ProblemError: unbounded domain (cannot sample), bad arguments.
        CostValueError: the family returned NaN/inf.

    Example:
        >>> from asyncdp.problems.costs import RendezvousQuadratic
        >>> from asyncdp.problems.domains import Box
        >>> fam = RendezvousQuadratic([[0.0, 0.0]])
        >>> check_constants(fam, Box(-1.0, 1.0, dim=2), samples=200).holds
        True
    """
    family._check_domain(domain)
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ProblemError(f"samples must be a positive integer, got {samples!r}")
    for label, v in (("rtol", rtol), ("atol", atol)):
        if not (math.isfinite(v) and v >= 0):
            raise ProblemError(f"{label} must be finite and >= 0, got {v!r}")
    declared = family.function_class(domain) if constants is None else constants
    if not isinstance(declared, FunctionClass):
        raise ProblemError(f"constants must be a FunctionClass, got {type(declared).__name__}")
    rng = np.random.default_rng(seed)
    ext = domain.extreme_points()
    xs = np.concatenate([ext, domain.sample(rng, samples)])
    ys = np.concatenate([ext[::-1], domain.sample(rng, samples)])
    n_agents, dim = family.num_agents, family.dim
    agents = np.arange(n_agents)
    chunk = max(1, 200_000 // (n_agents * dim))

    best_g = (-math.inf, 0, 0)  # (value, agent, row)
    best_sc = (math.inf, 0, 0)
    best_sm = (-math.inf, 0, 0)
    for start in range(0, xs.shape[0], chunk):
        x = xs[start : start + chunk]
        y = ys[start : start + chunk]
        gx = family.gradient(agents, x[:, None, :])
        gy = family.gradient(agents, y[:, None, :])
        gnorm = np.linalg.norm(gx, axis=-1)  # (m, N)
        k = np.unravel_index(int(np.argmax(gnorm)), gnorm.shape)
        if gnorm[k] > best_g[0]:
            best_g = (float(gnorm[k]), int(k[1]), start + int(k[0]))
        dx = x - y
        dd = np.einsum("mk,mk->m", dx, dx)
        ok = dd > (1e-12 * max(1.0, domain.diameter)) ** 2
        if not ok.any():
            continue
        dg = (gx - gy)[ok]
        dxo, ddo = dx[ok], dd[ok]
        rows = np.flatnonzero(ok) + start
        sc = np.einsum("mik,mk->mi", dg, dxo) / ddo[:, None]
        sm = np.linalg.norm(dg, axis=-1) / np.sqrt(ddo)[:, None]
        k = np.unravel_index(int(np.argmin(sc)), sc.shape)
        if sc[k] < best_sc[0]:
            best_sc = (float(sc[k]), int(k[1]), int(rows[k[0]]))
        k = np.unravel_index(int(np.argmax(sm)), sm.shape)
        if sm[k] > best_sm[0]:
            best_sm = (float(sm[k]), int(k[1]), int(rows[k[0]]))

    observed = {
        "diameter": float(domain.diameter),
        "gradient_bound": best_g[0],
        "strong_convexity": best_sc[0],
        "smoothness": best_sm[0],
    }
    violations: list[str] = []

    def above(obs: float, dec: float | None) -> bool:
        return dec is not None and obs > dec * (1 + rtol) + atol

    if above(observed["diameter"], declared.diameter):
        violations.append(
            f"{_LABELS['diameter']}: declared {declared.diameter!r}, "
            f"observed diam X = {observed['diameter']!r} for {domain!r}"
        )
    if above(best_g[0], declared.gradient_bound):
        violations.append(
            f"{_LABELS['gradient_bound']}: declared {declared.gradient_bound!r}, observed "
            f"||grad f_i(x)|| = {best_g[0]!r} at agent {best_g[1]}, x = {_fmt(xs[best_g[2]])}"
        )
    mu = declared.strong_convexity
    if mu is not None and math.isfinite(best_sc[0]) and best_sc[0] < mu * (1 - rtol) - atol:
        violations.append(
            f"{_LABELS['strong_convexity']}: declared {mu!r}, observed "
            f"<g(x)-g(y), x-y>/||x-y||^2 = {best_sc[0]!r} at agent {best_sc[1]}, "
            f"x = {_fmt(xs[best_sc[2]])}, y = {_fmt(ys[best_sc[2]])}"
        )
    for name in ("smoothness", "hessian_bound"):
        dec = getattr(declared, name)
        if above(best_sm[0], dec):
            violations.append(
                f"{_LABELS[name]}: declared {dec!r}, observed "
                f"||g(x)-g(y)||/||x-y|| = {best_sm[0]!r} at agent {best_sm[1]}, "
                f"x = {_fmt(xs[best_sm[2]])}, y = {_fmt(ys[best_sm[2]])}"
            )
    return ConstantCheck(
        holds=not violations, violations=violations, observed=observed, declared=declared
    )
