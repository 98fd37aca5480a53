"""Comparisons (EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL), logical operations
(LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT) and SELECT.

Comparisons broadcast and compare real values, so quantized inputs with different scales or zero points
compare by what they represent. (q - zeroPoint) * scale is exact in float64 for 8-bit data and a float32
scale, so the comparison is exact.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.hal import OperationType
from harness.ops.common import (
    BOOL8,
    F16,
    F32,
    I32,
    Q8,
    QS8,
    RANK_FROM_1,
    V1_2,
    V1_3,
    broadcast_shape,
    broadcastable,
    define,
    real_input,
    requantize,
    same_shape,
    shapes_equal,
    store,
    tensor,
)
from harness.ops.registry import KernelContext, Signature

FAMILY = "comparison"

_COMPARE_TYPINGS = [(BOOL8, V1_2), (F16, V1_2), (F32, V1_2), (I32, V1_2), (Q8, V1_2), (QS8, V1_3)]
_COMPARISONS: dict[OperationType, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    OperationType.EQUAL: np.equal,
    OperationType.NOT_EQUAL: np.not_equal,
    OperationType.GREATER: np.greater,
    OperationType.GREATER_EQUAL: np.greater_equal,
    OperationType.LESS: np.less,
    OperationType.LESS_EQUAL: np.less_equal,
}


def _compare_kernel(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        # Booleans compare as 0/1 and int32 exactly in float64 (|x| < 2**53).
        return [np.asarray(fn(real_input(ctx, 0), real_input(ctx, 1)), dtype=bool)]

    return kernel


for _op, _fn in _COMPARISONS.items():
    define(
        _op,
        FAMILY,
        [
            Signature(
                inputs=(tensor("input0", t, RANK_FROM_1), tensor("input1", t, RANK_FROM_1)),
                outputs=(tensor("output", BOOL8, RANK_FROM_1),),
                version=version,
                check=broadcastable(0, 1),
            )
            for t, version in _COMPARE_TYPINGS
        ],
        shape=broadcast_shape,
        kernel=_compare_kernel(_fn),
        # A small integer grid makes equal values (the interesting case) likely.
        hints={"input_range": (-3.0, 3.0), "int_range": (-3, 3)},
    )


def _logical_kernel(fn: Callable[..., np.ndarray]):
    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        return [np.asarray(fn(*(ctx.inputs[i].astype(bool) for i in range(len(ctx.inputs)))), dtype=bool)]

    return kernel


for _op, _fn in ((OperationType.LOGICAL_AND, np.logical_and), (OperationType.LOGICAL_OR, np.logical_or)):
    define(
        _op,
        FAMILY,
        [
            Signature(
                inputs=(tensor("input0", BOOL8, RANK_FROM_1), tensor("input1", BOOL8, RANK_FROM_1)),
                outputs=(tensor("output", BOOL8, RANK_FROM_1),),
                version=V1_2,
                check=broadcastable(0, 1),
            )
        ],
        shape=broadcast_shape,
        kernel=_logical_kernel(_fn),
    )

define(
    OperationType.LOGICAL_NOT,
    FAMILY,
    [
        Signature(
            inputs=(tensor("input", BOOL8, RANK_FROM_1),),
            outputs=(tensor("output", BOOL8, RANK_FROM_1),),
            version=V1_2,
        )
    ],
    shape=same_shape,
    kernel=_logical_kernel(np.logical_not),
)


def _select_kernel(ctx: KernelContext) -> list[np.ndarray]:
    cond = ctx.inputs[0].astype(bool)
    out = ctx.output_operands[0]
    if out.type in (Q8, QS8):
        # Each branch may have its own quantization: choose by real value, then requantize.
        return [store(ctx, np.where(cond, real_input(ctx, 1), real_input(ctx, 2)))]
    a = requantize(ctx.inputs[1], ctx.input_operands[1], out)
    b = requantize(ctx.inputs[2], ctx.input_operands[2], out)
    return [np.where(cond, a, b)]


define(
    OperationType.SELECT,
    FAMILY,
    [
        Signature(
            inputs=(
                tensor("condition", BOOL8, RANK_FROM_1),
                tensor("input1", t, RANK_FROM_1),
                tensor("input2", t, RANK_FROM_1),
            ),
            outputs=(tensor("output", t, RANK_FROM_1),),
            version=version,
            check=shapes_equal(0, 1, 2),
        )
        for t, version in [(F16, V1_2), (F32, V1_2), (I32, V1_2), (Q8, V1_2), (QS8, V1_3)]
    ],
    shape=lambda ctx: same_shape(ctx, 1),
    kernel=_select_kernel,
    hints={"input_range": (-10.0, 10.0)},
)
