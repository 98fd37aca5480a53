"""Arithmetic shared by the driver's kernels: fixed-point requantization (integer multiplier + shift,
as accelerators do it), activation ranges in the quantized domain, lookup tables for 8-bit activations,
storage conversions and the small argument checks every kernel repeats."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor
from driver_under_test.errors import DriverError, invalid
from harness.hal import ErrorStatus, OperandType, numpy_dtype

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

# Operand-type groups kernels register for.
F32 = OperandType.TENSOR_FLOAT32
F16 = OperandType.TENSOR_FLOAT16
I32 = OperandType.TENSOR_INT32
Q8 = OperandType.TENSOR_QUANT8_ASYMM
Q8S = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
BOOL8 = OperandType.TENSOR_BOOL8
FLOATS = (F32, F16)
QUANT8 = (Q8, Q8S)
FLOAT_TYPES = frozenset({int(F32), int(F16)})
QUANT8_TYPES = frozenset({int(Q8), int(Q8S)})

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
# Largest result a kernel materializes: the same bound the driver's validator puts on any operand by default.
MAX_RESULT_ELEMENTS = 2**26

# Largest shifts that keep int64 intermediates exact: values are int32 after saturation, so a left shift
# beyond 32 saturates anyway and a right shift beyond 62 yields 0 or -1 before rounding.
_MAX_LEFT_SHIFT = 32
_MAX_RIGHT_SHIFT = 62


def is_quant(t: Tensor) -> bool:
    """True for quantized tensors."""
    return t.type in _ASYMM or t.type in _SYMM


def _storage(operand_type: int) -> tuple[type, int, int]:
    try:
        return _STORAGE[operand_type]
    except KeyError:
        raise invalid(f"operand type {operand_type} is not a quantized type", "exec.operand_type") from None


def quant_limits(operand_type: int) -> tuple[int, int]:
    """Inclusive storage range of a quantized type."""
    _, lo, hi = _storage(operand_type)
    return lo, hi


def quant_dtype(operand_type: int) -> type:
    """numpy storage type of a quantized operand type."""
    return _storage(operand_type)[0]


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """Express a non-negative real multiplier as (int32 multiplier in [2^30, 2^31), shift) with m * 2^shift / 2^31."""
    if not math.isfinite(real_multiplier) or real_multiplier < 0.0:
        raise invalid(f"cannot represent rescale factor {real_multiplier} in fixed point", "exec.quant_params")
    if real_multiplier == 0.0:
        return 0, 0
    mantissa, exponent = math.frexp(real_multiplier)
    q = round(mantissa * (1 << 31))
    if q == 1 << 31:
        q //= 2
        exponent += 1
    return int(q), int(exponent)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """Integer x * multiplier * 2^shift / 2^31 with rounding, the gemmlowp way, vectorized in int64.

    x is treated as int32 (saturated after a left shift, as a 32-bit accelerator register would be).
    """
    x = np.asarray(x, dtype=np.int64)
    left = min(max(shift, 0), _MAX_LEFT_SHIFT)
    right = min(max(-shift, 0), _MAX_RIGHT_SHIFT)
    if left:
        x = np.clip(x << left, INT32_MIN, INT32_MAX)
    # Saturating rounding doubling high multiply: (x * m + 2^30) / 2^31 truncated toward zero.
    prod = x * np.int64(multiplier)
    nudged = prod + np.where(prod >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    high = (nudged >> 31) + ((nudged < 0) & ((nudged & ((1 << 31) - 1)) != 0))
    if right == 0:
        return high
    return rounding_divide_by_pot(high, right)


def rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """x / 2^exponent rounded to nearest, ties away from zero."""
    exponent = min(exponent, _MAX_RIGHT_SHIFT)
    mask = np.int64((1 << exponent) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> exponent) + (remainder > threshold).astype(np.int64)


def rounding_divide(numerator: np.ndarray, denominator: int) -> np.ndarray:
    """Integer numerator / positive denominator rounded to nearest, ties away from zero."""
    n = np.asarray(numerator, dtype=np.int64)
    magnitude = (np.abs(n) * 2 + denominator) // (2 * denominator)
    return np.where(n < 0, -magnitude, magnitude)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to the nearest integer, ties away from zero (C's round()), as float."""
    x = np.asarray(x)
    r = np.round(x)
    frac = x - np.trunc(x)
    return np.where(np.abs(frac) == 0.5, np.trunc(x) + np.sign(x), r)


def _round_scalar(v: float) -> int:
    """C round() of one finite value."""
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def quantized_activation_range(code: int, scale: float, zero_point: int, operand_type: int) -> tuple[int, int]:
    """Clamp range, in stored integers, of a fused activation applied to a quantized output."""
    lo, hi = quant_limits(operand_type)

    def q(v: float) -> int:
        return zero_point + _round_scalar(v / scale)

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
    """Store float values in a quantized output (round half away from zero, saturate; NaN becomes logical zero)."""
    lo, hi = quant_limits(out.type)
    with np.errstate(all="ignore"):
        q = round_half_away(np.asarray(x, dtype=np.float64) / out.scale) + out.zero_point
    q = np.where(np.isnan(q), out.zero_point, q)
    return np.clip(q, lo, hi).astype(quant_dtype(out.type))


def saturate(x: np.ndarray, operand_type: int) -> np.ndarray:
    """Clamp integer values to a quantized type's storage range and store them."""
    lo, hi = quant_limits(operand_type)
    return np.clip(x, lo, hi).astype(quant_dtype(operand_type))


def requantize(q: np.ndarray, scale: float, zero_point: int, out: Tensor) -> np.ndarray:
    """Move stored quantized values from (scale, zero_point) to the output's parameters, in fixed point."""
    if scale == out.scale and zero_point == out.zero_point:
        return saturate(q, out.type)
    multiplier, shift = quantize_multiplier(scale / out.scale)
    centred = np.asarray(q, dtype=np.int64) - zero_point
    return saturate(multiply_by_quantized_multiplier(centred, multiplier, shift) + out.zero_point, out.type)


def requantize_to(t: Tensor, out: Tensor) -> np.ndarray:
    """A quantized tensor's values expressed with the output's scale and zero point."""
    assert t.data is not None
    return requantize(t.data, t.scale, t.zero_point, out)


@functools.lru_cache(maxsize=4096)
def lookup_table(
    fn: Callable[[np.ndarray], np.ndarray],
    in_type: int,
    in_scale: float,
    in_zero: int,
    out_type: int,
    out_scale: float,
    out_zero: int,
) -> np.ndarray:
    """The 256-entry table mapping every 8-bit input code to the quantized result of `fn` (built once, cached).

    This is how 8-bit transcendental activations run on fixed-function hardware: the table is computed when
    the quantization parameters are first seen and every execution is a gather.
    """
    lo, _ = quant_limits(in_type)
    codes = np.arange(lo, lo + 256, dtype=np.float64)
    with np.errstate(all="ignore"):
        real = fn((codes - in_zero) * in_scale)
    out = Tensor(type=out_type, shape=(256,), scale=out_scale, zero_point=out_zero)
    table = requantize_float(real, out)
    table.flags.writeable = False
    return table


def apply_table(q: np.ndarray, table: np.ndarray, in_type: int) -> np.ndarray:
    """Map 8-bit codes through a 256-entry table."""
    lo, _ = quant_limits(in_type)
    index = q.astype(np.int16) - lo if lo else q
    return table[index]


def activation_code(call: OpCall, i: int) -> int:
    """The fused activation code at input i (NONE when omitted); INVALID_ARGUMENT for an unknown code."""
    code = call.scalar(i, 0)
    if code not in (0, 1, 2, 3):
        raise invalid(f"unknown fused activation {code}", "exec.activation")
    return int(code)


def normalize_axis(axis: int, rank: int) -> int:
    """An axis in [-rank, rank) as a non-negative index; INVALID_ARGUMENT otherwise."""
    if not -rank <= axis < rank:
        raise invalid(f"axis {axis} out of range for rank {rank}", "exec.axis")
    return axis + rank if axis < 0 else axis


def check_result_size(shape: Sequence[int]) -> None:
    """Refuse a result with more than MAX_RESULT_ELEMENTS elements before allocating it (D26)."""
    count = math.prod(int(d) for d in shape)
    if count > MAX_RESULT_ELEMENTS:
        raise DriverError(
            ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT,
            f"a result of shape {tuple(shape)} has {count} elements, above {MAX_RESULT_ELEMENTS}",
            "limits.max_elements_per_operand",
        )


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The broadcast of several shapes (numpy rules, as the HAL documents); INVALID_ARGUMENT if incompatible."""
    try:
        shape = tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise invalid(f"shapes {[tuple(s) for s in shapes]} are not broadcast-compatible", "exec.broadcast") from None
    check_result_size(shape)
    return shape


def int_vector(t: Tensor | None, name: str) -> list[int]:
    """The values of a small TENSOR_INT32 parameter (axes, shapes, paddings) as Python ints."""
    if t is None or t.data is None:
        raise invalid(f"missing {name}", "exec.missing_input")
    return [int(v) for v in np.asarray(t.data).reshape(-1)]


def at_least_1d(x: np.ndarray) -> np.ndarray:
    """Tensor outputs cannot be rank 0 (empty dimensions mean unknown rank): report a scalar result as [1]."""
    return x.reshape(1) if x.ndim == 0 else x


def compute_float(x: np.ndarray) -> np.ndarray:
    """Float data in the precision kernels compute in (float16 is widened to float32)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def store(x: np.ndarray, out: Tensor) -> np.ndarray:
    """Values in the output's storage type (narrowing float32 to float16 where declared)."""
    dtype = numpy_dtype(out.type)
    return x if x.dtype == dtype else x.astype(dtype)


def required(call: OpCall, i: int) -> Tensor:
    """Input i, which must be present."""
    t = call.inputs[i] if i < len(call.inputs) else None
    if t is None or t.data is None:
        raise invalid(f"required input {i} is missing", "exec.missing_input")
    return t


def fault_active(call: OpCall, name: str) -> bool:
    """True if the device running this call was started with the named fault."""
    faults = call.options.get("faults")
    return faults is not None and faults.active(name)


def quiet(fn: Callable[[OpCall], Any]) -> Callable[[OpCall], Any]:
    """Run a kernel with floating-point exceptions masked: overflow to inf and NaN are results, not errors."""

    @functools.wraps(fn)
    def wrapped(call: OpCall) -> Any:
        with np.errstate(all="ignore"):
            return fn(call)

    return wrapped
