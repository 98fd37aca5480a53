"""Region-of-interest pooling: ROI_ALIGN (averaged bilinear samples) and ROI_POOLING (max over rounded bins)."""

from __future__ import annotations

import math

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import from_nhwc, guard_elements, to_nhwc
from driver_under_test.backends.numpy.kernels.common import quant_limits, quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.errors import invalid
from harness.hal import OperandType, OperationType, numpy_dtype

T = OperandType
_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_QUANT = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_ASYMM)


def _real(t: Tensor) -> np.ndarray:
    if t.type in _QUANT:
        return ((t.data.astype(np.float64) - t.zero_point) * t.scale).astype(np.float32)
    return t.data.astype(np.float32)


def _store(values: np.ndarray, out: Tensor) -> np.ndarray:
    if out.type not in _QUANT:
        return values.astype(numpy_dtype(out.type))
    if out.scale <= 0:
        raise invalid("quantized output needs a positive scale", "quant.scale")
    scaled = values.astype(np.float64) / out.scale
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) + out.zero_point
    lo, hi = quant_limits(out.type)
    return np.clip(rounded, lo, hi).astype(numpy_dtype(out.type))


def _common(call: OpCall, layout_index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int, float, float, bool]:
    """Feature map (NHWC, real values), rois, batch indices, output size, ratios and layout of a call."""
    nchw = bool(call.scalar(layout_index, False))
    features = to_nhwc(_real(call.inputs[0]), nchw)
    rois_t, batch_t = call.inputs[1], call.inputs[2]
    if rois_t is None or rois_t.data is None or rois_t.data.ndim != 2 or rois_t.data.shape[1] != 4:
        raise invalid("regions of interest must be [num_rois, 4]", "shape.boxes")
    rois = _real(rois_t)
    if batch_t is None or batch_t.data is None or batch_t.data.shape != (rois.shape[0],):
        raise invalid("batch index must have one entry per region", "shape.batch_index")
    batch = batch_t.data.astype(np.int64)
    if batch.size and (batch.min() < 0 or batch.max() >= features.shape[0]):
        raise invalid("batch index out of range", "value.batch_index")
    out_h, out_w = int(call.scalar(3)), int(call.scalar(4))
    height_ratio, width_ratio = float(call.scalar(5)), float(call.scalar(6))
    if out_h < 1 or out_w < 1:
        raise invalid(f"output size must be positive, got {out_h}x{out_w}", "param.size")
    guard_elements((rois.shape[0], out_h, out_w, features.shape[3]), "pooled regions")
    if not (height_ratio > 0 and width_ratio > 0 and math.isfinite(height_ratio) and math.isfinite(width_ratio)):
        raise invalid("spatial ratios must be positive", "param.ratio")
    return features, rois, batch, out_h, out_w, height_ratio, width_ratio, nchw


def _bilinear(image: np.ndarray, y: float, x: float) -> np.ndarray:
    """Channel vector at (y, x) of an [H, W, C] map; zero outside the one-pixel margin, edge-clamped inside."""
    height, width, _ = image.shape
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return np.zeros(image.shape[2], dtype=np.float32)
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= height - 1:
        y0 = y1 = height - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= width - 1:
        x0 = x1 = width - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1.0 - ly, 1.0 - lx
    return (hy * hx * image[y0, x0] + hy * lx * image[y0, x1] + ly * hx * image[y1, x0]
            + ly * lx * image[y1, x1]).astype(np.float32)


@kernel(OperationType.ROI_ALIGN, _TYPES)
@quiet
def roi_align(call: OpCall) -> list[np.ndarray]:
    """Each output bin averages bilinear samples on a regular grid inside its part of the region."""
    features, rois, batch, out_h, out_w, height_ratio, width_ratio, nchw = _common(call, 9)
    sampling_h, sampling_w = int(call.scalar(7)), int(call.scalar(8))
    if sampling_h < 0 or sampling_w < 0:
        raise invalid("sampling ratios must be non-negative", "param.sampling")
    out = np.zeros((rois.shape[0], out_h, out_w, features.shape[3]), dtype=np.float32)
    for r in range(rois.shape[0]):
        image = features[batch[r]]
        x_start, y_start = rois[r, 0] / width_ratio, rois[r, 1] / height_ratio
        roi_w = max(rois[r, 2] / width_ratio - x_start, 1.0)
        roi_h = max(rois[r, 3] / height_ratio - y_start, 1.0)
        step_w, step_h = roi_w / out_w, roi_h / out_h
        samples_w = sampling_w if sampling_w > 0 else math.ceil(step_w)
        samples_h = sampling_h if sampling_h > 0 else math.ceil(step_h)
        bin_w, bin_h = step_w / samples_w, step_h / samples_h
        for i in range(out_h):
            for j in range(out_w):
                total = np.zeros(features.shape[3], dtype=np.float32)
                for sy in range(samples_h):
                    y = y_start + i * step_h + (sy + 0.5) * bin_h
                    for sx in range(samples_w):
                        total += _bilinear(image, float(y), float(x_start + j * step_w + (sx + 0.5) * bin_w))
                out[r, i, j] = total / (samples_h * samples_w)
    return [from_nhwc(_store(out, call.outputs[0]), nchw)]


def _round_away(v: float) -> int:
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


@kernel(OperationType.ROI_POOLING, _TYPES)
@quiet
def roi_pooling(call: OpCall) -> list[np.ndarray]:
    """Each output bin is the maximum over its integer-aligned part of the region (zero when empty)."""
    features, rois, batch, out_h, out_w, height_ratio, width_ratio, nchw = _common(call, 7)
    height, width = features.shape[1:3]
    out = np.zeros((rois.shape[0], out_h, out_w, features.shape[3]), dtype=np.float32)
    for r in range(rois.shape[0]):
        image = features[batch[r]]
        x1, y1 = _round_away(rois[r, 0] / width_ratio), _round_away(rois[r, 1] / height_ratio)
        x2, y2 = _round_away(rois[r, 2] / width_ratio), _round_away(rois[r, 3] / height_ratio)
        step_w = max(x2 - x1 + 1, 1) / out_w
        step_h = max(y2 - y1 + 1, 1) / out_h
        for i in range(out_h):
            h0 = min(max(math.floor(i * step_h) + y1, 0), height)
            h1 = min(max(math.ceil((i + 1) * step_h) + y1, 0), height)
            for j in range(out_w):
                w0 = min(max(math.floor(j * step_w) + x1, 0), width)
                w1 = min(max(math.ceil((j + 1) * step_w) + x1, 0), width)
                if h1 > h0 and w1 > w0:
                    out[r, i, j] = image[h0:h1, w0:w1].max(axis=(0, 1))
    return [from_nhwc(_store(out, call.outputs[0]), nchw)]
