"""Activations: idempotence of RELU (Hypothesis), fixed output quantization, hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import harness.ops
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from tests.ops._build import OMITTED, out, run, scalar, tensor, violations

FAST = settings(max_examples=50, deadline=None)
FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)
SHAPES = array_shapes(min_dims=1, max_dims=4, max_side=4)


@FAST
@given(x=arrays(np.float32, SHAPES, elements=FLOAT32), op=st.sampled_from([Op.RELU, Op.RELU1, Op.RELU6]))
def test_relu_family_is_idempotent_float32(x, op):
    once = run(op, [tensor(T.TENSOR_FLOAT32, x)], [out(T.TENSOR_FLOAT32)])[0]
    twice = run(op, [tensor(T.TENSOR_FLOAT32, once)], [out(T.TENSOR_FLOAT32)])[0]
    np.testing.assert_array_equal(once, twice)


@FAST
@given(
    q=arrays(np.uint8, SHAPES),
    scale=st.floats(min_value=0.01, max_value=2.0),
    zero_point=st.integers(0, 255),
)
def test_relu_is_idempotent_quant8(q, scale, zero_point):
    t = T.TENSOR_QUANT8_ASYMM
    once = run(Op.RELU, [tensor(t, q, scale, zero_point)], [out(t, scale=scale, zero_point=zero_point)])[0]
    twice = run(Op.RELU, [tensor(t, once, scale, zero_point)], [out(t, scale=scale, zero_point=zero_point)])[0]
    np.testing.assert_array_equal(once, twice)
    assert np.all(once >= zero_point)  # nothing below the real zero survives


def test_relu_variants_clamp():
    x = [-7.0, -0.5, 0.5, 7.0]
    expected = {Op.RELU: [0.0, 0.0, 0.5, 7.0], Op.RELU1: [-1.0, -0.5, 0.5, 1.0], Op.RELU6: [0.0, 0.0, 0.5, 6.0]}
    for op, want in expected.items():
        assert run(op, [tensor(T.TENSOR_FLOAT32, x)], [out(T.TENSOR_FLOAT32)])[0].tolist() == want


def test_relu_quantized_output_keeps_input_quantization():
    t = T.TENSOR_QUANT8_ASYMM
    assert violations(Op.RELU, [tensor(t, [1], 0.5, 3)], [out(t, scale=0.25, zero_point=3)])
    assert not violations(Op.RELU, [tensor(t, [1], 0.5, 3)], [out(t, scale=0.5, zero_point=3)])


def test_logistic_and_tanh_fixed_output_quantization():
    q8, qs8 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
    assert not violations(Op.LOGISTIC, [tensor(q8, [0], 0.5, 0)], [out(q8, scale=1 / 256, zero_point=0)])
    assert violations(Op.LOGISTIC, [tensor(q8, [0], 0.5, 0)], [out(q8, scale=1 / 128, zero_point=0)])
    assert not violations(Op.LOGISTIC, [tensor(qs8, [0], 0.5, 0)], [out(qs8, scale=1 / 256, zero_point=-128)])
    assert not violations(Op.TANH, [tensor(q8, [0], 0.5, 0)], [out(q8, scale=1 / 128, zero_point=128)])
    assert violations(Op.TANH, [tensor(qs8, [0], 0.5, 0)], [out(qs8, scale=1 / 128, zero_point=128)])


def test_logistic_quantized_values():
    # real 0 -> 0.5 -> 0.5 * 256 = 128; real 2 -> 0.8808 -> 225.5 -> 225 or 226 (ties away: 225.48 -> 225)
    q8 = T.TENSOR_QUANT8_ASYMM
    (result,) = run(Op.LOGISTIC, [tensor(q8, [0, 4], 0.5, 0)], [out(q8, scale=1 / 256, zero_point=0)])
    assert result.tolist() == [128, round(256 / (1 + math.exp(-2.0)))]


def test_softmax_along_an_axis_with_beta():
    x = [[1.0, 2.0], [3.0, 4.0]]
    (result,) = run(
        Op.SOFTMAX,
        [tensor(T.TENSOR_FLOAT32, x), scalar(T.FLOAT32, 1.0), scalar(T.INT32, 0)],
        [out(T.TENSOR_FLOAT32)],
    )
    low, high = 1 / (1 + math.e**2), math.e**2 / (1 + math.e**2)
    np.testing.assert_allclose(result, [[low, low], [high, high]], rtol=1e-6)
    (halved,) = run(Op.SOFTMAX, [tensor(T.TENSOR_FLOAT32, [0.0, 2.0]), scalar(T.FLOAT32, 0.5)], [out(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(halved, [1 / (1 + math.e), math.e / (1 + math.e)], rtol=1e-6)


def test_softmax_beta_must_be_positive():
    x = tensor(T.TENSOR_FLOAT32, [[1.0, 2.0]])
    assert violations(Op.SOFTMAX, [x, scalar(T.FLOAT32, 0.0)], [out(T.TENSOR_FLOAT32)])
    assert violations(Op.SOFTMAX, [x, scalar(T.FLOAT32, 1.0), scalar(T.INT32, 2)], [out(T.TENSOR_FLOAT32)])
    assert not violations(Op.SOFTMAX, [x, scalar(T.FLOAT32, 1.0), OMITTED], [out(T.TENSOR_FLOAT32)])


def test_softmax_float16_takes_a_float16_beta():
    x = tensor(T.TENSOR_FLOAT16, [[1.0, 1.0]])
    (result,) = run(Op.SOFTMAX, [x, scalar(T.FLOAT16, 1.0)], [out(T.TENSOR_FLOAT16)])
    assert result.dtype == np.float16 and result.tolist() == [[0.5, 0.5]]


def test_log_softmax():
    (result,) = run(
        Op.LOG_SOFTMAX,
        [tensor(T.TENSOR_FLOAT32, [1.0, 2.0, 3.0]), scalar(T.FLOAT32, 1.0), scalar(T.INT32, -1)],
        [out(T.TENSOR_FLOAT32)],
    )
    log_sum = math.log(math.e + math.e**2 + math.e**3)
    np.testing.assert_allclose(result, [1 - log_sum, 2 - log_sum, 3 - log_sum], rtol=1e-6)


def test_elu():
    (result,) = run(
        Op.ELU, [tensor(T.TENSOR_FLOAT32, [-1.0, 0.0, 2.0]), scalar(T.FLOAT32, 2.0)], [out(T.TENSOR_FLOAT32)]
    )
    np.testing.assert_allclose(result, [2.0 * (math.exp(-1.0) - 1.0), 0.0, 2.0], rtol=1e-6)


def test_hard_swish():
    (result,) = run(Op.HARD_SWISH, [tensor(T.TENSOR_FLOAT32, [-4.0, -1.0, 0.0, 1.0, 4.0])], [out(T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(result, [0.0, -1 / 3, 0.0, 2 / 3, 4.0], rtol=1e-6)


def test_hard_swish_quantized_output_may_differ_from_input():
    q8 = T.TENSOR_QUANT8_ASYMM
    # real 3.0 (1.0 * (13 - 10)) -> 3.0 -> 3.0 / 0.5 + 0 = 6
    (result,) = run(Op.HARD_SWISH, [tensor(q8, [13], 1.0, 10)], [out(q8, scale=0.5, zero_point=0)])
    assert result.tolist() == [6]


def test_prelu_broadcasts_alpha():
    f32 = T.TENSOR_FLOAT32
    (result,) = run(Op.PRELU, [tensor(f32, [[-1.0, 2.0], [-3.0, 4.0]]), tensor(f32, [0.5, 0.25])], [out(f32)])
    assert result.tolist() == [[-0.5, 2.0], [-1.5, 4.0]]


@pytest.mark.parametrize("op", [Op.RELU, Op.LOGISTIC, Op.TANH, Op.SOFTMAX])
def test_classic_activations_are_limited_to_rank_four(op):
    ranks = {a.rank for s in harness.ops.get(op).signatures for a in (*s.inputs, *s.outputs) if a.rank is not None}
    assert ranks == {(1, 4)}
