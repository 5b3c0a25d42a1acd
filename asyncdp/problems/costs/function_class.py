"""Constants of a function class: :class:`FunctionClass`.

The constants C1..C4 of Huang, Mitra and Vaidya (ICDCN 2015, Assumption 1) --
diameter, gradient bound, strong convexity, Hessian bound -- plus the
smoothness L (Showkatbakhsh, Karakus and Diggavi, arXiv 2019, A2-A4), with their aliases (``C2``/``G``, ``C3``/``mu``,
``L``) and the comparison of declared against derived constants.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ...errors import ConstantViolationError, ProblemError

__all__ = ["FunctionClass"]

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


@dataclass(frozen=True)
class FunctionClass:
    """Constants of a cost family ``F`` on a domain ``X`` (Huang, Mitra and Vaidya, ICDCN 2015, Assumption 1).

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
        """Alias of :attr:`gradient_bound` (Showkatbakhsh, Karakus and Diggavi, arXiv 2019, A2)."""
        return self.gradient_bound

    @property
    def C3(self) -> float | None:
        """Alias of :attr:`strong_convexity`."""
        return self.strong_convexity

    @property
    def mu(self) -> float | None:
        """Alias of :attr:`strong_convexity` (Showkatbakhsh, Karakus and Diggavi, arXiv 2019, A4)."""
        return self.strong_convexity

    @property
    def C4(self) -> float | None:
        """Alias of :attr:`hessian_bound`."""
        return self.hessian_bound

    @property
    def L(self) -> float | None:
        """Alias of :attr:`smoothness` (Showkatbakhsh, Karakus and Diggavi, arXiv 2019, A3)."""
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
