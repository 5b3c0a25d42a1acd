"""Unicast Gaussian runs get tilted draws: a false divergence or ``(epsilon, delta)`` claim is refuted, a true one not.

``CalibratedDGD`` (tests/asyncdp/privacy/test_no_false_violations.py) is a user's clipped Gaussian gradient rule
whose claim is the exact profile of ``copies`` releases a round, each moved by at most ``2 a C`` from round 2 on:
``mu = 2 a C sqrt(copies (T - 1)) / sigma``. In unicast mode on the complete graph K4 every agent sends its own
noisy copy to each of the 3 others, so ``copies = 3`` is the truth; a rule that counts one copy a round
(``copies = 1``) claims ``mu / sqrt(3)``: a zCDP claim of a third of the true ``rho``, and an ``epsilon`` well below
the true ``epsilon(1e-5)``. Both are false (the truth is the closed form of the worst pair, agent 0's gradient
``-e_k`` vs ``+e_k``: every copy shifted by exactly ``2 a C`` while no projection is active, box 50).

The escort check (``asyncdp.privacy.profiles.escort_shifts_hold``) and importance sampling
(``scheduled_tilted_bound``) refused unicast messages: the check said ``inconclusive`` to the zCDP claim (the exact
divergence could not be certified), and refuted the ``(epsilon, delta)`` claim only by the threshold counts of its
300 replayed engine runs (``delta >= 3.2e-5``), no importance-sampling bound drawn. Now each copy is drawn under the tilt with its own noise, moved by
the tilt times its own shift (``accounting.tilted_replay``), and the witnesses are sound: the divergence witness
is at most the true ``alpha mu^2 / 2``, the ``delta`` witness (the exact profile less the margin of tilted draws
that kept every copy's shift) at most the true ``delta(epsilon)``.
Exactly calibrated (``copies = 3``), the same runs refute nothing.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from accounting.profiles import gaussian_profile_delta
from asyncdp.papers import GradientClass
from asyncdp.privacy import check_privacy

noisy_dgd = sys.modules["asyncdp_tests_noisy_dgd"]  # tests/fixtures/noisy_dgd.py, loaded by conftest.py


def _calibrated() -> Any:
    name = "asyncdp_tests_no_false_violations"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("test_no_false_violations.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _check(form: str, timing: str, copies_claimed: int | None) -> tuple[Any, Any]:
    """The check of CalibratedDGD in unicast mode on K4 (3 copies a round), its claim counting ``copies_claimed``
    copies (``None``: the true 3); returns the report and the rule."""
    cal = _calibrated()
    d = cal._corner(timing, form, unicast=True, agents=4, box=50.0, frame=0.0)
    scenario, adjacent = cal._calibrated_pair(-5.0, d)
    rule = scenario.algorithm
    if copies_claimed is not None:
        rule = replace(rule, copies=copies_claimed)
        scenario, adjacent = scenario.replace(algorithm=rule), adjacent.replace(algorithm=rule)
    with noisy_dgd.registered((cal.CalibratedDGD,), lambda s: GradientClass(cal.CLIP, "l2"), origin=cal.__file__,
                              lemma=cal._lemma):
        report = check_privacy(scenario, adjacent, runs=300, seed=1, search_examples=0)
    return report, rule


def _true_mu(rule: Any, horizon: int) -> float:
    return 2 * rule.step * _calibrated().CLIP * math.sqrt(3 * (horizon - 1)) / rule.sigma


def test_a_false_unicast_zcdp_claim_is_refuted_by_the_escort_lowered_divergence():
    # deterministic given the seed; the witness holds at its confidence (the escort draws' share of the error)
    report, rule = _check("zcdp", "lockstep", copies_claimed=1)
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert w["method"].startswith("exact renyi divergence less the escort margin"), w
    assert w["claim_form"] == "zcdp" and 0.99 <= w["confidence"] < 1.0
    truth = w["alpha"] * _true_mu(rule, 3) ** 2 / 2  # the worst pair's exact divergence of that order
    assert w["renyi_allowed"] < w["renyi_witness"] <= truth


def test_a_false_unicast_approximate_claim_is_refuted_by_the_exact_profile_less_the_tilt_margin():
    # statistical: the bound holds at its confidence (>= 0.99); the draws are fixed by the seed. Every copy is drawn
    # moved by the tilt times its own offset and kept it (accounting.profiles.matched_tilt_delta_lower)
    report, rule = _check("approximate", "lockstep", copies_claimed=1)
    assert report.verdict == "violation", report.reasons
    w = report.witness
    assert w["method"] == "exact profile less the tilt margin", w
    eps, delta = rule.claimed_privacy(3)
    assert delta == 1e-5 and w["epsilon"] == eps and w["confidence"] >= 0.99
    assert delta < w["delta_lower"] <= gaussian_profile_delta(_true_mu(rule, 3), eps)


@pytest.mark.parametrize("form, timing", [("zcdp", "lockstep"), ("approximate", "lockstep"), ("zcdp", "async"),
                                          ("approximate", "async"), ("renyi", "deadline")])
def test_an_exactly_calibrated_unicast_rule_is_not_refuted_and_its_tilted_draws_are_made(form, timing, monkeypatch):
    # statistical: every statistical witness at the check's confidence 0.95; the draws are fixed by the seed. The
    # check draws tilted unicast transcripts (importance sampling of the worst pair; main never drew any)
    import accounting.tilted_replay as tilted_replay

    drawn = []
    real = tilted_replay.tilted_scheduled_transcripts

    def spy(template: Any, *args: Any, **kwargs: Any) -> Any:
        out = real(template, *args, **kwargs)
        drawn.append(next(iter(out.messages.values())).ndim)
        return out

    monkeypatch.setattr(tilted_replay, "tilted_scheduled_transcripts", spy)
    report, _ = _check(form, timing, copies_claimed=None)
    assert report.verdict != "violation", report.reasons
    assert not any("cannot be drawn" in r or "needs broadcast" in r for r in report.reasons), report.reasons
    assert drawn and set(drawn) == {5}  # (R, T, N, N, d): every copy drawn


@pytest.mark.slow  # about 4 s: the whole check (value class and worst-case search) of a 9-agent run
def test_muffliato_in_unicast_mode_on_k9_has_a_certified_delta_above_its_claim():
    """Muffliato (values in ``[0, 1]``, ``sigma = 1``) on the complete graph K9 in unicast mode, mixing from round 1:
    agent 0 sends 8 independently noised copies of its value, so the value class's pair 0 vs 1 is a Gaussian pair of
    ``mu = sqrt(8)`` (later rounds are noise-free functions of the copies); its exact ``epsilon(1e-6) = 16.86``
    exceeds the claimed 14.82 (Muffliato's order-2 conversion for one release), ``delta(14.82) = 2.6e-5``. The check
    said ``inconclusive`` (no importance sampling of unicast runs)."""
    import numpy as np

    import topology
    from accounting.profiles import PrivacyProfile
    from asyncdp.papers.muffliato.rule import Muffliato
    from asyncdp.problems.costs import RendezvousQuadratic
    from asyncdp.problems.problem import Problem

    n, base = 9, Muffliato.example_scenario()
    values = np.random.default_rng(0).uniform(0.0, 1.0, size=(n, 1))
    scenario = base.replace(topology=topology.static(np.full((n, n), 1.0 / n)), mode="unicast", horizon=3,
                            problem=Problem(base.problem.domain, RendezvousQuadratic(values)))
    eps, delta = scenario.algorithm.bind(scenario.problem).claimed_privacy(scenario.horizon)
    truth = PrivacyProfile(math.sqrt(n - 1)).delta(eps)
    assert truth > 10 * delta
    adjacent = scenario.replace(problem=scenario.problem.adjacent(0, address=values[0] + 0.05))
    report = check_privacy(scenario, adjacent, runs=300, search_examples=0)
    assert report.verdict == "violation", report.reasons
    w = report.witness
    # lockstep: the exact profile less the margin of tilted draws that kept every copy's shift (the 8 copies are
    # noised independently: a fixed-shift Gaussian pair, so the witness is at most its closed form)
    assert w["method"] == "exact profile less the tilt margin" and (w["address"], w["address_prime"]) == ([0.0], [1.0])
    assert delta < w["delta_lower"] <= truth  # statistical: at the witness's confidence (>= 0.99), seeds fixed
