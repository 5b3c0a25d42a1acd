"""An atom inside a continuous output law is refuted by the black-box audit (accounting.auditing.atoms).

The mechanism: ``d + Lap(1)``, but on 2% of draws the noise is skipped and ``d`` itself is released. The truth
(closed form): ``P[M(0) = 0] = 0.02`` while ``P[M(1) = 0] = 0`` (the Laplace part is continuous), so
``delta(epsilon) >= 0.02`` at every epsilon; a claim ``(2, 1e-3)`` is false. Before the atoms score the outputs
were not discrete enough for exact events (the Laplace part has as many values as draws) and the learned scores
are smooth in the output: ``audit_samples`` said no violation (certified delta 0 at 1e5 samples per side).
"""

from __future__ import annotations

import numpy as np

from accounting.auditing import audit_samples


def _atom_mechanism(d: float, rng: np.random.Generator, n: int, share: float = 0.02) -> np.ndarray:
    return np.where(rng.random(n) < share, d, d + rng.laplace(0.0, 1.0, n))


def test_an_atom_at_the_data_is_certified_as_delta():
    rng = np.random.default_rng(3)
    report = audit_samples(_atom_mechanism(0.0, rng, 40_000), _atom_mechanism(1.0, rng, 40_000), epsilon=2.0,
                           delta=1e-3, seed=0)
    assert report.violation and report.event.startswith("atoms score")
    assert 1e-3 < report.delta_lower_bound <= 0.02


def test_the_atoms_of_clipped_laplace_noise_are_no_witness():
    """``clip(d + Lap(1), -2, 3)`` is post-processing of the Laplace mechanism (pure epsilon 1 for d = 0 vs 1):
    its atoms at -2 and 3 have probabilities in the ratio e exactly, so a correct claim is not refuted (a
    violation has probability at most 5% by the audit's soundness; the seed is fixed)."""
    rng = np.random.default_rng(4)
    draws = [np.clip(d + rng.laplace(0.0, 1.0, 40_000), -2.0, 3.0) for d in (0.0, 1.0)]
    report = audit_samples(*draws, epsilon=1.0, seed=0)
    assert not report.violation and report.epsilon_lower_bound <= 1.0
