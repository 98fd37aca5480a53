"""The driver's element-wise kernels: the public conformance vectors, hand-computed quantized cases and the
agreement of fixed-point arithmetic with real arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from driver_under_test.backends.numpy.kernels import OpCall, Tensor, lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels.conftest import run_vector_case, single_op_cases

OPS = {
    "ADD",
    "SUB",
    "MUL",
    "DIV",
    "MAXIMUM",
    "MINIMUM",
    "POW",
    "ABS",
    "NEG",
    "EXP",
    "LOG",
    "SQRT",
    "RSQRT",
    "SIN",
    "FLOOR",
}
CASES = single_op_cases(OPS)

F32, F16, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
Q8, Q8S = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_vector(case):
    run_vector_case(case)


def tensor(operand_type, values, scale=0.0, zero_point=0, dtype=None):
    data = np.asarray(values, dtype=dtype)
    return Tensor(type=int(operand_type), shape=data.shape, scale=scale, zero_point=zero_point, data=data)


def scalar(value):
    return Tensor(type=int(OperandType.INT32), shape=(), data=np.array(value, dtype=np.int32))


def run(op, inputs, out_type, scale=0.0, zero_point=0):
    call = OpCall(inputs=inputs, outputs=[Tensor(type=int(out_type), shape=(), scale=scale, zero_point=zero_point)])
    return lookup(op).fn(call)


def quant_pair():
    # a = 1.0 (code 130 at scale 0.5, zero point 128), b = 2.5 (code 10 at scale 0.25, zero point 0)
    return tensor(Q8, [130], 0.5, 128, np.uint8), tensor(Q8, [10], 0.25, 0, np.uint8)


@pytest.mark.parametrize(
    ("op", "activation", "expected"),
    [
        (OperationType.ADD, 0, 107),  # 3.5 / 0.5 = 7 codes above 100
        (OperationType.ADD, 2, 102),  # RELU1 caps at 1.0 = 2 codes above 100
        (OperationType.SUB, 0, 97),  # -1.5 -> 100 - 3
        (OperationType.SUB, 1, 100),  # RELU floors at 0.0
        (OperationType.MUL, 0, 105),  # 2.5 -> 100 + 5
    ],
)
def test_quantized_arithmetic_hand_examples(op, activation, expected):
    a, b = quant_pair()
    (out,) = run(op, [a, b, scalar(activation)], Q8, 0.5, 100)
    assert out.dtype == np.uint8
    assert out.tolist() == [expected]


def test_signed_quantized_add_hand_example():
    a = tensor(Q8S, [-10, 20], 0.1, -20, np.int8)  # 1.0, 4.0
    b = tensor(Q8S, [5], 0.2, 0, np.int8)  # 1.0, broadcast
    (out,) = run(OperationType.ADD, [a, b, scalar(0)], Q8S, 0.05, 0)
    assert out.dtype == np.int8
    assert out.tolist() == [40, 100]


def test_quantized_add_saturates_at_the_storage_limits():
    a = tensor(Q8, [255, 0], 1.0, 0, np.uint8)
    (out,) = run(OperationType.ADD, [a, a, scalar(0)], Q8, 1.0, 128)
    assert out.tolist() == [255, 128]


@given(
    st.lists(st.integers(0, 255), min_size=1, max_size=8),
    st.lists(st.integers(0, 255), min_size=1, max_size=8),
    st.sampled_from([0.01, 0.05, 0.1, 0.37, 1.0]),
    st.sampled_from([0.02, 0.1, 0.5]),
    st.integers(0, 255),
    st.integers(0, 255),
    st.integers(0, 255),
)
def test_quantized_add_and_mul_agree_with_real_arithmetic_within_one_code(qa, qb, sa, so, za, zb, zo):
    n = min(len(qa), len(qb))
    a = tensor(Q8, qa[:n], sa, za, np.uint8)
    b = tensor(Q8, qb[:n], 0.07, zb, np.uint8)
    real_a = (np.array(qa[:n]) - za) * sa
    real_b = (np.array(qb[:n]) - zb) * 0.07
    for op, real in ((OperationType.ADD, real_a + real_b), (OperationType.MUL, real_a * real_b)):
        (out,) = run(op, [a, b, scalar(0)], Q8, so, zo)
        ideal = np.clip(np.round(real / so) + zo, 0, 255)
        assert np.all(np.abs(out.astype(np.int64) - ideal) <= 1), (op, out, ideal)


def test_int32_division_floors_and_tolerates_zero_divisors():
    a = tensor(I32, [5, -5, 7, -7], dtype=np.int32)
    b = tensor(I32, [2, 2, -2, 0], dtype=np.int32)
    (out,) = run(OperationType.DIV, [a, b, scalar(0)], I32)
    assert out.dtype == np.int32
    assert out.tolist() == [2, -3, -4, 0]


def test_int32_add_sub_mul():
    a = tensor(I32, [[1, 2], [3, 4]], dtype=np.int32)
    b = tensor(I32, [10, -1], dtype=np.int32)
    assert run(OperationType.ADD, [a, b, scalar(0)], I32)[0].tolist() == [[11, 1], [13, 3]]
    assert run(OperationType.SUB, [a, b, scalar(0)], I32)[0].tolist() == [[-9, 3], [-7, 5]]
    assert run(OperationType.MUL, [a, b, scalar(0)], I32)[0].tolist() == [[10, -2], [30, -4]]


def test_float_broadcasting_shape_follows_the_hal_example():
    a = tensor(F32, np.ones((4, 1, 2)), dtype=np.float32)
    b = tensor(F32, np.full((5, 4, 3, 1), 2.0), dtype=np.float32)
    (out,) = run(OperationType.ADD, [a, b, scalar(3)], F32)
    assert out.shape == (5, 4, 3, 2)
    assert np.all(out == 3.0)


def test_float16_result_is_stored_as_float16_with_activation():
    a = tensor(F16, [-2.0, 3.0, 8.0], dtype=np.float16)
    b = tensor(F16, [1.0, 1.0, 1.0], dtype=np.float16)
    (out,) = run(OperationType.ADD, [a, b, scalar(3)], F16)
    assert out.dtype == np.float16
    assert out.tolist() == [0.0, 4.0, 6.0]


def test_incompatible_shapes_are_invalid_arguments():
    a = tensor(F32, np.ones((2, 3)), dtype=np.float32)
    b = tensor(F32, np.ones((4, 3)), dtype=np.float32)
    with pytest.raises(DriverError) as info:
        run(OperationType.MUL, [a, b, scalar(0)], F32)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT


def test_quantized_maximum_minimum_compare_real_values_across_scales():
    a = tensor(Q8, [10, 40], 0.5, 0, np.uint8)  # 5.0, 20.0
    b = tensor(Q8, [30, 60], 0.25, 0, np.uint8)  # 7.5, 15.0
    assert run(OperationType.MAXIMUM, [a, b], Q8, 0.5, 0)[0].tolist() == [15, 40]
    assert run(OperationType.MINIMUM, [a, b], Q8, 0.5, 0)[0].tolist() == [10, 30]


def test_unary_int32_kernels_keep_int32():
    x = tensor(I32, [-3, 0, 7], dtype=np.int32)
    assert run(OperationType.ABS, [x], I32)[0].tolist() == [3, 0, 7]
    assert run(OperationType.NEG, [x], I32)[0].tolist() == [3, 0, -7]
    assert run(OperationType.NEG, [x], I32)[0].dtype == np.int32


def test_float_edge_values_are_results_not_errors():
    x = tensor(F32, [-1.0, 0.0, 1e30], dtype=np.float32)
    log = run(OperationType.LOG, [x], F32)[0]
    assert np.isnan(log[0]) and log[1] == -np.inf
    assert run(OperationType.RSQRT, [x], F32)[0][1] == np.inf
    assert run(OperationType.EXP, [x], F32)[0][2] == np.inf
