"""The privacy-check report: the verdict's epsilon is stated first, with where it comes from."""

from __future__ import annotations

import json
import math

import pytest

from asyncdp.privacy import PrivacyCheckReport


def _report(epsilon_ledger: float, epsilon_at_claimed_delta: float | None) -> PrivacyCheckReport:
    return PrivacyCheckReport(
        algorithm="a", changed_agent=0, epsilon_claimed=1.0, delta_claimed=1e-3 if epsilon_at_claimed_delta else 0.0,
        epsilon_ledger=epsilon_ledger, epsilon_tight=0.9, delta=1e-6, sensitivity_probe_max=0.0,
        sensitivity_probe_ratio=0.0, replay_max_loss=None, replay_exceed_fraction=None, replay_runs=0,
        empirical_epsilon_lower_bound=0.0, confidence=0.95, theorem="-", verdict="pass", witness=None,
        reasons=["r1"], epsilon_at_claimed_delta=epsilon_at_claimed_delta,
    )


@pytest.mark.parametrize(("ledger", "pld", "expected", "source"), [
    (6.9, 0.56, 0.56, "PLD at the claimed delta; basic composition: 6.9"),
    (0.4, 0.56, 0.4, "basic composition; PLD at the claimed delta: 0.56"),
    (0.8, None, 0.8, "basic composition"),
    (math.inf, 0.7, 0.7, "PLD at the claimed delta; basic composition: inf"),
])
def test_headline_names_the_verdicts_epsilon_and_its_source(ledger, pld, expected, source):
    report = _report(ledger, pld)
    assert report.epsilon_accountant == expected
    verdict, claim, accountant, blank = report.to_table().splitlines()[:4]
    assert verdict.split() == ["verdict", "pass"]
    assert claim.split()[:3] == ["claim", "epsilon", "1,"]
    assert accountant.startswith("accountant's epsilon") and accountant.endswith(f"{expected:.6g} ({source})")
    assert blank == ""


def test_every_field_still_listed_once_and_reasons_last():
    table = _report(6.9, 0.56).to_table().splitlines()
    keys = [line.split()[0] for line in table[4:] if line and not line.startswith("  - ")]
    # the worst pair's script is written to a file (--worst-pair), not printed
    fields = [k for k in PrivacyCheckReport.__dataclass_fields__ if k not in ("reasons", "verdict",
                                                                               "worst_pair_script")]
    assert sorted(keys) == sorted(fields)
    assert table[-1] == "  - r1"


def test_json_carries_the_verdicts_epsilon():
    d = json.loads(json.dumps(_report(math.inf, None).to_dict()))
    assert d["epsilon_accountant"] == d["epsilon_ledger"] == "inf"


def _lines(report: PrivacyCheckReport) -> dict[str, str]:
    return {line.split()[0]: line for line in report.to_table().splitlines() if line and not line.startswith(" ")}


def test_pure_claim_says_what_the_delta_row_is():
    report = _report(0.8, None)  # pure claim: delta_claimed 0, --delta 1e-6
    assert _lines(report)["delta"].split(None, 1)[1] == \
        "1e-06 (the check's delta (--delta), used only for epsilon_tight; the claim is pure (delta 0))"
    approx = _report(0.8, 0.56)  # claimed delta 1e-3
    assert _lines(approx)["delta"].split(None, 1)[1] == \
        "1e-06 (the check's delta (--delta), used only for epsilon_tight)"


@pytest.mark.parametrize(("tight", "ledger", "pld", "because"), [
    (0.9, 0.8, None, None),  # below the claim: nothing to explain
    (1.0007, 0.8, None, "the PLD rounds privacy losses up to its grid (pessimistic discretization)"),
    (1.5, 0.8, 0.56, "it is taken at delta 1e-06, below the claimed 0.001"),
    (2.0007, 2.0, None, "the declared noise spends more than the claim (the accountant's epsilon is 2; see the "
                        "verdict)"),
])
def test_epsilon_tight_above_the_claim_says_why(tight, ledger, pld, because):
    import dataclasses

    report = dataclasses.replace(_report(ledger, pld), epsilon_tight=tight)
    line = _lines(report)["epsilon_tight"]
    assert f"{tight:.6g} (PLD at delta = 1e-06, the check's delta (--delta); a figure for comparison, not the " \
           "verdict's bound (the accountant's epsilon above)" in line
    if because is None:
        assert "above the claim" not in line
    else:
        assert line.endswith(f"; above the claim because {because})")
