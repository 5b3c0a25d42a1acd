"""Exception hierarchy of the ``accounting`` package.

Every error is an :class:`AccountingError` (a ``ValueError``) whose message
names the offending parameter, value, agent or round.
"""

from __future__ import annotations


class AccountingError(ValueError):
    """Base class of every input error raised by :mod:`accounting`."""


class PrivacyParameterError(AccountingError):
    """An invalid privacy parameter: epsilon <= 0, delta outside (0, 1), a scale <= 0 ..."""


class UnknownMechanismError(AccountingError):
    """A release names a noise mechanism the accountant does not know."""


class LedgerFormatError(AccountingError):
    """A ledger file or table is malformed (missing column, wrong type)."""


class AdjacencyError(AccountingError):
    """Two problems said to be adjacent are not (they differ in more than one agent or round)."""


class UnknownMethodError(AccountingError):
    """A composition method name the accountant does not know (see :mod:`accounting.composition`)."""
