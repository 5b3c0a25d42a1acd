"""Quadratic cost families with exact constants and optima.

* :class:`RendezvousQuadratic` -- ``f_i(x) = ||x - a_i||^2`` (Huang, Mitra and Vaidya, ICDCN 2015, Example 1);
* :class:`WeightedQuadratic` -- ``f_i(x) = (w_i / 2) ||x - a_i||^2`` (or diagonal weights).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..domains import Box, Domain, Reals
from ...errors import ProblemError
from .family import CostFamily, _fmt
from .function_class import FunctionClass
from .optimum import numeric_optimum
from .structure import Structure

__all__ = ["RendezvousQuadratic", "WeightedQuadratic"]

_TWO = np.array(2.0)  # a 0-d factor: numpy multiplies by it faster than by a Python float, same result


def _finite_or_none(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _as_point_matrix(data: Any, name: str) -> np.ndarray:
    try:
        arr = np.array(data, dtype=float)
    except (TypeError, ValueError):
        raise ProblemError(f"{name} must be a numeric (N, n) array, got {data!r}") from None
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ProblemError(f"{name} must have shape (N, n) with N, n >= 1, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        i = int(np.argwhere(~np.isfinite(arr))[0][0])
        raise ProblemError(f"{name} must be finite; row {i} (agent {i}) = {_fmt(arr[i])}")
    arr.setflags(write=False)
    return arr


def _as_point(data: Any, dim: int, name: str) -> np.ndarray:
    try:
        p = np.array(data, dtype=float)
    except (TypeError, ValueError):
        raise ProblemError(f"{name} must be a numeric vector, got {data!r}") from None
    if p.shape != (dim,):
        raise ProblemError(f"{name} must have shape ({dim},), got shape {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ProblemError(f"{name} must be finite, got {_fmt(p)}")
    return p


class RendezvousQuadratic(CostFamily):
    """Private rendezvous: ``f_i(x) = ||x - a_i||^2`` (Huang, Mitra and Vaidya, ICDCN 2015, Example 1).

    Agent i's private datum is its address ``a_i``; ``grad f_i(x) = 2 (x - a_i)``.
    The function class is ``{||a - x||^2 : a in X}``, so on a bounded ``X``
    containing the addresses: C1 = diam X, C2 = ``sup_{x,a in X} 2||x - a||`` =
    2 diam X (``4 sqrt 2`` for the box ``[-1, 1]^2`` of Example 2 in Huang, Mitra and Vaidya, ICDCN 2015), and
    C3 = C4 = L = mu = 2.

    Args:
        addresses: array of shape ``(N, n)``, finite.

    Raises:
        ProblemError: wrong shape or non-finite addresses.

    Example:
        >>> fam = RendezvousQuadratic([[0.5, 0.5], [-0.5, 0.5]])
        >>> fam.optimum(Box(-1.0, 1.0, dim=2))
        array([0. , 0.5])
    """

    private_fields = ("address",)

    def __init__(self, addresses: Any) -> None:
        self._addresses = _as_point_matrix(addresses, "addresses")
        super().__init__(*self._addresses.shape)

    @property
    def addresses(self) -> np.ndarray:
        """The private addresses, shape ``(N, n)`` (read-only)."""
        return self._addresses

    def _value(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        d = x - self._addresses[a]
        return np.einsum("...k,...k->...", d, d)

    def _gradient(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        # np.take: the rows of addresses[a], gathered faster than by fancy indexing for many agents
        return _TWO * (x - np.take(self._addresses, a, axis=0))

    def function_class(self, domain: Domain) -> FunctionClass:
        """Constants of ``{||a - x||^2 : a in X}`` on ``domain``.

        On an unbounded domain C1 and C2 are ``None`` (the gradient is unbounded).

        Raises:
            ProblemError: dimension mismatch, or an address lies outside ``domain``.
        """
        self._check_domain(domain)
        inside = np.atleast_1d(domain.contains(self._addresses))
        if not inside.all():
            i = int(np.flatnonzero(~inside)[0])
            raise ProblemError(
                f"address of agent {i} = {_fmt(self._addresses[i])} lies outside {domain!r}; "
                "the rendezvous class {||a - x||^2 : a in X} needs every address in X"
            )
        diam = domain.diameter
        return FunctionClass(
            diameter=_finite_or_none(diam),
            gradient_bound=_finite_or_none(2.0 * diam),
            strong_convexity=2.0,
            hessian_bound=2.0,
            smoothness=2.0,
        )

    def optimum(self, domain: Domain) -> np.ndarray:
        """``Proj_X(mean_i a_i)``, exact.

        ``sum_i ||x - a_i||^2 = N ||x - abar||^2 + const`` with ``abar`` the mean
        address: all agents share the Hessian ``2 I``, so the sum is an
        isotropic quadratic centred at ``abar`` and its minimizer over a closed
        convex ``X`` is the point of ``X`` nearest to ``abar``, i.e. the
        Euclidean projection.
        """
        self._check_domain(domain)
        return domain.project(self._addresses.mean(axis=0))

    def _agent_structure(self) -> Structure | None:
        """Each agent's address (this class only: a subclass may compute its costs otherwise)."""
        if type(self) is not RendezvousQuadratic:
            return None
        return Structure("RendezvousQuadratic", (), tuple(self._addresses))

    def with_agent(self, agent: int, **changes: Any) -> RendezvousQuadratic:
        """Copy with ``address=`` of ``agent`` replaced.

        Example:
            >>> RendezvousQuadratic([[0.0], [1.0]]).with_agent(1, address=[3.0]).addresses[:, 0]
            array([0., 3.])
        """
        i = self._check_agent(agent)
        self._check_changes(changes)
        new = self._addresses.copy()
        new[i] = _as_point(changes["address"], self._dim, "address")
        return RendezvousQuadratic(new)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "RendezvousQuadratic",
            "num_agents": self._num_agents,
            "dim": self._dim,
            "addresses": self._addresses.tolist(),
        }


class WeightedQuadratic(CostFamily):
    """Weighted quadratics ``f_i(x) = (w_i / 2) ||x - a_i||^2``.

    ``weights`` may be

    * a scalar or shape ``(N,)``: one curvature ``w_i > 0`` per agent; or
    * shape ``(N, n)``: a diagonal Hessian per agent,
      ``f_i(x) = (1/2) sum_k w_ik (x_k - a_ik)^2``.

    Constants on ``X``: C3 = mu = min w, C4 = L = max w, and C2 =
    ``max_i sup_{x in X} ||W_i (x - a_i)||`` (``max_i w_i sup_x ||x - a_i||``
    for scalar weights; exact for diagonal weights on a box, otherwise the
    upper bound ``max_k w_ik sup_x ||x - a_i||``). Centers need not lie in X.

    Args:
        centers: shape ``(N, n)``, finite.
        weights: positive finite, shape ``()``, ``(N,)`` or ``(N, n)``.

    Raises:
        ProblemError: bad shapes, non-finite or non-positive weights.

    Example:
        >>> fam = WeightedQuadratic([[0.0, 0.0], [3.0, 0.0]], [2.0, 1.0])
        >>> fam.optimum(Reals(2))
        array([1., 0.])
    """

    private_fields = ("center", "weight")

    def __init__(self, centers: Any, weights: Any) -> None:
        self._centers = _as_point_matrix(centers, "centers")
        n_agents, dim = self._centers.shape
        super().__init__(n_agents, dim)
        try:
            w = np.array(weights, dtype=float)
        except (TypeError, ValueError):
            raise ProblemError(f"weights must be numeric, got {weights!r}") from None
        if w.ndim == 0:
            w = np.full((n_agents, 1), float(w))
        elif w.shape == (n_agents,):
            w = w[:, None]
        elif w.shape != (n_agents, dim):
            raise ProblemError(
                f"weights must have shape (), ({n_agents},) or ({n_agents}, {dim}), "
                f"got shape {w.shape}"
            )
        bad = ~(np.isfinite(w) & (w > 0))
        if bad.any():
            i, k = (int(v) for v in np.argwhere(bad)[0])
            raise ProblemError(
                f"weights must be finite and > 0; agent {i} has weight {float(w[i, k])!r}"
            )
        w = w.copy()
        w.setflags(write=False)
        self._w = w  # shape (N, 1) or (N, n)

    @property
    def centers(self) -> np.ndarray:
        """Private centers, shape ``(N, n)``."""
        return self._centers

    @property
    def diagonal(self) -> bool:
        """True when each agent has a diagonal (per-coordinate) weight."""
        return self._w.shape[1] > 1

    @property
    def weights(self) -> np.ndarray:
        """Weights, shape ``(N,)`` (scalar per agent) or ``(N, n)`` (diagonal)."""
        return self._w if self.diagonal else self._w[:, 0]

    def _value(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        d = x - self._centers[a]
        return 0.5 * np.sum(self._w[a] * d * d, axis=-1)

    def _gradient(self, a: np.ndarray, x: np.ndarray, round_index: int | None) -> np.ndarray:
        return self._w[a] * (x - self._centers[a])

    def _sup_gradient(self, domain: Domain) -> float:
        if not domain.bounded:
            return math.inf
        if not self.diagonal:
            return float(np.max(self._w[:, 0] * domain.max_distance(self._centers)))
        if isinstance(domain, Box):
            far = np.maximum(
                np.abs(self._centers - domain.low), np.abs(self._centers - domain.high)
            )
            return float(np.max(np.linalg.norm(self._w * far, axis=-1)))
        return float(np.max(self._w.max(axis=1) * domain.max_distance(self._centers)))

    def function_class(self, domain: Domain) -> FunctionClass:
        """mu = min w, L = C4 = max w, C2 as in the class docstring; C1 = diam X."""
        self._check_domain(domain)
        return FunctionClass(
            diameter=_finite_or_none(domain.diameter),
            gradient_bound=_finite_or_none(self._sup_gradient(domain)),
            strong_convexity=float(self._w.min()),
            hessian_bound=float(self._w.max()),
            smoothness=float(self._w.max()),
        )

    def optimum(self, domain: Domain) -> np.ndarray:
        """Exact projection of the weighted mean where possible, else numeric.

        With scalar weights ``sum_i (w_i/2)||x - a_i||^2 = (W/2)||x - m||^2 +
        const`` (``W = sum w_i``, ``m`` the weighted mean), so ``x* = Proj_X(m)``.
        With diagonal weights the sum is separable per coordinate, so clipping
        the per-coordinate weighted mean is exact on a box (and on ``R^n``);
        on other domains it is a weighted projection, solved numerically.
        """
        self._check_domain(domain)
        w = np.broadcast_to(self._w, self._centers.shape)
        m = (w * self._centers).sum(axis=0) / w.sum(axis=0)
        if not self.diagonal or isinstance(domain, (Box, Reals)):
            return domain.project(m)
        return numeric_optimum(self, domain, x0=m)

    def _agent_structure(self) -> Structure | None:
        """Each agent's center and per-coordinate weights (a scalar weight ``w`` as ``(w, ..., w)``: the same
        cost); this class only."""
        if type(self) is not WeightedQuadratic:
            return None
        w = np.broadcast_to(self._w, self._centers.shape)
        return Structure("WeightedQuadratic", (), tuple(zip(self._centers, w)))

    def with_agent(self, agent: int, **changes: Any) -> WeightedQuadratic:
        """Copy with ``center=`` and/or ``weight=`` of ``agent`` replaced."""
        i = self._check_agent(agent)
        self._check_changes(changes)
        centers = self._centers.copy()
        w = self._w.copy()
        if "center" in changes:
            centers[i] = _as_point(changes["center"], self._dim, "center")
        if "weight" in changes:
            new_w = np.array(changes["weight"], dtype=float)
            if self.diagonal:
                new_w = np.broadcast_to(new_w, (self._dim,)) if new_w.ndim == 0 else new_w
                if new_w.shape != (self._dim,):
                    raise ProblemError(
                        f"weight must be a scalar or have shape ({self._dim},), got shape "
                        f"{new_w.shape}"
                    )
                w[i] = new_w
            else:
                if new_w.ndim != 0:
                    raise ProblemError(f"weight must be a scalar, got shape {new_w.shape}")
                w[i, 0] = float(new_w)
        return WeightedQuadratic(centers, w if self.diagonal else w[:, 0])

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "WeightedQuadratic",
            "num_agents": self._num_agents,
            "dim": self._dim,
            "centers": self._centers.tolist(),
            "weights": self.weights.tolist(),
        }
