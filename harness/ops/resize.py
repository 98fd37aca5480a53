"""Image resizing: RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR.

Source coordinates follow the HAL's reference: scale = in_size / out_size ((in - 1) / (out - 1) with
align_corners), source = out * scale ((out + 0.5) * scale - 0.5 with half_pixel_centers, nearest neighbour
uses (out + 0.5) * scale). Scales and source positions are computed in float32, as the reference does, because
the nearest-neighbour floor can flip on the last bit. Output sizes given by scale are floor(in * scale) in float32.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.hal import OperationType
from harness.ops._nn_util import (
    BOOL,
    F16,
    F32,
    FLOAT,
    INT,
    LAYOUTS,
    Q8,
    Q8S,
    Inputs,
    combine,
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
    InvalidParameter,
    define,
    from_real,
    round_half_away,
    same_quant_as_input,
    to_real,
)
from harness.ops.registry import KernelContext, ShapeContext, Signature

f32 = np.float32


def output_size(inputs: Inputs) -> tuple[int, int] | None:
    """(out_h, out_w) from the size or scale inputs, None when not known."""
    nchw = bool(inputs.scalar(3, False))
    _, h, w, _ = nhwc_shape(inputs.shape(0), nchw)
    a, b = inputs.scalar(1), inputs.scalar(2)
    if a is None or b is None:
        return None
    if inputs.type(1) == INT:
        return (int(b), int(a))
    if h == 0 or w == 0:
        return None
    return (int(f32(h) * f32(b)), int(f32(w) * f32(a)))


def resize_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """Output [N, new_height, new_width, C] in the input's layout."""
    inputs = Inputs(ctx)
    nchw = bool(inputs.scalar(3, False))
    n, _, _, c = nhwc_shape(inputs.shape(0), nchw)
    oh, ow = output_size(inputs) or (0, 0)
    return [layout_shape(n, oh, ow, c, nchw)]


def _flags(ctx: KernelContext) -> tuple[bool, bool, bool]:
    """(nchw, align_corners, half_pixel_centers)."""
    return bool(ctx.scalar(3, False)), bool(ctx.scalar(4, False)), bool(ctx.scalar(5, False))


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return f32(in_size - 1) / f32(out_size - 1)
    return f32(in_size) / f32(out_size)


def _bilinear_axis(in_size: int, out_size: int, align: bool, half: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output index along one axis: lower source index, upper source index, weight of the upper one."""
    scale = _scale(in_size, out_size, align)
    pos = np.arange(out_size, dtype=np.float32)
    src = (pos + f32(0.5)) * scale - f32(0.5) if half else pos * scale
    lower = np.maximum(np.floor(src), 0).astype(np.int64)
    upper = np.minimum(np.ceil(src), in_size - 1).astype(np.int64)
    return lower, upper, src.astype(np.float64) - lower


def _nearest_axis(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    """Per output index along one axis: the source index."""
    scale = _scale(in_size, out_size, align)
    src = (np.arange(out_size, dtype=np.float32) + f32(0.5 if half else 0.0)) * scale
    index = round_half_away(src.astype(np.float64)) if align else np.floor(src)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half else index


def _resize_kernel(
    interpolate: Callable[[np.ndarray, int, int, bool, bool], np.ndarray],
) -> Callable[[KernelContext], list[np.ndarray]]:
    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        nchw, align, half = _flags(ctx)
        if align and half:
            raise ExecutionError("align_corners and half_pixel_centers cannot both be true")
        size = output_size(Inputs(ctx))
        if size is None or min(size) <= 0:
            # A size given at run time (or one a scale makes of an input without height or width) that is not
            # positive: an invalid argument, as a stride of 0 is.
            raise InvalidParameter(f"output size {size} is not positive")
        x = to_nhwc(to_real(ctx.inputs[0], ctx.input_operands[0]), nchw)
        out = interpolate(x, size[0], size[1], align, half)
        return [from_real(from_nhwc(out, nchw), ctx.output_operands[0])]

    return kernel


def bilinear(x: np.ndarray, out_h: int, out_w: int, align: bool, half: bool) -> np.ndarray:
    """Bilinear interpolation of an NHWC tensor."""
    _, h, w, _ = x.shape
    y0, y1, dy = _bilinear_axis(h, out_h, align, half)
    x0, x1, dx = _bilinear_axis(w, out_w, align, half)
    dy = dy[None, :, None, None]
    dx = dx[None, None, :, None]
    top = x[:, y0][:, :, x0] * (1 - dx) + x[:, y0][:, :, x1] * dx
    bottom = x[:, y1][:, :, x0] * (1 - dx) + x[:, y1][:, :, x1] * dx
    return top * (1 - dy) + bottom * dy


def nearest(x: np.ndarray, out_h: int, out_w: int, align: bool, half: bool) -> np.ndarray:
    """Nearest-neighbour resampling of an NHWC tensor."""
    _, h, w, _ = x.shape
    return x[:, _nearest_axis(h, out_h, align, half)][:, :, _nearest_axis(w, out_w, align, half)]


# --------------------------------------------------------------------------------------------------------------
# Signatures


def _check(ctx: ShapeContext) -> list[str]:
    inputs = Inputs(ctx)
    problems = []
    a, b = inputs.scalar(1), inputs.scalar(2)
    if a is not None and b is not None and (a <= 0 or b <= 0):
        problems.append("output size / scale must be positive")
    if inputs.scalar(4, False) and inputs.scalar(5, False):
        problems.append("align_corners and half_pixel_centers cannot both be true")
    return problems


def _signatures(typings: list[tuple[int, str]], layout_optional: bool, by_shape_v10: bool) -> list[Signature]:
    """Both forms (by shape, by scale) per typing: HAL 1.2 inputs (layout flag) and HAL 1.3 inputs
    (align_corners, half_pixel_centers, optional). `by_shape_v10` adds the 3-input HAL 1.0 float32 form."""
    sigs = []
    for t, version in typings:
        check = combine(_check, same_quant_as_input())
        out = (tensor("output", t, 4),)
        for size_type in (INT, scalar_type_for(t) if t in (F32, F16) else FLOAT):
            names = ("width", "height") if size_type == INT else ("width_scale", "height_scale")
            base = (tensor("input", t, 4), *scalars(*names, t=size_type))
            layout = scalars("nchw", t=BOOL, optional=layout_optional)
            tail = scalars("align_corners", "half_pixel_centers", t=BOOL, optional=True)
            required = 3 if layout_optional else 4
            if by_shape_v10 and t == F32 and size_type == INT:
                sigs.append(Signature(base, out, None, "V1_0", check))
            if version != "V1_3":
                sigs.append(Signature(base + tuple(layout), out, required, "V1_2", check))
            sigs.append(Signature(base + tuple(layout + tail), out, required, "V1_3", check))
    return sigs


_HINTS = {
    "input_range": (-4.0, 4.0),
    "params": {
        "width": (1, 8),
        "height": (1, 8),
        "width_scale": (0.5, 2.5),
        "height_scale": (0.5, 2.5),
        "nchw": LAYOUTS,
        "align_corners": LAYOUTS,
        "half_pixel_centers": LAYOUTS,
    },
    "note": "align_corners and half_pixel_centers are not both true; scaled sizes must stay >= 1",
}
_TYPINGS = [(F32, "V1_0"), (F16, "V1_2"), (Q8, "V1_2"), (Q8S, "V1_3")]

define(
    OperationType.RESIZE_BILINEAR,
    "resize",
    _signatures(_TYPINGS, layout_optional=True, by_shape_v10=True),
    resize_shape,
    _resize_kernel(bilinear),
    _HINTS,
)
define(
    OperationType.RESIZE_NEAREST_NEIGHBOR,
    "resize",
    _signatures([(F32, "V1_2"), (F16, "V1_2"), (Q8, "V1_2"), (Q8S, "V1_3")], layout_optional=False, by_shape_v10=False),
    resize_shape,
    _resize_kernel(nearest),
    _HINTS,
)
