"""Driver bugs the harness found, pinned with hand-computed expectations so they stay fixed."""

from __future__ import annotations

import numpy as np
import pytest

from harness.case import model_from_json, simple_request
from harness.hal import ErrorStatus, MeasureTiming
from tests.driver.conftest import prepare, prepared
from tests.driver.models import counting_while_model


def _operand(type_: str, dims: list[int], lifetime: str, value: list | None = None) -> dict:
    d = {"type": type_, "dimensions": dims, "lifetime": lifetime, "scale": 0.0, "zeroPoint": 0}
    if value is not None:
        d["value"] = value
    return d


def test_heatmap_keypoints_scale_with_boxes_smaller_than_one(device) -> None:
    # Found by the execution target: the driver clamped box extents to at least 1. A 2x2 heatmap peaking at
    # (0, 0) with a symmetric mirrored neighbourhood has no sub-pixel offset, so the keypoint is at
    # (0 + 0.5) / 2 of the box's 0.5 extent: 0.125 on both axes; the score is the peak value 0.
    model = model_from_json(
        {
            "operands": [
                _operand("TENSOR_FLOAT32", [1, 2, 2, 1], "SUBGRAPH_INPUT"),
                _operand("TENSOR_FLOAT32", [1, 4], "SUBGRAPH_INPUT"),
                _operand("BOOL", [], "CONSTANT_COPY", [False]),
                _operand("TENSOR_FLOAT32", [1, 1], "SUBGRAPH_OUTPUT"),
                _operand("TENSOR_FLOAT32", [1, 1, 2], "SUBGRAPH_OUTPUT"),
            ],
            "operations": [{"type": "HEATMAP_MAX_KEYPOINT", "inputs": [0, 1, 2], "outputs": [3, 4]}],
            "inputIndexes": [0, 1],
            "outputIndexes": [3, 4],
        }
    )
    heat = np.array([0.0, -0.197, -0.197, -0.316], dtype=np.float32).reshape(1, 2, 2, 1)
    box = np.array([[0.0, 0.0, 0.5, 0.5]], dtype=np.float32)
    pm = prepared(device, model)
    with simple_request(model, [heat, box], [4, 8]) as rb:
        assert pm.execute_synchronously(rb.request, MeasureTiming.NO, None, None)[0] == ErrorStatus.NONE
        np.testing.assert_allclose(rb.read_output(0, [1, 1]), [[0.0]], atol=1e-6)
        np.testing.assert_allclose(rb.read_output(1, [1, 1, 2]), [[[0.125, 0.125]]], atol=1e-6)


@pytest.mark.parametrize("dims", [[], [0], [2], [1, 1]])
def test_a_while_condition_output_not_of_shape_one_is_an_invalid_model(device, dims: list[int]) -> None:
    # Found by the validation target: the driver took a condition output of unknown rank ([]) or size ([0]) for
    # the required TENSOR_BOOL8 of shape [1]. The counting loop with only that output's dimensions changed.
    model = counting_while_model()
    condition_output = model.referenced[0].operands[2]
    assert condition_output.dimensions == [1]
    status, _ = device.get_supported_operations(model)
    assert status == ErrorStatus.NONE
    condition_output.dimensions = dims
    status, flags = device.get_supported_operations(model)
    assert status == ErrorStatus.INVALID_ARGUMENT and not flags
    launch, callback_status, pm = prepare(device, model)
    assert (launch, callback_status, pm) == (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.INVALID_ARGUMENT, None)


def _unary_quant8_model(op: str, out_scale: float, out_zero_point: int) -> dict:
    operand = _operand("TENSOR_QUANT8_ASYMM", [2], "SUBGRAPH_INPUT")
    operand.update(scale=0.5, zeroPoint=10)
    output = _operand("TENSOR_QUANT8_ASYMM", [2], "SUBGRAPH_OUTPUT")
    output.update(scale=out_scale, zeroPoint=out_zero_point)
    return {
        "operands": [operand, output],
        "operations": [{"type": op, "inputs": [0], "outputs": [1]}],
        "inputIndexes": [0],
        "outputIndexes": [1],
    }


@pytest.mark.parametrize(
    ("op", "fixed", "declared"),
    [
        ("TANH", (1.0 / 128, 128), (1.0 / 128, 0)),
        ("TANH", (1.0 / 128, 128), (1.0 / 256, 128)),
        ("LOGISTIC", (1.0 / 256, 0), (1.0 / 128, 0)),
        ("LOGISTIC", (1.0 / 256, 0), (1.0 / 256, 128)),
    ],
)
def test_an_output_quantization_the_hal_fixes_is_checked(device, op: str, fixed: tuple, declared: tuple) -> None:
    # Found through a minimized execution case: a quant8 TANH output with zero point 0 was accepted and executed.
    status, flags = device.get_supported_operations(model_from_json(_unary_quant8_model(op, *fixed)))
    assert status == ErrorStatus.NONE and flags == [True]
    model = model_from_json(_unary_quant8_model(op, *declared))
    status, flags = device.get_supported_operations(model)
    assert status == ErrorStatus.INVALID_ARGUMENT and not flags
    launch, callback_status, pm = prepare(device, model)
    assert (launch, callback_status, pm) == (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.INVALID_ARGUMENT, None)


def _shrinking_slice(begin: int, end: int, stride: int) -> dict:
    # x[begin:end:stride, :] of a [4, 2] input with axis 0 shrunk (shrink_axis_mask 1): output [2].
    return {
        "operands": [
            _operand("TENSOR_FLOAT32", [4, 2], "SUBGRAPH_INPUT"),
            _operand("TENSOR_INT32", [2], "CONSTANT_COPY", [begin, 0]),
            _operand("TENSOR_INT32", [2], "CONSTANT_COPY", [end, 2]),
            _operand("TENSOR_INT32", [2], "CONSTANT_COPY", [stride, 1]),
            _operand("INT32", [], "CONSTANT_COPY", [0]),
            _operand("INT32", [], "CONSTANT_COPY", [0]),
            _operand("INT32", [], "CONSTANT_COPY", [1]),
            _operand("TENSOR_FLOAT32", [2], "SUBGRAPH_OUTPUT"),
        ],
        "operations": [{"type": "STRIDED_SLICE", "inputs": [0, 1, 2, 3, 4, 5, 6], "outputs": [7]}],
        "inputIndexes": [0],
        "outputIndexes": [7],
    }


@pytest.mark.parametrize(
    ("begin", "end", "stride", "row"),
    [(2, 3, 1, 2), (2, 1, -1, 2), (-1, 4, 5, 3), (3, 0, -14, 3), (1, 1, 1, None), (0, 2, 1, None), (0, 0, -14, None)],
)
def test_a_shrunk_strided_slice_axis_must_select_exactly_one_element(device, begin, end, stride, row) -> None:
    # Found by the memory_domain target: the driver took element begin[i] of a shrunk axis whatever end and
    # stride selected, where the HAL keeps "a slice of size 1 starting from begin[i]" (none or two: a failure).
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    model = model_from_json(_shrinking_slice(begin, end, stride))
    pm = prepared(device, model)
    with simple_request(model, [x], [8]) as rb:
        status, shapes, _ = pm.execute_synchronously(rb.request, MeasureTiming.NO, None, None)
        if row is None:
            assert status in (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE) and not shapes
        else:
            assert status == ErrorStatus.NONE
            np.testing.assert_array_equal(rb.read_output(0, [2]), x[row])


def _quant8_fully_connected(in_scale: float, weight_scale: float, out_scale: float, weights: list[int]) -> dict:
    # FULLY_CONNECTED of a [1, 4] TENSOR_QUANT8_ASYMM_SIGNED input (zero points 0) with [1, 4] weights and a zero
    # bias; the output's zero point is 0.
    def quant(d: dict, scale: float) -> dict:
        d.update(scale=scale, zeroPoint=0)
        return d

    return {
        "operands": [
            quant(_operand("TENSOR_QUANT8_ASYMM_SIGNED", [1, 4], "SUBGRAPH_INPUT"), in_scale),
            quant(_operand("TENSOR_QUANT8_ASYMM_SIGNED", [1, 4], "CONSTANT_COPY", weights), weight_scale),
            quant(_operand("TENSOR_INT32", [1], "CONSTANT_COPY", [0]), in_scale * weight_scale),
            _operand("INT32", [], "CONSTANT_COPY", [0]),
            quant(_operand("TENSOR_QUANT8_ASYMM_SIGNED", [1, 1], "SUBGRAPH_OUTPUT"), out_scale),
        ],
        "operations": [{"type": "FULLY_CONNECTED", "inputs": [0, 1, 2, 3], "outputs": [4]}],
        "inputIndexes": [0],
        "outputIndexes": [4],
    }


@pytest.mark.parametrize(
    ("in_scale", "weight_scale", "out_scale", "weights", "expected"),
    [
        # input * weight / output scale 1.28e16 (shift 54): the accumulator 1016 shifted left wrapped around int64
        # and flipped sign before saturating (the real result, 1016 * 1e14, saturates at 127).
        (1e8, 1e6, 1.0 / 128, [2, 2, 2, 2], 127),
        (1e8, 1e6, 1.0 / 128, [-2, -2, -2, -2], -128),
        # input * weight / output scale 1e-24 (shift -79): the rounding mask of a right shift past 63 bits wrapped
        # around and rounded 1016 * 1e-24 to 1 instead of 0.
        (1e-12, 1e-12, 1.0, [2, 2, 2, 2], 0),
        (1e-12, 1e-12, 1.0, [-2, -2, -2, -2], 0),
    ],
)
def test_quantized_fully_connected_with_extreme_rescale_factors(
    device, in_scale: float, weight_scale: float, out_scale: float, weights: list[int], expected: int
) -> None:
    # Found by the execution target with extreme quantization parameters: requantization with a multiplier
    # shift beyond the int64 headroom of the fixed-point arithmetic.
    model = model_from_json(_quant8_fully_connected(in_scale, weight_scale, out_scale, weights))
    x = np.full((1, 4), 127, dtype=np.int8)
    pm = prepared(device, model)
    with simple_request(model, [x], [1]) as rb:
        assert pm.execute_synchronously(rb.request, MeasureTiming.NO, None, None)[0] == ErrorStatus.NONE
        assert rb.read_output(0, [1, 1]).tolist() == [[expected]]
