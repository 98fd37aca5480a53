"""Data-movement operations: RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, SPLIT, TILE, PAD,
PAD_V2, DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND and CHANNEL_SHUFFLE.

Values are moved, never recomputed, except where the HAL lets quantization parameters differ between input
and output (CONCATENATION) or defines a padding value (PAD pads with the logical zero, i.e. the zero point).
Every result is a fresh array, so no output aliases an input.
"""

from __future__ import annotations

import math

import numpy as np

from driver_under_test.backends.numpy.kernels.common import (
    FLOATS,
    I32,
    QUANT8,
    QUANT8_TYPES,
    at_least_1d,
    check_result_size,
    int_vector,
    normalize_axis,
    requantize_to,
    required,
)
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.errors import invalid
from harness.hal import OperationType

_MOVE_TYPES = (*FLOATS, *QUANT8)
_MOVE_TYPES_INT = (*FLOATS, I32, *QUANT8)


def _nchw(call: OpCall, i: int) -> bool:
    return bool(call.scalar(i, False))


def _to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    if x.ndim != 4:
        raise invalid(f"expected a 4-D tensor, got rank {x.ndim}", "exec.rank")
    return x.transpose(0, 2, 3, 1) if nchw else x


def _from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2) if nchw else x)


# --- Shape-only operations -----------------------------------------------------------------------------------


@kernel(OperationType.RESHAPE, _MOVE_TYPES)
def reshape_kernel(call: OpCall) -> list[np.ndarray]:
    """Same values, new shape; one -1 entry is inferred from the element count."""
    x = required(call, 0)
    shape = int_vector(call.inputs[1], "target shape")
    if any(d < -1 for d in shape) or shape.count(-1) > 1:
        raise invalid(f"invalid target shape {shape}", "exec.reshape")
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if known == 0 or x.data.size % known:
            raise invalid(f"cannot infer -1 in {shape} for {x.data.size} elements", "exec.reshape")
        shape[shape.index(-1)] = x.data.size // known
    elif known != x.data.size:
        raise invalid(f"target shape {shape} does not hold {x.data.size} elements", "exec.reshape")
    return [x.data.reshape(shape).copy()]


@kernel(OperationType.SQUEEZE, _MOVE_TYPES)
def squeeze_kernel(call: OpCall) -> list[np.ndarray]:
    """Remove the listed size-1 dimensions (all of them when the axes input is omitted)."""
    x = required(call, 0)
    axes_input = call.inputs[1] if len(call.inputs) > 1 else None
    if axes_input is None or axes_input.data is None:
        axes = tuple(i for i, d in enumerate(x.data.shape) if d == 1)
    else:
        axes = tuple({normalize_axis(a, x.data.ndim) for a in int_vector(axes_input, "squeeze axes")})
        if any(x.data.shape[a] != 1 for a in axes):
            raise invalid(f"cannot squeeze axes {axes} of shape {x.data.shape}", "exec.squeeze")
    return [at_least_1d(np.squeeze(x.data, axis=axes)).copy()]


@kernel(OperationType.EXPAND_DIMS, _MOVE_TYPES_INT)
def expand_dims_kernel(call: OpCall) -> list[np.ndarray]:
    """Insert a size-1 dimension at the given index (negative counts from the end of the result)."""
    x = required(call, 0)
    axis = normalize_axis(int(call.scalar(1, 0)), x.data.ndim + 1)
    return [np.expand_dims(x.data, axis).copy()]


@kernel(OperationType.TRANSPOSE, _MOVE_TYPES)
def transpose_kernel(call: OpCall) -> list[np.ndarray]:
    """Permute dimensions (reverse order when the permutation is omitted)."""
    x = required(call, 0)
    perm_input = call.inputs[1] if len(call.inputs) > 1 else None
    if perm_input is None or perm_input.data is None:
        perm = list(range(x.data.ndim))[::-1]
    else:
        perm = [normalize_axis(p, x.data.ndim) for p in int_vector(perm_input, "permutation")]
        if sorted(perm) != list(range(x.data.ndim)):
            raise invalid(f"{perm} is not a permutation of rank {x.data.ndim}", "exec.transpose")
    return [np.ascontiguousarray(x.data.transpose(perm))]


# --- Joining and splitting -------------------------------------------------------------------------------------


@kernel(OperationType.CONCATENATION, _MOVE_TYPES)
def concatenation_kernel(call: OpCall) -> list[np.ndarray]:
    """Join inputs 0..n-1 along the axis given by the last input; quantized inputs adopt the output's params."""
    tensors: list[Tensor] = [required(call, i) for i in range(len(call.inputs) - 1)]
    if not tensors:
        raise invalid("CONCATENATION needs at least one tensor", "exec.missing_input")
    out = call.outputs[0]
    rank = tensors[0].data.ndim
    axis = normalize_axis(int(call.scalar(len(call.inputs) - 1, 0)), rank)
    first = tensors[0].data.shape
    for t in tensors[1:]:
        s = t.data.shape
        if len(s) != rank or s[:axis] != first[:axis] or s[axis + 1 :] != first[axis + 1 :]:
            raise invalid(f"cannot concatenate shapes {first} and {s} along axis {axis}", "exec.concat")
    if tensors[0].type in QUANT8_TYPES:
        parts = [requantize_to(t, out) for t in tensors]
    else:
        parts = [t.data for t in tensors]
    return [np.concatenate(parts, axis=axis)]


@kernel(OperationType.SPLIT, _MOVE_TYPES_INT)
def split_kernel(call: OpCall) -> list[np.ndarray]:
    """Split into num_splits equal parts along the axis."""
    x = required(call, 0)
    axis = normalize_axis(int(call.scalar(1, 0)), x.data.ndim)
    count = int(call.scalar(2, 1))
    if count != len(call.outputs) or x.data.shape[axis] % count:
        raise invalid(
            f"cannot split dimension {x.data.shape[axis]} into {count} parts for {len(call.outputs)} outputs",
            "exec.split",
        )
    return [part.copy() for part in np.split(x.data, count, axis=axis)]


@kernel(OperationType.TILE, _MOVE_TYPES_INT)
def tile_kernel(call: OpCall) -> list[np.ndarray]:
    """Repeat the input multiples[i] times along each dimension i."""
    x = required(call, 0)
    multiples = int_vector(call.inputs[1], "multiples")
    if len(multiples) != x.data.ndim or any(m < 0 for m in multiples):
        raise invalid(f"multiples {multiples} do not fit rank {x.data.ndim}", "exec.tile")
    check_result_size([d * m for d, m in zip(x.data.shape, multiples)])
    return [np.tile(x.data, multiples)]


# --- Padding -----------------------------------------------------------------------------------------------------


def _paddings(t: Tensor | None, rank: int) -> list[tuple[int, int]]:
    values = int_vector(t, "paddings")
    if len(values) != 2 * rank or any(v < 0 for v in values):
        raise invalid(f"paddings {values} do not fit rank {rank}", "exec.pad")
    return [(values[2 * i], values[2 * i + 1]) for i in range(rank)]


def _pad(x: Tensor, paddings: list[tuple[int, int]], value: object) -> np.ndarray:
    check_result_size([d + before + after for d, (before, after) in zip(x.data.shape, paddings)])
    return np.pad(x.data, paddings, mode="constant", constant_values=value)


@kernel(OperationType.PAD, _MOVE_TYPES)
def pad_kernel(call: OpCall) -> list[np.ndarray]:
    """Pad with the logical zero (the zero point for quantized tensors)."""
    x = required(call, 0)
    value = x.zero_point if x.type in QUANT8_TYPES else 0
    return [_pad(x, _paddings(call.inputs[1], x.data.ndim), value)]


@kernel(OperationType.PAD_V2, _MOVE_TYPES)
def pad_v2_kernel(call: OpCall) -> list[np.ndarray]:
    """Pad with the given scalar (a stored code for quantized tensors, which must fit the storage type)."""
    x = required(call, 0)
    value = call.scalar(2, 0)
    if x.type in QUANT8_TYPES:
        info = np.iinfo(x.data.dtype)
        if not info.min <= int(value) <= info.max:
            raise invalid(f"pad value {value} does not fit {x.data.dtype}", "exec.pad")
    return [_pad(x, _paddings(call.inputs[1], x.data.ndim), value)]


# --- Space/depth/batch rearrangements (NHWC internally) -------------------------------------------------------------


def _block_size(call: OpCall, i: int) -> int:
    block = int(call.scalar(i, 1))
    if block < 1:
        raise invalid(f"block size {block} must be >= 1", "exec.block_size")
    return block


@kernel(OperationType.DEPTH_TO_SPACE, _MOVE_TYPES)
def depth_to_space_kernel(call: OpCall) -> list[np.ndarray]:
    """Move depth blocks of block_size^2 channels into block_size x block_size spatial blocks."""
    nchw = _nchw(call, 2)
    x = _to_nhwc(required(call, 0).data, nchw)
    bs = _block_size(call, 1)
    n, h, w, c = x.shape
    if c % (bs * bs):
        raise invalid(f"depth {c} is not divisible by {bs * bs}", "exec.block_size")
    depth = c // (bs * bs)
    y = x.reshape(n, h, w, bs, bs, depth).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * bs, w * bs, depth)
    return [_from_nhwc(y, nchw)]


@kernel(OperationType.SPACE_TO_DEPTH, _MOVE_TYPES)
def space_to_depth_kernel(call: OpCall) -> list[np.ndarray]:
    """Move block_size x block_size spatial blocks into the depth dimension."""
    nchw = _nchw(call, 2)
    x = _to_nhwc(required(call, 0).data, nchw)
    bs = _block_size(call, 1)
    n, h, w, c = x.shape
    if h % bs or w % bs:
        raise invalid(f"spatial size {h}x{w} is not divisible by {bs}", "exec.block_size")
    y = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, h // bs, w // bs, bs * bs * c)
    return [_from_nhwc(y, nchw)]


def _block_shape(call: OpCall) -> tuple[int, int]:
    block = int_vector(call.inputs[1], "block shape")
    if len(block) != 2 or min(block) < 1:
        raise invalid(f"block shape {block} must be two values >= 1", "exec.block_size")
    return block[0], block[1]


@kernel(OperationType.BATCH_TO_SPACE_ND, _MOVE_TYPES)
def batch_to_space_nd_kernel(call: OpCall) -> list[np.ndarray]:
    """Interleave batch blocks back into the spatial grid (inverse of SPACE_TO_BATCH_ND without padding)."""
    nchw = _nchw(call, 2)
    x = _to_nhwc(required(call, 0).data, nchw)
    bh, bw = _block_shape(call)
    n, h, w, c = x.shape
    if n % (bh * bw):
        raise invalid(f"batch {n} is not divisible by block {bh}x{bw}", "exec.block_size")
    batch = n // (bh * bw)
    y = x.reshape(bh, bw, batch, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(batch, h * bh, w * bw, c)
    return [_from_nhwc(y, nchw)]


@kernel(OperationType.SPACE_TO_BATCH_ND, _MOVE_TYPES)
def space_to_batch_nd_kernel(call: OpCall) -> list[np.ndarray]:
    """Zero-pad the spatial dimensions, then move spatial blocks into the batch dimension."""
    nchw = _nchw(call, 3)
    source = required(call, 0)
    x = _to_nhwc(source.data, nchw)
    bh, bw = _block_shape(call)
    (top, bottom), (left, right) = _paddings(call.inputs[2], 2)
    value = source.zero_point if source.type in QUANT8_TYPES else 0
    padding = [(0, 0), (top, bottom), (left, right), (0, 0)]
    check_result_size([d + before + after for d, (before, after) in zip(x.shape, padding)])
    x = np.pad(x, padding, mode="constant", constant_values=value)
    n, h, w, c = x.shape
    if h % bh or w % bw:
        raise invalid(f"padded size {h}x{w} is not divisible by block {bh}x{bw}", "exec.block_size")
    y = x.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5).reshape(bh * bw * n, h // bh, w // bw, c)
    return [_from_nhwc(y, nchw)]


@kernel(OperationType.CHANNEL_SHUFFLE, _MOVE_TYPES)
def channel_shuffle_kernel(call: OpCall) -> list[np.ndarray]:
    """output_channel[k * groups + g] = input_channel[g * group_size + k] along the axis."""
    x = required(call, 0)
    groups = int(call.scalar(1, 1))
    axis = normalize_axis(int(call.scalar(2, -1)), x.data.ndim)
    channels = x.data.shape[axis]
    if groups <= 0 or channels % groups:
        raise invalid(f"{channels} channels cannot form {groups} groups", "exec.channel_shuffle")
    shape = x.data.shape
    grouped = x.data.reshape(*shape[:axis], groups, channels // groups, *shape[axis + 1 :])
    return [np.ascontiguousarray(np.swapaxes(grouped, axis, axis + 1)).reshape(shape)]
