"""Independent privacy accounting: ledgers, mechanisms, composition and audits.

``accounting`` reaches its verdicts from plain data (the ledger, transcripts,
function-class constants); it never imports ``asyncdp``.
"""

from .errors import (
    AccountingError,
    AdjacencyError,
    LedgerFormatError,
    PrivacyParameterError,
    UnknownMechanismError,
)
from .ledger import MECHANISMS, Ledger, Release

__all__ = [
    "AccountingError",
    "AdjacencyError",
    "LedgerFormatError",
    "PrivacyParameterError",
    "UnknownMechanismError",
    "MECHANISMS",
    "Ledger",
    "Release",
]
