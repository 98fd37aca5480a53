"""The driver's activation kernels: conformance vectors and hand-computed float and quantized cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import OpCall, Tensor, lookup
from harness.hal import OperandType, OperationType
from tests.driver.backends.numpy.kernels.conftest import run_vector_case, single_op_cases

OPS = {"RELU", "RELU1", "RELU6", "LOGISTIC", "TANH", "ELU", "HARD_SWISH", "PRELU", "SOFTMAX", "LOG_SOFTMAX"}
CASES = single_op_cases(OPS)

F32, F16 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16
Q8, Q8S = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_vector(case):
    run_vector_case(case)


def tensor(operand_type, values, scale=0.0, zero_point=0, dtype=np.float32):
    data = np.asarray(values, dtype=dtype)
    return Tensor(type=int(operand_type), shape=data.shape, scale=scale, zero_point=zero_point, data=data)


def scalar(operand_type, value, dtype):
    return Tensor(type=int(operand_type), shape=(), data=np.array(value, dtype=dtype))


def run(op, inputs, out_type, scale=0.0, zero_point=0):
    call = OpCall(inputs=inputs, outputs=[Tensor(type=int(out_type), shape=(), scale=scale, zero_point=zero_point)])
    return lookup(op).fn(call)


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (OperationType.RELU, [128, 128, 138, 250]),
        (OperationType.RELU1, [118, 128, 138, 138]),
        (OperationType.RELU6, [128, 128, 138, 188]),
    ],
)
def test_quantized_relu_family_clamps_codes(op, expected):
    # scale 0.1, zero point 128: -1.0 clamps at code 118, 6.0 at 188
    x = tensor(Q8, [100, 128, 138, 250], 0.1, 128, np.uint8)
    (out,) = run(op, [x], Q8, 0.1, 128)
    assert out.dtype == np.uint8
    assert out.tolist() == expected


def test_float_relu_family_does_not_modify_its_input():
    data = np.array([-2.0, 0.5, 7.0], dtype=np.float32)
    x = tensor(F32, data)
    assert run(OperationType.RELU6, [x], F32)[0].tolist() == [0.0, 0.5, 6.0]
    assert x.data.tolist() == [-2.0, 0.5, 7.0]


def test_quantized_logistic_and_tanh_at_zero():
    x = tensor(Q8, [128], 1 / 16, 128, np.uint8)
    assert run(OperationType.LOGISTIC, [x], Q8, 1 / 256, 0)[0].tolist() == [128]  # 0.5 * 256
    assert run(OperationType.TANH, [x], Q8, 1 / 128, 128)[0].tolist() == [128]  # tanh(0) = 0
    xs = tensor(Q8S, [0], 1 / 16, 0, np.int8)
    assert run(OperationType.LOGISTIC, [xs], Q8S, 1 / 256, -128)[0].tolist() == [0]


def test_hard_swish_float_formula():
    x = tensor(F32, [-4.0, -1.0, 0.0, 1.0, 4.0])
    expected = [0.0, -1 / 3, 0.0, 2 / 3, 4.0]  # x * relu6(x + 3) / 6
    np.testing.assert_allclose(run(OperationType.HARD_SWISH, [x], F32)[0], expected, rtol=1e-6, atol=1e-7)


def test_hard_swish_quantized_hand_example():
    # codes at scale 0.5, zero point 128 are -4, -1, 0, 1, 4; outputs at scale 1/64, zero point 64
    x = tensor(Q8, [120, 126, 128, 130, 136], 0.5, 128, np.uint8)
    (out,) = run(OperationType.HARD_SWISH, [x], Q8, 1 / 64, 64)
    assert out.tolist() == [64, 43, 64, 107, 255]


def test_elu_with_alpha():
    x = tensor(F32, [-1.0, 0.0, 2.0])
    (out,) = run(OperationType.ELU, [x, scalar(OperandType.FLOAT32, 2.0, np.float32)], F32)
    np.testing.assert_allclose(out, [2 * (math.exp(-1) - 1), 0.0, 2.0], rtol=1e-6)


def test_prelu_float_broadcasts_alpha():
    x = tensor(F32, [[-2.0, 3.0], [-4.0, -1.0]])
    alpha = tensor(F32, [0.5, 0.25])
    assert run(OperationType.PRELU, [x, alpha], F32)[0].tolist() == [[-1.0, 3.0], [-2.0, -0.25]]


def test_prelu_quantized_hand_example():
    # x codes 0, 64, 192 at scale 1/64, zero point 128 are -2, -1, 1; alpha code 192 at 1/128, zp 128 is 0.5.
    # Results -1, -0.5, 1 at scale 1/32, zero point 128 are 96, 112, 160.
    x = tensor(Q8, [0, 64, 192], 1 / 64, 128, np.uint8)
    alpha = tensor(Q8, [192], 1 / 128, 128, np.uint8)
    assert run(OperationType.PRELU, [x, alpha], Q8, 1 / 32, 128)[0].tolist() == [96, 112, 160]


def test_softmax_float_along_first_axis():
    x = tensor(F32, [[0.0, 1.0], [0.0, 1.0]])
    beta = scalar(OperandType.FLOAT32, 1.0, np.float32)
    axis = scalar(OperandType.INT32, 0, np.int32)
    assert run(OperationType.SOFTMAX, [x, beta, axis], F32)[0].tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_softmax_quantized_hand_examples():
    beta = scalar(OperandType.FLOAT32, 1.0, np.float32)
    equal = tensor(Q8, [[7, 7]], 1.0, 0, np.uint8)
    assert run(OperationType.SOFTMAX, [equal, beta], Q8, 1 / 256, 0)[0].tolist() == [[128, 128]]
    # exp(-255) vanishes: all mass on the maximum, which saturates at 255 (= 0.996)
    extreme = tensor(Q8, [[0, 255]], 1.0, 0, np.uint8)
    assert run(OperationType.SOFTMAX, [extreme, beta], Q8, 1 / 256, 0)[0].tolist() == [[0, 255]]
    # three values 0, ln 2, ln 4 (scale ln 2, codes 0..2) -> 1/7, 2/7, 4/7 -> 36.6, 73.1, 146.3
    ramp = tensor(Q8S, [[0, 1, 2]], math.log(2), 0, np.int8)
    assert run(OperationType.SOFTMAX, [ramp, beta], Q8S, 1 / 256, -128)[0].tolist() == [[-91, -55, 18]]


def test_log_softmax_hand_example():
    x = tensor(F32, [[1.0, 1.0], [0.0, math.log(3.0)]])
    beta = scalar(OperandType.FLOAT32, 1.0, np.float32)
    axis = scalar(OperandType.INT32, -1, np.int32)
    expected = [[math.log(0.5)] * 2, [math.log(0.25), math.log(0.75)]]
    np.testing.assert_allclose(run(OperationType.LOG_SOFTMAX, [x, beta, axis], F32)[0], expected, rtol=1e-6)


def test_float16_activations_stay_float16():
    x = tensor(F16, [-1.0, 0.0, 1.0], dtype=np.float16)
    for op in (OperationType.RELU, OperationType.LOGISTIC, OperationType.TANH, OperationType.HARD_SWISH):
        assert run(op, [x], F16)[0].dtype == np.float16
