"""Activation functions: RELU, RELU1, RELU6, LOGISTIC, TANH, ELU, HARD_SWISH, PRELU, SOFTMAX, LOG_SOFTMAX.

Kernels evaluate the HAL's formula on real values and quantize into the output operand, whose scale and
zero point are fixed by the HAL for LOGISTIC, TANH and SOFTMAX.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.hal import OperationType
from harness.ops.common import (
    F16,
    F32,
    FLOAT_SCALAR_OF,
    INT32,
    Q8,
    QS8,
    RANK_FROM_1,
    RANK_UP_TO_4,
    V1_0,
    V1_2,
    V1_3,
    Check,
    axis_in_range,
    broadcast_shape,
    broadcastable,
    checks,
    define,
    fixed_output_quant,
    normalize_axis,
    real_input,
    same_quant_as_input,
    same_shape,
    scalar,
    scalar_at_least,
    store,
    tensor,
)
from harness.ops.registry import KernelContext, Signature

FAMILY = "activations"

_CLASSIC = [(F32, V1_0), (Q8, V1_0), (F16, V1_2), (QS8, V1_3)]  # typings of the HAL 1.0 activations
# Output quantization the HAL fixes, per output type.
_SIGMOID_QUANT = {Q8: (1.0 / 256, 0), QS8: (1.0 / 256, -128)}
_TANH_QUANT = {Q8: (1.0 / 128, 128), QS8: (1.0 / 128, 0)}


def _fixed_quant(table: dict[int, tuple[float, int]], t: int) -> Check | None:
    return fixed_output_quant(*table[t]) if t in table else None


def _unary_signatures(
    typings: list[tuple[int, str]], rank: tuple[int, int], check_for: Callable[[int], Check | None]
) -> list[Signature]:
    return [
        Signature(
            inputs=(tensor("input", t, rank),),
            outputs=(tensor("output", t, rank),),
            version=version,
            check=check_for(t),
        )
        for t, version in typings
    ]


def _elementwise_kernel(fn: Callable[[np.ndarray], np.ndarray]):
    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        return [store(ctx, fn(real_input(ctx, 0)))]

    return kernel


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _hard_swish(x: np.ndarray) -> np.ndarray:
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


_CLAMPS = {
    OperationType.RELU: (0.0, np.inf),
    OperationType.RELU1: (-1.0, 1.0),
    OperationType.RELU6: (0.0, 6.0),
}
for _op, (_lo, _hi) in _CLAMPS.items():
    define(
        _op,
        FAMILY,
        _unary_signatures(_CLASSIC, RANK_UP_TO_4, lambda t: same_quant_as_input()),
        shape=same_shape,
        kernel=_elementwise_kernel(lambda x, lo=_lo, hi=_hi: np.clip(x, lo, hi)),
        hints={"input_range": (-10.0, 10.0)},
    )

define(
    OperationType.LOGISTIC,
    FAMILY,
    _unary_signatures(_CLASSIC, RANK_UP_TO_4, lambda t: _fixed_quant(_SIGMOID_QUANT, t)),
    shape=same_shape,
    kernel=_elementwise_kernel(_sigmoid),
    hints={"input_range": (-10.0, 10.0)},
)

define(
    OperationType.TANH,
    FAMILY,
    _unary_signatures(
        [(F32, V1_0), (F16, V1_2), (Q8, V1_2), (QS8, V1_3)], RANK_UP_TO_4, lambda t: _fixed_quant(_TANH_QUANT, t)
    ),
    shape=same_shape,
    kernel=_elementwise_kernel(np.tanh),
    hints={"input_range": (-5.0, 5.0)},
)

define(
    OperationType.HARD_SWISH,
    FAMILY,
    _unary_signatures([(F16, V1_3), (F32, V1_3), (Q8, V1_3), (QS8, V1_3)], RANK_FROM_1, lambda t: None),
    shape=same_shape,
    kernel=_elementwise_kernel(_hard_swish),
    hints={"input_range": (-6.0, 6.0)},
)


def _elu_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, alpha = real_input(ctx, 0), ctx.scalar(1)
    return [store(ctx, np.maximum(0.0, x) + np.minimum(0.0, alpha * (np.exp(x) - 1.0)))]


define(
    OperationType.ELU,
    FAMILY,
    [
        Signature(
            inputs=(tensor("input", t, RANK_FROM_1), scalar("alpha", FLOAT_SCALAR_OF[t])),
            outputs=(tensor("output", t, RANK_FROM_1),),
            version=V1_3,
        )
        for t in (F16, F32)
    ],
    shape=same_shape,
    kernel=_elu_kernel,
    hints={"input_range": (-5.0, 5.0), "params": {1: (0.1, 2.0)}},
)


def _prelu_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, alpha = real_input(ctx, 0), real_input(ctx, 1)
    return [store(ctx, np.where(x >= 0.0, x, alpha * x))]


define(
    OperationType.PRELU,
    FAMILY,
    [
        Signature(
            inputs=(tensor("input", t, RANK_FROM_1), tensor("alpha", t, RANK_FROM_1)),
            outputs=(tensor("output", t, RANK_FROM_1),),
            version=version,
            check=broadcastable(0, 1),
        )
        for t, version in [(F16, V1_2), (F32, V1_2), (Q8, V1_2), (QS8, V1_3)]
    ],
    shape=broadcast_shape,
    kernel=_prelu_kernel,
    hints={"input_range": (-10.0, 10.0), "input_ranges": {1: (-2.0, 2.0)}},
)


# ----------------------------------------------------------------------------------------------- softmax


def _softmax_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, beta = real_input(ctx, 0), ctx.scalar(1)
    axis = normalize_axis(ctx.scalar(2, -1), x.ndim)
    z = (x - np.max(x, axis=axis, keepdims=True)) * beta
    e = np.exp(z)
    return [store(ctx, e / np.sum(e, axis=axis, keepdims=True))]


def _log_softmax_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, beta = real_input(ctx, 0), ctx.scalar(1)
    axis = normalize_axis(ctx.scalar(2), x.ndim)
    z = x * beta
    z = z - np.max(z, axis=axis, keepdims=True)  # same result as the HAL formula, without overflow
    return [store(ctx, z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True)))]


define(
    OperationType.SOFTMAX,
    FAMILY,
    [
        Signature(
            inputs=(
                tensor("input", t, RANK_UP_TO_4),
                scalar("beta", FLOAT_SCALAR_OF.get(t, FLOAT_SCALAR_OF[F32])),
                scalar("axis", INT32, optional=True),
            ),
            outputs=(tensor("output", t, RANK_UP_TO_4),),
            min_inputs=2,
            version=version,
            check=checks(
                scalar_at_least(1, 0.0, "beta", strict=True), axis_in_range(2), _fixed_quant(_SIGMOID_QUANT, t)
            ),
        )
        for t, version in _CLASSIC
    ],
    shape=same_shape,
    kernel=_softmax_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: (0.1, 2.0), 2: "axis"}},
)

define(
    OperationType.LOG_SOFTMAX,
    FAMILY,
    [
        Signature(
            inputs=(tensor("input", t, RANK_FROM_1), scalar("beta", FLOAT_SCALAR_OF[t]), scalar("axis", INT32)),
            outputs=(tensor("output", t, RANK_FROM_1),),
            version=V1_2,
            check=checks(scalar_at_least(1, 0.0, "beta", strict=True), axis_in_range(2)),
        )
        for t in (F16, F32)
    ],
    shape=same_shape,
    kernel=_log_softmax_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: (0.1, 2.0), 2: "axis"}},
)
