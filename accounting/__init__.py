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
from . import auditors, composition, mechanisms, prober, replay, sensitivity, theorems
from .auditors import blackbox_audit, plrv_audit
from .composition import compose
from .ledger import MECHANISMS, Ledger, Release
from .replay import ReplayRule, ReplaySetup, replay_loss, sample_transcripts

__all__ = [
    "auditors",
    "composition",
    "mechanisms",
    "prober",
    "replay",
    "sensitivity",
    "theorems",
    "blackbox_audit",
    "plrv_audit",
    "compose",
    "ReplayRule",
    "ReplaySetup",
    "replay_loss",
    "sample_transcripts",
    "AccountingError",
    "AdjacencyError",
    "LedgerFormatError",
    "PrivacyParameterError",
    "UnknownMechanismError",
    "MECHANISMS",
    "Ledger",
    "Release",
]
