"""Tests for accounting.papers.dpsda, Cheng, Liao and Li (arXiv 2022): sensitivity bounds, claims, recomputed epsilons.

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
from accounting.papers.dpsda import (
    dpsda_node_sensitivity,
    dpsda_network_sensitivity,
    dpsda_claim,
    dpsda_effective_epsilon,
)

REL = 1e-12
# Example 2 of Huang, Mitra and Vaidya (ICDCN 2015): grad ||x - a||^2 = 2(x - a), |x - a| <= 2 sqrt 2 on [-1,1]^2
C2_EX2 = 4 * math.sqrt(2)


# -- Cheng, Liao and Li (arXiv 2022) -------------------------------------------------------
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


# -- Cheng, Liao and Li (arXiv 2022) -------------------------------------------------------
def test_dpsda_claim_levels():
    run, rnd = dpsda_claim(0.5, 500), dpsda_claim(0.5, 500, per="round")
    assert (run.epsilon, run.per) == (250.0, "run")
    assert (rnd.epsilon, rnd.per) == (0.5, "round")


def test_dpsda_node_level_matches_claim_network_level_does_not():
    n, L_hat, eps, T = 7, 1.3, 0.5, 50
    sigma = 2 * n * L_hat / eps  # the paper's sigma(t) = Delta/epsilon with Lemma 1's Delta
    claim = dpsda_claim(eps, T)
    node = dpsda_effective_epsilon([sigma] * T, n=n, L_hat=L_hat, level="node")
    net = dpsda_effective_epsilon([sigma] * T, n=n, L_hat=L_hat, level="network")
    assert node == pytest.approx(T * eps, rel=1e-10)
    assert net == pytest.approx(n * T * eps, rel=1e-10)
    assert verify(claim, node).holds
    v = verify(claim, net)
    assert not v.holds and v.gap == pytest.approx((n - 1) * T * eps, rel=1e-10)
    # per round, at network level, with sigma = 2 n^2 L_hat / eps: exactly eps
    assert dpsda_effective_epsilon([2 * n * n * L_hat / eps], n=n, L_hat=L_hat) == pytest.approx(eps, rel=1e-12)


# -- validation ----------------------------------------------------------------------
BAD_SENSITIVITY = [
    (dpsda_node_sensitivity, (), dict(n=3, L_hat=-1.0), "L_hat", "-1.0"),
    (dpsda_node_sensitivity, (), dict(n=3, L_hat=1.0, block_size=0), "block_size", "0"),
    (dpsda_node_sensitivity, (), dict(n=3, L_hat=1.0, clip="l1"), "clip", "'l1'"),
    (dpsda_network_sensitivity, (), dict(n=0, L_hat=1.0), "n", "0"),
]


@pytest.mark.parametrize("fn,args,kwargs,name,value", BAD_SENSITIVITY)
def test_bad_sensitivity_inputs_name_parameter_and_value(fn, args, kwargs, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert name in msg and value in msg, msg


BAD_CLAIMS = [
    (lambda: dpsda_claim(1.0, 0), "T", "0"),
    (lambda: dpsda_claim(1.0, 5, per="iteration"), "per", "'iteration'"),
    (lambda: dpsda_effective_epsilon([1.0], n=3, L_hat=1.0, level="edge"), "level", "'edge'"),
    (lambda: dpsda_effective_epsilon([0.0], n=3, L_hat=1.0), "scales[0]", "0.0"),
]


@pytest.mark.parametrize("call,name,value", BAD_CLAIMS)
def test_bad_claim_inputs_name_parameter_and_value(call, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        call()
    msg = str(info.value)
    assert name in msg and value in msg, msg


@pytest.mark.parametrize("bad", [True, "3", [1, 0, 1], [1, 2.5, 1]])
def test_dpsda_block_sizes_validated(bad):
    with pytest.raises(PrivacyParameterError, match="block_sizes"):
        dpsda_network_sensitivity(n=3, L_hat=1.0, block_sizes=bad)
