"""Object-detection post-processing: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS,
DETECTION_POSTPROCESSING and HEATMAP_MAX_KEYPOINT.

These operations are control-heavy rather than arithmetic-heavy, so quantized operands are dequantized, the
work is done in float32, and results are requantized to the declared output parameters.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import guard_elements, to_nhwc
from driver_under_test.backends.numpy.kernels.common import quant_limits, quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.errors import invalid
from harness.hal import OperandType, OperationType, numpy_dtype

T = OperandType
_FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)


# --- storage helpers -------------------------------------------------------------------------------------------


def _values(t: Tensor | None, name: str) -> np.ndarray:
    """float32 real values of a tensor input (dequantized when quantized)."""
    if t is None or t.data is None:
        raise invalid(f"{name} is missing", "inputs.missing")
    if t.type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_ASYMM,
                  T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT8_SYMM):
        return ((t.data.astype(np.float64) - t.zero_point) * t.scale).astype(np.float32)
    return t.data.astype(np.float32)


def _store(values: np.ndarray, out: Tensor) -> np.ndarray:
    """Real values in the output's storage (quantized outputs round half away from zero and saturate)."""
    dtype = numpy_dtype(out.type)
    if out.type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32):
        return np.asarray(values).astype(dtype)
    if out.scale <= 0:
        raise invalid("quantized output needs a positive scale", "quant.scale")
    scaled = np.asarray(values, dtype=np.float64) / out.scale
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) + out.zero_point
    lo, hi = quant_limits(out.type)
    return np.clip(rounded, lo, hi).astype(dtype)


def _boxes(t: Tensor | None, name: str, width: int = 4) -> np.ndarray:
    """[n, k * width] box tensor as float32 values, checked for rank and row width."""
    values = _values(t, name)
    if values.ndim != 2 or values.shape[1] % width:
        raise invalid(f"{name} must be [n, k * {width}], got {values.shape}", "shape.boxes")
    return values


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Intersection over union of one [x1, y1, x2, y2] box with each of [n, 4] others."""
    w = np.maximum(0.0, np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]))
    h = np.maximum(0.0, np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]))
    inter = w * h
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


# --- AXIS_ALIGNED_BBOX_TRANSFORM -------------------------------------------------------------------------------


def _apply_deltas(rois: np.ndarray, deltas: np.ndarray, heights: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """Shift and scale [n, 4] (x1, y1, x2, y2) boxes by [n, k, 4] (dx, dy, dw, dh) deltas, clipped to the image."""
    w = (rois[:, 2] - rois[:, 0])[:, None]
    h = (rois[:, 3] - rois[:, 1])[:, None]
    cx = rois[:, 0][:, None] + w / 2
    cy = rois[:, 1][:, None] + h / 2
    pcx = deltas[..., 0] * w + cx
    pcy = deltas[..., 1] * h + cy
    pw = np.exp(deltas[..., 2]) * w
    ph = np.exp(deltas[..., 3]) * h
    x_max, y_max = widths[:, None], heights[:, None]
    out = np.stack([np.clip(pcx - pw / 2, 0, x_max), np.clip(pcy - ph / 2, 0, y_max),
                    np.clip(pcx + pw / 2, 0, x_max), np.clip(pcy + ph / 2, 0, y_max)], axis=-1)
    return out.astype(np.float32)


def _batch_index(t: Tensor | None, count: int, batches: int) -> np.ndarray:
    if t is None or t.data is None or t.data.shape != (count,):
        raise invalid(f"batch index tensor must have shape ({count},)", "shape.batch_index")
    index = t.data.astype(np.int64)
    if count and (index.min() < 0 or index.max() >= batches):
        raise invalid("batch index out of range", "value.batch_index")
    return index


@kernel(OperationType.AXIS_ALIGNED_BBOX_TRANSFORM, (*_FLOAT, T.TENSOR_QUANT16_ASYMM))
@quiet
def axis_aligned_bbox_transform(call: OpCall) -> list[np.ndarray]:
    """Refine each region of interest with one delta per class, clipped to its image."""
    rois = _boxes(call.inputs[0], "regions of interest")
    if rois.shape[1] != 4:
        raise invalid("regions of interest must be [n, 4]", "shape.boxes")
    deltas = _boxes(call.inputs[1], "box deltas")
    if deltas.shape[0] != rois.shape[0]:
        raise invalid("deltas and regions disagree on the number of regions", "shape.boxes")
    info = _values(call.inputs[3], "image info")
    if info.ndim != 2 or info.shape[1] != 2:
        raise invalid("image info must be [batches, 2]", "shape.image_info")
    batch = _batch_index(call.inputs[2], rois.shape[0], info.shape[0])
    out = _apply_deltas(rois, deltas.reshape(rois.shape[0], deltas.shape[1] // 4, 4), info[batch, 0],
                        info[batch, 1])
    return [_store(out.reshape(deltas.shape), call.outputs[0])]


# --- non-maximum suppression -----------------------------------------------------------------------------------

_HARD, _LINEAR, _GAUSSIAN = 0, 1, 2


def _nms_kernel(method: int, iou_threshold: float, sigma: float) -> Callable[[np.ndarray], np.ndarray]:
    if method == _HARD:
        return lambda iou: np.where(iou < iou_threshold, 1.0, 0.0)
    if method == _LINEAR:
        return lambda iou: np.where(iou < iou_threshold, 1.0, 1.0 - iou)
    if method == _GAUSSIAN:
        if sigma <= 0:
            raise invalid("gaussian NMS needs a positive sigma", "param.sigma")
        return lambda iou: np.exp(-(iou * iou) / sigma)
    raise invalid(f"unknown NMS kernel {method}", "param.nms_kernel")


def _soft_nms(boxes: np.ndarray, scores: np.ndarray, decay: Callable[[np.ndarray], np.ndarray],
              score_floor: float, limit: int = -1) -> tuple[list[int], np.ndarray]:
    """Greedy selection in decreasing (updated) score; returns picked positions and the updated scores."""
    scores = scores.astype(np.float64).copy()
    remaining = list(range(len(scores)))
    picked: list[int] = []
    while remaining and (limit < 0 or len(picked) < limit):
        best = max(remaining, key=lambda k: (scores[k], -k))
        picked.append(best)
        remaining.remove(best)
        if not remaining:
            break
        rest = np.array(remaining)
        scores[rest] *= decay(_iou(boxes[best], boxes[rest]))
        remaining = [k for k in remaining if scores[k] >= score_floor]
    return picked, scores


@kernel(OperationType.BOX_WITH_NMS_LIMIT, (*_FLOAT, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED))
@quiet
def box_with_nms_limit(call: OpCall) -> list[np.ndarray]:
    """Per image and per foreground class, threshold then (soft) NMS; keep the best boxes per image."""
    scores = _values(call.inputs[0], "scores")
    if scores.ndim != 2:
        raise invalid("scores must be [num_rois, num_classes]", "shape.scores")
    rois, classes = scores.shape
    boxes = _boxes(call.inputs[1], "boxes")
    if boxes.shape != (rois, classes * 4):
        raise invalid(f"boxes must be [{rois}, {classes * 4}]", "shape.boxes")
    batch_of = call.inputs[2].data.astype(np.int64) if call.inputs[2] is not None else None
    if batch_of is None or batch_of.shape != (rois,):
        raise invalid("batch index must have one entry per region", "shape.batch_index")
    score_threshold = float(call.scalar(3))
    max_detections = int(call.scalar(4))
    decay = _nms_kernel(int(call.scalar(5)), float(call.scalar(6)), float(call.scalar(7)))
    nms_floor = float(call.scalar(8))
    boxes = boxes.reshape(rois, classes, 4)
    out_scores: list[float] = []
    out_boxes: list[np.ndarray] = []
    out_classes: list[int] = []
    out_batches: list[int] = []
    for b in (np.unique(batch_of) if rois else []):
        members = np.flatnonzero(batch_of == b)
        found: list[tuple[float, int, np.ndarray]] = []
        for c in range(1, classes):  # class 0 is the background
            candidates = members[scores[members, c] > score_threshold]
            picked, updated = _soft_nms(boxes[candidates, c], scores[candidates, c], decay, nms_floor)
            found.extend((float(updated[k]), c, boxes[candidates[k], c]) for k in picked)
        if 0 <= max_detections < len(found):
            keep = sorted(range(len(found)), key=lambda k: -found[k][0])[:max_detections]
            found = [found[k] for k in sorted(keep, key=lambda k: (found[k][1], -found[k][0]))]
        for score, c, box in found:
            out_scores.append(score)
            out_boxes.append(box)
            out_classes.append(c)
            out_batches.append(int(b))
    n = len(out_scores)
    box_array = np.array(out_boxes, dtype=np.float32).reshape(n, 4)
    return [_store(np.array(out_scores, dtype=np.float32), call.outputs[0]), _store(box_array, call.outputs[1]),
            np.array(out_classes, dtype=np.int32), np.array(out_batches, dtype=np.int32)]


# --- HEATMAP_MAX_KEYPOINT --------------------------------------------------------------------------------------

# Largest sub-pixel step accepted from the quadratic fit, in heatmap pixels.
_MAX_KEYPOINT_DELTA = 1.5
# A fit whose Hessian determinant is within atol + rtol * dxx * dyy of zero is treated as flat; half
# precision heatmaps get the wider tolerance their precision calls for.
_FLAT_TOLERANCE = {T.TENSOR_FLOAT16: 1e-3}
_DEFAULT_FLAT_TOLERANCE = 1e-5


def _refine_peak(grid: np.ndarray, tolerance: float) -> tuple[float, float, float]:
    """Sub-pixel offset (dx, dy) and value of the maximum of the quadratic fitted to a 3x3 neighbourhood."""
    center = float(grid[1, 1])
    # Negative gradient and Hessian by central differences (x along columns, y along rows).
    b = np.array([(grid[1, 0] - grid[1, 2]) / 2, (grid[0, 1] - grid[2, 1]) / 2], dtype=np.float64)
    dxx = grid[1, 0] - 2 * grid[1, 1] + grid[1, 2]
    dyy = grid[0, 1] - 2 * grid[1, 1] + grid[2, 1]
    dxy = (grid[0, 0] - grid[0, 2] - grid[2, 0] + grid[2, 2]) / 4
    hessian = np.array([[dxx, dxy], [dxy, dyy]], dtype=np.float64)
    diagonal = float(dxx * dyy)
    det = diagonal - float(dxy * dxy)
    if abs(det) < tolerance + tolerance * diagonal:
        return 0.0, 0.0, center
    delta = np.array([(dyy * b[0] - dxy * b[1]) / det, (dxx * b[1] - dxy * b[0]) / det])
    largest = float(np.max(np.abs(delta)))
    if largest > _MAX_KEYPOINT_DELTA:
        delta *= _MAX_KEYPOINT_DELTA / largest
    value = center - float(b @ delta) + 0.5 * float(delta @ hessian @ delta)
    return float(delta[0]), float(delta[1]), value


def _neighbourhood(heatmap: np.ndarray, row: int, col: int) -> np.ndarray:
    """3x3 values around (row, col); positions past the border are mirrored through the centre."""
    size_h, size_w = heatmap.shape
    grid = np.empty((3, 3), dtype=np.float64)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            r = row + dr if 0 <= row + dr < size_h else row - dr
            c = col + dc if 0 <= col + dc < size_w else col - dc
            grid[dr + 1, dc + 1] = heatmap[r, c]
    return grid


@kernel(OperationType.HEATMAP_MAX_KEYPOINT, (*_FLOAT, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED))
@quiet
def heatmap_max_keypoint(call: OpCall) -> list[np.ndarray]:
    """Score and image position of each keypoint's heatmap maximum, refined to sub-pixel precision."""
    nchw = bool(call.scalar(2, False))
    heatmaps = to_nhwc(_values(call.inputs[0], "heatmaps"), nchw)
    num_boxes, size_h, size_w, keypoints = heatmaps.shape
    if size_h != size_w or size_h < 2:
        raise invalid(f"heatmaps must be square and at least 2x2, got {size_h}x{size_w}", "shape.heatmap")
    boxes = _boxes(call.inputs[1], "boxes")
    if boxes.shape != (num_boxes, 4):
        raise invalid(f"boxes must be [{num_boxes}, 4]", "shape.boxes")
    tolerance = _FLAT_TOLERANCE.get(call.inputs[0].type, _DEFAULT_FLAT_TOLERANCE)
    scores = np.zeros((num_boxes, keypoints), dtype=np.float32)
    points = np.zeros((num_boxes, keypoints, 2), dtype=np.float32)
    for i in range(num_boxes):
        x1, y1, x2, y2 = (float(v) for v in boxes[i])
        # The box's own extent, not clamped: the keypoint lies inside the box whatever its size.
        width, height = x2 - x1, y2 - y1
        for k in range(keypoints):
            heatmap = heatmaps[i, :, :, k]
            row, col = divmod(int(np.argmax(heatmap)), size_w)
            dx, dy, value = _refine_peak(_neighbourhood(heatmap, row, col), tolerance)
            scores[i, k] = value
            points[i, k, 0] = (col + dx + 0.5) / size_w * width + x1
            points[i, k, 1] = (row + dy + 0.5) / size_h * height + y1
    return [_store(scores, call.outputs[0]), _store(points, call.outputs[1])]


# --- DETECTION_POSTPROCESSING ----------------------------------------------------------------------------------


def _hard_nms(boxes: np.ndarray, scores: np.ndarray, candidates: np.ndarray, iou_threshold: float,
              limit: int, inclusive: bool = False) -> list[int]:
    """Greedy NMS over `candidates` (indices) in decreasing score; a box overlapping a kept one by more than the
    threshold (or exactly the threshold, when `inclusive`) is dropped. Returns kept indices in selection order;
    a negative limit means no limit."""
    order = np.array(sorted(candidates.tolist(), key=lambda k: (-scores[k], k)), dtype=np.int64)
    active = np.ones(order.size, dtype=bool)
    kept: list[int] = []
    for pos, k in enumerate(order.tolist()):
        if not active[pos]:
            continue
        if 0 <= limit <= len(kept):
            break
        kept.append(k)
        overlap = _iou(boxes[k], boxes[order[pos + 1 :]])
        active[pos + 1 :] &= ~(overlap >= iou_threshold if inclusive else overlap > iou_threshold)
    return kept


def _decode_anchors(deltas: np.ndarray, anchors: np.ndarray, scales: tuple[float, ...]) -> np.ndarray:
    """[n, 4] (x1, y1, x2, y2) boxes from (dy, dx, dh, dw) deltas on (ctr_y, ctr_x, h, w) anchors."""
    scale_y, scale_x, scale_h, scale_w = scales
    cy = deltas[:, 0] / scale_y * anchors[:, 2] + anchors[:, 0]
    cx = deltas[:, 1] / scale_x * anchors[:, 3] + anchors[:, 1]
    h = np.exp(deltas[:, 2] / scale_h) * anchors[:, 2]
    w = np.exp(deltas[:, 3] / scale_w) * anchors[:, 3]
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1).astype(np.float32)


@kernel(OperationType.DETECTION_POSTPROCESSING, _FLOAT)
@quiet
def detection_postprocessing(call: OpCall) -> list[np.ndarray]:
    """Decode anchor boxes, then per-class ("regular") or best-class ("fast") hard NMS; fixed-size outputs."""
    scores = _values(call.inputs[0], "scores")
    deltas = _values(call.inputs[1], "box deltas")
    anchors = _values(call.inputs[2], "anchors")
    if scores.ndim != 3 or deltas.ndim != 3 or deltas.shape[2] < 4 or anchors.shape != (scores.shape[1], 4):
        raise invalid("scores, deltas and anchors disagree", "shape.detection")
    if deltas.shape[:2] != scores.shape[:2]:
        raise invalid("scores and deltas disagree on batches or anchors", "shape.detection")
    scales = tuple(float(call.scalar(i)) for i in (3, 4, 5, 6))
    if any(s == 0 for s in scales):
        raise invalid("box delta scales must be non-zero", "param.scale")
    regular = bool(call.scalar(7))
    max_detections = int(call.scalar(8))
    classes_per_detection = int(call.scalar(9))
    detections_per_class = int(call.scalar(10))
    score_threshold = float(call.scalar(11))
    iou_threshold = float(call.scalar(12))
    label_offset = 0 if bool(call.scalar(13)) else -1
    if max_detections < 1 or classes_per_detection < 1 or detections_per_class < 1:
        raise invalid("detection limits must be positive", "param.limit")
    batches, _, classes = scores.shape
    guard_elements((batches, max_detections, 4), "detections")
    out_scores = np.zeros((batches, max_detections), dtype=np.float32)
    out_boxes = np.zeros((batches, max_detections, 4), dtype=np.float32)
    out_classes = np.zeros((batches, max_detections), dtype=np.int32)
    out_count = np.zeros(batches, dtype=np.int32)
    for b in range(batches):
        boxes = _decode_anchors(deltas[b, :, :4], anchors, scales)
        foreground = scores[b, :, 1:]
        found: list[tuple[float, int, int]] = []  # (score, anchor, class)
        if regular:
            for c in range(foreground.shape[1]):
                column = foreground[:, c]
                candidates = np.flatnonzero(column >= score_threshold)
                for k in _hard_nms(boxes, column, candidates, iou_threshold, detections_per_class):
                    found.append((float(column[k]), k, c))
            found.sort(key=lambda f: -f[0])
        else:
            per_anchor = min(classes_per_detection, foreground.shape[1])
            ranked = np.argsort(-foreground, axis=1, kind="stable")[:, :per_anchor]
            best = foreground[np.arange(foreground.shape[0]), ranked[:, 0]]
            candidates = np.flatnonzero(best >= score_threshold)
            for k in _hard_nms(boxes, best, candidates, iou_threshold, max_detections):
                found.extend((float(foreground[k, c]), k, int(c)) for c in ranked[k])
        found = found[:max_detections]
        out_count[b] = len(found)
        for slot, (score, anchor, c) in enumerate(found):
            x1, y1, x2, y2 = boxes[anchor]
            out_scores[b, slot] = score
            out_boxes[b, slot] = (y1, x1, y2, x2)
            out_classes[b, slot] = c + 1 + label_offset
    return [_store(out_scores, call.outputs[0]), _store(out_boxes, call.outputs[1]), out_classes, out_count]


# --- GENERATE_PROPOSALS ----------------------------------------------------------------------------------------


@kernel(OperationType.GENERATE_PROPOSALS, (*_FLOAT, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED))
@quiet
def generate_proposals(call: OpCall) -> list[np.ndarray]:
    """Anchors tiled over the feature map, refined by deltas, filtered, ranked and pruned with hard NMS."""
    nchw = bool(call.scalar(10, False))
    scores = to_nhwc(_values(call.inputs[0], "scores"), nchw)
    deltas = to_nhwc(_values(call.inputs[1], "box deltas"), nchw)
    anchors = _boxes(call.inputs[2], "anchors")
    info = _values(call.inputs[3], "image info")
    batches, height, width, num_anchors = scores.shape
    if anchors.shape != (num_anchors, 4) or deltas.shape != (batches, height, width, num_anchors * 4):
        raise invalid("scores, deltas and anchors disagree", "shape.proposals")
    if info.shape != (batches, 2):
        raise invalid("image info must be [batches, 2]", "shape.image_info")
    height_stride, width_stride = float(call.scalar(4)), float(call.scalar(5))
    pre_top, post_top = int(call.scalar(6)), int(call.scalar(7))
    iou_threshold, min_size = float(call.scalar(8)), float(call.scalar(9))
    # Anchor a at feature-map cell (h, w), in image coordinates, flattened in (h, w, a) order.
    shift_x = np.arange(width, dtype=np.float32) * width_stride
    shift_y = np.arange(height, dtype=np.float32) * height_stride
    shifts = np.stack(np.broadcast_arrays(shift_x[None, :], shift_y[:, None], shift_x[None, :], shift_y[:, None]),
                      axis=-1)  # [H, W, 4]
    tiled = (shifts[:, :, None, :] + anchors[None, None, :, :]).reshape(-1, 4)
    out_scores: list[np.ndarray] = []
    out_boxes: list[np.ndarray] = []
    out_batch: list[np.ndarray] = []
    for b in range(batches):
        flat_scores = scores[b].reshape(-1)
        refined = _apply_deltas(tiled, deltas[b].reshape(-1, 1, 4), np.full(tiled.shape[0], info[b, 0]),
                                np.full(tiled.shape[0], info[b, 1]))[:, 0]
        order = np.argsort(-flat_scores, kind="stable")
        if 0 < pre_top < order.size:
            order = order[:pre_top]
        sizes_ok = ((refined[order, 2] - refined[order, 0]) >= min_size) & (
            (refined[order, 3] - refined[order, 1]) >= min_size)
        order = order[sizes_ok]
        keep = np.array(_hard_nms(refined, flat_scores, order, iou_threshold, post_top if post_top > 0 else -1,
                                  inclusive=True), dtype=np.int64)
        out_scores.append(flat_scores[keep])
        out_boxes.append(refined[keep])
        out_batch.append(np.full(keep.size, b, dtype=np.int32))
    return [_store(np.concatenate(out_scores), call.outputs[0]),
            _store(np.concatenate(out_boxes).reshape(-1, 4), call.outputs[1]),
            np.concatenate(out_batch).astype(np.int32)]
