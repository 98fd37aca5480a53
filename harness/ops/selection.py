"""Operations that pick, generate or describe elements: STRIDED_SLICE, SLICE, GATHER, FILL, RANK, TOPK_V2,
EMBEDDING_LOOKUP, HASHTABLE_LOOKUP.

Picked values are copied in stored form (outputs keep the input's scale and zero point). Indices out of
bounds make the execution fail (ExecutionError), as the HAL requires for the lookups.
"""

from __future__ import annotations

import math

import numpy as np

from harness.hal import OperationType
from harness.ops.common import (
    BOOL8,
    F16,
    F32,
    FLOAT16,
    FLOAT32,
    I32,
    INT32,
    NO_RANK_LIMIT,
    Q8,
    Q8_PER_CHANNEL,
    Q8_SYMM,
    Q16_ASYMM,
    Q16_SYMM,
    QS8,
    RANK_1,
    RANK_FROM_1,
    RANK_UP_TO_4,
    V1_0,
    V1_1,
    V1_2,
    V1_3,
    Check,
    ExecutionError,
    axis_in_range,
    checks,
    constant_ints,
    define,
    fixed_output_quant,
    int_list,
    known_rank,
    normalize_axis,
    output_dtype,
    same_quant_as_input,
    scalar,
    tensor,
)
from harness.ops.registry import KernelContext, ShapeContext, Signature

FAMILY = "selection"

RANK_FROM_2 = (2, NO_RANK_LIMIT)
_FROM_1_2 = [(F16, V1_2), (F32, V1_2), (I32, V1_2), (Q8, V1_2), (QS8, V1_3)]


def _quant_check(t: int, source: int = 0, out: int = 0) -> Check | None:
    return same_quant_as_input(source, out) if t in (Q8, QS8) else None


def _copy(ctx: KernelContext, data: np.ndarray, k: int = 0) -> np.ndarray:
    return np.ascontiguousarray(data).astype(output_dtype(ctx, k))


# ----------------------------------------------------------------------------------------------- STRIDED_SLICE


def _clamped_index(index: int, dim: int, positive_stride: bool) -> int:
    """A begin/end index resolved against a dimension (negative counts from the end), clamped to the
    range a slice with this stride direction can use."""
    if positive_stride:
        if index >= dim:
            return dim
        index = min(max(index, -dim), dim)
        return index % dim if dim else 0
    if index < -dim:
        return -1
    index = min(max(index, -dim), dim - 1)
    return index % dim if dim else 0


def _strided_plan(dims, begin, end, strides, begin_mask, end_mask, shrink_mask):
    """Per dimension (start, stop, stride, size) and the output dims; ExecutionError on invalid specs."""
    n = len(dims)
    if not len(begin) == len(end) == len(strides) == n:
        raise ExecutionError(f"begin/end/strides must have {n} entries")
    plan, out_dims = [], []
    for i, (dim, stride) in enumerate(zip(dims, strides)):
        if stride == 0:
            raise ExecutionError(f"stride {i} is zero")
        positive = stride > 0
        if begin_mask >> i & 1:
            start = 0 if positive else dim - 1
        else:
            start = _clamped_index(begin[i], dim, positive)
        if end_mask >> i & 1:
            stop = dim if positive else -1
        else:
            stop = _clamped_index(end[i], dim, positive)
        size = max(0, math.ceil((stop - start) / stride))
        if shrink_mask >> i & 1:
            if size != 1:
                raise ExecutionError(f"shrink_axis_mask dimension {i} selects {size} elements, not 1")
        else:
            out_dims.append(size)
        plan.append((start, stop, stride))
    return plan, tuple(out_dims)


def _strided_args(ctx: ShapeContext | KernelContext) -> tuple | None:
    if isinstance(ctx, KernelContext):
        vectors = [int_list(ctx.inputs[i]) for i in (1, 2, 3)]
    else:
        vectors = [constant_ints(ctx, i) for i in (1, 2, 3)]
    masks = [ctx.scalar(i) for i in (4, 5, 6)]
    if any(v is None for v in vectors) or any(m is None for m in masks):
        return None
    return (*vectors, *masks)


def _strided_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, args = ctx.shapes[0], _strided_args(ctx)
    if not known_rank(dims) or args is None:
        return [()]
    if 0 in dims:
        shrink = args[5] if args[5] is not None else 0
        return [(0,) * sum(1 for i in range(len(dims)) if not shrink >> i & 1)]
    try:
        return [_strided_plan(tuple(dims), *args)[1]]
    except ExecutionError:
        return [()]


def _strided_check(ctx: ShapeContext) -> list[str]:
    dims, args = ctx.shapes[0], _strided_args(ctx)
    if not known_rank(dims) or args is None or 0 in dims:
        return []
    try:
        _strided_plan(tuple(dims), *args)
    except ExecutionError as e:
        return [str(e)]
    return []


def _strided_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    plan, out_dims = _strided_plan(x.shape, *_strided_args(ctx))
    # A negative-stride stop of -1 means "through index 0", which a Python slice spells None.
    index = tuple(slice(start, None if stop < 0 else stop, stride) for start, stop, stride in plan)
    return [_copy(ctx, x[index].reshape(out_dims))]


define(
    OperationType.STRIDED_SLICE,
    FAMILY,
    [
        Signature(
            inputs=(
                tensor("input", t, RANK_UP_TO_4),
                tensor("begin", I32, RANK_1),
                tensor("end", I32, RANK_1),
                tensor("strides", I32, RANK_1),
                scalar("begin_mask", INT32),
                scalar("end_mask", INT32),
                scalar("shrink_axis_mask", INT32),
            ),
            outputs=(tensor("output", t, RANK_UP_TO_4),),
            version=version,
            check=checks(_strided_check, _quant_check(t)),
        )
        for t, version in [(F32, V1_1), (Q8, V1_1), (F16, V1_2), (QS8, V1_3)]
    ],
    shape=_strided_shape,
    kernel=_strided_kernel,
    hints={
        "input_range": (-10.0, 10.0),
        "params": {1: "begin", 2: "end", 3: "strides", 4: "mask", 5: "mask", 6: "shrink_mask"},
    },
)


# ----------------------------------------------------------------------------------------------- SLICE


def _slice_plan(dims: tuple[int, ...], begin: list[int], size: list[int]) -> tuple[tuple[int, int], ...]:
    """(start, stop) per dimension; ExecutionError if the slice leaves the tensor."""
    if not len(begin) == len(size) == len(dims):
        raise ExecutionError(f"begin/size must have {len(dims)} entries")
    plan = []
    for b, s, d in zip(begin, size, dims):
        stop = d if s == -1 else b + s
        if b < 0 or s < -1 or stop > d or b > d:
            raise ExecutionError(f"slice begin {b} size {s} outside dimension {d}")
        plan.append((b, stop))
    return tuple(plan)


def _slice_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, begin, size = ctx.shapes[0], constant_ints(ctx, 1), constant_ints(ctx, 2)
    if not known_rank(dims):
        return [()]
    if begin is None or size is None or len(begin) != len(dims) or len(size) != len(dims):
        return [(0,) * len(dims)]
    out = []
    for b, s, d in zip(begin, size, dims):
        out.append(s if s != -1 else (d - b if d else 0))
    return [tuple(out)]


def _slice_check(ctx: ShapeContext) -> list[str]:
    dims, begin, size = ctx.shapes[0], constant_ints(ctx, 1), constant_ints(ctx, 2)
    if not known_rank(dims) or begin is None or size is None or 0 in dims:
        return []
    try:
        _slice_plan(tuple(dims), begin, size)
    except ExecutionError as e:
        return [str(e)]
    return []


def _slice_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    plan = _slice_plan(x.shape, int_list(ctx.inputs[1]), int_list(ctx.inputs[2]))
    return [_copy(ctx, x[tuple(slice(b, e) for b, e in plan)])]


define(
    OperationType.SLICE,
    FAMILY,
    [
        Signature(
            inputs=(tensor("input", t, RANK_FROM_1), tensor("begin", I32, RANK_1), tensor("size", I32, RANK_1)),
            outputs=(tensor("output", t, RANK_FROM_1),),
            version=version,
            check=checks(_slice_check, _quant_check(t)),
        )
        for t, version in _FROM_1_2
    ],
    shape=_slice_shape,
    kernel=_slice_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "slice_begin", 2: "slice_size"}},
)


# ----------------------------------------------------------------------------------------------- GATHER


def _gather_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, axis, indices = ctx.shapes[0], ctx.scalar(1), ctx.shapes[2]
    if not known_rank(dims) or not known_rank(indices):
        return [()]
    if axis is None or not -len(dims) <= axis < len(dims):
        return [(0,) * (len(dims) + len(indices) - 1)]
    axis = normalize_axis(axis, len(dims))
    return [tuple(dims[:axis]) + tuple(indices) + tuple(dims[axis + 1 :])]


def _gather_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, indices = ctx.inputs[0], ctx.inputs[2]
    axis = normalize_axis(ctx.scalar(1), x.ndim)
    if indices.size and (indices.min() < 0 or indices.max() >= x.shape[axis]):
        raise ExecutionError(f"GATHER index out of [0, {x.shape[axis]})")
    return [_copy(ctx, np.take(x, indices, axis=axis))]


define(
    OperationType.GATHER,
    FAMILY,
    [
        Signature(
            inputs=(tensor("input", t, RANK_FROM_1), scalar("axis", INT32), tensor("indices", I32, RANK_FROM_1)),
            outputs=(tensor("output", t, RANK_FROM_1),),
            version=version,
            check=checks(axis_in_range(1), _quant_check(t)),
        )
        for t, version in _FROM_1_2
    ],
    shape=_gather_shape,
    kernel=_gather_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "axis", 2: "indices"}},
)


# ----------------------------------------------------------------------------------------------- FILL / RANK


def _fill_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims = constant_ints(ctx, 0)
    if dims is not None:
        return [tuple(dims)]
    shape_dims = ctx.shapes[0]
    return [(0,) * shape_dims[0]] if known_rank(shape_dims) and shape_dims[0] else [()]


def _fill_check(ctx: ShapeContext) -> list[str]:
    dims = constant_ints(ctx, 0)
    return [f"FILL dimensions must be >= 0, got {dims}"] if dims is not None and min(dims, default=0) < 0 else []


def _fill_kernel(ctx: KernelContext) -> list[np.ndarray]:
    dims = int_list(ctx.inputs[0])
    if min(dims, default=0) < 0:
        raise ExecutionError(f"FILL dimensions must be >= 0, got {dims}")
    return [np.full(dims, ctx.inputs[1], dtype=output_dtype(ctx))]


define(
    OperationType.FILL,
    FAMILY,
    [
        Signature(
            inputs=(tensor("shape", I32, RANK_1), scalar("value", value_type)),
            outputs=(tensor("output", t, RANK_FROM_1),),
            version=V1_3,
            check=_fill_check,
        )
        for t, value_type in [(F16, FLOAT16), (F32, FLOAT32), (I32, INT32)]
    ],
    shape=_fill_shape,
    kernel=_fill_kernel,
    hints={"params": {0: "fill_shape", 1: (-10.0, 10.0)}},
)

_RANK_TYPES = [F16, F32, I32, Q8, Q16_SYMM, BOOL8, Q8_PER_CHANNEL, Q16_ASYMM, Q8_SYMM, QS8]
define(
    OperationType.RANK,
    FAMILY,
    [
        Signature(inputs=(tensor("input", t, RANK_FROM_1),), outputs=(scalar("rank", INT32),), version=V1_3)
        for t in _RANK_TYPES
    ],
    shape=lambda ctx: [()],
    kernel=lambda ctx: [np.asarray(ctx.inputs[0].ndim, dtype=np.int32)],
)


# ----------------------------------------------------------------------------------------------- TOPK_V2


def _topk_check(ctx: ShapeContext) -> list[str]:
    k, dims = ctx.scalar(1), ctx.shapes[0]
    if k is None:
        return []
    if k < 1:
        return [f"k must be >= 1, got {k}"]
    if known_rank(dims) and dims[-1] and k > dims[-1]:
        return [f"k {k} exceeds the last dimension {dims[-1]}"]
    return []


def _topk_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, k = ctx.shapes[0], ctx.scalar(1)
    if not known_rank(dims):
        return [(), ()]
    out = tuple(dims[:-1]) + (k if k is not None else 0,)
    return [out, out]


def _topk_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, k = ctx.inputs[0], ctx.scalar(1)
    if not 1 <= k <= x.shape[-1]:
        raise ExecutionError(f"k {k} outside [1, {x.shape[-1]}]")
    # Descending values; among equal values the larger index first. Stored values order like real ones.
    index = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    order = np.lexsort((index, x), axis=-1)[..., ::-1][..., :k]
    return [_copy(ctx, np.take_along_axis(x, order, axis=-1)), order.astype(np.int32)]


define(
    OperationType.TOPK_V2,
    FAMILY,
    [
        Signature(
            inputs=(tensor("input", t, RANK_FROM_1), scalar("k", INT32)),
            outputs=(tensor("values", t, RANK_FROM_1), tensor("indices", I32, RANK_FROM_1)),
            version=version,
            check=checks(_topk_check, _quant_check(t)),
        )
        for t, version in _FROM_1_2
    ],
    shape=_topk_shape,
    kernel=_topk_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "k"}},
)


# ----------------------------------------------------------------------------------------------- lookups


def _embedding_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    lookups, values = ctx.shapes[0], ctx.shapes[1]
    if not known_rank(values):
        return [()]
    return [(lookups[0] if known_rank(lookups) else 0,) + tuple(values[1:])]


def _embedding_kernel(ctx: KernelContext) -> list[np.ndarray]:
    lookups, values = ctx.inputs[0].reshape(-1), ctx.inputs[1]
    if lookups.size and (lookups.min() < 0 or lookups.max() >= values.shape[0]):
        raise ExecutionError(f"EMBEDDING_LOOKUP index out of [0, {values.shape[0]})")
    return [_copy(ctx, values[lookups])]


define(
    OperationType.EMBEDDING_LOOKUP,
    FAMILY,
    [
        Signature(
            inputs=(tensor("lookups", I32, RANK_1), tensor("values", t, RANK_FROM_2)),
            outputs=(tensor("output", t, RANK_FROM_2),),
            version=version,
            check=_quant_check(t, source=1),
        )
        for t, version in [(F32, V1_0), (I32, V1_2), (Q8, V1_2), (F16, V1_3), (QS8, V1_3)]
    ],
    shape=_embedding_shape,
    kernel=_embedding_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {0: "lookups"}},
)


def _keys_sorted(ctx: ShapeContext) -> list[str]:
    keys = constant_ints(ctx, 1)
    if keys is not None and keys != sorted(keys):
        return [f"keys must be sorted ascending, got {keys}"]
    return []


def _hashtable_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    lookups, values = ctx.shapes[0], ctx.shapes[2]
    k = lookups[0] if known_rank(lookups) else 0
    return [(k,) + tuple(values[1:]) if known_rank(values) else (), (k,)]


def _hashtable_kernel(ctx: KernelContext) -> list[np.ndarray]:
    lookups, keys, values = ctx.inputs[0].reshape(-1), ctx.inputs[1].reshape(-1), ctx.inputs[2]
    position = {}
    for i, key in enumerate(keys.tolist()):
        position.setdefault(key, i)
    # A miss yields a slice of zero bytes and a zero hit flag.
    out = np.zeros((lookups.size,) + values.shape[1:], dtype=output_dtype(ctx, 0))
    hits = np.zeros(lookups.size, dtype=output_dtype(ctx, 1))
    for j, key in enumerate(lookups.tolist()):
        if key in position:
            out[j] = values[position[key]]
            hits[j] = 1
    return [out, hits]


define(
    OperationType.HASHTABLE_LOOKUP,
    FAMILY,
    [
        Signature(
            inputs=(tensor("lookups", I32, RANK_1), tensor("keys", I32, RANK_1), tensor("values", t, RANK_FROM_2)),
            outputs=(tensor("output", t, RANK_FROM_2), tensor("hits", Q8, RANK_1)),
            version=V1_0,
            check=checks(_keys_sorted, _quant_check(t, source=2), fixed_output_quant(1.0, 0, out=1)),
        )
        for t in (F32, I32, Q8)
    ],
    shape=_hashtable_shape,
    kernel=_hashtable_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "sorted_keys"}},
)
