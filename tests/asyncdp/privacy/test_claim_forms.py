"""Rényi and zCDP claims through the rule's claimed_form: named, converted, refuted and confirmed."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from accounting.claim_forms import RenyiDP, ZeroConcentratedDP
from accounting.refutation import check_epsilon
from asyncdp.errors import ScenarioError
from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import claimed

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "privacy_check_gaussian_under_calibrated.py"


def _example():
    spec = importlib.util.spec_from_file_location("gaussian_under_calibrated", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class ClaimsZCDP(Showkatbakhsh):
    rho: float = 1.0

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """The form's conversion at the paper's delta (the check refuses a pair the form does not imply)."""
        return self.claimed_form(horizon).epsilon_at(self.delta), self.delta

    def claimed_form(self, horizon: int):
        return ZeroConcentratedDP(self.rho)


EX = _example()


@dataclass(frozen=True)
class ClaimsRenyi(EX.KappaWithG):
    """The under-calibrated rule (kappa with G instead of G^2) claiming a Rényi bound its noise misses."""

    def claimed_form(self, horizon: int):
        return RenyiDP(8.0, 0.01)


def _pair(rule, **kw):
    scenario, adjacent = EX.make(1e-3, None, Showkatbakhsh)
    alg = rule(epsilon=1.0, delta=1e-3, T=6, T2=2, **kw)
    return scenario.replace(algorithm=alg), adjacent.replace(algorithm=alg)


def test_a_claim_at_another_level_than_the_rules_is_refused_naming_both():
    """A ``Claim`` per run from a rule whose ``claim_level`` is per iteration (or the other way) would be read at
    the rule's level without a word: refused instead."""
    from accounting.claims import Claim

    @dataclass(frozen=True)
    class PerRun(Showkatbakhsh):
        claim_level = "iteration"

        def claimed_form(self, horizon: int):
            return Claim("a test", "the whole run", 1.0, 1e-3, "run")

    with pytest.raises(ScenarioError, match="per 'run' but the rule's claim_level is 'iteration'"):
        claimed(PerRun(epsilon=1.0, delta=1e-3, T=6), 8, 1e-6)
    agreeing = Claim("a test", "the whole run", 1.0, 1e-3, "run")
    eps, delta, form = claimed(type("Agrees", (), {"claim_level": "run",
                                                   "claimed_form": lambda self, h: agreeing})(), 8, 1e-6)
    assert (eps, delta, form.form) == (1.0, 1e-3, "approximate")


@pytest.mark.parametrize("level", ["run", "iteration"])
def test_a_claim_per_round_is_refused_at_either_level(level):
    """A ``Claim`` per ``"round"`` (one of the claims' levels) was read at the rule's level without a word: per run,
    a correct per-round bound is measured against the whole run's loss (a violation the claim never made), per
    iteration a round is taken for an iteration. The check reads claims per run or per iteration only."""
    from accounting.claims import Claim

    @dataclass(frozen=True)
    class PerRound(Showkatbakhsh):
        claim_level = level

        def claimed_form(self, horizon: int):
            return Claim("a test", "one round", 1.0, 1e-3, "round")

    with pytest.raises(ScenarioError, match="per 'round'"):
        claimed(PerRound(epsilon=1.0, delta=1e-3, T=6), 8, 1e-6)


def test_a_claim_form_the_rule_cannot_build_names_the_rule_and_method():
    """``ZeroConcentratedDP(nan)`` (a rho computed from a bad constant) inside ``claimed_form`` was reported as
    ``rho must be finite, got nan`` alone: neither the rule nor where the claim came from."""
    from asyncdp.algorithms.base import claimed_pair

    rule = ClaimsZCDP(epsilon=1.0, delta=1e-3, T=6, rho=float("nan"))
    for call in (lambda: claimed(rule, 8, 1e-6), lambda: claimed_pair(rule, 8)):
        with pytest.raises(ScenarioError, match=r"^showkatbakhsh: claimed_form\(8\) cannot state the claim: rho must "
                                                r"be finite, got nan"):
            call()
    # the check itself: its claimed_privacy (the form's conversion) is read first, by the adjacency check
    with pytest.raises(ScenarioError, match=r"^showkatbakhsh: claimed_privacy\(8\) cannot state the claim: rho must "
                                            r"be finite, got nan"):
        check_privacy(*_pair(ClaimsZCDP, rho=float("nan")), runs=20, search_examples=0)


def test_a_zcdp_claim_is_checked_through_its_conversion_at_the_checks_delta():
    eps, delta, form = claimed(ClaimsZCDP(epsilon=1.0, delta=1e-3, T=6, rho=0.3), 8, 1e-6)
    assert form.form == "zcdp" and delta == 1e-6 and eps == pytest.approx(check_epsilon(form, 1e-6))
    with pytest.raises(ScenarioError, match="delta"):
        claimed(ClaimsZCDP(epsilon=1.0, delta=1e-3, T=6, rho=0.3), 8, 0.0)


def test_a_far_too_small_renyi_claim_is_refuted_and_the_report_names_its_form(tmp_path):
    scenario, adjacent = _pair(ClaimsRenyi)
    report = check_privacy(scenario, adjacent, runs=1000, search_examples=5, delta=1e-5)
    assert report.verdict == "violation"
    form = next(e for e in report.evidence if e.method == "claim form")
    assert form.figures["claim_form"] == "renyi" and "implies" in form.figures["claim_conversion"]
    assert form.figures["delta_meaning"] and form.figures["claim_scope"]
    json.dumps(form.to_dict())  # JSON-ready


def test_a_generous_zcdp_claim_is_not_refuted_and_is_confirmed_by_the_accountant():
    scenario, adjacent = _pair(ClaimsZCDP, rho=50.0)
    report = check_privacy(scenario, adjacent, runs=400, search_examples=0, delta=1e-5)
    assert report.verdict != "violation"
    form = next(e for e in report.evidence if e.method == "claim form")
    assert form.figures["claim_confirmed"] is True and form.doubt is None


def test_an_unconfirmed_zcdp_claim_never_passes():
    # rho a little below the accountant's own zCDP of this rule (about 0.023): not confirmed, so never `pass`
    scenario, adjacent = _pair(ClaimsZCDP, rho=0.02)
    report = check_privacy(scenario, adjacent, runs=400, search_examples=0, delta=1e-5)
    assert report.verdict != "pass"
    form = next(e for e in report.evidence if e.method == "claim form")
    assert form.figures["claim_confirmed"] is False
