"""Showkatbakhsh, Karakus and Diggavi (arXiv 2019), Sec. 5: private distributed mean estimation, Figs. 1-4.

The setting (the paper's Sec. 5; where it leaves the data generation open,
the choices are ours and recorded in the outputs): ``N`` nodes each hold ``N_i`` points ``d in [-R, R]^p``; node
``i``'s cost is ``f_i(x) = 1/2 sum_(d in D_i) ||x - d||^2`` on ``X = [-R, R]^p``
(:func:`~asyncdp.papers.showkatbakhsh.rule.mean_estimation_problem`: ``mu = L =
N_i``, so ``c = 1/N_i`` and ``eta_t = 1/(N_i t)``); the optimum is the data
mean ``dbar``. One fixed connected Erdős–Rényi graph ``G(N, p_c)`` (resampled
until connected, seeded) with ``W = I - (2/(3 lambda_max)) Lap``. Privacy is
per data point: replacing one point moves ``grad f_i`` by at most
``diam X = 2 R sqrt(p)``, so Prop. 3 holds with ``G_priv = R sqrt(p)``
(:func:`privacy_gradient_bound`), the ``G`` handed to the algorithm. The
algorithm is Algorithm 1 with the corrected hand-over (the last Stage-I
message is noisy), run on the batch engine.

Metrics (relative squared errors, divided by ``||dbar||^2``):

* ``stage1``: ``||xbar(T) - dbar||^2``, the paper's metric (Theorem 2);
* ``released``: ``||xbar - dbar||^2`` after ``T2`` Stage-II rounds: the
  consensus value nodes end with, ``xbar(T) + nbar(T)`` (W doubly stochastic);
* ``node1``: ``||x_1(T) - dbar||^2`` (Fig. 3, node 1 at the end of Stage I).

Linear prediction. Without projections, ``eta_t = 1/(N_i t)`` makes the
average error obey ``t e(t) = (t-1) (e(t-1) + nbar(t-1))`` with ``e(1) = 0``,
so ``E||e(T)||^2 = (p / (N T^2)) sum_(s<T) s^2 M_s^2`` and the released value
adds ``p M_T^2 / N`` (:func:`linear_prediction`). It equals ``(2/3)(2 p
c^2/(N kappa))`` for large ``T``: a plateau in ``T`` (Fig. 1), ``~ 1/kappa ~
(epsilon + 2 ln(2/delta))/epsilon^2`` in epsilon (Fig. 2: slope -2 only for
``epsilon << 2 ln(2/delta)``), ``~ 1/N_i^2`` in ``N_i`` (Fig. 4). Projections
(clipping at the box) make the simulated error smaller when the noise is
large. Each figure's JSON reports the simulation, the prediction, their
ratio, fitted log-log slopes and the trend checks with their numbers.

Tight accounting (:func:`asyncdp.papers.showkatbakhsh.privacy.tight_accounting`):
Theorem 1's bound beside the PLD/RDP epsilon of the same releases, and the
noise factor ``s < 1`` for which ``s M_t`` meets the same (epsilon, delta)
under exact accounting; Fig. 2 also simulates that schedule (``G_priv s``).

Choices the paper leaves open (module constants; all recorded under
``"choices"`` in every summary): ``R = 1``, ``p = 5``; data i.i.d. per
coordinate ``N(0.7 R, 1)`` truncated to ``[-R, R]``; ``x_i(0) = 0``
(``y(1) = 0``); ``T2 = 50`` Stage-II rounds; ``runs`` noise realizations per
point on one data set and one graph (Fig. 3: several graphs per ``p_c``);
grids below; 95% Student t confidence intervals.

Modules: :mod:`.common` (constants, setting, checks, table), one per figure
(:mod:`.fig1` ... :mod:`.fig4`). Every name of the former single module is
re-exported here.
"""

from __future__ import annotations

from .common import (
    DATA_MEAN,
    DATA_SEED,
    DATA_STD,
    DEFAULT_SEED,
    DIM,
    EPSILON,
    FIG1_HORIZONS,
    FIG2_DELTAS,
    FIG2_EPSILONS,
    FIG3_GRAPHS,
    FIG3_HORIZONS,
    FIG3_PCS,
    FIG4_POINTS,
    GRAPH_SEED,
    HORIZON,
    N_NODES,
    N_POINTS,
    P_C,
    RADIUS,
    RUNS,
    STAGE2_ROUNDS,
    SUMMARY_KEYS,
    fixed_er_graph,
    format_table,
    generate_data,
    linear_prediction,
    privacy_gradient_bound,
    simulate,
)
from .fig1 import reproduce_fig1
from .fig2 import reproduce_fig2
from .fig3 import reproduce_fig3
from .fig4 import reproduce_fig4

__all__ = [
    "N_NODES", "N_POINTS", "DIM", "RADIUS", "DATA_MEAN", "DATA_STD", "P_C", "EPSILON", "HORIZON",
    "STAGE2_ROUNDS", "RUNS", "DATA_SEED", "GRAPH_SEED", "DEFAULT_SEED", "FIG1_HORIZONS", "FIG2_EPSILONS",
    "FIG2_DELTAS", "FIG3_PCS", "FIG3_HORIZONS", "FIG3_GRAPHS", "FIG4_POINTS", "SUMMARY_KEYS",
    "generate_data", "fixed_er_graph", "privacy_gradient_bound", "linear_prediction", "simulate",
    "reproduce_fig1", "reproduce_fig2", "reproduce_fig3", "reproduce_fig4", "format_table",
]
