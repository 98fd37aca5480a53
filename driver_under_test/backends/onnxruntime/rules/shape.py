"""Shape operations: RESHAPE, TRANSPOSE, CONCATENATION, SQUEEZE, EXPAND_DIMS, PAD, PAD_V2, SLICE, STRIDED_SLICE,
GATHER, SPLIT, TILE.

They move data: stored values move as they are when the output stores them as the input does (same type, scale
and zero point), and through real values (DequantizeLinear, QuantizeLinear) otherwise. HAL shape tensors are
int32; ONNX's are int64 (Cast, or converted at translation time for constants).
"""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.onnxruntime._graph import DTYPES, ELEMENT_TYPES, Op
from driver_under_test.backends.onnxruntime._registry import rule
from driver_under_test.backends.onnxruntime.rules._common import BOOL8, NUMERIC, QUANT, moved, same_storage
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
