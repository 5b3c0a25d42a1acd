"""Papers: the public paper record and its registry; one folder per paper.

A published algorithm and a user's own are the same kind of thing, a
:class:`Paper` (:mod:`.record`): its rules, its sensitivity lemma, its
adjacency class, its claim check, its topology assumptions and its
reproductions. Papers are discovered, never listed (:mod:`.registry`): every
folder here that defines ``PAPER``, every package's entry point in the group
``asyncdp.papers``, and every :func:`register` call of a script.

The library's papers, one folder each (rule, privacy lemma, reproductions):
:mod:`.huang2015`, :mod:`.showkatbakhsh`, :mod:`.wang_basar`, :mod:`.dpsda`.
Each paper's accountant half (its lemmas as plain functions of numbers, its
claim, its topology assumption set) is :mod:`accounting.papers`.

Example:
    >>> sorted(papers())[:2]
    ['dpsda', 'huang2015']
    >>> get_paper("showkatbakhsh").assumption_set().name
    'showkatbakhsh'
"""

from __future__ import annotations

from .record import (OPTIONAL_PARTS, AdjacencyClass, GradientClass, Paper, PaperError, Reproduction, RoundClass,
                     ValueClass, is_paper, require_out_neighbours)
from .registry import (ENTRY_POINT_GROUP, REGISTRY, Registered, assumption_set, failed_entry_points, find_paper, find_registered,
                       get_algorithm, get_paper, paper_of, papers, register, registered, rules, unregister)

__all__ = ["Paper", "PaperError", "GradientClass", "RoundClass", "ValueClass", "AdjacencyClass", "Reproduction", "is_paper",
           "OPTIONAL_PARTS", "require_out_neighbours", "REGISTRY", "ENTRY_POINT_GROUP", "Registered", "register", "papers",
           "registered", "get_paper", "find_paper", "find_registered", "paper_of", "rules", "get_algorithm",
           "assumption_set", "failed_entry_points", "unregister"]
