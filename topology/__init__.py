"""Graphs over time, weight rules, property checks and theorem-assumption audits.

``topology`` depends only on numpy, scipy and networkx; it never imports
``asyncdp`` or ``accounting``.
"""

from .errors import (
    EmptySequenceError,
    InvalidMatrixError,
    NodeCountMismatchError,
    ParameterError,
    RoundIndexError,
    TopologyError,
    TopologyFormatError,
    UnknownAlgorithmError,
)
from .matrices import as_pattern, as_weight_matrix, pattern_from_networkx, to_networkx
from .sequence import GraphSequence, from_matrices, from_networkx, generated, periodic, static
from .weights import (
    WEIGHT_RULES,
    column_stochastic,
    get_rule,
    lazy_max_degree,
    laplacian,
    laplacian_step,
    metropolis,
    row_stochastic,
)

__all__ = [
    "EmptySequenceError",
    "InvalidMatrixError",
    "NodeCountMismatchError",
    "ParameterError",
    "RoundIndexError",
    "TopologyError",
    "TopologyFormatError",
    "UnknownAlgorithmError",
    "as_pattern",
    "as_weight_matrix",
    "pattern_from_networkx",
    "to_networkx",
    "GraphSequence",
    "from_matrices",
    "from_networkx",
    "generated",
    "periodic",
    "static",
    "WEIGHT_RULES",
    "column_stochastic",
    "get_rule",
    "lazy_max_degree",
    "laplacian",
    "laplacian_step",
    "metropolis",
    "row_stochastic",
]
