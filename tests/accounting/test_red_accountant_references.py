"""The accountant's upper bounds checked against references computed independently of it.

A claim passes only when the accountant's own bound is within it, so a bound below the truth is a false ``pass``.
These tests compare the bounds with 50-digit closed forms (mpmath) or with certified lower bounds on the truth
(importance sampling, :mod:`accounting.tilting`), at the parameters where round-off or modelling could bite:

* Laplace RDP (dp_accounting's ``_laplace_rdp``, read by :func:`accounting.renyi.ledger_rdp` to confirm Rényi
  claims) at small ratios, where its closed form subtracts two numbers of size ``r`` to get one of size
  ``alpha r^2 / 2``;
* a Laplace release of dimension ``d`` is accounted as one scalar Laplace pair of ratio ``sensitivity / scale``
  (L1 sensitivity): valid for RDP only if Mironov's divergence is superadditive in the ratio, so that no split
  of the L1 shift over coordinates has a larger divergence (the PLD side of this is
  ``test_composition.test_laplace_one_dimensional_pair_dominates_split_shifts``);
* the pessimistic PLD of a heterogeneous Laplace ledger read at ``delta = 1e-12`` (many convolutions, each with
  FFT round-off and tail truncation).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from accounting.composition.pld import pld_epsilon
from accounting.delta_bounds import importance_delta_lower
from accounting.ledger import Ledger, Release
from accounting.profiles import PrivacyProfile
from accounting.renyi import ledger_rdp
from accounting.tilting import tilted_sample

_RTOL = 1e-9
"""The relative slack of :func:`accounting.renyi.accountant_confirms`: a bound below the truth by more confirms a
false claim calibrated at the truth."""


def _laplace_renyi_50_digits(alpha: float, r: float) -> mpmath.mpf:
    """``D_alpha(Lap(0, 1) || Lap(r, 1))`` (Mironov, CSF 2017, Prop. 6) with 50 significant digits."""
    with mpmath.workdps(50):
        a, x = mpmath.mpf(alpha), mpmath.mpf(r)
        return mpmath.log(a / (2 * a - 1) * mpmath.exp((a - 1) * x)
                          + (a - 1) / (2 * a - 1) * mpmath.exp(-a * x)) / (a - 1)


def _laplace_ledger(ratio: float, dimension: int = 1) -> Ledger:
    return Ledger([Release(0, 1, 1.0, "laplace", 1.0 / ratio, dimension)])


@pytest.mark.parametrize("ratio", [1e-6, 1e-5, 1e-4, 1e-2, 0.3, 3.0, 30.0])
def test_ledger_laplace_rdp_is_not_below_the_50_digit_divergence(ratio):
    """At every order from 1.0001 to 1e4 the accountant's RDP of one Laplace release is at least the exact
    divergence less the confirmation's slack (the worst seen: 5e-10 relative at ratio 1e-6, order 1.04)."""
    orders = np.r_[np.geomspace(1.0001, 1.2, 12), np.geomspace(1.2, 1e4, 12)]
    got = ledger_rdp(_laplace_ledger(ratio), 1.0, orders=orders.tolist())[1]
    for a, value in zip(orders, got):
        truth = _laplace_renyi_50_digits(float(a), ratio)
        assert value >= float(truth) * (1 - _RTOL), (a, value, truth)


@pytest.mark.parametrize("alpha", [1.01, 1.5, 2.0, 8.0, 64.0, 1000.0])
@pytest.mark.parametrize("split", [(0.5, 0.5), (0.9, 0.1), (0.25,) * 4, (0.6, 0.3, 0.1)])
@pytest.mark.parametrize("ratio", [0.05, 1.0, 6.0])
def test_scalar_laplace_rdp_bounds_every_l1_split_over_coordinates(alpha, split, ratio):
    """A Laplace release of L1 sensitivity ``s`` and scale ``b`` is accounted at ratio ``s / b`` whatever its
    dimension; the exact divergence of the shift spread over coordinates (``sum_k D_alpha(r_k)``, independent
    noise per coordinate) never exceeds it."""
    accounted = float(ledger_rdp(_laplace_ledger(ratio, dimension=len(split)), 1.0, orders=[alpha])[1][0])
    spread = sum(_laplace_renyi_50_digits(alpha, ratio * w) for w in split)
    assert float(spread) <= accounted * (1 + 1e-12)
    assert PrivacyProfile(0.0, tuple(ratio * w for w in split)).renyi(alpha) <= accounted * (1 + 1e-12)


def test_pessimistic_pld_at_delta_1e12_is_above_a_certified_lower_bound_on_the_truth():
    """300 Laplace releases with geometrically decaying ratios (300 distinct leaves, a tree of convolutions):
    the accountant's epsilon at delta 1e-12 must have a true delta at most 1e-12. The importance-sampling lower
    bound on the true delta there (4,000 tilted draws, seed 1, confidence 0.999) stays below 1e-12; a PLD whose
    round-off dropped tail mass would give an epsilon where it does not."""
    ratios = [0.05 * 0.99**t for t in range(300)]
    led = Ledger([Release(0, t + 1, float(t + 1), "laplace", 1.0 / r, 1) for t, r in enumerate(ratios)])
    target = 1e-12
    eps = pld_epsilon(led, 1.0, target, 1e-3)
    s = tilted_sample(laplace_ratios=ratios, epsilon=eps, runs=4000, rng=np.random.default_rng(1))
    bound = importance_delta_lower(s.losses, s.log_weights, eps, cap=s.cap, confidence=0.999)
    assert 0 < bound.lower <= target
