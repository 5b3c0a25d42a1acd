"""Graphs over time, weight rules, property checks and theorem-assumption audits.

``topology`` depends only on numpy, scipy and networkx (and ``lazy_loader``);
it never imports ``asyncdp`` or ``accounting``.

The public names are imported on first access (PEP 562, via
``lazy_loader``), so ``import topology`` stays cheap. ``topology.audit`` is
the function :func:`audit`, also after the submodule of the same name has
been imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:
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
    from .audit import ALGORITHMS, AssumptionResult, AuditReport, audit
    from .b_connected import b_connected_sequence, paper004_fig2_sequence
    from .constants import (
        ContractionResult,
        dpsda_c_theta,
        empirical_contraction,
        nedic_ozdaglar,
        push_sum_gamma,
        push_sum_lambda,
        push_sum_one_minus_lambda,
    )
    from .io import load_sequence, loads_sequence, save_sequence, sequence_to_dict
    from .properties import (
        CheckResult,
        SequenceCheck,
        check_b_strongly_connected,
        check_column_stochastic,
        check_connected_undirected,
        check_doubly_stochastic,
        check_each_round,
        check_nonnegative,
        check_positive_diagonal,
        check_row_stochastic,
        check_strongly_connected,
        check_symmetric,
        min_positive_weight,
        min_self_weight,
        minimal_b,
        mixing_norm,
        second_eigenvalue_modulus,
    )
    from .random_graphs import erdos_renyi, link_failures, random_geometric
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


_EXPORTS: dict[str, tuple[str, ...]] = {
    "errors": (
        "EmptySequenceError",
        "InvalidMatrixError",
        "NodeCountMismatchError",
        "ParameterError",
        "RoundIndexError",
        "TopologyError",
        "TopologyFormatError",
        "UnknownAlgorithmError",
    ),
    "matrices": ("as_pattern", "as_weight_matrix", "pattern_from_networkx", "to_networkx"),
    "sequence": ("GraphSequence", "from_matrices", "from_networkx", "generated", "periodic", "static"),
    "audit": ("ALGORITHMS", "AssumptionResult", "AuditReport", "audit"),
    "b_connected": ("b_connected_sequence", "paper004_fig2_sequence"),
    "constants": (
        "ContractionResult",
        "dpsda_c_theta",
        "empirical_contraction",
        "nedic_ozdaglar",
        "push_sum_gamma",
        "push_sum_lambda",
        "push_sum_one_minus_lambda",
    ),
    "io": ("load_sequence", "loads_sequence", "save_sequence", "sequence_to_dict"),
    "properties": (
        "CheckResult",
        "SequenceCheck",
        "check_b_strongly_connected",
        "check_column_stochastic",
        "check_connected_undirected",
        "check_doubly_stochastic",
        "check_each_round",
        "check_nonnegative",
        "check_positive_diagonal",
        "check_row_stochastic",
        "check_strongly_connected",
        "check_symmetric",
        "min_positive_weight",
        "min_self_weight",
        "minimal_b",
        "mixing_norm",
        "second_eigenvalue_modulus",
    ),
    "random_graphs": ("erdos_renyi", "link_failures", "random_geometric"),
    "weights": (
        "WEIGHT_RULES",
        "column_stochastic",
        "get_rule",
        "lazy_max_degree",
        "laplacian",
        "laplacian_step",
        "metropolis",
        "row_stochastic",
    ),
}
"""Submodule -> the public names it defines."""

# lazy_loader keeps ``topology.audit`` the function, also once the submodule
# of the same name has been imported.
__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_EXPORTS)
