"""Tests of asyncdp.problems.problem and the asyncdp.errors hierarchy."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from asyncdp import errors
from asyncdp.problems.costs import FunctionClass, RendezvousQuadratic, UserCost, WeightedQuadratic
from asyncdp.problems.domains import Ball, Box, Reals
from asyncdp.errors import ConstantViolationError, ProblemError, ScenarioError
from asyncdp.problems.problem import Problem, rendezvous_problem

ADDR = np.array([[0.5, 0.5], [-0.5, 0.9], [0.3, -1.0], [1.0, 1.0]])


def test_rendezvous_problem_example2_constants_and_optimum() -> None:
    p = rendezvous_problem(ADDR)
    assert p.num_agents == 4 and p.dim == 2
    assert p.domain == Box(-1.0, 1.0, dim=2)
    c = p.constants
    assert c.C1 == pytest.approx(2 * math.sqrt(2))
    assert c.C2 == pytest.approx(4 * math.sqrt(2))
    assert c.C3 == c.C4 == c.L == 2.0
    assert np.allclose(p.optimum, ADDR.mean(axis=0), rtol=0, atol=1e-15)
    expected_value = float(np.sum((ADDR - ADDR.mean(axis=0)) ** 2))
    assert p.optimal_value == pytest.approx(expected_value, rel=1e-14)


def test_rendezvous_problem_custom_box_and_outside_address() -> None:
    p = rendezvous_problem([[0.0, 4.0], [2.0, 0.0]], low=0.0, high=5.0)
    assert p.domain == Box(0.0, 5.0, dim=2)
    assert p.constants.C2 == pytest.approx(2 * 5 * math.sqrt(2))
    with pytest.raises(ProblemError, match=r"agent 1 = \[2, 0\] lies outside"):
        rendezvous_problem([[0.0, 0.0], [2.0, 0.0]])


def test_default_constants_equal_family_class() -> None:
    costs = WeightedQuadratic(ADDR * 3, [1.0, 2.0, 0.5, 4.0])
    dom = Ball([0.0, 0.0], 1.0)
    p = Problem(dom, costs)
    assert p.constants == costs.function_class(dom)
    assert p.constants.mu == 0.5 and p.constants.L == 4.0


def test_optimum_is_cached_read_only_and_optimal() -> None:
    costs = WeightedQuadratic(ADDR * 3, [1.0, 2.0, 0.5, 4.0])
    p = Problem(Ball([0.0, 0.0], 1.0), costs)
    x1 = p.optimum
    assert p.optimum is x1
    with pytest.raises(ValueError):
        x1[0] = 0.0
    # nothing sampled in the ball does better
    ys = p.domain.sample(np.random.default_rng(0), 5000)
    assert np.all(costs.total_value(ys) >= p.optimal_value - 1e-12)
    assert p.optimal_value == pytest.approx(float(costs.total_value(x1)))


def test_dimension_mismatch_names_both_dims() -> None:
    with pytest.raises(ProblemError, match=r"costs.dim = 2 differs from domain.dim = 3"):
        Problem(Box(-1.0, 1.0, dim=3), RendezvousQuadratic(np.zeros((2, 2))))


def test_wrong_types() -> None:
    with pytest.raises(ProblemError, match="domain must be a Domain"):
        Problem("box", RendezvousQuadratic(np.zeros((2, 2))))  # type: ignore[arg-type]
    with pytest.raises(ProblemError, match="costs must be a CostFamily"):
        Problem(Box(-1.0, 1.0, dim=2), np.zeros((2, 2)))  # type: ignore[arg-type]
    with pytest.raises(ProblemError, match="constants must be a FunctionClass"):
        bad: object = {"C2": 1.0}
        Problem(Box(-1.0, 1.0, dim=2), RendezvousQuadratic(np.zeros((2, 2))), bad)  # type: ignore


def test_declared_constants_looser_ok_tighter_rejected() -> None:
    box = Box(-1.0, 1.0, dim=2)
    costs = RendezvousQuadratic(ADDR)
    loose = FunctionClass(diameter=3.0, gradient_bound=6.0, strong_convexity=1.0, hessian_bound=3.0)
    assert Problem(box, costs, loose).constants is loose
    tight = FunctionClass(gradient_bound=2.0)
    with pytest.raises(ConstantViolationError, match=r"C2 = G .*declared 2.0 < derived 5.65"):
        Problem(box, costs, tight)


def test_adjacent_changes_only_one_agent() -> None:
    p = rendezvous_problem(ADDR)
    q = p.adjacent(2, address=[-1.0, 1.0])
    assert q.domain == p.domain and q.constants == p.constants
    assert np.array_equal(q.costs.addresses[2], [-1.0, 1.0])
    keep = [0, 1, 3]
    assert np.array_equal(q.costs.addresses[keep], p.costs.addresses[keep])
    assert np.array_equal(p.costs.addresses, ADDR)  # the original is untouched
    new_addr = ADDR.copy()
    new_addr[2] = [-1.0, 1.0]
    assert np.allclose(q.optimum, new_addr.mean(axis=0))
    # same gradients for everyone else at any point
    x = np.array([0.2, -0.3])
    assert np.array_equal(q.costs.gradient(keep, x), p.costs.gradient(keep, x))
    assert not np.array_equal(q.costs.gradient(2, x), p.costs.gradient(2, x))


def test_adjacent_must_stay_in_the_class() -> None:
    p = rendezvous_problem(ADDR)
    with pytest.raises(ProblemError, match="agent 0 = .* lies outside"):
        p.adjacent(0, address=[2.0, 0.0])
    with pytest.raises(ProblemError, match="unknown field"):
        p.adjacent(0, weight=2.0)
    wq = Problem(Box(-1.0, 1.0, dim=2), WeightedQuadratic(ADDR, [1.0, 2.0, 2.0, 3.0]))
    assert wq.adjacent(1, weight=1.5).constants == wq.constants  # within [mu, L]
    with pytest.raises(ConstantViolationError, match="C4"):
        wq.adjacent(1, weight=5.0)  # curvature above the declared L = C4 = 3
    with pytest.raises(ConstantViolationError, match="C3 = mu"):
        wq.adjacent(1, weight=0.5)  # curvature below the declared mu = 1


def test_adjacent_user_cost_keeps_declared_constants() -> None:
    fc = FunctionClass(gradient_bound=10.0, strong_convexity=2.0, hessian_bound=2.0)
    vals = [lambda x, a=a: float((x - a) @ (x - a)) for a in ADDR]
    grads = [lambda x, a=a: 2.0 * (x - a) for a in ADDR]
    p = Problem(Box(-1.0, 1.0, dim=2), UserCost(vals, grads, fc, dim=2))
    q = p.adjacent(0, value_fn=lambda x: float(x @ x), gradient_fn=lambda x: 2.0 * x)
    assert q.constants == p.constants
    expected = np.vstack([np.zeros(2), ADDR[1:]]).mean(axis=0)
    assert np.allclose(q.optimum, expected, atol=1e-9)


def test_problem_is_frozen_and_serializable() -> None:
    p = rendezvous_problem(ADDR)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.domain = Reals(2)  # type: ignore[misc]
    d = json.loads(json.dumps(p.to_dict()))
    assert d["num_agents"] == 4 and d["domain"]["type"] == "Box"
    assert d["costs"]["addresses"] == ADDR.tolist()
    assert d["constants"]["gradient_bound"] == pytest.approx(4 * math.sqrt(2))
    assert "optimum" not in d
    d2 = p.to_dict(include_optimum=True)
    assert np.allclose(d2["optimum"], ADDR.mean(axis=0))
    assert d2["optimal_value"] == pytest.approx(p.optimal_value)


def test_unbounded_problem() -> None:
    p = Problem(Reals(2), RendezvousQuadratic(ADDR * 10))
    assert p.constants.C2 is None and p.constants.mu == 2.0
    assert np.allclose(p.optimum, (ADDR * 10).mean(axis=0))


# ------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "name, parent",
    [
        ("ProblemError", "ScenarioError"),
        ("CostValueError", "ProblemError"),
        ("ConstantViolationError", "ProblemError"),
        ("AlgorithmParameterError", "ScenarioError"),
        ("TopologyMismatchError", "ScenarioError"),
        ("LinkModelError", "ScenarioError"),
        ("TimingError", "ScenarioError"),
        ("HorizonError", "ScenarioError"),
        ("MessageLostError", "ScenarioError"),
        ("NoiseError", "ScenarioError"),
    ],
)
def test_error_hierarchy(name: str, parent: str) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, getattr(errors, parent))
    assert issubclass(cls, ScenarioError) and issubclass(cls, ValueError)
    assert cls.__doc__ and len(cls.__doc__.strip().splitlines()) == 1
    assert name in errors.__all__


def test_cost_value_error_carries_context() -> None:
    err = errors.CostValueError("agent 1, round 2: bad", agent=1, round_index=2, point=[0.0])
    assert str(err) == "agent 1, round 2: bad"
    assert (err.agent, err.round_index, err.point) == (1, 2, [0.0])
