"""Tests of asyncdp.problems.costs: values, gradients, vectorization, constants, optima, checks."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from asyncdp.problems.costs import (
    CostFamily,
    FunctionClass,
    RendezvousQuadratic,
    UserCost,
    WeightedQuadratic,
    check_constants,
    numeric_optimum,
)
from asyncdp.problems.domains import Ball, Box, Domain, Reals
from asyncdp.errors import ConstantViolationError, CostValueError, ProblemError

RNG = np.random.default_rng(20240601)
ADDR = RNG.uniform(-1.0, 1.0, size=(5, 3))
CENTERS = RNG.uniform(-2.0, 2.0, size=(5, 3))
W_SCALAR = RNG.uniform(0.5, 3.0, size=5)
W_DIAG = RNG.uniform(0.5, 3.0, size=(5, 3))


def _user_quadratic(addresses: np.ndarray, constants: FunctionClass | None = None) -> UserCost:
    """||x - a_i||^2 written as a user cost."""
    fc = constants or FunctionClass(strong_convexity=2.0, hessian_bound=2.0)
    vals = [lambda x, a=a: float((x - a) @ (x - a)) for a in addresses]
    grads = [lambda x, a=a: 2.0 * (x - a) for a in addresses]
    return UserCost(vals, grads, fc, dim=addresses.shape[1], name="quadratic")


def _user_logistic(n_agents: int = 4, dim: int = 3) -> UserCost:
    """A non-quadratic smooth strongly convex cost: softplus(<b_i, x>) + (lam/2)||x||^2."""
    b = np.random.default_rng(7).uniform(-1, 1, size=(n_agents, dim))
    lam = 0.5

    def val(x, bi):
        return float(np.logaddexp(0.0, bi @ x) + 0.5 * lam * x @ x)

    def grad(x, bi):
        return bi / (1.0 + np.exp(-(bi @ x))) + lam * x

    fc = FunctionClass(
        strong_convexity=lam,
        smoothness=lam + 0.25 * float(np.max(np.sum(b * b, axis=1))),
    )
    return UserCost(
        [lambda x, bi=bi: val(x, bi) for bi in b],
        [lambda x, bi=bi: grad(x, bi) for bi in b],
        fc,
        dim=dim,
    )


FAMILIES = {
    "rendezvous": RendezvousQuadratic(ADDR),
    "weighted": WeightedQuadratic(CENTERS, W_SCALAR),
    "weighted_diag": WeightedQuadratic(CENTERS, W_DIAG),
    "user_quadratic": _user_quadratic(ADDR),
    "user_logistic": _user_logistic(),
}


# ------------------------------------------------------------- closed forms
def test_rendezvous_value_and_gradient_closed_form() -> None:
    fam = RendezvousQuadratic([[1.0, 2.0], [-1.0, 0.0]])
    x = np.array([0.5, -0.5])
    assert fam.value(0, x) == pytest.approx(0.25 + 6.25)
    assert fam.value(1, x) == pytest.approx(2.25 + 0.25)
    assert np.allclose(fam.gradient(0, x), [-1.0, -5.0])
    assert np.allclose(fam.gradient(1, x), [3.0, -1.0])


def test_weighted_value_and_gradient_closed_form() -> None:
    fam = WeightedQuadratic([[1.0, 0.0], [0.0, 0.0]], [4.0, 1.0])
    x = np.array([0.0, 1.0])
    assert fam.value(0, x) == pytest.approx(2.0 * 2.0)
    assert np.allclose(fam.gradient(0, x), [-4.0, 4.0])
    diag = WeightedQuadratic([[1.0, 0.0]], [[2.0, 6.0]])
    assert diag.value(0, x) == pytest.approx(0.5 * (2.0 * 1.0 + 6.0 * 1.0))
    assert np.allclose(diag.gradient(0, x), [-2.0, 6.0])
    assert diag.diagonal and not fam.diagonal
    assert fam.weights.shape == (2,) and diag.weights.shape == (1, 2)


@pytest.mark.parametrize("name", list(FAMILIES))
@given(x=hnp.arrays(np.float64, (3,), elements=st.floats(-3.0, 3.0)), agent=st.integers(0, 3))
def test_gradient_matches_finite_differences(name: str, x: np.ndarray, agent: int) -> None:
    fam = FAMILIES[name]
    h = 1e-5
    fd = np.array(
        [
            (fam.value(agent, x + h * e) - fam.value(agent, x - h * e)) / (2 * h)
            for e in np.eye(3)
        ]
    )
    g = fam.gradient(agent, x)
    assert g.shape == (3,)
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------- vectorization
@pytest.mark.parametrize("name", list(FAMILIES))
def test_vectorized_over_rounds_and_agents_equals_loop(name: str) -> None:
    fam = FAMILIES[name]
    n_agents = fam.num_agents if name != "user_logistic" else 4
    x = np.random.default_rng(5).uniform(-2, 2, size=(3, n_agents, 3))
    agents = np.arange(n_agents)
    g = fam.gradient(agents, x, round_index=4)
    v = fam.value(agents, x)
    assert g.shape == (3, n_agents, 3) and v.shape == (3, n_agents)
    for r in range(3):
        for i in range(n_agents):
            assert np.array_equal(g[r, i], fam.gradient(i, x[r, i]))
            assert v[r, i] == fam.value(i, x[r, i])


def test_broadcasting_single_point_to_all_agents() -> None:
    fam = FAMILIES["rendezvous"]
    x = np.array([0.1, 0.2, 0.3])
    g = fam.gradient(np.arange(5), x)
    assert g.shape == (5, 3)
    assert np.allclose(g, 2.0 * (x - ADDR))
    assert fam.value(np.int64(2), x).shape == ()
    assert isinstance(fam.value(2, x), float)
    assert np.allclose(fam.total_gradient(x), 2.0 * (5 * x - ADDR.sum(axis=0)))
    assert fam.total_value(x) == pytest.approx(float(np.sum((x - ADDR) ** 2)))
    assert fam.total_value(np.zeros((4, 3))).shape == (4,)


def test_bad_agents_and_shapes() -> None:
    fam = FAMILIES["rendezvous"]
    with pytest.raises(ProblemError, match=r"agent 5"):
        fam.gradient(5, np.zeros(3))
    with pytest.raises(ProblemError, match=r"agent -1"):
        fam.value(np.array([0, -1]), np.zeros((2, 3)))
    with pytest.raises(ProblemError, match="integers"):
        fam.value(np.array([0.0, 1.0]), np.zeros((2, 3)))
    with pytest.raises(ProblemError, match=r"shape \(\.\.\., 3\).*\(4, 2\)"):
        fam.gradient(np.arange(4), np.zeros((4, 2)))
    with pytest.raises(ProblemError, match="broadcast"):
        fam.gradient(np.arange(5), np.zeros((4, 3)))
    with pytest.raises(ProblemError, match="round 9"):
        fam.gradient(0, np.zeros(2), round_index=9)


# ------------------------------------------------------------- non-finite
def test_nan_user_cost_names_agent_and_round() -> None:
    ok = lambda x: float(x @ x)  # noqa: E731
    bad = lambda x: float("nan")  # noqa: E731
    fam = UserCost([ok, ok, bad], [lambda x: 2 * x] * 3, FunctionClass(), dim=2)
    with pytest.raises(CostValueError, match=r"agent 2, round 17") as info:
        fam.value(np.arange(3), np.ones((3, 2)), round_index=17)
    assert info.value.agent == 2 and info.value.round_index == 17
    assert "x = [1, 1]" in str(info.value)
    assert np.array_equal(info.value.point, [1.0, 1.0])


def test_inf_user_gradient_names_agent_round_and_point() -> None:
    def grad(x):
        return np.array([np.inf, 0.0]) if x[0] > 0.5 else 2 * x

    fam = UserCost([lambda x: 0.0] * 2, [lambda x: 2 * x, grad], FunctionClass(), dim=2)
    x = np.array([[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.75, -0.25]]])
    with pytest.raises(CostValueError, match=r"agent 1, round 3.*x = \[0.75, -0.25\]"):
        fam.gradient(np.arange(2), x, round_index=3)
    assert isinstance(CostValueError("m"), ProblemError)


def test_builtin_family_raises_on_nan_point() -> None:
    x = np.zeros((5, 3))
    x[3, 1] = np.nan  # only agent 3 sees the bad point
    pattern = r"^agent 3: gradient is not finite.*x = \[0, nan, 0\]"
    with pytest.raises(CostValueError, match=pattern):
        FAMILIES["rendezvous"].gradient(np.arange(5), x)


def test_user_cost_output_shape_errors() -> None:
    fam = UserCost(
        [lambda x: np.ones(2)], [lambda x: np.ones(3)], FunctionClass(), dim=2
    )
    with pytest.raises(ProblemError, match=r"agent 0.*scalar"):
        fam.value(0, np.zeros(2))
    with pytest.raises(ProblemError, match=r"agent 0, round 2.*shape \(2,\)"):
        fam.gradient(0, np.zeros(2), round_index=2)


# -------------------------------------------------------------- constants
def test_rendezvous_constants_example2() -> None:
    fam = RendezvousQuadratic([[0.5, -0.5], [1.0, 1.0], [-1.0, 0.0]])
    fc = fam.function_class(Box(-1.0, 1.0, dim=2))
    assert fc.C1 == pytest.approx(2 * math.sqrt(2))
    assert fc.C2 == pytest.approx(4 * math.sqrt(2))
    assert fc.G == fc.C2
    assert fc.C3 == fc.mu == fc.C4 == fc.L == 2.0
    ball = fam.function_class(Ball([0.0, 0.0], 2.0))
    assert ball.C1 == 4.0 and ball.C2 == 8.0
    unbounded = fam.function_class(Reals(2))
    assert unbounded.C1 is None and unbounded.C2 is None and unbounded.mu == 2.0


def test_rendezvous_constants_reject_address_outside_domain() -> None:
    fam = RendezvousQuadratic([[0.0, 0.0], [0.0, 1.5]])
    with pytest.raises(ProblemError, match=r"agent 1 = \[0, 1.5\]"):
        fam.function_class(Box(-1.0, 1.0, dim=2))
    with pytest.raises(ProblemError, match="domain dim = 3"):
        fam.function_class(Box(-1.0, 1.0, dim=3))


def test_weighted_constants_against_brute_force() -> None:
    box = Box([-1.0, -2.0, 0.0], [1.0, 0.5, 3.0])
    verts = box.extreme_points()
    for weights in (W_SCALAR, W_DIAG):
        fam = WeightedQuadratic(CENTERS, weights)
        fc = fam.function_class(box)
        w = np.broadcast_to(np.reshape(weights, (5, -1)), (5, 3))
        assert fc.mu == pytest.approx(w.min()) and fc.L == pytest.approx(w.max())
        assert fc.C4 == fc.L
        # ||W_i (x - a_i)|| is convex in x, so its max over the box is at a vertex
        brute = max(
            np.linalg.norm(w[i] * (v - CENTERS[i])) for i in range(5) for v in verts
        )
        assert fc.C2 == pytest.approx(brute, rel=1e-12)
    ball = Ball([0.0, 0.0, 0.0], 1.0)
    fc = WeightedQuadratic(CENTERS, W_SCALAR).function_class(ball)
    expected = max(W_SCALAR[i] * (np.linalg.norm(CENTERS[i]) + 1.0) for i in range(5))
    assert fc.C2 == pytest.approx(expected)


def test_function_class_validation_and_defaults() -> None:
    fc = FunctionClass(gradient_bound=3, hessian_bound=2.0)
    assert fc.L == 2.0 and isinstance(fc.G, float)
    assert FunctionClass(hessian_bound=2.0, smoothness=1.5).L == 1.5
    for bad in (-1.0, math.inf, math.nan, "x", True):
        with pytest.raises(ProblemError, match="gradient_bound"):
            FunctionClass(gradient_bound=bad)  # type: ignore[arg-type]
    with pytest.raises(ConstantViolationError, match="strong_convexity = 3.0 exceeds smoothness"):
        FunctionClass(strong_convexity=3.0, smoothness=2.0)
    assert fc.require("C2") == 3.0
    with pytest.raises(ProblemError, match=r"C3 = mu .* required by algorithm X"):
        fc.require("mu", by="algorithm X")
    with pytest.raises(ProblemError, match="unknown constant name 'C9'"):
        fc.require("C9")
    assert fc.replace(G=5.0).gradient_bound == 5.0
    assert fc.to_dict()["hessian_bound"] == 2.0


def test_conflicts_with() -> None:
    derived = FunctionClass(diameter=2.0, gradient_bound=4.0, strong_convexity=2.0, smoothness=2.0)
    assert derived.conflicts_with(derived) == []
    loose = FunctionClass(diameter=3.0, gradient_bound=5.0, strong_convexity=1.0, smoothness=4.0)
    assert loose.conflicts_with(derived) == []
    tight = FunctionClass(gradient_bound=3.0, strong_convexity=2.5)
    msgs = tight.conflicts_with(derived)
    assert len(msgs) == 2 and "C2" in msgs[0] and "C3" in msgs[1]


# ----------------------------------------------------------------- optima
def _assert_variational_inequality(fam: CostFamily, domain: Domain, x_star: np.ndarray) -> None:
    """First-order optimality on a convex set: <grad f(x*), y - x*> >= 0 for all y in X."""
    assert bool(domain.contains(x_star))
    g = fam.total_gradient(x_star)
    ys = np.concatenate(
        [domain.sample(np.random.default_rng(11), 3000), domain.extreme_points()]
    )
    inner = (ys - x_star) @ g
    assert np.all(inner >= -1e-9 * (1.0 + np.linalg.norm(g)))


def test_rendezvous_optimum_is_mean_when_inside() -> None:
    fam = RendezvousQuadratic([[0.5, 0.5], [-0.5, 0.9], [0.3, -1.0]])
    box = Box(-1.0, 1.0, dim=2)
    assert np.allclose(fam.optimum(box), [0.1, 0.4 / 3], rtol=0, atol=1e-15)
    assert np.allclose(fam.total_gradient(fam.optimum(box)), 0.0, atol=1e-14)


def test_rendezvous_optimum_is_projected_mean_when_outside() -> None:
    fam = RendezvousQuadratic([[3.0, 0.0], [1.0, 2.0]])  # mean (2, 1)
    box = Box(-1.0, 1.0, dim=2)
    x_star = fam.optimum(box)
    assert np.array_equal(x_star, [1.0, 1.0])
    _assert_variational_inequality(fam, box, x_star)
    ball = Ball([0.0, 0.0], 1.0)
    x_ball = fam.optimum(ball)
    assert np.allclose(x_ball, np.array([2.0, 1.0]) / math.sqrt(5.0))
    _assert_variational_inequality(fam, ball, x_ball)


@pytest.mark.parametrize(
    "domain",
    [
        Box(-0.5, 0.5, dim=3),
        Box([-1.0, 0.5, -2.0], [0.0, 2.0, 2.0]),
        Ball([1.0, 1.0, 1.0], 0.8),
        Reals(3),
    ],
    ids=["box", "box_asym", "ball", "reals"],
)
def test_user_quadratic_numeric_optimum_matches_closed_form(domain: Domain) -> None:
    addresses = RNG.uniform(-2.0, 2.0, size=(6, 3))
    closed = RendezvousQuadratic(addresses).optimum(domain)
    numeric = _user_quadratic(addresses).optimum(domain)
    assert np.allclose(numeric, closed, rtol=0, atol=1e-9)
    if domain.bounded:
        _assert_variational_inequality(_user_quadratic(addresses), domain, numeric)


@pytest.mark.parametrize(
    "domain", [Box(-1.0, 1.0, dim=3), Ball([0.0, 0.5, 0.0], 1.0)], ids=["box", "ball"]
)
@pytest.mark.parametrize("weights", [W_SCALAR, W_DIAG], ids=["scalar", "diag"])
def test_weighted_optimum_satisfies_optimality(domain: Domain, weights: np.ndarray) -> None:
    fam = WeightedQuadratic(CENTERS * 2.0, weights)  # centers mostly outside X
    x_star = fam.optimum(domain)
    _assert_variational_inequality(fam, domain, x_star)
    assert np.allclose(x_star, numeric_optimum(fam, domain), atol=1e-9)


def test_weighted_optimum_unconstrained_is_weighted_mean() -> None:
    fam = WeightedQuadratic([[0.0, 0.0], [3.0, 6.0]], [2.0, 1.0])
    assert np.allclose(fam.optimum(Reals(2)), [1.0, 2.0])
    diag = WeightedQuadratic([[0.0, 0.0], [3.0, 6.0]], [[2.0, 1.0], [1.0, 2.0]])
    assert np.allclose(diag.optimum(Reals(2)), [1.0, 4.0])


def test_logistic_user_cost_optimum_is_stationary() -> None:
    fam = _user_logistic()
    x_star = fam.optimum(Reals(3))
    assert np.linalg.norm(fam.total_gradient(x_star)) < 1e-9
    box = Box(0.2, 1.0, dim=3)
    _assert_variational_inequality(fam, box, fam.optimum(box))


def test_numeric_optimum_rejects_unknown_domain() -> None:
    class Odd(Domain):
        """A domain type numeric_optimum does not know (delegates to a box)."""

        dim = 3
        _box = Box(-1.0, 1.0, dim=3)
        diameter = _box.diameter
        radius_bound = _box.radius_bound
        center = _box.center

        def extreme_points(self, max_points=1024):
            return self._box.extreme_points(max_points)

        def _project(self, x):
            return self._box._project(x)

        def _contains(self, x, tol):
            return self._box._contains(x, tol)

        def _sample(self, rng, size):
            return self._box._sample(rng, size)

        def _max_distance(self, p):
            return self._box._max_distance(p)

        def to_dict(self):
            return {"type": "Odd"}

    odd = Odd()
    assert np.array_equal(odd.project([2.0, 0.0, 0.0]), [1.0, 0.0, 0.0])
    with pytest.raises(ProblemError, match="no numeric optimizer for domain type Odd"):
        numeric_optimum(_user_quadratic(ADDR), odd)


# --------------------------------------------------------- check_constants
@pytest.mark.parametrize(
    "family, domain",
    [
        (RendezvousQuadratic(ADDR), Box(-1.0, 1.0, dim=3)),
        (RendezvousQuadratic(ADDR), Ball([0.0, 0.0, 0.0], 2.0)),
        (WeightedQuadratic(CENTERS, W_SCALAR), Box(-1.0, 1.0, dim=3)),
        (WeightedQuadratic(CENTERS, W_DIAG), Ball([0.0, 0.0, 0.0], 1.5)),
    ],
    ids=["rdv_box", "rdv_ball", "wq_box", "wq_diag_ball"],
)
def test_check_constants_passes_for_correct_declarations(family, domain) -> None:
    res = check_constants(family, domain, samples=500)
    assert res.holds, res.violations
    assert res.violations == []
    fc = family.function_class(domain)
    assert res.observed["gradient_bound"] <= fc.C2 * (1 + 1e-12)
    assert res.observed["strong_convexity"] >= fc.mu * (1 - 1e-12)
    assert res.observed["smoothness"] <= fc.L * (1 + 1e-12)
    assert res.observed["diameter"] == pytest.approx(domain.diameter)
    res.raise_if_violated()


def test_check_constants_rendezvous_bound_is_attained() -> None:
    fam = RendezvousQuadratic([[1.0, 1.0], [0.0, 0.0]])
    res = check_constants(fam, Box(-1.0, 1.0, dim=2), samples=200)
    # address at a vertex, x at the opposite vertex: ||2(x - a)|| = 4 sqrt 2 = C2
    assert res.observed["gradient_bound"] == pytest.approx(4 * math.sqrt(2), rel=1e-12)
    assert res.observed["strong_convexity"] == pytest.approx(2.0)


def test_check_constants_reports_too_small_gradient_bound() -> None:
    fam = RendezvousQuadratic(ADDR)
    box = Box(-1.0, 1.0, dim=3)
    wrong = fam.function_class(box).replace(C2=1.0)
    res = check_constants(fam, box, samples=300, constants=wrong)
    assert not res.holds
    assert len(res.violations) == 1
    msg = res.violations[0]
    assert "C2" in msg and "declared 1.0" in msg and "agent" in msg and "x = [" in msg
    with pytest.raises(ConstantViolationError, match="C2"):
        res.raise_if_violated()


def test_check_constants_reports_user_declared_errors() -> None:
    fc = FunctionClass(diameter=1.0, gradient_bound=100.0, strong_convexity=2.5, smoothness=2.5,
                       hessian_bound=2.5)
    fam = _user_quadratic(ADDR[:, :2], constants=fc)
    res = check_constants(fam, Box(-1.0, 1.0, dim=2), samples=200)
    text = " | ".join(res.violations)
    assert "C1" in text and "C3 = mu" in text
    assert "C2" not in text and "L (smoothness)" not in text

    too_smooth = FunctionClass(strong_convexity=1.0, smoothness=1.5)
    res = check_constants(_user_quadratic(ADDR[:, :2], too_smooth), Box(-1.0, 1.0, dim=2),
                          samples=100)
    assert any(v.startswith("L (smoothness): declared 1.5") for v in res.violations)


def test_check_constants_logistic_user_cost_holds() -> None:
    fam = _user_logistic()
    res = check_constants(fam, Ball([0.0, 0.0, 0.0], 3.0), samples=150)
    assert res.holds, res.violations
    assert res.observed["strong_convexity"] >= 0.5


def test_check_constants_rejects_unbounded_and_bad_args() -> None:
    fam = RendezvousQuadratic(ADDR)
    with pytest.raises(ProblemError, match="unbounded"):
        check_constants(fam, Reals(3))
    with pytest.raises(ProblemError, match="samples"):
        check_constants(fam, Box(-1.0, 1.0, dim=3), samples=0)


# ---------------------------------------------------------------- adjacency
def test_with_agent_changes_only_that_agent() -> None:
    fam = RendezvousQuadratic(ADDR)
    new = fam.with_agent(2, address=[0.0, 0.0, 0.0])
    assert np.array_equal(new.addresses[2], [0.0, 0.0, 0.0])
    others = [0, 1, 3, 4]
    assert np.array_equal(new.addresses[others], ADDR[others])
    assert np.array_equal(fam.addresses, ADDR)  # original untouched
    again = fam.replace_agent(2, [0.0, 0.0, 0.0])
    assert np.array_equal(again.addresses, new.addresses)
    x = np.ones(3)
    assert np.array_equal(new.gradient(others, x), fam.gradient(others, x))


def test_with_agent_errors() -> None:
    fam = RendezvousQuadratic(ADDR)
    with pytest.raises(ProblemError, match="unknown field"):
        fam.with_agent(0, centre=[0.0, 0.0, 0.0])
    with pytest.raises(ProblemError, match="agent must lie in"):
        fam.with_agent(7, address=[0.0, 0.0, 0.0])
    with pytest.raises(ProblemError, match=r"address must have shape \(3,\)"):
        fam.with_agent(0, address=[0.0, 0.0])
    with pytest.raises(ProblemError, match="no private data"):
        fam.with_agent(0)


def test_weighted_and_user_with_agent() -> None:
    wq = WeightedQuadratic(CENTERS, W_SCALAR).with_agent(1, weight=10.0)
    assert wq.weights[1] == 10.0 and np.array_equal(wq.weights[[0, 2]], W_SCALAR[[0, 2]])
    dq = WeightedQuadratic(CENTERS, W_DIAG).with_agent(0, weight=[1.0, 2.0, 3.0], center=[0, 0, 0])
    assert np.array_equal(dq.weights[0], [1.0, 2.0, 3.0]) and np.all(dq.centers[0] == 0.0)
    with pytest.raises(ProblemError, match="weight must be a scalar"):
        WeightedQuadratic(CENTERS, W_SCALAR).with_agent(1, weight=[1.0, 2.0])
    uc = _user_quadratic(ADDR)
    new = uc.with_agent(0, value_fn=lambda x: 0.0, gradient_fn=lambda x: np.zeros(3))
    assert np.array_equal(new.gradient(0, np.ones(3)), np.zeros(3))
    assert np.allclose(new.gradient(1, np.ones(3)), uc.gradient(1, np.ones(3)))
    with pytest.raises(ProblemError, match="both value_fn and gradient_fn"):
        uc.with_agent(0, value_fn=lambda x: 0.0)


# ------------------------------------------------------------ construction
@pytest.mark.parametrize(
    "factory, match",
    [
        (lambda: RendezvousQuadratic([1.0, 2.0]), r"shape \(N, n\).*\(2,\)"),
        (lambda: RendezvousQuadratic([[0.0, np.nan]]), r"finite.*agent 0"),
        (lambda: WeightedQuadratic([[0.0, 0.0]], [0.0]), "agent 0 has weight 0.0"),
        (lambda: WeightedQuadratic([[0.0, 0.0]], [[1.0, 2.0, 3.0]]), r"weights must have shape"),
        (lambda: UserCost([abs], [abs, abs], FunctionClass(), dim=1), "lengths 1 and 2"),
        (lambda: UserCost([abs], [3], FunctionClass(), dim=1), r"gradient_fns\[0\]"),
        (lambda: UserCost([abs], [abs], {"C2": 1.0}, dim=1), "FunctionClass"),
        (lambda: UserCost([abs], [abs], FunctionClass(), dim=0), "dim"),
    ],
)
def test_invalid_families(factory, match: str) -> None:
    with pytest.raises(ProblemError, match=match):
        factory()


@pytest.mark.parametrize("name", list(FAMILIES))
def test_to_dict_is_json(name: str) -> None:
    d = FAMILIES[name].to_dict()
    assert json.loads(json.dumps(d))["type"] == type(FAMILIES[name]).__name__
    assert d["dim"] == 3


def test_linear_override_gradients_are_the_bases_except_the_agents_and_keep_its_errors() -> None:
    from asyncdp.errors import CostValueError
    from asyncdp.problems.costs import LinearOverride, RendezvousQuadratic

    base = RendezvousQuadratic([[0.0, 0.0], [1.0, -1.0], [2.0, 0.5]])
    fam = LinearOverride(base, 1, [3.0, -4.0])
    rng = np.random.default_rng(0)
    z = rng.normal(size=(4, 3, 2))  # (runs, agents, n): the replay's call
    got = fam.gradient(np.arange(3), z)
    want = base.gradient(np.arange(3), z)
    want[:, 1] = [3.0, -4.0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fam.gradient(2, z[0, 2]), base.gradient(2, z[0, 2]))  # one point
    np.testing.assert_array_equal(fam.gradient(1, z[0, 1]), [3.0, -4.0])
    bad = z.copy()
    bad[2, 0, 1] = np.inf  # the base's gradient of agent 0 is not finite there: the base's error, naming agent 0
    with pytest.raises(CostValueError, match="agent 0"):
        fam.gradient(np.arange(3), bad)
