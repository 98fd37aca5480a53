"""Arithmetic shared by the driver's kernels: fixed-point requantization (integer multiplier + shift,
as accelerators do it), activation ranges in the quantized domain, and storage conversions."""

from __future__ import annotations

import math

import numpy as np

from driver_under_test.kernels.registry import Tensor
from harness.hal import OperandType

_ASYMM = {OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT16_ASYMM}
_SYMM = {OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT16_SYMM, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL}
_STORAGE = {
    OperandType.TENSOR_QUANT8_ASYMM: (np.uint8, 0, 255),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (np.int8, -128, 127),
    OperandType.TENSOR_QUANT8_SYMM: (np.int8, -127, 127),
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: (np.int8, -127, 127),
    OperandType.TENSOR_QUANT16_ASYMM: (np.uint16, 0, 65535),
    OperandType.TENSOR_QUANT16_SYMM: (np.int16, -32768, 32767),
}


def is_quant(t: Tensor) -> bool:
    """True for quantized tensors."""
    return t.type in _ASYMM or t.type in _SYMM


def quant_limits(operand_type: int) -> tuple[int, int]:
    """Inclusive storage range of a quantized type."""
    _, lo, hi = _STORAGE[operand_type]
    return lo, hi


def quant_dtype(operand_type: int) -> type:
    """numpy storage type of a quantized operand type."""
    return _STORAGE[operand_type][0]


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """Express a positive real multiplier as (int32 multiplier in [2^30, 2^31), shift) with m * 2^shift / 2^31."""
    if real_multiplier == 0.0:
        return 0, 0
    mantissa, exponent = math.frexp(real_multiplier)
    q = round(mantissa * (1 << 31))
    if q == 1 << 31:
        q //= 2
        exponent += 1
    return int(q), int(exponent)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """Integer x * multiplier * 2^shift / 2^31 with rounding, the gemmlowp way, vectorized in int64."""
    x = np.asarray(x, dtype=np.int64)
    left = max(shift, 0)
    right = max(-shift, 0)
    x = x << left
    # Saturating rounding doubling high multiply.
    prod = x * np.int64(multiplier)
    nudge = np.where(prod >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    high = (prod + nudge) >> 31  # floor division by 2^31 of the nudged product
    # Correct floor toward truncation for negatives (gemmlowp divides with truncation).
    high = np.where((prod + nudge < 0) & (((prod + nudge) & ((1 << 31) - 1)) != 0), high + 1, high)
    if right == 0:
        return high
    return rounding_divide_by_pot(high, right)


def rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """x / 2^exponent rounded to nearest, ties away from zero."""
    mask = np.int64((1 << exponent) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> exponent) + (remainder > threshold).astype(np.int64)


def quantized_activation_range(code: int, scale: float, zero_point: int, operand_type: int) -> tuple[int, int]:
    """Clamp range, in stored integers, of a fused activation applied to a quantized output."""
    lo, hi = quant_limits(operand_type)

    def q(v: float) -> int:
        return zero_point + int(round(v / scale))

    if code == 1:
        return max(lo, q(0.0)), hi
    if code == 2:
        return max(lo, q(-1.0)), min(hi, q(1.0))
    if code == 3:
        return max(lo, q(0.0)), min(hi, q(6.0))
    return lo, hi


def float_activation(x: np.ndarray, code: int) -> np.ndarray:
    """Apply a fused activation to float data, in place where possible."""
    if code == 1:
        return np.maximum(x, 0, out=x) if x.flags.writeable else np.maximum(x, 0)
    if code == 2:
        return np.clip(x, -1, 1)
    if code == 3:
        return np.clip(x, 0, 6)
    return x


def dequantize(t: Tensor) -> np.ndarray:
    """float32 values of a tensor (dequantized if quantized)."""
    assert t.data is not None
    if t.channel_scales is not None:
        shape = [1] * t.data.ndim
        shape[t.channel_dim] = -1
        return t.data.astype(np.float32) * t.channel_scales.astype(np.float32).reshape(shape)
    if is_quant(t):
        return (t.data.astype(np.int32) - t.zero_point).astype(np.float32) * np.float32(t.scale)
    return t.data


def requantize_float(x: np.ndarray, out: Tensor) -> np.ndarray:
    """Store float values in a quantized output (round half away from zero, saturate)."""
    lo, hi = quant_limits(out.type)
    q = np.round(x / out.scale) + out.zero_point  # np.round is half-to-even; fixed below
    exact = x / out.scale
    ties = np.abs(exact - np.trunc(exact)) == 0.5
    q = np.where(ties, np.trunc(exact) + np.sign(exact) + out.zero_point, q)
    return np.clip(q, lo, hi).astype(quant_dtype(out.type))
