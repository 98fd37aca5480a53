"""Comparisons (EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL), logical operations
(LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT) and SELECT.

Quantized comparisons compare real values: with equal quantization parameters the stored integers compare
directly; otherwise each side is the exact product (q - zero_point) * scale, which fits a double without
rounding (a 9-bit integer times a 24-bit mantissa).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from driver_under_test.backends.numpy.kernels.common import (
    BOOL8,
    FLOATS,
    I32,
    QUANT8,
    QUANT8_TYPES,
    broadcast_shape,
    quiet,
    requantize_to,
    required,
)
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.errors import invalid
from harness.hal import OperationType

_COMPARISONS: dict[OperationType, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    OperationType.EQUAL: np.equal,
    OperationType.NOT_EQUAL: np.not_equal,
    OperationType.GREATER: np.greater,
    OperationType.GREATER_EQUAL: np.greater_equal,
    OperationType.LESS: np.less,
    OperationType.LESS_EQUAL: np.less_equal,
}


def _comparable(a: Tensor, b: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Both operands in a representation whose order and equality are those of the real values."""
    if a.type in QUANT8_TYPES:
        if a.scale == b.scale and a.zero_point == b.zero_point:
            return a.data.astype(np.int16), b.data.astype(np.int16)
        return (
            (a.data.astype(np.float64) - a.zero_point) * a.scale,
            (b.data.astype(np.float64) - b.zero_point) * b.scale,
        )
    return a.data, b.data


def _make_comparison(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[OpCall], list[np.ndarray]]:
    @quiet
    def run(call: OpCall) -> list[np.ndarray]:
        a, b = required(call, 0), required(call, 1)
        if a.type != b.type:
            raise invalid(f"operand types differ: {a.type} and {b.type}", "exec.operand_type")
        broadcast_shape(a.data.shape, b.data.shape)
        x, y = _comparable(a, b)
        return [np.asarray(fn(x, y), dtype=np.bool_)]

    return run


for _op, _fn in _COMPARISONS.items():
    kernel(_op, (BOOL8, *FLOATS, I32, *QUANT8))(_make_comparison(_fn))


def _make_logical(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[OpCall], list[np.ndarray]]:
    def run(call: OpCall) -> list[np.ndarray]:
        a, b = required(call, 0), required(call, 1)
        broadcast_shape(a.data.shape, b.data.shape)
        return [fn(a.data.astype(np.bool_, copy=False), b.data.astype(np.bool_, copy=False))]

    return run


kernel(OperationType.LOGICAL_AND, (BOOL8,))(_make_logical(np.logical_and))
kernel(OperationType.LOGICAL_OR, (BOOL8,))(_make_logical(np.logical_or))


@kernel(OperationType.LOGICAL_NOT, (BOOL8,))
def logical_not_kernel(call: OpCall) -> list[np.ndarray]:
    """Element-wise negation of a boolean tensor."""
    return [np.logical_not(required(call, 0).data.astype(np.bool_, copy=False))]


@kernel(OperationType.SELECT, (BOOL8,))
def select_kernel(call: OpCall) -> list[np.ndarray]:
    """out[i] = cond[i] ? x[i] : y[i]; quantized choices are first expressed in the output's parameters."""
    cond, x, y = required(call, 0), required(call, 1), required(call, 2)
    out = call.outputs[0]
    if not (cond.data.shape == x.data.shape == y.data.shape):
        raise invalid(f"SELECT needs equal shapes, got {cond.data.shape}, {x.data.shape}, {y.data.shape}", "exec.shape")
    if x.type != y.type:
        raise invalid(f"operand types differ: {x.type} and {y.type}", "exec.operand_type")
    if x.type in QUANT8_TYPES:
        return [np.where(cond.data.astype(np.bool_, copy=False), requantize_to(x, out), requantize_to(y, out))]
    return [np.where(cond.data.astype(np.bool_, copy=False), x.data, y.data)]
