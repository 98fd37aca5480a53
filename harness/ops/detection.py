"""Object-detection operations: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, DETECTION_POSTPROCESSING,
GENERATE_PROPOSALS, HEATMAP_MAX_KEYPOINT, ROI_ALIGN, ROI_POOLING.

Boxes are [x1, y1, x2, y2] in image coordinates (DETECTION_POSTPROCESSING: [y1, x1, y2, x2] outputs).
Quantized operands are dequantized, processed in float64 and requantized. Operations whose output count depends
on the data (BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS) report output shapes with unknown (0) sizes.
"""

from __future__ import annotations

import numpy as np

from harness.hal import OperationType
from harness.ops._nn_util import (
    BOOL,
    F16,
    F32,
    FLOAT,
    I32,
    Q8,
    Q8S,
    Q16A,
    Q16S,
    Inputs,
    define_single_form,
    dim,
    from_nhwc,
    layout_shape,
    nhwc_shape,
    scalar_type_for,
    scalars,
    tensor,
    to_nhwc,
)
from harness.ops.common import (
    ExecutionError,
    UnspecifiedResult,
    fixed_output_quant,
    from_real,
    probing_edges,
    round_half_away,
    same_quant_as_input,
    to_real,
)
from harness.ops.registry import KernelContext, ShapeContext, Signature

V12, V13 = "V1_2", "V1_3"


def _real(ctx: KernelContext, i: int) -> np.ndarray:
    return to_real(ctx.inputs[i], ctx.input_operands[i])


def _float_scalar_type(t: int) -> int:
    """Float parameters are FLOAT16 for TENSOR_FLOAT16 data and FLOAT32 otherwise."""
    return scalar_type_for(t) if t in (F32, F16) else FLOAT


def _quant_box_check(*indices: int):
    """Check: quantized box tensors (TENSOR_QUANT16_ASYMM) use scale 0.125 and zero point 0."""

    def check(ctx: ShapeContext) -> list[str]:
        problems = []
        for i in indices:
            op = ctx.operands[i] if i < len(ctx.operands) else None
            if op is not None and op.type == Q16A and (op.scale != 0.125 or op.zero_point != 0):
                problems.append(f"input {i} (boxes) must have scale 0.125 and zero point 0")
        return problems

    return check


# Implementations compute boxes, sizes and overlaps in float32 (quantized ones after dequantizing): a size or an
# IoU within a few float32 roundings of its threshold may fall on either side of it. Outside the stability probe
# the comparisons are exact; under it they resolve such values the other way, so an output that rests on one
# shows as an edge and no driver is judged on which side it took.
EDGE_ULPS = 16
_FLOAT32_EPS = float(np.finfo(np.float32).eps)


def size_band(magnitude: float) -> float:
    """How far from a threshold a float32 implementation's difference of coordinates this large may land."""
    return EDGE_ULPS * _FLOAT32_EPS * max(magnitude, 1.0)


def overlap_band(a: np.ndarray, b: np.ndarray) -> float:
    """How far from a threshold a float32 implementation's IoU of the two boxes may land: float32 rounds the
    coordinates relative to their size, and the IoU inherits that error relative to the smallest side. Boxes that
    do not overlap have an IoU of exactly 0 in every implementation."""
    sides = [s for s in (a[2] - a[0], a[3] - a[1], b[2] - b[0], b[3] - b[1]) if s > 0]
    apart = min(a[2], b[2]) <= max(a[0], b[0]) or min(a[3], b[3]) <= max(a[1], b[1])
    if apart or not sides:
        return 0.0
    return size_band(float(max(np.abs(a).max(), np.abs(b).max())) / min(sides))


def reaches(value: float, threshold: float, band: float = 0.0) -> bool:
    """value >= threshold; within `band` of it, the side the running stability probe names."""
    return bool(value >= threshold + probing_edges() * band)


def exceeds(value: float, threshold: float, band: float = 0.0) -> bool:
    """value > threshold; within `band` of it, the side the running stability probe names."""
    return bool(value > threshold + probing_edges() * band)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two [x1, y1, x2, y2] boxes."""
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = w * h
    union = area_a + area_b - inter
    return inter / union if union > 0 else 0.0


def batch_groups(batches: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(batch index, row indices) for each run of equal batch indices, in order of appearance."""
    groups: list[tuple[int, list[int]]] = []
    for i, b in enumerate(batches.tolist()):
        if groups and groups[-1][0] == b:
            groups[-1][1].append(i)
        else:
            groups.append((b, [i]))
    return [(b, np.array(rows, dtype=np.int64)) for b, rows in groups]


# --------------------------------------------------------------------------------------------------------------
# AXIS_ALIGNED_BBOX_TRANSFORM


def bbox_transform_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """Each roi moved and scaled by each class's [dx, dy, dw, dh], clipped to its image."""
    rois, deltas = _real(ctx, 0), _real(ctx, 1)
    batches, info = ctx.inputs[2], _real(ctx, 3)
    n = rois.shape[0]
    classes = deltas.shape[1] // 4 if deltas.ndim == 2 else 0
    out = np.zeros((n, classes * 4))
    for i in range(n):
        x1, y1, x2, y2 = rois[i]
        w, h = x2 - x1, y2 - y1
        cx, cy = x1 + w / 2, y1 + h / 2
        b = int(batches[i])
        if not 0 <= b < info.shape[0]:
            raise ExecutionError(f"batch index {b} out of range")
        img_h, img_w = info[b]
        for j in range(classes):
            dx, dy, dw, dh = deltas[i, 4 * j : 4 * j + 4]
            pcx, pcy = cx + dx * w, cy + dy * h
            pw, ph = w * np.exp(dw), h * np.exp(dh)
            out[i, 4 * j : 4 * j + 4] = [
                np.clip(pcx - pw / 2, 0, img_w),
                np.clip(pcy - ph / 2, 0, img_h),
                np.clip(pcx + pw / 2, 0, img_w),
                np.clip(pcy + ph / 2, 0, img_h),
            ]
    return [from_real(out, ctx.output_operands[0])]


def bbox_transform_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """[num_rois, num_classes * 4], the deltas' shape."""
    shape = ctx.shapes[1]
    return [tuple(shape) if shape else (0, 0)]


def _bbox_signatures() -> list[Signature]:
    sigs = []
    for box_t, delta_t, version in ((F32, F32, V12), (F16, F16, V12), (Q16A, Q8, V12), (Q16A, Q8S, V13)):
        check = _quant_box_check(0)
        if box_t == Q16A:
            check_ = check

            def check(ctx: ShapeContext, _c=check_) -> list[str]:
                return _c(ctx) + fixed_output_quant(0.125, 0)(ctx)

        sigs.append(
            Signature(
                (
                    tensor("rois", box_t, 2),
                    tensor("deltas", delta_t, 2),
                    tensor("batches", I32, 1),
                    tensor("image_info", box_t, 2),
                ),
                (tensor("output", box_t, 2),),
                None,
                version,
                check,
            )
        )
    return sigs


# --------------------------------------------------------------------------------------------------------------
# BOX_WITH_NMS_LIMIT

HARD, LINEAR, GAUSSIAN = 0, 1, 2


def soft_nms(
    scores: list[float], boxes: np.ndarray, kernel: int, iou_threshold: float, sigma: float, score_threshold: float
) -> list[tuple[int, float]]:
    """Greedy (soft) NMS over one class: (index, final score) of the selected boxes, best first."""
    live = dict(enumerate(scores))
    selected = []
    while live:
        best = max(live, key=lambda k: (live[k], -k))
        selected.append((best, live.pop(best)))
        for k in list(live):
            overlap = iou(boxes[best], boxes[k])
            at_threshold = reaches(overlap, iou_threshold, overlap_band(boxes[best], boxes[k]))
            if kernel == HARD:
                if at_threshold:
                    live[k] = 0.0
            elif kernel == LINEAR:
                if at_threshold:
                    live[k] *= 1.0 - overlap
            else:
                live[k] *= np.exp(-overlap * overlap / sigma)
            if live[k] < score_threshold:
                del live[k]
    return selected


def box_with_nms_limit_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """Per image and class (class 0 is background): boxes above the score threshold go through (soft) NMS;
    per image the best max_detections survive, listed by class, then by decreasing score."""
    scores, boxes = _real(ctx, 0), _real(ctx, 1)
    batches = ctx.inputs[2]
    score_threshold = float(ctx.scalar(3))
    max_detections, kernel = int(ctx.scalar(4)), int(ctx.scalar(5))
    iou_threshold, sigma, nms_threshold = (float(ctx.scalar(i)) for i in (6, 7, 8))
    classes = scores.shape[1] if scores.ndim == 2 else 0
    groups = batch_groups(batches)
    if len({b for b, _ in groups}) < len(groups):
        # types.hal requires boxes with the same batch index to be grouped together and says nothing of an input
        # that breaks it: a driver may group by runs or by value, so the result is not judged.
        raise UnspecifiedResult("BOX_WITH_NMS_LIMIT boxes of one batch index are not grouped together")
    order = [b for b, _ in groups]
    if order != sorted(order):
        # The outputs are "grouped by batches"; in which order the groups come types.hal does not say. Groups given
        # in increasing order leave no choice; in another order, a driver may keep theirs or sort them.
        raise UnspecifiedResult("BOX_WITH_NMS_LIMIT batch groups are not in increasing order")
    out_scores, out_boxes, out_classes, out_batches = [], [], [], []
    for b, rows in groups:
        found = []
        for c in range(1, classes):
            candidates = [i for i in rows if scores[i, c] > score_threshold]
            chosen = soft_nms(
                [scores[i, c] for i in candidates],
                np.array([boxes[i, 4 * c : 4 * c + 4] for i in candidates]),
                kernel,
                iou_threshold,
                sigma,
                nms_threshold,
            )
            found += [(s, c, boxes[candidates[k], 4 * c : 4 * c + 4]) for k, s in chosen]
        found.sort(key=lambda d: -d[0])
        if max_detections >= 0:
            found = found[:max_detections]
        found.sort(key=lambda d: (d[1], -d[0]))
        for s, c, box in found:
            out_scores.append(s)
            out_boxes.append(box)
            out_classes.append(c)
            out_batches.append(b)
    outs = ctx.output_operands
    return [
        from_real(np.array(out_scores, dtype=np.float64), outs[0]),
        from_real(np.array(out_boxes, dtype=np.float64).reshape(-1, 4), outs[1]),
        np.array(out_classes, dtype=np.int32),
        np.array(out_batches, dtype=np.int32),
    ]


def box_with_nms_limit_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """The number of output boxes depends on the data: [0], [0, 4], [0], [0]."""
    return [(0,), (0, 4), (0,), (0,)]


def _nms_signatures() -> list[Signature]:
    sigs = []
    for score_t, box_t, version in ((F32, F32, V12), (F16, F16, V12), (Q8, Q16A, V12), (Q8S, Q16A, V13)):
        s = _float_scalar_type(score_t)
        ins = (
            tensor("scores", score_t, 2),
            tensor("boxes", box_t, 2),
            tensor("batches", I32, 1),
            *scalars("score_threshold", t=s),
            *scalars("max_detections", "nms_kernel"),
            *scalars("iou_threshold", "sigma", "nms_score_threshold", t=s),
        )
        outs = (
            tensor("out_scores", score_t, 1),
            tensor("out_boxes", box_t, 2),
            tensor("out_classes", I32, 1),
            tensor("out_batches", I32, 1),
        )

        def check(ctx: ShapeContext) -> list[str]:
            return _quant_box_check(1)(ctx) + same_quant_as_input(0, 0)(ctx) + same_quant_as_input(1, 1)(ctx)

        sigs.append(Signature(ins, outs, None, version, check))
    return sigs


# --------------------------------------------------------------------------------------------------------------
# HEATMAP_MAX_KEYPOINT


# A Hessian whose determinant is this small (absolute plus relative to the product of its diagonal) is taken as
# singular: no refinement. The conformance vectors need a tolerance of this order for float32 as well.
HESSIAN_ATOL = HESSIAN_RTOL = 1e-3


def _taylor_refine(grid: np.ndarray) -> tuple[float, float, float]:
    """Sub-pixel offset (dx, dy) of the maximum of a 3x3 patch and the score there, from the quadratic Taylor
    expansion around the centre; offsets are limited to 1.5 cells."""
    b = np.array([-(grid[1, 2] - grid[1, 0]) / 2.0, -(grid[2, 1] - grid[0, 1]) / 2.0])
    a00 = grid[1, 0] - 2.0 * grid[1, 1] + grid[1, 2]
    a01 = (grid[2, 2] - grid[2, 0] - grid[0, 2] + grid[0, 0]) / 4.0
    a11 = grid[0, 1] - 2.0 * grid[1, 1] + grid[2, 1]
    hessian = np.array([[a00, a01], [a01, a11]])
    det = a00 * a11 - a01 * a01
    if abs(det) < HESSIAN_ATOL + HESSIAN_RTOL * a00 * a11:
        return 0.0, 0.0, float(grid[1, 1])
    delta = np.array([a11 * b[0] - a01 * b[1], a00 * b[1] - a01 * b[0]]) / det
    largest = np.max(np.abs(delta))
    if largest > 1.5:
        delta *= 1.5 / largest
    score = grid[1, 1] - b @ delta + 0.5 * delta @ hessian @ delta
    return float(delta[0]), float(delta[1]), float(score)


def heatmap_max_keypoint_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """Per box and keypoint: the heatmap's arg-max cell refined by a quadratic fit, mapped into the box."""
    nchw = bool(ctx.scalar(2))
    heat = to_nhwc(_real(ctx, 0), nchw)  # [boxes, H, W, K]
    boxes = _real(ctx, 1)
    n, h, w, k = heat.shape
    scores = np.zeros((n, k))
    points = np.zeros((n, k, 2))
    for i in range(n):
        x1, y1, x2, y2 = boxes[i]
        for j in range(k):
            plane = heat[i, :, :, j]
            row, col = divmod(int(np.argmax(plane)), w)
            grid = np.zeros((3, 3))
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    # Neighbours outside the heatmap are mirrored through the maximum.
                    r = row + dr if 0 <= row + dr < h else row - dr
                    c = col + dc if 0 <= col + dc < w else col - dc
                    grid[dr + 1, dc + 1] = plane[r, c]
            dx, dy, score = _taylor_refine(grid)
            scores[i, j] = score
            points[i, j] = [x1 + (x2 - x1) / w * (col + dx + 0.5), y1 + (y2 - y1) / h * (row + dy + 0.5)]
    return [from_real(scores, ctx.output_operands[0]), from_real(points, ctx.output_operands[1])]


def heatmap_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """[num_boxes, num_keypoints] and [num_boxes, num_keypoints, 2]."""
    inputs = Inputs(ctx)
    n, _, _, k = nhwc_shape(inputs.shape(0), bool(inputs.scalar(2, False)))
    return [(n, k), (n, k, 2)]


def _heatmap_signatures() -> list[Signature]:
    sigs = []
    for t, box_t, version in ((F32, F32, V12), (F16, F16, V12), (Q8, Q16A, V12), (Q8S, Q16A, V13)):
        ins = (tensor("heatmaps", t, 4), tensor("boxes", box_t, 2), *scalars("nchw", t=BOOL))
        outs = (tensor("scores", t, 2), tensor("keypoints", box_t, 3))

        def check(ctx: ShapeContext) -> list[str]:
            problems = _quant_box_check(1)(ctx)
            out = ctx.outputs[1] if len(ctx.outputs) > 1 else None
            if out is not None and out.type == Q16A and (out.scale != 0.125 or out.zero_point != 0):
                problems.append("keypoints output must have scale 0.125 and zero point 0")
            return problems

        sigs.append(Signature(ins, outs, None, version, check))
    return sigs


# --------------------------------------------------------------------------------------------------------------
# ROI_ALIGN and ROI_POOLING


def _bilinear_at(plane: np.ndarray, y: float, x: float) -> np.ndarray:
    """Bilinear sample of an [H, W, C] plane at (y, x); points more than one cell outside give 0."""
    h, w = plane.shape[:2]
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(plane.shape[2])
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return (
        plane[y0, x0] * (1 - ly) * (1 - lx)
        + plane[y0, x1] * (1 - ly) * lx
        + plane[y1, x0] * ly * (1 - lx)
        + plane[y1, x1] * ly * lx
    )


def roi_align_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """Each output cell: the mean of bilinear samples on a regular grid inside its bin of the roi (rois are
    divided by the image-to-feature-map ratios; each roi is at least one cell wide and high)."""
    nchw = bool(ctx.scalar(9))
    feat = to_nhwc(_real(ctx, 0), nchw)
    rois, batches = _real(ctx, 1), ctx.inputs[2]
    out_h, out_w = int(ctx.scalar(3)), int(ctx.scalar(4))
    h_ratio, w_ratio = float(ctx.scalar(5)), float(ctx.scalar(6))
    samp_h, samp_w = int(ctx.scalar(7)), int(ctx.scalar(8))
    out = np.zeros((rois.shape[0], out_h, out_w, feat.shape[3]))
    for r in range(rois.shape[0]):
        b = int(batches[r])
        if not 0 <= b < feat.shape[0]:
            raise ExecutionError(f"batch index {b} out of range")
        x1, y1, x2, y2 = rois[r] / np.array([w_ratio, h_ratio, w_ratio, h_ratio])
        roi_w, roi_h = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
        bin_w, bin_h = roi_w / out_w, roi_h / out_h
        sw = samp_w if samp_w > 0 else int(np.ceil(bin_w))
        sh = samp_h if samp_h > 0 else int(np.ceil(bin_h))
        for i in range(out_h):
            for j in range(out_w):
                acc = np.zeros(feat.shape[3])
                for si in range(sh):
                    y = y1 + i * bin_h + (si + 0.5) * bin_h / sh
                    for sj in range(sw):
                        x = x1 + j * bin_w + (sj + 0.5) * bin_w / sw
                        acc += _bilinear_at(feat[b], y, x)
                out[r, i, j] = acc / max(sh * sw, 1)
    return [from_real(from_nhwc(out, nchw), ctx.output_operands[0])]


def roi_pooling_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """Each output cell: the maximum over its bin of the roi, with roi corners rounded to feature cells."""
    nchw = bool(ctx.scalar(7))
    feat = to_nhwc(_real(ctx, 0), nchw)
    rois, batches = _real(ctx, 1), ctx.inputs[2]
    out_h, out_w = int(ctx.scalar(3)), int(ctx.scalar(4))
    h_ratio, w_ratio = float(ctx.scalar(5)), float(ctx.scalar(6))
    _, h, w, c = feat.shape
    out = np.zeros((rois.shape[0], out_h, out_w, c))
    for r in range(rois.shape[0]):
        b = int(batches[r])
        if not 0 <= b < feat.shape[0]:
            raise ExecutionError(f"batch index {b} out of range")
        x1, y1, x2, y2 = rois[r]
        # C rounding (ties away from zero), as the HAL's reference does; np.round would round ties to even.
        x_start, y_start = _round_away(x1 / w_ratio), _round_away(y1 / h_ratio)
        x_end, y_end = _round_away(x2 / w_ratio), _round_away(y2 / h_ratio)
        roi_w, roi_h = max(x_end - x_start + 1, 1), max(y_end - y_start + 1, 1)
        bin_w, bin_h = roi_w / out_w, roi_h / out_h
        for i in range(out_h):
            ys = min(max(int(np.floor(i * bin_h)) + y_start, 0), h)
            ye = min(max(int(np.ceil((i + 1) * bin_h)) + y_start, 0), h)
            for j in range(out_w):
                xs = min(max(int(np.floor(j * bin_w)) + x_start, 0), w)
                xe = min(max(int(np.ceil((j + 1) * bin_w)) + x_start, 0), w)
                if ye > ys and xe > xs:
                    out[r, i, j] = feat[b, ys:ye, xs:xe].max(axis=(0, 1))
    return [from_real(from_nhwc(out, nchw), ctx.output_operands[0])]


def _roi_shape(layout_at: int):
    def shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
        inputs = Inputs(ctx)
        nchw = bool(inputs.scalar(layout_at, False))
        c = nhwc_shape(inputs.shape(0), nchw)[3]
        n = dim(inputs.shape(1), 0)
        return [layout_shape(n, int(inputs.scalar(3, 0)), int(inputs.scalar(4, 0)), c, nchw)]

    return shape


def _roi_signatures(align: bool) -> list[Signature]:
    sigs = []
    for t, box_t, version in ((F32, F32, V12), (F16, F16, V12), (Q8, Q16A, V12), (Q8S, Q16A, V13)):
        s = _float_scalar_type(t)
        ins = [tensor("input", t, 4), tensor("rois", box_t, 2), tensor("batch_indices", I32, 1)]
        ins += scalars("out_height", "out_width") + scalars("height_ratio", "width_ratio", t=s)
        if align:
            ins += scalars("sampling_height", "sampling_width")
        ins += scalars("nchw", t=BOOL)
        checks = [_quant_box_check(1)] + ([] if align else [same_quant_as_input()])

        def check(ctx: ShapeContext, _checks=tuple(checks)) -> list[str]:
            return [p for c in _checks for p in c(ctx)]

        sigs.append(Signature(tuple(ins), (tensor("output", t, 4),), None, version, check))
    return sigs


# --------------------------------------------------------------------------------------------------------------
# GENERATE_PROPOSALS and DETECTION_POSTPROCESSING (signatures and shapes)


def _proposal_signatures() -> list[Signature]:
    sigs = []
    for t, anchor_t, info_t, version in (
        (F32, F32, F32, V12),
        (F16, F16, F16, V12),
        (Q8, Q16S, Q16A, V12),
        (Q8S, Q16S, Q16A, V13),
    ):
        s = _float_scalar_type(t)
        ins = (
            tensor("scores", t, 4),
            tensor("deltas", t, 4),
            tensor("anchors", anchor_t, 2),
            tensor("image_info", info_t, 2),
            *scalars("height_ratio", "width_ratio", t=s),
            *scalars("pre_nms_max", "post_nms_max"),
            *scalars("iou_threshold", "min_size", t=s),
            *scalars("nchw", t=BOOL),
        )
        outs = (tensor("out_scores", t, 1), tensor("out_boxes", info_t, 2), tensor("out_batches", I32, 1))
        sigs.append(Signature(ins, outs, None, version, same_quant_as_input(0, 0)))
    return sigs


def hard_nms(scores: np.ndarray, boxes: np.ndarray, order: list[int], iou_threshold: float, limit: int) -> list[int]:
    """Greedy hard NMS over the candidates in `order`: best score first (earliest on ties), dropping every
    candidate whose IoU with a kept box reaches the threshold, until `limit` boxes are kept (limit <= 0: no
    limit)."""
    live = list(order)
    kept: list[int] = []
    while live and (limit <= 0 or len(kept) < limit):
        best = max(live, key=lambda k: scores[k])
        kept.append(best)
        live = [
            k
            for k in live
            if k != best and not reaches(iou(boxes[best], boxes[k]), iou_threshold, overlap_band(boxes[best], boxes[k]))
        ]
    return kept


def generate_proposals_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """Per image: anchors shifted over the feature map, moved by the deltas (as AXIS_ALIGNED_BBOX_TRANSFORM
    does), clipped; the pre_nms_max best scores kept, boxes smaller than min_size dropped, then hard NMS
    keeping at most post_nms_max (non-positive limits mean no limit), best score first."""
    nchw = bool(ctx.scalar(10))
    scores = to_nhwc(_real(ctx, 0), nchw)  # [B, H, W, A]
    deltas = to_nhwc(_real(ctx, 1), nchw)  # [B, H, W, A * 4]
    anchors, info = _real(ctx, 2), _real(ctx, 3)
    h_ratio, w_ratio = float(ctx.scalar(4)), float(ctx.scalar(5))
    pre_max, post_max = int(ctx.scalar(6)), int(ctx.scalar(7))
    iou_threshold, min_size = float(ctx.scalar(8)), float(ctx.scalar(9))
    batches, h, w, a = scores.shape
    out_scores, out_boxes, out_batches = [], [], []
    for b in range(batches):
        img_h, img_w = info[b]
        shift = np.stack(np.meshgrid(np.arange(h) * h_ratio, np.arange(w) * w_ratio, indexing="ij"), axis=-1)
        boxes = np.empty((h, w, a, 4))
        boxes[..., 0] = anchors[None, None, :, 0] + shift[..., 1:2]
        boxes[..., 1] = anchors[None, None, :, 1] + shift[..., 0:1]
        boxes[..., 2] = anchors[None, None, :, 2] + shift[..., 1:2]
        boxes[..., 3] = anchors[None, None, :, 3] + shift[..., 0:1]
        boxes = _transform(boxes.reshape(-1, 4), deltas[b].reshape(-1, 4), img_h, img_w)
        flat_scores = scores[b].reshape(-1)
        order = sorted(range(flat_scores.size), key=lambda k: -flat_scores[k])
        if 0 < pre_max < len(order):
            order = order[:pre_max]
        order = [k for k in order if _big_enough(boxes[k], min_size, img_h, img_w)]
        for k in hard_nms(flat_scores, boxes, order, iou_threshold, post_max):
            out_scores.append(flat_scores[k])
            out_boxes.append(boxes[k])
            out_batches.append(b)
    outs = ctx.output_operands
    return [
        from_real(np.array(out_scores, dtype=np.float64), outs[0]),
        from_real(np.array(out_boxes, dtype=np.float64).reshape(-1, 4), outs[1]),
        np.array(out_batches, dtype=np.int32),
    ]


def _transform(boxes: np.ndarray, deltas: np.ndarray, img_h: float, img_w: float) -> np.ndarray:
    """Boxes moved by [dx, dy, dw, dh] and clipped to the image."""
    w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    cx, cy = boxes[:, 0] + w / 2 + deltas[:, 0] * w, boxes[:, 1] + h / 2 + deltas[:, 1] * h
    pw, ph = w * np.exp(deltas[:, 2]), h * np.exp(deltas[:, 3])
    out = np.stack([cx - pw / 2, cy - ph / 2, cx + pw / 2, cy + ph / 2], axis=1)
    out[:, 0::2] = np.clip(out[:, 0::2], 0, img_w)
    out[:, 1::2] = np.clip(out[:, 1::2], 0, img_h)
    return out


def _big_enough(box: np.ndarray, min_size: float, img_h: float, img_w: float) -> bool:
    width, height = box[2] - box[0], box[3] - box[1]
    band = size_band(float(np.abs(box).max()))
    if not (reaches(width, min_size, band) and reaches(height, min_size, band)):
        return False
    if box[0] + width / 2 < img_w and box[1] + height / 2 < img_h:
        return True
    # A box as large as min_size whose centre is not inside the image: after clipping, only a box of no extent on
    # the image's far edge, or any box of an image of no size. The HAL names the min_size filter only; the
    # implementations this filter comes from also drop boxes centred outside the image. Which one a driver follows
    # is not something the HAL decides.
    raise UnspecifiedResult("GENERATE_PROPOSALS box whose centre is not inside the image")


def proposals_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """The number of proposals depends on the data: [0], [0, 4], [0]."""
    return [(0,), (0, 4), (0,)]


def _postprocessing_signatures() -> list[Signature]:
    sigs = []
    for t in (F32, F16):
        s = _float_scalar_type(t)
        ins = (
            tensor("scores", t, 3),
            tensor("deltas", t, 3),
            tensor("anchors", t, 2),
            *scalars("y_scale", "x_scale", "h_scale", "w_scale", t=s),
            *scalars("regular_nms", t=BOOL),
            *scalars("max_detections", "max_classes_per_detection", "max_detections_per_class"),
            *scalars("score_threshold", "iou_threshold", t=s),
            *scalars("include_background", t=BOOL),
        )
        outs = (
            tensor("out_scores", t, 2),
            tensor("out_boxes", t, 3),
            tensor("out_classes", I32, 2),
            tensor("num_detections", I32, 1),
        )
        sigs.append(Signature(ins, outs, None, V12))
    return sigs


def decode_anchor_boxes(deltas: np.ndarray, anchors: np.ndarray, scales: tuple[float, ...]) -> np.ndarray:
    """[y1, x1, y2, x2] boxes from [dy, dx, dh, dw] deltas and [ctr_y, ctr_x, h, w] anchors."""
    y_scale, x_scale, h_scale, w_scale = scales
    cy = deltas[:, 0] / y_scale * anchors[:, 2] + anchors[:, 0]
    cx = deltas[:, 1] / x_scale * anchors[:, 3] + anchors[:, 1]
    half_h = 0.5 * np.exp(deltas[:, 2] / h_scale) * anchors[:, 2]
    half_w = 0.5 * np.exp(deltas[:, 3] / w_scale) * anchors[:, 3]
    return np.stack([cy - half_h, cx - half_w, cy + half_h, cx + half_w], axis=1)


def _nms_above(
    scores: np.ndarray, boxes_yx: np.ndarray, threshold: float, iou_threshold: float, limit: int
) -> list[int]:
    """Hard NMS over the boxes scoring at least `threshold`: best first, suppressing IoU above the threshold."""
    candidates = sorted((k for k in range(scores.size) if scores[k] >= threshold), key=lambda k: -scores[k])
    kept: list[int] = []
    for k in candidates:
        if len(kept) >= limit:
            break
        # IoU does not depend on the coordinate order, so [y1, x1, y2, x2] boxes work as they are.
        if not any(
            exceeds(iou(boxes_yx[k], boxes_yx[j]), iou_threshold, overlap_band(boxes_yx[k], boxes_yx[j])) for j in kept
        ):
            kept.append(k)
    return kept


def detection_postprocessing_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """Decode every anchor's box, then NMS either per class (regular) or once over each anchor's best class
    (fast); class 0 is background. Up to max_detections results per image, best first, zero-padded."""
    scores, deltas, anchors = _real(ctx, 0), _real(ctx, 1), _real(ctx, 2)
    scales = tuple(float(ctx.scalar(i)) for i in (3, 4, 5, 6))
    regular = bool(ctx.scalar(7))
    max_det, max_classes, max_per_class = (int(ctx.scalar(i)) for i in (8, 9, 10))
    score_threshold, iou_threshold = float(ctx.scalar(11)), float(ctx.scalar(12))
    label_offset = 0 if bool(ctx.scalar(13)) else -1
    batches, _, classes = scores.shape
    out_scores = np.zeros((batches, max_det))
    out_boxes = np.zeros((batches, max_det, 4))
    out_classes = np.zeros((batches, max_det), dtype=np.int32)
    counts = np.zeros(batches, dtype=np.int32)
    for b in range(batches):
        boxes = decode_anchor_boxes(deltas[b][:, :4], anchors, scales)
        found: list[tuple[float, int, int]] = []
        if regular:
            for c in range(1, classes):
                kept = _nms_above(scores[b, :, c], boxes, score_threshold, iou_threshold, max_per_class)
                found += [(scores[b, k, c], k, c) for k in kept]
            found.sort(key=lambda d: -d[0])
        else:
            per_anchor = min(max_classes, classes - 1)
            top = [sorted(range(1, classes), key=lambda c: -scores[b, k, c])[:per_anchor] for k in range(len(boxes))]
            best = np.array([scores[b, k, top[k][0]] for k in range(len(boxes))])
            for k in _nms_above(best, boxes, score_threshold, iou_threshold, max_det):
                found += [(scores[b, k, c], k, c) for c in top[k]]
        found = found[:max_det]
        counts[b] = len(found)
        for n, (score, k, c) in enumerate(found):
            out_scores[b, n] = score
            out_boxes[b, n] = boxes[k]
            out_classes[b, n] = c + label_offset
    outs = ctx.output_operands
    return [from_real(out_scores, outs[0]), from_real(out_boxes, outs[1]), out_classes, counts]


def postprocessing_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """[batches, max_detections], [batches, max_detections, 4], [batches, max_detections], [batches]."""
    inputs = Inputs(ctx)
    b = dim(inputs.shape(0), 0)
    m = int(inputs.scalar(8, 0))
    return [(b, m), (b, m, 4), (b, m), (b,)]


# --------------------------------------------------------------------------------------------------------------
# Registration

define_single_form(
    OperationType.AXIS_ALIGNED_BBOX_TRANSFORM,
    "detection",
    _bbox_signatures(),
    bbox_transform_shape,
    bbox_transform_kernel,
    {"input_range": (0.0, 16.0), "note": "rois satisfy x1 <= x2, y1 <= y2; deltas in [-1, 1]; batches < batches"},
)
define_single_form(
    OperationType.BOX_WITH_NMS_LIMIT,
    "detection",
    _nms_signatures(),
    box_with_nms_limit_shape,
    box_with_nms_limit_kernel,
    {
        "input_range": (0.0, 1.0),
        "params": {
            "nms_kernel": [HARD, LINEAR, GAUSSIAN],
            "max_detections": (-1, 10),
            "score_threshold": (0.0, 0.5),
            "iou_threshold": (0.1, 0.9),
            "sigma": (0.1, 1.0),
            "nms_score_threshold": (0.0, 0.5),
        },
        "note": "boxes valid (x1 <= x2, y1 <= y2); rows grouped by batch index",
    },
)
define_single_form(
    OperationType.HEATMAP_MAX_KEYPOINT,
    "detection",
    _heatmap_signatures(),
    heatmap_shape,
    heatmap_max_keypoint_kernel,
    {"input_range": (-1.0, 1.0), "params": {"nchw": [False, True]}, "note": "heatmap height = width >= 2"},
)
define_single_form(
    OperationType.ROI_ALIGN,
    "detection",
    _roi_signatures(align=True),
    _roi_shape(9),
    roi_align_kernel,
    {
        "input_range": (-4.0, 4.0),
        "params": {
            "out_height": (1, 4),
            "out_width": (1, 4),
            "height_ratio": (0.5, 4.0),
            "width_ratio": (0.5, 4.0),
            "sampling_height": (0, 3),
            "sampling_width": (0, 3),
            "nchw": [False, True],
        },
        "note": "rois valid and inside the image; batch indices < batches",
    },
)
define_single_form(
    OperationType.ROI_POOLING,
    "detection",
    _roi_signatures(align=False),
    _roi_shape(7),
    roi_pooling_kernel,
    {
        "input_range": (-4.0, 4.0),
        "params": {
            "out_height": (1, 4),
            "out_width": (1, 4),
            "height_ratio": (0.5, 4.0),
            "width_ratio": (0.5, 4.0),
            "nchw": [False, True],
        },
        "note": "rois valid and inside the image; batch indices < batches",
    },
)
define_single_form(
    OperationType.GENERATE_PROPOSALS,
    "detection",
    _proposal_signatures(),
    proposals_shape,
    generate_proposals_kernel,
    {
        "input_range": (-1.0, 1.0),
        "params": {
            "height_ratio": (1.0, 4.0),
            "width_ratio": (1.0, 4.0),
            "pre_nms_max": (-1, 20),
            "post_nms_max": (-1, 10),
            "iou_threshold": (0.1, 0.9),
            "min_size": (0.0, 2.0),
            "nchw": [False, True],
        },
        "note": "anchors valid boxes; image_info [batches, 2] of positive sizes",
    },
)
define_single_form(
    OperationType.DETECTION_POSTPROCESSING,
    "detection",
    _postprocessing_signatures(),
    postprocessing_shape,
    detection_postprocessing_kernel,
    {
        "input_range": (0.0, 1.0),
        "params": {
            "y_scale": (1.0, 10.0),
            "x_scale": (1.0, 10.0),
            "h_scale": (1.0, 5.0),
            "w_scale": (1.0, 5.0),
            "regular_nms": [False, True],
            "max_detections": (1, 5),
            "max_classes_per_detection": (1, 1),
            "max_detections_per_class": (1, 3),
            "score_threshold": (0.0, 0.5),
            "iou_threshold": (0.1, 0.9),
            "include_background": [False, True],
        },
        "note": "anchors [ctr_y, ctr_x, h, w] with positive sizes; deltas' last dimension >= 4",
    },
)


def _round_away(v: float) -> int:
    """Nearest integer, ties away from zero."""
    return int(round_half_away(np.float64(v)))
