"""Indexing operations: STRIDED_SLICE, SLICE, GATHER, FILL, RANK, TOPK_V2, EMBEDDING_LOOKUP and
HASHTABLE_LOOKUP.

Index values come from the client at run time, so every kernel checks them against the data before
touching memory and reports INVALID_ARGUMENT instead of reading out of bounds.
"""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.numpy.kernels.common import (
    BOOL8,
    FLOATS,
    I32,
    QUANT8,
    at_least_1d,
    check_result_size,
    fault_active,
    int_vector,
    normalize_axis,
    required,
)
from driver_under_test.backends.numpy.kernels.registry import OpCall, kernel
from driver_under_test.errors import invalid
from driver_under_test.faults import FILL_SIZE_UNCHECKED
from harness.hal import OperandType, OperationType, numpy_dtype

_MOVE_TYPES = (*FLOATS, *QUANT8)
_MOVE_TYPES_INT = (*FLOATS, I32, *QUANT8)


def _strided_dimension(dim: int, begin: int, end: int, stride: int, begin_full: bool, end_full: bool) -> slice:
    """The Python slice selecting begin:end:stride of one dimension, with masks and clamping applied."""
    if stride > 0:
        lo, hi = 0, dim
    else:
        lo, hi = -1, dim - 1
    if begin_full:
        start = lo if stride > 0 else hi
    else:
        start = begin + dim if begin < 0 else begin
        start = min(max(start, lo), hi)
    if end_full:
        stop = hi if stride > 0 else lo
    else:
        stop = end + dim if end < 0 else end
        stop = min(max(stop, lo), hi)
    # A stop of -1 with a negative stride means "through index 0", which Python spells None.
    return slice(start, None if stop < 0 else stop, stride)


@kernel(OperationType.STRIDED_SLICE, _MOVE_TYPES)
def strided_slice_kernel(call: OpCall) -> list[np.ndarray]:
    """begin:end:stride per dimension with begin/end masks; shrink_axis_mask drops size-1 dimensions."""
    x = required(call, 0)
    rank = x.data.ndim
    begin = int_vector(call.inputs[1], "begin")
    end = int_vector(call.inputs[2], "end")
    strides = int_vector(call.inputs[3], "strides")
    if not len(begin) == len(end) == len(strides) == rank:
        raise invalid(f"begin/end/strides must have {rank} entries", "exec.strided_slice")
    begin_mask, end_mask, shrink_mask = (int(call.scalar(i, 0)) for i in (4, 5, 6))
    index: list[slice | int] = []
    for i, dim in enumerate(x.data.shape):
        if strides[i] == 0:
            raise invalid("strides must be non-zero", "exec.strided_slice")
        selected = _strided_dimension(
            dim, begin[i], end[i], strides[i], bool(begin_mask >> i & 1), bool(end_mask >> i & 1)
        )
        if shrink_mask >> i & 1:
            # The HAL keeps "a slice of size 1 starting from begin[i]" on a shrunk axis: begin:end:stride must
            # select exactly one element (end and stride are not ignored).
            chosen = range(dim)[selected]
            if len(chosen) != 1:
                raise invalid(
                    f"shrunk dimension {i} selects {len(chosen)} elements of {dim}, not 1", "exec.strided_slice"
                )
            index.append(chosen[0])
        else:
            index.append(selected)
    return [at_least_1d(np.array(x.data[tuple(index)]))]


@kernel(OperationType.SLICE, _MOVE_TYPES_INT)
def slice_kernel(call: OpCall) -> list[np.ndarray]:
    """The block starting at `begin` with `size` elements per dimension (-1 = to the end)."""
    x = required(call, 0)
    begin = int_vector(call.inputs[1], "begin")
    size = int_vector(call.inputs[2], "size")
    if not len(begin) == len(size) == x.data.ndim:
        raise invalid(f"begin/size must have {x.data.ndim} entries", "exec.slice")
    index = []
    for dim, b, s in zip(x.data.shape, begin, size):
        stop = dim if s == -1 else b + s
        if b < 0 or s < -1 or stop > dim:
            raise invalid(f"slice [{b}, {b}+{s}) exceeds dimension {dim}", "exec.slice")
        index.append(slice(b, stop))
    return [x.data[tuple(index)].copy()]


def _checked_indices(t_indices: np.ndarray, limit: int, what: str) -> np.ndarray:
    indices = np.asarray(t_indices, dtype=np.int64)
    if indices.size and (indices.min() < 0 or indices.max() >= limit):
        raise invalid(f"{what} out of range [0, {limit})", "exec.index_range")
    return indices


@kernel(OperationType.GATHER, _MOVE_TYPES_INT)
def gather_kernel(call: OpCall) -> list[np.ndarray]:
    """Take slices along the axis at the given indices (any rank of indices)."""
    x = required(call, 0)
    axis = normalize_axis(int(call.scalar(1, 0)), x.data.ndim)
    indices = _checked_indices(required(call, 2).data, x.data.shape[axis], "GATHER indices")
    check_result_size([*x.data.shape[:axis], *indices.shape, *x.data.shape[axis + 1 :]])
    return [np.take(x.data, indices, axis=axis)]


_FILL_TYPES = {int(OperandType.TENSOR_FLOAT32), int(OperandType.TENSOR_FLOAT16), int(OperandType.TENSOR_INT32)}


@kernel(OperationType.FILL, (I32,))
def fill_kernel(call: OpCall) -> list[np.ndarray]:
    """A tensor of the given shape holding the scalar everywhere; the output type picks the element type."""
    shape = int_vector(call.inputs[0], "output shape")
    if any(d < 0 for d in shape):
        raise invalid(f"negative dimension in {shape}", "exec.fill")
    out_type = call.outputs[0].type
    if out_type not in _FILL_TYPES:
        raise invalid(f"FILL cannot produce operand type {out_type}", "exec.operand_type")
    if not fault_active(call, FILL_SIZE_UNCHECKED):
        check_result_size(shape)
    return [at_least_1d(np.full(shape, call.scalar(1, 0), dtype=numpy_dtype(out_type)))]


_RANK_TYPES = (
    *FLOATS,
    I32,
    *QUANT8,
    BOOL8,
    OperandType.TENSOR_QUANT16_SYMM,
    OperandType.TENSOR_QUANT16_ASYMM,
    OperandType.TENSOR_QUANT8_SYMM,
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
)


@kernel(OperationType.RANK, _RANK_TYPES)
def rank_kernel(call: OpCall) -> list[np.ndarray]:
    """The number of dimensions of input 0, as an INT32 scalar."""
    return [np.array(required(call, 0).data.ndim, dtype=np.int32)]


@kernel(OperationType.TOPK_V2, _MOVE_TYPES_INT)
def topk_v2_kernel(call: OpCall) -> list[np.ndarray]:
    """The k largest entries of the last dimension, descending; equal values list the larger index first."""
    x = required(call, 0)
    k = int(call.scalar(1, 1))
    if x.data.ndim == 0 or not 0 <= k <= x.data.shape[-1]:
        raise invalid(f"k={k} is outside [0, {x.data.shape[-1] if x.data.ndim else 0}]", "exec.topk")
    # A stable ascending sort keeps equal values in index order; reversing it puts larger indices first.
    order = np.argsort(x.data, axis=-1, kind="stable")[..., ::-1][..., :k]
    return [np.take_along_axis(x.data, order, axis=-1), order.astype(np.int32)]


@kernel(OperationType.EMBEDDING_LOOKUP, (I32,))
def embedding_lookup_kernel(call: OpCall) -> list[np.ndarray]:
    """Rows of the value tensor selected by the lookup indices; an index outside the table is an error."""
    lookups, values = required(call, 0), required(call, 1)
    if values.data.ndim < 1:
        raise invalid("EMBEDDING_LOOKUP values must have rank >= 1", "exec.rank")
    rows = _checked_indices(lookups.data.reshape(-1), values.data.shape[0], "EMBEDDING_LOOKUP index")
    check_result_size([rows.size, *values.data.shape[1:]])
    return [values.data[rows]]


@kernel(OperationType.HASHTABLE_LOOKUP, (I32,))
def hashtable_lookup_kernel(call: OpCall) -> list[np.ndarray]:
    """Rows of the value tensor whose key matches each lookup (zeros on a miss), plus a hit mask."""
    lookups, keys, values = required(call, 0), required(call, 1), required(call, 2)
    key_data = keys.data.reshape(-1)
    if keys.type != OperandType.TENSOR_INT32 or lookups.type != OperandType.TENSOR_INT32:
        raise invalid("HASHTABLE_LOOKUP keys and lookups must be TENSOR_INT32", "exec.operand_type")
    if values.data.ndim < 1 or values.data.shape[0] != key_data.size:
        raise invalid(f"{key_data.size} keys for {values.data.shape[:1]} value rows", "exec.hashtable")
    if key_data.size > 1 and np.any(key_data[1:] < key_data[:-1]):
        raise invalid("HASHTABLE_LOOKUP keys must be sorted ascending", "exec.hashtable")
    wanted = lookups.data.reshape(-1)
    check_result_size([wanted.size, *values.data.shape[1:]])
    position = np.searchsorted(key_data, wanted)
    clipped = np.minimum(position, max(key_data.size - 1, 0))
    hits = (position < key_data.size) & (key_data[clipped] == wanted) if key_data.size else np.zeros(wanted.shape, bool)
    out = np.zeros((wanted.size, *values.data.shape[1:]), dtype=values.data.dtype)
    if key_data.size:
        out[hits] = values.data[clipped[hits]]
    return [out, hits.astype(np.uint8)]
