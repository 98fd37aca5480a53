"""Type conversions: QUANTIZE, DEQUANTIZE, CAST, and RANDOM_MULTINOMIAL (signature and shape only: its
output is random, so it has no reference kernel; outputs are compared as distributions elsewhere).

QUANTIZE rounds half away from zero (C's round) and saturates. CAST ignores scale and zero point: it
converts the stored numbers, truncating toward zero and saturating into an 8-bit target.
"""

from __future__ import annotations

import numpy as np

from harness.hal import OperationType
from harness.ops.common import (
    BOOL8,
    F16,
    F32,
    I32,
    INT32,
    Q8,
    Q8_PER_CHANNEL,
    Q8_SYMM,
    Q16_ASYMM,
    Q16_SYMM,
    QS8,
    RANK_1,
    RANK_2,
    RANK_FROM_1,
    RANK_UP_TO_4,
    V1_0,
    V1_2,
    V1_3,
    UnspecifiedResult,
    constant_ints,
    define,
    known_rank,
    later,
    output_dtype,
    real_input,
    same_shape,
    scalar,
    scalar_at_least,
    store,
    tensor,
    type_range,
)
from harness.ops.registry import KernelContext, ShapeContext, Signature

FAMILY = "quantization"


def _convert_signatures(
    sources: list[tuple[int, str]], targets: list[tuple[int, str]], rank: tuple[int, int]
) -> list[Signature]:
    """One signature per (source type, target type) pair; the typing exists from the later version."""
    return [
        Signature(
            inputs=(tensor("input", s, rank),),
            outputs=(tensor("output", t, rank),),
            version=later(sv, tv),
        )
        for s, sv in sources
        for t, tv in targets
    ]


def _quantize_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x = real_input(ctx, 0)
    if not np.all(np.isfinite(x)):
        raise UnspecifiedResult("QUANTIZE of a non-finite value")
    return [store(ctx, x)]


define(
    OperationType.QUANTIZE,
    FAMILY,
    _convert_signatures([(F16, V1_2), (F32, V1_2)], [(Q8, V1_2), (QS8, V1_3)], RANK_FROM_1),
    shape=same_shape,
    kernel=_quantize_kernel,
    hints={"input_range": (-10.0, 10.0)},
)

define(
    OperationType.DEQUANTIZE,
    FAMILY,
    _convert_signatures(
        [(Q8, V1_0), (Q8_SYMM, V1_2), (Q8_PER_CHANNEL, V1_2), (QS8, V1_3)], [(F32, V1_0), (F16, V1_2)], RANK_UP_TO_4
    ),
    shape=same_shape,
    kernel=lambda ctx: [store(ctx, real_input(ctx, 0))],
)


def _cast_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, dtype = ctx.inputs[0], output_dtype(ctx)
    if x.dtype == dtype:  # same-type casts copy the stored values
        return [x.copy()]
    if dtype.kind == "f":
        return [x.astype(np.float64).astype(dtype)]
    values = np.trunc(x.astype(np.float64))
    if np.any(np.isnan(values)):
        raise UnspecifiedResult("CAST of NaN to an integer type")
    lo, hi = type_range(ctx.output_operands[0].type)
    if dtype.itemsize == 1:  # an 8-bit target saturates
        return [np.clip(values, lo, hi).astype(dtype)]
    if not np.all(np.isfinite(values)) or values.min(initial=0) < lo or values.max(initial=0) > hi:
        raise UnspecifiedResult("CAST of a value outside the int32 range")
    return [values.astype(dtype)]


_CAST_1_2 = [F16, F32, I32, Q8]
define(
    OperationType.CAST,
    FAMILY,
    [
        *_convert_signatures([(t, V1_2) for t in _CAST_1_2], [(t, V1_2) for t in _CAST_1_2], RANK_FROM_1),
        *[
            Signature(
                inputs=(tensor("input", t, RANK_FROM_1),), outputs=(tensor("output", t, RANK_FROM_1),), version=V1_3
            )
            for t in (BOOL8, Q16_ASYMM, Q16_SYMM, QS8, Q8_SYMM)
        ],
    ],
    shape=same_shape,
    kernel=_cast_kernel,
    hints={"input_range": (-10.0, 300.0), "int_range": (-10, 300)},
)


def _multinomial_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, samples = ctx.shapes[0], ctx.scalar(1)
    batches = dims[0] if known_rank(dims) else 0
    return [(batches, samples if samples is not None else 0)]


def _seeds_check(ctx: ShapeContext) -> list[str]:
    seeds, dims = constant_ints(ctx, 2), ctx.shapes[2]
    n = len(seeds) if seeds is not None else (dims[0] if known_rank(dims) else 0)
    return [f"seeds must have 2 values, got {n}"] if n not in (0, 2) else []


define(
    OperationType.RANDOM_MULTINOMIAL,
    FAMILY,
    [
        Signature(
            inputs=(tensor("logits", t, RANK_2), scalar("samples", INT32), tensor("seeds", I32, RANK_1)),
            outputs=(tensor("output", I32, RANK_2),),
            version=V1_2,
            check=lambda ctx: scalar_at_least(1, 1, "samples")(ctx) + _seeds_check(ctx),
        )
        for t in (F16, F32)
    ],
    shape=_multinomial_shape,
    hints={"input_range": (-3.0, 3.0), "params": {1: (1, 100), 2: "seeds"}},
)
