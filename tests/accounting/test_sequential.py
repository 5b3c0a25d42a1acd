"""Sequential looks at a growing sample: certified at the joint confidence whenever the caller stops."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from accounting.errors import PrivacyParameterError
from accounting.mechanisms import gaussian_sigma
from accounting.sequential import SequentialPlan


def run(plan, losses):
    """Follow the plan until a final decision; return the last step."""
    n = plan.looks[0]
    while True:
        step = plan.decide(losses[:n])
        if step.decision != "continue":
            return step
        n = step.next_runs


def test_looks_double_up_to_the_budget_and_split_the_failure_probability():
    plan = SequentialPlan(1.0, 1e-4, 0.95, budget=10_000, first=1000)
    assert plan.looks == (1000, 2000, 4000, 8000, 10_000)
    assert plan.per_look_confidence == pytest.approx(1 - 0.05 / 5)


def test_an_under_calibrated_gaussian_is_refuted_with_more_runs_than_one_batch():
    # true delta(1) = 2e-3, claim 2e-4: 1000 runs refute it in about 17 of 20 seeds (benchmark); the plan keeps going
    mu = 1.0 / gaussian_sigma(1.0, 1.0, 2e-3)
    plan = SequentialPlan(1.0, 2e-4, 0.95, budget=16_000)
    for seed in range(10):
        losses = np.random.default_rng(seed).normal(mu * mu / 2, mu, 16_000)
        step = run(plan, losses)
        assert step.decision == "refuted", (seed, step.reason)


def test_correct_claims_are_not_refuted_under_optional_stopping():
    # claim = the true delta(1); each run of the plan refutes with probability <= 0.05 whatever the stopping, so
    # more than binom.ppf(0.999, 200, 0.05) refutations in 200 plans has probability < 0.001
    mu = 1.0 / gaussian_sigma(1.0, 1.0, 1e-2)
    plan = SequentialPlan(1.0, 1e-2, 0.95, budget=8000, futility=np.inf)
    rng = np.random.default_rng(99)
    refuted = sum(run(plan, rng.normal(mu * mu / 2, mu, 8000)).decision == "refuted" for _ in range(200))
    assert refuted <= stats.binom.ppf(0.999, 200, 0.05)


def test_futility_and_budget_end_the_plan():
    plan = SequentialPlan(1.0, 1e-2, 0.95, budget=4000)
    zeros = np.zeros(4000)
    assert plan.decide(zeros[:1000]).decision == "continue"
    assert plan.decide(zeros[:2000]).decision == "not refuted"  # futile: estimate 0
    no_futility = SequentialPlan(1.0, 1e-2, 0.95, budget=4000, futility=np.inf)
    last = no_futility.decide(zeros)
    assert last.decision == "not refuted" and "budget" in last.reason


@pytest.mark.parametrize("kwargs, match", [
    ({"budget": 500}, "budget must be >= 1000"),
    ({"first": 1}, "first must be >= 2"),
    ({"confidence": 1.0}, "confidence must lie in"),
    ({"futility": 1.0}, "futility must be > 1"),
])
def test_bad_plans_are_named(kwargs, match):
    args = {"epsilon": 1.0, "delta_claimed": 1e-3, "confidence": 0.95, "budget": 4000} | kwargs
    with pytest.raises(PrivacyParameterError, match=match):
        SequentialPlan(**args)


def test_a_sample_size_off_the_plan_is_refused():
    with pytest.raises(PrivacyParameterError, match="1500 runs is not a planned look"):
        SequentialPlan(1.0, 1e-3, 0.95, budget=4000).decide(np.zeros(1500))
