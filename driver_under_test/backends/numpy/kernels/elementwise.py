"""Element-wise arithmetic: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW and the unary math operations
(ABS, NEG, EXP, LOG, SQRT, RSQRT, SIN, FLOOR).

Inputs broadcast with numpy rules. Float16 computes in float32 and rounds once at the end. Quantized
ADD/SUB rescale both inputs to a shared fixed-point scale (20 bits of headroom) before adding; quantized
MUL multiplies the centred integers and requantizes once; MAXIMUM/MINIMUM requantize both inputs to the
output's parameters, where the comparison is monotonic.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from driver_under_test.backends.numpy.kernels.common import (
    FLOAT_TYPES,
    FLOATS,
    I32,
    QUANT8,
    QUANT8_TYPES,
    activation_code,
    broadcast_shape,
    compute_float,
    fault_active,
    float_activation,
    multiply_by_quantized_multiplier,
    quant_dtype,
    quantize_multiplier,
    quantized_activation_range,
    quiet,
    requantize_to,
    required,
    store,
)
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.errors import invalid
from driver_under_test.faults import define
from harness.hal import OperationType

# Headroom for quantized addition: 8-bit inputs shifted left by 20 bits stay clear of int32 overflow
# after rescaling, while keeping 20 fractional bits of precision.
_ADD_LEFT_SHIFT = 20

_INT_ACTIVATION_BOUNDS = {1: (0, None), 2: (-1, 1), 3: (0, 6)}

BROADCAST_WRONG_AXIS = define(
    "broadcast_wrong_axis",
    "execution",
    "Float ADD/SUB/MUL/DIV take a bias-style fast path whenever the second operand has exactly as many elements "
    "as the first operand's innermost dimension and the result keeps the first operand's shape: the second "
    "operand is then broadcast along the innermost axis even when its own shape puts its elements on another "
    "axis, e.g. b [N, 1] against a [N, N] adds b[j] instead of b[i] to a[i, j] (breaks the HAL's numpy "
    "broadcasting rule; wrong values whenever b's elements differ).",
).name
QUANT_ADD_USES_FIRST_ZERO_POINT = define(
    "quant_add_uses_first_zero_point",
    "execution",
    "Quantized (8-bit) ADD and SUB subtract the first input's zero point from both inputs (a copy-paste slip), "
    "so the second input is off by (zeroPoint1 - zeroPoint0) * scale1 in real terms whenever the two zero "
    "points differ (breaks ADD/SUB semantics; errors of many quantization steps, far above the 1-step tolerance).",
).name


def _operands(call: OpCall) -> tuple[Tensor, Tensor]:
    """The two tensor operands of a binary operation, checked for broadcast compatibility."""
    a, b = required(call, 0), required(call, 1)
    if a.type != b.type:
        raise invalid(f"operand types differ: {a.type} and {b.type}", "exec.operand_type")
    broadcast_shape(a.data.shape, b.data.shape)
    return a, b


def _int_activation(x: np.ndarray, code: int) -> np.ndarray:
    """A fused activation on integer data (the HAL requires NONE for TENSOR_INT32, other codes clamp)."""
    if code not in _INT_ACTIVATION_BOUNDS:
        return x
    lo, hi = _INT_ACTIVATION_BOUNDS[code]
    return np.clip(x, lo, hi).astype(x.dtype)


def _innermost_vector(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> bool:
    """Whether the faulty fast path takes b for a vector along a's innermost axis (it is not one)."""
    if not a_shape or not b_shape or b_shape[-1] == a_shape[-1]:
        return False
    return math.prod(b_shape) == a_shape[-1] and broadcast_shape(a_shape, b_shape) == tuple(a_shape)


def _float_binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], call: OpCall) -> list[np.ndarray]:
    a, b = _operands(call)
    xa, xb = compute_float(a.data), compute_float(b.data)
    if fault_active(call, BROADCAST_WRONG_AXIS) and _innermost_vector(xa.shape, xb.shape):
        xb = xb.reshape(-1)
    result = fn(xa, xb)
    return [store(float_activation(result, activation_code(call, 2)), call.outputs[0])]


def _int_binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], call: OpCall) -> list[np.ndarray]:
    a, b = _operands(call)
    result = fn(a.data.astype(np.int32, copy=False), b.data.astype(np.int32, copy=False))
    return [_int_activation(np.asarray(result, dtype=np.int32), activation_code(call, 2))]


def _clamp_quant(acc: np.ndarray, call: OpCall) -> np.ndarray:
    """Add the output zero point, clamp to the fused activation's range and store."""
    out = call.outputs[0]
    lo, hi = quantized_activation_range(activation_code(call, 2), out.scale, out.zero_point, out.type)
    return np.clip(acc + out.zero_point, lo, hi).astype(quant_dtype(out.type))


def _quant_add_sub(call: OpCall, sign: int) -> list[np.ndarray]:
    a, b = _operands(call)
    out = call.outputs[0]
    twice_max = 2.0 * max(a.scale, b.scale)
    m_a, s_a = quantize_multiplier(a.scale / twice_max)
    m_b, s_b = quantize_multiplier(b.scale / twice_max)
    m_out, s_out = quantize_multiplier(twice_max / ((1 << _ADD_LEFT_SHIFT) * out.scale))
    scaled_a = multiply_by_quantized_multiplier((a.data.astype(np.int64) - a.zero_point) << _ADD_LEFT_SHIFT, m_a, s_a)
    b_zero = a.zero_point if fault_active(call, QUANT_ADD_USES_FIRST_ZERO_POINT) else b.zero_point
    scaled_b = multiply_by_quantized_multiplier((b.data.astype(np.int64) - b_zero) << _ADD_LEFT_SHIFT, m_b, s_b)
    total = scaled_a + scaled_b if sign > 0 else scaled_a - scaled_b
    return [_clamp_quant(multiply_by_quantized_multiplier(total, m_out, s_out), call)]


def _quant_mul(call: OpCall) -> list[np.ndarray]:
    a, b = _operands(call)
    out = call.outputs[0]
    product = (a.data.astype(np.int64) - a.zero_point) * (b.data.astype(np.int64) - b.zero_point)
    multiplier, shift = quantize_multiplier(a.scale * b.scale / out.scale)
    return [_clamp_quant(multiply_by_quantized_multiplier(product, multiplier, shift), call)]


def _floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer floor division; a zero divisor yields 0 instead of trapping."""
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.floor_divide(a, safe))


# op -> (float function, int32 function or None, quantized implementation or None)
_ARITHMETIC: dict[OperationType, tuple[Callable, Callable | None, Callable[[OpCall], list[np.ndarray]] | None]] = {
    OperationType.ADD: (np.add, np.add, lambda call: _quant_add_sub(call, +1)),
    OperationType.SUB: (np.subtract, np.subtract, lambda call: _quant_add_sub(call, -1)),
    OperationType.MUL: (np.multiply, np.multiply, _quant_mul),
    OperationType.DIV: (np.divide, _floor_divide, None),
}


def _make_arithmetic(op: OperationType) -> Callable[[OpCall], list[np.ndarray]]:
    float_fn, int_fn, quant_fn = _ARITHMETIC[op]

    @quiet
    def run(call: OpCall) -> list[np.ndarray]:
        t = required(call, 0).type
        if t in FLOAT_TYPES:
            return _float_binary(float_fn, call)
        if t == I32 and int_fn is not None:
            return _int_binary(int_fn, call)
        if t in QUANT8_TYPES and quant_fn is not None:
            return quant_fn(call)
        raise invalid(f"{op.name} does not support operand type {t}", "exec.operand_type")

    run.__name__ = f"{op.name.lower()}_kernel"
    return run


for _op in _ARITHMETIC:
    kernel(_op, (*FLOATS, I32, *(QUANT8 if _ARITHMETIC[_op][2] else ())))(_make_arithmetic(_op))


def _make_extremum(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[OpCall], list[np.ndarray]]:
    @quiet
    def run(call: OpCall) -> list[np.ndarray]:
        a, b = _operands(call)
        out = call.outputs[0]
        if a.type in QUANT8_TYPES:
            # Requantization is monotonic, so the extremum of the requantized values is the requantized extremum.
            return [fn(requantize_to(a, out), requantize_to(b, out))]
        if a.type in FLOAT_TYPES:
            return [store(fn(compute_float(a.data), compute_float(b.data)), out)]
        return [fn(a.data, b.data)]

    return run


kernel(OperationType.MAXIMUM, (*FLOATS, I32, *QUANT8))(_make_extremum(np.maximum))
kernel(OperationType.MINIMUM, (*FLOATS, I32, *QUANT8))(_make_extremum(np.minimum))


@kernel(OperationType.POW, FLOATS)
@quiet
def pow_kernel(call: OpCall) -> list[np.ndarray]:
    """base ** exponent, element-wise with broadcasting."""
    base, exponent = required(call, 0), required(call, 1)
    broadcast_shape(base.data.shape, exponent.data.shape)
    return [store(np.power(compute_float(base.data), compute_float(exponent.data)), call.outputs[0])]


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(np.sqrt(x))


# op -> (function, supported primary types); integer-capable functions keep int32 data as int32.
_UNARY: dict[OperationType, tuple[Callable[[np.ndarray], np.ndarray], tuple]] = {
    OperationType.ABS: (np.abs, (*FLOATS, I32)),
    OperationType.NEG: (np.negative, (*FLOATS, I32)),
    OperationType.EXP: (np.exp, FLOATS),
    OperationType.LOG: (np.log, FLOATS),
    OperationType.SQRT: (np.sqrt, FLOATS),
    OperationType.RSQRT: (_rsqrt, FLOATS),
    OperationType.SIN: (np.sin, FLOATS),
    OperationType.FLOOR: (np.floor, FLOATS),
}


def _make_unary(op: OperationType) -> Callable[[OpCall], list[np.ndarray]]:
    fn, types = _UNARY[op]
    allowed = frozenset(int(t) for t in types)

    @quiet
    def run(call: OpCall) -> list[np.ndarray]:
        x = required(call, 0)
        if x.type not in allowed:
            raise invalid(f"{op.name} does not support operand type {x.type}", "exec.operand_type")
        if x.type in FLOAT_TYPES:
            return [store(fn(compute_float(x.data)), call.outputs[0])]
        return [fn(x.data).astype(np.int32, copy=False)]

    run.__name__ = f"{op.name.lower()}_kernel"
    return run


for _op, (_fn, _types) in _UNARY.items():
    kernel(_op, _types)(_make_unary(_op))
