"""Shape operations: RESHAPE, TRANSPOSE, CONCATENATION, SQUEEZE, EXPAND_DIMS, PAD, PAD_V2, SLICE, STRIDED_SLICE,
GATHER, SPLIT, TILE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, TOPK_V2, FILL and RANK.

They move data: stored values move as they are when the output stores them as the input does (same type, scale
and zero point), and through real values (DequantizeLinear, QuantizeLinear) otherwise. HAL shape tensors are
int32; ONNX's are int64 (Cast, or converted at translation time for constants).
"""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.onnxruntime._graph import DTYPES, ELEMENT_TYPES, Op
from driver_under_test.backends.onnxruntime._registry import rule
from driver_under_test.backends.onnxruntime.rules._common import (
    BOOL8,
    I32,
    NUMERIC,
    QUANT,
    check_rank4,
    from_nhwc,
    layout_nchw,
    moved,
    same_storage,
    to_nhwc,
)
from harness.hal import OperationType as O

ANY = NUMERIC | {BOOL8}
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def _int64(op: Op, i: int) -> str:
    """Int32 shape input i as an int64 tensor (converted now when constant)."""
    if op.is_const(i):
        return op.ints(op.value(i).reshape(-1).tolist())
    return op.node("Cast", [op.input(i)], to="INT64")


@rule(O.RESHAPE, types=ANY)
def reshape(op: Op) -> None:
    """HAL RESHAPE: 0 input, 1 shape (TENSOR_INT32 [rank], at most one -1; constant or given at run time);
    output 0. ONNX Reshape with allowzero=1 (a 0 in the HAL's shape is a dimension of 0, not a copy)."""
    (source,), target = moved(op)
    op.node("Reshape", [source, _int64(op, 1)], [target], allowzero=1)


def _check_transpose(op: Op) -> str | None:
    if not op.has(1) and op.rank(0) is None:
        return f"{op.name}: without a permutation the input's rank must be known"
    return None


@rule(O.TRANSPOSE, types=ANY, params={1: "permutation"}, check=_check_transpose)
def transpose(op: Op) -> None:
    """HAL TRANSPOSE: 0 input, [1 perm (TENSOR_INT32 constant), default the reversed axes]; output 0. ONNX
    Transpose with the perm attribute."""
    rank = op.rank(0)
    perm = op.value(1).reshape(-1).tolist() if op.has(1) else list(reversed(range(rank or 0)))
    (source,), target = moved(op)
    op.node("Transpose", [source], [target], perm=[int(p) for p in perm])


@rule(O.CONCATENATION, types=ANY)
def concatenation(op: Op) -> None:
    """HAL CONCATENATION: 0..n-1 inputs, n axis (INT32 constant); output 0. ONNX Concat; quantized inputs that
    store values unlike the output are requantized into it through real values."""
    n = op.n_inputs - 1
    sources, target = moved(op, tuple(range(n)))
    op.node("Concat", sources, [target], axis=int(op.scalar(n)))


@rule(O.SQUEEZE, types=ANY, params={1: "squeeze dimensions"})
def squeeze(op: Op) -> None:
    """HAL SQUEEZE: 0 input, [1 squeeze_dims (TENSOR_INT32 constant), default every dimension of size 1];
    output 0. ONNX Squeeze with those axes (or none: every dimension of size 1)."""
    (source,), target = moved(op)
    axes = [] if not op.has(1) else op.value(1).reshape(-1).tolist()
    inputs = [source, op.ints(axes)] if axes else [source]
    op.node("Squeeze", inputs, [target])


@rule(O.EXPAND_DIMS, types=ANY)
def expand_dims(op: Op) -> None:
    """HAL EXPAND_DIMS: 0 input, 1 axis (INT32 constant, in [-(rank + 1), rank]); output 0. ONNX Unsqueeze
    (negative axes count from the output's end in both)."""
    (source,), target = moved(op)
    op.node("Unsqueeze", [source, op.ints([int(op.scalar(1))])], [target])


def _pads(op: Op) -> str:
    """HAL paddings [rank, 2] (before, after per dimension) as ONNX pads [befores..., afters...]."""
    if op.is_const(1):
        return op.ints(op.value(1).reshape(-1, 2).T.reshape(-1).tolist())
    wide = op.node("Cast", [op.input(1)], to="INT64")
    return op.node("Reshape", [op.node("Transpose", [wide], perm=[1, 0]), op.ints([-1])])


def _pad_value(op: Op, value: float) -> str:
    """The stored value to pad with, as a 0-d tensor of the input's type."""
    dtype = DTYPES[ELEMENT_TYPES[op.in_type(0)]]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        value = min(max(int(value), int(info.min)), int(info.max))
    return op.const(np.asarray(value, dtype=dtype))


@rule(O.PAD, types=NUMERIC)
def pad(op: Op) -> None:
    """HAL PAD: 0 input, 1 paddings (TENSOR_INT32 [rank, 2], constant or given at run time); output 0 (same
    quantization as the input). ONNX Pad in constant mode with 0, or the zero point of a quantized input (the
    stored value of a real 0)."""
    zero = op.operand(0).zero_point if op.in_type(0) in QUANT else 0
    op.node("Pad", [op.input(0), _pads(op), _pad_value(op, zero)], [op.output()], mode="constant")


def _check_same_storage(op: Op) -> str | None:
    if not same_storage(op):
        return f"{op.name}: the output must store values as the input does"
    return None


@rule(O.PAD_V2, types=NUMERIC, params={2: "pad value"}, check=_check_same_storage)
def pad_v2(op: Op) -> None:
    """HAL PAD_V2: 0 input, 1 paddings (TENSOR_INT32 [rank, 2]), 2 pad_value (FLOAT32/FLOAT16 for float inputs,
    INT32 holding the stored value for quantized ones); output 0. ONNX Pad in constant mode with that value."""
    op.node("Pad", [op.input(0), _pads(op), _pad_value(op, op.scalar(2))], [op.output()], mode="constant")


@rule(O.SLICE, types=ANY)
def slice_(op: Op) -> None:
    """HAL SLICE: 0 input, 1 begin (TENSOR_INT32 [rank]), 2 size (TENSOR_INT32 [rank], -1 = to the end); both
    constant or given at run time; output 0. ONNX Slice from begin to begin + size (the largest int64 where the
    size is -1)."""
    starts = _int64(op, 1)
    sizes = _int64(op, 2)
    whole = op.node("Equal", [sizes, op.const(np.int64(-1))])
    ends = op.node("Where", [whole, op.const(np.int64(INT64_MAX)), op.node("Add", [starts, sizes])])
    (source,), target = moved(op)
    op.node("Slice", [source, starts, ends], [target])


@rule(
    O.STRIDED_SLICE,
    types=ANY,
    params={1: "begin", 2: "end", 3: "strides", 4: "begin mask", 5: "end mask", 6: "shrink axis mask"},
)
def strided_slice(op: Op) -> None:
    """HAL STRIDED_SLICE: 0 input, 1 begin, 2 end, 3 strides (TENSOR_INT32 [rank] constants), 4 begin_mask, 5
    end_mask, 6 shrink_axis_mask (INT32 bit masks); output 0. ONNX Slice with steps: a masked begin starts at
    the first element in the stride's direction, a masked end runs to the last; a shrunk axis takes the one
    element at begin and is then removed (Squeeze)."""
    begin, end, strides = (op.value(i).reshape(-1).tolist() for i in (1, 2, 3))
    begin_mask, end_mask, shrink = (int(op.scalar(i)) for i in (4, 5, 6))
    starts, ends, shrunk = [], [], []
    for axis, (b, e, s) in enumerate(zip(begin, end, strides)):
        forward = s > 0
        if begin_mask >> axis & 1:
            b = 0 if forward else INT64_MAX
        if end_mask >> axis & 1:
            e = INT64_MAX if forward else INT64_MIN
        if shrink >> axis & 1:
            # One element at begin; begin + 1 would be 0 for begin -1, which counts from the start.
            e = b + 1 if b != -1 else INT64_MAX
            s = 1
            shrunk.append(axis)
        starts.append(int(b))
        ends.append(int(e))
        strides[axis] = int(s)
    (source,), target = moved(op)
    axes = op.ints(list(range(len(starts))))
    sliced = op.node("Slice", [source, op.ints(starts), op.ints(ends), axes, op.ints(strides)])
    if shrunk:
        op.node("Squeeze", [sliced, op.ints(shrunk)], [target])
    else:
        op.node("Identity", [sliced], [target])


@rule(O.GATHER, types=ANY)
def gather(op: Op) -> None:
    """HAL GATHER: 0 input, 1 axis (INT32 constant), 2 indices (TENSOR_INT32, any rank); output 0. ONNX Gather
    along that axis."""
    (source,), target = moved(op)
    op.node("Gather", [source, op.input(2)], [target], axis=int(op.scalar(1)))


@rule(O.SPLIT, types=ANY)
def split(op: Op) -> None:
    """HAL SPLIT: 0 input, 1 axis (INT32 constant), 2 num_splits (INT32 constant, dividing the axis); outputs
    0..num_splits-1. ONNX Split with num_outputs; each output stored as the HAL output says."""
    n = int(op.scalar(2))
    axis = int(op.scalar(1))
    if all(same_storage(op, 0, k) for k in range(n)):
        op.node("Split", [op.input(0)], [op.output(k) for k in range(n)], axis=axis, num_outputs=n)
    else:
        op.node("Split", [op.x(0)], [op.y(k) for k in range(n)], axis=axis, num_outputs=n)


@rule(O.TILE, types=ANY)
def tile(op: Op) -> None:
    """HAL TILE: 0 input, 1 multiples (TENSOR_INT32 [rank], constant or given at run time); output 0. ONNX Tile
    with the repeats as int64."""
    (source,), target = moved(op)
    op.node("Tile", [source, _int64(op, 1)], [target])


# ---- batch <-> space ----


def _dim(op: Op, shape: str, axis: int) -> str:
    """Dimension `axis` of a Shape result as a 1-element int64 tensor."""
    return op.node("Slice", [shape, op.ints([axis]), op.ints([axis + 1])])


def _divided(op: Op, size: str, block: int) -> str:
    return op.node("Div", [size, op.ints([block])])


@rule(O.SPACE_TO_BATCH_ND, types=NUMERIC, params={1: "block shape", 2: "paddings", 3: "layout"}, check=check_rank4)
def space_to_batch_nd(op: Op) -> None:
    """HAL SPACE_TO_BATCH_ND: 0 input [n, h, w, c], 1 block_shape [bh, bw], 2 paddings [[top, bottom], [left,
    right]] (TENSOR_INT32 constants), [3 layout]; output 0 [bh * bw * n, (h + pads) / bh, (w + pads) / bw, c],
    batch (by * bw + bx) * n + b holding pixel (y * bh + by, x * bw + bx) of batch b. Composed on NHWC: Pad (with
    the stored zero, the zero point of a quantized input), Reshape to [n, h / bh, bh, w / bw, bw, c], Transpose
    to [bh, bw, n, h / bh, w / bw, c], Reshape to the output (sizes from the padded tensor's Shape, so unknown
    dimensions are taken as the run gives them)."""
    nchw = layout_nchw(op, 3)
    bh, bw = (int(v) for v in op.value(1).reshape(-1))
    (top, bottom), (left, right) = op.value(2).reshape(2, 2).tolist()
    stored = same_storage(op)
    (source,), target = moved(op)
    # A real 0: the zero point when stored values move, else 0.0 (requantized into the output's parameters).
    zero = op.operand(0).zero_point if op.in_type(0) in QUANT else 0
    fill = _pad_value(op, zero) if stored else op.const(np.float32(0))
    x = to_nhwc(op, source, nchw)
    padded = op.node("Pad", [x, op.ints([0, top, left, 0, 0, bottom, right, 0]), fill], mode="constant")
    shape = op.node("Shape", [padded])
    n, c = _dim(op, shape, 0), _dim(op, shape, 3)
    h, w = _divided(op, _dim(op, shape, 1), bh), _divided(op, _dim(op, shape, 2), bw)
    split = op.node("Concat", [n, h, op.ints([bh]), w, op.ints([bw]), c], axis=0)
    blocks = op.node("Transpose", [op.node("Reshape", [padded, split])], perm=[2, 4, 0, 1, 3, 5])
    result = op.node("Reshape", [blocks, op.node("Concat", [op.ints([-1]), h, w, c], axis=0)])
    op.node("Identity", [from_nhwc(op, result, nchw)], [target])


@rule(O.BATCH_TO_SPACE_ND, types=NUMERIC, params={1: "block shape", 2: "layout"}, check=check_rank4)
def batch_to_space_nd(op: Op) -> None:
    """HAL BATCH_TO_SPACE_ND: 0 input [bh * bw * n, h, w, c], 1 block_shape [bh, bw] (TENSOR_INT32 constant),
    [2 layout]; output 0 [n, h * bh, w * bw, c] (no crops), the inverse of SPACE_TO_BATCH_ND. Composed on NHWC:
    Reshape to [bh, bw, n, h, w, c], Transpose to [n, h, bh, w, bw, c], Reshape to the output."""
    nchw = layout_nchw(op, 2)
    bh, bw = (int(v) for v in op.value(1).reshape(-1))
    (source,), target = moved(op)
    x = to_nhwc(op, source, nchw)
    shape = op.node("Shape", [x])
    h, w, c = (_dim(op, shape, a) for a in (1, 2, 3))
    split = op.node("Concat", [op.ints([bh, bw, -1]), h, w, c], axis=0)
    pixels = op.node("Transpose", [op.node("Reshape", [x, split])], perm=[2, 3, 0, 4, 1, 5])
    size = [op.ints([-1]), op.node("Mul", [h, op.ints([bh])]), op.node("Mul", [w, op.ints([bw])]), c]
    result = op.node("Reshape", [pixels, op.node("Concat", size, axis=0)])
    op.node("Identity", [from_nhwc(op, result, nchw)], [target])


# ---- TOPK_V2, FILL, RANK ----


def _check_topk(op: Op) -> str | None:
    if op.rank(0) is None:
        return f"{op.name}: the input's rank must be known (the last axis is reversed)"
    return None


@rule(O.TOPK_V2, types=NUMERIC, runtime_scalars={1}, check=_check_topk)
def topk_v2(op: Op) -> None:
    """HAL TOPK_V2: 0 input, 1 k (INT32, constant or given at run time); outputs 0 values (the input's type and
    quantization), 1 indices (TENSOR_INT32): the k largest along the last axis, descending, equal values with
    the larger index first (the HAL's reference sorts (value, index) pairs). ONNX TopK (largest, sorted) puts
    the smaller index first, so it runs on the input reversed along the last axis (Slice with step -1) and the
    indices map back to n - 1 - index. Quantized values are ranked as their stored integers (as int32: the order
    of the real values) and moved as stored; float16 in float32 (exact)."""
    k = op.ints([int(op.scalar(1))]) if op.is_const(1) else op.node("Reshape", [_int64(op, 1), op.ints([1])])
    quantized = op.in_type(0) in QUANT
    x = op.node("Cast", [op.input(0)], to="INT32") if quantized else op.x(0)
    reversed_x = op.node("Slice", [x, op.ints([-1]), op.ints([INT64_MIN]), op.ints([-1]), op.ints([-1])])
    values, index = op.node("TopK", [reversed_x, k], 2, axis=-1, largest=1, sorted=1)
    last = op.node("Sub", [_dim(op, op.node("Shape", [x]), op.rank(0) - 1), op.ints([1])])
    op.node("Cast", [op.node("Sub", [last, index])], [op.output(1)], to="INT32")
    if quantized:
        op.node("Cast", [values], [op.output(0)], to=ELEMENT_TYPES[op.in_type(0)])
    else:
        op.node("Identity", [values], [op.y(0)])


@rule(O.FILL, types={I32}, runtime_scalars={1})
def fill(op: Op) -> None:
    """HAL FILL: 0 dims (TENSOR_INT32 [rank], constant or given at run time), 1 value (FLOAT32, FLOAT16 or
    INT32 scalar, constant or given at run time); output 0 of shape dims, every element the value (of the value's
    type). ONNX Expand of the 0-d value to the int64 shape."""
    op.node("Expand", [op.input(1), _int64(op, 0)], [op.output()])


@rule(O.RANK)
def rank(op: Op) -> None:
    """HAL RANK: 0 input (any tensor type); output 0 (INT32 scalar): the input's rank. A constant when the
    model declares the rank, else ONNX Size of the input's Shape, cast to int32."""
    known = op.rank(0)
    if known is not None:
        op.node("Identity", [op.const(np.int32(known))], [op.output()])
    else:
        op.node("Cast", [op.node("Size", [op.node("Shape", [op.input(0)])])], [op.output()], to="INT32")
