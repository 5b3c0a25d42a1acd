"""The coordinate-at-a-time batch operations equal numpy's broadcast formulas to the bit, in value and dtype."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from asyncdp.algorithms.clipping import clip_l2
from asyncdp.problems.coordinates import clamp_coordinates, few_coordinates, scale_points
from asyncdp.problems.domains import Box

floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shapes, dtypes and entries (NaN equal to NaN, signed zeros told apart)."""
    return (a.shape == b.shape and a.dtype == b.dtype
            and np.array_equal(np.signbit(a), np.signbit(b)) and np.array_equal(a, b, equal_nan=True))


@given(shapes, st.sampled_from([np.float64, np.float32]), st.data())
def test_scale_points_is_the_broadcast_product(shape, dtype, data):
    v = data.draw(hnp.arrays(dtype, shape, elements=st.floats(width=32)))
    factor = data.draw(hnp.arrays(np.float64, shape[:-1], elements=floats))
    with np.errstate(all="ignore"):
        assert same(scale_points(v, factor), v * factor[..., None])


@given(shapes, st.data())
def test_clamp_coordinates_is_the_broadcast_clamp(shape, data):
    x = data.draw(hnp.arrays(np.float64, shape, elements=floats))
    d = shape[-1]
    low = data.draw(hnp.arrays(np.float64, (d,), elements=st.floats(-10, 0)))
    high = low + data.draw(hnp.arrays(np.float64, (d,), elements=st.floats(0.5, 10)))
    if data.draw(st.booleans()):  # the same bounds in every coordinate
        low, high = np.full(d, low[0]), np.full(d, high[0])
    assert same(clamp_coordinates(x, low, high), np.minimum(np.maximum(x, low), high))


@given(shapes, st.sampled_from([np.float64, np.float32, np.int64]), st.sampled_from([np.float64, np.float32, np.int64]),
       st.sampled_from([np.float64, np.float32, np.int64]), st.booleans(), st.data())
def test_clamp_coordinates_keeps_the_broadcast_dtype_and_leaves_x_alone(shape, x_type, low_type, high_type, same_bounds,
                                                                        data):
    """Other dtypes than a box's float64 (the result's dtype is the broadcast's, which an in-place minimum into the
    maximum's array can lose); a read-only, non-contiguous ``x`` is neither written nor returned."""
    x = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-20, 20))).astype(x_type)
    d = shape[-1]
    low = data.draw(hnp.arrays(np.float64, (d,), elements=st.integers(-10, 0).map(float)))
    high = low + data.draw(hnp.arrays(np.float64, (d,), elements=st.integers(1, 10).map(float)))
    if same_bounds:
        low, high = np.full(d, low[0]), np.full(d, high[0])
    low, high = low.astype(low_type), high.astype(high_type)
    x = np.stack([x, x], axis=-1)[..., 0]  # a view with strides of two entries
    x.flags.writeable = False
    before = x.copy()
    got = clamp_coordinates(x, low, high)
    wanted = np.minimum(np.maximum(x, low), high)
    if few_coordinates(x) and (low == low[0]).all() and (high == high[0]).all():  # two Python floats
        wanted = np.minimum(np.maximum(x, float(low[0])), float(high[0]))
    assert same(got, wanted) and not np.shares_memory(got, x) and same(x, before)


def test_only_batches_of_few_coordinates_are_taken_one_coordinate_at_a_time():
    assert few_coordinates(np.zeros((3, 2))) and few_coordinates(np.zeros((3, 4, 8)))
    assert not few_coordinates(np.zeros(5)) and not few_coordinates(np.zeros((3, 1)))
    assert not few_coordinates(np.zeros((3, 9))) and not few_coordinates(np.zeros((3, 4)), 3)


@given(hnp.arrays(np.float64, (6, 3, 2), elements=st.floats(-1e3, 1e3)))
def test_box_projection_and_clipping_of_a_batch_equal_their_points_one_at_a_time(x):
    box = Box([-1.0, -2.0], [1.0, 0.5])
    projected, clipped = box.project(x), clip_l2(x, 1.5)
    for r in range(x.shape[0]):
        for i in range(x.shape[1]):
            assert same(projected[r, i], np.minimum(np.maximum(x[r, i], box.low), box.high))
            assert same(clipped[r, i], clip_l2(x[r, i][None, :], 1.5)[0])


@given(st.integers(1, 9), st.floats(0.1, 10.0), st.booleans(), st.data())
def test_clipping_a_batch_is_the_broadcast_formula_inside_the_ball_too(width, bound, inside, data):
    # rows all inside the ball take clip_l2's shortcut (a copy); the values must be those of the factors (1.0)
    top = bound / (2.0 * np.sqrt(width)) if inside else 10.0 * bound
    v = data.draw(hnp.arrays(np.float64, (4, 3, width), elements=st.floats(-top, top)))
    norm = np.sqrt(np.add.reduce(v * v, axis=-1))
    got = clip_l2(v, bound)
    assert same(got, v * (bound / np.maximum(norm, bound))[..., None])
    assert got is not v and not np.shares_memory(got, v)
    for other in (np.float64(bound), np.array(bound)):  # (a numpy scalar; a 0-d array takes no shortcut)
        assert same(clip_l2(v, other), got)
