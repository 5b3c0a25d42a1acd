"""``asyncdp.noise_effect``: a run beside the same run without privacy noise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asyncdp import Deadline, Huang2015, LinkModel, Links, LogNormalLatency, NoiseEffect, noise_effect
from asyncdp.errors import ScenarioError
from asyncdp.experiments.noise_effect import DOMINANT_FACTOR, MIXED_FACTOR


def _example(**alg):
    base = Huang2015.example_scenario(seed=3)
    a = base.algorithm
    params = {"epsilon": a.epsilon, "c": a.c, "q": a.q, "p": a.p} | alg
    return base.replace(algorithm=Huang2015(**params))


def test_noise_free_side_equals_the_run_with_infinite_epsilon_under_lossy_links():
    """ZeroNoise keeps the schedule: the noise-free errors are those of the epsilon = inf run (another route)."""
    sc = _example().replace(timing=Deadline(deadline=0.8, missing="renormalize"),
                            links=Links(LinkModel(LogNormalLatency(0.2, 0.5), loss=0.2)))
    effect = noise_effect(sc)
    a = sc.algorithm
    exact = sc.replace(algorithm=Huang2015(epsilon=math.inf, c=a.c, q=a.q, p=a.p)).run()
    assert effect.noise_free_optimality_error == float(exact.optimality_error()[-1])
    assert effect.noise_free_consensus_error == float(exact.consensus_error()[-1])
    private = sc.run()
    assert effect.optimality_error == float(private.optimality_error()[-1])
    assert effect.horizon == sc.horizon and effect.epsilon == a.epsilon and effect.delta == 0.0
    assert effect.diameter == pytest.approx(sc.problem.domain.diameter)


def test_no_noise_means_ratio_one_and_tiny_epsilon_is_noise_dominated():
    free = noise_effect(_example(epsilon=math.inf))
    assert free.ratio == 1.0 and free.verdict == "not noise-dominated"
    tiny = noise_effect(_example(epsilon=0.01))
    assert tiny.verdict == "noise-dominated" and tiny.ratio >= DOMINANT_FACTOR
    text = tiny.explain()
    assert "noise-dominated" in text and "epsilon = 0.01" in text and "domain diameter" in text


def test_a_given_result_is_used_as_is():
    sc = _example()
    result = sc.run()
    assert noise_effect(sc, result) == noise_effect(sc)


@pytest.mark.parametrize("ratio, verdict", [
    (DOMINANT_FACTOR, "noise-dominated"), (DOMINANT_FACTOR * 0.999, "mixed"),
    (MIXED_FACTOR, "mixed"), (MIXED_FACTOR * 0.999, "not noise-dominated"), (0.5, "not noise-dominated"),
])
def test_verdict_thresholds(ratio, verdict):
    effect = NoiseEffect(ratio * 0.01, 1.0, 0.01, 0.0, 2.0, 1.0, 0.0, 10)
    assert effect.ratio == pytest.approx(ratio) and effect.verdict == verdict
    assert f"-> {verdict}" in effect.explain()


def test_huge_ratios_are_not_printed_digit_by_digit():
    assert "over 10^4 times the noise-free error" in NoiseEffect(0.6, 0.01, 2e-32, 1e-6, 2.0, 1.0, 0.0, 5).explain()
    assert "9.99e+03x the noise-free error" in NoiseEffect(0.999, 0.01, 1e-4, 1e-6, 2.0, 1.0, 0.0, 5).explain()


def test_zero_noise_free_error():
    assert NoiseEffect(0.1, 0.0, 0.0, 0.0, 2.0, 1.0, 0.0, 5).ratio == math.inf
    assert NoiseEffect(0.0, 0.0, 0.0, 0.0, 2.0, 1.0, 0.0, 5).verdict == "not noise-dominated"


def test_bad_results_are_refused():
    sc = _example()
    with pytest.raises(ScenarioError, match="trajectory shape"):
        noise_effect(sc, sc.replace(horizon=sc.horizon + 1).run())
    with pytest.raises(ScenarioError, match="single run's Result"):
        noise_effect(sc, sc.run("batch", runs=3))
    with pytest.raises(ScenarioError, match="single run's Result"):
        noise_effect(sc, np.zeros(3))


def test_no_finite_claim_is_said_so():
    text = NoiseEffect(1.0, 1.0, 0.01, 0.0, 2.0, math.inf, 0.0, 5).explain()
    assert "the price of this noise (the algorithm claims no finite epsilon)" in text and "epsilon = inf" not in text
