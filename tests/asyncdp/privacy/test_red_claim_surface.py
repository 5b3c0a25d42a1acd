"""The claim as a rule states it, read by the check: malformed ``(epsilon, delta)`` claims are refused with one
``ScenarioError`` naming the rule and the value (on the command line one ``asyncdp: error:`` line, exit 2), never a
traceback or a silent coercion.

``claimed`` unpacked a tuple claim with ``eps, dl = (float(v) for v in raw)``: a claim of one or three numbers, or one
holding ``None``, raised a bare ``ValueError``/``TypeError`` (a traceback on the command line, exit 1), and a string
``"1"`` or a bool ``True`` was read as the number 1 without a word.
"""

from __future__ import annotations

import math

import pytest

from accounting.claim_forms import RenyiDP, ZeroConcentratedDP
from asyncdp.errors import ScenarioError
from asyncdp.privacy.context import claimed


class _Rule:
    """A stand-in rule: the claim is all :func:`claimed` reads."""

    name = "red-claim-surface"
    claim_level = "run"

    def __init__(self, raw: object, *, form: bool) -> None:
        self.raw = raw
        if form:
            self.claimed_form = lambda horizon: self.raw

    def claimed_privacy(self, horizon: int) -> object:
        return self.raw


BAD = {
    "one number": (1.0,),
    "three numbers": (1.0, 1e-6, 3),
    "None epsilon": (None, 0.0),
    "None delta": (1.0, None),
    "string epsilon": ("1", 0.0),
    "bool epsilon": (True, 0.0),
    "bool delta": (1.0, False),
}


@pytest.mark.parametrize("form", [False, True], ids=["claimed_privacy", "claimed_form"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_tuple_claim_is_refused_naming_the_rule_and_the_value(case, form):
    raw = BAD[case]
    with pytest.raises(ScenarioError, match=r"red-claim-surface: the claim .* is not an \(epsilon, delta\) pair"):
        claimed(_Rule(raw, form=form), 10, 1e-6)


@pytest.mark.parametrize("raw, expected", [((1, 0), (1.0, 0.0, "pure")), ((2.0, 1e-5), (2.0, 1e-5, "approximate")),
                                           ((float("inf"), 1e-6), (float("inf"), 1e-6, None))])
def test_well_formed_tuple_claims_still_read(raw, expected):
    eps, delta, form = claimed(_Rule(raw, form=False), 10, 1e-6)
    assert (eps, delta, None if form is None else form.form) == expected


def test_the_engines_refuse_a_malformed_claim_with_a_scenario_error():
    """``asyncdp run`` records the claim in every result: both engines (and the batch engine's deadline path) unpacked
    it bare, so a claim of three numbers was a traceback there too."""
    import sys
    from dataclasses import dataclass
    from typing import ClassVar

    import topology
    from asyncdp import Deadline
    from asyncdp.engine.batch_engine import run_batch
    from asyncdp.engine.simpy_engine import run_simpy

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py

    @dataclass(frozen=True)
    class ThreeNumbers(noisy_dgd.NoisyDGD):
        name: ClassVar[str] = "red-three-numbers"

        def claimed_privacy(self, horizon: int):
            return 1.0, 1e-6, 3

    scenario, _ = noisy_dgd.rendezvous_pair(ThreeNumbers(), topology.static(noisy_dgd.ring(3)), 3)
    for run in (run_simpy, lambda sc: run_batch(sc, 2), lambda sc: run_batch(sc.replace(timing=Deadline(1.0)), 2)):
        with pytest.raises(ScenarioError, match=r"red-three-numbers: the claim \(1.0, 1e-06, 3\) is not an"):
            run(scenario)


# -- a Claim with a Rényi or zCDP form and its own (epsilon, delta) statement -----------------------------------------

def _claim_pair(claim):
    """The fixture's clipped Gaussian rule (``T = 12``, ring of 5) stating ``claim`` through ``claimed_form``."""
    import sys
    from dataclasses import dataclass
    from typing import Any, ClassVar

    import topology

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py

    @dataclass(frozen=True)
    class States(noisy_dgd.NoisyDGD):
        claim: Any = None
        name: ClassVar[str] = "red-claim-statement"

        def claimed_form(self, horizon: int) -> Any:
            return self.claim

    return States, noisy_dgd.rendezvous_pair(States(claim=claim), topology.static(noisy_dgd.ring(5)), 12)


def test_a_claims_own_epsilon_delta_statement_the_form_does_not_imply_is_not_dropped():
    """``Claim(paper, statement, 0.5, 1e-6, "run", form=ZeroConcentratedDP(0.33))`` states two things: 0.33-zCDP
    (true) and (0.5, 1e-6)-DP (false). The check read the form alone and said ``pass``, its report showing the
    form's conversion (3.9 at 1e-6) as "the claim". Independent truth: each agent's 11 releases from round 2 on move
    by at most ``2 a C = 0.2`` with ``sigma = 1`` (the fixture's lemma), and opposite linear costs reach it, so the
    worst pair is a Gaussian pair with ``mu = 0.2 sqrt(11)``, whose closed-form ``delta(0.5)`` is about 0.1, far above
    1e-6. Now refused, naming both statements."""
    import math
    import sys

    from scipy.stats import norm

    from accounting.claims import Claim
    from asyncdp.papers import GradientClass
    from asyncdp.privacy import check_privacy

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    mu = 2 * noisy_dgd.STEP * noisy_dgd.CLIP / noisy_dgd.SIGMA * math.sqrt(11)
    eps = 0.5
    true_delta = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)  # Gaussian profile
    assert true_delta > 0.05  # the (0.5, 1e-6) statement is false
    rule, (scenario, adjacent) = _claim_pair(Claim("a test", "Theorem 1", eps, 1e-6, "run",
                                                   form=ZeroConcentratedDP(0.33)))  # 1.5 times mu^2 / 2
    with noisy_dgd.registered((rule,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        with pytest.raises(ScenarioError, match=r"red-claim-statement: the claim states \(0\.5, 1e-06\)-DP besides "
                                                r"0\.33-zCDP, which does not imply it"):
            check_privacy(scenario, adjacent, runs=200, search_examples=0)


def test_a_claim_whose_statement_is_the_forms_conversion_is_still_checked():
    """The paper records' usage (Muffliato's ``Claim``: the standard RDP conversion as its ``(epsilon, delta)``):
    implied by the form, so the form is checked as before (a true claim: ``pass``)."""
    import math
    import sys

    from accounting.claim_forms import rdp_to_dp
    from accounting.claims import Claim
    from asyncdp.papers import GradientClass
    from asyncdp.privacy import check_privacy

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    rho = 11 * (2 * noisy_dgd.STEP * noisy_dgd.CLIP / noisy_dgd.SIGMA) ** 2 / 2
    alpha = 8.0
    statement = rdp_to_dp(alpha, 1.01 * alpha * rho, 1e-6, improved=False)
    rule, (scenario, adjacent) = _claim_pair(Claim("a test", "Theorem 1", statement, 1e-6, "run",
                                                   form=RenyiDP(alpha, 1.01 * alpha * rho)))
    with noisy_dgd.registered((rule,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        report = check_privacy(scenario, adjacent, runs=300, search_examples=0)
    assert report.verdict == "pass", report.reasons
    assert not math.isclose(report.epsilon_claimed, statement)  # the form's (improved) conversion is what is tested


def test_a_pure_statement_beside_a_renyi_form_is_refused():
    """``delta = 0`` beside a Rényi form states pure DP, which no Rényi or zCDP bound implies."""
    from accounting.claims import Claim

    rule, _ = _claim_pair(None)
    claim = Claim("a test", "Theorem 1", 1.0, 0.0, "run", form=RenyiDP(2.0, 0.1))
    with pytest.raises(ScenarioError, match=r"states \(1, 0\)-DP besides \(alpha=2, epsilon=0\.1\)-RDP"):
        claimed(rule(claim=claim), 12, 1e-6)


def _two_statements(pair, form):
    """A rule of the fixture stating ``pair`` through its own ``claimed_privacy`` beside ``form`` from
    ``claimed_form``, and a subclass claiming ``form`` under a parent that states only ``pair``."""
    import sys
    from dataclasses import dataclass
    from typing import Any, ClassVar

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]

    @dataclass(frozen=True)
    class Both(noisy_dgd.NoisyDGD):
        name: ClassVar[str] = "red-claim-both"

        def claimed_privacy(self, horizon: int) -> tuple[float, float]:
            return pair

        def claimed_form(self, horizon: int) -> Any:
            return form

    @dataclass(frozen=True)
    class Paper(noisy_dgd.NoisyDGD):
        name: ClassVar[str] = "red-claim-paper"

        def claimed_privacy(self, horizon: int) -> tuple[float, float]:
            return pair

    @dataclass(frozen=True)
    class OtherForm(Paper):
        name: ClassVar[str] = "red-claim-other-form"

        def claimed_form(self, horizon: int) -> Any:
            return form

    return Both(), OtherForm()


def test_a_rules_own_claimed_privacy_the_form_does_not_imply_is_refused():
    """A user's DP gradient tracking returned ``(0.5, 1e-6)`` from ``claimed_privacy`` (its abstract's claim) and
    ``0.27``-zCDP from ``claimed_form`` (what its lemma composes to). ``asyncdp run`` and sweeps record the pair as
    ``epsilon_claimed 0.5``; the check tested the form alone and said ``pass``. The pair is false: the fixture's
    worst pair is a Gaussian of ``mu = 0.2 sqrt(11)`` (as above), whose ``delta(0.5)`` is about 0.1. Refused now,
    as a ``Claim`` stating both is; a pair the form implies (its conversion) and ``(inf, 0)`` are read as before."""
    form = ZeroConcentratedDP(0.33)
    both, _ = _two_statements((0.5, 1e-6), form)
    with pytest.raises(ScenarioError, match=r"red-claim-both: claimed_privacy states \(0\.5, 1e-06\)-DP \(the claim "
                                            r"asyncdp run and sweeps record\) besides claimed_form's 0\.33-zCDP"):
        claimed(both, 12, 1e-6)
    implied, _ = _two_statements((form.epsilon_at(1e-6), 1e-6), form)
    assert claimed(implied, 12, 1e-6)[2] is form
    base, _ = _two_statements((math.inf, 0.0), form)  # "no claim" beside the form
    assert claimed(base, 12, 1e-6)[2] is form


def test_a_pair_inherited_from_a_paper_the_subclass_form_does_not_imply_is_refused():
    """A subclass of a paper's rule (less noise, say) claiming a zCDP form inherits the paper's ``claimed_privacy``:
    ``asyncdp run`` and sweeps record that pair as the subclass's claim (:func:`claimed_pair`), while the check tested
    the form alone and said ``pass`` (showkatbakhsh with a tenth of its noise claiming 50-zCDP: ``pass``, recorded
    ``(1, 1e-3)``, which the same rule claiming that pair gets ``violation`` for). Refused like the rule's own pair,
    naming the class it is inherited from; the pair the form implies is read as before."""
    from asyncdp.algorithms.base import claimed_pair

    form = ZeroConcentratedDP(0.33)
    _, other = _two_statements((0.5, 1e-6), form)
    assert claimed_pair(other, 12) == (0.5, 1e-6)  # what asyncdp run records for the subclass
    with pytest.raises(ScenarioError, match=r"red-claim-other-form: claimed_privacy \(inherited from Paper\) states "
                                            r"\(0\.5, 1e-06\)-DP .* besides claimed_form's 0\.33-zCDP"):
        claimed(other, 12, 1e-6)
    _, implied = _two_statements((form.epsilon_at(1e-6), 1e-6), form)
    assert claimed(implied, 12, 1e-6)[2] is form


# -- what the report says the claim is --------------------------------------------------------------------------------

@pytest.mark.parametrize("form", [ZeroConcentratedDP(0.33), RenyiDP(8.0, 8 * 0.33)], ids=["zcdp", "renyi"])
def test_the_report_names_the_claims_form_not_only_its_conversion(form):
    """The report (table headline and JSON) gave a Rényi or zCDP claim as ``epsilon 3.92, delta 1e-06`` only, its
    conversion at ``--delta``, and said ``--delta`` was "used only for epsilon_tight": a reader of the JSON saw an
    ``(epsilon, delta)`` claim that the rule never made, and a delta row that misstated what the verdict rests on.
    Now ``claim`` (the form as a dict) and ``claim_form`` are fields, the headline names the form and its
    conversion, and the delta row says it is where the claim is converted."""
    import json
    import sys

    from asyncdp.papers import GradientClass
    from asyncdp.privacy import check_privacy

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    rule, (scenario, adjacent) = _claim_pair(form)
    with noisy_dgd.registered((rule,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        report = check_privacy(scenario, adjacent, runs=200, search_examples=0)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["claim_form"] == form.form and data["claim"] == form.to_dict()
    assert data["epsilon_claimed"] == pytest.approx(form.epsilon_at(1e-6)) and data["delta_claimed"] == 1e-6
    headline = report.to_table().splitlines()[1]
    assert headline.split(None, 1)[1] == (f"{form.describe()}, tested as stated (the accountant's own divergences, "
                                          "the worst pairs' divergence bounds) and through its conversion to epsilon "
                                          f"{form.epsilon_at(1e-6):.6g} at delta 1e-06 (--delta)")
    delta_row = next(line for line in report.to_table().splitlines() if line.startswith("delta "))
    assert "where the claim is converted to (epsilon, delta)" in delta_row and "used only" not in delta_row


def test_the_report_of_an_epsilon_delta_claim_names_its_form():
    from asyncdp.privacy.context import small_example
    from asyncdp.privacy import check_privacy

    pair, _ = small_example()
    data = check_privacy(pair.scenario, pair.adjacent, runs=100, search_examples=0).to_dict()
    assert data["claim_form"] == "pure" and data["claim"] == {"form": "pure", "epsilon": data["epsilon_claimed"]}


@pytest.mark.parametrize("level", ["iterations", "Iteration", "round", "per-iteration", None])
def test_an_unknown_claim_level_is_refused_naming_it(level):
    """``claim_level`` other than ``"run"`` or ``"iteration"`` (a typo of a per-iteration claim) was read as
    ``"run"`` without a word: a correct per-iteration claim then measured against the whole run's loss (a violation
    the rule never risked), with no reason naming the level."""
    rule = _Rule((1.0, 1e-6), form=False)
    rule.claim_level = level
    with pytest.raises(ScenarioError, match=r"red-claim-surface: claim_level must be 'run' or 'iteration', got "):
        claimed(rule, 10, 1e-6)


def test_a_confidence_whose_per_method_share_rounds_to_one_is_refused_naming_it():
    """``--confidence 0.9999999999999999`` is in (0, 1), but each statistical method's ``1 - (1 - c) / 4`` rounds to 1:
    the replay's auditor then refused "confidence 1.0", a number the user never gave, deep inside a step."""
    from asyncdp.privacy.context import STATISTICAL_METHODS, CheckOptions

    c = 0.9999999999999999
    assert c < 1 and 1 - (1 - c) / STATISTICAL_METHODS == 1.0
    with pytest.raises(ScenarioError, match=r"check_privacy: confidence 0\.9999999999999999 leaves each of the "
                                            rf"{STATISTICAL_METHODS} statistical methods"):
        CheckOptions(confidence=c)
    assert CheckOptions(confidence=1 - 1e-12).alpha_share > 0


def test_the_largest_confidence_runs_every_method():
    """At the largest confidence taken, every test's split share still has a confidence below 1 (a zCDP claim through
    the worst-case search's sequential plan, the deepest split); 0.999999999999999 failed there."""
    from asyncdp.papers import GradientClass
    from asyncdp.privacy import check_privacy
    from asyncdp.privacy.context import MAX_CONFIDENCE

    import sys

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    rule, (scenario, adjacent) = _claim_pair(ZeroConcentratedDP(0.3))
    with noisy_dgd.registered((rule,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        report = check_privacy(scenario, adjacent, runs=300, confidence=MAX_CONFIDENCE, search_examples=0)
    assert report.verdict == "pass", report.reasons


def test_a_delta_share_that_underflows_gives_an_infinite_basic_composition_not_a_crash():
    """``--delta 5e-324`` (the smallest float, a valid delta for a zCDP claim's conversion): basic composition gives
    each of ``k`` Gaussian releases ``delta / k``, which underflows to 0, and ``log(0)`` raised a bare
    ``ValueError`` (a traceback on the command line). A Gaussian release at delta 0 has no finite epsilon: ``inf``."""
    from accounting.composition import basic_composition
    from accounting.ledger import Ledger, Release

    led = Ledger([Release(0, t, float(t), "gaussian", 1.0, 1) for t in (1, 2)])
    assert basic_composition(led, 0.2, delta=5e-324) == float("inf")
    assert 0 < basic_composition(led, 0.2, delta=1e-300) < float("inf")


def test_the_observer_section_audits_the_claim_the_check_tests(monkeypatch):
    """``asyncdp privacy check --observer node:V`` read the rule's ``claimed_privacy`` for its observer lines, not the
    claim the check tests: a rule stating a zCDP claim through ``claimed_form`` (and the default ``claimed_privacy``,
    ``(inf, 0)``, or any other pair) had the observer's black-box audit aimed at that other claim. It now audits the
    check's claim: the form's conversion at ``--delta``."""
    import argparse
    import sys

    from asyncdp.cli import privacy as cli_privacy
    from asyncdp.papers import GradientClass
    from asyncdp.privacy import observer_views, observers

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    form = ZeroConcentratedDP(0.3)
    rule, (scenario, adjacent) = _claim_pair(form)
    assert rule(claim=form).claimed_privacy(12) == (float("inf"), 0.0)  # the base rule's default
    seen = {}

    def spy(*args, **kw):
        seen.update(epsilon=kw["epsilon"], delta=kw["delta"])
        raise RuntimeError("stop")

    monkeypatch.setattr(observers, "observer_blackbox", spy)
    args = argparse.Namespace(seed=0, delta=1e-6, runs=50, confidence=0.95)
    observer = observer_views.parse_observer("node:1", scenario.problem.num_agents)
    with noisy_dgd.registered((rule,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        with pytest.raises(RuntimeError, match="stop"):
            cli_privacy._observer_section(scenario, adjacent, observer, args)
    assert seen == {"epsilon": pytest.approx(form.epsilon_at(1e-6)), "delta": 1e-6}


@pytest.mark.parametrize("form", [RenyiDP(3.0, 0.9 * 3 * 0.22), ZeroConcentratedDP(0.9 * 0.22)],
                         ids=["renyi", "zcdp"])
def test_an_exact_renyi_witness_of_the_worst_pair_carries_its_order_and_divergences(form):
    """The worst pair's exact Rényi refutation (the pair's closed-form ``D_alpha = alpha mu^2 / 2`` with
    ``mu^2 / 2 = 0.22`` above the claim) gave a witness with ``epsilon``, ``delta_lower`` and ``delta_allowed`` all
    ``None`` and no order or divergence: the JSON stated none of the numbers the verdict rests on (the replay's
    witness of the same kind carried them). Now ``alpha``, ``renyi_witness`` and ``renyi_allowed``, and the
    divergence is the closed form's less the margin its escort draws certify (one per run of the worst pair's first
    look, 75; ``asyncdp.privacy.profiles.escort_renyi_lower``: 0.037 at order 3), at the confidence of those draws;
    the claims are 10% below the closed form, beyond that margin."""
    import json
    import sys

    from asyncdp.papers import GradientClass
    from asyncdp.privacy import check_privacy

    noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]
    rule, (scenario, adjacent) = _claim_pair(form)
    with noisy_dgd.registered((rule,), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        report = check_privacy(scenario, adjacent, runs=300, search_examples=0)
    assert report.verdict == "violation", report.reasons
    w = json.loads(json.dumps(report.to_dict()))["witness"]
    assert w["kind"] == "worst-case" and w["claim_form"] == form.form
    assert w["method"].startswith("exact renyi divergence less the escort margin") and 0.99 < w["confidence"] < 1
    alpha = w["alpha"]
    assert alpha > 1
    closed = alpha * 11 * (2 * noisy_dgd.STEP * noisy_dgd.CLIP) ** 2 / 2 * (1 - 1e-6) ** 2
    margin = math.log(1 / (1 - w["confidence"])) / (w["runs"] * (alpha - 1))
    assert w["renyi_witness"] == pytest.approx(closed - margin, rel=1e-9)
    assert w["renyi_allowed"] == pytest.approx(form.renyi_bound(alpha)) and w["renyi_witness"] > w["renyi_allowed"]


def test_a_renyi_refutation_states_its_two_divergences_apart():
    """``D_1.01 = 0.2222`` against ``1.01 * 0.2199999 = 0.222199899`` read "0.2222 > 0.2222 allowed by the claim
    0.22-zCDP" at 6 digits: the claim named as another (true) claim, and two equal numbers."""
    from accounting.profiles import PrivacyProfile
    from accounting.refutation import refute

    r = refute(ZeroConcentratedDP(0.2199999), profile=PrivacyProfile(0.663324958071080), alphas=[1.01])
    assert r.refuted and "is 0.2222 > 0.2221999 allowed by the claim 0.2199999-zCDP" in r.reason
    got, allowed = r.reason.split(" is ")[1].split(" allowed")[0].split(" > ")
    assert float(got) > float(allowed)
