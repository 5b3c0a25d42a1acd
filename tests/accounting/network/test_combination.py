"""Renyi combination over sampled data-independent schedules: the formula, the bound's validity and coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from accounting.errors import AccountingError, PrivacyParameterError
from accounting.network.combination import combine_renyi


def _joint_renyi_by_integration(mus: list[float], probs: list[float], alpha: float) -> float:
    # (S, y) with S ~ probs, y | S ~ N(0, 1) vs N(mu_S, 1): D_alpha of the joint law, integrated numerically
    total = 0.0
    for mu, p in zip(mus, probs):
        def f(y: float, mu: float = mu) -> float:
            return math.exp(alpha * stats.norm.logpdf(y, mu) + (1 - alpha) * stats.norm.logpdf(y))
        val, _ = integrate.quad(f, -20, 20 + alpha * mu, points=[alpha * mu], limit=200)
        total += p * val
    return math.log(total) / (alpha - 1)


def test_plug_in_estimate_is_the_joint_renyi_divergence():
    # samples in exact proportion to the schedule law: the estimate is the divergence of (S, y)
    mus, probs, alpha = [0.5, 1.0, 1.5], [0.5, 0.25, 0.25], 3.0
    samples = [alpha * 0.5**2 / 2] * 2 + [alpha * 1.0 / 2] + [alpha * 1.5**2 / 2]
    est = combine_renyi(samples, alpha, d_max=alpha * 1.5**2 / 2)
    assert est.estimate == pytest.approx(_joint_renyi_by_integration(mus, probs, alpha), rel=1e-7)


def test_bound_is_between_estimate_and_d_max_and_tightens_with_samples():
    rng = np.random.default_rng(0)
    small = combine_renyi(rng.uniform(0, 1, 50), 2.0, d_max=1.0)
    large = combine_renyi(rng.uniform(0, 1, 5000), 2.0, d_max=1.0)
    for r in (small, large):
        assert r.estimate <= r.upper <= 1.0
    assert large.upper - large.estimate < small.upper - small.estimate
    assert large.confidence == 0.95


def test_coverage_of_the_upper_bound():
    # schedule law: D = 0 or 1 with probability 1/2 each, alpha = 2: true value log((1 + e)/2).
    # 300 independent experiments of 40 samples at confidence 0.95: the number of misses is at most
    # Binomial(300, 0.05), which exceeds 30 with probability < 1e-3; the bound is conservative, so far fewer.
    truth = math.log((1 + math.e) / 2)
    rng = np.random.default_rng(7)
    misses = sum(combine_renyi(rng.integers(0, 2, 40).astype(float), 2.0, d_max=1.0).upper < truth
                 for _ in range(300))
    assert misses <= 30


def test_errors():
    with pytest.raises(AccountingError, match="exceeds d_max"):
        combine_renyi([0.5, 2.0], 2.0, d_max=1.0)
    with pytest.raises(AccountingError, match="sample 1"):
        combine_renyi([0.5, math.inf], 2.0, d_max=1.0)
    with pytest.raises(AccountingError, match="no sampled schedules"):
        combine_renyi([], 2.0, d_max=1.0)
    with pytest.raises(PrivacyParameterError, match="alpha"):
        combine_renyi([0.5], 1.0, d_max=1.0)
    with pytest.raises(PrivacyParameterError, match="confidence_gap"):
        combine_renyi([0.5], 2.0, d_max=1.0, confidence_gap=1.5)


def test_huge_range_falls_back_to_d_max():
    r = combine_renyi([1.0, 2.0], alpha=1000.0, d_max=5.0)
    assert r.upper == 5.0 and r.bound == "d_max"
