"""Public names of ``topology`` (read by ``lazy_loader.attach_stub`` and by type checkers)."""

# "name as name": an explicit re-export for type checkers (PEP 484); lazy_loader reads the names

from .errors import (
    EmptySequenceError as EmptySequenceError,
    InvalidMatrixError as InvalidMatrixError,
    NodeCountMismatchError as NodeCountMismatchError,
    ParameterError as ParameterError,
    RoundIndexError as RoundIndexError,
    TopologyError as TopologyError,
    TopologyFormatError as TopologyFormatError,
)
from .matrices import (
    as_pattern as as_pattern,
    as_weight_matrix as as_weight_matrix,
    pattern_from_networkx as pattern_from_networkx,
    to_networkx as to_networkx,
)
from .sequence import (
    GraphSequence as GraphSequence,
    from_matrices as from_matrices,
    from_networkx as from_networkx,
    generated as generated,
    periodic as periodic,
    static as static,
)
from .audit import (
    AssumptionResult as AssumptionResult,
    AssumptionSet as AssumptionSet,
    AuditReport as AuditReport,
    BStronglyConnected as BStronglyConnected,
    EachRound as EachRound,
    MinWeight as MinWeight,
    MinimalB as MinimalB,
    Spectral as Spectral,
    Static as Static,
    audit as audit,
    fixed_symmetric_steps as fixed_symmetric_steps,
)
from .generators.b_connected import (
    b_connected_sequence as b_connected_sequence,
    cheng2022_fig2_sequence as cheng2022_fig2_sequence,
    paper004_fig2_sequence as paper004_fig2_sequence,  # former name, kept for older scripts
)
from .checks.constants import (
    ContractionResult as ContractionResult,
    dpsda_c_theta as dpsda_c_theta,
    empirical_contraction as empirical_contraction,
    nedic_ozdaglar as nedic_ozdaglar,
    push_sum_gamma as push_sum_gamma,
    push_sum_lambda as push_sum_lambda,
    push_sum_one_minus_lambda as push_sum_one_minus_lambda,
)
from .io import (
    load_sequence as load_sequence,
    loads_sequence as loads_sequence,
    save_sequence as save_sequence,
    sequence_to_dict as sequence_to_dict,
)
from .checks.properties import (
    CheckResult as CheckResult,
    SequenceCheck as SequenceCheck,
    check_b_strongly_connected as check_b_strongly_connected,
    check_column_stochastic as check_column_stochastic,
    check_connected_undirected as check_connected_undirected,
    check_doubly_stochastic as check_doubly_stochastic,
    check_each_round as check_each_round,
    check_nonnegative as check_nonnegative,
    check_positive_diagonal as check_positive_diagonal,
    check_row_stochastic as check_row_stochastic,
    check_strongly_connected as check_strongly_connected,
    check_symmetric as check_symmetric,
    check_weights_at_least_inverse_n as check_weights_at_least_inverse_n,
    min_positive_weight as min_positive_weight,
    min_self_weight as min_self_weight,
    minimal_b as minimal_b,
    mixing_norm as mixing_norm,
    second_eigenvalue_modulus as second_eigenvalue_modulus,
)
from .generators.random_graphs import (
    erdos_renyi as erdos_renyi,
    link_failures as link_failures,
    random_geometric as random_geometric,
)
from .weights import (
    WEIGHT_RULES as WEIGHT_RULES,
    column_stochastic as column_stochastic,
    get_rule as get_rule,
    lazy_max_degree as lazy_max_degree,
    laplacian as laplacian,
    laplacian_step as laplacian_step,
    metropolis as metropolis,
    row_stochastic as row_stochastic,
)
