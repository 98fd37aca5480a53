"""Data movement and reductions: reshapes, transposes, concatenation and splitting, slicing, gathering,
padding, tiling, the space/depth/batch rearrangements, FILL, RANK, ARGMAX/ARGMIN, TOPK_V2, REDUCE_* and MEAN."""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.litert._graph import Op, TensorSpec
from driver_under_test.backends.litert._registry import rule
from driver_under_test.backends.litert.rules._common import (
    BOOL8,
    F16,
    FLOAT_QUANT,
    I32,
    QS8,
    QUANT,
    check_rank4,
    layout_nchw,
    nhwc_input,
    nhwc_output,
    requantize,
)
from harness.hal import OperationType as O

# Element moves work on any element type; LiteRT's kernels take these (float16 only in some: NO_HALF).
MOVABLE = FLOAT_QUANT | {F16}
MOVABLE_INT = MOVABLE | {I32}
NO_HALF = FLOAT_QUANT | {I32}


def _int32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


# ---- reshapes ----


@rule(O.RESHAPE, types=MOVABLE | {I32})
def reshape(op: Op) -> None:
    """HAL RESHAPE: inputs 0 input, 1 shape (TENSOR_INT32 1-D, one entry may be -1); output 0. TFLite RESHAPE
    with the shape as its second input (a run-time shape makes the output dynamic)."""
    op.emit("RESHAPE", [op.input(0), op.input(1)], [op.output()])


@rule(O.SQUEEZE, types=MOVABLE, params={1: "axes"})
def squeeze(op: Op) -> None:
    """HAL SQUEEZE: inputs 0 input, 1 axes (optional TENSOR_INT32 1-D constant; absent or NO_VALUE: every
    dimension of size 1); output 0. TFLite SQUEEZE with squeezeDims (empty = every size-1 dimension)."""
    axes = [int(a) for a in op.value(1).reshape(-1)] if op.has(1) else []
    op.emit("SQUEEZE", [op.input(0)], [op.output()], "SqueezeOptions", squeezeDims=axes)


@rule(O.EXPAND_DIMS, types=MOVABLE_INT, params={1: "axis"})
def expand_dims(op: Op) -> None:
    """HAL EXPAND_DIMS: inputs 0 input, 1 axis (INT32, in [-rank - 1, rank]); output 0. TFLite EXPAND_DIMS with
    the axis as a constant INT32 tensor."""
    op.emit("EXPAND_DIMS", [op.input(0), op.const(_int32(op.scalar(1)))], [op.output()])


def _transpose_check(op: Op) -> str | None:
    if not op.has(1) and op.rank(0) is None:
        return f"{op.name}: without perm the rank must be known (the default reverses the dimensions)"
    return None


@rule(O.TRANSPOSE, types=MOVABLE, params={1: "perm"}, check=_transpose_check)
def transpose(op: Op) -> None:
    """HAL TRANSPOSE: inputs 0 input, 1 perm (optional TENSOR_INT32 1-D; absent: reverse the dimensions);
    output 0. TFLite TRANSPOSE with a constant permutation."""
    perm = op.value(1).reshape(-1) if op.has(1) else np.arange(op.rank(0))[::-1]
    op.emit("TRANSPOSE", [op.input(0), op.const(_int32(perm))], [op.output()])


# ---- concatenation and splitting ----


@rule(O.CONCATENATION, types=MOVABLE)
def concatenation(op: Op) -> None:
    """HAL CONCATENATION: inputs 0..n-1 tensors (quantized ones may each have their own scale and zero point),
    n axis (INT32 in [0, rank)); output 0. TFLite CONCATENATION with the axis as an option. LiteRT rescales
    differing uint8 inputs itself but requires int8 inputs to share the output's parameters: int8 inputs are
    requantized to the output's first (QUANTIZE)."""
    n = op.n_inputs - 1
    axis = int(op.scalar(n))
    out = op.out_spec()
    inputs = []
    for i in range(n):
        tensor = op.input(i)
        if op.in_type(i) == QS8:
            tensor = requantize(op, tensor, op.spec(i), out)
        inputs.append(tensor)
    op.emit("CONCATENATION", inputs, [op.output()], "ConcatenationOptions", axis=axis)


@rule(O.SPLIT, types=NO_HALF, params={1: "axis", 2: "num_splits"}, half=True)
def split(op: Op) -> None:
    """HAL SPLIT: inputs 0 input, 1 axis (INT32, negative from the end), 2 num_splits (INT32); outputs
    0..num_splits-1 of equal size. TFLite SPLIT (inputs: axis tensor, input; numSplits option)."""
    outputs = [op.output(k) for k in range(len(op.operation.outputs))]
    axis = op.const(_int32(op.scalar(1)))
    op.emit("SPLIT", [axis, op.input(0)], outputs, "SplitOptions", numSplits=int(op.scalar(2)))


# ---- slicing and gathering ----


@rule(O.SLICE, types=MOVABLE_INT)
def slice_(op: Op) -> None:
    """HAL SLICE: inputs 0 input, 1 begin (TENSOR_INT32 1-D), 2 size (TENSOR_INT32 1-D, -1 = to the end);
    output 0. TFLite SLICE, same operands and semantics."""
    op.emit("SLICE", [op.input(0), op.input(1), op.input(2)], [op.output()])


@rule(O.STRIDED_SLICE, types=MOVABLE, params={4: "begin_mask", 5: "end_mask", 6: "shrink_axis_mask"})
def strided_slice(op: Op) -> None:
    """HAL STRIDED_SLICE: inputs 0 input, 1 begin, 2 end, 3 strides (TENSOR_INT32 1-D each), 4 begin_mask,
    5 end_mask, 6 shrink_axis_mask (INT32 constants); output 0. TFLite STRIDED_SLICE with the masks as
    options (no ellipsis or new-axis masks, as in the HAL)."""
    op.emit(
        "STRIDED_SLICE",
        [op.input(0), op.input(1), op.input(2), op.input(3)],
        [op.output()],
        "StridedSliceOptions",
        beginMask=int(op.scalar(4)),
        endMask=int(op.scalar(5)),
        shrinkAxisMask=int(op.scalar(6)),
    )


@rule(O.GATHER, types=MOVABLE_INT, params={1: "axis"})
def gather(op: Op) -> None:
    """HAL GATHER: inputs 0 input, 1 axis (INT32, negative from the end), 2 indices (TENSOR_INT32, any rank);
    output 0 = input with dimension `axis` replaced by the indices' dimensions. TFLite GATHER (inputs: params,
    indices; axis option)."""
    axis = int(op.scalar(1))
    op.emit("GATHER", [op.input(0), op.input(2)], [op.output()], "GatherOptions", axis=axis, batchDims=0)


# ---- padding and tiling ----


@rule(O.PAD, types=MOVABLE)
def pad(op: Op) -> None:
    """HAL PAD: inputs 0 input, 1 paddings (TENSOR_INT32 [rank, 2]: before and after per dimension); output 0,
    padded with zeros (the zero point for quantized tensors). TFLite PAD (quantized: pads with the zero point)."""
    op.emit("PAD", [op.input(0), op.input(1)], [op.output()])


@rule(O.PAD_V2, types=MOVABLE, params={2: "pad_value"})
def pad_v2(op: Op) -> None:
    """HAL PAD_V2: inputs 0 input, 1 paddings (TENSOR_INT32 [rank, 2]), 2 pad_value (FLOAT32/FLOAT16 for float
    tensors, INT32 holding the stored quantized value for quantized ones; constant); output 0. TFLite PADV2 with
    the value as a one-element constant of the input's type and quantization."""
    spec = op.spec(0)
    dtype = {"FLOAT32": np.float32, "FLOAT16": np.float16, "UINT8": np.uint8, "INT8": np.int8}[spec.type]
    value = op.const(np.asarray([op.scalar(2)]).astype(dtype), spec)
    op.emit("PADV2", [op.input(0), op.input(1), value], [op.output()])


@rule(O.TILE, types=MOVABLE_INT)
def tile(op: Op) -> None:
    """HAL TILE: inputs 0 input, 1 multiples (TENSOR_INT32 1-D, one per dimension); output 0. TFLite TILE."""
    op.emit("TILE", [op.input(0), op.input(1)], [op.output()])


# ---- space, depth and batch ----


@rule(
    [O.SPACE_TO_DEPTH, O.DEPTH_TO_SPACE],
    types=FLOAT_QUANT,
    params={1: "block_size", 2: "layout"},
    check=check_rank4,
    half=True,
)
def space_depth(op: Op) -> None:
    """HAL SPACE_TO_DEPTH/DEPTH_TO_SPACE: inputs 0 input (4-D), 1 block_size (INT32), 2 layout (optional BOOL,
    true = NCHW); output 0. TFLite SPACE_TO_DEPTH/DEPTH_TO_SPACE (NHWC, TensorFlow's DCR order, as the HAL) with
    the block size as an option; NCHW tensors are transposed to NHWC and back."""
    nchw = layout_nchw(op, 2)
    x, _ = nhwc_input(op, 0, nchw)
    out, finish = nhwc_output(op, 0, nchw)
    if op.type == O.SPACE_TO_DEPTH:
        op.emit("SPACE_TO_DEPTH", [x], [out], "SpaceToDepthOptions", blockSize=int(op.scalar(1)))
    else:
        op.emit("DEPTH_TO_SPACE", [x], [out], "DepthToSpaceOptions", blockSize=int(op.scalar(1)))
    finish()


@rule(O.SPACE_TO_BATCH_ND, types=MOVABLE, params={3: "layout"}, check=check_rank4)
def space_to_batch(op: Op) -> None:
    """HAL SPACE_TO_BATCH_ND: inputs 0 input (4-D), 1 block_shape (TENSOR_INT32 [2]), 2 paddings (TENSOR_INT32
    [2, 2]), 3 layout (optional BOOL); output 0, padded with zeros (the zero point when quantized). TFLite
    SPACE_TO_BATCH_ND (NHWC; pads with the zero point); NCHW through transposes."""
    nchw = layout_nchw(op, 3)
    x, _ = nhwc_input(op, 0, nchw)
    out, finish = nhwc_output(op, 0, nchw)
    op.emit("SPACE_TO_BATCH_ND", [x, op.input(1), op.input(2)], [out])
    finish()


@rule(O.BATCH_TO_SPACE_ND, types=MOVABLE, params={2: "layout"}, check=check_rank4)
def batch_to_space(op: Op) -> None:
    """HAL BATCH_TO_SPACE_ND: inputs 0 input (4-D), 1 block_shape (TENSOR_INT32 [2]), 2 layout (optional BOOL);
    output 0. TFLite BATCH_TO_SPACE_ND with zero crops (the HAL has none); NCHW through transposes."""
    nchw = layout_nchw(op, 2)
    x, _ = nhwc_input(op, 0, nchw)
    out, finish = nhwc_output(op, 0, nchw)
    op.emit("BATCH_TO_SPACE_ND", [x, op.input(1), op.const(np.zeros((2, 2), dtype=np.int32))], [out])
    finish()


# ---- creation and inspection ----


@rule(O.FILL, types={I32}, runtime_scalars={1})
def fill(op: Op) -> None:
    """HAL FILL: inputs 0 dims (TENSOR_INT32 1-D), 1 value (FLOAT32, FLOAT16 or INT32 scalar, may be given at
    run time); output 0 of shape dims filled with the value. TFLite FILL with the value as a 0-d tensor."""
    op.emit("FILL", [op.input(0), op.input(1)], [op.output()])


@rule(O.RANK)
def rank(op: Op) -> None:
    """HAL RANK: input 0 (any tensor type); output 0 INT32 scalar. TFLite RANK."""
    op.emit("RANK", [op.input(0)], [op.output()])


# ---- arg, top-k, reductions ----


@rule([O.ARGMAX, O.ARGMIN], types=NO_HALF, params={1: "axis"}, half=True)
def arg_extreme(op: Op) -> None:
    """HAL ARGMAX/ARGMIN: inputs 0 input, 1 axis (INT32, negative from the end); output 0 TENSOR_INT32 (the
    first index of the extreme value, the axis removed). TFLite ARG_MAX/ARG_MIN with a constant axis tensor and
    int32 output (also the first index)."""
    axis = op.const(_int32(op.scalar(1)))
    type_int32 = op.b.model.schema.TensorType.INT32
    if op.type == O.ARGMAX:
        op.emit("ARG_MAX", [op.input(0), axis], [op.output()], "ArgMaxOptions", outputType=type_int32)
    else:
        op.emit("ARG_MIN", [op.input(0), axis], [op.output()], "ArgMinOptions", outputType=type_int32)


def _check_topk(op: Op) -> str | None:
    if not op.dims(0):
        return f"{op.name}: the input's rank must be known (ties are ordered by reversing its last axis)"
    return None


@rule(O.TOPK_V2, types=FLOAT_QUANT | {I32}, params={1: "k"}, check=_check_topk, half=True)
def topk(op: Op) -> None:
    """HAL TOPK_V2: inputs 0 input, 1 k (INT32); outputs 0 values, 1 indices (TENSOR_INT32), the k largest along
    the last dimension in descending order, equal values with the larger index first (the HAL's reference sorts
    (value, index) pairs and reverses them). TFLite TOPK_V2 puts the smaller index first, so it runs on the
    input reversed along the last axis (REVERSE_V2) and the indices are mapped back (n - 1 - index; n read from
    the input's SHAPE when unknown)."""
    n = op.dims(0)[-1]
    rank = len(op.dims(0))
    spec = op.spec(0)
    reversed_input = op.temp(spec)
    op.emit("REVERSE_V2", [op.input(0), op.const(_int32([rank - 1]))], [reversed_input])
    indices = op.temp(op.out_spec(1))
    k = op.const(_int32(op.scalar(1)))
    op.emit("TOPK_V2", [reversed_input, k], [op.output(0), indices])
    if n:
        last = op.const(_int32(n - 1))
    else:
        shape = op.temp(TensorSpec("INT32", (rank,)))
        op.emit("SHAPE", [op.input(0)], [shape], "ShapeOptions", outType=op.b.model.schema.TensorType.INT32)
        size = op.temp(TensorSpec("INT32", ()))
        ends = [_int32([rank - 1]), _int32([rank]), _int32([1])]
        op.emit("STRIDED_SLICE", [shape, *map(op.const, ends)], [size], "StridedSliceOptions", shrinkAxisMask=1)
        last = op.temp(TensorSpec("INT32", ()))
        op.emit("SUB", [size, op.const(_int32(1))], [last], "SubOptions")
    op.emit("SUB", [last, indices], [op.output(1)], "SubOptions")


_REDUCERS = {
    O.REDUCE_SUM: "SUM",
    O.REDUCE_PROD: "REDUCE_PROD",
    O.REDUCE_MAX: "REDUCE_MAX",
    O.REDUCE_MIN: "REDUCE_MIN",
    O.REDUCE_ANY: "REDUCE_ANY",
    O.REDUCE_ALL: "REDUCE_ALL",
    O.MEAN: "MEAN",
}


@rule(list(_REDUCERS), types=FLOAT_QUANT | {BOOL8}, params={2: "keep_dims"}, half=True)
def reduce(op: Op) -> None:
    """HAL REDUCE_SUM/PROD/MAX/MIN/ANY/ALL: inputs 0 input, 1 axes (TENSOR_INT32 1-D; negative from the end,
    repeats allowed), 2 keep_dims (BOOL); MEAN: the same with keep_dims an INT32 (> 0 keeps); output 0. TFLite
    SUM/REDUCE_PROD/REDUCE_MAX/REDUCE_MIN/REDUCE_ANY/REDUCE_ALL/MEAN with keepDims as an option. REDUCE_MAX/MIN
    pick stored values, so a quantized input whose parameters differ from the output's is requantized first."""
    keep = bool(op.scalar(2))
    x = op.input(0)
    if op.type in (O.REDUCE_MAX, O.REDUCE_MIN) and op.in_type(0) in QUANT:
        x = requantize(op, x, op.spec(0), op.out_spec())
    op.emit(_REDUCERS[op.type], [x, op.input(1)], [op.output()], "ReducerOptions", keepDims=keep)

