"""Element-wise arithmetic: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW and the unary math operations
(ABS, NEG, EXP, LOG, SQRT, RSQRT, SIN, FLOOR).

Binary operations broadcast NumPy-style (the HAL's "compatible dimensions"). Quantized operands may each
have their own scale and zero point: kernels work on real values and requantize into the output.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.hal import OperationType
from harness.ops.common import (
    F16,
    F32,
    I32,
    INT32,
    Q8,
    QS8,
    RANK_FROM_1,
    RANK_UP_TO_4,
    V1_0,
    V1_1,
    V1_2,
    V1_3,
    Check,
    UnspecifiedResult,
    apply_activation,
    broadcast_shape,
    broadcastable,
    checks,
    define,
    exact_int32,
    fused_activation,
    real_input,
    same_shape,
    scalar,
    store,
    tensor,
)
from harness.ops.registry import KernelContext, ShapeContext, Signature

FAMILY = "elementwise"

ArrayFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _mul_scale_rule(ctx: ShapeContext) -> list[str]:
    """MUL: a quantized output's scale must exceed the product of the input scales."""
    a, b, out = ctx.operands[0], ctx.operands[1], ctx.outputs[0]
    if out.type in (Q8, QS8) and a is not None and b is not None:
        if not np.float32(out.scale) > np.float32(a.scale) * np.float32(b.scale):
            return [f"output scale {out.scale} must be > input scales product {a.scale} * {b.scale}"]
    return []


def _binary_signatures(
    typings: list[tuple[int, str]], activation: bool, rank: tuple[int, int], extra: Check | None = None
) -> list[Signature]:
    """One signature per typing: two same-typed tensors (+ fused activation) -> one tensor."""
    sigs = []
    for t, version in typings:
        inputs = [tensor("input0", t, rank), tensor("input1", t, rank)]
        if activation:
            inputs.append(scalar("activation", INT32))
        check = checks(
            broadcastable(0, 1),
            fused_activation(2, none_only=(t == I32)) if activation else None,
            extra if t in (Q8, QS8) else None,
        )
        sigs.append(Signature(inputs=tuple(inputs), outputs=(tensor("output", t, rank),), version=version, check=check))
    return sigs


def _binary_kernel(real_fn: ArrayFn, int_fn: ArrayFn | None = None, activation: bool = True):
    """Kernel: real_fn on real values (int_fn on exact integers for TENSOR_INT32), then activation."""

    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        if ctx.output_operands[0].type == I32 and int_fn is not None:
            a = ctx.inputs[0].astype(np.int64)
            b = ctx.inputs[1].astype(np.int64)
            return [exact_int32(int_fn(a, b))]
        out = real_fn(real_input(ctx, 0), real_input(ctx, 1))
        if activation:
            out = apply_activation(out, ctx.scalar(2, 0))
        return [store(ctx, out)]

    return kernel


def _floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Python-style floor division of integers; division by zero is left unspecified by the HAL."""
    if np.any(b == 0):
        raise UnspecifiedResult("integer division by zero")
    return np.floor_divide(a, b)


_ARITH_TYPINGS = {
    OperationType.ADD: [(F32, V1_0), (Q8, V1_0), (F16, V1_2), (QS8, V1_3), (I32, V1_3)],
    OperationType.MUL: [(F32, V1_0), (Q8, V1_0), (F16, V1_2), (QS8, V1_3), (I32, V1_3)],
    OperationType.SUB: [(F32, V1_1), (F16, V1_2), (Q8, V1_2), (QS8, V1_3), (I32, V1_3)],
    OperationType.DIV: [(F32, V1_1), (F16, V1_2), (I32, V1_3)],
}
_ARITH_FNS: dict[OperationType, tuple[ArrayFn, ArrayFn]] = {
    OperationType.ADD: (np.add, np.add),
    OperationType.SUB: (np.subtract, np.subtract),
    OperationType.MUL: (np.multiply, np.multiply),
    OperationType.DIV: (np.divide, _floor_div),
}
# Quantized ADD and SUB in the HAL's reference arithmetic (as in TFLite's kernels) rescale both inputs to twice
# the larger input scale with 20 bits of headroom: the smaller-scaled input is resolved to 2^-20 of that, so an
# output scale below max(input scales) / 2^19 leaves results (where the larger-scaled input sits at its zero
# point) off by more than a step in any implementation that follows it. Generation keeps output scales above that.
_ADD_HEADROOM = {"rescale_headroom": 19}
_ARITH_HINTS = {
    OperationType.ADD: {"input_range": (-10.0, 10.0), **_ADD_HEADROOM},
    OperationType.SUB: {"input_range": (-10.0, 10.0), **_ADD_HEADROOM},
    OperationType.MUL: {"input_range": (-10.0, 10.0)},
    # Denominators kept away from zero: a float quotient near 1/0 is meaningless to compare.
    OperationType.DIV: {"input_range": (-10.0, 10.0), "input_ranges": {1: (0.5, 10.0)}},
}

for _op, _typings in _ARITH_TYPINGS.items():
    _real_fn, _int_fn = _ARITH_FNS[_op]
    define(
        _op,
        FAMILY,
        _binary_signatures(
            _typings, activation=True, rank=RANK_UP_TO_4, extra=_mul_scale_rule if _op == OperationType.MUL else None
        ),
        shape=broadcast_shape,
        kernel=_binary_kernel(_real_fn, _int_fn),
        hints={**_ARITH_HINTS[_op], "int_range": (-1000, 1000), "params": {2: "fused_activation"}},
    )

_MINMAX_TYPINGS = [(F16, V1_2), (F32, V1_2), (I32, V1_2), (Q8, V1_2), (QS8, V1_3)]
for _op, _fn in ((OperationType.MAXIMUM, np.maximum), (OperationType.MINIMUM, np.minimum)):
    define(
        _op,
        FAMILY,
        _binary_signatures(_MINMAX_TYPINGS, activation=False, rank=RANK_FROM_1),
        shape=broadcast_shape,
        kernel=_binary_kernel(_fn, _fn, activation=False),
        hints={"input_range": (-10.0, 10.0)},
    )

define(
    OperationType.POW,
    FAMILY,
    _binary_signatures([(F16, V1_2), (F32, V1_2)], activation=False, rank=RANK_FROM_1),
    shape=broadcast_shape,
    kernel=_binary_kernel(np.power, activation=False),
    # A positive base keeps fractional exponents real.
    hints={"input_ranges": {0: (0.1, 5.0), 1: (-3.0, 3.0)}},
)


# ----------------------------------------------------------------------------------------------- unary


def _unary_signatures(typings: list[tuple[int, str]], rank: tuple[int, int]) -> list[Signature]:
    """One signature per typing: one tensor -> one tensor of the same type."""
    return [
        Signature(inputs=(tensor("input", t, rank),), outputs=(tensor("output", t, rank),), version=version)
        for t, version in typings
    ]


def _unary_kernel(
    real_fn: Callable[[np.ndarray], np.ndarray], int_fn: Callable[[np.ndarray], np.ndarray] | None = None
):
    """Kernel: real_fn on real values (int_fn on exact integers for TENSOR_INT32)."""

    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        if ctx.output_operands[0].type == I32 and int_fn is not None:
            return [exact_int32(int_fn(ctx.inputs[0].astype(np.int64)))]
        return [store(ctx, real_fn(real_input(ctx, 0)))]

    return kernel


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


_FLOATS_1_2 = [(F16, V1_2), (F32, V1_2)]
_UNARY = [
    # op, typings, rank, real function, integer function, input range
    (OperationType.ABS, [*_FLOATS_1_2, (I32, V1_3)], RANK_FROM_1, np.abs, np.abs, (-10.0, 10.0)),
    (OperationType.NEG, [*_FLOATS_1_2, (I32, V1_2)], RANK_FROM_1, np.negative, np.negative, (-10.0, 10.0)),
    (OperationType.EXP, _FLOATS_1_2, RANK_FROM_1, np.exp, None, (-5.0, 5.0)),
    (OperationType.LOG, _FLOATS_1_2, RANK_FROM_1, np.log, None, (0.01, 100.0)),
    (OperationType.SQRT, _FLOATS_1_2, RANK_FROM_1, np.sqrt, None, (0.0, 100.0)),
    (OperationType.RSQRT, _FLOATS_1_2, RANK_FROM_1, _rsqrt, None, (0.01, 100.0)),
    (OperationType.SIN, _FLOATS_1_2, RANK_FROM_1, np.sin, None, (-10.0, 10.0)),
    (OperationType.FLOOR, [(F32, V1_0), (F16, V1_2)], RANK_UP_TO_4, np.floor, None, (-10.0, 10.0)),
]

for _op, _typings, _rank, _real_fn, _int_fn, _range in _UNARY:
    _hints: dict = {"input_range": _range}
    if _int_fn is not None:
        _hints["int_range"] = (-1000, 1000)
    define(
        _op,
        FAMILY,
        _unary_signatures(_typings, _rank),
        shape=same_shape,
        kernel=_unary_kernel(_real_fn, _int_fn),
        hints=_hints,
    )
