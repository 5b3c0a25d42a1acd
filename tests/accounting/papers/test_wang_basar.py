"""Tests for accounting.papers.wang_basar, Wang and Başar (Automatica 2023): sensitivity bounds, claims, recomputed epsilons.

Moved from tests/accounting/test_sensitivity.py and test_theorems.py (one file per paper).
The expected values are computed in the tests, independently of the module. Tolerances:
a sensitivity is a product of at most five floating-point factors (relative rounding error
below 1e-15), so single closed forms use rel=1e-12; a loop of at most 400 terms accumulates
a relative rounding error below 400 * 2.2e-16 < 1e-13, so loop-vs-closed-form comparisons
use rel=1e-10.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from accounting.errors import PrivacyParameterError
from accounting.claims import verify
from accounting.papers.wang_basar import (
    wang_basar_sensitivity,
    wang_basar_variance_threshold,
    wang_basar_claim,
    wang_basar_effective_epsilon,
    wang_basar_noise_std,
)

REL = 1e-12
# Example 2 of Huang, Mitra and Vaidya (ICDCN 2015): grad ||x - a||^2 = 2(x - a), |x - a| <= 2 sqrt 2 on [-1,1]^2
C2_EX2 = 4 * math.sqrt(2)


# -- Wang and Basar (Automatica 2023) ------------------------------------------------------
def test_wang_basar_printed_values():
    assert wang_basar_sensitivity(lam_k=0.5, kind="sample", nu=2.0, n_i=10) == pytest.approx(0.1, rel=REL)  # (28)
    assert wang_basar_sensitivity(lam_k=0.02, kind="gradient") == 0.02  # (30)
    assert wang_basar_sensitivity(lam_k=0.02, kind="variable_printed") == 1.0  # (31) as printed
    assert wang_basar_sensitivity(lam_k=0.02, kind="variable", L=3.0) == pytest.approx(1.06, rel=REL)  # corrected
    assert wang_basar_sensitivity(lam_k=0.5, kind="sample_replace", G=3.0, n_i=10) == pytest.approx(0.3, rel=REL)


@pytest.mark.parametrize("kind", ["sample", "gradient", "variable", "variable_printed", "sample_replace"])
def test_wang_basar_noise_units_divide_by_step(kind):
    kw = dict(nu=2.0, n_i=10, G=3.0, L=5.0)
    lam = 0.02
    msg = wang_basar_sensitivity(lam_k=lam, kind=kind, **kw)
    noise = wang_basar_sensitivity(lam_k=lam, kind=kind, units="noise", **kw)
    assert noise == pytest.approx(msg / lam, rel=REL)


def test_wang_basar_missing_constants():
    with pytest.raises(PrivacyParameterError, match="nu"):
        wang_basar_sensitivity(lam_k=0.1, kind="sample", n_i=3)
    with pytest.raises(PrivacyParameterError, match="G"):
        wang_basar_sensitivity(lam_k=0.1, kind="sample_replace", n_i=3)
    with pytest.raises(PrivacyParameterError, match="kind"):
        wang_basar_sensitivity(lam_k=0.1, kind="weights")


def test_wang_basar_variable_without_lipschitz_constant_is_refused_not_printed():
    """Without L the variable adjacency has no bound: every function that needs one refuses, naming L."""
    calls = [
        lambda: wang_basar_sensitivity(lam_k=0.02, kind="variable"),
        lambda: wang_basar_sensitivity(lam_k=0.02, kind="variable", units="noise"),
        lambda: wang_basar_variance_threshold(0.5, 1e-3, lam_k=0.02, kind="variable", form="consistent"),
        lambda: wang_basar_effective_epsilon(delta=1e-3, noise_variance=1.0, lam_k=0.02, kind="variable"),
        lambda: wang_basar_noise_std(0.5, 1e-3, lam_k=0.02, kind="variable"),
    ]
    for call in calls:
        with pytest.raises(PrivacyParameterError, match=r"needs L.*got L=None.*variable_printed"):
            call()
    with pytest.raises(PrivacyParameterError, match="L") as info:
        wang_basar_sensitivity(lam_k=0.02, kind="variable", L=-1.0)
    assert "-1.0" in str(info.value)


def test_wang_basar_printed_variable_value_stays_selectable():
    """eq. (31) as printed (1, whatever the step) reproduces Theorem 6's printed threshold 2 ln(1.25/delta)/(lam eps)^2."""
    eps, delta = 0.5, 1e-3
    for lam in (0.02, 0.3, 1.0):
        assert wang_basar_sensitivity(lam_k=lam, kind="variable_printed") == 1.0
        assert wang_basar_sensitivity(lam_k=lam, kind="variable_printed", units="noise") == pytest.approx(1 / lam)
        printed = wang_basar_variance_threshold(eps, delta, lam_k=lam, kind="variable")  # needs no L
        assert printed == pytest.approx(2 * math.log(1.25 / delta) / (lam * eps) ** 2, rel=REL)


# -- Wang and Basar (Automatica 2023) ------------------------------------------------------
def test_wang_basar_thresholds_hand_values():
    eps, delta, lam = 0.5, 1e-3, 0.02
    base = 2 * math.log(1.25 / delta) / eps**2
    th = wang_basar_variance_threshold
    assert th(eps, delta, lam_k=lam, kind="gradient") == pytest.approx(base * lam**2, rel=1e-12)
    assert th(eps, delta, lam_k=lam, kind="gradient", form="consistent") == pytest.approx(base, rel=1e-12)
    assert th(eps, delta, lam_k=lam, kind="sample", nu=3.0, n_i=160) == pytest.approx(
        base * 9 * lam**2 / 160**2, rel=1e-12)
    assert th(eps, delta, lam_k=lam, kind="sample", nu=3.0, n_i=160, form="consistent") == pytest.approx(
        base * 9 / 160**2, rel=1e-12)
    assert th(eps, delta, lam_k=lam, kind="variable") == pytest.approx(base / lam**2, rel=1e-12)  # eq. (31): 1
    assert th(eps, delta, lam_k=lam, kind="variable", L=3.0, form="consistent") == pytest.approx(
        base * (1 + lam * 3.0) ** 2 / lam**2, rel=1e-12)  # 1 + lam L


@pytest.mark.parametrize("lam", [0.02, 0.3])
@pytest.mark.parametrize("kind", ["gradient", "sample"])
def test_wang_basar_printed_theorems_4_5_fail_by_one_over_lambda(kind, lam):
    eps, delta = 0.5, 1e-3
    kw = dict(nu=2.0, n_i=160) if kind == "sample" else {}
    var = wang_basar_variance_threshold(eps, delta, lam_k=lam, kind=kind, **kw)
    claim = wang_basar_claim(eps, delta, noise_variance=var, lam_k=lam, kind=kind, **kw)
    assert claim.per == "iteration"
    got = wang_basar_effective_epsilon(delta=delta, noise_variance=var, lam_k=lam, kind=kind, **kw)
    assert got == pytest.approx(eps / lam, rel=1e-12)
    v = verify(claim, got, delta)
    assert not v.holds and v.gap == pytest.approx(eps / lam - eps, rel=1e-12)
    # the consistent threshold is exactly enough
    var_ok = wang_basar_variance_threshold(eps, delta, lam_k=lam, kind=kind, form="consistent", **kw)
    assert verify(claim, wang_basar_effective_epsilon(delta=delta, noise_variance=var_ok, lam_k=lam, kind=kind,
                                                      **kw), delta).holds


def test_wang_basar_theorem6_holds_only_against_the_printed_sensitivity():
    """Theorem 6's threshold is exact for eq. (31)'s 1, and (1 + lam L) times too optimistic in epsilon."""
    eps, delta, lam, L = 0.5, 1e-3, 0.02, 34.0
    var = wang_basar_variance_threshold(eps, delta, lam_k=lam, kind="variable")
    claim = wang_basar_claim(eps, delta, noise_variance=var, lam_k=lam, kind="variable")
    printed = wang_basar_effective_epsilon(delta=delta, noise_variance=var, lam_k=lam, kind="variable_printed")
    assert verify(claim, printed, delta).holds and printed == pytest.approx(eps, rel=1e-12)
    got = wang_basar_effective_epsilon(delta=delta, noise_variance=var, lam_k=lam, kind="variable", L=L)
    assert got == pytest.approx(eps * (1 + lam * L), rel=1e-12) and not verify(claim, got, delta).holds
    assert verify(claim, wang_basar_effective_epsilon(delta=delta, lam_k=lam, kind="variable", L=0.0,
                                                      noise_variance=var), delta).holds  # no curvature: 1 is right
    var_ok = wang_basar_variance_threshold(eps, delta, lam_k=lam, kind="variable", L=L, form="consistent")
    assert wang_basar_effective_epsilon(delta=delta, noise_variance=var_ok, lam_k=lam, kind="variable",
                                        L=L) == pytest.approx(eps, rel=1e-12)
    assert wang_basar_noise_std(eps, delta, lam_k=lam, kind="variable", L=L) == pytest.approx(
        lam * math.sqrt(var_ok), rel=1e-12)


def test_wang_basar_claim_below_threshold_raises():
    with pytest.raises(PrivacyParameterError, match=r"noise_variance=1e-09 is below Theorem 5"):
        wang_basar_claim(0.5, 1e-3, noise_variance=1e-9, lam_k=0.02, kind="gradient")


# -- validation ----------------------------------------------------------------------
BAD_SENSITIVITY = [
    (wang_basar_sensitivity, (), dict(lam_k=0.0), "lam_k", "0.0"),
    (wang_basar_sensitivity, (), dict(lam_k=0.1, kind="sample", nu=-1.0, n_i=3), "nu", "-1.0"),
    (wang_basar_sensitivity, (), dict(lam_k=0.1, units="bits"), "units", "'bits'"),
]


@pytest.mark.parametrize("fn,args,kwargs,name,value", BAD_SENSITIVITY)
def test_bad_sensitivity_inputs_name_parameter_and_value(fn, args, kwargs, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert name in msg and value in msg, msg


BAD_CLAIMS = [
    (lambda: wang_basar_claim(1.5, 1e-3, noise_variance=1.0, lam_k=0.1), "epsilon", "1.5"),
    (lambda: wang_basar_effective_epsilon(delta=1e-3, noise_variance=0.0, lam_k=0.1), "noise_variance", "0.0"),
    (lambda: wang_basar_variance_threshold(0.5, 1e-3, lam_k=0.1, form="other"), "form", "'other'"),
]


@pytest.mark.parametrize("call,name,value", BAD_CLAIMS)
def test_bad_claim_inputs_name_parameter_and_value(call, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        call()
    msg = str(info.value)
    assert name in msg and value in msg, msg


def test_variable_adjacency_sensitivity_covers_the_gradient_moving_with_the_variable():
    """eq. (31)'s 1 holds g_i^k fixed, but g_i^k = grad f_i(x_i^k) moves with x_i^k (here by lam a = 0.02)."""
    lam, a = 0.02, 1.0  # the estimation experiment's step; f(x) = -a x^2 / 2 near a maximum
    message = lambda x: x - lam * (-a * x)  # noqa: E731  M(x) = x - lam f'(x)
    x, x_prime = 0.0, 1.0  # ||x - x'||_1 = 1: variable-adjacent (eq. 31)
    shift = abs(message(x) - message(x_prime))  # 1.02, in L1 and L2 alike (one coordinate)
    assert shift > wang_basar_sensitivity(lam_k=lam, kind="variable_printed")  # the erratum
    bound = wang_basar_sensitivity(lam_k=lam, kind="variable", L=a)
    assert shift <= bound * (1 + REL) and bound == pytest.approx(shift, rel=REL)  # attained


def test_variable_adjacency_bound_is_l2_and_dimension_free():
    """Quadratics f = x^T A x / 2 in d = 50, ||A||_2 = L: ||M(x) - M(x')||_2 <= 1 + lam L for ||x - x'||_1 <= 1.

    Fixed seed; the worst direction x - x' = e_j (a vertex of the L1 ball) is checked for every j, plus
    200 random points of the L1 sphere. The L1 shift may exceed 1 + lam L (it is not an L1 bound).
    """
    rng = np.random.default_rng(7)
    d, lam, L = 50, 0.3, 2.0
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    A = q @ np.diag(rng.uniform(-L, L, d)) @ q.T
    A *= L / np.linalg.norm(A, 2)  # spectral norm exactly L (largest |eigenvalue|)
    bound = wang_basar_sensitivity(lam_k=lam, kind="variable", L=L)
    step = np.eye(d) - lam * A  # M(x) - M(x') = (I - lam A)(x - x')
    vertices = np.linalg.norm(step, axis=0)  # ||(I - lam A) e_j||_2
    u = rng.standard_normal((200, d))
    u /= np.abs(u).sum(axis=1, keepdims=True)
    assert vertices.max() <= bound * (1 + REL) and np.linalg.norm(u @ step.T, axis=1).max() <= bound
    assert np.abs(step).sum(axis=0).max() > bound  # the L1 shift of some vertex exceeds the L2 bound
