"""Recipes of the object-detection operations. Boxes are valid ([x1, y1, x2, y2] with x1 <= x2, y1 <= y2) and lie
inside their image, batch indices are in range (and grouped where the HAL asks), and quantized boxes use the
HAL's fixed TENSOR_QUANT16_ASYMM parameters (scale 0.125, zero point 0): box coordinates are drawn on that grid."""

from __future__ import annotations

import math

import numpy as np

from harness.gen.model._operation import OpDraw
from harness.gen.model.recipes._general import _nchw
from harness.gen.model.recipes._registry import O, T, recipe

BOX_QUANT = (0.125, 0)
_QUANT16 = frozenset({T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM})
# Heatmap values: on a grid of 1/128 (exact in every heatmap type, the quantized ones' step) from -0.5 up.
_HEAT_STEP = 1.0 / 128
_HEAT_FLOOR = -0.5
# The HAL's reference limits the quadratic fit's sub-pixel offset to 1.5 cells and scales a longer one back to
# that length. A peak with a smooth bump never needs it (the fit stays within half a cell): now and then a heatmap
# gets a peak whose fit lands farther than _FAR_FIT cells away, clear of the limit.
_FAR_FIT_PROBABILITY = 0.3
_FAR_FIT = 2.0
_FLAT_MARGIN = 4.0


def _names(d: OpDraw) -> dict[str, int]:
    return {a.name: i for i, a in enumerate(d.args)}


def _grid(d: OpDraw, lo: float, hi: float) -> float:
    """A coordinate on the 1/8 grid the quantized box type can hold exactly."""
    return d.src.integer(round(lo * 8), round(hi * 8)) / 8.0


def _boxes(d: OpDraw, count: int, width: float, height: float) -> np.ndarray:
    """`count` valid boxes inside a width x height image."""
    out = []
    for _ in range(count):
        x1, y1 = _grid(d, 0.0, width - 1.0), _grid(d, 0.0, height - 1.0)
        out.append([x1, y1, _grid(d, x1 + 0.5, width), _grid(d, y1 + 0.5, height)])
    return np.array(out, dtype=np.float64).reshape(count, 4)


def _box_input(d: OpDraw, i: int, real: np.ndarray) -> None:
    """A box-typed input holding these real coordinates (stored on the quantized grid when quantized)."""
    t = int(d.args[i].types[0])
    if t in _QUANT16:
        d.data(i, value=np.round(real / BOX_QUANT[0]), quant=BOX_QUANT, reuse=False)
    else:
        d.data(i, value=real, reuse=False)


def _box_output(d: OpDraw, k: int) -> None:
    if int(d.out_args[k].types[0]) in _QUANT16:
        d.out_quant[k] = BOX_QUANT


@recipe(O.AXIS_ALIGNED_BBOX_TRANSFORM)
def _bbox_transform(d: OpDraw) -> None:
    images, rois, classes = d.src.integer(1, 2), d.src.integer(1, 3), d.src.integer(1, 2)
    sizes = [(_grid(d, 4.0, 16.0), _grid(d, 4.0, 16.0)) for _ in range(images)]
    batches = [d.src.integer(0, images - 1) for _ in range(rois)]
    _box_input(d, 0, np.concatenate([_boxes(d, 1, w, h) for b in batches for h, w in [sizes[b]]]))
    d.data(1, shape=(rois, classes * 4), real=(-1.0, 1.0), reuse=False)
    d.batch_indices(batches, images)
    _box_input(d, 3, np.array(sizes, dtype=np.float64))
    _box_output(d, 0)


@recipe(O.BOX_WITH_NMS_LIMIT)
def _box_with_nms_limit(d: OpDraw) -> None:
    names = _names(d)
    images, classes = d.src.integer(1, 2), d.src.integer(2, 3)
    batches = sorted(d.src.integer(0, images - 1) for _ in range(d.src.integer(1, 4)))
    rows = len(batches)
    d.data(0, shape=(rows, classes), real=(0.0, 1.0), reuse=False)
    _box_input(d, 1, np.concatenate([_boxes(d, classes, 8.0, 8.0).reshape(1, -1) for _ in range(rows)]))
    d.data(2, value=np.array(batches, dtype=np.int32), reuse=False)
    d.param(names["score_threshold"])
    d.param(names["max_detections"])
    d.param(names["nms_kernel"])
    d.param(names["iou_threshold"])
    d.param(names["sigma"])
    d.param(names["nms_score_threshold"])
    first = d.get(0)
    if first is not None and first.type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        d.out_quant[0] = (float(first.op.scale), int(first.op.zero_point))
    _box_output(d, 1)


def _peaks(d: OpDraw, boxes: int, size: int, keypoints: int) -> np.ndarray:
    """Heatmaps [boxes, size, size, keypoints] with one clear bump each, so the arg-max and its quadratic
    refinement are well conditioned (random noise would make the refined keypoint hinge on rounding)."""
    rows, cols = np.mgrid[0:size, 0:size].astype(np.float64)
    out = np.zeros((boxes, size, size, keypoints))
    for b in range(boxes):
        for k in range(keypoints):
            cy, cx = d.src.integer(0, size - 1), d.src.integer(0, size - 1)
            height = d.src.integer(2, 4) / 4.0
            out[b, :, :, k] = height * np.exp(-((rows - cy) ** 2 + (cols - cx) ** 2) / 2.0) - 0.5
    return out


def _far_fit_peak(d: OpDraw, plane: np.ndarray) -> None:
    """Replace a heatmap with a peak inside it whose 3x3 neighbourhood fits a quadratic with its stationary point
    more than _FAR_FIT cells away (a strong cross term, its Hessian close to singular but clear of the flat test),
    the rest of the heatmap at the bottom of its range; the plane is left as it was when no draw works out."""
    for _ in range(4):
        grid = _far_fit_grid(d)
        if grid is not None:
            row, col = d.src.integer(1, plane.shape[0] - 2), d.src.integer(1, plane.shape[1] - 2)
            plane[:] = _HEAT_FLOOR
            plane[row - 1 : row + 2, col - 1 : col + 2] = grid * _HEAT_STEP
            return


def _slopes(d: OpDraw, centre: int) -> tuple[int, int]:
    """The two neighbours of the centre along one axis: one a little below it, the other far below (a gradient)."""
    near, far = centre - d.src.integer(8, 24), centre - d.src.integer(32, 64)
    return (near, far) if d.src.boolean() else (far, near)


def _far_fit_grid(d: OpDraw) -> np.ndarray | None:
    """A 3x3 neighbourhood, in heatmap steps, whose centre is its strict maximum and whose quadratic fit puts the
    maximum more than _FAR_FIT cells from the centre (None when the draw misses)."""
    centre = d.src.integer(128, 176)
    left, right = _slopes(d, centre)
    up, down = _slopes(d, centre)
    dxx, dyy = left + right - 2 * centre, up + down - 2 * centre
    # A cross term that leaves the determinant a fraction of dxx * dyy, so that the Hessian is close to singular
    # along (1, sign): a gradient along that direction puts the fit's maximum far away.
    cross = round(math.sqrt(dxx * dyy * (1.0 - d.src.integer(3, 20) / 100.0)))
    sign = d.src.choice((1, -1))
    if (left - right) * (up - down) * sign < 0:
        up, down = down, up
    high = centre - d.src.integer(1, 8)
    low = high - 2 * cross
    if low < _HEAT_FLOOR / _HEAT_STEP:
        return None
    corners = (high, low) if sign > 0 else (low, high)
    grid = np.array([[corners[0], up, corners[1]], [left, centre, right], [corners[1], down, corners[0]]], float)
    dxy = (grid[0, 0] - grid[0, 2] - grid[2, 0] + grid[2, 2]) / 4.0
    b = ((left - right) / 2.0, (up - down) / 2.0)
    det = dxx * dyy - dxy * dxy
    offset = ((dyy * b[0] - dxy * b[1]) / det, (dxx * b[1] - dxy * b[0]) / det)
    # The HAL's reference takes a fit as flat when |det| < atol + rtol * dxx * dyy (real units; 1e-3 each for
    # float16, 1e-5 for float32): several times the widest of these keeps every implementation off that edge.
    flat = _FLAT_MARGIN * (1e-3 / _HEAT_STEP**2 + 1e-3 * dxx * dyy)
    return grid if det > flat and max(abs(v) for v in offset) > _FAR_FIT else None


@recipe(O.HEATMAP_MAX_KEYPOINT)
def _heatmap_max_keypoint(d: OpDraw) -> None:
    nchw = d.src.boolean()
    far = d.gen.chance(_FAR_FIT_PROBABILITY)
    boxes = d.src.integer(1, 2)
    size = d.src.integer(3, 4) if far else d.src.integer(2, 3)  # a far fit's peak needs neighbours on every side
    keypoints = d.src.integer(1, 2)
    heat = _peaks(d, boxes, size, keypoints)
    if far:
        for b in range(boxes):
            _far_fit_peak(d, heat[b, :, :, d.src.integer(0, keypoints - 1)])
    if nchw:
        heat = heat.transpose(0, 3, 1, 2)
    t = int(d.args[0].types[0])
    if t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        scale, zero_point = (_HEAT_STEP, 64) if t == T.TENSOR_QUANT8_ASYMM else (_HEAT_STEP, -64)
        d.data(0, value=np.round(heat / scale) + zero_point, quant=(scale, zero_point), reuse=False)
    else:
        d.data(0, value=heat, reuse=False)
    _box_input(d, 1, _boxes(d, boxes, 16.0, 16.0))
    d.param(2, nchw, copy=nchw)
    _box_output(d, 1)


def _roi(d: OpDraw, align: bool) -> None:
    names = _names(d)
    nchw = d.src.boolean()
    batches, h, w = d.src.integer(1, 2), d.src.integer(1, 4), d.src.integer(1, 4)
    x = d.data(0, shape=_nchw((batches, h, w, d.src.integer(1, 2)), nchw))
    h_ratio, w_ratio = d.src.choice([0.5, 1.0, 2.0]), d.src.choice([0.5, 1.0, 2.0])
    rois = d.src.integer(1, 2)
    _box_input(d, 1, _boxes(d, rois, max(w * w_ratio, 1.0), max(h * h_ratio, 1.0)))
    d.batch_indices([d.src.integer(0, batches - 1) for _ in range(rois)], batches)
    d.param(names["out_height"], d.src.integer(1, 3))
    d.param(names["out_width"], d.src.integer(1, 3))
    d.param(names["height_ratio"], h_ratio)
    d.param(names["width_ratio"], w_ratio)
    if align:
        d.param(names["sampling_height"], d.src.integer(0, 2))
        d.param(names["sampling_width"], d.src.integer(0, 2))
    d.param(names["nchw"], nchw, copy=nchw)
    if x.type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        d.out_quant[0] = (float(x.op.scale), int(x.op.zero_point))


@recipe(O.ROI_ALIGN)
def _roi_align(d: OpDraw) -> None:
    _roi(d, True)


@recipe(O.ROI_POOLING)
def _roi_pooling(d: OpDraw) -> None:
    _roi(d, False)


@recipe(O.GENERATE_PROPOSALS)
def _generate_proposals(d: OpDraw) -> None:
    names = _names(d)
    nchw = d.src.boolean()
    batches, h, w, anchors = 1, d.src.integer(1, 2), d.src.integer(1, 2), d.src.integer(1, 2)
    d.data(0, shape=_nchw((batches, h, w, anchors), nchw), real=(0.0, 1.0), reuse=False)
    d.data(1, shape=_nchw((batches, h, w, anchors * 4), nchw), real=(-0.5, 0.5), reuse=False)
    h_ratio, w_ratio = d.src.choice([1.0, 2.0]), d.src.choice([1.0, 2.0])
    img_h, img_w = h * h_ratio + 4.0, w * w_ratio + 4.0
    _box_input(d, 2, _boxes(d, anchors, 4.0, 4.0))
    _box_input(d, 3, np.array([[img_h, img_w]] * batches, dtype=np.float64))
    d.param(names["height_ratio"], h_ratio)
    d.param(names["width_ratio"], w_ratio)
    d.param(names["pre_nms_max"])
    d.param(names["post_nms_max"])
    d.param(names["iou_threshold"])
    d.param(names["min_size"], d.src.choice([0.0, 0.5]))
    d.param(names["nchw"], nchw, copy=nchw)
    _box_output(d, 1)


@recipe(O.DETECTION_POSTPROCESSING)
def _detection_postprocessing(d: OpDraw) -> None:
    names = _names(d)
    batches, anchors, classes = d.src.integer(1, 2), d.src.integer(1, 4), d.src.integer(2, 3)
    d.data(0, shape=(batches, anchors, classes), real=(0.0, 1.0), reuse=False)
    d.data(1, shape=(batches, anchors, 4), real=(-1.0, 1.0), reuse=False)
    centres = [[_grid(d, 1.0, 8.0), _grid(d, 1.0, 8.0), _grid(d, 0.5, 4.0), _grid(d, 0.5, 4.0)] for _ in range(anchors)]
    d.data(2, value=np.array(centres, dtype=np.float64), reuse=False)
    for name in (
        "y_scale",
        "x_scale",
        "h_scale",
        "w_scale",
        "regular_nms",
        "max_detections",
        "max_classes_per_detection",
        "max_detections_per_class",
        "score_threshold",
        "iou_threshold",
        "include_background",
    ):
        d.param(names[name])
