"""Normalizations: L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and INSTANCE_NORMALIZATION."""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import (
    FLOAT_TYPES,
    QUANT8_TYPES,
    from_nhwc,
    quantize_multipliers,
    requantize,
    store_float,
    to_float32,
    to_nhwc,
)
from driver_under_test.backends.numpy.kernels.common import quant_limits, quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.errors import invalid
from harness.hal import OperationType, numpy_dtype

# A zero vector is left at zero rather than divided by zero.
_L2_EPSILON = np.float32(1e-6)


def _axis(call: OpCall, index: int, rank: int) -> int:
    """The optional axis input, default -1, normalized to [0, rank)."""
    axis = int(call.scalar(index, -1))
    if not -rank <= axis < rank:
        raise invalid(f"axis {axis} out of range for rank {rank}", "param.axis")
    return axis % rank


def _l2_quant(x: np.ndarray, inp: Tensor, out: Tensor) -> np.ndarray:
    """Quantized L2 normalization along the last axis (the output scale is 1/128 by definition)."""
    diff = x.astype(np.int32) - np.int32(inp.zero_point)
    squares = np.einsum("...k,...k->...", diff.astype(np.int64), diff.astype(np.int64))
    # Per vector, one fixed-point multiplier for 1 / (norm * output_scale) (128 / norm for the required 1/128
    # output scale), applied to the raw differences so the result is rounded once.
    if out.scale <= 0:
        raise invalid("quantized output needs a positive scale", "quant.scale")
    norm = np.sqrt(np.maximum(squares, 1).astype(np.float64))
    real = np.where(squares > 0, 1.0 / (norm * out.scale), 0.0)
    multiplier, shift = quantize_multipliers(real)
    scaled = requantize(diff.astype(np.int64), multiplier[..., None], shift[..., None])
    lo, hi = quant_limits(out.type)
    return np.clip(scaled + out.zero_point, lo, hi).astype(numpy_dtype(out.type))


@kernel(OperationType.L2_NORMALIZATION, (*FLOAT_TYPES, *QUANT8_TYPES))
@quiet
def l2_normalization(call: OpCall) -> list[np.ndarray]:
    """Divide each vector along `axis` by its L2 norm."""
    inp, out = call.inputs[0], call.outputs[0]
    if inp.data.ndim == 0:
        raise invalid("input must have rank 1 or more", "shape.rank")
    axis = _axis(call, 1, inp.data.ndim)
    x = np.moveaxis(inp.data, axis, -1)
    if inp.type in QUANT8_TYPES:
        result = _l2_quant(x, inp, out)
    else:
        xf = x.astype(np.float32)
        norm = np.sqrt(np.einsum("...k,...k->...", xf, xf))
        result = store_float(xf / np.maximum(norm, _L2_EPSILON)[..., None], out)
    return [np.ascontiguousarray(np.moveaxis(result, -1, axis))]


@kernel(OperationType.LOCAL_RESPONSE_NORMALIZATION, FLOAT_TYPES)
@quiet
def local_response_normalization(call: OpCall) -> list[np.ndarray]:
    """output = input / (bias + alpha * sum of squares within depth_radius) ^ beta, along `axis`."""
    inp, out = call.inputs[0], call.outputs[0]
    if inp.data.ndim == 0:
        raise invalid("input must have rank 1 or more", "shape.rank")
    radius = int(call.scalar(1))
    bias, alpha, beta = (np.float32(call.scalar(i)) for i in (2, 3, 4))
    if radius < 0:
        raise invalid(f"radius must be non-negative, got {radius}", "param.radius")
    axis = _axis(call, 5, inp.data.ndim)
    x = np.moveaxis(to_float32(inp), axis, -1)
    depth = x.shape[-1]
    squares = x * x
    window = squares.copy()
    # Offsets beyond the depth contribute nothing, so at most depth - 1 shifts in each direction.
    for offset in range(1, min(radius, depth - 1) + 1):
        window[..., offset:] += squares[..., :-offset]
        window[..., :-offset] += squares[..., offset:]
    result = x / np.power(bias + alpha * window, beta)
    return [np.ascontiguousarray(np.moveaxis(store_float(result, out), -1, axis))]


@kernel(OperationType.INSTANCE_NORMALIZATION, FLOAT_TYPES)
@quiet
def instance_normalization(call: OpCall) -> list[np.ndarray]:
    """Normalize each (batch, channel) plane to zero mean and unit variance, then scale by gamma, add beta."""
    inp, out = call.inputs[0], call.outputs[0]
    gamma, beta, epsilon = (np.float32(call.scalar(i)) for i in (1, 2, 3))
    nchw = bool(call.scalar(4, False))
    x = to_nhwc(to_float32(inp), nchw)
    mean = x.mean(axis=(1, 2), keepdims=True, dtype=np.float32)
    centered = x - mean
    variance = (centered * centered).mean(axis=(1, 2), keepdims=True, dtype=np.float32)
    result = centered * (gamma / np.sqrt(variance + epsilon)) + beta
    return [from_nhwc(store_float(result, out), nchw)]
