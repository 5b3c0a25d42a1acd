"""The certified witness of an approximate per-iteration claim from rounds besides the focus round.

Per-round losses are drawn as a Gaussian mechanism's (shift ``mu`` standard deviations: under ``P`` the loss is
``N(mu^2 / 2, mu^2)``) or with a share of infinite losses; the claim's delta is the true one (the witness must
not fire, error at most 0.05 for the seed fixed here) or a third of it (it must).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import norm

from asyncdp.privacy.exact_replay import _other_rounds_witness

ERROR = 0.05


def _gaussian_delta(mu: float, eps: float) -> float:
    """delta(eps) of a Gaussian pair with shift ``mu`` (Balle and Wang, ICML 2018, Theorem 8)."""
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2))


def _ctx(eps: float, delta: float) -> SimpleNamespace:
    return SimpleNamespace(epsilon_claimed=eps, delta_claimed=delta, focus=0, options=SimpleNamespace(seed=0),
                           form_name="approximate")


def _runs(n: int) -> SimpleNamespace:
    return SimpleNamespace(seeds=np.arange(n), engine="batch")


@pytest.mark.parametrize("factor, refuted", [(1.0, False), (1 / 3, True)])
def test_gaussian_rounds_are_refuted_only_below_their_true_delta(factor, refuted):
    rng = np.random.default_rng(0)
    mu, eps, runs, rounds = 1.0, 1.0, 4000, 10
    per_round = rng.normal(mu * mu / 2, mu, size=(runs, rounds))
    per_round[:, 0] = 0.0  # the focus round (audited elsewhere)
    delta = _gaussian_delta(mu, eps) * factor
    found = _other_rounds_witness(_ctx(eps, delta), per_round, _runs(runs), ERROR)
    assert (found is not None) == refuted
    if refuted:
        witness, reason = found
        assert witness["delta_lower"] > delta and witness["round"] > 1 and witness["confidence"] == 1 - ERROR
        assert witness["claim_form"] == "approximate" and "Bonferroni over the 9 rounds" in witness["method"]


@pytest.mark.parametrize("delta, refuted", [(1e-3, True), (0.06, False)])
def test_a_share_of_infinite_losses_is_refuted_only_above_delta(delta, refuted):
    """5% of the runs have an infinite loss in round 7 (and NaN losses in round 3, counted as no event)."""
    per_round = np.zeros((2000, 8))
    per_round[::20, 6] = np.inf
    per_round[::7, 2] = np.nan
    found = _other_rounds_witness(_ctx(0.5, delta), per_round, _runs(2000), ERROR)
    assert (found is not None) == refuted
    if refuted:
        assert found[0]["round"] == 7 and found[0]["infinite_loss_runs"] == 100 and found[0]["loss"] == math.inf
