"""The driver's pooling kernels: conformance vectors, hand-computed windows and the signed-storage law."""

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
POOL_OPS = ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")
_IMAGE = [[[[1.0], [2.0]], [[3.0], [4.0]]]]  # 1 2 / 3 4


@pytest.mark.parametrize("case", case_params(POOL_OPS))
def test_conformance_vector(case) -> None:
    run_and_check(case)


@pytest.mark.parametrize("case", quant8_cases(POOL_OPS))
def test_signed_storage_gives_the_same_real_results(case) -> None:
    check_signed_variant(case)


def _pool(op: OperationType, x, params, out=None) -> np.ndarray:
    return lookup(op).fn(call_of([x, *params], [out or output()]))[0]


def _same_2x2() -> list:
    return [scalar(1), scalar(1), scalar(1), scalar(2), scalar(2), scalar(0)]  # SAME, stride 1, 2x2 window


def test_average_counts_only_real_elements_under_the_window() -> None:
    got = _pool(OperationType.AVERAGE_POOL_2D, tensor(_IMAGE), _same_2x2())
    assert got.reshape(-1).tolist() == [2.5, 3.0, 3.5, 4.0]


def test_max_ignores_padding_even_when_everything_is_negative() -> None:
    got = _pool(OperationType.MAX_POOL_2D, tensor(-np.array(_IMAGE)), _same_2x2())
    assert got.reshape(-1).tolist() == [-1.0, -2.0, -3.0, -4.0]


def test_l2_is_the_root_mean_square_of_real_elements() -> None:
    got = _pool(OperationType.L2_POOL_2D, tensor(_IMAGE), _same_2x2())
    np.testing.assert_allclose(got.reshape(-1), np.sqrt([30 / 4, 20 / 2, 25 / 2, 16.0]), rtol=1e-6)


def test_quantized_average_rounds_half_away_from_zero() -> None:
    # Windows over stored [1, 2] and [-3, -2]: averages 1.5 -> 2 and -2.5 -> -3.
    x = tensor([[[[1], [2]], [[-3], [-2]]]], T.TENSOR_QUANT8_ASYMM_SIGNED, 1.0, 0)
    got = _pool(OperationType.AVERAGE_POOL_2D, x, [scalar(2), scalar(1), scalar(1), scalar(2), scalar(1), scalar(0)],
                output(T.TENSOR_QUANT8_ASYMM_SIGNED, 1.0, 0))
    assert got.reshape(-1).tolist() == [2, -3]


def test_explicit_padding_and_nchw_layout() -> None:
    # One padded column on each side: windows [pad, 1] and [2, pad] (stride 2, width 2) per row, NCHW in and out.
    x = tensor(np.array(_IMAGE).transpose(0, 3, 1, 2))
    params = [scalar(1), scalar(1), scalar(0), scalar(0), scalar(2), scalar(1), scalar(2), scalar(1), scalar(0),
              scalar(True, T.BOOL)]
    got = _pool(OperationType.MAX_POOL_2D, x, params)
    assert got.shape == (1, 1, 2, 2)
    assert got.reshape(-1).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_window_larger_than_padded_input_is_invalid() -> None:
    with pytest.raises(DriverError) as err:
        _pool(OperationType.MAX_POOL_2D, tensor(_IMAGE), [scalar(2), scalar(1), scalar(1), scalar(3), scalar(3),
                                                           scalar(0)])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
