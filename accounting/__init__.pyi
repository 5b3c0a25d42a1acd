"""Public names of ``accounting`` (read by ``lazy_loader.attach_stub`` and by type checkers)."""

from . import auditors, claims, composition, mechanisms, papers, prober, replay, sensitivity, theorems
from .auditors import blackbox_audit, plrv_audit
from .claims import Claim, Verdict, verify
from .composition import compose
from .errors import (
    AccountingError,
    AdjacencyError,
    LedgerFormatError,
    PrivacyParameterError,
    UnknownMechanismError,
)
from .ledger import MECHANISMS, Ledger, Release
from .papers import ACCOUNTANTS, AccountantSpec, NotSupportedError, get_accountant
from .replay import ReplayRule, ReplaySetup, replay_loss, sample_transcripts
