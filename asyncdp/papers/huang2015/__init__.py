"""Huang, Mitra and Vaidya (ICDCN 2015): differentially private iterative synchronous consensus optimization.

:mod:`.rule` is the algorithm (:class:`~.rule.Huang2015`), :mod:`.privacy`
its lemma as the privacy check reads it (Lemma 4 per release, Theorem 5's
claim, the adjacency class of Lemma 4), :mod:`.reproduce` the reproduction of
Fig. 1. The accountant's half is :mod:`accounting.papers.huang2015`.
"""

from __future__ import annotations

from accounting.papers import huang2015 as _accountant

from ..record import Paper, Reproduction
from . import privacy as _privacy
from .rule import Huang2015

__all__ = ["PAPER", "Huang2015"]

_REPRO = "asyncdp.papers.huang2015.reproduce.fig1"

PAPER = Paper(
    name="huang2015",
    rules=(Huang2015,),
    lemma=_privacy.sensitivity,
    reference=_accountant.SPEC.paper + ", Lemma 4",
    adjacency=_privacy.gradient_class,
    claim_check=_privacy.theorem_verdict,
    assumptions=_accountant.ASSUMPTIONS,
    reproductions=(Reproduction("huang2015-fig1", f"{_REPRO}:reproduce_fig1", f"{_REPRO}:format_fig1_table"),),
    claimed_scale=_privacy.claimed_scale,
    accountant=_accountant.SPEC,
)
"""The paper record of Huang, Mitra and Vaidya (ICDCN 2015)."""
