"""Tests for accounting.papers: the AccountantSpec records, their discovery, the assumption sets."""

from __future__ import annotations

import pickle

import pytest

from accounting.errors import AccountingError
from accounting.papers import ACCOUNTANTS, PARTS, AccountantSpec, NotSupportedError, get_accountant
from accounting.papers import dpsda, huang2015, muffliato, showkatbakhsh, wang_basar


def test_every_algorithm_has_one_record_and_names_are_unique():
    assert set(ACCOUNTANTS) == {"huang2015", "showkatbakhsh", "wang-basar", "dpsda-c", "dpsda-ps", "muffliato"}
    assert ACCOUNTANTS["dpsda-c"] is ACCOUNTANTS["dpsda-ps"] is dpsda.SPEC
    for mod in (huang2015, showkatbakhsh, wang_basar, dpsda, muffliato):
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


def test_claims_pickle_round_trip():
    claim = huang2015.huang2015_claim(0.5)
    assert pickle.loads(pickle.dumps(claim)) == claim


def test_every_paper_module_is_discovered():
    import pkgutil

    import accounting.papers as pkg

    modules = {m.name for m in pkgutil.iter_modules(pkg.__path__)} - {"spec"}
    assert modules == {"huang2015", "showkatbakhsh", "wang_basar", "dpsda", "muffliato"}
    assert {spec.paper for spec in ACCOUNTANTS.values()} == {
        m.SPEC.paper for m in (huang2015, showkatbakhsh, wang_basar, dpsda, muffliato)}

