"""clip_l2: one implementation of L2 row clipping, the same bits for one point and for a batch."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from asyncdp.algorithms.clipping import clip_l2

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)


def _reference(v: np.ndarray, bound: float) -> np.ndarray:
    """The vectorized formula, written out: v * (bound / max(||v||, bound)) per row."""
    norm = np.sqrt((v * v).sum(axis=-1, keepdims=True))
    return v * (bound / np.maximum(norm, bound))


@given(rows=arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 12)), elements=finite),
       bound=st.floats(1e-3, 1e3))
def test_one_point_path_gives_the_bits_of_the_batch_path(rows, bound):
    batch = clip_l2(rows, bound)
    assert np.array_equal(batch, _reference(rows, bound))
    for k in range(rows.shape[0]):
        one = clip_l2(rows[k].copy(), bound)
        assert one.tobytes() == batch[k].tobytes()


@pytest.mark.parametrize("n", range(1, 11))
def test_one_point_path_bits_on_many_rows(n):
    """Dense check of the one-point path against the batch path, around n = 7 where the
    one-point path switches from an in-order Python sum to numpy's sum."""
    rng = np.random.default_rng(n)
    rows = rng.standard_normal((3000, n)) * rng.choice([1e-3, 1.0, 1e3], size=(3000, 1))
    # a third of the rows within a few units of roundoff of the bound
    norms = np.sqrt((rows * rows).sum(axis=1, keepdims=True))
    rows[:1000] *= (1.0 + rng.integers(-4, 5, size=(1000, 1)) * 2.0**-52) / norms[:1000]
    batch = clip_l2(rows, 1.0)
    for row, expected in zip(rows, batch):
        assert clip_l2(row.copy(), 1.0).tobytes() == expected.tobytes()


@given(direction=arrays(np.float64, st.integers(1, 8), elements=st.floats(-1, 1, allow_nan=False)),
       bound=st.floats(1e-2, 1e2), rel=st.floats(-1e-12, 1e-12))
def test_rows_at_the_boundary_agree_bitwise(direction, bound, rel):
    """Right where the cheap v @ v filter hands over to the exact formula."""
    norm = float(np.sqrt((direction * direction).sum()))
    if norm == 0.0:
        return
    v = direction * (bound * (1 + rel) / norm)
    assert clip_l2(v, bound).tobytes() == _reference(v[None, :], bound)[0].tobytes()


@given(v=arrays(np.float64, st.integers(1, 10), elements=finite), bound=st.floats(1e-3, 1e3))
def test_result_lies_in_the_ball_and_keeps_direction(v, bound):
    out = clip_l2(v, bound)
    norm_in, norm_out = math.sqrt(float((v * v).sum())), math.sqrt(float((out * out).sum()))
    assert norm_out <= bound * (1 + 4e-16 * (v.size + 2))
    if norm_in <= bound:
        assert out.tobytes() == v.tobytes()  # the exact values
        if norm_in < bound * 0.99:
            assert out is v  # well inside: not even copied
    else:
        assert norm_out == pytest.approx(bound, rel=1e-12)
        # same direction: relative to the largest component (tiny ones may underflow to subnormals)
        scale = float(np.abs(v).max()) * norm_out
        assert np.allclose(out * norm_in, v * norm_out, rtol=1e-12, atol=1e-12 * scale)


def test_examples():
    assert clip_l2(np.array([3.0, 4.0]), 5.0).tolist() == [3.0, 4.0]
    assert clip_l2(np.array([3.0, 4.0]), 1.0) == pytest.approx([0.6, 0.8], rel=1e-15)
    batch = clip_l2(np.array([[[3.0, 4.0], [0.0, 0.5]]]), 1.0)
    assert batch.shape == (1, 2, 2) and batch[0, 1].tolist() == [0.0, 0.5]


@given(scale=st.floats(1e155, 1e300), direction=arrays(np.float64, st.integers(1, 6), elements=st.floats(-1, 1)),
       bound=st.floats(1e-3, 1e3))
def test_huge_rows_are_clipped_to_the_bound_not_to_zero(scale, direction, bound):
    """A sum of squares that overflows must not become an infinite norm (which would zero the row)."""
    if not np.abs(direction).max() > 1e-3:
        return
    v = direction * scale
    with np.errstate(over="ignore"):
        one = clip_l2(v, bound)
        batch = clip_l2(np.stack([v, v / scale]), bound)
    assert one.tobytes() == batch[0].tobytes()
    norm = float(np.linalg.norm(one / bound)) * bound
    assert norm == pytest.approx(bound, rel=1e-12)
    assert np.allclose(one / norm, v / np.linalg.norm(v / scale) / scale, rtol=1e-9, atol=1e-300)


def test_other_dtypes_take_the_vectorized_formula():
    v32 = np.array([3.0, 4.0], dtype=np.float32)
    out = clip_l2(v32, 1.0)
    assert out.dtype == np.float32 and out.tolist() == clip_l2(v32[None, :], 1.0)[0].tolist()
    ints = np.array([3, 4])
    assert clip_l2(ints, 10.0).tolist() == [3.0, 4.0] and clip_l2(ints, 10.0).dtype == np.float64
