"""QUANTIZE, DEQUANTIZE, CAST: the round trip law (Hypothesis), rounding, saturation and truncation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import harness.ops
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.hal import SymmPerChannelQuantParams
from harness.ops.common import UnspecifiedResult
from tests.ops._build import out, run, shape, tensor

SHAPES = array_shapes(min_dims=1, max_dims=4, max_side=4)


@settings(max_examples=100, deadline=None)
@given(
    t=st.sampled_from([T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED]),
    data=st.data(),
    scale=st.floats(min_value=1e-3, max_value=100.0),
    via=st.sampled_from([T.TENSOR_FLOAT32, T.TENSOR_FLOAT16]),
)
def test_quantize_of_dequantize_is_identity(t, data, scale, via):
    lo, hi = (0, 255) if t == T.TENSOR_QUANT8_ASYMM else (-128, 127)
    zero_point = data.draw(st.integers(lo, hi))
    q = data.draw(arrays(np.uint8 if t == T.TENSOR_QUANT8_ASYMM else np.int8, SHAPES))
    if via == T.TENSOR_FLOAT16:
        # float16 keeps 11 significant bits: the real values must stay exactly representable enough.
        scale = 2.0 ** round(np.log2(scale))
    (real,) = run(Op.DEQUANTIZE, [tensor(t, q, scale, zero_point)], [out(via)])
    (back,) = run(Op.QUANTIZE, [tensor(via, real)], [out(t, scale=scale, zero_point=zero_point)])
    np.testing.assert_array_equal(back, q)


def test_quantize_rounds_half_away_from_zero_and_saturates():
    qs8 = T.TENSOR_QUANT8_ASYMM_SIGNED
    x = tensor(T.TENSOR_FLOAT32, [0.5, 1.5, -0.5, -1.5, 1000.0, -1000.0])
    (result,) = run(Op.QUANTIZE, [x], [out(qs8, scale=1.0, zero_point=0)])
    assert result.tolist() == [1, 2, -1, -2, 127, -128]


def test_quantize_of_nan_is_unspecified():
    with pytest.raises(UnspecifiedResult):
        run(Op.QUANTIZE, [tensor(T.TENSOR_FLOAT32, [np.nan])], [out(T.TENSOR_QUANT8_ASYMM, scale=1.0)])


def test_dequantize_per_channel():
    extra = SymmPerChannelQuantParams(scales=[0.5, 2.0], channel_dim=1)
    x = tensor(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [[2, 3], [-4, 1]], extra_params=extra)
    (result,) = run(Op.DEQUANTIZE, [x], [out(T.TENSOR_FLOAT32)])
    assert result.tolist() == [[1.0, 6.0], [-2.0, 2.0]]


def test_cast_ignores_quantization_truncates_and_saturates_8_bit():
    q8 = T.TENSOR_QUANT8_ASYMM
    (to_q8,) = run(Op.CAST, [tensor(T.TENSOR_FLOAT32, [-1.0, 256.0, 2.7, 300.5])], [out(q8, scale=4.0, zero_point=100)])
    assert to_q8.tolist() == [0, 255, 2, 255]
    (from_q8,) = run(Op.CAST, [tensor(q8, [7, 200], scale=4.0, zero_point=100)], [out(T.TENSOR_FLOAT32)])
    assert from_q8.tolist() == [7.0, 200.0]
    (to_int,) = run(Op.CAST, [tensor(T.TENSOR_FLOAT16, [-2.75, 3.5])], [out(T.TENSOR_INT32)])
    assert to_int.tolist() == [-2, 3]


def test_cast_out_of_int32_range_is_unspecified():
    with pytest.raises(UnspecifiedResult):
        run(Op.CAST, [tensor(T.TENSOR_FLOAT32, [3e9])], [out(T.TENSOR_INT32)])


def test_same_type_casts_copy():
    for t, data in ((T.TENSOR_BOOL8, [True, False]), (T.TENSOR_QUANT16_SYMM, [-300, 5])):
        (result,) = run(Op.CAST, [tensor(t, data, scale=1.0)], [out(t, scale=1.0)])
        assert result.tolist() == data


def test_random_multinomial_has_a_shape_but_no_kernel():
    spec = harness.ops.get(Op.RANDOM_MULTINOMIAL)
    assert spec.kernel is None
    from tests.ops._build import scalar

    inputs = [tensor(T.TENSOR_FLOAT32, np.zeros((3, 5))), scalar(T.INT32, 7), tensor(T.TENSOR_INT32, [0, 0])]
    assert shape(Op.RANDOM_MULTINOMIAL, inputs, [out(T.TENSOR_INT32)]) == [(3, 7)]


def test_cast_of_nan_to_an_integer_type_is_unspecified():
    with pytest.raises(UnspecifiedResult):
        run(Op.CAST, [tensor(T.TENSOR_FLOAT32, [np.nan])], [out(T.TENSOR_QUANT8_ASYMM, scale=1.0)])
