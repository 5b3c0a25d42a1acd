"""Public names of ``accounting`` (read by ``lazy_loader.attach_stub`` and by type checkers)."""

# "name as name": an explicit re-export for type checkers (PEP 484); lazy_loader reads the names

from . import (
    auditing as auditing,
    auditors as auditors,
    claims as claims,
    composition as composition,
    mechanisms as mechanisms,
    papers as papers,
    prober as prober,
    replay as replay,
)
from .auditors import (
    blackbox_audit as blackbox_audit,
    plrv_audit as plrv_audit,
)
from .auditing import (
    SampleAuditReport as SampleAuditReport,
    audit_mechanism as audit_mechanism,
    audit_samples as audit_samples,
)
from .claims import (
    Claim as Claim,
    Verdict as Verdict,
    verify as verify,
)
from .composition import (
    compose as compose,
)
from .errors import (
    AccountingError as AccountingError,
    AdjacencyError as AdjacencyError,
    LedgerFormatError as LedgerFormatError,
    PrivacyParameterError as PrivacyParameterError,
    UnknownMechanismError as UnknownMechanismError,
)
from .ledger import (
    MECHANISMS as MECHANISMS,
    Ledger as Ledger,
    Release as Release,
)
from .papers import (
    ACCOUNTANTS as ACCOUNTANTS,
    AccountantSpec as AccountantSpec,
    NotSupportedError as NotSupportedError,
    get_accountant as get_accountant,
)
from .replay import (
    ReplayRule as ReplayRule,
    ReplaySetup as ReplaySetup,
    replay_loss as replay_loss,
    sample_transcripts as sample_transcripts,
)
