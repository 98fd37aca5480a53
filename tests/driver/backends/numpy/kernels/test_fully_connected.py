"""The driver's FULLY_CONNECTED kernel: conformance vectors, a hand-computed example and the signed-storage law."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels._vectors_b import (
    call_of,
    case_params,
    check_signed_variant,
    output,
    quant8_cases,
    run_and_check,
    scalar,
    tensor,
)

T = OperandType


@pytest.mark.parametrize("case", case_params(["FULLY_CONNECTED"]))
def test_conformance_vector(case) -> None:
    run_and_check(case)


@pytest.mark.parametrize("case", quant8_cases(["FULLY_CONNECTED"]))
def test_signed_storage_gives_the_same_real_results(case) -> None:
    check_signed_variant(case)


def _fc(inputs, out=None) -> np.ndarray:
    return lookup(OperationType.FULLY_CONNECTED).fn(call_of(inputs, [out or output()]))[0]


def test_rank4_input_is_flattened_to_rows_of_input_size() -> None:
    # input_size is weights.shape[1] = 2, so the 8 values form four rows [1,2] [3,4] [5,6] [7,8]; the two units
    # compute x0 + x1 and x0 - x1, plus bias.
    x = np.arange(1, 9, dtype=np.float32).reshape(2, 2, 1, 2)
    got = _fc([tensor(x), tensor([[1.0, 1.0], [1.0, -1.0]]), tensor([0.5, 0.0]), scalar(0)])
    assert got.tolist() == [[3.5, -1.0], [7.5, -1.0], [11.5, -1.0], [15.5, -1.0]]


def test_quantized_hand_computed() -> None:
    # x real [1, 2] (scale 0.5, zp 10), weights real [[2, -1]] (scale 0.25, zp 128 -> stored 136, 124), bias 3 in
    # scale 0.125 = 0.375: real 1*2 + 2*(-1) + 0.375 = 0.375, output scale 0.25 zp 100 -> 101.5 -> 102.
    # Fixed point: acc = 2*8 + 4*(-4) + 3 = 3; 3 * 0.5 = 1.5 rounds (high multiply, positive) to 2 -> 102.
    got = _fc([tensor([[12, 14]], T.TENSOR_QUANT8_ASYMM, 0.5, 10), tensor([[136, 124]], T.TENSOR_QUANT8_ASYMM,
               0.25, 128), tensor([3], T.TENSOR_INT32, 0.125), scalar(0)],
              output(T.TENSOR_QUANT8_ASYMM, 0.25, 100))
    assert got.tolist() == [[102]]


def test_input_not_a_multiple_of_input_size_is_invalid() -> None:
    with pytest.raises(DriverError) as err:
        _fc([tensor(np.zeros((1, 3))), tensor(np.zeros((2, 2))), tensor(np.zeros(2)), scalar(0)])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
