"""The accountant's record of one paper: :class:`AccountantSpec`, and the error for a part it lacks.

A paper module of :mod:`accounting.papers` ends with one ``SPEC``: the
algorithm names it accounts for, the noise mechanism and norm of its
sensitivity, and its functions (state and release sensitivity, the paper's
claim, the recomputed epsilon, the paper's noise schedule). A part the paper
does not provide is ``None``; :meth:`AccountantSpec.supports` answers whether
it is there and :meth:`AccountantSpec.require` returns it or raises
:class:`NotSupportedError` naming the paper and the part (as accountants in
``dp_accounting`` answer ``supports(event)``).

Example:
    >>> spec = AccountantSpec(names=("toy",), paper="toy paper", mechanism="laplace", norm="l1",
    ...                       sensitivity=lambda t: 1.0)
    >>> spec.supports("sensitivity"), spec.supports("claim")
    (True, False)
    >>> spec.require("claim")
    Traceback (most recent call last):
    ...
    accounting.papers.spec.NotSupportedError: claim is not supported for this algorithm (toy paper: toy)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import AccountingError

__all__ = ["PARTS", "MECHANISMS", "NORMS", "AccountantSpec", "NotSupportedError"]

PARTS = ("sensitivity", "release_sensitivity", "claim", "effective_epsilon", "noise_scale")
"""The functions an :class:`AccountantSpec` may provide."""
MECHANISMS = ("laplace", "gaussian")
"""Noise mechanisms a paper may use."""
NORMS = ("l1", "l2")
"""The norm of a paper's sensitivity bound (Laplace needs L1, Gaussian L2)."""


class NotSupportedError(AccountingError, LookupError):
    """A paper's accountant lacks the requested part (the message names the paper, its algorithms and the part)."""


@dataclass(frozen=True)
class AccountantSpec:
    """What the independent accountant knows about one paper.

    Attributes:
        names: the algorithm names (the simulator's registry names) this record accounts for.
        paper: the citation, e.g. ``"Huang, Mitra and Vaidya (ICDCN 2015)"``.
        mechanism: ``"laplace"`` or ``"gaussian"`` (see :data:`MECHANISMS`).
        norm: ``"l1"`` or ``"l2"``: the norm of :attr:`sensitivity` (see :data:`NORMS`).
        sensitivity: the bound on the masked state, from function-class constants.
        release_sensitivity: the bound on one release (the state it masks, with the paper's indexing).
        claim: builds the paper's :class:`~accounting.claims.Claim`.
        effective_epsilon: recomputes the privacy loss from plain numbers.
        noise_scale: the paper's noise schedule (the scale its claim assumes), if it prints one.

    Raises:
        NotSupportedError: never at construction; see :meth:`require`.
        AccountingError: no name, or an unknown mechanism or norm.
    """

    names: tuple[str, ...]
    paper: str
    mechanism: str
    norm: str
    sensitivity: Callable[..., float] | None = None
    release_sensitivity: Callable[..., float] | None = None
    claim: Callable[..., Any] | None = None
    effective_epsilon: Callable[..., float] | None = None
    noise_scale: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.names, str) or not self.names or not all(isinstance(n, str) and n for n in self.names):
            raise AccountingError(f"names must be a non-empty tuple of algorithm names, got {self.names!r}")
        if self.mechanism not in MECHANISMS:
            raise AccountingError(f"mechanism must be one of {MECHANISMS}, got {self.mechanism!r}")
        if self.norm not in NORMS:
            raise AccountingError(f"norm must be one of {NORMS}, got {self.norm!r}")

    def supports(self, part: str) -> bool:
        """Whether this paper's accountant provides ``part`` (one of :data:`PARTS`).

        Raises:
            AccountingError: ``part`` is not one of :data:`PARTS`.
        """
        if part not in PARTS:
            raise AccountingError(f"part must be one of {PARTS}, got {part!r}")
        return getattr(self, part) is not None

    def require(self, part: str) -> Callable[..., Any]:
        """The function ``part``, or an error saying this paper does not provide it.

        Raises:
            NotSupportedError: the part is ``None`` for this paper.
            AccountingError: ``part`` is not one of :data:`PARTS`.
        """
        if not self.supports(part):
            raise NotSupportedError(
                f"{part} is not supported for this algorithm ({self.paper}: {', '.join(self.names)})"
            )
        return getattr(self, part)
