"""Wang and Başar (Automatica 2023): quantization-free private consensus for nonconvex optimization (PDOP).

:mod:`.rule` is the algorithm (:class:`~.rule.WangBasar`), :mod:`.privacy`
its per-iteration sensitivity and Theorem 4's claim, :mod:`.reproduce` the
reproductions of Table 1 and the saddle and ICA experiments. The accountant's
half is :mod:`accounting.papers.wang_basar`.
"""

from __future__ import annotations

from accounting.papers import wang_basar as _accountant

from ..record import Paper, Reproduction
from . import privacy as _privacy
from .rule import WangBasar

__all__ = ["PAPER", "WangBasar"]

_R = "asyncdp.papers.wang_basar.reproduce"

PAPER = Paper(
    name="wang-basar",
    rules=(WangBasar,),
    lemma=_privacy.sensitivity,
    reference=_accountant.SPEC.paper + ", Theorems 4-6",
    adjacency=_privacy.gradient_class,
    claim_check=_privacy.theorem_verdict,
    assumptions=_accountant.ASSUMPTIONS,
    reproductions=(
        Reproduction("wang-basar-table1", f"{_R}.table1:reproduce_table1", f"{_R}.table1:format_table1_table"),
        Reproduction("wang-basar-saddle", f"{_R}.saddle:reproduce_saddle", f"{_R}.saddle:format_saddle_table"),
        Reproduction("wang-basar-ica", f"{_R}.ica:reproduce_ica", f"{_R}.ica:format_ica_table"),
    ),
    claimed_scale=_privacy.claimed_scale,
    accountant=_accountant.SPEC,
    relation=_privacy.gradient_relation,
)
"""The paper record of Wang and Başar (Automatica 2023)."""
