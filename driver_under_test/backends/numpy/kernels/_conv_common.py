"""Parameters, geometry and requantization shared by the windowed kernels (convolutions and pooling)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from driver_under_test.backends.numpy.kernels.common import (
    check_result_size,
    fault_active,
    quant_limits,
    quantized_activation_range,
)
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor
from driver_under_test.errors import invalid
from driver_under_test.faults import define
from harness.hal import OperandType, numpy_dtype

PADDING_SAME = 1
PADDING_VALID = 2
# Input rows per band of the tiler the HANG_ON_STRIDE_EXCEEDING_WINDOW fault plants.
_BAND_ROWS = 64

HANG_ON_STRIDE_EXCEEDING_WINDOW = define(
    "hang_on_stride_exceeding_window",
    "robustness",
    "The row-band tiler of the windowed operations (CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, "
    "AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D) advances by window - stride + 1 bands of rows, a step that "
    "assumes overlapping windows: when the vertical stride exceeds the (dilated) window height the band cursor never "
    "moves forward and the execution never returns (breaks D25: no input may hang the driver).",
).name

WINDOW_STRIDE_UNCHECKED = define(
    "window_stride_unchecked",
    "robustness",
    "The parameter check of the windowed kernels (CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, AVERAGE_POOL_2D, "
    "MAX_POOL_2D, L2_POOL_2D) forgets the strides, trusting the model validation that refuses constant ones: a "
    "stride of 0 given at run time (a model input) reaches the output-size arithmetic, which divides by it, and "
    "the execution fails with GENERAL_FAILURE instead of INVALID_ARGUMENT (an invalid input argument); a negative "
    "one gives an empty or negative output size, so the execution succeeds with an empty output or fails.",
).name

# Target size (in elements) of one block of im2col patches; larger sweeps are processed block by block.
PATCH_BLOCK_ELEMENTS = 1 << 21

FLOAT_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)
QUANT8_TYPES = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


@dataclass(frozen=True)
class WindowSignature:
    """Where the scalar parameters of a windowed operation sit in its input list.

    `first` is the index of the first padding input; `kernel_size` says whether the window size is given as two
    scalars (pooling) rather than by a filter tensor; `extras` names scalars that sit between the strides (and
    window size) and the activation (depth multiplier, group count); `dilation` says whether the two optional
    dilation factors follow the optional layout flag.
    """

    first: int
    kernel_size: bool = False
    extras: tuple[str, ...] = ()
    dilation: bool = False

    @property
    def implicit_required(self) -> int:
        """Number of required inputs of the implicit-padding form."""
        return self.first + 1 + 2 + (2 if self.kernel_size else 0) + len(self.extras) + 1

    @property
    def explicit_required(self) -> int:
        """Number of required inputs of the explicit-padding form."""
        return self.implicit_required + 3


@dataclass(frozen=True)
class WindowParams:
    """The decoded scalar parameters of one windowed operation call."""

    explicit: bool
    pads: tuple[int, int, int, int]  # left, right, top, bottom (explicit form)
    scheme: int  # implicit padding scheme (implicit form)
    stride_w: int
    stride_h: int
    kernel_w: int  # only for signatures with kernel_size
    kernel_h: int
    extras: dict[str, int]
    activation: int
    nchw: bool
    dilation_w: int
    dilation_h: int
    hang_on_wide_stride: bool = False  # the planted HANG_ON_STRIDE_EXCEEDING_WINDOW fault


@dataclass(frozen=True)
class Geometry:
    """Resolved spatial geometry of a window sweep over an NHWC input."""

    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    out_h: int
    out_w: int


def _is_bool_input(call: OpCall, i: int) -> bool:
    t = call.inputs[i] if i < len(call.inputs) else None
    return t is not None and t.type == OperandType.BOOL


def parse_window_params(call: OpCall, sig: WindowSignature) -> WindowParams:
    """Decode padding, strides, window size, extras, activation, layout and dilation of a call."""
    n = len(call.inputs)
    # The implicit form's optional layout flag (a BOOL) sits where the explicit form has an INT32 scalar.
    explicit = n >= sig.explicit_required and not _is_bool_input(call, sig.implicit_required)
    if not explicit and n < sig.implicit_required:
        raise invalid(f"expected at least {sig.implicit_required} inputs, got {n}", "inputs.count")
    i = sig.first
    if explicit:
        pads = tuple(int(call.scalar(i + k)) for k in range(4))
        scheme = 0
        i += 4
    else:
        pads = (0, 0, 0, 0)
        scheme = int(call.scalar(i))
        i += 1
    stride_w, stride_h = int(call.scalar(i)), int(call.scalar(i + 1))
    i += 2
    kernel_w = kernel_h = 0
    if sig.kernel_size:
        kernel_w, kernel_h = int(call.scalar(i)), int(call.scalar(i + 1))
        i += 2
    extras = {}
    for name in sig.extras:
        extras[name] = int(call.scalar(i))
        i += 1
    activation = int(call.scalar(i))
    i += 1
    nchw = bool(call.scalar(i, False))
    dilation_w = dilation_h = 1
    if sig.dilation:
        dilation_w = int(call.scalar(i + 1, 1))
        dilation_h = int(call.scalar(i + 2, 1))
    params = WindowParams(explicit, pads, scheme, stride_w, stride_h, kernel_w, kernel_h, extras, activation,
                          nchw, dilation_w, dilation_h, fault_active(call, HANG_ON_STRIDE_EXCEEDING_WINDOW))
    _check_params(params, strides=not fault_active(call, WINDOW_STRIDE_UNCHECKED))
    return params


def _check_params(p: WindowParams, strides: bool = True) -> None:
    if strides and (p.stride_w < 1 or p.stride_h < 1):
        raise invalid(f"strides must be positive, got {p.stride_w}x{p.stride_h}", "param.stride")
    if p.dilation_w < 1 or p.dilation_h < 1:
        raise invalid(f"dilation factors must be positive, got {p.dilation_w}x{p.dilation_h}", "param.dilation")
    if min(p.pads) < 0:
        raise invalid(f"explicit paddings must be non-negative, got {p.pads}", "param.padding")
    if not p.explicit and p.scheme not in (0, PADDING_SAME, PADDING_VALID):
        raise invalid(f"unknown implicit padding scheme {p.scheme}", "param.padding_scheme")
    if p.activation not in (0, 1, 2, 3):
        raise invalid(f"unknown fused activation {p.activation}", "param.activation")


def implicit_padding(scheme: int, in_size: int, stride: int, kernel: int, dilation: int) -> tuple[int, int]:
    """(head, tail) padding that the SAME scheme adds; zero for VALID."""
    if scheme != PADDING_SAME:
        return 0, 0
    effective = (kernel - 1) * dilation + 1
    out = (in_size + stride - 1) // stride
    total = max((out - 1) * stride + effective - in_size, 0)
    return total // 2, total - total // 2


def resolve_geometry(p: WindowParams, in_h: int, in_w: int, kernel_h: int, kernel_w: int) -> Geometry:
    """Padding and output size of a window sweep; INVALID_ARGUMENT when no output position fits."""
    if kernel_h < 1 or kernel_w < 1:
        raise invalid(f"window must be at least 1x1, got {kernel_h}x{kernel_w}", "param.window")
    if p.explicit:
        left, right, top, bottom = p.pads
    else:
        top, bottom = implicit_padding(p.scheme, in_h, p.stride_h, kernel_h, p.dilation_h)
        left, right = implicit_padding(p.scheme, in_w, p.stride_w, kernel_w, p.dilation_w)
    eff_h = (kernel_h - 1) * p.dilation_h + 1
    eff_w = (kernel_w - 1) * p.dilation_w + 1
    span_h = in_h + top + bottom - eff_h
    span_w = in_w + left + right - eff_w
    if span_h < 0 or span_w < 0:
        raise invalid(
            f"window {eff_h}x{eff_w} larger than padded input {in_h + top + bottom}x{in_w + left + right}",
            "shape.window",
        )
    guard_elements((in_h + top + bottom, in_w + left + right), "padded input plane")
    if p.hang_on_wide_stride:
        _walk_row_bands(in_h + top + bottom, eff_h, p.stride_h)
    return Geometry(kernel_h, kernel_w, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, top, bottom, left,
                    right, span_h // p.stride_h + 1, span_w // p.stride_w + 1)


def _walk_row_bands(rows: int, window: int, stride: int) -> None:
    """The faulty tiler's walk over the padded input rows, band by band: never ends when stride > window."""
    cursor, step = 0, (window - stride + 1) * _BAND_ROWS
    while cursor < rows:
        if step <= 0:
            # The band worker waits for rows the cursor never delivers (sleeping, so the hang costs no CPU).
            time.sleep(0.05)
        cursor += step


def guard_elements(shape: tuple[int, ...], what: str) -> None:
    """Refuse (as every kernel does for oversized results) a buffer of this shape before allocating it."""
    if any(int(d) < 0 for d in shape):
        raise invalid(f"{what} would have negative dimensions {shape}", "shape.negative")
    check_result_size(shape)


def to_nhwc(data: np.ndarray, nchw: bool) -> np.ndarray:
    """The NHWC view of a rank-4 activation tensor."""
    if data.ndim != 4:
        raise invalid(f"expected a rank-4 tensor, got rank {data.ndim}", "shape.rank")
    return data.transpose(0, 2, 3, 1) if nchw else data


def from_nhwc(data: np.ndarray, nchw: bool) -> np.ndarray:
    """Back to the caller's layout, contiguous."""
    return np.ascontiguousarray(data.transpose(0, 3, 1, 2) if nchw else data)


def to_float32(t: Tensor) -> np.ndarray:
    """A float tensor's values as float32 (float16 is widened)."""
    assert t.data is not None
    return t.data.astype(np.float32, copy=False)


def store_float(values: np.ndarray, out: Tensor) -> np.ndarray:
    """Round float32 results to the output's float storage type."""
    return values.astype(numpy_dtype(out.type))


# --- fixed-point requantization with one multiplier per output channel ---------------------------------------

_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1
# A left shift beyond this saturates every non-zero int32 accumulator anyway; shifting an int32 by up to 32 bits
# stays inside int64 (a larger shift would wrap around before the saturation, and flip the sign). A right shift
# beyond 62 leaves 0 or -1 of any int32 product before rounding (a larger one is no shift at all in int64).
_MAX_LEFT_SHIFT = 32
_MAX_RIGHT_SHIFT = 62


def quantize_multipliers(real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each positive real multiplier as (int32 mantissa in [2^30, 2^31), power-of-two exponent), elementwise."""
    real = np.asarray(real, dtype=np.float64)
    if np.any(real < 0) or not np.all(np.isfinite(real)):
        raise invalid("requantization multiplier must be finite and non-negative", "quant.multiplier")
    mantissa, exponent = np.frexp(real)
    # Round half away from zero, as the fixed-point reference does (mantissas are positive here).
    q = np.floor(mantissa * float(1 << 31) + 0.5).astype(np.int64)
    carry = q == (1 << 31)
    q = np.where(carry, q // 2, q)
    exponent = np.where(carry, exponent + 1, exponent).astype(np.int64)
    zero = real == 0
    return np.where(zero, 0, q), np.where(zero, 0, exponent)


def requantize(acc: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """acc * multiplier * 2^shift / 2^31 with gemmlowp rounding; multiplier/shift broadcast along the last axis."""
    x = np.asarray(acc, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    left = np.minimum(np.maximum(shift, 0), _MAX_LEFT_SHIFT)
    right = np.minimum(np.maximum(-shift, 0), _MAX_RIGHT_SHIFT)
    # A multiplier above one first scales the int32 accumulator up, saturating to int32 like the hardware does.
    x = np.clip(np.clip(x, _INT32_MIN, _INT32_MAX) << left, _INT32_MIN, _INT32_MAX)
    # Saturating rounding doubling high multiply: round(x * m / 2^31), ties away from zero.
    prod = x * multiplier
    nudge = np.where(prod >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    total = prod + nudge
    high = total >> 31
    high = high + ((total < 0) & ((total & ((1 << 31) - 1)) != 0))  # floor -> truncation toward zero
    # Rounding right shift, ties away from zero.
    mask = (np.int64(1) << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + (remainder > threshold)


def conv_multipliers(inp: Tensor, filt: Tensor, out: Tensor, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-output-channel (multiplier, shift) for input_scale * filter_scale[c] / output_scale."""
    if filt.channel_scales is not None:
        filter_scales = np.asarray(filt.channel_scales, dtype=np.float64)
        if filter_scales.shape != (channels,):
            raise invalid(f"{filter_scales.size} channel scales for {channels} channels", "quant.channel_scales")
    else:
        filter_scales = np.full(channels, float(filt.scale))
    if out.scale <= 0:
        raise invalid("quantized output needs a positive scale", "quant.scale")
    return quantize_multipliers(float(inp.scale) * filter_scales / float(out.scale))


def finish_quantized(acc: np.ndarray, multiplier: np.ndarray, shift: np.ndarray, out: Tensor,
                     activation: int, rescale: Callable[..., np.ndarray] | None = None) -> np.ndarray:
    """Requantize int32 accumulators (channels last), add the output zero point, clamp to the activation range
    (`rescale` replaces the requantization: a planted fault's)."""
    scaled = (rescale or requantize)(acc, multiplier, shift) + out.zero_point
    lo, hi = quantized_activation_range(activation, out.scale, out.zero_point, out.type)
    return np.clip(scaled, lo, hi).astype(numpy_dtype(out.type))


def int32_bias(bias: Tensor | None, channels: int) -> np.ndarray:
    """The int32 bias of a quantized convolution (zeros when absent)."""
    if bias is None or bias.data is None:
        return np.zeros(channels, dtype=np.int64)
    if bias.data.shape != (channels,):
        raise invalid(f"bias shape {bias.data.shape} does not match {channels} output channels", "shape.bias")
    return bias.data.astype(np.int64)


def float_bias(bias: Tensor | None, channels: int) -> np.ndarray:
    """The float32 bias of a float convolution (zeros when absent)."""
    if bias is None or bias.data is None:
        return np.zeros(channels, dtype=np.float32)
    if bias.data.shape != (channels,):
        raise invalid(f"bias shape {bias.data.shape} does not match {channels} output channels", "shape.bias")
    return to_float32(bias)


def filter_zero_point(filt: Tensor) -> int:
    """Zero point of a filter (symmetric per-channel filters have none)."""
    return 0 if filt.channel_scales is not None else int(filt.zero_point)


def storage_min(operand_type: int) -> int:
    """Smallest stored value of a quantized type (used as neutral padding for max pooling)."""
    return quant_limits(operand_type)[0]
