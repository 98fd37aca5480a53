"""Image resizing: RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR, by output size or by scale factor.

Source coordinates follow the usual conventions: plain (dst * in/out), align_corners ((in-1)/(out-1)) and
half-pixel centers (sampling at pixel centers), the last two being the optional inputs 4 and 5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import (
    FLOAT_TYPES,
    QUANT8_TYPES,
    from_nhwc,
    guard_elements,
    to_nhwc,
)
from driver_under_test.backends.numpy.kernels.common import quant_limits, quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, kernel
from driver_under_test.errors import invalid
from harness.hal import OperandType, OperationType, numpy_dtype

# Float sources are rounded to float16 range only at the end; quantized sources are interpolated in float32
# and rounded to nearest, the scale and zero point being shared with the output.


@dataclass(frozen=True)
class _Resize:
    out_h: int
    out_w: int
    nchw: bool
    align_corners: bool
    half_pixel: bool


def _decode(call: OpCall, in_h: int, in_w: int) -> _Resize:
    size_input = call.inputs[1]
    if size_input is None:
        raise invalid("missing output size input", "inputs.missing")
    if size_input.type == OperandType.INT32:
        out_w, out_h = int(call.scalar(1)), int(call.scalar(2))
    else:
        width_scale, height_scale = float(call.scalar(1)), float(call.scalar(2))
        if not (math.isfinite(width_scale) and math.isfinite(height_scale)) or width_scale <= 0 or height_scale <= 0:
            raise invalid(f"resize scales must be positive, got {width_scale}x{height_scale}", "param.scale")
        out_w, out_h = math.floor(in_w * width_scale), math.floor(in_h * height_scale)
    if out_h < 1 or out_w < 1:
        raise invalid(f"output size must be positive, got {out_h}x{out_w}", "param.size")
    align_corners = bool(call.scalar(4, False))
    half_pixel = bool(call.scalar(5, False))
    if align_corners and half_pixel:
        raise invalid("align_corners and half_pixel_centers are exclusive", "param.resize_mode")
    return _Resize(out_h, out_w, bool(call.scalar(3, False)), align_corners, half_pixel)


def _scale(in_size: int, out_size: int, align_corners: bool) -> float:
    if align_corners and out_size > 1:
        return (in_size - 1) / (out_size - 1)
    return in_size / out_size


def _source_coords(in_size: int, out_size: int, r: _Resize) -> np.ndarray:
    """float32 source coordinate of each destination index (before clamping)."""
    scale = np.float32(_scale(in_size, out_size, r.align_corners))
    dst = np.arange(out_size, dtype=np.float32)
    if r.half_pixel:
        return (dst + np.float32(0.5)) * scale - np.float32(0.5)
    return dst * scale


def _bilinear_axis(in_size: int, out_size: int, r: _Resize) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lower and upper source index and the upper weight for each destination index along one axis."""
    src = _source_coords(in_size, out_size, r)
    lower = np.maximum(np.floor(src), 0).astype(np.int64)
    if r.half_pixel:
        upper = np.minimum(np.ceil(src), in_size - 1).astype(np.int64)
    else:
        upper = np.minimum(lower + 1, in_size - 1)
    lower = np.minimum(lower, in_size - 1)
    return lower, upper, (src - lower).astype(np.float32)


def _nearest_axis(in_size: int, out_size: int, r: _Resize) -> np.ndarray:
    """Source index of each destination index along one axis."""
    scale = np.float32(_scale(in_size, out_size, r.align_corners))
    offset = np.float32(0.5) if r.half_pixel else np.float32(0)
    src = (np.arange(out_size, dtype=np.float32) + offset) * scale
    # align_corners rounds half away from zero; otherwise the coordinate is floored.
    index = np.floor(src + np.float32(0.5)) if r.align_corners else np.floor(src)
    return np.clip(index.astype(np.int64), 0, in_size - 1)


def _store(values: np.ndarray, call: OpCall) -> np.ndarray:
    out = call.outputs[0]
    if out.type in QUANT8_TYPES:
        lo, hi = quant_limits(out.type)
        return np.clip(np.floor(values + np.float32(0.5)), lo, hi).astype(numpy_dtype(out.type))
    return values.astype(numpy_dtype(out.type))


@kernel(OperationType.RESIZE_BILINEAR, (*FLOAT_TYPES, *QUANT8_TYPES))
@quiet
def resize_bilinear(call: OpCall) -> list[np.ndarray]:
    """Each output pixel is the bilinear blend of the four nearest source pixels."""
    x = call.inputs[0].data
    nchw = bool(call.scalar(3, False))
    x = to_nhwc(x, nchw).astype(np.float32)
    _, in_h, in_w, _ = x.shape
    r = _decode(call, in_h, in_w)
    guard_elements((x.shape[0], r.out_h, r.out_w, x.shape[3]), "resized output")
    y0, y1, wy = _bilinear_axis(in_h, r.out_h, r)
    x0, x1, wx = _bilinear_axis(in_w, r.out_w, r)
    wy = wy[None, :, None, None]
    wx = wx[None, None, :, None]
    top = x[:, y0][:, :, x0] * (1 - wx) + x[:, y0][:, :, x1] * wx
    bottom = x[:, y1][:, :, x0] * (1 - wx) + x[:, y1][:, :, x1] * wx
    result = top * (1 - wy) + bottom * wy
    return [from_nhwc(_store(result, call), r.nchw)]


@kernel(OperationType.RESIZE_NEAREST_NEIGHBOR, (*FLOAT_TYPES, *QUANT8_TYPES))
@quiet
def resize_nearest_neighbor(call: OpCall) -> list[np.ndarray]:
    """Each output pixel copies the source pixel its coordinate falls in."""
    nchw = bool(call.scalar(3, False))
    x = to_nhwc(call.inputs[0].data, nchw)
    _, in_h, in_w, _ = x.shape
    r = _decode(call, in_h, in_w)
    guard_elements((x.shape[0], r.out_h, r.out_w, x.shape[3]), "resized output")
    rows = _nearest_axis(in_h, r.out_h, r)
    cols = _nearest_axis(in_w, r.out_w, r)
    result = x[:, rows][:, :, cols].astype(numpy_dtype(call.outputs[0].type))
    return [from_nhwc(result, r.nchw)]
