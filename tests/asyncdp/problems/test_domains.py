"""Tests of asyncdp.problems.domains: exact projections, membership, geometry, sampling, errors."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from asyncdp.problems.domains import Ball, Box, Domain, Reals, domain_from_dict
from asyncdp.errors import ProblemError, ScenarioError

FLOATS = st.floats(min_value=-50.0, max_value=50.0, allow_nan=False, allow_infinity=False)


def _points(dim: int, leading: int = 1):
    return hnp.arrays(np.float64, (leading, dim), elements=FLOATS)


DOMAINS = [
    Box(-1.0, 1.0, dim=2),
    Box([-2.0, 0.0, 1.0], [0.5, 3.0, 1.5]),
    Ball([0.3, -0.7], 1.5),
    Ball([1.0, 2.0, -1.0], 0.25),
]
BOUNDED_IDS = ["box2", "box3", "ball2", "ball3"]


# ---------------------------------------------------------------- projection
def test_box_projection_matches_manual_clip() -> None:
    box = Box([-1.0, 0.0], [2.0, 3.0])
    assert np.array_equal(box.project([5.0, -1.0]), [2.0, 0.0])
    assert np.array_equal(box.project([0.5, 1.5]), [0.5, 1.5])  # inside: unchanged
    assert np.array_equal(box.project([-7.0, 3.5]), [-1.0, 3.0])


def test_box_projection_is_vectorized_over_leading_axes() -> None:
    box = Box(-1.0, 1.0, dim=2)
    x = np.array([[[3.0, 0.2], [-0.5, -4.0]], [[0.0, 0.0], [9.0, 9.0]]])  # (2, 2, 2)
    expected = np.array([[[1.0, 0.2], [-0.5, -1.0]], [[0.0, 0.0], [1.0, 1.0]]])
    out = box.project(x)
    assert out.shape == (2, 2, 2)
    assert np.array_equal(out, expected)


def test_ball_projection_is_radial() -> None:
    ball = Ball([1.0, 1.0], 2.0)
    # x - c = (3, 4), norm 5 -> c + 2 * (0.6, 0.8)
    assert np.allclose(ball.project([4.0, 5.0]), [2.2, 2.6], rtol=0, atol=1e-15)
    assert np.array_equal(ball.project([1.5, 0.5]), [1.5, 0.5])  # inside: unchanged
    assert np.array_equal(ball.project([1.0, 1.0]), [1.0, 1.0])  # the center itself


def test_reals_projection_is_identity_and_a_copy() -> None:
    x = np.array([[1e6, -3.0], [0.0, 2.0]])
    out = Reals(2).project(x)
    assert np.array_equal(out, x)
    out[0, 0] = 0.0
    assert x[0, 0] == 1e6


@pytest.mark.parametrize("domain", DOMAINS, ids=BOUNDED_IDS)
def test_projection_returns_a_new_array(domain: Domain) -> None:
    x = domain.center.copy()
    out = domain.project(x)
    out += 1.0
    assert np.array_equal(x, domain.center)


@pytest.mark.parametrize("domain", DOMAINS, ids=BOUNDED_IDS)
@given(data=st.data())
def test_projection_properties(domain: Domain, data: st.DataObject) -> None:
    """Idempotent, lands in X, non-expansive and satisfies <x - P x, y - P x> <= 0."""
    x = data.draw(_points(domain.dim, 2))
    y_in = domain.sample(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), 5)
    px = domain.project(x)
    assert np.all(domain.contains(px))
    assert np.array_equal(domain.project(px), px) or np.allclose(
        domain.project(px), px, rtol=0, atol=1e-13
    )
    # non-expansive
    lhs = np.linalg.norm(px[0] - px[1])
    rhs = np.linalg.norm(x[0] - x[1])
    assert lhs <= rhs * (1 + 1e-12) + 1e-12
    # variational characterization of the Euclidean projection
    for k in range(2):
        inner = (y_in - px[k]) @ (x[k] - px[k])
        scale = 1.0 + np.linalg.norm(x[k] - px[k]) * (1.0 + np.abs(y_in - px[k]).max())
        assert np.all(inner <= 1e-10 * scale)


@pytest.mark.parametrize("domain", DOMAINS, ids=BOUNDED_IDS)
@given(data=st.data())
def test_projection_is_nearest_among_samples(domain: Domain, data: st.DataObject) -> None:
    x = data.draw(_points(domain.dim, 1))[0]
    cand = domain.sample(np.random.default_rng(1), 300)
    d_proj = np.linalg.norm(x - domain.project(x))
    assert np.all(np.linalg.norm(cand - x, axis=1) >= d_proj - 1e-12)


# ---------------------------------------------------------------- membership
def test_contains_boundary_tolerance_and_shape() -> None:
    box = Box(-1.0, 1.0, dim=2)
    pts = np.array([[1.0, -1.0], [1.0 + 1e-13, 0.0], [1.0 + 1e-6, 0.0], [0.0, np.nan]])
    assert box.contains(pts).tolist() == [True, True, False, False]
    assert not box.contains([1.0 + 1e-6, 0.0])
    assert box.contains([1.0 + 1e-6, 0.0], tol=1e-5)
    assert box.contains(np.zeros((3, 4, 2))).shape == (3, 4)
    ball = Ball([0.0, 0.0], 1.0)
    assert ball.contains([[0.6, 0.8], [0.6, 0.80001]]).tolist() == [True, False]
    assert bool(Reals(2).contains([1e300, -1e300]))
    assert not bool(Reals(2).contains([np.inf, 0.0]))


def test_contains_rejects_negative_tolerance() -> None:
    with pytest.raises(ProblemError, match="tol"):
        Box(-1.0, 1.0, dim=1).contains([0.0], tol=-1.0)


# ------------------------------------------------------------------ geometry
def test_box_geometry_example2() -> None:
    box = Box(-1.0, 1.0, dim=2)  # Huang, Mitra and Vaidya (ICDCN 2015), Example 2
    assert box.diameter == pytest.approx(2 * math.sqrt(2), rel=1e-15)
    assert box.radius_bound == pytest.approx(math.sqrt(2), rel=1e-15)
    assert box.bounded
    verts = {tuple(v) for v in box.extreme_points()}
    assert verts == set(itertools.product([-1.0, 1.0], repeat=2))


def test_asymmetric_box_geometry() -> None:
    box = Box([-2.0, 0.0], [1.0, 4.0])
    assert box.diameter == pytest.approx(5.0)
    assert box.radius_bound == pytest.approx(math.hypot(2.0, 4.0))
    assert np.array_equal(box.center, [-0.5, 2.0])


def test_ball_and_reals_geometry() -> None:
    ball = Ball([3.0, 4.0], 1.0)
    assert ball.diameter == 2.0
    assert ball.radius_bound == pytest.approx(6.0)
    r = Reals(3)
    assert math.isinf(r.diameter) and math.isinf(r.radius_bound)
    assert not r.bounded
    assert np.array_equal(r.center, np.zeros(3))


@pytest.mark.parametrize("domain", DOMAINS, ids=BOUNDED_IDS)
def test_max_distance_against_brute_force(domain: Domain) -> None:
    rng = np.random.default_rng(3)
    p = rng.uniform(-3, 3, size=(4, domain.dim))
    md = domain.max_distance(p)
    assert md.shape == (4,)
    # brute force: sampled points + extreme points never exceed it, and come close
    cand = np.concatenate([domain.sample(rng, 20000), domain.extreme_points()])
    if isinstance(domain, Ball):  # boundary points in the direction away from p
        away = domain.center - p
        away /= np.linalg.norm(away, axis=1, keepdims=True)
        cand = np.concatenate([cand, domain.center + domain.radius * away])
    dist = np.linalg.norm(cand[None, :, :] - p[:, None, :], axis=-1).max(axis=1)
    assert np.all(dist <= md + 1e-12)
    assert np.allclose(dist, md, rtol=1e-9)


# ------------------------------------------------------------------ sampling
@pytest.mark.parametrize("domain", DOMAINS, ids=BOUNDED_IDS)
def test_sample_shape_membership_and_mean(domain: Domain) -> None:
    pts = domain.sample(np.random.default_rng(0), (4000,))
    assert pts.shape == (4000, domain.dim)
    assert np.all(domain.contains(pts))
    assert domain.sample(np.random.default_rng(0), (2, 3)).shape == (2, 3, domain.dim)
    spread = domain.diameter
    assert np.allclose(pts.mean(axis=0), domain.center, atol=0.06 * spread)


def test_ball_sample_is_uniform_in_volume() -> None:
    ball = Ball([0.0, 0.0, 0.0], 2.0)
    pts = ball.sample(np.random.default_rng(1), 20000)
    frac_inner = np.mean(np.linalg.norm(pts, axis=1) <= 1.0)  # volume ratio (1/2)^3
    assert frac_inner == pytest.approx(0.125, abs=0.01)


def test_sample_reals_raises_and_bad_rng() -> None:
    with pytest.raises(ProblemError, match="unbounded"):
        Reals(2).sample(np.random.default_rng(0), 3)
    with pytest.raises(ProblemError, match="rng"):
        Box(0.0, 1.0, dim=1).sample(42, 3)  # type: ignore[arg-type]
    with pytest.raises(ProblemError, match="size"):
        Box(0.0, 1.0, dim=1).sample(np.random.default_rng(0), -1)


# -------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "factory, match",
    [
        (lambda: Box(1.0, 1.0, dim=2), "low must be < high"),
        (lambda: Box([0.0, 2.0], [1.0, 1.0]), "coordinate 1"),
        (lambda: Box(-np.inf, 1.0, dim=2), "low must be finite"),
        (lambda: Box(0.0, np.nan, dim=2), "high must be finite"),
        (lambda: Box(0.0, 1.0), "dim must be given"),
        (lambda: Box([0.0, 0.0], [1.0, 1.0, 1.0]), "different lengths"),
        (lambda: Box([0.0, 0.0], 1.0, dim=3), "dim=3"),
        (lambda: Box(0.0, 1.0, dim=0), "dim must be a positive integer"),
        (lambda: Ball([0.0, 0.0], 0.0), "radius"),
        (lambda: Ball([0.0, 0.0], -1.0), "radius"),
        (lambda: Ball([0.0, np.inf], 1.0), "center must be finite"),
        (lambda: Ball(0.0, 1.0), "dim must be given"),
        (lambda: Reals(0), "dim"),
        (lambda: Reals(True), "dim"),  # type: ignore[arg-type]
    ],
)
def test_invalid_construction(factory, match: str) -> None:
    with pytest.raises(ProblemError, match=match):
        factory()


@pytest.mark.parametrize("domain", [*DOMAINS, Reals(2)], ids=[*BOUNDED_IDS, "reals"])
def test_project_rejects_wrong_shape_and_nonfinite(domain: Domain) -> None:
    with pytest.raises(ProblemError, match=rf"shape \(\.\.\., {domain.dim}\)"):
        domain.project(np.zeros(domain.dim + 1))
    with pytest.raises(ProblemError, match="shape"):
        domain.project(1.0)
    bad = np.zeros(domain.dim)
    bad[-1] = np.nan
    with pytest.raises(ProblemError, match="finite"):
        domain.project(bad)


def test_problem_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        Box(1.0, 0.0, dim=1)
    assert issubclass(ProblemError, ScenarioError)


# ---------------------------------------------------------- serialization
@pytest.mark.parametrize("domain", [*DOMAINS, Reals(4)], ids=[*BOUNDED_IDS, "reals"])
def test_to_dict_roundtrip_and_equality(domain: Domain) -> None:
    d = domain.to_dict()
    json.dumps(d)
    again = domain_from_dict(json.loads(json.dumps(d)))
    assert again == domain
    assert hash(again) == hash(domain)
    assert again is not domain


def test_equality_distinguishes_domains() -> None:
    assert Box(-1.0, 1.0, dim=2) == Box([-1.0, -1.0], [1.0, 1.0])
    assert Box(-1.0, 1.0, dim=2) != Box(-1.0, 2.0, dim=2)
    assert Ball([0.0, 0.0], 1.0) != Box(-1.0, 1.0, dim=2)
    assert Reals(2) != Reals(3)


def test_domain_from_dict_errors() -> None:
    with pytest.raises(ProblemError, match="unknown domain type 'Torus'"):
        domain_from_dict({"type": "Torus"})
    with pytest.raises(ProblemError, match="malformed"):
        domain_from_dict({"type": "Ball", "center": [0.0]})


def test_bounds_are_read_only() -> None:
    box = Box(-1.0, 1.0, dim=2)
    with pytest.raises(ValueError):
        box.low[0] = 5.0
    assert box.low[0] == -1.0
