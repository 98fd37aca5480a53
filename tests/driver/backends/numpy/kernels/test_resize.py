"""The driver's resize kernels: conformance vectors and hand-computed sampling positions."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels._vectors_b import call_of, case_params, output, run_and_check, scalar, tensor

T = OperandType
RESIZE_OPS = ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
_ROW = [[[[0.0], [10.0]]]]  # 1x1x2x1


@pytest.mark.parametrize("case", case_params(RESIZE_OPS))
def test_conformance_vector(case) -> None:
    run_and_check(case)


def _resize(op: OperationType, x, params, out=None) -> np.ndarray:
    return lookup(op).fn(call_of([x, *params], [out or output()]))[0]


def _width(n: int, *flags: bool) -> list:
    return [scalar(n), scalar(1), scalar(False, T.BOOL), *(scalar(f, T.BOOL) for f in flags)]


def test_bilinear_samples_at_dst_times_in_over_out() -> None:
    # Source x = 0, 0.5, 1, 1.5 (the last clamps to the edge).
    got = _resize(OperationType.RESIZE_BILINEAR, tensor(_ROW), _width(4))
    assert got.reshape(-1).tolist() == [0.0, 5.0, 10.0, 10.0]


def test_bilinear_align_corners_maps_corners_onto_corners() -> None:
    got = _resize(OperationType.RESIZE_BILINEAR, tensor(_ROW), _width(3, True, False))
    assert got.reshape(-1).tolist() == [0.0, 5.0, 10.0]


def test_bilinear_half_pixel_centers_sample_pixel_centers() -> None:
    # Source x = (d + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped at both edges.
    got = _resize(OperationType.RESIZE_BILINEAR, tensor(_ROW), _width(4, False, True))
    assert got.reshape(-1).tolist() == [0.0, 2.5, 7.5, 10.0]


def test_bilinear_by_scale_and_quantized_rounding() -> None:
    # Scale 2 doubles the width; stored 0 and 5 interpolate to 2.5, rounded to 3.
    x = tensor([[[[0], [5]]]], T.TENSOR_QUANT8_ASYMM, 0.5, 0)
    params = [scalar(2.0, T.FLOAT32), scalar(1.0, T.FLOAT32)]
    got = _resize(OperationType.RESIZE_BILINEAR, x, params, output(T.TENSOR_QUANT8_ASYMM, 0.5, 0))
    assert got.reshape(-1).tolist() == [0, 3, 5, 5]


def test_nearest_neighbor_floors_the_source_coordinate() -> None:
    x = tensor([[[[1.0], [2.0], [3.0]]]])
    assert _resize(OperationType.RESIZE_NEAREST_NEIGHBOR, x, _width(2)).reshape(-1).tolist() == [1.0, 2.0]
    # 3 -> 5: source x = 0, 0.6, 1.2, 1.8, 2.4.
    assert _resize(OperationType.RESIZE_NEAREST_NEIGHBOR, x, _width(5)).reshape(-1).tolist() == [1, 1, 2, 2, 3]


def test_nearest_neighbor_align_corners_rounds_and_half_pixel_uses_centers() -> None:
    x = tensor([[[[1.0], [2.0], [3.0]]]])
    # align_corners 3 -> 4: scale 2/3, source 0, 0.67, 1.33, 2 -> rounded 0, 1, 1, 2.
    got = _resize(OperationType.RESIZE_NEAREST_NEIGHBOR, x, _width(4, True, False))
    assert got.reshape(-1).tolist() == [1.0, 2.0, 2.0, 3.0]
    # half-pixel 3 -> 2: source (d + 0.5) * 1.5 = 0.75, 2.25 -> floored 0, 2.
    got = _resize(OperationType.RESIZE_NEAREST_NEIGHBOR, x, _width(2, False, True))
    assert got.reshape(-1).tolist() == [1.0, 3.0]


def test_zero_output_size_is_invalid() -> None:
    with pytest.raises(DriverError) as err:
        _resize(OperationType.RESIZE_BILINEAR, tensor(_ROW), [scalar(0), scalar(1)])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
