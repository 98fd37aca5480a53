"""The driver's normalization kernels: conformance vectors, hand-computed examples and normalization laws."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels._vectors_b import call_of, case_params, output, run_and_check, scalar, tensor

T = OperandType
NORM_OPS = ("L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "INSTANCE_NORMALIZATION")


@pytest.mark.parametrize("case", case_params(NORM_OPS))
def test_conformance_vector(case) -> None:
    run_and_check(case)


def _run(op: OperationType, inputs, out=None) -> np.ndarray:
    return lookup(op).fn(call_of(inputs, [out or output()]))[0]


def test_l2_normalization_of_a_3_4_5_triangle() -> None:
    got = _run(OperationType.L2_NORMALIZATION, [tensor([[3.0, 4.0], [0.0, 0.0]])])
    np.testing.assert_allclose(got, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


def test_l2_normalization_along_another_axis() -> None:
    got = _run(OperationType.L2_NORMALIZATION, [tensor([[3.0, 1.0], [4.0, 0.0]]), scalar(0)])
    np.testing.assert_allclose(got, [[0.6, 1.0], [0.8, 0.0]], rtol=1e-6)


def test_quantized_l2_normalization_hand_computed() -> None:
    # Differences 3 and 4 from the zero point; 128 * 3 / 5 = 76.8 -> 77 and 128 * 4 / 5 = 102.4 -> 102 on top of
    # the output zero point 128 (output scale 1/128).
    got = _run(OperationType.L2_NORMALIZATION, [tensor([[131, 132]], T.TENSOR_QUANT8_ASYMM, 0.1, 128)],
               output(T.TENSOR_QUANT8_ASYMM, 1 / 128, 128))
    assert got.tolist() == [[205, 230]]


def test_local_response_normalization_hand_computed() -> None:
    # Radius 1, bias 1, alpha 1, beta 1: squared sums 1+4, 1+4+9, 4+9.
    params = [scalar(1), scalar(1.0, T.FLOAT32), scalar(1.0, T.FLOAT32), scalar(1.0, T.FLOAT32)]
    got = _run(OperationType.LOCAL_RESPONSE_NORMALIZATION, [tensor([[[[1.0, 2.0, 3.0]]]]), *params])
    np.testing.assert_allclose(got.reshape(-1), [1 / 6, 2 / 15, 3 / 14], rtol=1e-6)
    along_first = _run(OperationType.LOCAL_RESPONSE_NORMALIZATION, [tensor([[1.0], [2.0], [3.0]]), *params,
                                                                    scalar(0)])
    np.testing.assert_allclose(along_first.reshape(-1), [1 / 6, 2 / 15, 3 / 14], rtol=1e-6)


def test_instance_normalization_uses_the_variance_of_each_plane() -> None:
    # Channel 1 of batch 0 holds 1, 2, 2, 4: mean 2.25, variance 1.1875.
    x = np.array([0, 1, 0, 2, 0, 2, 0, 4], dtype=np.float32).reshape(1, 2, 2, 2)
    params = [scalar(1.0, T.FLOAT32), scalar(0.0, T.FLOAT32), scalar(1e-4, T.FLOAT32), scalar(False, T.BOOL)]
    got = _run(OperationType.INSTANCE_NORMALIZATION, [tensor(x), *params])
    expected = (np.array([1, 2, 2, 4]) - 2.25) / np.sqrt(1.1875 + 1e-4)
    np.testing.assert_allclose(got[..., 1].reshape(-1), expected, rtol=1e-5)
    np.testing.assert_array_equal(got[..., 0], 0.0)


def test_instance_normalization_planes_have_zero_mean_then_gamma_and_beta_apply() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32) * 3 + 1
    params = [scalar(2.0, T.FLOAT32), scalar(-1.0, T.FLOAT32), scalar(1e-6, T.FLOAT32), scalar(True, T.BOOL)]
    got = _run(OperationType.INSTANCE_NORMALIZATION, [tensor(x), *params])
    normalized = (got + 1.0) / 2.0
    np.testing.assert_allclose(normalized.mean(axis=(2, 3)), 0.0, atol=1e-5)
    np.testing.assert_allclose(normalized.var(axis=(2, 3)), 1.0, rtol=1e-4)


def test_axis_out_of_range_is_invalid() -> None:
    with pytest.raises(DriverError) as err:
        _run(OperationType.L2_NORMALIZATION, [tensor([[1.0, 2.0]]), scalar(2)])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
