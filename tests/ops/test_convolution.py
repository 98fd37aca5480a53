"""Convolutions and FULLY_CONNECTED: identity laws (Hypothesis), padding arithmetic and hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.hal import SymmPerChannelQuantParams
from harness.ops._nn_util import conv_out_size, implicit_padding
from harness.ops.common import UnspecifiedResult
from tests.ops._vectors_b import given_scalar, given_tensor, output, run_op, shape_of, signature_violations

FAST = settings(max_examples=30, deadline=None)
FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)
NHWC = st.tuples(st.integers(1, 2), st.integers(1, 5), st.integers(1, 5), st.integers(1, 3))
INT = T.INT32


def ints(*values: int) -> list:
    return [given_scalar(INT, v) for v in values]


def test_same_padding_centres_the_window():
    # in 5, stride 2, filter 3: ceil(5/2) = 3 outputs need (3-1)*2+3 = 7 cells, 2 of padding split 1/1.
    assert implicit_padding(5, 2, 3, 1, 1) == (1, 1)
    # in 4, stride 2, filter 3: 2 outputs need 5 cells; the odd cell of padding goes to the tail.
    assert implicit_padding(4, 2, 3, 1, 1) == (0, 1)
    # Dilation 2 makes a 3-tap filter span 5 cells: 5 outputs of stride 1 need 4 cells of padding.
    assert implicit_padding(5, 1, 3, 2, 1) == (2, 2)
    assert implicit_padding(5, 2, 3, 1, 2) == (0, 0)
    assert conv_out_size(5, 3, 2, 1, 0, 0) == 2
    assert conv_out_size(5, 3, 2, 1, 1, 1) == 3


@FAST
@given(shape=NHWC, data=st.data(), nchw=st.booleans())
def test_conv2d_with_identity_filter_and_zero_bias_returns_input(shape, data, nchw):
    n, h, w, c = shape
    x = data.draw(arrays(np.float32, (n, c, h, w) if nchw else shape, elements=FLOAT32))
    flt = np.eye(c, dtype=np.float32).reshape(c, 1, 1, c)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), given_tensor(T.TENSOR_FLOAT32, flt),
              given_tensor(T.TENSOR_FLOAT32, np.zeros(c)), *ints(0, 0, 0, 0, 1, 1, 0),
              given_scalar(T.BOOL, nchw)]
    (y,) = run_op(Op.CONV_2D, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_array_equal(y, x)


@FAST
@given(shape=NHWC, data=st.data())
def test_depthwise_with_centred_one_hot_filter_and_same_padding_returns_input(shape, data):
    x = data.draw(arrays(np.float32, shape, elements=FLOAT32))
    c = shape[3]
    flt = np.zeros((1, 3, 3, c), dtype=np.float32)
    flt[0, 1, 1, :] = 1.0
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), given_tensor(T.TENSOR_FLOAT32, flt),
              given_tensor(T.TENSOR_FLOAT32, np.zeros(c)), *ints(1, 1, 1, 1, 0)]
    (y,) = run_op(Op.DEPTHWISE_CONV_2D, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_array_equal(y, x)


@FAST
@given(batch=st.integers(1, 3), units=st.integers(1, 6), data=st.data())
def test_fully_connected_with_identity_weights_returns_input(batch, units, data):
    x = data.draw(arrays(np.float32, (batch, units), elements=FLOAT32))
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), given_tensor(T.TENSOR_FLOAT32, np.eye(units)),
              given_tensor(T.TENSOR_FLOAT32, np.zeros(units)), *ints(0)]
    (y,) = run_op(Op.FULLY_CONNECTED, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_array_equal(y, x)


@FAST
@given(shape=NHWC, data=st.data())
def test_grouped_conv_with_one_group_per_channel_equals_depthwise(shape, data):
    x = data.draw(arrays(np.float32, shape, elements=st.floats(-4, 4, width=32)))
    c = shape[3]
    flt = data.draw(arrays(np.float32, (c, 2, 2, 1), elements=st.floats(-2, 2, width=32)))
    bias = np.arange(c, dtype=np.float32)
    grouped = [given_tensor(T.TENSOR_FLOAT32, x), given_tensor(T.TENSOR_FLOAT32, flt),
               given_tensor(T.TENSOR_FLOAT32, bias), *ints(1, 1, 1, c, 0), given_scalar(T.BOOL, False)]
    depthwise = [given_tensor(T.TENSOR_FLOAT32, x), given_tensor(T.TENSOR_FLOAT32, flt.transpose(3, 1, 2, 0)),
                 given_tensor(T.TENSOR_FLOAT32, bias), *ints(1, 1, 1, 1, 0)]
    (a,) = run_op(Op.GROUPED_CONV_2D, grouped, [output(T.TENSOR_FLOAT32)])
    (b,) = run_op(Op.DEPTHWISE_CONV_2D, depthwise, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_conv2d_sums_the_window_plus_bias():
    # A 2x2 filter of ones over a 3x3 input of 1..9 (VALID, stride 1): window sums 12, 16, 24, 28; bias 1.
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
    inputs = [given_tensor(T.TENSOR_FLOAT32, x), given_tensor(T.TENSOR_FLOAT32, np.ones((1, 2, 2, 1))),
              given_tensor(T.TENSOR_FLOAT32, [1.0]), *ints(2, 1, 1, 0)]
    (y,) = run_op(Op.CONV_2D, inputs, [output(T.TENSOR_FLOAT32)])
    np.testing.assert_array_equal(y.reshape(-1), [13, 17, 25, 29])
    assert shape_of(Op.CONV_2D, inputs, [output(T.TENSOR_FLOAT32)]) == [(1, 2, 2, 1)]


def test_quantized_conv2d_requantizes_to_the_output_scale():
    # Input 2.0 (stored 4 at scale 0.5), filter 1.5 (stored 3 at 0.5), bias 0.25 (stored 1 at 0.25):
    # 3.25 at output scale 0.25, zero point 10 is stored 23.
    inputs = [given_tensor(T.TENSOR_QUANT8_ASYMM, [[[[4]]]], 0.5, 0),
              given_tensor(T.TENSOR_QUANT8_ASYMM, [[[[3]]]], 0.5, 0),
              given_tensor(T.TENSOR_INT32, [1], 0.25), *ints(2, 1, 1, 0)]
    (y,) = run_op(Op.CONV_2D, inputs, [output(T.TENSOR_QUANT8_ASYMM, 0.25, 10)])
    assert y.dtype == np.uint8 and y.reshape(-1).tolist() == [23]


def test_transpose_conv_scatters_each_input_over_the_filter():
    # Input 2x2 of ones, 3x3 filter of ones, stride 2, no padding: 5x5 output where the shared middle
    # row and column receive two contributions and the centre four.
    ones = given_tensor(T.TENSOR_FLOAT32, np.ones((1, 2, 2, 1)))
    flt = given_tensor(T.TENSOR_FLOAT32, np.ones((1, 3, 3, 1)))
    inputs = [ones, flt, given_tensor(T.TENSOR_FLOAT32, [0.0]), *ints(0, 0, 0, 0, 2, 2, 0), given_scalar(T.BOOL, False)]
    (y,) = run_op(Op.TRANSPOSE_CONV_2D, inputs, [output(T.TENSOR_FLOAT32)])
    row = np.array([1, 1, 2, 1, 1])
    np.testing.assert_array_equal(y[0, :, :, 0], np.outer(row, row))
    assert shape_of(Op.TRANSPOSE_CONV_2D, inputs, [output(T.TENSOR_FLOAT32)]) == [(1, 5, 5, 1)]


def test_transpose_conv_same_with_an_output_other_than_input_times_stride_is_unspecified():
    # SAME makes a 2x2 input at stride 2 a 4x4 output; of an output shape that says 3x4 types.hal defines no padding.
    def run(out_h: int) -> np.ndarray:
        inputs = [
            given_tensor(T.TENSOR_FLOAT32, np.ones((1, 2, 2, 1))),
            given_tensor(T.TENSOR_FLOAT32, np.ones((1, 2, 2, 1))),
            given_tensor(T.TENSOR_FLOAT32, [0.0]),
            given_tensor(T.TENSOR_INT32, [1, out_h, 4, 1]),
            *ints(1, 2, 2, 0),
            given_scalar(T.BOOL, False),
        ]
        (y,) = run_op(Op.TRANSPOSE_CONV_2D, inputs, [output(T.TENSOR_FLOAT32)])
        return y

    assert run(4).shape == (1, 4, 4, 1)
    with pytest.raises(UnspecifiedResult):
        run(3)


def test_bias_scale_must_be_input_scale_times_filter_scale():
    inputs = [given_tensor(T.TENSOR_QUANT8_ASYMM, np.zeros((1, 2, 2, 1)), 0.5, 0),
              given_tensor(T.TENSOR_QUANT8_ASYMM, np.zeros((1, 1, 1, 1)), 0.5, 0),
              given_tensor(T.TENSOR_INT32, [0], 0.3), *ints(2, 1, 1, 0)]
    assert any(
        "bias scale" in v for v in signature_violations(Op.CONV_2D, inputs, [output(T.TENSOR_QUANT8_ASYMM, 1.0)])
    )


def test_per_channel_filter_must_use_channel_dimension_zero():
    params = SymmPerChannelQuantParams(scales=[0.5], channel_dim=3)
    inputs = [given_tensor(T.TENSOR_QUANT8_ASYMM, np.zeros((1, 2, 2, 1)), 0.5, 0),
              given_tensor(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, np.zeros((1, 1, 1, 1)), extra_params=params),
              given_tensor(T.TENSOR_INT32, [0]), *ints(2, 1, 1, 0)]
    problems = signature_violations(Op.CONV_2D, inputs, [output(T.TENSOR_QUANT8_ASYMM, 1.0)])
    assert any("channelDim must be 0" in v for v in problems)


def test_dilation_factors_come_in_pairs():
    x, flt = np.zeros((1, 3, 3, 1)), np.zeros((1, 1, 1, 1))
    base = [given_tensor(T.TENSOR_FLOAT32, x), given_tensor(T.TENSOR_FLOAT32, flt),
            given_tensor(T.TENSOR_FLOAT32, [0.0]), *ints(2, 1, 1, 0), given_scalar(T.BOOL, False)]
    out = [output(T.TENSOR_FLOAT32)]
    assert signature_violations(Op.CONV_2D, base + ints(2, 2), out) == []
    assert signature_violations(Op.CONV_2D, base + ints(2), out)
