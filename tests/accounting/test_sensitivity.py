"""Tests for accounting.sensitivity: hand values, indexing, block versions, validation.

Tolerances: each bound is a product of at most five floating-point factors, so
its relative rounding error is below 1e-15; comparisons use rel=1e-12.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounting.errors import PrivacyParameterError
from accounting.sensitivity import (
    dpsda_network_sensitivity,
    dpsda_node_sensitivity,
    huang2015_release_sensitivity,
    huang2015_sensitivity,
    showkatbakhsh_release_sensitivity,
    showkatbakhsh_sensitivity,
    wang_basar_sensitivity,
)

REL = 1e-12
C2_EX2 = 4 * math.sqrt(2)  # seed 003, Example 2: grad ||x - a||^2 = 2(x - a), |x - a| <= 2 sqrt 2 on [-1,1]^2


# -- seed 003 ------------------------------------------------------------------------------
def test_huang_hand_values():
    # 2 * 4 sqrt2 * sqrt2 * 0.1 = 1.6 ; then times q = 0.5 per round
    kw = dict(C2=C2_EX2, n=2, c=0.1, q=0.5)
    assert huang2015_sensitivity(0, **kw) == 0.0
    assert huang2015_sensitivity(1, **kw) == pytest.approx(1.6, rel=REL)
    assert huang2015_sensitivity(2, **kw) == pytest.approx(0.8, rel=REL)
    assert huang2015_sensitivity(3, **kw) == pytest.approx(0.4, rel=REL)


def test_huang_release_is_shifted_by_one_round():
    kw = dict(C2=C2_EX2, n=2, c=0.1, q=0.5)
    assert huang2015_release_sensitivity(1, **kw) == 0.0  # y(1) masks x(0)
    for t in range(2, 12):
        assert huang2015_release_sensitivity(t, **kw) == huang2015_sensitivity(t - 1, **kw)
    assert huang2015_release_sensitivity(2, **kw) == pytest.approx(1.6, rel=REL)


@given(
    t=st.integers(1, 200),
    C2=st.floats(1e-3, 1e3),
    n=st.integers(1, 50),
    c=st.floats(1e-3, 10),
    q=st.floats(0.01, 0.99),
)
def test_huang_is_geometric(t, C2, n, c, q):
    kw = dict(C2=C2, n=n, c=c, q=q)
    d1 = huang2015_sensitivity(1, **kw)
    assert d1 == pytest.approx(2 * C2 * math.sqrt(n) * c, rel=REL)
    assert huang2015_sensitivity(t + 1, **kw) == pytest.approx(q * huang2015_sensitivity(t, **kw), rel=1e-10)


# -- seed 000 ------------------------------------------------------------------------------
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


# -- seed 001 ------------------------------------------------------------------------------
def test_wang_basar_printed_values():
    assert wang_basar_sensitivity(lam_k=0.5, kind="sample", nu=2.0, n_i=10) == pytest.approx(0.1, rel=REL)  # (28)
    assert wang_basar_sensitivity(lam_k=0.02, kind="gradient") == 0.02  # (30)
    assert wang_basar_sensitivity(lam_k=0.02, kind="variable") == 1.0  # (31)
    assert wang_basar_sensitivity(lam_k=0.5, kind="sample_replace", G=3.0, n_i=10) == pytest.approx(0.3, rel=REL)


@pytest.mark.parametrize("kind", ["sample", "gradient", "variable", "sample_replace"])
def test_wang_basar_noise_units_divide_by_step(kind):
    kw = dict(nu=2.0, n_i=10, G=3.0)
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


# -- seed 004 ------------------------------------------------------------------------------
def test_dpsda_hand_values():
    assert dpsda_node_sensitivity(n=7, L_hat=1.5) == pytest.approx(21.0, rel=REL)
    assert dpsda_network_sensitivity(n=7, L_hat=1.5) == pytest.approx(2 * 49 * 1.5, rel=REL)
    # blocks of 3 coordinates: per-coordinate clipping x3, L2 clipping x sqrt 3
    assert dpsda_node_sensitivity(n=7, L_hat=1.0, block_size=3) == pytest.approx(42.0, rel=REL)
    assert dpsda_node_sensitivity(n=7, L_hat=1.0, block_size=3, clip="l2") == pytest.approx(14 * math.sqrt(3), rel=REL)
    # unequal blocks: sum of the per-node values
    assert dpsda_network_sensitivity(n=2, L_hat=1.0, block_sizes=[1, 3]) == pytest.approx(4 * 1 + 4 * 3, rel=REL)
    assert dpsda_network_sensitivity(n=2, L_hat=1.0, block_sizes=[1, 4], clip="l2") == pytest.approx(4 + 8, rel=REL)


@given(
    n=st.integers(1, 60),
    L_hat=st.floats(0, 1e3),
    d=st.integers(1, 50),
    clip=st.sampled_from(["coordinate", "l2"]),
)
def test_dpsda_network_is_n_times_node(n, L_hat, d, clip):
    node = dpsda_node_sensitivity(n=n, L_hat=L_hat, block_size=d, clip=clip)
    net = dpsda_network_sensitivity(n=n, L_hat=L_hat, block_sizes=d, clip=clip)
    assert net == pytest.approx(n * node, rel=1e-12, abs=0.0)
    if d == 1:
        assert net == pytest.approx(2 * n * n * L_hat, rel=1e-12, abs=0.0)


def test_dpsda_block_sizes_length_checked():
    with pytest.raises(PrivacyParameterError, match=r"block_sizes must have n=3 entries, got 2"):
        dpsda_network_sensitivity(n=3, L_hat=1.0, block_sizes=[1, 2])


# -- validation ----------------------------------------------------------------------------
BAD = [
    (huang2015_sensitivity, (-1,), dict(C2=1.0, n=2, c=0.1, q=0.5), "t", "-1"),
    (huang2015_sensitivity, (1,), dict(C2=-1.0, n=2, c=0.1, q=0.5), "C2", "-1.0"),
    (huang2015_sensitivity, (1,), dict(C2=1.0, n=0, c=0.1, q=0.5), "n", "0"),
    (huang2015_sensitivity, (1,), dict(C2=1.0, n=2, c=-0.1, q=0.5), "c", "-0.1"),
    (huang2015_sensitivity, (1,), dict(C2=1.0, n=2, c=0.1, q=1.5), "q", "1.5"),
    (huang2015_sensitivity, (1,), dict(C2=float("nan"), n=2, c=0.1, q=0.5), "C2", "nan"),
    (huang2015_release_sensitivity, (0,), dict(C2=1.0, n=2, c=0.1, q=0.5), "t", "0"),
    (showkatbakhsh_sensitivity, (0,), dict(G=1.0, c=1.0), "t", "0"),
    (showkatbakhsh_sensitivity, (1,), dict(G=-2.0, c=1.0), "G", "-2.0"),
    (showkatbakhsh_sensitivity, (1,), dict(G=1.0, eta_t=-0.5), "eta_t", "-0.5"),
    (wang_basar_sensitivity, (), dict(lam_k=0.0), "lam_k", "0.0"),
    (wang_basar_sensitivity, (), dict(lam_k=0.1, kind="sample", nu=-1.0, n_i=3), "nu", "-1.0"),
    (wang_basar_sensitivity, (), dict(lam_k=0.1, units="bits"), "units", "'bits'"),
    (dpsda_node_sensitivity, (), dict(n=3, L_hat=-1.0), "L_hat", "-1.0"),
    (dpsda_node_sensitivity, (), dict(n=3, L_hat=1.0, block_size=0), "block_size", "0"),
    (dpsda_node_sensitivity, (), dict(n=3, L_hat=1.0, clip="l1"), "clip", "'l1'"),
    (dpsda_network_sensitivity, (), dict(n=0, L_hat=1.0), "n", "0"),
]


@pytest.mark.parametrize("fn,args,kwargs,name,value", BAD)
def test_bad_inputs_name_parameter_and_value(fn, args, kwargs, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert name in msg and value in msg, msg


def test_bool_is_not_an_integer():
    with pytest.raises(PrivacyParameterError, match="t must be an integer, got True"):
        huang2015_sensitivity(True, C2=1.0, n=2, c=0.1, q=0.5)


@pytest.mark.parametrize("bad", [True, "3", [1, 0, 1], [1, 2.5, 1]])
def test_dpsda_block_sizes_validated(bad):
    with pytest.raises(PrivacyParameterError, match="block_sizes"):
        dpsda_network_sensitivity(n=3, L_hat=1.0, block_sizes=bad)
