"""Tests for accounting.claims: the generic Claim record and the verifier (moved from tests/accounting/test_theorems.py)."""

from __future__ import annotations

import math

import pytest

from accounting.claims import Claim, verify
from accounting.errors import PrivacyParameterError


def test_verify_delta_and_tolerance():
    claim = Claim("p", "s", 1.0, 1e-5, "run")
    assert verify(claim, 1.0 + 1e-12, 1e-5).holds  # within rtol = 1e-9
    assert not verify(claim, 1.0 + 1e-6, 1e-5).holds
    v = verify(claim, 0.5, 2e-5)
    assert not v.holds and v.delta_gap == pytest.approx(1e-5) and v.gap == -0.5
    assert not verify(claim, math.inf).holds


BAD_CLAIMS = [
    (lambda: Claim("p", "s", 0.0, 0.0, "run"), "epsilon", "0.0"),
    (lambda: Claim("p", "s", 1.0, 1.0, "run"), "delta", "1.0"),
    (lambda: Claim("p", "s", 1.0, 0.0, "epoch"), "per", "'epoch'"),
    (lambda: verify(Claim("p", "s", 1.0, 0.0, "run"), -1.0), "computed_epsilon", "-1.0"),
    (lambda: verify(Claim("p", "s", 1.0, 0.0, "run"), 1.0, 1.5), "computed_delta", "1.5"),
]


@pytest.mark.parametrize("call,name,value", BAD_CLAIMS)
def test_bad_claim_inputs_name_parameter_and_value(call, name, value):
    with pytest.raises(PrivacyParameterError) as info:
        call()
    msg = str(info.value)
    assert name in msg and value in msg, msg
