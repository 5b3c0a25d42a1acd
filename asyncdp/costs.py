"""Private cost functions ``f_1, ..., f_N`` with their declared constants.

A *cost family* holds the private data of all N agents and evaluates any
agents' costs and gradients in one vectorized call. Each family declares the
constants of the function class it belongs to on a given domain
(:class:`FunctionClass`; seed 003, Assumption 1; seed 000, A2-A4) and the
minimizer ``x* = argmin_{x in X} sum_i f_i(x)``. Adjacent problems (seed 003,
Def. 3: exactly one agent's cost differs) are built with
:meth:`CostFamily.with_agent`.

Families:

* :class:`RendezvousQuadratic` -- ``f_i(x) = ||x - a_i||^2`` (seed 003, Example 1);
* :class:`WeightedQuadratic` -- ``f_i(x) = (w_i / 2) ||x - a_i||^2`` (or diagonal weights);
* :class:`UserCost` -- arbitrary user callables with user-declared constants.

:func:`check_constants` tests declared constants against sampled points.

Conventions: ``agents`` is an integer or an integer array; it is broadcast
against the leading axes of ``x`` (shape ``(..., dim)``), so ``value`` returns
shape ``broadcast(agents.shape, x.shape[:-1])`` -- which is ``x.shape[:-1]``
whenever ``agents`` broadcasts to it -- and ``gradient`` that shape plus
``(dim,)``.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .domains import Ball, Box, Domain, Reals
from .errors import ConstantViolationError, CostValueError, ProblemError
from .finite import all_finite

__all__ = [
    "FunctionClass",
    "CostFamily",
    "RendezvousQuadratic",
    "WeightedQuadratic",
    "UserCost",
    "ConstantCheck",
    "check_constants",
    "numeric_optimum",
]

_FIELDS = ("diameter", "gradient_bound", "strong_convexity", "hessian_bound", "smoothness")
_LABELS = {
    "diameter": "C1 (diameter)",
    "gradient_bound": "C2 = G (gradient bound)",
    "strong_convexity": "C3 = mu (strong convexity)",
    "hessian_bound": "C4 (Hessian bound)",
    "smoothness": "L (smoothness)",
}
_ALIASES = {
    "C1": "diameter",
    "C2": "gradient_bound",
    "G": "gradient_bound",
    "C3": "strong_convexity",
    "mu": "strong_convexity",
    "C4": "hessian_bound",
    "L": "smoothness",
}
# A declared bound may differ from a derived one by float rounding only.
_ROUNDING = 1e-12


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


def _finite_or_none(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


# --------------------------------------------------------------------------
# Function class constants
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class FunctionClass:
    """Constants of a cost family ``F`` on a domain ``X`` (seed 003, Assumption 1).

    Every field is a finite non-negative float, or ``None`` when unknown.

    Attributes:
        diameter: C1 = ``sup_{x,y in X} ||x - y||``.
        gradient_bound: C2 = G = ``sup_{x in X, g in F} ||grad g(x)||`` (L2).
        strong_convexity: C3 = mu, with ``mu I <= hess g`` for all ``g in F``.
        hessian_bound: C4 = ``sup ||hess g(x)||`` (spectral norm).
        smoothness: L, the Lipschitz constant of every ``grad g`` on ``X``.
            When omitted but ``hessian_bound`` is given it defaults to
            ``hessian_bound`` (mean-value theorem on the convex set ``X``).

    Raises:
        ProblemError: a field is negative, NaN, infinite or not a number.
        ConstantViolationError: ``strong_convexity`` exceeds ``smoothness``
            or ``hessian_bound`` (impossible: ``mu <= L``).

    Example:
        >>> fc = FunctionClass(diameter=2.0, gradient_bound=4.0, strong_convexity=2.0,
        ...                    hessian_bound=2.0)
        >>> (fc.C2, fc.mu, fc.L)
        (4.0, 2.0, 2.0)
    """

    diameter: float | None = None
    gradient_bound: float | None = None
    strong_convexity: float | None = None
    hessian_bound: float | None = None
    smoothness: float | None = None

    def __post_init__(self) -> None:
        for name in _FIELDS:
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool):
                raise ProblemError(f"{name} must be a number or None, got {v!r}")
            try:
                f = float(v)
            except (TypeError, ValueError):
                raise ProblemError(f"{name} must be a number or None, got {v!r}") from None
            if not (math.isfinite(f) and f >= 0):
                raise ProblemError(f"{name} must be finite and >= 0 (or None), got {v!r}")
            object.__setattr__(self, name, f)
        if self.smoothness is None and self.hessian_bound is not None:
            object.__setattr__(self, "smoothness", self.hessian_bound)
        mu = self.strong_convexity
        for name in ("smoothness", "hessian_bound"):
            v = getattr(self, name)
            if mu is not None and v is not None and mu > v * (1 + _ROUNDING):
                raise ConstantViolationError(
                    f"strong_convexity = {mu!r} exceeds {name} = {v!r}; "
                    "a mu-strongly convex function with L-Lipschitz gradient has mu <= L"
                )

    # aliases ------------------------------------------------------------
    @property
    def C1(self) -> float | None:
        """Alias of :attr:`diameter`."""
        return self.diameter

    @property
    def C2(self) -> float | None:
        """Alias of :attr:`gradient_bound`."""
        return self.gradient_bound

    @property
    def G(self) -> float | None:
        """Alias of :attr:`gradient_bound` (seed 000, A2)."""
        return self.gradient_bound

    @property
    def C3(self) -> float | None:
        """Alias of :attr:`strong_convexity`."""
        return self.strong_convexity

    @property
    def mu(self) -> float | None:
        """Alias of :attr:`strong_convexity` (seed 000, A4)."""
        return self.strong_convexity

    @property
    def C4(self) -> float | None:
        """Alias of :attr:`hessian_bound`."""
        return self.hessian_bound

    @property
    def L(self) -> float | None:
        """Alias of :attr:`smoothness` (seed 000, A3)."""
        return self.smoothness

    # helpers ------------------------------------------------------------
    def require(self, name: str, *, by: str | None = None) -> float:
        """Return a constant that must be known.

        Args:
            name: a field name or an alias (``"C2"``, ``"G"``, ``"mu"``, ``"L"``, ...).
            by: who needs it, for the error message.

        Raises:
            ProblemError: unknown name, or the constant is ``None``.

        Example:
            >>> FunctionClass(gradient_bound=3.0).require("G")
            3.0
        """
        field = _ALIASES.get(name, name)
        if field not in _FIELDS:
            raise ProblemError(f"unknown constant name {name!r}; expected one of {_FIELDS}")
        v = getattr(self, field)
        if v is None:
            who = f" by {by}" if by else ""
            raise ProblemError(f"constant {_LABELS[field]} is required{who} but unknown (None)")
        return float(v)

    def conflicts_with(self, derived: FunctionClass, *, rtol: float = _ROUNDING) -> list[str]:
        """Where these (declared) constants are tighter than ``derived`` ones.

        A declared bound below the derived bound, or a declared ``mu`` above the
        derived ``mu``, claims more than the family guarantees. ``None`` on
        either side is never a conflict.

        Returns:
            One message per conflicting constant (empty if consistent).

        Example:
            >>> FunctionClass(gradient_bound=1.0).conflicts_with(FunctionClass(gradient_bound=2.0))
            ['C2 = G (gradient bound): declared 1.0 < derived 2.0']
        """
        out = []
        for name in _FIELDS:
            d, g = getattr(self, name), getattr(derived, name)
            if d is None or g is None:
                continue
            if name == "strong_convexity":
                if d > g * (1 + rtol):
                    out.append(f"{_LABELS[name]}: declared {d!r} > derived {g!r}")
            elif d < g * (1 - rtol):
                out.append(f"{_LABELS[name]}: declared {d!r} < derived {g!r}")
        return out

    def replace(self, **changes: float | None) -> FunctionClass:
        """A copy with some constants changed (aliases accepted)."""
        fields = {}
        for k, v in changes.items():
            name = _ALIASES.get(k, k)
            if name not in _FIELDS:
                raise ProblemError(f"unknown constant name {k!r}; expected one of {_FIELDS}")
            fields[name] = v
        return dataclasses.replace(self, **fields)

    def to_dict(self) -> dict[str, float | None]:
        """The five constants as a plain dict."""
        return {name: getattr(self, name) for name in _FIELDS}


# --------------------------------------------------------------------------
# Cost families
# --------------------------------------------------------------------------
class CostFamily(abc.ABC):
    """Private costs of all N agents, vectorized over agents and points.

    Subclasses implement :meth:`_value`, :meth:`_gradient`,
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
        where = _where(None, round_index)
        prefix = f"{where}: " if where else ""
        try:
            xx = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            raise ProblemError(f"{prefix}x must be a numeric array, got {x!r}") from None
        if xx.ndim == 0 or xx.shape[-1] != self._dim:
            raise ProblemError(
                f"{prefix}x must have shape (..., {self._dim}), got shape {xx.shape}"
            )
        a = np.asarray(agents)
        if a.dtype.kind not in "iu":
            raise ProblemError(f"{prefix}agents must be integers, got {agents!r}")
        if a.size and (a.min() < 0 or a.max() >= self._num_agents):
            bad = a[(a < 0) | (a >= self._num_agents)].flat[0]
            raise ProblemError(
                f"{prefix}agents must lie in [0, {self._num_agents}), got agent {int(bad)}"
            )
        try:
            shape = np.broadcast_shapes(a.shape, xx.shape[:-1])
        except ValueError:
            raise ProblemError(
                f"{prefix}agents of shape {a.shape} do not broadcast against "
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
        """A new family in which only ``agent``'s private data differs (seed 003, Def. 3)."""

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable description for provenance."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_agents={self._num_agents}, dim={self._dim})"


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
    """Private rendezvous: ``f_i(x) = ||x - a_i||^2`` (seed 003, Example 1).

    Agent i's private datum is its address ``a_i``; ``grad f_i(x) = 2 (x - a_i)``.
    The function class is ``{||a - x||^2 : a in X}``, so on a bounded ``X``
    containing the addresses: C1 = diam X, C2 = ``sup_{x,a in X} 2||x - a||`` =
    2 diam X (``4 sqrt 2`` for the box ``[-1, 1]^2`` of seed 003, Example 2), and
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
        return 2.0 * (x - self._addresses[a])

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


# --------------------------------------------------------------------------
# Numeric optimum
# --------------------------------------------------------------------------
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


# --------------------------------------------------------------------------
# Empirical check of declared constants
# --------------------------------------------------------------------------
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
