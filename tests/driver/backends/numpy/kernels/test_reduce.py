"""The driver's reduction kernels: conformance vectors and hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import OpCall, Tensor, lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels.conftest import run_vector_case, single_op_cases

OPS = {
    "REDUCE_ALL",
    "REDUCE_ANY",
    "REDUCE_MAX",
    "REDUCE_MIN",
    "REDUCE_PROD",
    "REDUCE_SUM",
    "MEAN",
    "ARGMAX",
    "ARGMIN",
}
CASES = single_op_cases(OPS)

F32, F16, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
Q8, Q8S, BOOL8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_BOOL8


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_vector(case):
    run_vector_case(case)


def tensor(operand_type, values, dtype, scale=0.0, zero_point=0):
    data = np.asarray(values, dtype=dtype)
    return Tensor(type=int(operand_type), shape=data.shape, scale=scale, zero_point=zero_point, data=data)


def axes(*values):
    return tensor(I32, list(values), np.int32)


def flag(value, operand_type=OperandType.BOOL, dtype=np.bool_):
    return Tensor(type=int(operand_type), shape=(), data=np.array(value, dtype=dtype))


def run(op, inputs, out_type, scale=0.0, zero_point=0):
    call = OpCall(inputs=inputs, outputs=[Tensor(type=int(out_type), shape=(), scale=scale, zero_point=zero_point)])
    return lookup(op).fn(call)


X = [[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]


@pytest.mark.parametrize(
    ("op", "dims", "keep", "expected"),
    [
        (OperationType.REDUCE_SUM, (1,), False, [2.0, 3.0]),
        (OperationType.REDUCE_SUM, (0, -1), True, [[5.0]]),
        (OperationType.REDUCE_PROD, (0,), False, [4.0, -10.0, -18.0]),
        (OperationType.REDUCE_MAX, (-1,), True, [[3.0], [5.0]]),
        (OperationType.REDUCE_MIN, (0, 0), False, [1.0, -2.0, -6.0]),  # repeated axes count once
        (OperationType.REDUCE_MAX, (), False, X),  # no axes: nothing is reduced
    ],
)
def test_float_reductions(op, dims, keep, expected):
    (out,) = run(op, [tensor(F32, X, np.float32), axes(*dims), flag(keep)], F32)
    assert out.tolist() == expected


def test_reducing_every_dimension_reports_shape_one():
    (out,) = run(OperationType.REDUCE_SUM, [tensor(F32, X, np.float32), axes(0, 1), flag(False)], F32)
    assert out.shape == (1,)
    assert out.tolist() == [5.0]


def test_boolean_reductions():
    x = tensor(BOOL8, [[True, False], [True, True]], np.bool_)
    assert run(OperationType.REDUCE_ALL, [x, axes(1), flag(False)], BOOL8)[0].tolist() == [False, True]
    assert run(OperationType.REDUCE_ANY, [x, axes(0), flag(True)], BOOL8)[0].tolist() == [[True, True]]


def test_quantized_max_min_keep_codes():
    x = tensor(Q8S, [[-5, 7], [100, -128]], np.int8, 0.5, 3)
    assert run(OperationType.REDUCE_MAX, [x, axes(1), flag(False)], Q8S, 0.5, 3)[0].tolist() == [7, 100]
    assert run(OperationType.REDUCE_MIN, [x, axes(0), flag(False)], Q8S, 0.5, 3)[0].tolist() == [-5, -128]


def test_quantized_mean_rounds_half_away_from_zero():
    keep = flag(0, OperandType.INT32, np.int32)
    x = tensor(Q8, [[1, 2], [10, 10], [3, 4]], np.uint8, 0.1, 0)
    assert run(OperationType.MEAN, [x, axes(1), keep], Q8, 0.1, 0)[0].tolist() == [2, 10, 4]
    # centred on the zero point 10: means -0.5 -> -1 and 1.5 -> 2
    y = tensor(Q8, [[9, 10], [11, 12]], np.uint8, 0.1, 10)
    assert run(OperationType.MEAN, [y, axes(1), keep], Q8, 0.1, 10)[0].tolist() == [9, 12]


def test_mean_keep_dims_is_positive_int():
    x = tensor(F16, [[1.0, 2.0], [3.0, 5.0]], np.float16)
    (out,) = run(OperationType.MEAN, [x, axes(0), flag(1, OperandType.INT32, np.int32)], F16)
    assert out.dtype == np.float16
    assert out.tolist() == [[2.0, 3.5]]


def test_argmax_argmin_pick_the_first_of_equal_values():
    x = tensor(I32, [[3, 7, 7], [2, 2, 1]], np.int32)
    axis = Tensor(type=int(OperandType.INT32), shape=(), data=np.array(-1, dtype=np.int32))
    assert run(OperationType.ARGMAX, [x, axis], I32)[0].tolist() == [1, 0]
    assert run(OperationType.ARGMIN, [x, axis], I32)[0].tolist() == [0, 2]
    assert run(OperationType.ARGMAX, [x, axis], I32)[0].dtype == np.int32


def test_out_of_range_axis_is_invalid():
    with pytest.raises(DriverError) as info:
        run(OperationType.REDUCE_SUM, [tensor(F32, X, np.float32), axes(2), flag(False)], F32)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT
