"""The driver's detection and region-of-interest kernels: single-operation vectors, the public multi-operation
graphs that chain them (run kernel by kernel), and hand-computed examples."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels._vectors_b import (
    call_of,
    case_params,
    graph_params,
    output,
    run_and_check,
    run_graph,
    scalar,
    tensor,
)

T = OperandType
DETECTION_OPS = (
    "AXIS_ALIGNED_BBOX_TRANSFORM",
    "BOX_WITH_NMS_LIMIT",
    "DETECTION_POSTPROCESSING",
    "HEATMAP_MAX_KEYPOINT",
    "GENERATE_PROPOSALS",
    "ROI_ALIGN",
    "ROI_POOLING",
)


@pytest.mark.parametrize("case", case_params(DETECTION_OPS))
def test_conformance_vector(case) -> None:
    run_and_check(case)


@pytest.mark.parametrize("case", graph_params(DETECTION_OPS))
def test_conformance_graph(case) -> None:
    run_graph(case)


def _f(v: float) -> object:
    return scalar(v, T.FLOAT32)


def _run(op: OperationType, inputs, outputs) -> list[np.ndarray]:
    return lookup(op).fn(call_of(inputs, outputs))


def test_bbox_transform_moves_and_scales_then_clips() -> None:
    # Box 0..10 square, delta (0.5, 0, ln 2, 0): centre x 5 -> 10, width 10 -> 20; x2 = 20 clips to width 16.
    (got,) = _run(OperationType.AXIS_ALIGNED_BBOX_TRANSFORM,
                  [tensor([[0.0, 0.0, 10.0, 10.0]]), tensor([[0.5, 0.0, np.log(2.0), 0.0]]),
                   tensor([0], T.TENSOR_INT32), tensor([[100.0, 16.0]])], [output()])
    np.testing.assert_allclose(got, [[0.0, 0.0, 16.0, 10.0]], atol=1e-5)


def test_hard_nms_drops_overlapping_boxes_of_a_class() -> None:
    # Two nearly identical boxes of class 1 (IoU 0.81) and one far away; background class 0 is ignored. The
    # suppressed box's score drops to 0, below the NMS score threshold 0.05.
    scores = tensor([[0.0, 0.9], [0.0, 0.8], [0.0, 0.7]])
    boxes = tensor([[0, 0, 0, 0, 0, 0, 10, 10], [0, 0, 0, 0, 1, 1, 10, 10], [0, 0, 0, 0, 20, 20, 30, 30]])
    params = [tensor([0, 0, 0], T.TENSOR_INT32), _f(0.1), scalar(-1), scalar(0), _f(0.5), _f(1.0), _f(0.05)]
    out_scores, out_boxes, classes, batches = _run(
        OperationType.BOX_WITH_NMS_LIMIT, [scores, boxes, *params],
        [output(), output(), output(T.TENSOR_INT32), output(T.TENSOR_INT32)])
    np.testing.assert_allclose(out_scores, [0.9, 0.7])
    assert out_boxes.tolist() == [[0, 0, 10, 10], [20, 20, 30, 30]]
    assert classes.tolist() == [1, 1] and batches.tolist() == [0, 0]


def test_roi_pooling_takes_the_max_of_each_bin() -> None:
    # 4x4 map of 0..15, region covering the whole map, 2x2 bins: maxima of the four quadrants.
    features = tensor(np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1))
    (got,) = _run(OperationType.ROI_POOLING,
                  [features, tensor([[0.0, 0.0, 3.0, 3.0]]), tensor([0], T.TENSOR_INT32), scalar(2), scalar(2),
                   _f(1.0), _f(1.0), scalar(False, T.BOOL)], [output()])
    assert got.reshape(-1).tolist() == [5.0, 7.0, 13.0, 15.0]


def test_roi_align_of_a_linear_ramp_samples_bin_centres() -> None:
    # f(y, x) = x on a 4x4 map; one 4x4 bin sampled 2x2 at x = 1 and 3 averages to 2 (bilinear is exact on a ramp,
    # the sample at x = 3 sits on the last column).
    features = tensor(np.tile(np.arange(4, dtype=np.float32), (4, 1)).reshape(1, 4, 4, 1))
    (got,) = _run(OperationType.ROI_ALIGN,
                  [features, tensor([[0.0, 0.0, 4.0, 4.0]]), tensor([0], T.TENSOR_INT32), scalar(1), scalar(1),
                   _f(1.0), _f(1.0), scalar(2), scalar(2), scalar(False, T.BOOL)], [output()])
    np.testing.assert_allclose(got.reshape(-1), [2.0])


def test_heatmap_peak_of_a_symmetric_bump_is_not_shifted() -> None:
    heat = np.zeros((1, 4, 4, 1), dtype=np.float32)
    heat[0, 1, 2, 0] = 4.0
    scores, points = _run(OperationType.HEATMAP_MAX_KEYPOINT,
                          [tensor(heat), tensor([[0.0, 0.0, 8.0, 8.0]]), scalar(False, T.BOOL)],
                          [output(), output()])
    np.testing.assert_allclose(scores, [[4.0]])
    # Column 2 and row 1 of a 4-cell heatmap over an 8-pixel box: (2 + 0.5) * 2 and (1 + 0.5) * 2.
    np.testing.assert_allclose(points, [[[5.0, 3.0]]])


def test_roi_batch_index_out_of_range_is_invalid() -> None:
    with pytest.raises(DriverError) as err:
        _run(OperationType.ROI_POOLING,
             [tensor(np.zeros((1, 2, 2, 1))), tensor([[0.0, 0.0, 1.0, 1.0]]), tensor([3], T.TENSOR_INT32),
              scalar(1), scalar(1), _f(1.0), _f(1.0), scalar(False, T.BOOL)], [output()])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
