"""Cheng, Liao and Li (arXiv 2022): DPSDA-C and DPSDA-PS, differentially private online distributed optimization.

One paper, two rules (:mod:`.rule`: :class:`~.rule.DPSDAC`, :class:`~.rule.DPSDAPS`);
:mod:`.privacy` their shared per-release sensitivity, the claim of Theorems 2
and 4 and the round adjacency of Def. 1 (the worst-case search's class);
:mod:`.reproduce` the online linear regression, classification and DP-check
reproductions. The accountant's half, with one topology
assumption set per rule, is :mod:`accounting.papers.dpsda`.
"""

from __future__ import annotations

from accounting.papers import dpsda as _accountant

from ..record import Paper, Reproduction
from . import privacy as _privacy
from .rule import DPSDAC, DPSDAPS

__all__ = ["PAPER", "DPSDAC", "DPSDAPS"]

_R = "asyncdp.papers.dpsda.reproduce"

PAPER = Paper(
    name="dpsda",
    rules=(DPSDAC, DPSDAPS),
    lemma=_privacy.sensitivity,
    reference=_accountant.SPEC.paper + ", Lemmas 1 and 4",
    adjacency=_privacy.round_class,
    claim_check=_privacy.theorem_verdict,
    assumptions=_accountant.ASSUMPTIONS,
    reproductions=(
        Reproduction("dpsda-olr", f"{_R}.olr:reproduce_olr", f"{_R}.olr:format_olr_table"),
        Reproduction("dpsda-classification", f"{_R}.classification:reproduce_classification",
                     f"{_R}.classification:format_classification_table"),
        Reproduction("dpsda-dp-check", f"{_R}.dp_check:reproduce_dp_check", f"{_R}.dp_check:format_dp_check_table"),
    ),
    claimed_scale=_privacy.claimed_scale,
    accountant=_accountant.SPEC,
)
"""The paper record of Cheng, Liao and Li (arXiv 2022)."""
