"""Driver bugs the harness found, pinned with hand-computed expectations so they stay fixed."""

from __future__ import annotations

import numpy as np

from harness.case import model_from_json
from harness.hal import ErrorStatus, MeasureTiming
from harness.requests import build_request
from tests.driver.conftest import prepared


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
    with build_request(model, [heat, box], [4, 8]) as rb:
        assert pm.execute_synchronously(rb.request, MeasureTiming.NO, None, None)[0] == ErrorStatus.NONE
        np.testing.assert_allclose(rb.read_output(0, [1, 1]), [[0.0]], atol=1e-6)
        np.testing.assert_allclose(rb.read_output(1, [1, 1, 2]), [[[0.125, 0.125]]], atol=1e-6)
