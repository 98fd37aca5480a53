"""Convolutions: CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D (im2col + matrix multiply) and TRANSPOSE_CONV_2D
(matrix multiply + col2im). Float runs in float32; quantized runs in int32 with fixed-point requantization."""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import (
    FLOAT_TYPES,
    QUANT8_TYPES,
    Geometry,
    WindowParams,
    WindowSignature,
    conv_multipliers,
    filter_zero_point,
    finish_quantized,
    float_bias,
    from_nhwc,
    guard_elements,
    implicit_padding,
    int32_bias,
    parse_window_params,
    resolve_geometry,
    store_float,
    to_float32,
    to_nhwc,
)
from driver_under_test.backends.numpy.kernels._im2col import col2im, row_blocks, windows
from driver_under_test.backends.numpy.kernels.common import fault_active, float_activation, quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.errors import invalid
from driver_under_test.faults import define
from harness.hal import OperandType, OperationType

_TYPES = (*FLOAT_TYPES, *QUANT8_TYPES)

_CONV_SIG = WindowSignature(first=3, dilation=True)
_DEPTHWISE_SIG = WindowSignature(first=3, extras=("multiplier",), dilation=True)
_GROUPED_SIG = WindowSignature(first=3, extras=("groups",))

CONV_BIAS_DROPPED_WHEN_NCHW = define(
    "conv_bias_dropped_when_nchw",
    "execution",
    "CONV_2D and GROUPED_CONV_2D (which share one routine) forget the bias on the NCHW path: with the layout "
    "flag set, outputs are activation(input * filter) without the bias (float and quantized), wrong by the "
    "bias of each output channel (breaks CONV_2D/GROUPED_CONV_2D semantics for data layout NCHW).",
).name
QUANT_CONV_TRUNCATES = define(
    "quant_conv_truncates",
    "execution",
    "Quantized CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and TRANSPOSE_CONV_2D requantize their accumulators "
    "with plain arithmetic shifts, without the rounding constants: every result is rounded down instead of to "
    "nearest (breaks the HAL's rounding; each element stays within one step, inside the per-element tolerance, "
    "but the output is biased by about half a step).",
).name


def _is_quantized(t: Tensor) -> bool:
    return t.type in QUANT8_TYPES


def _filter(call: OpCall) -> Tensor:
    filt = call.inputs[1]
    if filt is None or filt.data is None or filt.data.ndim != 4:
        raise invalid("filter must be a rank-4 tensor", "shape.filter")
    return filt


def _finish(acc: np.ndarray, call: OpCall, channels: int, activation: int, with_bias: bool = True) -> np.ndarray:
    """Bias, activation and storage of [..., channels] accumulators (float32 or int32)."""
    inp, filt, bias, out = call.inputs[0], call.inputs[1], call.inputs[2], call.outputs[0]
    if not with_bias:
        bias = None
    if _is_quantized(inp):
        multiplier, shift = conv_multipliers(inp, filt, out, channels)
        acc = acc.astype(np.int64) + int32_bias(bias, channels)
        rescale = _floor_requantize if fault_active(call, QUANT_CONV_TRUNCATES) else None
        return finish_quantized(acc, multiplier, shift, out, activation, rescale)
    return store_float(float_activation(acc + float_bias(bias, channels), activation), out)


def _floor_requantize(acc: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The faulty requantization: acc * multiplier * 2^shift / 2^31 with plain (flooring) shifts."""
    shift = np.asarray(shift, dtype=np.int64)
    x = np.clip(np.clip(acc, -(1 << 31), (1 << 31) - 1) << np.maximum(shift, 0), -(1 << 31), (1 << 31) - 1)
    return ((x * np.asarray(multiplier, dtype=np.int64)) >> 31) >> np.maximum(-shift, 0)


def _operands(call: OpCall, x: np.ndarray, filt: Tensor) -> tuple[np.ndarray, np.ndarray, int]:
    """Input and filter in compute form: float32, or integers with zero points removed; plus the input pad value.

    Quantized values are held in float64 so the integer GEMM runs through BLAS: every product is below 2^16 in
    magnitude and an operand holds at most 2^26 elements (the driver's limit), so each sum stays below 2^53 and
    the float64 arithmetic is exact.
    """
    inp = call.inputs[0]
    if _is_quantized(inp):
        return (x, filt.data.astype(np.float64) - filter_zero_point(filt), int(inp.zero_point))
    return x.astype(np.float32, copy=False), to_float32(filt), 0


def _centered(cols: np.ndarray, call: OpCall) -> np.ndarray:
    """A contiguous copy of patches; quantized ones minus the input zero point (padding then adds zero)."""
    inp = call.inputs[0]
    if _is_quantized(inp):
        return cols.astype(np.float64) - float(inp.zero_point)
    return np.ascontiguousarray(cols)


def _grouped_conv(call: OpCall, params: WindowParams, groups: int) -> np.ndarray:
    """Convolution of input 0 with filter 1 split into `groups` independent channel groups."""
    inp, filt = call.inputs[0], _filter(call)
    x = to_nhwc(inp.data, params.nchw)
    n, in_h, in_w, channels = x.shape
    out_channels, kernel_h, kernel_w, group_depth = filt.data.shape
    if groups < 1 or channels != group_depth * groups or out_channels % groups:
        raise invalid(f"input depth {channels}, filter {filt.data.shape} and {groups} groups disagree",
                      "shape.filter")
    g = resolve_geometry(params, in_h, in_w, kernel_h, kernel_w)
    guard_elements((n, g.out_h, g.out_w, out_channels), "convolution output")
    x, w, pad = _operands(call, x, filt)
    # Weights as [groups, per_group, kernel_h * kernel_w * group_depth] matrices, patches in (kh, kw, c) order.
    per_group = out_channels // groups
    w = w.reshape(groups, per_group, kernel_h * kernel_w * group_depth)
    taps = windows(x, g, pad)
    acc = np.empty((n, g.out_h, g.out_w, out_channels), dtype=w.dtype)
    for r0, r1 in row_blocks(g, n, kernel_h * kernel_w * channels):
        # One block of im2col rows, copied out of the strided window view.
        block = _centered(taps[:, r0:r1], call)
        rows = block.shape[0] * block.shape[1] * block.shape[2]
        if groups == 1:
            result = block.reshape(rows, kernel_h * kernel_w * channels) @ w[0].T
        else:
            block = block.reshape(rows, kernel_h * kernel_w, channels)
            result = np.concatenate([
                block[:, :, k * group_depth : (k + 1) * group_depth].reshape(rows, w.shape[2]) @ w[k].T
                for k in range(groups)], axis=1)
        acc[:, r0:r1] = result.reshape(n, r1 - r0, g.out_w, out_channels)
    with_bias = not (params.nchw and fault_active(call, CONV_BIAS_DROPPED_WHEN_NCHW))
    result = _finish(acc, call, out_channels, params.activation, with_bias)
    return from_nhwc(result, params.nchw)


@kernel(OperationType.CONV_2D, _TYPES)
@quiet
def conv_2d(call: OpCall) -> list[np.ndarray]:
    """CONV_2D: explicit or implicit padding, optional NCHW layout and dilation."""
    params = parse_window_params(call, _CONV_SIG)
    return [_grouped_conv(call, params, 1)]


@kernel(OperationType.GROUPED_CONV_2D, _TYPES)
@quiet
def grouped_conv_2d(call: OpCall) -> list[np.ndarray]:
    """GROUPED_CONV_2D: input channels and filters split into independent groups."""
    params = parse_window_params(call, _GROUPED_SIG)
    return [_grouped_conv(call, params, params.extras["groups"])]


@kernel(OperationType.DEPTHWISE_CONV_2D, _TYPES)
@quiet
def depthwise_conv_2d(call: OpCall) -> list[np.ndarray]:
    """DEPTHWISE_CONV_2D: each input channel convolved with `multiplier` filters of depth one."""
    params = parse_window_params(call, _DEPTHWISE_SIG)
    inp, filt = call.inputs[0], _filter(call)
    x = to_nhwc(inp.data, params.nchw)
    n, in_h, in_w, channels = x.shape
    one, kernel_h, kernel_w, out_channels = filt.data.shape
    multiplier = params.extras["multiplier"]
    if one != 1 or multiplier < 1 or out_channels != channels * multiplier:
        raise invalid(f"input depth {channels}, filter {filt.data.shape} and multiplier {multiplier} disagree",
                      "shape.filter")
    g = resolve_geometry(params, in_h, in_w, kernel_h, kernel_w)
    guard_elements((n, g.out_h, g.out_w, out_channels), "convolution output")
    x, w, pad = _operands(call, x, filt)
    w = w.reshape(kernel_h * kernel_w, out_channels)
    taps = windows(x, g, pad)
    acc = np.empty((n, g.out_h, g.out_w, out_channels), dtype=w.dtype)
    for r0, r1 in row_blocks(g, n, kernel_h * kernel_w * channels):
        block = _centered(taps[:, r0:r1], call).reshape(-1, kernel_h * kernel_w, channels)
        block_acc = np.empty((block.shape[0], out_channels), dtype=w.dtype)
        # Output channel c * multiplier + q reads input channel c.
        for q in range(multiplier):
            block_acc[:, q::multiplier] = np.einsum("pkc,kc->pc", block, w[:, q::multiplier])
        acc[:, r0:r1] = block_acc.reshape(n, r1 - r0, g.out_w, out_channels)
    result = _finish(acc, call, out_channels, params.activation)
    return [from_nhwc(result, params.nchw)]


# --- transposed convolution --------------------------------------------------------------------------------------


def _transpose_geometry(call: OpCall, implicit: bool, nchw: bool, in_h: int, in_w: int, kernel_h: int,
                        kernel_w: int) -> tuple[Geometry, int]:
    """Geometry (pads crop the full output) and activation of a TRANSPOSE_CONV_2D call."""
    if implicit:
        shape_input = call.inputs[3]
        stride_w, stride_h, activation = int(call.scalar(5)), int(call.scalar(6)), int(call.scalar(7))
        shape = [int(v) for v in shape_input.data.reshape(-1)]
        if len(shape) != 4:
            raise invalid(f"output shape tensor must have 4 entries, got {len(shape)}", "param.output_shape")
        out_h, out_w = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
        scheme = int(call.scalar(4))
        if stride_w < 1 or stride_h < 1:
            raise invalid("strides must be positive", "param.stride")
        top, bottom = _transpose_padding(scheme, in_h, stride_h, kernel_h, out_h)
        left, right = _transpose_padding(scheme, in_w, stride_w, kernel_w, out_w)
    else:
        left, right, top, bottom = (int(call.scalar(i)) for i in range(3, 7))
        stride_w, stride_h, activation = int(call.scalar(7)), int(call.scalar(8)), int(call.scalar(9))
        if stride_w < 1 or stride_h < 1:
            raise invalid("strides must be positive", "param.stride")
        if min(left, right, top, bottom) < 0:
            raise invalid("explicit paddings must be non-negative", "param.padding")
        out_h = (in_h - 1) * stride_h + kernel_h - top - bottom
        out_w = (in_w - 1) * stride_w + kernel_w - left - right
    if out_h < 1 or out_w < 1:
        raise invalid(f"transposed convolution output would be {out_h}x{out_w}", "shape.output")
    if activation not in (0, 1, 2, 3):
        raise invalid(f"unknown fused activation {activation}", "param.activation")
    g = Geometry(kernel_h, kernel_w, stride_h, stride_w, 1, 1, top, bottom, left, right, out_h, out_w)
    return g, activation


def _transpose_padding(scheme: int, in_size: int, stride: int, kernel: int, out_size: int) -> tuple[int, int]:
    """Padding that crops the full transposed-convolution output down to the requested size."""
    if scheme not in (0, 1, 2):
        raise invalid(f"unknown implicit padding scheme {scheme}", "param.padding_scheme")
    if scheme != 1:
        return implicit_padding(scheme, in_size, stride, kernel, 1)
    total = max((in_size - 1) * stride + kernel - out_size, 0)
    return total // 2, total - total // 2


@kernel(OperationType.TRANSPOSE_CONV_2D, _TYPES)
@quiet
def transpose_conv_2d(call: OpCall) -> list[np.ndarray]:
    """TRANSPOSE_CONV_2D: every input pixel scatters filter-weighted taps onto a strided output grid."""
    inp, filt = call.inputs[0], _filter(call)
    if call.inputs[3] is None:
        raise invalid("missing padding or output shape input", "inputs.missing")
    # The implicit form gives the output shape as a tensor where the explicit form has its first padding.
    implicit = call.inputs[3].type == OperandType.TENSOR_INT32
    nchw = bool(call.scalar(8 if implicit else 10, False))
    x = to_nhwc(inp.data, nchw)
    n, in_h, in_w, channels = x.shape
    out_channels, kernel_h, kernel_w, depth = filt.data.shape
    if depth != channels:
        raise invalid(f"filter depth {depth} does not match input depth {channels}", "shape.filter")
    g, activation = _transpose_geometry(call, implicit, nchw, in_h, in_w, kernel_h, kernel_w)
    guard_elements((n, g.out_h, g.out_w, out_channels), "transposed convolution output")
    guard_elements((n, in_h, in_w, out_channels, kernel_h, kernel_w), "transposed convolution taps")
    x, w, _ = _operands(call, x, filt)
    rows = x.reshape(-1, channels)
    if _is_quantized(inp):
        rows = rows.astype(np.int32) - np.int32(inp.zero_point)
    taps = rows @ w.reshape(out_channels * kernel_h * kernel_w, channels).T
    taps = taps.reshape(n, in_h, in_w, out_channels, kernel_h, kernel_w).transpose(0, 1, 2, 4, 5, 3)
    acc = col2im(taps, n, g.out_h, g.out_w, in_h, in_w, kernel_h, kernel_w, g.stride_h, g.stride_w, g.pad_top,
                 g.pad_left)
    result = _finish(acc, call, out_channels, activation)
    return [from_nhwc(result, nchw)]
