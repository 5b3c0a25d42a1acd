"""Independent privacy accounting: ledgers, mechanisms, composition and audits.

``accounting`` reaches its verdicts from plain data (the ledger, transcripts,
function-class constants); it never imports ``asyncdp``.

The public names are imported on first access (PEP 562, via
``lazy_loader``), so ``import accounting`` stays cheap: scipy.stats, pandas
and dp_accounting load only when a name that needs them is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:
    from . import auditors, composition, mechanisms, prober, replay, sensitivity, theorems
    from .auditors import blackbox_audit, plrv_audit
    from .composition import compose
    from .errors import (
        AccountingError,
        AdjacencyError,
        LedgerFormatError,
        PrivacyParameterError,
        UnknownMechanismError,
    )
    from .ledger import MECHANISMS, Ledger, Release
    from .replay import ReplayRule, ReplaySetup, replay_loss, sample_transcripts


_EXPORTS: dict[str, tuple[str, ...]] = {
    "auditors": ("blackbox_audit", "plrv_audit"),
    "composition": ("compose",),
    "errors": (
        "AccountingError",
        "AdjacencyError",
        "LedgerFormatError",
        "PrivacyParameterError",
        "UnknownMechanismError",
    ),
    "ledger": ("MECHANISMS", "Ledger", "Release"),
    "replay": ("ReplayRule", "ReplaySetup", "replay_loss", "sample_transcripts"),
}
"""Submodule -> the public names it defines (the rest of ``__all__`` are submodules)."""

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=["auditors", "composition", "mechanisms", "prober", "replay", "sensitivity", "theorems"],
    submod_attrs=_EXPORTS,
)
