"""The driver's conversion kernels (QUANTIZE, DEQUANTIZE, CAST): conformance vectors and hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import OpCall, Tensor, lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels.conftest import run_vector_case, single_op_cases

CASES = single_op_cases({"QUANTIZE", "DEQUANTIZE", "CAST"})

F32, F16, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
Q8, Q8S = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_vector(case):
    run_vector_case(case)


def tensor(operand_type, values, dtype, scale=0.0, zero_point=0, channel_scales=None, channel_dim=0):
    data = np.asarray(values, dtype=dtype)
    return Tensor(
        type=int(operand_type),
        shape=data.shape,
        scale=scale,
        zero_point=zero_point,
        channel_scales=channel_scales,
        channel_dim=channel_dim,
        data=data,
    )


def run(op, x, out_type, scale=0.0, zero_point=0):
    call = OpCall(inputs=[x], outputs=[Tensor(type=int(out_type), shape=(), scale=scale, zero_point=zero_point)])
    return lookup(op).fn(call)[0]


def test_quantize_rounds_half_away_from_zero_and_saturates():
    x = tensor(F32, [0.5, 1.5, -0.5, -1.5, 1000.0, -1000.0, np.nan], np.float32)
    assert run(OperationType.QUANTIZE, x, Q8, 1.0, 128).tolist() == [129, 130, 127, 126, 255, 0, 128]
    assert run(OperationType.QUANTIZE, x, Q8S, 0.5, -1).tolist() == [0, 2, -2, -4, 127, -128, -1]


def test_quantize_from_float16():
    x = tensor(F16, [0.25, -0.75], np.float16)
    codes = run(OperationType.QUANTIZE, x, Q8, 0.25, 10)
    assert codes.dtype == np.uint8
    assert codes.tolist() == [11, 7]


def test_dequantize_per_tensor_and_per_channel():
    x = tensor(Q8, [0, 128, 255], np.uint8, 0.5, 128)
    assert run(OperationType.DEQUANTIZE, x, F32).tolist() == [-64.0, 0.0, 63.5]
    per_channel = tensor(
        OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
        [[1, -2], [3, 4]],
        np.int8,
        channel_scales=np.array([0.5, 2.0], dtype=np.float32),
        channel_dim=1,
    )
    out = run(OperationType.DEQUANTIZE, per_channel, F16)
    assert out.dtype == np.float16
    assert out.tolist() == [[0.5, -4.0], [1.5, 8.0]]


def test_cast_truncates_floats_and_saturates_integers():
    x = tensor(F32, [1.7, -1.7, 300.0, -3.0], np.float32)
    assert run(OperationType.CAST, x, I32).tolist() == [1, -1, 300, -3]
    assert run(OperationType.CAST, x, Q8).tolist() == [1, 0, 255, 0]
    codes = tensor(Q8, [0, 200], np.uint8, 0.1, 50)  # quantization parameters are ignored
    assert run(OperationType.CAST, codes, F32).tolist() == [0.0, 200.0]
    assert run(OperationType.CAST, codes, I32).dtype == np.int32


def test_cast_between_other_types_is_identity_only():
    signed = tensor(Q8S, [-3, 4], np.int8, 1.0, 0)
    assert run(OperationType.CAST, signed, Q8S, 1.0, 0).tolist() == [-3, 4]
    with pytest.raises(DriverError) as info:
        run(OperationType.CAST, signed, F32)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT
