"""Detection operations: hand-computed IoU, identity transforms, NMS on duplicates, constant feature maps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.ops.common import UnspecifiedResult
from harness.ops.detection import iou
from tests.ops._vectors_b import given_scalar, given_tensor, output, run_op

FAST = settings(max_examples=20, deadline=None)
F32 = T.TENSOR_FLOAT32


def test_iou_by_hand():
    # Two 2x2 squares overlapping in a unit square: 1 / (4 + 4 - 1).
    assert iou(np.array([0, 0, 2, 2.0]), np.array([1, 1, 3, 3.0])) == 1 / 7
    assert iou(np.array([0, 0, 1, 1.0]), np.array([2, 2, 3, 3.0])) == 0.0


def test_bbox_transform_with_zero_deltas_returns_the_clipped_rois():
    rois = np.array([[1, 2, 5, 6], [-3, 0, 4, 20]], dtype=np.float32)
    inputs = [
        given_tensor(F32, rois),
        given_tensor(F32, np.zeros((2, 8))),
        given_tensor(T.TENSOR_INT32, [0, 0]),
        given_tensor(F32, [[10.0, 8.0]]),
    ]
    (y,) = run_op(Op.AXIS_ALIGNED_BBOX_TRANSFORM, inputs, [output(F32)])
    clipped = [[1, 2, 5, 6], [0, 0, 4, 10]]
    np.testing.assert_array_equal(y, np.concatenate([clipped, clipped], axis=1))


def test_hard_nms_keeps_one_of_two_identical_boxes_per_class():
    scores = np.array([[0.0, 0.9], [0.0, 0.8], [0.0, 0.7]], dtype=np.float32)
    boxes = np.array([[0, 0, 0, 0, 0, 0, 2, 2], [0, 0, 0, 0, 0, 0, 2, 2], [0, 0, 0, 0, 5, 5, 6, 6]], dtype=np.float32)
    inputs = [
        given_tensor(F32, scores),
        given_tensor(F32, boxes),
        given_tensor(T.TENSOR_INT32, [0, 0, 0]),
        given_scalar(T.FLOAT32, 0.1),
        given_scalar(T.INT32, -1),
        given_scalar(T.INT32, 0),
        *[given_scalar(T.FLOAT32, v) for v in (0.5, 1.0, 0.1)],
    ]
    out_scores, out_boxes, classes, batches = run_op(
        Op.BOX_WITH_NMS_LIMIT, inputs, [output(F32), output(F32), output(T.TENSOR_INT32), output(T.TENSOR_INT32)]
    )
    np.testing.assert_allclose(out_scores, [0.9, 0.7])
    np.testing.assert_array_equal(out_boxes, [[0, 0, 2, 2], [5, 5, 6, 6]])
    assert classes.tolist() == [1, 1] and batches.tolist() == [0, 0]


def roi_inputs(op: Op, value: float, rois: np.ndarray) -> list:
    feat = np.full((1, 6, 6, 2), value, dtype=np.float32)
    inputs = [
        given_tensor(F32, feat),
        given_tensor(F32, rois),
        given_tensor(T.TENSOR_INT32, [0] * len(rois)),
        given_scalar(T.INT32, 2),
        given_scalar(T.INT32, 3),
        given_scalar(T.FLOAT32, 1.0),
        given_scalar(T.FLOAT32, 1.0),
    ]
    if op == Op.ROI_ALIGN:
        inputs += [given_scalar(T.INT32, 0), given_scalar(T.INT32, 2)]
    return inputs + [given_scalar(T.BOOL, False)]


@FAST
@given(
    value=st.floats(-100, 100, width=32),
    op=st.sampled_from([Op.ROI_ALIGN, Op.ROI_POOLING]),
    corner=st.tuples(st.floats(0, 2), st.floats(0, 2)),
    size=st.tuples(st.floats(0.5, 3), st.floats(0.5, 3)),
)
def test_roi_ops_on_a_constant_feature_map_return_the_constant(value, op, corner, size):
    rois = np.array([[corner[0], corner[1], corner[0] + size[0], corner[1] + size[1]]], dtype=np.float32)
    (y,) = run_op(op, roi_inputs(op, value, rois), [output(F32)])
    assert y.shape == (1, 2, 3, 2)
    np.testing.assert_allclose(y, value, rtol=1e-6)


def test_heatmap_keypoint_of_a_symmetric_peak_is_the_cell_centre():
    heat = np.zeros((1, 3, 3, 1), dtype=np.float32)
    heat[0, 1, 1, 0] = 1.0
    inputs = [given_tensor(F32, heat), given_tensor(F32, [[0.0, 0.0, 6.0, 3.0]]), given_scalar(T.BOOL, False)]
    scores, points = run_op(Op.HEATMAP_MAX_KEYPOINT, inputs, [output(F32), output(F32)])
    np.testing.assert_allclose(scores, [[1.0]])
    # Cell (1, 1) of a 3x3 map over a 6 wide, 3 high box: centre x = 2 * 1.5, y = 1 * 1.5.
    np.testing.assert_allclose(points, [[[3.0, 1.5]]])


def test_detection_postprocessing_zero_deltas_return_the_anchor_boxes():
    scores = np.array([[[0.0, 0.9], [0.0, 0.1]]], dtype=np.float32)
    anchors = np.array([[1.0, 2.0, 2.0, 4.0], [10.0, 10.0, 2.0, 2.0]], dtype=np.float32)
    inputs = [
        given_tensor(F32, scores),
        given_tensor(F32, np.zeros((1, 2, 4))),
        given_tensor(F32, anchors),
        *[given_scalar(T.FLOAT32, 1.0) for _ in range(4)],
        given_scalar(T.BOOL, False),
        *[given_scalar(T.INT32, v) for v in (3, 1, 1)],
        given_scalar(T.FLOAT32, 0.0),
        given_scalar(T.FLOAT32, 0.5),
        given_scalar(T.BOOL, False),
    ]
    outs = [output(F32), output(F32), output(T.TENSOR_INT32), output(T.TENSOR_INT32)]
    out_scores, boxes, classes, count = run_op(Op.DETECTION_POSTPROCESSING, inputs, outs)
    np.testing.assert_allclose(out_scores, [[0.9, 0.1, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(boxes[0, :2], [[0, 0, 2, 4], [9, 9, 11, 11]])
    assert classes.tolist() == [[0, 0, 0]] and count.tolist() == [2]


def test_roi_pooling_rounds_box_corners_half_away_from_zero():
    # Feature value = x coordinate. Box x from 0.5 to 2.5 at ratio 1: C rounding gives columns 1..3 (to-even would
    # give 0..2), so the three bins hold the maxima 1, 2 and 3.
    feat = np.broadcast_to(np.arange(6, dtype=np.float32)[None, None, :, None], (1, 6, 6, 2)).copy()
    rois = np.array([[0.5, 0.0, 2.5, 2.0]], dtype=np.float32)
    inputs = roi_inputs(Op.ROI_POOLING, 0.0, rois)
    inputs[0] = given_tensor(F32, feat)
    (y,) = run_op(Op.ROI_POOLING, inputs, [output(F32)])
    np.testing.assert_array_equal(y[0, 0, :, 0], [1.0, 2.0, 3.0])


def test_nms_of_boxes_whose_batch_indices_are_not_grouped_in_increasing_order_is_not_judged():
    # types.hal: boxes with the same batch index are grouped together; [0, 5, 0] breaks that, so grouping by runs
    # (the reference's reading) and by value (another driver's) are both answers the HAL allows.
    scores = np.array([[0.0, 0.9], [0.0, 0.8], [0.0, 0.7]], dtype=np.float32)
    boxes = np.array([[0, 0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 2, 2, 3, 3], [0, 0, 0, 0, 5, 5, 6, 6]], dtype=np.float32)

    def nms(batch_index: list[int]) -> list:
        inputs = [
            given_tensor(F32, scores),
            given_tensor(F32, boxes),
            given_tensor(T.TENSOR_INT32, batch_index),
            given_scalar(T.FLOAT32, 0.1),
            given_scalar(T.INT32, -1),
            given_scalar(T.INT32, 0),
            *[given_scalar(T.FLOAT32, v) for v in (0.5, 1.0, 0.1)],
        ]
        return run_op(
            Op.BOX_WITH_NMS_LIMIT, inputs, [output(F32), output(F32), output(T.TENSOR_INT32), output(T.TENSOR_INT32)]
        )

    with pytest.raises(UnspecifiedResult):
        nms([0, 5, 0])
    # Grouped in increasing order, even negative, they are judged; in another order the order of the output groups
    # is open (types.hal: the outputs are grouped by batches, and says no more).
    assert nms([-2, 5, 5])[3].tolist() == [-2, 5, 5]
    with pytest.raises(UnspecifiedResult):
        nms([5, 5, -2])


def test_a_proposal_centred_outside_the_image_is_not_judged():
    # The HAL's GENERATE_PROPOSALS names the min_size filter only; a box passing it whose centre is not inside the
    # image (a box of no extent on the far edge, any box of a 0 x 0 image) is kept by some implementations, dropped
    # by others.
    from harness.ops.detection import _big_enough

    assert _big_enough(np.array([0.0, 0.0, 2.0, 2.0]), 1.0, 4.0, 4.0)
    assert not _big_enough(np.array([0.0, 0.0, 0.5, 2.0]), 1.0, 4.0, 4.0)
    with pytest.raises(UnspecifiedResult):
        _big_enough(np.array([0.0, 0.0, 0.0, 0.0]), 0.0, 0.0, 0.0)
    with pytest.raises(UnspecifiedResult):
        _big_enough(np.array([4.0, 1.0, 4.0, 2.0]), 0.0, 4.0, 4.0)


@pytest.mark.parametrize("probe", [-1, 1])
def test_sizes_and_overlaps_within_float32_rounding_of_their_threshold_turn_under_the_probe(probe):
    # A box exactly min_size high (a float32 implementation lands a rounding either side) and an IoU exactly at
    # the NMS threshold are edges: outside the probe the comparison is exact, under it the edge resolves the way
    # the probe leans, so exactly one of the two probes flips each comparison.
    from harness.ops.common import quantization_nudge
    from harness.ops.detection import _big_enough, exceeds, overlap_band, reaches

    box = np.array([1.0, 0.5, 3.0, 1.0])  # height exactly 0.5
    a, b = np.array([0.0, 0.0, 2.0, 1.0]), np.array([1.0, 0.0, 3.0, 1.0])  # IoU exactly 1/3
    band = overlap_band(a, b)
    assert _big_enough(box, 0.5, 8.0, 6.0) and reaches(iou(a, b), 1 / 3, band) and not exceeds(iou(a, b), 1 / 3, band)
    with quantization_nudge(probe * 1e-9):
        assert _big_enough(box, 0.5, 8.0, 6.0) is (probe < 0)
        assert reaches(iou(a, b), 1 / 3, band) is (probe < 0)
        assert exceeds(iou(a, b), 1 / 3, band) is (probe < 0)
        # Far from the threshold in float32 terms, the probe changes nothing.
        assert _big_enough(box, 0.4999, 8.0, 6.0) and not _big_enough(box, 0.5001, 8.0, 6.0)
        assert exceeds(0.3334, 1 / 3, band) and not reaches(0.3333, 1 / 3, band)


def test_boxes_that_do_not_overlap_have_an_iou_of_exactly_0_even_under_the_probe():
    # Every implementation computes an empty intersection exactly: an IoU threshold of 0 then suppresses such boxes
    # in all of them (a memory-domain case of four all-zero boxes and threshold 0 relies on it).
    from harness.ops.common import quantization_nudge
    from harness.ops.detection import overlap_band, reaches

    zero, apart = np.zeros(4), np.array([2.0, 2.0, 3.0, 3.0])
    for a, b in ((zero, zero), (np.array([0.0, 0.0, 1.0, 1.0]), apart), (np.array([0.0, 0.0, 2.0, 2.0]), apart)):
        assert overlap_band(a, b) == 0.0
        with quantization_nudge(1e-9):
            assert reaches(iou(a, b), 0.0, overlap_band(a, b))


def test_a_proposal_exactly_min_size_high_is_an_edge_of_the_reference():
    # The baseline campaign's case: a quantized GENERATE_PROPOSALS whose one box is exactly min_size high; the
    # reference keeps it, and the stability check calls that output an edge.
    import json
    from pathlib import Path

    from harness.case import Case
    from harness.oracle.outputs import reference_is_stable

    path = Path(__file__).parents[1] / "targets/false_alarms/request-generate-proposals-box-at-min-size.json"
    case = Case.from_json(json.loads(path.read_text()))
    live, base = case.materialized(), case.reference()
    assert base.outputs[0].shape == (3,)
    assert not reference_is_stable(live.model, live.inputs, base)
