"""Resizing: resizing to the same size is the identity (Hypothesis); hand-computed sample positions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from tests.ops._vectors_b import given_scalar, given_tensor, output, run_op, shape_of, signature_violations

FAST = settings(max_examples=30, deadline=None)
FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)
NHWC = st.tuples(st.integers(1, 2), st.integers(1, 5), st.integers(1, 5), st.integers(1, 3))


def resize(op: Op, x: np.ndarray, width: int, height: int, *flags: bool) -> np.ndarray:
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), given_scalar(T.INT32, width), given_scalar(T.INT32, height)]
    inputs += [given_scalar(T.BOOL, f) for f in flags]
    return run_op(op, inputs, [output(T.TENSOR_FLOAT32)])[0]


@FAST
@given(shape=NHWC, data=st.data(), op=st.sampled_from([Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR]),
       flags=st.sampled_from([(False, False), (True, False), (False, True)]), nchw=st.booleans())
def test_resize_to_the_same_size_is_the_identity(shape, data, op, flags, nchw):
    x = data.draw(arrays(np.float32, shape, elements=FLOAT32))
    h, w = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
    np.testing.assert_array_equal(resize(op, x, w, h, nchw, *flags), x)


def test_bilinear_upscaling_samples_at_out_times_in_over_out():
    # 2x2 -> 3x3: source positions 0, 2/3, 4/3 (the last clamps to the last row/column).
    x = np.array([1, 2, 3, 4], dtype=np.float32).reshape(1, 2, 2, 1)
    y = resize(Op.RESIZE_BILINEAR, x, 3, 3)
    expected = [[1, 5 / 3, 2], [7 / 3, 3, 10 / 3], [3, 11 / 3, 4]]
    np.testing.assert_allclose(y[0, :, :, 0], expected, rtol=1e-6)


def test_bilinear_align_corners_keeps_the_corners():
    x = np.array([1, 2, 3, 4], dtype=np.float32).reshape(1, 2, 2, 1)
    y = resize(Op.RESIZE_BILINEAR, x, 3, 3, False, True, False)
    np.testing.assert_allclose(y[0, :, :, 0], [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]], rtol=1e-6)


def test_nearest_neighbour_floor_and_align_corners_rounding():
    x = np.array([1, 2], dtype=np.float32).reshape(1, 1, 2, 1)
    np.testing.assert_array_equal(resize(Op.RESIZE_NEAREST_NEIGHBOR, x, 4, 1, False).reshape(-1), [1, 1, 2, 2])
    # align_corners: scale (2 - 1) / (3 - 1) = 0.5, positions 0, 0.5, 1 rounded half away from zero.
    y = resize(Op.RESIZE_NEAREST_NEIGHBOR, x, 3, 1, False, True, False)
    np.testing.assert_array_equal(y.reshape(-1), [1, 2, 2])


def test_resize_by_scale_floors_the_scaled_size():
    inputs = [given_tensor(T.TENSOR_FLOAT32, np.zeros((1, 3, 3, 1))), given_scalar(T.FLOAT32, 1.5),
              given_scalar(T.FLOAT32, 2.0), given_scalar(T.BOOL, False)]
    assert shape_of(Op.RESIZE_BILINEAR, inputs, [output(T.TENSOR_FLOAT32)]) == [(1, 6, 4, 1)]


def test_align_corners_and_half_pixel_centers_exclude_each_other():
    inputs = [given_tensor(T.TENSOR_FLOAT32, np.zeros((1, 2, 2, 1))), given_scalar(T.INT32, 3),
              given_scalar(T.INT32, 3), *[given_scalar(T.BOOL, v) for v in (False, True, True)]]
    assert signature_violations(Op.RESIZE_BILINEAR, inputs, [output(T.TENSOR_FLOAT32)])


def test_an_output_size_given_at_run_time_that_is_not_positive_is_an_invalid_argument():
    import pytest

    from harness.ops.common import InvalidParameter

    x = np.ones((1, 2, 2, 1), dtype=np.float32)
    for op in (Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR):
        for width, height in ((-743, 3), (0, 3), (3, 0)):
            with pytest.raises(InvalidParameter):
                resize(op, x, width, height)
