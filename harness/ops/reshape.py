"""Data movement that rearranges or pads elements: RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION,
SPLIT, TILE, PAD, PAD_V2, DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND,
CHANNEL_SHUFFLE.

Kernels move stored values (the HAL requires outputs to keep the input's scale and zero point), except
CONCATENATION, whose inputs may each be quantized differently and are requantized into the output.
Operations with a data layout flag take it as an optional BOOL: true = NCHW, false/absent = NHWC.
CONCATENATION's axis is a dimension index in [0, rank): unlike SPLIT or GATHER, the HAL gives it no
negative form.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from harness.hal import OperationType
from harness.ops.common import (
    BOOL,
    F16,
    F32,
    FLOAT_SCALAR_OF,
    I32,
    INT32,
    Q8,
    QS8,
    RANK_1,
    RANK_2,
    RANK_4,
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
    int_list,
    known_rank,
    normalize_axis,
    output_dtype,
    requantize,
    same_quant_as_input,
    same_shape,
    scalar,
    scalar_at_least,
    tensor,
    type_range,
)
from harness.ops.parameters import BLOCK_DOMAINS, refuse_outside
from harness.ops.registry import Arg, KernelContext, ShapeContext, Signature

FAMILY = "reshape"

ShapeFn = Callable[[ShapeContext], list[tuple[int, ...]]]

# Typings of the HAL 1.0 / 1.1 data-movement operations and of the HAL 1.2 ones.
_FROM_1_0 = [(F32, V1_0), (Q8, V1_0), (F16, V1_2), (QS8, V1_3)]
_FROM_1_1 = [(F32, V1_1), (Q8, V1_1), (F16, V1_2), (QS8, V1_3)]
_FROM_1_2 = [(F16, V1_2), (F32, V1_2), (I32, V1_2), (Q8, V1_2), (QS8, V1_3)]
_FROM_1_2_NO_INT = [(F16, V1_2), (F32, V1_2), (Q8, V1_2), (QS8, V1_3)]


def _quant_check(t: int) -> Check | None:
    return same_quant_as_input() if t in (Q8, QS8) else None


def _signatures(
    typings: list[tuple[int, str]],
    params: list[Arg],
    rank: tuple[int, int],
    check: Check | None = None,
    min_inputs: int | None = None,
    out_rank: tuple[int, int] | None = None,
) -> list[Signature]:
    """One signature per typing: a data tensor and parameters -> one tensor of the same type."""
    return [
        Signature(
            inputs=(tensor("input", t, rank), *params),
            outputs=(tensor("output", t, out_rank or rank),),
            min_inputs=min_inputs,
            version=version,
            check=checks(check, _quant_check(t)),
        )
        for t, version in typings
    ]


def _moved(ctx: KernelContext, data: np.ndarray) -> list[np.ndarray]:
    """A rearrangement of stored input values, in the output's stored dtype."""
    return [np.ascontiguousarray(data).astype(output_dtype(ctx))]


def _param_absent(ctx: ShapeContext, i: int) -> bool:
    return i >= len(ctx.operands) or ctx.operands[i] is None


def _layout(ctx: ShapeContext | KernelContext, i: int) -> bool | None:
    """True for NCHW; False when absent; None when given but not known (shape context only)."""
    if isinstance(ctx, KernelContext):
        return bool(ctx.scalar(i, False))
    if _param_absent(ctx, i):
        return False
    value = ctx.scalar(i)
    return None if value is None else bool(value)


# ----------------------------------------------------------------------------------------------- RESHAPE


def _resolve_reshape(target: list[int], count: int) -> tuple[int, ...]:
    """The RESHAPE target with its -1 resolved; ExecutionError if it cannot hold `count` elements."""
    if sum(1 for d in target if d == -1) > 1 or any(d < -1 for d in target):
        raise ExecutionError(f"invalid RESHAPE target {target}")
    known = math.prod(d for d in target if d != -1)
    if -1 in target:
        if known == 0 or count % known:
            raise ExecutionError(f"cannot reshape {count} elements to {target}")
        target = [count // known if d == -1 else d for d in target]
    elif known != count:
        raise ExecutionError(f"cannot reshape {count} elements to {target}")
    return tuple(target)


def _reshape_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, target = ctx.shapes[0], constant_ints(ctx, 1)
    if target is None:
        shape_dims = ctx.shapes[1]
        return [(0,) * shape_dims[0]] if shape_dims and shape_dims[0] else [()]
    if known_rank(dims) and 0 not in dims:
        try:
            return [_resolve_reshape(target, math.prod(dims))]
        except ExecutionError:
            return [()]
    return [tuple(0 if d == -1 else d for d in target)]


def _reshape_check(ctx: ShapeContext) -> list[str]:
    dims, target = ctx.shapes[0], constant_ints(ctx, 1)
    if target is None or not known_rank(dims) or 0 in dims:
        return []
    try:
        _resolve_reshape(target, math.prod(dims))
    except ExecutionError as e:
        return [str(e)]
    return []


def _reshape_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    return _moved(ctx, x.reshape(_resolve_reshape(int_list(ctx.inputs[1]), x.size)))


define(
    OperationType.RESHAPE,
    FAMILY,
    _signatures(_FROM_1_0, [tensor("shape", I32, RANK_1)], RANK_UP_TO_4, _reshape_check),
    shape=_reshape_shape,
    kernel=_reshape_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "reshape"}},
)


# ----------------------------------------------------------------------------------------------- SQUEEZE


def _squeezed(dims: tuple[int, ...], axes: list[int] | None) -> tuple[int, ...]:
    """Dims without the listed axes (all size-1 dims when None or empty); ExecutionError if one is not 1."""
    if not axes:
        return tuple(d for d in dims if d != 1)
    drop = {normalize_axis(a, len(dims)) for a in axes}
    for a in drop:
        if dims[a] != 1:
            raise ExecutionError(f"SQUEEZE of dimension {a} of size {dims[a]}")
    return tuple(d for i, d in enumerate(dims) if i not in drop)


def _squeeze_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims = ctx.shapes[0]
    axes = None if _param_absent(ctx, 1) else constant_ints(ctx, 1)
    if not known_rank(dims) or (axes is None and not _param_absent(ctx, 1)):
        return [()]
    if not axes and 0 in dims:  # which unknown dims are 1 is unknown
        return [()]
    try:
        return [_squeezed(tuple(dims), axes)]
    except ExecutionError:
        return [()]


def _squeeze_check(ctx: ShapeContext) -> list[str]:
    dims = ctx.shapes[0]
    axes = None if _param_absent(ctx, 1) else constant_ints(ctx, 1)
    if not axes or not known_rank(dims):
        return []
    try:
        _squeezed(tuple(d if d else 1 for d in dims), axes)
    except ExecutionError as e:
        return [str(e)]
    return []


def _squeeze_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    axes = int_list(ctx.inputs[1]) if ctx.has(1) else None
    return _moved(ctx, x.reshape(_squeezed(x.shape, axes)))


define(
    OperationType.SQUEEZE,
    FAMILY,
    # "Optional" here means the axes may be NO_VALUE; the input itself must be present (two inputs).
    _signatures(_FROM_1_1, [tensor("axes", I32, RANK_1, optional=True)], RANK_UP_TO_4, _squeeze_check, min_inputs=2),
    shape=_squeeze_shape,
    kernel=_squeeze_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "squeeze_axes"}},
)


# ----------------------------------------------------------------------------------------------- EXPAND_DIMS


def _expand_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, axis = ctx.shapes[0], ctx.scalar(1)
    if not known_rank(dims):
        return [()]
    n = len(dims) + 1
    if axis is None or not -n <= axis < n:
        return [(0,) * n]
    axis = normalize_axis(axis, n)
    return [tuple(dims[:axis]) + (1,) + tuple(dims[axis:])]


def _expand_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    return _moved(ctx, np.expand_dims(x, normalize_axis(ctx.scalar(1), x.ndim + 1)))


define(
    OperationType.EXPAND_DIMS,
    FAMILY,
    _signatures(_FROM_1_2, [scalar("axis", INT32)], RANK_FROM_1, axis_in_range(1, extra=1)),
    shape=_expand_shape,
    kernel=_expand_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "axis_expand"}},
)


# ----------------------------------------------------------------------------------------------- TRANSPOSE


def _permutation(ctx: ShapeContext | KernelContext, rank: int) -> list[int] | None:
    """The permutation (reversed axes when absent); None when given but not constant."""
    if isinstance(ctx, KernelContext):
        return int_list(ctx.inputs[1]) if ctx.has(1) else list(range(rank))[::-1]
    if _param_absent(ctx, 1):
        return list(range(rank))[::-1]
    return constant_ints(ctx, 1)


def _is_permutation(perm: list[int], rank: int) -> bool:
    return sorted(perm) == list(range(rank))


def _transpose_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims = ctx.shapes[0]
    if not known_rank(dims):
        return [()]
    perm = _permutation(ctx, len(dims))
    if perm is None or not _is_permutation(perm, len(dims)):
        return [(0,) * len(dims)]
    return [tuple(dims[p] for p in perm)]


def _transpose_check(ctx: ShapeContext) -> list[str]:
    dims = ctx.shapes[0]
    if not known_rank(dims):
        return []
    perm = _permutation(ctx, len(dims))
    if perm is not None and not _is_permutation(perm, len(dims)):
        return [f"{perm} is not a permutation of the {len(dims)} input dimensions"]
    return []


def _transpose_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    perm = _permutation(ctx, x.ndim)
    if not _is_permutation(perm, x.ndim):
        raise ExecutionError(f"{perm} is not a permutation of {x.ndim} dimensions")
    return _moved(ctx, x.transpose(perm))


define(
    OperationType.TRANSPOSE,
    FAMILY,
    # "Optional" here means the permutation may be NO_VALUE; the input itself must be present (two inputs).
    _signatures(_FROM_1_1, [tensor("perm", I32, RANK_1, optional=True)], RANK_UP_TO_4, _transpose_check, min_inputs=2),
    shape=_transpose_shape,
    kernel=_transpose_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "permutation"}},
)


# ----------------------------------------------------------------------------------------------- CONCATENATION


def _concat_parts(ctx: ShapeContext) -> tuple[list[tuple[int, ...]], int | None]:
    """Known shapes of the concatenated tensors and the axis (None when unknown)."""
    n = len(ctx.operands) - 1
    return [tuple(s) for s in ctx.shapes[:n] if known_rank(s)], ctx.scalar(n)


def _concat_check(ctx: ShapeContext) -> list[str]:
    shapes, axis = _concat_parts(ctx)
    if not shapes:
        return []
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        return [f"inputs of different ranks {shapes}"]
    if axis is None:
        return []
    if not 0 <= axis < rank:
        return [f"axis {axis} out of range [0, {rank})"]
    for s in shapes[1:]:
        for i, (x, y) in enumerate(zip(shapes[0], s)):
            if i != axis and x and y and x != y:
                return [f"inputs differ outside the axis: {shapes}"]
    return []


def _concat_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    n = len(ctx.operands) - 1
    shapes, axis = _concat_parts(ctx)
    if not shapes or _concat_check(ctx):
        return [()]
    rank = len(shapes[0])
    if axis is None:
        return [(0,) * rank]
    out = [max(s[i] for s in shapes) for i in range(rank)]  # a known size wins over unknown (0)
    sizes = [s[axis] for s in shapes]
    out[axis] = sum(sizes) if len(shapes) == n and all(sizes) else 0
    return [tuple(out)]


def _concat_kernel(ctx: KernelContext) -> list[np.ndarray]:
    n = len(ctx.inputs) - 1
    out = ctx.output_operands[0]
    parts = [requantize(ctx.inputs[i], ctx.input_operands[i], out) for i in range(n)]
    axis = ctx.scalar(n)
    if not 0 <= axis < parts[0].ndim:
        raise ExecutionError(f"axis {axis} out of range [0, {parts[0].ndim})")
    return [np.concatenate(parts, axis=axis)]


define(
    OperationType.CONCATENATION,
    FAMILY,
    [
        Signature(
            inputs=(Arg("input", (t,), rank=RANK_UP_TO_4, repeated=True), scalar("axis", INT32)),
            outputs=(tensor("output", t, RANK_UP_TO_4),),
            version=version,
            check=_concat_check,
        )
        for t, version in _FROM_1_0
    ],
    shape=_concat_shape,
    kernel=_concat_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {-1: "dim_index"}},
)


# ----------------------------------------------------------------------------------------------- SPLIT


def _split_check(ctx: ShapeContext) -> list[str]:
    out: list[str] = []
    splits, dims, axis = ctx.scalar(2), ctx.shapes[0], ctx.scalar(1)
    if splits is not None:
        if splits < 1:
            out.append(f"num_splits must be >= 1, got {splits}")
        elif splits != len(ctx.outputs):
            out.append(f"num_splits {splits} but {len(ctx.outputs)} outputs")
        elif known_rank(dims) and axis is not None and -len(dims) <= axis < len(dims):
            size = dims[normalize_axis(axis, len(dims))]
            if size and size % splits:
                out.append(f"num_splits {splits} does not divide the axis size {size}")
    for k in range(len(ctx.outputs)):
        out.extend(same_quant_as_input(0, k)(ctx))
    return out


def _split_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, axis = ctx.shapes[0], ctx.scalar(1)
    count = len(ctx.outputs)
    if not known_rank(dims):
        return [()] * count
    if axis is None or not -len(dims) <= axis < len(dims):
        return [(0,) * len(dims)] * count
    axis = normalize_axis(axis, len(dims))
    out = list(dims)
    out[axis] = dims[axis] // count if dims[axis] and dims[axis] % count == 0 else 0
    return [tuple(out)] * count


def _split_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, splits = ctx.inputs[0], ctx.scalar(2)
    axis = normalize_axis(ctx.scalar(1), x.ndim)
    if splits < 1 or x.shape[axis] % splits:
        raise ExecutionError(f"cannot split size {x.shape[axis]} into {splits}")
    return [np.ascontiguousarray(p).astype(output_dtype(ctx, k)) for k, p in enumerate(np.split(x, splits, axis))]


define(
    OperationType.SPLIT,
    FAMILY,
    [
        Signature(
            inputs=(tensor("input", t, RANK_FROM_1), scalar("axis", INT32), scalar("num_splits", INT32)),
            outputs=(Arg("output", (t,), rank=RANK_FROM_1, repeated=True),),
            version=version,
            check=checks(axis_in_range(1), _split_check),
        )
        for t, version in _FROM_1_2
    ],
    shape=_split_shape,
    kernel=_split_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "axis", 2: "num_splits"}},
)


# ----------------------------------------------------------------------------------------------- TILE


def _tile_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims, multiples = ctx.shapes[0], constant_ints(ctx, 1)
    if not known_rank(dims):
        return [()]
    if multiples is None or len(multiples) != len(dims):
        return [(0,) * len(dims)]
    return [tuple(d * m for d, m in zip(dims, multiples))]


def _tile_check(ctx: ShapeContext) -> list[str]:
    dims, multiples = ctx.shapes[0], constant_ints(ctx, 1)
    if multiples is None:
        return []
    out = []
    if known_rank(dims) and len(multiples) != len(dims):
        out.append(f"{len(multiples)} multiples for rank {len(dims)}")
    if any(m < 1 for m in multiples):
        out.append(f"multiples must be >= 1, got {multiples}")
    return out


def _tile_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, multiples = ctx.inputs[0], int_list(ctx.inputs[1])
    if len(multiples) != x.ndim or any(m < 1 for m in multiples):
        raise ExecutionError(f"invalid multiples {multiples} for rank {x.ndim}")
    return _moved(ctx, np.tile(x, multiples))


define(
    OperationType.TILE,
    FAMILY,
    _signatures(_FROM_1_2, [tensor("multiples", I32, RANK_1)], RANK_FROM_1, _tile_check),
    shape=_tile_shape,
    kernel=_tile_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "multiples"}},
)


# ----------------------------------------------------------------------------------------------- PAD / PAD_V2


def _paddings(values: list[int] | None, rank: int) -> list[tuple[int, int]] | None:
    if values is None or len(values) != 2 * rank:
        return None
    return [(values[2 * i], values[2 * i + 1]) for i in range(rank)]


def _pad_check(ctx: ShapeContext) -> list[str]:
    dims, pad_dims, values = ctx.shapes[0], ctx.shapes[1], constant_ints(ctx, 1)
    out = []
    if known_rank(dims) and known_rank(pad_dims) and tuple(pad_dims) != (len(dims), 2) and 0 not in pad_dims:
        out.append(f"paddings shape must be [{len(dims)}, 2], got {list(pad_dims)}")
    if values is not None and any(v < 0 for v in values):
        out.append(f"paddings must be >= 0, got {values}")
    return out


def _pad_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    dims = ctx.shapes[0]
    if not known_rank(dims):
        return [()]
    pads = _paddings(constant_ints(ctx, 1), len(dims))
    if pads is None:
        return [(0,) * len(dims)]
    return [tuple(before + d + after if d else 0 for d, (before, after) in zip(dims, pads))]


def _pad_value_check(ctx: ShapeContext) -> list[str]:
    src, value = ctx.operands[0], ctx.scalar(2)
    if src is None or value is None or src.type not in (Q8, QS8):
        return []
    lo, hi = type_range(src.type)
    return [] if lo <= value <= hi else [f"pad value {value} outside [{lo}, {hi}]"]


def _pad_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    pads = _paddings(int_list(ctx.inputs[1]), x.ndim)
    if pads is None or any(p < 0 for pair in pads for p in pair):
        raise ExecutionError("invalid paddings")
    operand = ctx.input_operands[0]
    if ctx.has(2):  # PAD_V2: floats pad with the value; quantized types with the stored integer value
        fill = ctx.scalar(2)
    else:  # PAD: logical zero
        fill = operand.zero_point if operand.type in (Q8, QS8) else 0
    return _moved(ctx, np.pad(x, pads, mode="constant", constant_values=np.asarray(fill).astype(x.dtype)))


_PADDINGS_ARG = tensor("paddings", I32, RANK_2)
define(
    OperationType.PAD,
    FAMILY,
    _signatures(_FROM_1_1, [_PADDINGS_ARG], RANK_UP_TO_4, _pad_check),
    shape=_pad_shape,
    kernel=_pad_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "paddings"}},
)
define(
    OperationType.PAD_V2,
    FAMILY,
    [
        sig
        for t, version in _FROM_1_2_NO_INT
        for sig in _signatures(
            [(t, version)],
            [_PADDINGS_ARG, scalar("pad_value", FLOAT_SCALAR_OF.get(t, INT32))],
            RANK_UP_TO_4,
            checks(_pad_check, _pad_value_check),
        )
    ],
    shape=_pad_shape,
    kernel=_pad_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "paddings", 2: (-10.0, 10.0)}},
)


# ----------------------------------------------------------------------------------------------- layout helpers


def _to_nhwc(dims: tuple[int, ...], nchw: bool) -> tuple[int, ...]:
    return (dims[0], dims[2], dims[3], dims[1]) if nchw else tuple(dims)


def _from_nhwc(dims: tuple[int, ...], nchw: bool) -> tuple[int, ...]:
    return (dims[0], dims[3], dims[1], dims[2]) if nchw else tuple(dims)


def _layout_kernel(nhwc_fn: Callable[[np.ndarray, KernelContext], np.ndarray], layout_input: int):
    """Kernel: run an NHWC rearrangement, transposing in and out for NCHW data."""

    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        nchw = _layout(ctx, layout_input)
        x = ctx.inputs[0].transpose(0, 2, 3, 1) if nchw else ctx.inputs[0]
        y = nhwc_fn(x, ctx)
        return _moved(ctx, y.transpose(0, 3, 1, 2) if nchw else y)

    return kernel


def _layout_shape(nhwc_dims: Callable[[tuple[int, ...], ShapeContext], tuple[int, ...] | None], layout_input: int):
    """Shape function from an NHWC dims rule (which returns None when parameters are unknown)."""

    def shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
        dims, nchw = ctx.shapes[0], _layout(ctx, layout_input)
        if not known_rank(dims) or len(dims) != 4 or nchw is None:
            return [(0, 0, 0, 0)] if known_rank(dims) else [()]
        out = nhwc_dims(_to_nhwc(tuple(dims), nchw), ctx)
        return [_from_nhwc(out, nchw) if out is not None else (0, 0, 0, 0)]

    return shape


def _unknown_if_zero(value: int, *sources: int) -> int:
    return value if all(sources) else 0


# ----------------------------------------------------------------------------------------------- DEPTH/SPACE


def _block_check(divides: Callable[[tuple[int, ...], int], list[str]]) -> Check:
    """Check block_size >= 1 and the divisibility rule on NHWC dims (when known)."""

    def check(ctx: ShapeContext) -> list[str]:
        out = scalar_at_least(1, 1, "block_size")(ctx)
        dims, block, nchw = ctx.shapes[0], ctx.scalar(1), _layout(ctx, 2)
        if out or block is None or nchw is None or not known_rank(dims) or len(dims) != 4:
            return out
        return divides(_to_nhwc(tuple(dims), nchw), block)

    return check


def _d2s_divides(dims: tuple[int, ...], block: int) -> list[str]:
    c = dims[3]
    return [f"depth {c} not divisible by block_size^2 = {block * block}"] if c and c % (block * block) else []


def _s2d_divides(dims: tuple[int, ...], block: int) -> list[str]:
    bad = [d for d in dims[1:3] if d and d % block]
    return [f"height/width {dims[1:3]} not divisible by block_size {block}"] if bad else []


def _d2s_dims(d: tuple[int, ...], ctx: ShapeContext) -> tuple[int, ...] | None:
    bs = ctx.scalar(1)
    if bs is None or bs < 1:
        return None
    return (d[0], d[1] * bs, d[2] * bs, d[3] // (bs * bs))


def _s2d_dims(d: tuple[int, ...], ctx: ShapeContext) -> tuple[int, ...] | None:
    bs = ctx.scalar(1)
    if bs is None or bs < 1:
        return None
    return (d[0], d[1] // bs, d[2] // bs, d[3] * bs * bs)


def _depth_to_space(x: np.ndarray, ctx: KernelContext) -> np.ndarray:
    bs = ctx.scalar(1)
    n, h, w, c = x.shape
    if bs < 1 or c % (bs * bs):
        raise ExecutionError(f"depth {c} not divisible by block_size^2 ({bs})")
    # out[b, h*bs + i, w*bs + j, k] = in[b, h, w, (i*bs + j) * c_out + k]
    c_out = c // (bs * bs)
    return x.reshape(n, h, w, bs, bs, c_out).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * bs, w * bs, c_out)


def _space_to_depth(x: np.ndarray, ctx: KernelContext) -> np.ndarray:
    bs = ctx.scalar(1)
    n, h, w, c = x.shape
    if bs < 1 or h % bs or w % bs:
        raise ExecutionError(f"height/width ({h}, {w}) not divisible by block_size {bs}")
    return (
        x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, h // bs, w // bs, bs * bs * c)
    )


_LAYOUT_ARG = scalar("layout_nchw", BOOL, optional=True)
for _op, _dims, _fn, _divides in (
    (OperationType.DEPTH_TO_SPACE, _d2s_dims, _depth_to_space, _d2s_divides),
    (OperationType.SPACE_TO_DEPTH, _s2d_dims, _space_to_depth, _s2d_divides),
):
    define(
        _op,
        FAMILY,
        _signatures(
            _FROM_1_0, [scalar("block_size", INT32), _LAYOUT_ARG], RANK_4, _block_check(_divides), min_inputs=2
        ),
        shape=_layout_shape(_dims, 2),
        kernel=_layout_kernel(_fn, 2),
        hints={"input_range": (-10.0, 10.0), "params": {1: "block_size", 2: "layout"}},
    )


# ----------------------------------------------------------------------------------------------- BATCH/SPACE ND


def _block_shape_check(ctx: ShapeContext) -> list[str]:
    block = constant_ints(ctx, 1)
    if block is None:
        return []
    if len(block) != 2 or any(b < 1 for b in block):
        return [f"block shape must be 2 values >= 1, got {block}"]
    return []


def _b2s_check(ctx: ShapeContext) -> list[str]:
    out = _block_shape_check(ctx)
    dims, block, nchw = ctx.shapes[0], constant_ints(ctx, 1), _layout(ctx, 2)
    if not out and block is not None and nchw is not None and known_rank(dims) and len(dims) == 4:
        batch = _to_nhwc(tuple(dims), nchw)[0]
        if batch and batch % (block[0] * block[1]):
            out.append(f"batch {batch} not divisible by block size product {block[0] * block[1]}")
    return out


def _b2s_dims(d: tuple[int, ...], ctx: ShapeContext) -> tuple[int, ...] | None:
    block = constant_ints(ctx, 1)
    if block is None or len(block) != 2 or min(block) < 1:
        return None
    bh, bw = block
    return (d[0] // (bh * bw), d[1] * bh, d[2] * bw, d[3])


def _block(ctx: KernelContext) -> tuple[int, int]:
    """The block shape given at run time; a size below 1 is an invalid argument (types.hal: "must be >= 1")."""
    bh, bw = int_list(ctx.inputs[1])
    refuse_outside(BLOCK_DOMAINS, (("block_shape", bh), ("block_shape", bw)))
    return bh, bw


def _batch_to_space(x: np.ndarray, ctx: KernelContext) -> np.ndarray:
    bh, bw = _block(ctx)
    b, h, w, c = x.shape
    if bh < 1 or bw < 1 or b % (bh * bw):
        raise ExecutionError(f"batch {b} not divisible by block {bh}x{bw}")
    # Input batch index (i * bw + j) * b_out + n holds output pixel (h * bh + i, w * bw + j) of batch n.
    bo = b // (bh * bw)
    return x.reshape(bh, bw, bo, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(bo, h * bh, w * bw, c)


def _s2b_check(ctx: ShapeContext) -> list[str]:
    out = _block_shape_check(ctx)
    pads, pad_dims = constant_ints(ctx, 2), ctx.shapes[2]
    if known_rank(pad_dims) and 0 not in pad_dims and tuple(pad_dims) != (2, 2):
        out.append(f"paddings shape must be [2, 2], got {list(pad_dims)}")
    if pads is not None and any(p < 0 for p in pads):
        out.append(f"paddings must be >= 0, got {pads}")
    dims, block, nchw = ctx.shapes[0], constant_ints(ctx, 1), _layout(ctx, 3)
    if out or block is None or pads is None or nchw is None or not known_rank(dims) or len(dims) != 4:
        return out
    d = _to_nhwc(tuple(dims), nchw)
    for size, (before, after), b in ((d[1], pads[0:2], block[0]), (d[2], pads[2:4], block[1])):
        if size and (size + before + after) % b:
            out.append(f"padded size {size + before + after} not divisible by block {b}")
    return out


def _s2b_dims(d: tuple[int, ...], ctx: ShapeContext) -> tuple[int, ...] | None:
    block, pads = constant_ints(ctx, 1), constant_ints(ctx, 2)
    if block is None or pads is None or len(block) != 2 or min(block) < 1 or len(pads) != 4:
        return None
    bh, bw = block
    h = _unknown_if_zero((d[1] + pads[0] + pads[1]) // bh, d[1])
    w = _unknown_if_zero((d[2] + pads[2] + pads[3]) // bw, d[2])
    return (d[0] * bh * bw, h, w, d[3])


def _space_to_batch(x: np.ndarray, ctx: KernelContext) -> np.ndarray:
    bh, bw = _block(ctx)
    pads = int_list(ctx.inputs[2])
    operand = ctx.input_operands[0]
    fill = operand.zero_point if operand.type in (Q8, QS8) else 0  # logical zero
    x = np.pad(
        x, [(0, 0), (pads[0], pads[1]), (pads[2], pads[3]), (0, 0)], constant_values=np.asarray(fill).astype(x.dtype)
    )
    b, h, w, c = x.shape
    if bh < 1 or bw < 1 or h % bh or w % bw:
        raise ExecutionError(f"padded size ({h}, {w}) not divisible by block {bh}x{bw}")
    # Output batch (i * bw + j) * b + n takes pixels (y * bh + i, x * bw + j) of input batch n.
    return (
        x.reshape(b, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5).reshape(b * bh * bw, h // bh, w // bw, c)
    )


_BLOCK_ARG = tensor("block_shape", I32, RANK_1)
define(
    OperationType.BATCH_TO_SPACE_ND,
    FAMILY,
    _signatures(_FROM_1_1, [_BLOCK_ARG, _LAYOUT_ARG], RANK_4, _b2s_check, min_inputs=2),
    shape=_layout_shape(_b2s_dims, 2),
    kernel=_layout_kernel(_batch_to_space, 2),
    hints={"input_range": (-10.0, 10.0), "params": {1: "block_shape", 2: "layout"}},
)
define(
    OperationType.SPACE_TO_BATCH_ND,
    FAMILY,
    _signatures(
        _FROM_1_1,
        [_BLOCK_ARG, tensor("paddings", I32, RANK_2), scalar("layout_nchw", BOOL, optional=True)],
        RANK_4,
        _s2b_check,
        min_inputs=3,
    ),
    shape=_layout_shape(_s2b_dims, 3),
    kernel=_layout_kernel(_space_to_batch, 3),
    hints={"input_range": (-10.0, 10.0), "params": {1: "block_shape", 2: "spatial_paddings", 3: "layout"}},
)


# ----------------------------------------------------------------------------------------------- CHANNEL_SHUFFLE


def _shuffle_check(ctx: ShapeContext) -> list[str]:
    out = scalar_at_least(1, 1, "num_groups")(ctx)
    dims, groups, axis = ctx.shapes[0], ctx.scalar(1), ctx.scalar(2)
    if out or groups is None or axis is None or not known_rank(dims) or not -len(dims) <= axis < len(dims):
        return out
    size = dims[normalize_axis(axis, len(dims))]
    return [f"channels {size} not divisible by num_groups {groups}"] if size and size % groups else []


def _shuffle_kernel(ctx: KernelContext) -> list[np.ndarray]:
    x, groups = ctx.inputs[0], ctx.scalar(1)
    axis = normalize_axis(ctx.scalar(2), x.ndim)
    channels = x.shape[axis]
    if groups < 1 or channels % groups:
        raise ExecutionError(f"channels {channels} not divisible by num_groups {groups}")
    # output channel k * groups + g = input channel g * group_size + k: split, swap, merge.
    moved = np.moveaxis(x, axis, -1)
    lead = moved.shape[:-1]
    shuffled = moved.reshape(*lead, groups, channels // groups).swapaxes(-1, -2).reshape(*lead, channels)
    return _moved(ctx, np.moveaxis(shuffled, -1, axis))


define(
    OperationType.CHANNEL_SHUFFLE,
    FAMILY,
    _signatures(
        _FROM_1_2_NO_INT,
        [scalar("num_groups", INT32), scalar("axis", INT32)],
        RANK_UP_TO_4,
        checks(axis_in_range(2), _shuffle_check),
    ),
    shape=same_shape,
    kernel=_shuffle_kernel,
    hints={"input_range": (-10.0, 10.0), "params": {1: "num_groups", 2: "axis"}},
)
