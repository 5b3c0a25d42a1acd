"""Tests for accounting.papers: the AccountantSpec records, their registry and the old module paths."""

from __future__ import annotations

import pickle

import pytest

import accounting
from accounting import sensitivity as old_sensitivity
from accounting import theorems as old_theorems
from accounting.claims import Claim
from accounting.errors import AccountingError
from accounting.papers import ACCOUNTANTS, PARTS, AccountantSpec, NotSupportedError, get_accountant
from accounting.papers import dpsda, huang2015, showkatbakhsh, wang_basar


def test_every_algorithm_has_one_record_and_names_are_unique():
    assert set(ACCOUNTANTS) == {"huang2015", "showkatbakhsh", "wang-basar", "dpsda-c", "dpsda-ps"}
    assert ACCOUNTANTS["dpsda-c"] is ACCOUNTANTS["dpsda-ps"] is dpsda.SPEC
    for mod in (huang2015, showkatbakhsh, wang_basar, dpsda):
        assert all(ACCOUNTANTS[n] is mod.SPEC for n in mod.SPEC.names)


@pytest.mark.parametrize("name", sorted(ACCOUNTANTS))
def test_every_record_has_sensitivity_claim_and_effective_epsilon(name):
    spec = get_accountant(name)
    for part in PARTS:
        assert spec.supports(part), part
        assert callable(spec.require(part))
    # Laplace mechanisms need L1, Gaussian L2
    assert (spec.mechanism, spec.norm) in {("laplace", "l1"), ("gaussian", "l2")}


def test_missing_part_and_unknown_name_raise_not_supported():
    toy = AccountantSpec(names=("toy-a", "toy-b"), paper="toy paper", mechanism="laplace", norm="l1",
                         sensitivity=lambda t: 1.0)
    assert toy.supports("sensitivity") and not toy.supports("noise_scale")
    with pytest.raises(NotSupportedError, match=r"noise_scale is not supported for this algorithm .*toy-a, toy-b"):
        toy.require("noise_scale")
    with pytest.raises(NotSupportedError, match=r"not supported for this algorithm: 'mine'.*known: dpsda-c"):
        get_accountant("mine")
    with pytest.raises(AccountingError, match="part must be one of"):
        huang2015.SPEC.supports("verdict")
    assert isinstance(NotSupportedError("x"), LookupError)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(names=(), paper="p", mechanism="laplace", norm="l1"), "names"),
        (dict(names="abc", paper="p", mechanism="laplace", norm="l1"), "names"),
        (dict(names=("a",), paper="p", mechanism="exponential", norm="l1"), "mechanism"),
        (dict(names=("a",), paper="p", mechanism="laplace", norm="linf"), "norm"),
    ],
)
def test_spec_rejects_bad_fields(kwargs, match):
    with pytest.raises(AccountingError, match=match):
        AccountantSpec(**kwargs)


def test_parts_are_the_spec_fields_that_may_be_missing():
    spec = AccountantSpec(names=("toy",), paper="toy", mechanism="gaussian", norm="l2")
    assert [p for p in PARTS if spec.supports(p)] == []


def test_old_paths_export_the_same_objects():
    assert old_sensitivity.huang2015_sensitivity is huang2015.huang2015_sensitivity
    assert old_sensitivity.wang_basar_sensitivity is wang_basar.wang_basar_sensitivity
    assert old_sensitivity.dpsda_network_sensitivity is dpsda.dpsda_network_sensitivity
    assert old_theorems.Claim is Claim is accounting.Claim
    assert old_theorems.showkatbakhsh_claim is showkatbakhsh.showkatbakhsh_claim
    modules = (huang2015, showkatbakhsh, wang_basar, dpsda)
    for old in (old_sensitivity, old_theorems):
        for name in old.__all__:
            homes = [m for m in (*modules, accounting.claims) if getattr(m, name, None) is getattr(old, name)]
            assert homes, f"{old.__name__}.{name} is not the object of its new module"


def test_claims_pickled_under_the_old_path_load():
    claim = huang2015.huang2015_claim(0.5)
    assert pickle.loads(pickle.dumps(claim)) == claim
    # a pickle that names accounting.theorems.Claim (the previous layout) still resolves
    data = pickle.dumps(claim, protocol=0).replace(b"accounting.claims", b"accounting.theorems")
    assert b"accounting.theorems" in data
    assert pickle.loads(data) == claim

