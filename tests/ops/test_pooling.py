"""Pooling: 1x1 max pooling is the identity (Hypothesis); averages over valid cells only (hand-computed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.ops.common import UnspecifiedResult
from harness.ops.pooling import average
from tests.ops._vectors_b import given_scalar, given_tensor, output, run_op, shape_of, signature_violations

FAST = settings(max_examples=30, deadline=None)
FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)
NHWC = st.tuples(st.integers(1, 2), st.integers(1, 5), st.integers(1, 5), st.integers(1, 3))


def ints(*values: int) -> list:
    return [given_scalar(T.INT32, v) for v in values]


@FAST
@given(shape=NHWC, data=st.data(), nchw=st.booleans())
def test_max_pool_1x1_stride_1_is_the_identity(shape, data, nchw):
    x = data.draw(arrays(np.float32, shape, elements=FLOAT32))
    # Implicit VALID padding, stride 1, 1x1 filter, no activation.
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), *ints(2, 1, 1, 1, 1, 0), given_scalar(T.BOOL, nchw)]
    (y,) = run_op(Op.MAX_POOL_2D, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_array_equal(y, x)


@FAST
@given(shape=NHWC, data=st.data())
def test_max_pool_1x1_is_the_identity_on_quant8(shape, data):
    x = data.draw(arrays(np.uint8, shape))
    inputs = [given_tensor(T.TENSOR_QUANT8_ASYMM, x, 0.5, 100), *ints(2, 1, 1, 1, 1, 0)]
    (y,) = run_op(Op.MAX_POOL_2D, inputs, [output(T.TENSOR_QUANT8_ASYMM, 0.5, 100)])
    np.testing.assert_array_equal(y, x)


def test_average_pool_same_padding_averages_only_cells_inside_the_input():
    # [[1, 2], [3, 4]], 2x2 filter, stride 1, SAME: windows at the right/bottom edge see 2 or 1 cells.
    x = np.array([1, 2, 3, 4], dtype=np.float32).reshape(1, 2, 2, 1)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), *ints(1, 1, 1, 2, 2, 0)]
    (y,) = run_op(Op.AVERAGE_POOL_2D, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(y.reshape(-1), [2.5, 3.0, 3.5, 4.0])
    assert shape_of(Op.AVERAGE_POOL_2D, inputs, [output(T.TENSOR_FLOAT32)]) == [(1, 2, 2, 1)]


def test_max_pool_explicit_padding_and_stride():
    # 1x4 row [1, 5, 2, 7], filter 1x2, stride 2, one cell of left padding: windows {1}, {5, 2}, {7}.
    x = np.array([1, 5, 2, 7], dtype=np.float32).reshape(1, 1, 4, 1)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), *ints(1, 1, 0, 0, 2, 1, 2, 1, 0)]
    (y,) = run_op(Op.MAX_POOL_2D, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_array_equal(y.reshape(-1), [1, 5, 7])


def test_l2_pool_is_the_root_mean_square_of_the_window():
    x = np.array([3, 4], dtype=np.float32).reshape(1, 1, 2, 1)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), *ints(2, 1, 1, 2, 1, 0)]
    (y,) = run_op(Op.L2_POOL_2D, inputs, [output(T.TENSOR_FLOAT32)])
    assert math.isclose(float(y.reshape(-1)[0]), math.sqrt((9 + 16) / 2), rel_tol=1e-6)


def test_relu6_activation_clamps_the_average():
    x = np.array([10, 20], dtype=np.float32).reshape(1, 1, 2, 1)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), *ints(2, 1, 1, 2, 1, 3)]
    (y,) = run_op(Op.AVERAGE_POOL_2D, inputs, [output(T.TENSOR_FLOAT32)])
    assert y.reshape(-1).tolist() == [6.0]


def test_quantized_pooling_output_must_keep_the_input_quantization():
    inputs = [given_tensor(T.TENSOR_QUANT8_ASYMM, np.zeros((1, 2, 2, 1)), 0.5, 10), *ints(2, 1, 1, 1, 1, 0)]
    assert signature_violations(Op.MAX_POOL_2D, inputs, [output(T.TENSOR_QUANT8_ASYMM, 0.5, 10)]) == []
    assert signature_violations(Op.MAX_POOL_2D, inputs, [output(T.TENSOR_QUANT8_ASYMM, 0.25, 10)])


def test_l2_pool_has_no_quantized_typing():
    inputs = [given_tensor(T.TENSOR_QUANT8_ASYMM, np.zeros((1, 2, 2, 1)), 0.5, 10), *ints(2, 1, 1, 1, 1, 0)]
    assert signature_violations(Op.L2_POOL_2D, inputs, [output(T.TENSOR_QUANT8_ASYMM, 0.5, 10)])


def test_a_window_wholly_in_the_padding_leaves_the_mean_unspecified():
    # Its mean is 0 / 0: the HAL's AVERAGE_POOL_2D and L2_POOL_2D define no value there.
    values = np.array([1.0, 2.0])
    assert average([(values, np.array([True, True]))]).tolist() == [1.0, 2.0]
    with pytest.raises(UnspecifiedResult):
        average([(values, np.array([True, False]))])
