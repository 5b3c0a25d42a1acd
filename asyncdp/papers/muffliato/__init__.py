"""Muffliato (Cyffers, Even, Bellet and Massoulié, NeurIPS 2022): gossip averaging with local Gaussian noise.

:mod:`.rule` is the per-agent rule (plain and Chebyshev-accelerated gossip),
:mod:`.privacy` its lemma, local claim and pairwise network DP claim,
:mod:`.reproduce` the figure of privacy loss against shortest-path length.
The accountant's half is :mod:`accounting.papers.muffliato`.
"""

from __future__ import annotations

from accounting.papers import muffliato as _accountant

from ..record import Paper, Reproduction
from . import privacy as _privacy
from .rule import Muffliato

__all__ = ["PAPER", "Muffliato"]

_REPRO = "asyncdp.papers.muffliato.reproduce.fig1a"

PAPER = Paper(
    name="muffliato",
    rules=(Muffliato,),
    lemma=_privacy.sensitivity,
    adjacency=_privacy.value_class,
    reference=_accountant.SPEC.paper + ", Section 3 (local Gaussian noise, then gossip)",
    claim_check=_privacy.theorem_verdict,
    assumptions=_accountant.ASSUMPTIONS,
    reproductions=(Reproduction("muffliato-fig1a", "asyncdp.reproduce.muffliato_fig1a:reproduce_fig1a",
                                f"{_REPRO}:format_fig1a_table"),),
    accountant=_accountant.SPEC,
)
"""The paper record of Cyffers, Even, Bellet and Massoulié (NeurIPS 2022)."""
