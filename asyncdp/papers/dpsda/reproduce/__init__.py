"""Cheng, Liao and Li (arXiv 2022), Sec. 6: DPSDA-C and DPSDA-PS on online learning problems.

Three reproductions, each writing a CSV, a ``*_summary.json`` and a PNG:

* :func:`reproduce_olr` (Fig. 3, :mod:`.olr`): online linear regression on
  synthetic data, with the played-decision regret ``R(T)/T`` (eq. 3) and the
  running-average regret (eq. 19) of both algorithms for every epsilon;
* :func:`reproduce_classification` (Figs. 4-5, Tables II-IV,
  :mod:`.classification`): online logistic regression. Train and test
  accuracy against epsilon, with the paper's numbers beside ours;
* :func:`reproduce_dp_check` (Fig. 6, Table V, :mod:`.dp_check`): two loss
  sequences that differ in one round ``t0``, run with common random numbers.
  Reports ``|x(t0) - x'(t0)|`` against epsilon.

The constants and helpers the three share are in :mod:`.common`. This
package re-exports the public names of all four modules.

Setting shared by all three (the paper's experiments, with our choices where
it is silent or inconsistent):

* ``N = 7`` nodes. Node ``i`` owns the block ``S_i`` of
  ``np.array_split(arange(d), 7)`` (the analysis gives each node one
  coordinate, the experiments have ``d > N``), keeps a full estimate
  ``y_i in X^d`` and plays ``x_i(t) = y_i^{S_i}(t)``.
* ``X = [-5, 5]^d``, a box. For classification this replaces the paper's
  ambiguous ball (it also says each entry is restricted to ``[-B, B]``); a
  product set keeps the decision stitched from the nodes' blocks feasible.
* Graphs: :func:`topology.cheng2022_fig2_sequence`, our 7-node period-4
  stand-in for the paper's Fig. 2. The paper's own graph is not in
  its text. DPSDA-PS runs on the directed sequence with column-stochastic
  weights ``A_ij = 1/deg_j^out``; each round is disconnected and the union
  of 4 consecutive rounds is strongly connected. DPSDA-C runs on the same
  edges without directions, with Metropolis weights, which are doubly
  stochastic as Lemma 2(a) needs (the experiments' ``1/deg_i`` row weights
  are not, on irregular graphs).
* Step size ``alpha(t) = alpha0 / sqrt(t)`` with ``alpha0 = 1`` (the paper's
  0-based loop would start at ``1/sqrt(0)``).
* Gradient noise ``xi ~ N(0, 0.1)``, read as a variance (the paper
  does not say). Each node's
  signal is clipped per coordinate at ``L_hat = sqrt(L^2 + 0.1)``. ``L`` is
  the problem's derived gradient bound, so the clip rarely binds.
* Privacy noise: Laplace with ``sigma = c / epsilon``. The paper never gives
  ``c``, so it is a recorded choice:
  :data:`OLR_NOISE_CONSTANT` = 1 for regression and
  :data:`CLASSIFICATION_NOISE_CONSTANT` = 5 for the MNIST experiments (see
  that constant for how it was picked). ``epsilon = inf`` is the
  non-private run.
* Runs: run ``r`` uses scenario seed ``seed + r`` (Laplace noise) and
  ``xi_seed = seed + r`` (gradient noise). Every epsilon and both algorithms
  use the same seeds, i.e. common random numbers across the grid, so
  differences between epsilons are paired. The data depend only on
  ``seed``. :func:`reproduce_dp_check` is the exception: it runs one batch of
  ``runs`` Laplace draws that share ``xi_seed = seed``, and ``xi`` is
  identical in the two adjacent sequences.

Engine: the lockstep batch engine (:mod:`asyncdp.engine.batch_engine`). Results
for ``epsilon = inf`` are written as the string ``"inf"`` in JSON and CSV.
"""

from __future__ import annotations

from .classification import (DATASET_DEFAULTS, DATASETS, PAPER_ACCURACY, format_classification_table,
                             load_classification_data, reproduce_classification)
from .common import (ALGORITHMS, ALPHA0, BOX, CLASSIFICATION_NOISE_CONSTANT, DEFAULT_SEED, EPSILONS,
                     GRADIENT_NOISE_VARIANCE, N_NODES, RUNS, SUMMARY_KEYS, graphs, make_algorithm)
from .dp_check import (DP_CHECK_SAMPLES, DP_CHECK_T0, INDEPENDENT_SEED_OFFSET, PAPER_TABLE_V, REPLACEMENTS,
                       format_dp_check_table, reproduce_dp_check)
from .olr import (DECREASE_RATIO, OLR_DIM, OLR_HORIZON, OLR_LABEL_NOISE_VARIANCE, OLR_NOISE_CONSTANT,
                  format_olr_table, reproduce_olr)

__all__ = [
    "N_NODES", "BOX", "OLR_DIM", "OLR_HORIZON", "EPSILONS", "GRADIENT_NOISE_VARIANCE", "OLR_LABEL_NOISE_VARIANCE",
    "OLR_NOISE_CONSTANT", "CLASSIFICATION_NOISE_CONSTANT", "ALPHA0", "RUNS", "DEFAULT_SEED", "DECREASE_RATIO",
    "DATASETS", "DATASET_DEFAULTS", "PAPER_ACCURACY", "PAPER_TABLE_V", "DP_CHECK_T0",
    "DP_CHECK_SAMPLES", "REPLACEMENTS", "INDEPENDENT_SEED_OFFSET", "SUMMARY_KEYS", "ALGORITHMS", "graphs",
    "make_algorithm", "load_classification_data", "reproduce_olr", "reproduce_classification",
    "reproduce_dp_check", "format_olr_table", "format_classification_table", "format_dp_check_table",
]
