"""Tests for accounting.papers.showkatbakhsh, Showkatbakhsh, Karakus and Diggavi (arXiv 2019): sensitivity bounds, claims, recomputed epsilons.

Moved from tests/accounting/test_sensitivity.py and test_theorems.py (one file per paper).
The expected values are computed in the tests, independently of the module. Tolerances:
a sensitivity is a product of at most five floating-point factors (relative rounding error
below 1e-15), so single closed forms use rel=1e-12; a loop of at most 400 terms accumulates
a relative rounding error below 400 * 2.2e-16 < 1e-13, so loop-vs-closed-form comparisons
use rel=1e-10.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounting.errors import PrivacyParameterError
from accounting.claims import verify
from accounting.papers.showkatbakhsh import (
    showkatbakhsh_sensitivity,
    showkatbakhsh_release_sensitivity,
    showkatbakhsh_kappa,
    showkatbakhsh_noise_scales,
    showkatbakhsh_claim,
    showkatbakhsh_alpha,
    showkatbakhsh_effective_epsilon,
)

REL = 1e-12
# Example 2 of Huang, Mitra and Vaidya (ICDCN 2015): grad ||x - a||^2 = 2(x - a), |x - a| <= 2 sqrt 2 on [-1,1]^2
C2_EX2 = 4 * math.sqrt(2)


# -- Showkatbakhsh, Karakus and Diggavi (arXiv 2019) ---------------------------------------
def test_showkatbakhsh_hand_values():
    # eta_4 = 2/4 = 0.5, Delta = 2 * 0.5 * 1.5 = 1.5
    assert showkatbakhsh_sensitivity(4, G=1.5, c=2.0) == pytest.approx(1.5, rel=REL)
    assert showkatbakhsh_sensitivity(4, G=1.5, eta_t=0.1) == pytest.approx(0.3, rel=REL)
    assert showkatbakhsh_sensitivity(1, G=1.0, c=1.0) == pytest.approx(2.0, rel=REL)


def test_showkatbakhsh_stage_two_and_release_index():
    assert showkatbakhsh_sensitivity(5, G=1.0, c=1.0, T=4) == 0.0  # Stage II: messages only
    assert showkatbakhsh_sensitivity(4, G=1.0, c=1.0, T=4) == pytest.approx(0.5, rel=REL)
    assert showkatbakhsh_release_sensitivity(1, G=1.0, c=1.0) == 0.0  # y(1) = 0
    for s in range(2, 10):
        # y(s) = x(s-1) + n(s-1)
        assert showkatbakhsh_release_sensitivity(s, G=1.0, c=1.0) == showkatbakhsh_sensitivity(s - 1, G=1.0, c=1.0)


def test_showkatbakhsh_needs_exactly_one_step_source():
    with pytest.raises(PrivacyParameterError, match="eta_t"):
        showkatbakhsh_sensitivity(1, G=1.0)
    with pytest.raises(PrivacyParameterError, match="exactly one"):
        showkatbakhsh_sensitivity(1, G=1.0, eta_t=0.1, c=1.0)


# -- Showkatbakhsh, Karakus and Diggavi (arXiv 2019) ---------------------------------------
def test_showkatbakhsh_kappa_and_scales_hand_values():
    eps, delta, G, c, T = 4.0, 1e-3, 2.0, 0.01, 100
    kappa = eps**2 / (4 * G**2 * (eps + 2 * math.log(2 / delta)))
    assert showkatbakhsh_kappa(eps, delta, G=G) == pytest.approx(kappa, rel=1e-12)
    M = showkatbakhsh_noise_scales(eps, delta, T=T, c=c, G=G)
    for t in (1, 7, 100):
        assert M[t - 1] ** 2 == pytest.approx((2 / kappa) * c**2 * math.sqrt(T) / t**1.5, rel=1e-12)


@given(eps=st.floats(0.05, 10.0), delta=st.floats(1e-12, 0.5), T=st.integers(1, 300),
       c=st.floats(1e-3, 10.0), G=st.floats(0.1, 10.0))
def test_showkatbakhsh_schedule_alpha_and_verdict(eps, delta, T, c, G):
    M = showkatbakhsh_noise_scales(eps, delta, T=T, c=c, G=G)
    kappa = eps**2 / (4 * G**2 * (eps + 2 * math.log(2 / delta)))
    # sum_t (2 eta_t G)^2 / M_t^2 = 4 G^2 kappa/(2 sqrt T) sum_t t^(-1/2)
    expected = 4 * G**2 * kappa / (2 * math.sqrt(T)) * sum(t**-0.5 for t in range(1, T + 1))
    alpha = showkatbakhsh_alpha(M, c=c, G=G)
    assert alpha == pytest.approx(expected, rel=1e-10)
    assert alpha < eps**2 / (eps + 2 * math.log(2 / delta))  # Theorem 1's condition
    claim = showkatbakhsh_claim(eps, delta, T=T, c=c, G=G)
    assert verify(claim, showkatbakhsh_effective_epsilon(M, delta=delta, c=c, G=G), delta).holds


@given(eps=st.floats(0.01, 20.0), delta=st.floats(1e-12, 0.9))
def test_showkatbakhsh_threshold_alpha_certifies_epsilon(eps, delta):
    # one round with alpha exactly at Theorem 1's threshold: Delta(1) = 2 c G, M_1 = Delta(1)/sqrt(alpha)
    alpha = eps**2 / (eps + 2 * math.log(2 / delta))
    c, G = 0.3, 1.7
    m1 = 2 * c * G / math.sqrt(alpha)
    got = showkatbakhsh_effective_epsilon([m1], delta=delta, c=c, G=G)
    assert got <= eps * (1 + 1e-12)
    # and the tail bound of eqs. (47)-(49) at that epsilon is <= delta
    assert 2 * math.exp(-((got - alpha / 2) ** 2) / (2 * alpha)) <= delta * (1 + 1e-9)


def test_showkatbakhsh_too_little_noise_is_caught():
    eps, delta, T, c, G = 1.0, 1e-5, 200, 0.05, 1.0
    M = showkatbakhsh_noise_scales(eps, delta, T=T, c=c, G=G)
    claim = showkatbakhsh_claim(eps, delta, T=T, c=c, G=G)
    assert verify(claim, showkatbakhsh_effective_epsilon(M, delta=delta, c=c, G=G), delta).holds
    bad = verify(claim, showkatbakhsh_effective_epsilon(M / 2, delta=delta, c=c, G=G), delta)
    assert not bad.holds and bad.gap > 0.5


# -- validation ----------------------------------------------------------------------
BAD_SENSITIVITY = [
    (showkatbakhsh_sensitivity, (0,), dict(G=1.0, c=1.0), "t", "0"),
    (showkatbakhsh_sensitivity, (1,), dict(G=-2.0, c=1.0), "G", "-2.0"),
    (showkatbakhsh_sensitivity, (1,), dict(G=1.0, eta_t=-0.5), "eta_t", "-0.5"),
]


@pytest.mark.parametrize("fn,args,kwargs,name,value", BAD_SENSITIVITY)
def test_bad_sensitivity_inputs_name_parameter_and_value(fn, args, kwargs, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert name in msg and value in msg, msg


BAD_CLAIMS = [
    (lambda: showkatbakhsh_claim(1.0, 0.0, T=10, c=1.0, G=1.0), "delta", "0.0"),
    (lambda: showkatbakhsh_claim(1.0, 1e-3, T=0, c=1.0, G=1.0), "T", "0"),
    (lambda: showkatbakhsh_effective_epsilon([1.0], delta=2.0, c=1.0, G=1.0), "delta", "2.0"),
]


@pytest.mark.parametrize("call,name,value", BAD_CLAIMS)
def test_bad_claim_inputs_name_parameter_and_value(call, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        call()
    msg = str(info.value)
    assert name in msg and value in msg, msg
