"""Under-calibrated Gaussian rules are refuted with certified delta witnesses; correct ones are not.

The under-calibrated rule is Showkatbakhsh, Karakus and Diggavi's (arXiv
2019) with Corollary 1's kappa computed with ``G`` instead of ``G^2``
(examples/privacy_check_gaussian_under_calibrated.py): consistent noise and
declaration, true ``delta(1)`` of its worst pair about 50x (claim 1e-5) and
4x–40x (claim 1e-3) the claim. Each statistical witness is certified at the
check's confidence, so a correct rule is refuted with probability at most
``1 - confidence`` (0.05 here; fixed seeds).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from asyncdp import Async, Deadline
from asyncdp.papers.showkatbakhsh.rule import Showkatbakhsh
from asyncdp.papers.wang_basar.rule import WangBasar
from asyncdp.privacy import check_privacy
from asyncdp.privacy.context import CheckOptions, ScenarioPair, prepare
from asyncdp.privacy.worst_case import candidate_scenarios, construct_transcript, constructed_loss, extremal_pairs

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "privacy_check_gaussian_under_calibrated.py"


def _example():
    spec = importlib.util.spec_from_file_location("gaussian_under_calibrated", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EX = _example()
TIMINGS = {"lockstep": None, "deadline": Deadline(period=1.0, deadline=0.8, drift=0.05, missing="renormalize"),
           "async": Async(rate=1.0)}


@pytest.mark.parametrize("timing", ["lockstep", "deadline"])
@pytest.mark.parametrize("delta", [1e-3, 1e-5])
def test_the_under_calibrated_two_stage_rule_is_refuted_by_importance_sampling(timing, delta):
    scenario, adjacent = EX.make(delta, TIMINGS[timing])
    report = check_privacy(scenario, adjacent, runs=1000, search_examples=5)
    assert report.verdict == "violation"
    w = report.witness
    assert w["kind"] == "worst-case" and w["method"].startswith("importance sampling")
    assert w["delta_lower"] > 10 * delta if delta == 1e-5 else w["delta_lower"] > delta
    assert w["confidence"] >= 0.95 and w["claim_form"]
    dumped = report.to_dict()
    assert dumped["verdict"] == "violation"


def test_the_under_calibrated_two_stage_rule_is_refuted_under_async_timing_from_engine_runs():
    scenario, adjacent = EX.make(1e-3, TIMINGS["async"])
    report = check_privacy(scenario, adjacent, runs=1000, search_examples=5)
    assert report.verdict == "violation"
    w = report.witness
    assert w["kind"] == "worst-case" and "thresholds" in w["method"] and w["delta_lower"] > 1e-3


@pytest.mark.parametrize("timing", ["lockstep", "deadline", "async"])
def test_the_correct_two_stage_rule_is_not_refuted(timing):
    scenario, adjacent = EX.make(1e-5, TIMINGS[timing], rule=Showkatbakhsh)
    report = check_privacy(scenario, adjacent, runs=1000, search_examples=5)
    assert report.verdict != "violation", report.reasons


def test_the_async_worst_case_search_constructs_a_transcript_on_a_two_stage_rule():
    # the constructed transcript used to leave other agents' noise-free Stage II releases matching neither problem
    scenario, adjacent = EX.make(1e-3, TIMINGS["async"], rule=Showkatbakhsh)
    pair = ScenarioPair(scenario, adjacent)
    ctx = prepare(pair, CheckOptions(runs=20, search_examples=0))
    label, g, gp = extremal_pairs(scenario, 0)[0]
    p, _ = candidate_scenarios(scenario, 0, g, gp)
    built = construct_transcript(ctx.engine_runs(0), p, 0)
    assert set(built) == {"y"} and np.isfinite(built["y"][:, :, 0]).all()
    loss, _ = constructed_loss(ctx.engine_runs(0), scenario, 0, g, gp, max_runs=8)
    assert math.isfinite(loss) and loss > 0


class UnderNoisedGradient(WangBasar):
    """Wang–Başar's gradient perturbation with the noise std divided by 30 (declared consistently)."""

    def noise_scale(self, t: int) -> float:
        return super().noise_scale(t) / 30.0


@pytest.mark.parametrize("delta", [1e-3, 1e-5])
def test_an_under_noised_gradient_perturbation_rule_gets_an_exact_profile_witness(delta):
    base = WangBasar.example_scenario(seed=1)
    alg = UnderNoisedGradient(noise_variance=400.0, delta=delta)
    scenario = base.replace(algorithm=alg)
    y0 = scenario.problem.costs.measurements[0]
    adjacent = scenario.replace(problem=scenario.problem.adjacent(0, measurement=y0 + np.array([0.05, 0.0, 0.0])))
    report = check_privacy(scenario, adjacent, runs=1000, search_examples=5)
    assert report.verdict == "violation"
    methods = [e.witness.get("method", "") for e in report.evidence if e.witness is not None]
    assert any(m.startswith("exact profile") or m.startswith("importance") for m in methods), methods
    assert math.isfinite(report.epsilon_claimed)
