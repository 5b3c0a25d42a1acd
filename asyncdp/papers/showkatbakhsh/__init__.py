"""Showkatbakhsh, Karakus and Diggavi (arXiv 2019): privacy-utility trade-off of linear regression under DP.

:mod:`.rule` is the algorithm (:class:`~.rule.Showkatbakhsh`), :mod:`.privacy`
its Gaussian sensitivity per release, Prop. 3's claim and adjacency class,
:mod:`.reproduce` the reproductions of Figs. 1-4. The accountant's half is
:mod:`accounting.papers.showkatbakhsh`.
"""

from __future__ import annotations

from accounting.papers import showkatbakhsh as _accountant

from ..record import Paper, Reproduction
from . import privacy as _privacy
from .rule import Showkatbakhsh

__all__ = ["PAPER", "Showkatbakhsh"]

_FIGURES = tuple(Reproduction(f"showkatbakhsh-fig{k}", f"asyncdp.papers.showkatbakhsh.reproduce.fig{k}:reproduce_fig{k}",
                              f"asyncdp.papers.showkatbakhsh.reproduce.fig{k}:format_table") for k in (1, 2, 3, 4))

PAPER = Paper(
    name="showkatbakhsh",
    rules=(Showkatbakhsh,),
    lemma=_privacy.sensitivity,
    reference=_accountant.SPEC.paper + ", Prop. 3",
    adjacency=_privacy.gradient_class,
    claim_check=_privacy.theorem_verdict,
    assumptions=_accountant.ASSUMPTIONS,
    reproductions=_FIGURES,
    claimed_scale=_privacy.claimed_scale,
    accountant=_accountant.SPEC,
)
"""The paper record of Showkatbakhsh, Karakus and Diggavi (arXiv 2019)."""
