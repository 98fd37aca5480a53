"""DETECTION_POSTPROCESSING through LiteRT's custom operator TFLite_Detection_PostProcess.

The other detection and ROI operations have no LiteRT counterpart (rules/unsupported.py).
"""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.litert._graph import Op, TensorSpec
from driver_under_test.backends.litert._registry import rule
from driver_under_test.backends.litert.rules._common import FLOAT
from harness.hal import OperationType as O

_CUSTOM = "TFLite_Detection_PostProcess"


def _check_postprocessing(op: Op) -> str | None:
    scores = op.dims(0)
    if len(scores) != 3 or not scores[0] or not scores[2]:
        return f"{op.name}: the scores' batch and class dimensions must be known (LiteRT runs one batch at a time)"
    if not 0.0 < float(op.scalar(12)) <= 1.0:
        return f"{op.name}: LiteRT's TFLite_Detection_PostProcess needs an IoU threshold in (0, 1]"
    max_detections, max_classes, per_class = (int(op.scalar(i)) for i in (8, 9, 10))
    if max_detections <= 0 or max_classes <= 0 or per_class <= 0:
        return f"{op.name}: LiteRT's TFLite_Detection_PostProcess needs positive detection limits"
    if not op.scalar(7) and max_classes > scores[2] - 1:
        return (
            f"{op.name}: fast NMS with max_classes_per_detection {max_classes} above the {scores[2] - 1} classes: "
            "LiteRT leaves a gap in its output after each anchor's classes, where the HAL lists them densely"
        )
    if op.is_const(2) and (op.value(2)[:, 2:] < 0).any():
        return f"{op.name}: LiteRT's TFLite_Detection_PostProcess refuses anchors of negative height or width"
    return None


@rule(
    O.DETECTION_POSTPROCESSING,
    types=FLOAT,
    params={
        3: "y_scale",
        4: "x_scale",
        5: "h_scale",
        6: "w_scale",
        7: "regular_nms",
        8: "max_num_detections",
        9: "max_classes_per_detection",
        10: "max_num_detections_per_class",
        11: "score_threshold",
        12: "iou_threshold",
        13: "is_bg_in_label",
    },
    check=_check_postprocessing,
    half=True,
)
def detection_postprocessing(op: Op) -> None:
    """HAL DETECTION_POSTPROCESSING: inputs 0 scores [batches, anchors, classes] (class 0 the background), 1 box
    deltas [batches, anchors, >= 4] ([dy, dx, dh, dw] first), 2 anchors [anchors, 4] ([ctr_y, ctr_x, h, w]),
    3-6 y, x, h, w scales, 7 regular_nms (BOOL), 8 max_num_detections, 9 max_classes_per_detection, 10
    max_num_detections_per_class (INT32), 11 score_threshold, 12 iou_threshold, 13 is_bg_in_label (BOOL);
    outputs 0 scores [batches, max_num_detections], 1 boxes [batches, max_num_detections, 4] ([y1, x1, y2, x2]),
    2 classes [batches, max_num_detections] (TENSOR_INT32), 3 num_detections [batches] (TENSOR_INT32); the
    detections best first, the rest zero.

    LiteRT's custom operator TFLite_Detection_PostProcess (inputs: deltas, scores, anchors; the scalars as its
    flexbuffer options, with num_classes = classes - 1 so that column 0 is the background) computes the same
    decoding and the same regular (per class) or fast (best classes per anchor) non-maximum suppression, for one
    batch, in float32: each batch is SPLIT off and the results CONCATENATED. Its outputs (boxes, classes,
    scores, count, all float32) hold max_num_detections * max_classes_per_detection entries: the first
    max_num_detections are the HAL's (SLICE); fast NMS counts anchors where the HAL counts entries (count *
    max_classes_per_detection, capped); fast NMS leaves unused entries unwritten, so every output is masked to
    zero past the count (SELECT_V2), classes start at 0 without the background (+1 with is_bg_in_label, on
    valid entries) and classes and count are CAST to int32."""
    batches, _, classes = op.dims(0)
    regular = bool(op.scalar(7))
    max_detections, max_classes = int(op.scalar(8)), int(op.scalar(9))
    options = {
        "max_detections": max_detections,
        "max_classes_per_detection": max_classes,
        "detections_per_class": int(op.scalar(10)),
        "use_regular_nms": regular,
        "nms_score_threshold": float(op.scalar(11)),
        "nms_iou_threshold": float(op.scalar(12)),
        "num_classes": classes - 1,
        "y_scale": float(op.scalar(3)),
        "x_scale": float(op.scalar(4)),
        "h_scale": float(op.scalar(5)),
        "w_scale": float(op.scalar(6)),
    }
    slots = max_detections * max_classes
    f32 = TensorSpec("FLOAT32", None)
    deltas, scores = _per_batch(op, 1, batches), _per_batch(op, 0, batches)
    parts: list[list[int]] = [[], [], [], []]  # boxes, classes, scores, counts
    for b in range(batches):
        outputs = [
            op.temp(f32.with_shape((1, slots, 4))),
            op.temp(f32.with_shape((1, slots))),
            op.temp(f32.with_shape((1, slots))),
            op.temp(f32.with_shape((1,))),
        ]
        op.emit_custom(_CUSTOM, [deltas[b], scores[b], op.input(2)], outputs, options)
        for collected, tensor in zip(parts, outputs):
            collected.append(tensor)
    boxes, labels, confidences, counts = (_joined(op, p, 0) for p in parts)
    if slots != max_detections:
        boxes = _sliced(op, boxes, [batches, max_detections, 4])
        labels = _sliced(op, labels, [batches, max_detections])
        confidences = _sliced(op, confidences, [batches, max_detections])
    if not regular and max_classes > 1:
        counts = _binary(op, "MUL", counts, op.const(np.float32(max_classes)), f32)
        counts = _binary(op, "MINIMUM", counts, op.const(np.float32(max_detections)), f32)
    valid = op.temp(TensorSpec("BOOL", (batches, max_detections)))
    limits = op.temp(f32.with_shape((batches, 1)))
    op.emit("RESHAPE", [counts, op.const([batches, 1])], [limits])
    op.emit("LESS", [op.const(np.arange(max_detections, dtype=np.float32)), limits], [valid])
    zero = op.const(np.float32(0))
    # SELECT_V2 keeps its output's declared shape when every operand holds one element (one image, one detection):
    # an output of unknown rank must be declared with its shape.
    op.emit("SELECT_V2", [valid, confidences, zero], [op.output(0, shape=[batches, max_detections])])
    box_valid = op.temp(TensorSpec("BOOL", (batches, max_detections, 1)))
    op.emit("RESHAPE", [valid, op.const([batches, max_detections, 1])], [box_valid])
    op.emit("SELECT_V2", [box_valid, boxes, zero], [op.output(1, shape=[batches, max_detections, 4])])
    if op.scalar(13):
        labels = _binary(op, "ADD", labels, op.const(np.float32(1)), f32)
    masked = op.temp(f32.with_shape((batches, max_detections)))
    op.emit("SELECT_V2", [valid, labels, zero], [masked])
    op.emit("CAST", [masked], [op.output(2)])
    op.emit("CAST", [counts], [op.output(3)])


def _per_batch(op: Op, i: int, batches: int) -> list[int]:
    """Input i split into `batches` tensors of batch 1 (itself when there is one batch)."""
    if batches == 1:
        return [op.input(i)]
    parts = [op.temp(op.spec(i).with_shape(None)) for _ in range(batches)]
    op.emit("SPLIT", [op.const(np.asarray(0, dtype=np.int32)), op.input(i)], parts, "SplitOptions", numSplits=batches)
    return parts


def _joined(op: Op, tensors: list[int], axis: int) -> int:
    if len(tensors) == 1:
        return tensors[0]
    out = op.temp(TensorSpec("FLOAT32", None))
    op.emit("CONCATENATION", tensors, [out], "ConcatenationOptions", axis=axis)
    return out


def _sliced(op: Op, tensor: int, size: list[int]) -> int:
    out = op.temp(TensorSpec("FLOAT32", tuple(size)))
    op.emit("SLICE", [tensor, op.const([0] * len(size)), op.const(size)], [out])
    return out


def _binary(op: Op, builtin: str, a: int, b: int, spec: TensorSpec) -> int:
    out = op.temp(spec)
    op.emit(builtin, [a, b], [out], f"{builtin.title()}Options" if builtin in ("ADD", "MUL") else None)
    return out
