"""Public names of ``topology`` (read by ``lazy_loader.attach_stub`` and by type checkers)."""

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
from .audit import ALGORITHMS, ASSUMPTIONS, AssumptionResult, AssumptionSet, AuditReport, audit
from .generators.b_connected import b_connected_sequence, paper004_fig2_sequence
from .checks.constants import (
    ContractionResult,
    dpsda_c_theta,
    empirical_contraction,
    nedic_ozdaglar,
    push_sum_gamma,
    push_sum_lambda,
    push_sum_one_minus_lambda,
)
from .io import load_sequence, loads_sequence, save_sequence, sequence_to_dict
from .checks.properties import (
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
from .generators.random_graphs import erdos_renyi, link_failures, random_geometric
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
