"""The driver's comparison, logical and SELECT kernels: conformance vectors and hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import OpCall, Tensor, lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels.conftest import run_vector_case, single_op_cases

OPS = {
    "EQUAL",
    "NOT_EQUAL",
    "GREATER",
    "GREATER_EQUAL",
    "LESS",
    "LESS_EQUAL",
    "LOGICAL_AND",
    "LOGICAL_OR",
    "LOGICAL_NOT",
    "SELECT",
}
CASES = single_op_cases(OPS)

F32, I32, BOOL8 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8
Q8 = OperandType.TENSOR_QUANT8_ASYMM


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_vector(case):
    run_vector_case(case)


def tensor(operand_type, values, dtype, scale=0.0, zero_point=0):
    data = np.asarray(values, dtype=dtype)
    return Tensor(type=int(operand_type), shape=data.shape, scale=scale, zero_point=zero_point, data=data)


def run(op, inputs, out_type=BOOL8, scale=0.0, zero_point=0):
    call = OpCall(inputs=inputs, outputs=[Tensor(type=int(out_type), shape=(), scale=scale, zero_point=zero_point)])
    return lookup(op).fn(call)


def test_quantized_comparisons_use_real_values_across_scales():
    a = tensor(Q8, [10, 10, 10], np.uint8, 0.5, 0)  # 5.0 each
    b = tensor(Q8, [20, 21, 19], np.uint8, 0.25, 0)  # 5.0, 5.25, 4.75
    assert run(OperationType.EQUAL, [a, b])[0].tolist() == [True, False, False]
    assert run(OperationType.GREATER, [a, b])[0].tolist() == [False, False, True]
    assert run(OperationType.LESS_EQUAL, [a, b])[0].tolist() == [True, True, False]


def test_comparisons_broadcast_and_return_bool8():
    a = tensor(I32, [[1], [5]], np.int32)
    b = tensor(I32, [1, 3, 5], np.int32)
    (out,) = run(OperationType.GREATER_EQUAL, [a, b])
    assert out.dtype == np.bool_
    assert out.tolist() == [[True, False, False], [True, True, True]]
    assert run(OperationType.NOT_EQUAL, [a, b])[0].tolist() == [[False, True, True], [True, True, False]]


def test_logical_operations():
    a = tensor(BOOL8, [True, True, False, False], np.bool_)
    b = tensor(BOOL8, [True, False, True, False], np.bool_)
    assert run(OperationType.LOGICAL_AND, [a, b])[0].tolist() == [True, False, False, False]
    assert run(OperationType.LOGICAL_OR, [a, b])[0].tolist() == [True, True, True, False]
    assert run(OperationType.LOGICAL_NOT, [a])[0].tolist() == [False, False, True, True]


def test_select_float():
    cond = tensor(BOOL8, [True, False, True], np.bool_)
    x = tensor(F32, [1.0, 2.0, 3.0], np.float32)
    y = tensor(F32, [-1.0, -2.0, -3.0], np.float32)
    assert run(OperationType.SELECT, [cond, x, y], F32)[0].tolist() == [1.0, -2.0, 3.0]


def test_select_quantized_requantizes_each_choice_to_the_output():
    cond = tensor(BOOL8, [True, False], np.bool_)
    x = tensor(Q8, [10, 20], np.uint8, 1.0, 0)  # 10, 20
    y = tensor(Q8, [4, 6], np.uint8, 2.0, 0)  # 8, 12
    (out,) = run(OperationType.SELECT, [cond, x, y], Q8, 1.0, 0)
    assert out.dtype == np.uint8
    assert out.tolist() == [10, 12]


def test_select_rejects_mismatched_shapes():
    cond = tensor(BOOL8, [True, False], np.bool_)
    x = tensor(F32, [1.0, 2.0], np.float32)
    y = tensor(F32, [1.0, 2.0, 3.0], np.float32)
    with pytest.raises(DriverError) as info:
        run(OperationType.SELECT, [cond, x, y], F32)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT
