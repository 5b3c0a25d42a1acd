"""asyncdp.metrics: the accuracy metrics, once, on arrays with any leading axes (checked by hand)."""

from __future__ import annotations

import dataclasses
import json
import pickle

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from asyncdp import REGISTRY
from asyncdp.metrics import MetricCurve, consensus_error, deviation, optimality_error
from asyncdp import metrics

# one round, N = 3 agents in the plane: (0, 0), (3, 4), (0, 4); mean (1, 8/3)
ROUND = np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 4.0]])


def test_one_round_by_hand():
    assert float(consensus_error(ROUND)) == 5.0  # agents 0 and 1
    assert float(optimality_error(ROUND, [1.0, 0.0])) == pytest.approx((8 / 3) ** 2)
    # agent 0 is farthest from the mean: (-1, -8/3) -> sqrt(1 + 64/9) (agent 1: sqrt(4 + 16/9))
    assert float(deviation(ROUND)) == pytest.approx(np.sqrt(1 + 64 / 9))
    assert consensus_error(ROUND).shape == deviation(ROUND).shape == optimality_error(ROUND, [0, 0]).shape == ()


def test_leading_axes_are_kept_and_rows_are_independent():
    # (R, T + 1, N, n) = (2, 3, 3, 2): run 1 is run 0 scaled by 2 and shifted by (1, 1)
    run0 = np.stack([ROUND, ROUND / 2, np.zeros((3, 2))])
    x = np.stack([run0, 2 * run0 + 1])
    opt = np.array([1.0, 1.0])
    cons, dev, err = consensus_error(x), deviation(x), optimality_error(x, opt)
    assert cons.shape == dev.shape == err.shape == (2, 3)
    assert cons.tolist() == [[5.0, 2.5, 0.0], [10.0, 5.0, 0.0]]
    assert np.allclose(dev[1], 2 * dev[0])
    # mean of run 1, round 2 is (1, 1) = opt; of run 0, round 2 is (0, 0): distance^2 2
    assert err[:, 2].tolist() == [2.0, 0.0]
    for r in range(2):  # a row of the stack is the metric of that run alone
        assert np.array_equal(cons[r], consensus_error(x[r])) and np.array_equal(dev[r], deviation(x[r]))
        assert np.array_equal(err[r], optimality_error(x[r], opt))


def test_consensus_error_bounds_and_blocks(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5, 30, 3))
    whole = consensus_error(x)
    dev = deviation(x)
    assert (dev <= whole + 1e-12).all() and (whole <= 2 * dev + 1e-12).all()
    pairs = np.sqrt(((x[..., :, None, :] - x[..., None, :, :]) ** 2).sum(-1)).max(axis=(-2, -1))
    assert np.array_equal(whole, pairs)
    for block in (30 * 30 * 3 * 2, 30 * 3, 1):  # several rounds, rows of one round, one row at a time
        monkeypatch.setattr(metrics, "_BLOCK", block)
        assert np.array_equal(consensus_error(x), whole), block


@pytest.mark.parametrize("fn", [consensus_error, deviation, lambda x: optimality_error(x, [0.0])])
def test_bad_shapes_are_refused(fn):
    with pytest.raises(ValueError, match=r"shape \(\.\.\., N, n\).*got shape \(3,\)"):
        fn(np.zeros(3))


def test_no_agents_is_refused():
    with pytest.raises(ValueError, match="no agents"):
        consensus_error(np.zeros((2, 0, 3)))


def test_metric_curve_reads_the_same_called_or_indexed():
    values = np.array([[3.0, 1.0], [4.0, 2.0]])
    c = MetricCurve.of(values)
    assert type(c()) is np.ndarray and np.array_equal(c(), values)
    assert np.array_equal(c[:, -1], [1.0, 2.0]) and c()[1, 0] == c[1, 0] == 4.0
    assert type(c.mean(axis=0)) is np.ndarray and type(c + 1) is np.ndarray
    assert type(pickle.loads(pickle.dumps(c))) is np.ndarray  # pickles as a plain array
    assert repr(c) == repr(values)


def test_batch_result_metrics_and_pickles():
    sc = REGISTRY["huang2015"].example_scenario(seed=4)
    batch = sc.run(engine="batch", runs=3)
    assert np.array_equal(batch.optimality_error(), optimality_error(batch.trajectory, batch.optimum))
    assert np.array_equal(batch.deviation(), deviation(batch.trajectory))
    assert np.array_equal(batch.consensus_error(), consensus_error(batch.trajectory))
    assert batch.horizon == sc.horizon and batch.optimality_error.shape == (3, sc.horizon + 1)
    # the metrics pickle as plain arrays (as earlier versions stored them); loading makes them callable again
    # (the topology, a lazily generated sequence, does not pickle: left out here)
    again = pickle.loads(pickle.dumps(dataclasses.replace(batch, topology=None)))
    assert np.array_equal(again.optimality_error(), batch.optimality_error())  # still callable after loading
    assert np.array_equal(again.deviation[:, -1], batch.deviation()[:, -1])
    res = sc.run()
    assert np.array_equal(res.optimality_error(), optimality_error(res.trajectory, res.optimum))
    assert np.array_equal(res.consensus_error[-1], consensus_error(res.final))
    assert np.array_equal(res.deviation(), deviation(res.trajectory))


def test_batch_and_result_share_summary_table_and_json():
    sc = REGISTRY["huang2015"].example_scenario(seed=4)
    batch, res = sc.run(engine="batch", runs=2), sc.run()
    for one in (batch, res):
        lines = one.summary_table().splitlines()
        assert [line.split()[0] for line in lines] == list(one.summary())
        data = json.loads(one.to_json())
        assert data["metadata"] == json.loads(json.dumps(one.metadata, default=str))
    assert json.loads(batch.to_json())["runs"] == 2


def _brute_force_diameter(points: np.ndarray) -> float:
    diff = points[:, None, :] - points[None, :, :]
    return float(np.sqrt((diff**2).sum(-1)).max())


_coordinates = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
    st.integers(-3, 3).map(float),  # ties, duplicates, points on lines and lattices
)


@given(points=st.integers(1, 4).flatmap(
    lambda dim: hnp.arrays(np.float64, st.tuples(st.integers(1, 60), st.just(dim)), elements=_coordinates)))
@settings(max_examples=300, deadline=None)
def test_pruned_consensus_error_of_many_agents_equals_all_pairs_bit_for_bit(points):
    """The many-agent path (forced here by a tiny block size) prunes pairs but must return the exact maximum."""
    from unittest import mock

    expected = _brute_force_diameter(points)
    with mock.patch.object(metrics, "_BLOCK", 1):
        assert float(consensus_error(points)) == expected
        assert float(consensus_error(points[::-1])) == expected


@pytest.mark.parametrize("shape", ["circle", "two groups", "agreement", "gaussian"])
def test_pruned_consensus_error_on_hard_and_easy_clouds(shape):
    from unittest import mock

    n = 1500
    rng = np.random.default_rng(5)
    angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
    points = {"circle": np.c_[np.cos(angles), np.sin(angles)],  # no pruning possible
              "two groups": np.r_[np.zeros((n // 2, 3)), np.full((n - n // 2, 3), 0.5)],
              "agreement": np.full((n, 2), 0.25),
              "gaussian": rng.normal(size=(n, 2))}[shape]
    with mock.patch.object(metrics, "_BLOCK", 64):
        assert float(consensus_error(points)) == _brute_force_diameter(points)


def _near_tie_on_a_circle() -> np.ndarray:
    """Two points 3 + 4.5e-9 apart and 38 on the unit circle, centroid at 0: radii that nearly tie the bound."""
    m = 38
    x = -(1 - 4.5e-9) / m + np.repeat(np.linspace(-1e-3, 1e-3, m // 2), 2)
    x -= (x.sum() + (1 - 4.5e-9)) / m
    rest = np.c_[x, np.where(np.arange(m) % 2, 1.0, -1.0) * np.sqrt(1 - x**2)]
    return np.r_[[[2.0, 0.0], [-1 - 4.5e-9, 0.0]], rest]


@pytest.mark.parametrize("name, points", [
    ("near tie of the pruning bound", _near_tie_on_a_circle()),
    ("squares in the subnormal range", np.repeat(np.array([[-1.2e-162, 0], [1.2e-162, 0], [0, -1.5e-162],
                                                           [0, 1.5e-162]]), 50, axis=0)),
    ("inf", np.r_[np.random.default_rng(0).normal(size=(50, 2)), [[np.inf, 0.0], [-np.inf, 1.0]]]),
    ("nan", np.r_[np.random.default_rng(0).normal(size=(50, 2)), [[np.nan, 0.0]]]),
])
def test_pruned_consensus_error_edge_cases(name, points):
    from unittest import mock

    with np.errstate(invalid="ignore", over="ignore"):
        expected = _brute_force_diameter(points)
        with mock.patch.object(metrics, "_BLOCK", 1):
            got = float(consensus_error(points))
    assert got == expected or (np.isnan(got) and np.isnan(expected)), name


@settings(max_examples=200)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 6), st.integers(1, 4)),
                  elements=st.floats(-1e150, 1e150, allow_subnormal=True)),
       hnp.arrays(np.float64, 4, elements=st.floats(-1e150, 1e150)))
def test_coordinate_columns_give_the_reductions_bits(x, opt):
    """The plane's fast path (coordinates as columns) equals numpy's reduction over the coordinates bit for bit.

    Reference: the definitions written with ``(d ** 2).sum(-1)`` over rows of coordinates. With at most two
    nonnegative squares per row the order of addition cannot change the sum, so equality is exact.
    """
    optimum = opt[:x.shape[-1]]
    with np.errstate(over="ignore", invalid="ignore"):
        xbar = x.mean(axis=-2)
        ref_err = ((xbar - optimum) ** 2).sum(-1)
        ref_dev = np.sqrt(((x - xbar[..., None, :]) ** 2).sum(-1)).max(axis=-1)
        err, dev = metrics.optimality_error_and_deviation(x, optimum)
        alone = optimality_error(x, optimum), deviation(x)
    for got in (err, alone[0]):
        assert got.tobytes() == ref_err.tobytes()
    for got in (dev, alone[1]):
        assert got.tobytes() == ref_dev.tobytes()
