"""Old path of the sensitivity bounds; they now live with their paper in :mod:`accounting.papers`.

The content of this module moved, one paper per module:
:mod:`accounting.papers.huang2015` (Huang, Mitra and Vaidya, ICDCN 2015),
:mod:`accounting.papers.showkatbakhsh` (Showkatbakhsh, Karakus and Diggavi, arXiv 2019),
:mod:`accounting.papers.wang_basar` (Wang and Başar, Automatica 2023) and
:mod:`accounting.papers.dpsda` (Cheng, Liao and Li, arXiv 2022). It is kept so that
``from accounting.sensitivity import ...`` keeps working: one old module maps
to four new ones, which the ``_moved`` finder cannot express.

Example:
    >>> from accounting.sensitivity import huang2015_sensitivity
    >>> huang2015_sensitivity.__module__
    'accounting.papers.huang2015'
"""

from __future__ import annotations

from .papers.dpsda import DPSDA_CLIPS, dpsda_network_sensitivity, dpsda_node_sensitivity
from .papers.huang2015 import huang2015_release_sensitivity, huang2015_sensitivity
from .papers.showkatbakhsh import showkatbakhsh_release_sensitivity, showkatbakhsh_sensitivity
from .papers.wang_basar import WANG_BASAR_KINDS, wang_basar_sensitivity

__all__ = [
    "huang2015_sensitivity",
    "huang2015_release_sensitivity",
    "showkatbakhsh_sensitivity",
    "showkatbakhsh_release_sensitivity",
    "WANG_BASAR_KINDS",
    "wang_basar_sensitivity",
    "DPSDA_CLIPS",
    "dpsda_node_sensitivity",
    "dpsda_network_sensitivity",
]
