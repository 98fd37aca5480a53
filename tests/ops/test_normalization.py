"""Normalizations: unit norm after L2_NORMALIZATION (Hypothesis) and hand-computed values."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from tests.ops._vectors_b import given_scalar, given_tensor, output, run_op, signature_violations

FAST = settings(max_examples=30, deadline=None)
FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)


@FAST
@given(x=arrays(np.float32, array_shapes(min_dims=1, max_dims=4, max_side=4), elements=FLOAT32))
def test_l2_normalization_gives_unit_norm_slices(x):
    assume(np.all(np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=-1)) > 1e-3))
    (y,) = run_op(Op.L2_NORMALIZATION, [given_tensor(T.TENSOR_FLOAT32, x)], [output(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(np.sum(y.astype(np.float64) ** 2, axis=-1), 1.0, rtol=1e-5)


def test_l2_normalization_hand_values_and_zero_vector():
    x = np.array([[3, 4], [0, 0]], dtype=np.float32)
    (y,) = run_op(Op.L2_NORMALIZATION, [given_tensor(T.TENSOR_FLOAT32, x)], [output(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(y, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


def test_l2_normalization_along_axis_zero():
    x = np.array([[3, 1], [4, 0]], dtype=np.float32)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), given_scalar(T.INT32, 0)]
    (y,) = run_op(Op.L2_NORMALIZATION, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(y, [[0.6, 1.0], [0.8, 0.0]], rtol=1e-6)


def test_quantized_l2_normalization_output_is_fixed_at_scale_1_128():
    inputs = [given_tensor(T.TENSOR_QUANT8_ASYMM, np.zeros((1, 4)), 0.1, 128)]
    assert signature_violations(Op.L2_NORMALIZATION, inputs, [output(T.TENSOR_QUANT8_ASYMM, 1 / 128, 128)]) == []
    assert signature_violations(Op.L2_NORMALIZATION, inputs, [output(T.TENSOR_QUANT8_ASYMM, 1 / 128, 0)])


@FAST
@given(scale=st.sampled_from([1e-12, 1e-8, 1e-6, 0.1, 1e4, 1e8]), zero_point=st.sampled_from([0, 128, 255]))
def test_quantized_l2_normalization_does_not_depend_on_the_input_scale(scale, zero_point):
    # x / |x| cancels the input scale: [3, 4] steps from the zero point are (0.6, 0.8) = (77, 102) / 128 whatever
    # the scale (the real-valued epsilon used to turn tiny scales' slices into zeros); all zero points stay zero.
    x = np.array([[zero_point, zero_point], [zero_point, zero_point]]) + np.array([[3, 4], [0, 0]])
    if zero_point == 255:
        x = np.array([[zero_point - 3, zero_point - 4], [zero_point, zero_point]])
    inputs = [given_tensor(T.TENSOR_QUANT8_ASYMM, x, scale, zero_point)]
    (y,) = run_op(Op.L2_NORMALIZATION, inputs, [output(T.TENSOR_QUANT8_ASYMM, 1 / 128, 128)])
    sign = -1 if zero_point == 255 else 1
    assert y.tolist() == [[128 + sign * 77, 128 + sign * 102], [128, 128]]


def test_local_response_normalization_radius_zero():
    # radius 0, bias 1, alpha 1, beta 0.5: x / sqrt(1 + x^2).
    x = np.array([[[[1.0, 2.0, 3.0]]]], dtype=np.float32)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), given_scalar(T.INT32, 0),
              *[given_scalar(T.FLOAT32, v) for v in (1.0, 1.0, 0.5)]]
    (y,) = run_op(Op.LOCAL_RESPONSE_NORMALIZATION, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(y.reshape(-1), [1 / np.sqrt(2), 2 / np.sqrt(5), 3 / np.sqrt(10)], rtol=1e-6)


def test_local_response_normalization_window_is_clipped_at_the_edges():
    # radius 1, bias 0, alpha 1, beta 1: x / (sum of squares of the neighbours within 1).
    x = np.array([1.0, 2.0, 2.0], dtype=np.float32)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), given_scalar(T.INT32, 1),
              *[given_scalar(T.FLOAT32, v) for v in (0.0, 1.0, 1.0)], given_scalar(T.INT32, -1)]
    (y,) = run_op(Op.LOCAL_RESPONSE_NORMALIZATION, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(y, [1 / 5, 2 / 9, 2 / 8], rtol=1e-6)


def test_instance_normalization_divides_by_the_root_variance():
    # One channel [1, 3]: mean 2, variance 1, epsilon 0, gamma 2, beta 1 -> 2 * (x - 2) / 1 + 1 = [-1, 3].
    x = np.array([1, 3], dtype=np.float32).reshape(1, 1, 2, 1)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), *[given_scalar(T.FLOAT32, v) for v in (2.0, 1.0, 0.0)],
              given_scalar(T.BOOL, False)]
    (y,) = run_op(Op.INSTANCE_NORMALIZATION, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(y.reshape(-1), [-1.0, 3.0], rtol=1e-6)
