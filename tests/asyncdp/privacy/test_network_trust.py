"""Pairwise (node-observer) figures rest on what the run did, not on what the rule says about itself.

Each test is a rule or a run on which an earlier version certified a pairwise bound that is false; the truth
is a closed form: a node ``v`` that holds agent ``u``'s raw noisy value ``x_u + s xi`` (Gaussian, ``s`` the
noise actually added, sensitivity ``Delta``) has Renyi divergence of order ``alpha`` at least
``alpha Delta^2 / (2 s^2)`` (data processing: the rest of its view can only add to it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from accounting.papers.muffliato import PairwiseClaim

from asyncdp.papers.muffliato.rule import Muffliato
from asyncdp.privacy import observer_claim
from asyncdp.privacy.network import leakage_rows
from asyncdp.privacy.observer_claim import check_observer_claim


@dataclass(frozen=True)
class _QuietMuffliato(Muffliato):
    """Declares (and adds) a round-1 noise of ``sigma / 10`` while its ``sigma`` attribute stays 1."""

    def noise_scale(self, t: int) -> float:
        return float(self.sigma) * 0.1 if t == 1 else 0.0


def test_streaming_path_reads_the_verified_noise_declaration_not_the_sigma_attribute(monkeypatch):
    # path 0-1-2-3-4-5, values in [0, 1] (Delta = 1); node 5 combines y_4(2) = x_4 + 0.1 xi_4 in the first
    # exchange, so D_2(4 -> 5) >= 2 * 1 / (2 * 0.01) = 100; the streaming path used sigma = 1 and found 1
    sc = replace(Muffliato.example_scenario(), algorithm=_QuietMuffliato(sigma=1.0))
    (row,) = leakage_rows(sc, observers=[5])
    assert row.values[4] >= 100.0 * (1 - 1e-9)
    (slow,) = leakage_rows(sc, observers=[5], fast=False)
    np.testing.assert_allclose(row.values[:5], slow.values[:5], rtol=1e-9)
    # a claim true for sigma = 1 (D_2 <= 1.01 for every pair) is false here: a violation, never a pass
    claim = PairwiseClaim(2.0, "test", "at most 1.01", by_distance=lambda d: 1.01)
    monkeypatch.setattr(observer_claim, "pairwise_claim_of", lambda scenario: claim)
    res = check_observer_claim(sc, "node:5", find_rounds=False)
    assert res.verdict == "violation" and any(f.u == 4 for f in res.failures)
