"""Numeric helpers shared by the reference kernels: real values of stored operands, requantization,
fused activations. Plain float64 arithmetic: these are meant to be obviously correct, not fast."""

from __future__ import annotations

import numpy as np

from harness.hal import FusedActivation, Operand, OperandType, SymmPerChannelQuantParams, numpy_dtype

FLOAT_TYPES = frozenset({OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.FLOAT32, OperandType.FLOAT16})
QUANT_ASYMM_TYPES = frozenset(
    {OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT16_ASYMM}
)
QUANT_SYMM_TYPES = frozenset(
    {OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT16_SYMM, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL}
)


def is_float(operand: Operand) -> bool:
    """True for float32/float16 operands, scalar or tensor."""
    return operand.type in FLOAT_TYPES


def is_quantized(operand: Operand) -> bool:
    """True for any quantized tensor type."""
    return operand.type in QUANT_ASYMM_TYPES or operand.type in QUANT_SYMM_TYPES


def to_real(value: np.ndarray, operand: Operand) -> np.ndarray:
    """The real (float64) values a stored tensor represents: dequantized when quantized."""
    data = np.asarray(value)
    if isinstance(operand.extra_params, SymmPerChannelQuantParams):
        scales = np.asarray(operand.extra_params.scales, dtype=np.float64)
        shape = [1] * data.ndim
        shape[operand.extra_params.channel_dim] = -1
        return data.astype(np.float64) * scales.reshape(shape)
    if is_quantized(operand):
        return (data.astype(np.float64) - operand.zero_point) * operand.scale
    return data.astype(np.float64)


def type_range(operand_type: int) -> tuple[int, int]:
    """Inclusive integer range of an integer-stored operand type."""
    info = np.iinfo(numpy_dtype(operand_type))
    return int(info.min), int(info.max)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to nearest, ties away from zero (C's round())."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def from_real(real: np.ndarray, operand: Operand) -> np.ndarray:
    """Store real values in the operand's type: quantize (round, saturate) or cast."""
    dtype = numpy_dtype(operand.type)
    real = np.asarray(real, dtype=np.float64)
    if is_quantized(operand):
        lo, hi = type_range(operand.type)
        q = round_half_away(real / operand.scale) + operand.zero_point
        return np.clip(q, lo, hi).astype(dtype)
    if dtype.kind in "iu":
        lo, hi = type_range(operand.type)
        return np.clip(np.trunc(real), lo, hi).astype(dtype)
    if dtype.kind == "b":
        return real.astype(bool)
    return real.astype(dtype)


def activation_bounds(code: int) -> tuple[float, float]:
    """Real-valued clamp range of a fused activation code."""
    return {
        FusedActivation.NONE: (-np.inf, np.inf),
        FusedActivation.RELU: (0.0, np.inf),
        FusedActivation.RELU1: (-1.0, 1.0),
        FusedActivation.RELU6: (0.0, 6.0),
    }[FusedActivation(code)]


def apply_activation(real: np.ndarray, code: int) -> np.ndarray:
    """Apply a fused activation to real values."""
    lo, hi = activation_bounds(code)
    return np.clip(real, lo, hi)
