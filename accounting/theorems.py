"""Old path of the claims and verifier; the generic part is :mod:`accounting.claims`, each paper's in :mod:`accounting.papers`.

:class:`Claim`, :class:`Verdict`, :func:`verify` and :data:`LEVELS` moved to
:mod:`accounting.claims`; each paper's claim, noise schedule and recomputed
epsilon moved to its module in :mod:`accounting.papers`. This module is kept
so that ``from accounting.theorems import ...`` (and pickled claims and
verdicts) keep working: one old module maps to five new ones, which the
``_moved`` finder cannot express.

Example:
    >>> from accounting.theorems import Claim, huang2015_claim
    >>> Claim.__module__, huang2015_claim.__module__
    ('accounting.claims', 'accounting.papers.huang2015')
"""

from __future__ import annotations

from .claims import LEVELS, Claim, Verdict, verify
from .papers.dpsda import dpsda_claim, dpsda_effective_epsilon
from .papers.huang2015 import (
    HUANG2015_SCHEDULES,
    huang2015_claim,
    huang2015_effective_epsilon,
    huang2015_effective_epsilon_from_ledger,
    huang2015_noise_scale,
)
from .papers.showkatbakhsh import (
    showkatbakhsh_alpha,
    showkatbakhsh_claim,
    showkatbakhsh_effective_epsilon,
    showkatbakhsh_kappa,
    showkatbakhsh_noise_scales,
)
from .papers.wang_basar import wang_basar_claim, wang_basar_effective_epsilon, wang_basar_variance_threshold

__all__ = [
    "LEVELS",
    "Claim",
    "Verdict",
    "verify",
    "HUANG2015_SCHEDULES",
    "huang2015_claim",
    "huang2015_noise_scale",
    "huang2015_effective_epsilon",
    "huang2015_effective_epsilon_from_ledger",
    "showkatbakhsh_kappa",
    "showkatbakhsh_noise_scales",
    "showkatbakhsh_claim",
    "showkatbakhsh_alpha",
    "showkatbakhsh_effective_epsilon",
    "wang_basar_variance_threshold",
    "wang_basar_claim",
    "wang_basar_effective_epsilon",
    "dpsda_claim",
    "dpsda_effective_epsilon",
]
