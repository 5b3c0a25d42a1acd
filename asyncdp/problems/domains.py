"""Feasible sets X with exact Euclidean projections.

Every algorithm implemented here keeps its iterates in a convex feasible set
by a Euclidean projection (Huang, Mitra and Vaidya, ICDCN 2015, Eq. 7;
Showkatbakhsh, Karakus and Diggavi, arXiv 2019, Eqs. 8-9), and the
constants of the privacy and accuracy analyses are suprema over that set
(Huang, Mitra and Vaidya, ICDCN 2015, Assumption 1 (i)-(ii)). This module provides:

* :class:`Box` -- an axis-aligned box ``[low, high]`` (projection = clip);
* :class:`Ball` -- a closed Euclidean ball (radial projection);
* :class:`Reals` -- the whole space ``R^n`` (projection = identity).

All methods are vectorized over leading axes: a point array has shape
``(..., dim)``.
"""

from __future__ import annotations

import abc
import math
from typing import Any
from collections.abc import Sequence

import numpy as np

from ..errors import ProblemError
from .coordinates import clamp_coordinates
from .finite import all_finite

__all__ = ["Domain", "Box", "Ball", "Reals", "domain_from_dict"]


def _fmt(a: Any) -> str:
    """Compact one-line rendering of a point, e.g. ``[0.5, -1, nan]``."""
    arr = np.asarray(a, dtype=float)
    if arr.ndim == 0:
        return f"{float(arr):.10g}"
    return "[" + ", ".join(_fmt(v) for v in arr) + "]"


def _check_dim(dim: Any, name: str = "dim") -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or int(dim) < 1:
        raise ProblemError(f"{name} must be a positive integer, got {dim!r}")
    return int(dim)


def _size_tuple(size: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        shape: tuple[int, ...] = (int(size),)
    else:
        try:
            shape = tuple(int(s) for s in size)  # type: ignore[union-attr]
        except TypeError:
            raise ProblemError(f"size must be an int or a tuple of ints, got {size!r}") from None
    if any(s < 0 for s in shape):
        raise ProblemError(f"size must be non-negative, got {size!r}")
    return shape


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


class Domain(abc.ABC):
    """A closed convex feasible set ``X`` in ``R^dim`` with its Euclidean projection.

    Subclasses implement ``_project``, ``_contains`` and the geometric
    quantities; the public methods validate shapes.

    Attributes:
        dim: the dimension ``n`` of the ambient space.
    """

    dim: int

    # ------------------------------------------------------------------ checks
    def _as_points(self, x: Any, *, finite: bool = True) -> np.ndarray:
        if type(x) is np.ndarray and x.dtype == np.float64 and x.ndim >= 1 and x.shape[-1] == self.dim:
            if not finite or all_finite(x):
                return x  # fast path: already a float array of the right shape
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ProblemError(f"x must be a numeric array, got {x!r} ({exc})") from None
        if arr.ndim == 0 or arr.shape[-1] != self.dim:
            raise ProblemError(
                f"x must have shape (..., {self.dim}) for {self!r}, got shape {arr.shape}"
            )
        if finite and not np.all(np.isfinite(arr)):
            bad = np.argwhere(~np.isfinite(arr))[0]
            raise ProblemError(
                f"x must be finite for projection onto {self!r}; x{list(map(int, bad))} = "
                f"{float(arr[tuple(bad)])!r}"
            )
        return arr

    # ------------------------------------------------------------- public API
    def project(self, x: Any) -> np.ndarray:
        """Euclidean projection ``argmin_{y in X} ||x - y||`` (Huang, Mitra and Vaidya, ICDCN 2015, Eq. 7).

        Args:
            x: points of shape ``(..., dim)``.

        Returns:
            A new float array of the same shape, each point projected.

        Raises:
            ProblemError: the last axis is not ``dim`` or ``x`` holds NaN/inf.

        Example:
            >>> Box(-1.0, 1.0, dim=2).project([2.0, 0.5])
            array([1. , 0.5])
        """
        if type(x) is np.ndarray and x.ndim == 1 and x.dtype == np.float64 and x.shape[0] == self.dim \
                and all_finite(x):
            return self._project(x)  # one finite point (the SimPy engine's call)
        return self._project(self._as_points(x))

    def contains(self, x: Any, tol: float = 1e-12) -> np.ndarray:
        """Whether each point lies in ``X`` up to a tolerance.

        The tolerance is relative to the size of the set: a point counts as
        inside when its distance to ``X`` is at most ``tol * max(1, scale)``,
        where ``scale`` is the largest absolute bound (box) or ``radius +
        ||center||`` (ball). This absorbs the rounding of :meth:`project`.

        Args:
            x: points of shape ``(..., dim)``.
            tol: non-negative relative tolerance.

        Returns:
            A boolean array of shape ``x.shape[:-1]`` (a numpy bool for one point).

        Raises:
            ProblemError: bad shape or negative ``tol``.

        Example:
            >>> bool(Ball([0.0, 0.0], 1.0).contains([0.6, 0.8]))
            True
        """
        if not (tol >= 0 and math.isfinite(tol)):
            raise ProblemError(f"tol must be a finite non-negative number, got {tol!r}")
        out = np.asarray(self._contains(self._as_points(x, finite=False), float(tol)))
        return out[()]

    def sample(self, rng: np.random.Generator, size: int | Sequence[int]) -> np.ndarray:
        """Draw points uniformly from ``X`` (used to check declared constants).

        Args:
            rng: a numpy ``Generator``.
            size: number of points or a shape of leading axes.

        Returns:
            An array of shape ``(*size, dim)``.

        Raises:
            ProblemError: the domain is unbounded, or ``size`` is invalid.

        Example:
            >>> Box(0.0, 1.0, dim=3).sample(np.random.default_rng(0), 5).shape
            (5, 3)
        """
        if not isinstance(rng, np.random.Generator):
            raise ProblemError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        return self._sample(rng, _size_tuple(size))

    def max_distance(self, points: Any) -> np.ndarray:
        """``sup_{x in X} ||x - p||`` for each point ``p`` (inf if unbounded).

        Args:
            points: array of shape ``(..., dim)``; need not lie in ``X``.

        Returns:
            Float array of shape ``points.shape[:-1]``.

        Example:
            >>> float(Box(-1.0, 1.0, dim=2).max_distance([0.0, 0.0]))
            1.4142135623730951
        """
        return np.asarray(self._max_distance(self._as_points(points)))[()]

    @property
    def bounded(self) -> bool:
        """Whether ``X`` is bounded (compact)."""
        return math.isfinite(self.diameter)

    # ----------------------------------------------------------- abstract API
    @property
    @abc.abstractmethod
    def diameter(self) -> float:
        """``sup_{x, y in X} ||x - y||``; inf if unbounded.

        The constant C1 of Huang, Mitra and Vaidya (ICDCN 2015), Assumption 1 (i).
        """

    @property
    @abc.abstractmethod
    def radius_bound(self) -> float:
        """``sup_{x in X} ||x||`` (enters M1 of Huang, Mitra and Vaidya, ICDCN 2015, Lemma 7); inf if unbounded."""

    @property
    @abc.abstractmethod
    def center(self) -> np.ndarray:
        """A canonical interior point (midpoint / center / origin), used as a start point."""

    @abc.abstractmethod
    def extreme_points(self, max_points: int = 1024) -> np.ndarray:
        """A few boundary points where suprema over ``X`` tend to be attained, shape (k, dim)."""

    @abc.abstractmethod
    def _project(self, x: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _contains(self, x: np.ndarray, tol: float) -> np.ndarray: ...

    @abc.abstractmethod
    def _sample(self, rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray: ...

    @abc.abstractmethod
    def _max_distance(self, p: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable description (``{"type": ..., ...}``) for provenance."""

    # -------------------------------------------------------------- equality
    def _key(self) -> tuple[Any, ...]:
        return (type(self).__name__, repr(self.to_dict()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Domain):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class Box(Domain):
    """The axis-aligned box ``{x : low <= x <= high}`` (Huang, Mitra and Vaidya, ICDCN 2015, Example 2: ``[-1, 1]^2``).

    Args:
        low: lower bounds, a scalar or an array of length ``dim``.
        high: upper bounds, a scalar or an array of length ``dim``.
        dim: the dimension; required when both bounds are scalars, otherwise
            it must agree with the bound arrays.

    Raises:
        ProblemError: non-finite bounds, ``low >= high`` in some coordinate,
            mismatched lengths or a missing/invalid ``dim``.

    Example:
        >>> box = Box(-1.0, 1.0, dim=2)
        >>> round(box.diameter, 6)
        2.828427
    """

    def __init__(self, low: Any, high: Any, dim: int | None = None) -> None:
        lo = np.asarray(low, dtype=float)
        hi = np.asarray(high, dtype=float)
        for name, arr in (("low", lo), ("high", hi)):
            if arr.ndim > 1:
                raise ProblemError(f"{name} must be a scalar or 1-D, got shape {arr.shape}")
        lengths = {a.shape[0] for a in (lo, hi) if a.ndim == 1}
        if len(lengths) > 1:
            raise ProblemError(
                f"low and high have different lengths: {lo.shape[0]} and {hi.shape[0]}"
            )
        if lengths:
            (n,) = lengths
            if dim is not None and _check_dim(dim) != n:
                raise ProblemError(f"dim={dim!r} disagrees with bounds of length {n}")
            dim = _check_dim(n, "len(low)")
        elif dim is None:
            raise ProblemError("dim must be given when low and high are scalars, got dim=None")
        self.dim = _check_dim(dim)
        lo = np.broadcast_to(lo, (self.dim,))
        hi = np.broadcast_to(hi, (self.dim,))
        for name, arr in (("low", lo), ("high", hi)):
            if not np.all(np.isfinite(arr)):
                raise ProblemError(f"{name} must be finite, got {_fmt(arr)}")
        if np.any(lo >= hi):
            k = int(np.flatnonzero(lo >= hi)[0])
            raise ProblemError(
                f"low must be < high in every coordinate; coordinate {k}: "
                f"low={float(lo[k])!r}, high={float(hi[k])!r}"
            )
        self._low = _readonly(lo)
        self._high = _readonly(hi)
        self._scale = max(1.0, float(np.max(np.maximum(np.abs(lo), np.abs(hi)))))

    @property
    def low(self) -> np.ndarray:
        """Lower bounds, shape ``(dim,)`` (read-only)."""
        return self._low

    @property
    def high(self) -> np.ndarray:
        """Upper bounds, shape ``(dim,)`` (read-only)."""
        return self._high

    @property
    def diameter(self) -> float:
        return float(np.linalg.norm(self._high - self._low))

    @property
    def radius_bound(self) -> float:
        return float(np.linalg.norm(np.maximum(np.abs(self._low), np.abs(self._high))))

    @property
    def center(self) -> np.ndarray:
        return (self._low + self._high) / 2.0

    def extreme_points(self, max_points: int = 1024) -> np.ndarray:
        """The ``2^dim`` vertices, or ``max_points`` vertices chosen deterministically."""
        if self.dim <= 20 and 2**self.dim <= max_points:
            bits = (np.arange(2**self.dim)[:, None] >> np.arange(self.dim)) & 1
        else:
            bits = np.random.default_rng(0).integers(0, 2, size=(max_points, self.dim))
        return np.where(bits == 1, self._high, self._low)

    def _project(self, x: np.ndarray) -> np.ndarray:
        return clamp_coordinates(x, self._low, self._high)  # = np.clip, without its call overhead

    def _contains(self, x: np.ndarray, tol: float) -> np.ndarray:
        slack = tol * self._scale
        return np.all((x >= self._low - slack) & (x <= self._high + slack), axis=-1)

    def _sample(self, rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
        return rng.uniform(self._low, self._high, size=size + (self.dim,))

    def _max_distance(self, p: np.ndarray) -> np.ndarray:
        far = np.maximum(np.abs(p - self._low), np.abs(p - self._high))
        return np.linalg.norm(far, axis=-1)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "Box", "low": self._low.tolist(), "high": self._high.tolist()}

    def __repr__(self) -> str:
        if np.all(self._low == self._low[0]) and np.all(self._high == self._high[0]):
            return f"Box({float(self._low[0])!r}, {float(self._high[0])!r}, dim={self.dim})"
        return f"Box({self._low.tolist()!r}, {self._high.tolist()!r})"


class Ball(Domain):
    """The closed Euclidean ball ``{x : ||x - center|| <= radius}``.

    Args:
        center: the center, an array of length ``dim`` (or a scalar with ``dim``).
        radius: a finite positive radius.
        dim: optional; required only when ``center`` is a scalar.

    Raises:
        ProblemError: non-finite center, ``radius <= 0`` or non-finite, bad ``dim``.

    Example:
        >>> Ball([0.0, 0.0], 1.0).project([3.0, 4.0])
        array([0.6, 0.8])
    """

    def __init__(self, center: Any, radius: float, dim: int | None = None) -> None:
        c = np.asarray(center, dtype=float)
        if c.ndim == 0:
            if dim is None:
                raise ProblemError("dim must be given when center is a scalar, got dim=None")
            c = np.full(_check_dim(dim), float(c))
        elif c.ndim != 1:
            raise ProblemError(f"center must be 1-D, got shape {c.shape}")
        elif dim is not None and _check_dim(dim) != c.shape[0]:
            raise ProblemError(f"dim={dim!r} disagrees with center of length {c.shape[0]}")
        self.dim = _check_dim(c.shape[0], "len(center)")
        if not np.all(np.isfinite(c)):
            raise ProblemError(f"center must be finite, got {_fmt(c)}")
        try:
            r = float(radius)
        except (TypeError, ValueError):
            raise ProblemError(f"radius must be a number, got {radius!r}") from None
        if not (math.isfinite(r) and r > 0):
            raise ProblemError(f"radius must be finite and > 0, got {radius!r}")
        self._center = _readonly(c)
        self.radius = r
        self._scale = max(1.0, r + float(np.linalg.norm(c)))

    @property
    def center(self) -> np.ndarray:
        return self._center

    @property
    def diameter(self) -> float:
        return 2.0 * self.radius

    @property
    def radius_bound(self) -> float:
        return float(np.linalg.norm(self._center)) + self.radius

    def extreme_points(self, max_points: int = 1024) -> np.ndarray:
        """``center +- radius * e_k`` for each axis ``k`` (at most ``max_points``)."""
        eye = np.eye(self.dim) * self.radius
        pts = np.concatenate([self._center + eye, self._center - eye])
        return pts[:max_points]

    def _project(self, x: np.ndarray) -> np.ndarray:
        d = x - self._center
        norm = np.linalg.norm(d, axis=-1, keepdims=True)
        scale = np.where(norm > self.radius, self.radius / np.where(norm > 0, norm, 1.0), 1.0)
        return self._center + d * scale

    def _contains(self, x: np.ndarray, tol: float) -> np.ndarray:
        return np.linalg.norm(x - self._center, axis=-1) <= self.radius + tol * self._scale

    def _sample(self, rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
        g = rng.standard_normal(size + (self.dim,))
        norm = np.linalg.norm(g, axis=-1, keepdims=True)
        norm = np.where(norm > 0, norm, 1.0)
        r = self.radius * rng.uniform(size=size + (1,)) ** (1.0 / self.dim)
        return self._center + g / norm * r

    def _max_distance(self, p: np.ndarray) -> np.ndarray:
        return np.linalg.norm(p - self._center, axis=-1) + self.radius

    def to_dict(self) -> dict[str, Any]:
        return {"type": "Ball", "center": self._center.tolist(), "radius": self.radius}

    def __repr__(self) -> str:
        return f"Ball({self._center.tolist()!r}, {self.radius!r})"


class Reals(Domain):
    """The unconstrained space ``R^dim``; projection is the identity.

    The setting of Wang and Başar (Automatica 2023), which is unconstrained.

    It is unbounded: ``diameter`` and ``radius_bound`` are ``inf`` and
    ``sample`` raises :class:`ProblemError`.

    Example:
        >>> Reals(2).project([5.0, -7.0])
        array([ 5., -7.])
    """

    def __init__(self, dim: int) -> None:
        self.dim = _check_dim(dim)

    @property
    def diameter(self) -> float:
        return math.inf

    @property
    def radius_bound(self) -> float:
        return math.inf

    @property
    def center(self) -> np.ndarray:
        return np.zeros(self.dim)

    def extreme_points(self, max_points: int = 1024) -> np.ndarray:
        raise ProblemError(f"{self!r} is unbounded and has no extreme points")

    def _project(self, x: np.ndarray) -> np.ndarray:
        return np.array(x, dtype=float, copy=True)

    def _contains(self, x: np.ndarray, tol: float) -> np.ndarray:
        return np.all(np.isfinite(x), axis=-1)

    def _sample(self, rng: np.random.Generator, size: tuple[int, ...]) -> np.ndarray:
        raise ProblemError(f"cannot sample uniformly from the unbounded domain {self!r}")

    def _max_distance(self, p: np.ndarray) -> np.ndarray:
        return np.full(p.shape[:-1], math.inf)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "Reals", "dim": self.dim}

    def __repr__(self) -> str:
        return f"Reals({self.dim})"


def domain_from_dict(data: dict[str, Any]) -> Domain:
    """Rebuild a domain from :meth:`Domain.to_dict` output.

    Raises:
        ProblemError: unknown ``type`` or missing keys.

    Example:
        >>> domain_from_dict(Box(-1.0, 1.0, dim=2).to_dict()) == Box(-1.0, 1.0, dim=2)
        True
    """
    try:
        kind = data["type"]
        if kind == "Box":
            return Box(data["low"], data["high"])
        if kind == "Ball":
            return Ball(data["center"], data["radius"])
        if kind == "Reals":
            return Reals(data["dim"])
    except (KeyError, TypeError) as exc:
        raise ProblemError(f"malformed domain description {data!r}: missing {exc}") from None
    raise ProblemError(f"unknown domain type {kind!r}; expected 'Box', 'Ball' or 'Reals'")
