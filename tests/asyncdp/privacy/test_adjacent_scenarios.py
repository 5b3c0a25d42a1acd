"""Property tests of a user's own rule: pairs drawn from its declared class, decided in the claim's own form.

:func:`asyncdp.privacy.strategies.adjacent_scenarios` draws members of the class a rule's paper record declares
(each seed paper's class kind: gradient ``each`` and ``difference``, round, value); the tests check every drawn
pair against the class with their own arithmetic (the gradients of the linear members, the value in the domain).
:func:`asyncdp.privacy.properties.assert_private` decides a pair of a user's Gaussian rule (``NoisyDGD`` of
``tests/fixtures/noisy_dgd.py``: lemma ``2 a C`` per release from round 2, ``sigma = 1``) claiming zCDP, Rényi or
``(epsilon, delta)``: the claims of the composed Gaussian pair ``mu = 2 a C sqrt(T - 1) / sigma`` pass, the same
claims computed with ``a C`` (``mu / 2``: a quarter of its zCDP) fail with a witness from the pair's behavior.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import Phase, find, given, settings

import topology
from accounting.claim_forms import ApproxDP, RenyiDP, ZeroConcentratedDP
from accounting.errors import AdjacencyError
from accounting.profiles import gaussian_profile_epsilon
from asyncdp.errors import ScenarioError
from asyncdp.papers import GradientClass, RoundClass, ValueClass, get_paper
from asyncdp.privacy import strategies
from asyncdp.privacy.adjacency import check_adjacency
from asyncdp.privacy.properties import PrivacyPropertyError, assert_private
from asyncdp.privacy.strategies import adjacent_scenarios
from asyncdp.privacy.candidate_pairs import adjacency_class, candidate_scenarios, pair_with_costs
from asyncdp.privacy.kinked import KinkedOverride, KinkedRound
from asyncdp.problems.costs import LinearOverride
from asyncdp.problems.online import LinearRound

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py
HORIZON = 6
MU = 2 * noisy_dgd.STEP * noisy_dgd.CLIP / noisy_dgd.SIGMA * math.sqrt(HORIZON - 1)
"""The composed Gaussian of the class's worst pair: every release from round 2 shifted by ``2 a C``."""
DELTA, ALPHA = 1e-5, 8.0
CHECK_EXAMPLES = 8
"""Pairs each property over the check decides (about 0.1 s each)."""


@dataclass(frozen=True)
class GaussDGD(noisy_dgd.NoisyDGD):
    """``NoisyDGD`` claiming, for the composed Gaussian ``mu * scale``, its zCDP, its Rényi divergence of order
    ``ALPHA`` or its ``(epsilon(DELTA), DELTA)`` (``form``)."""

    form: str = "zcdp"
    scale: float = 1.0
    name: ClassVar[str] = "test-adjacent-scenarios-gauss-dgd"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        """The exact Gaussian ``(epsilon(DELTA), DELTA)``; beside a zCDP or Rényi form, that form's conversion (the
        check refuses a pair the form does not imply)."""
        if self.form not in ("zcdp", "renyi"):
            return gaussian_profile_epsilon(MU * self.scale, DELTA), DELTA
        return self.claimed_form(horizon).epsilon_at(DELTA), DELTA

    def claimed_form(self, horizon: int) -> Any:
        mu = MU * self.scale
        if self.form == "zcdp":
            return ZeroConcentratedDP(mu**2 / 2)
        if self.form == "renyi":
            return RenyiDP(ALPHA, ALPHA * mu**2 / 2)
        return ApproxDP(gaussian_profile_epsilon(mu, DELTA), DELTA)


@dataclass(frozen=True)
class CurvedGauss(noisy_dgd.CurvedDGD):
    """The fixture's curvature-corrected step (``0.5 (clip g(z) - clip g(z + e))`` where that exceeds 1/2, zero for
    every linear cost) with the plain step's lemma ``2 a C``: false only on costs whose gradient turns over."""

    offset: ClassVar[np.ndarray] = np.array([0.3, 0.3])
    name: ClassVar[str] = "test-adjacent-scenarios-curved"

    def claimed_privacy(self, horizon: int) -> tuple[float, float]:
        return gaussian_profile_epsilon(MU, DELTA), DELTA


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Any:
    with noisy_dgd.registered((GaussDGD, CurvedGauss), lambda sc: GradientClass(noisy_dgd.CLIP, "l2"), origin=__file__):
        yield


def _scenario(**rule: Any) -> Any:
    return noisy_dgd.rendezvous_pair(GaussDGD(**rule), topology.static(noisy_dgd.ring(4)), HORIZON)[0]


def _paper_scenario(paper: str) -> Any:
    return get_paper(paper).rules[0].example_scenario()


def _lines(start: np.ndarray) -> np.ndarray:
    """The domain points where a test compares gradients with the class: along every axis through ``start``, within
    2 of it (401 points per axis: a kink within KINK_REACH = 1 of it turns over there)."""
    dim = start.shape[0]
    return (start + np.linspace(-2.0, 2.0, 401)[:, None, None] * np.eye(dim)[None]).reshape(-1, dim)


def _gradients(p: Any, q: Any, agent: int) -> tuple[np.ndarray, np.ndarray]:
    """Both costs' gradients of the changed agent at :func:`_lines` through its initial point."""
    pts = _lines(np.asarray(p.initial_points(), dtype=float)[agent])
    for sc in (p, q):
        assert isinstance(sc.problem.costs, (LinearOverride, KinkedOverride)) and sc.problem.costs.agent == agent
    return p.problem.costs.gradient(agent, pts), q.problem.costs.gradient(agent, pts)


SLACK = 1 + 1e-12
"""Round-off of ``bound * u / ||u||``: a few ulps."""


@given(adjacent_scenarios(_paper_scenario("showkatbakhsh")))
def test_each_class_draws_two_gradients_within_the_bound(pair):
    p, q, agent = pair
    bound = adjacency_class(p).bound
    g, gp = _gradients(p, q, agent)
    assert np.linalg.norm(g, axis=1).max() <= bound * SLACK and np.linalg.norm(gp, axis=1).max() <= bound * SLACK
    assert check_adjacency(p, q).agent == agent


@given(adjacent_scenarios(_paper_scenario("wang-basar")))
def test_difference_class_draws_gradients_differing_within_the_bound(pair):
    p, q, agent = pair
    cls = adjacency_class(p)
    assert cls.kind == "difference" and cls.norm == "l1"
    g, gp = _gradients(p, q, agent)
    assert np.abs(g - gp).sum(axis=1).max() <= cls.bound * SLACK
    assert check_adjacency(p, q).agent == agent


@pytest.mark.parametrize(("paper", "linear", "kinked"), [("showkatbakhsh", LinearOverride, KinkedOverride),
                                                        ("wang-basar", LinearOverride, KinkedOverride),
                                                        ("dpsda-c", LinearRound, KinkedRound)])
def test_classes_draw_kinked_members_and_shrink_to_linear_ones(paper, linear, kinked):
    strategy = adjacent_scenarios(_paper_scenario(paper))
    found = find(strategy, lambda pair: isinstance(pair[1].problem.costs, kinked),
                 settings=settings(phases=[Phase.generate], database=None))
    assert isinstance(found[0].problem.costs, (linear, kinked))
    simplest = find(strategy, lambda pair: True, settings=settings(database=None))
    assert isinstance(simplest[0].problem.costs, linear) and isinstance(simplest[1].problem.costs, linear)


@given(adjacent_scenarios(_paper_scenario("dpsda-c")))
def test_round_class_draws_one_rounds_loss_within_the_bound(pair):
    p, q, t0 = pair
    cls = adjacency_class(p)
    assert isinstance(cls, RoundClass) and 1 <= t0 < p.horizon
    pts = _lines(np.asarray(p.initial_points(), dtype=float).mean(axis=0))
    for sc in (p, q):
        assert isinstance(sc.problem.costs, (LinearRound, KinkedRound)) and sc.problem.costs.round_index == t0
        assert np.linalg.norm(sc.problem.costs.round_gradient(t0, pts), axis=-1).max() <= cls.bound * SLACK
    assert check_adjacency(p, q).round == t0


@given(adjacent_scenarios(_paper_scenario("muffliato")))
def test_value_class_moves_one_value_within_the_domain(pair):
    p, q, agent = pair
    assert isinstance(adjacency_class(p), ValueClass)
    a, b = p.problem.costs.addresses, q.problem.costs.addresses
    moved = np.flatnonzero(np.any(a != b, axis=1)).tolist()
    assert moved == [agent]
    low, high = p.problem.domain.low, p.problem.domain.high
    assert np.all(b[agent] >= low) and np.all(b[agent] <= high)


def test_a_member_outside_the_class_is_refused(monkeypatch):
    # the strategy's own check of each pair can fail: a member builder that overshoots the bound twice is caught
    real = strategies._member
    monkeypatch.setattr(strategies, "_member", lambda u, bound, order, extreme: 2 * real(u, bound, order, extreme))

    @given(adjacent_scenarios(_scenario()))
    def prop(pair):
        pass

    with pytest.raises(AdjacencyError, match="> the bound"):
        prop()


def test_a_rule_without_a_class_is_named():
    scenario = noisy_dgd.rendezvous_pair(noisy_dgd.NoisyDGD(), topology.static(noisy_dgd.ring(4)), HORIZON)[0]
    with pytest.raises(ScenarioError, match="rule 'NoisyDGD'.*declares no adjacency class"):
        adjacent_scenarios(scenario)


def test_a_pair_in_place_of_the_scenario_is_named():
    """The drawn ``(P, P', changed)`` (or a ``(scenario, adjacent)`` pair) passed back in: a ScenarioError, not an
    AttributeError from inside."""
    pair = noisy_dgd.rendezvous_pair(noisy_dgd.NoisyDGD(), topology.static(noisy_dgd.ring(4)), HORIZON)
    with pytest.raises(ScenarioError, match="adjacent_scenarios: scenario must be an asyncdp Scenario, got \\(Scen"):
        adjacent_scenarios(pair)


def test_a_value_radius_for_a_gradient_class_is_refused():
    """It was ignored silently (a negative or NaN radius too): it draws only a value class's values."""
    scenario = get_paper("huang2015").rules[0].example_scenario()
    assert isinstance(adjacency_class(scenario), GradientClass)
    for radius in (-1.0, float("nan"), 2.0):
        with pytest.raises(ScenarioError, match=f"value_radius draws the values of a value class.*GradientClass.*"
                                                f"got value_radius={radius!r}"):
            adjacent_scenarios(scenario, value_radius=radius)


FORMS = ["zcdp", "renyi", "approximate"]


@pytest.mark.parametrize("form", FORMS)
def test_the_property_holds_for_a_correct_gaussian_claim(form):
    @settings(max_examples=CHECK_EXAMPLES)
    @given(adjacent_scenarios(_scenario(form=form)))
    def prop(pair):
        p, q, _ = pair
        assert_private(p, q, runs=100)

    prop()


def _property_failure(scenario: Any) -> PrivacyPropertyError:
    """The error of a property ``assert_private`` on pairs drawn from ``scenario``'s class (inconclusive allowed: only
    a witness from the pair's behavior fails it). Not shrunk (each step another check): the first refuted pair."""

    @settings(max_examples=CHECK_EXAMPLES, phases=(Phase.explicit, Phase.reuse, Phase.generate))
    @given(adjacent_scenarios(scenario))
    def prop(pair):
        p, q, _ = pair
        assert_private(p, q, runs=100, allow_inconclusive=True)

    with pytest.raises(PrivacyPropertyError) as info:
        prop()
    return info.value


@pytest.mark.parametrize("form", FORMS)
def test_the_property_fails_for_an_under_calibrated_gaussian_claim(form):
    # calibrated with a C instead of 2 a C: the class's pairs with ||g - g'|| > C refute it. Inconclusive
    # verdicts (the accountant's own bound exceeds the claim) are allowed, so only a witness from the pair's
    # behavior can fail the property
    error = _property_failure(_scenario(form=form, scale=0.5))
    report = error.report
    assert report.verdict == "violation" and report.witness is not None
    assert report.claim_form == form and "violation" in str(error) and "witness:" in str(error)


def test_an_inconclusive_pair_fails_unless_allowed():
    # the under-calibrated claim on a pair whose gradients differ by 0.2 C: mu_pair = mu / 10 is within the claim
    # (mu / 2), so no witness; the accountant's own bound (the lemma's 2 a C) exceeds the claim: inconclusive
    p, q = candidate_scenarios(_scenario(form="zcdp", scale=0.5), 0, [0.1, 0.0], [-0.1, 0.0])
    with pytest.raises(PrivacyPropertyError, match="inconclusive") as info:
        assert_private(p, q, runs=100)
    assert info.value.report.verdict == "inconclusive" and info.value.report.witness is None
    assert assert_private(p, q, runs=100, allow_inconclusive=True).verdict == "inconclusive"


def test_the_property_fails_for_a_lemma_that_only_kinked_members_break():
    # truth: a kink between z and z + e moves a release by 0.5 |2 C| = 1 > the lemma's 2 a C = 0.2. Linear members
    # alone never show it (the correction vanishes); the drawn kinked members do, as a coverage witness
    scenario = noisy_dgd.rendezvous_pair(CurvedGauss(), topology.static(noisy_dgd.ring(4)), HORIZON)[0]
    report = _property_failure(scenario).report
    assert report.verdict == "violation" and report.witness["kind"] == "coverage"
    assert isinstance(report.witness["shift"], float) and report.witness["shift"] > 2 * noisy_dgd.STEP * noisy_dgd.CLIP


def test_an_approximate_claim_false_on_the_pair_itself_is_a_violation():
    # truth: the extremal pair (gradients +-C e_0) composes into the Gaussian mu > 0.9 mu, so delta(epsilon(0.9 mu))
    # exceeds the claimed delta on this very pair. The replay's thresholds cannot show it on 500 runs (inconclusive
    # without decide_pair); the pair's own importance-sampling bound (the one the class search gives its worst
    # pair) does, even where inconclusive verdicts are allowed
    p, q = candidate_scenarios(_scenario(form="approximate", scale=0.9), 0, [1.0, 0.0], [-1.0, 0.0])
    with pytest.raises(PrivacyPropertyError, match="violation") as info:
        assert_private(p, q, runs=500, allow_inconclusive=True)
    assert info.value.report.witness is not None and info.value.report.witness["delta_lower"] > DELTA



@pytest.mark.parametrize("paper", ["showkatbakhsh", "wang-basar", "dpsda-c"])
def test_a_kinked_member_outside_the_class_is_refused(paper):
    # a kinked member's gradient nears its scale only far from its kink (zero at it): scale 2 C, kink 0.5 from the
    # anchor, width 1, reads 0.89 C at the anchor (0.99 C with the other side's 0.1 C for a difference), so points
    # near the kinks alone let this member outside the class through; the check must look far along the axes too
    scenario = _paper_scenario(paper)
    cls = adjacency_class(scenario)
    rounds = isinstance(cls, RoundClass)
    changed = 1 if rounds else 0
    start = np.asarray(scenario.initial_points(), dtype=float)
    anchor = start.mean(axis=0) if rounds else start[changed]
    over = strategies._Side(axis=0, position=float(anchor[0] + 0.5), scale=2 * cls.bound, width=1.0)
    small = strategies._Side(tuple(0.1 * cls.bound * np.eye(anchor.shape[0])[-1]))
    p, q = pair_with_costs(scenario, lambda costs, side: side.costs(costs, changed, rounds), over, small)
    kink = anchor.copy()
    kink[0] = over.position
    with pytest.raises(AdjacencyError, match="> the bound"):
        strategies._check_member(cls, p, q, changed, (over, small), kink[None])
