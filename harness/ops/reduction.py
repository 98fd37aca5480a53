"""Reductions: REDUCE_ALL, REDUCE_ANY, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_SUM, MEAN, ARGMAX, ARGMIN.

REDUCE_* and MEAN take a 1-D TENSOR_INT32 of axes (negative values count from the end; repeated axes
reduce once) and a keep_dims flag (BOOL for REDUCE_*, an INT32 that keeps dimensions when positive for
MEAN). ARGMAX/ARGMIN return the first index of the extreme value along one axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from harness.hal import OperationType
from harness.ops.common import (
    BOOL,
    BOOL8,
    F16,
    F32,
    I32,
    INT32,
    Q8,
    QS8,
    RANK_1,
    RANK_FROM_1,
    RANK_UP_TO_4,
    V1_1,
    V1_2,
    V1_3,
    ExecutionError,
    UnspecifiedResult,
    axis_in_range,
    checks,
    constant_ints,
    define,
    int_list,
    known_rank,
    normalize_axis,
    probing_edges,
    real_input,
    same_quant_as_input,
    scalar,
    store,
    tensor,
)
from harness.ops.registry import KernelContext, ShapeContext, Signature

FAMILY = "reduction"


def _axes(values: list[int], rank: int) -> tuple[int, ...]:
    """Distinct normalized axes, sorted."""
    return tuple(sorted({normalize_axis(a, rank) for a in values}))


def _keep(flag: object, op: OperationType) -> bool:
    # MEAN's keep_dims is an INT32 that keeps dimensions when positive; REDUCE_* use a BOOL.
    return bool(flag) if op != OperationType.MEAN else int(flag) > 0


def _reduced_dims(dims: tuple[int, ...], axes: tuple[int, ...], keep: bool) -> tuple[int, ...]:
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(dims))
    return tuple(d for i, d in enumerate(dims) if i not in axes)


def _reduce_shape(op: OperationType) -> Callable[[ShapeContext], list[tuple[int, ...]]]:
    def shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
        dims, axes, keep = ctx.shapes[0], constant_ints(ctx, 1), ctx.scalar(2)
        if not known_rank(dims):
            return [()]
        if keep is not None and _keep(keep, op) and axes is None:
            return [(0,) * len(dims)]
        if axes is None or keep is None:
            return [()]
        try:
            return [_reduced_dims(tuple(dims), _axes(axes, len(dims)), _keep(keep, op))]
        except ExecutionError:
            return [()]

    return shape


def _axes_check(ctx: ShapeContext) -> list[str]:
    axes, dims = constant_ints(ctx, 1), ctx.shapes[0]
    if axes is None or not known_rank(dims):
        return []
    n = len(dims)
    bad = [a for a in axes if not -n <= a < n]
    return [f"axes {bad} out of range [{-n}, {n})"] if bad else []


# Reductions with no value for an empty set of elements: the HAL does not say what they give.
_NO_EMPTY_RESULT = {OperationType.REDUCE_MAX, OperationType.REDUCE_MIN, OperationType.MEAN}


def _reduce_kernel(op: OperationType, fn: Callable[..., np.ndarray], real: bool):
    """Kernel: fn over the axes, on real values (requantized into the output) or on stored booleans."""

    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        x = real_input(ctx, 0) if real else ctx.inputs[0].astype(bool)
        axes = _axes(int_list(ctx.inputs[1]), x.ndim)
        groups = math.prod(d for i, d in enumerate(x.shape) if i not in axes)
        if op in _NO_EMPTY_RESULT and groups and any(x.shape[a] == 0 for a in axes):
            raise UnspecifiedResult(f"{op.name} over an empty set of elements")
        out = fn(x, axis=axes, keepdims=_keep(ctx.scalar(2), op))
        return [store(ctx, out) if real else np.asarray(out, dtype=bool)]

    return kernel


_REDUCTIONS = [
    # op, typings, function, works on real values, keep_dims type
    (OperationType.REDUCE_ALL, [(BOOL8, V1_2)], np.all, False, BOOL),
    (OperationType.REDUCE_ANY, [(BOOL8, V1_2)], np.any, False, BOOL),
    (OperationType.REDUCE_MAX, [(F16, V1_2), (F32, V1_2), (Q8, V1_2), (QS8, V1_3)], np.max, True, BOOL),
    (OperationType.REDUCE_MIN, [(F16, V1_2), (F32, V1_2), (Q8, V1_2), (QS8, V1_3)], np.min, True, BOOL),
    (OperationType.REDUCE_PROD, [(F16, V1_2), (F32, V1_2)], np.prod, True, BOOL),
    (OperationType.REDUCE_SUM, [(F16, V1_2), (F32, V1_2)], np.sum, True, BOOL),
    (OperationType.MEAN, [(F32, V1_1), (Q8, V1_1), (F16, V1_2), (QS8, V1_3)], np.mean, True, INT32),
]

for _op, _typings, _fn, _real, _keep_type in _REDUCTIONS:
    define(
        _op,
        FAMILY,
        [
            Signature(
                inputs=(tensor("input", t, RANK_UP_TO_4), tensor("axes", I32, RANK_1), scalar("keep_dims", _keep_type)),
                outputs=(tensor("output", t, RANK_UP_TO_4),),
                version=version,
                check=checks(_axes_check, same_quant_as_input() if t in (Q8, QS8) else None),
            )
            for t, version in _typings
        ],
        shape=_reduce_shape(_op),
        kernel=_reduce_kernel(_op, _fn, _real),
        # A product of many values leaves float range quickly: keep them near 1.
        hints={
            "input_range": (0.5, 1.5) if _op == OperationType.REDUCE_PROD else (-10.0, 10.0),
            "params": {1: "axes", 2: "bool" if _keep_type == BOOL else [0, 1]},
        },
    )


# ----------------------------------------------------------------------------------------------- arg min/max


def _arg_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, axis = ctx.shapes[0], ctx.scalar(1)
    if not known_rank(dims):
        return [()]
    if axis is None or not -len(dims) <= axis < len(dims):
        return [(0,) * (len(dims) - 1)] if len(dims) > 1 else [()]
    axis = normalize_axis(axis, len(dims))
    return [tuple(d for i, d in enumerate(dims) if i != axis)]


def _arg_kernel(fn: Callable[..., np.ndarray]):
    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        # Stored values order like real values (scale > 0); numpy returns the first extreme index.
        x = ctx.inputs[0]
        if x.size == 0:
            raise ExecutionError("ARGMAX/ARGMIN input must be non-empty")
        axis = normalize_axis(ctx.scalar(1), x.ndim)
        if probing_edges() > 0:
            # The HAL names no index among equal extremes: under the stability probe the last one is named, so a
            # tie shows as an edge and no driver is judged on which of the tied indices it reports.
            last = x.shape[axis] - 1
            return [np.asarray(last - fn(np.flip(x, axis=axis), axis=axis), dtype=np.int32)]
        return [np.asarray(fn(x, axis=axis), dtype=np.int32)]

    return kernel


for _op, _fn in ((OperationType.ARGMAX, np.argmax), (OperationType.ARGMIN, np.argmin)):
    define(
        _op,
        FAMILY,
        [
            Signature(
                inputs=(tensor("input", t, RANK_FROM_1), scalar("axis", INT32)),
                outputs=(tensor("output", I32, None),),
                version=version,
                check=axis_in_range(1),
            )
            for t, version in [(F16, V1_2), (F32, V1_2), (I32, V1_2), (Q8, V1_2), (QS8, V1_3)]
        ],
        shape=_arg_shape,
        kernel=_arg_kernel(_fn),
        hints={"input_range": (-10.0, 10.0), "params": {1: "axis"}},
    )
