"""Wang and Başar (Automatica 2023), §6: Table 1, the saddle escape (Fig. 4) and ICA (Fig. 5).

All three run Algorithm 2 (:class:`~asyncdp.papers.wang_basar.rule.WangBasar`)
on the batch engine. Choices the paper leaves open are
each recorded in the JSON outputs under ``"choices"``. Shared by all three:

* Graph: 5 agents on a ring, Metropolis weights (= 1/3 everywhere, including
  ``w_ii``), static; ``eta = ||W - 11^T/5||_2 ~ 0.539`` (Fig. 2's topology is
  not given in the text).
* Noise: ``noise_variance`` is the per-coordinate variance of ``n_i^k`` (the
  paper's "variance sigma"); the message noise is ``lam^k n_i^k``.
* Steps: §6.1 ``lam^k = 0.02`` for ``k <= 500``, ``1/k`` after (``k`` = the
  global iteration, so ``lam`` drops tenfold at ``k = 501``); §6.2 ``0.003``
  for ``k <= 100``, ``3/(10k)`` after.
* Costs outside ``[-8, 4] x [-3, 3]``: the soft-clipped cubic term of
  :mod:`asyncdp.problems.nonconvex` (creates a local minimum left of the box,
  which runs leaving the saddle to the left reach instead of ``theta*``).
* Per-run initial points: the batch engine shares one ``x0`` across runs, so
  the runs' starts enter through the algorithm's ``initial_state``
  (:class:`StartedWangBasar`); nothing else changes.

The experiments, one module each (their own choices are in their docstrings):

* :func:`reproduce_table1` (:mod:`.table1`): Table 1, the final error
  against the noise variance;
* :func:`reproduce_saddle` (:mod:`.saddle`): Fig. 4, the escape from the
  strict saddle;
* :func:`reproduce_ica` (:mod:`.ica`): Fig. 5, distributed ICA on the sphere.

The shared constants and helpers are in :mod:`.common`. This package
re-exports the public names of all four modules.

Outputs (``out_dir``): ``table1.csv``/``table1_summary.json``/``table1.png``,
``saddle.csv``/``saddle_summary.json``/``saddle.png``,
``ica.csv``/``ica_summary.json``/``ica.png``.
"""

from __future__ import annotations

from .common import BASIN_RADIUS, DEFAULT_SEED, NUM_AGENTS, StartedWangBasar, ring_graph
from .ica import (HORIZON_ICA, ICA_COLUMNS, ICA_GROUP, ICA_KEYS, ICA_STUCK, ICA_VARIANCES, format_ica_table,
                  reproduce_ica)
from .saddle import (ESCAPE_RADIUS, HORIZON_SADDLE, SADDLE_COLUMNS, SADDLE_KEYS, SADDLE_VARIANCES,
                     format_saddle_table, reproduce_saddle)
from .table1 import (HORIZON_TABLE1, PAPER_TABLE1, PAPER_VARIANCES, TABLE1_COLUMNS, TABLE1_ENTRY_KEYS, TABLE1_KEYS,
                     format_table1_table, reproduce_table1)

__all__ = [
    "PAPER_TABLE1",
    "PAPER_VARIANCES",
    "SADDLE_VARIANCES",
    "ICA_VARIANCES",
    "NUM_AGENTS",
    "HORIZON_TABLE1",
    "HORIZON_SADDLE",
    "HORIZON_ICA",
    "DEFAULT_SEED",
    "ESCAPE_RADIUS",
    "BASIN_RADIUS",
    "ICA_GROUP",
    "ICA_STUCK",
    "TABLE1_COLUMNS",
    "TABLE1_KEYS",
    "TABLE1_ENTRY_KEYS",
    "SADDLE_COLUMNS",
    "SADDLE_KEYS",
    "ICA_COLUMNS",
    "ICA_KEYS",
    "StartedWangBasar",
    "ring_graph",
    "reproduce_table1",
    "reproduce_saddle",
    "reproduce_ica",
    "format_table1_table",
    "format_saddle_table",
    "format_ica_table",
]
