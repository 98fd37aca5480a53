"""Slicing, gathering, generating and looking up: hand-computed cases and the failures the HAL requires."""

from __future__ import annotations

import numpy as np
import pytest

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.ops.common import ExecutionError
from tests.ops._build import out, run, scalar, shape, tensor, violations

F32, I32 = T.TENSOR_FLOAT32, T.TENSOR_INT32
X = np.arange(12, dtype=np.float32).reshape(3, 4)


def strided(x, begin, end, strides, begin_mask=0, end_mask=0, shrink=0):
    inputs = [
        tensor(F32, x),
        tensor(I32, begin),
        tensor(I32, end),
        tensor(I32, strides),
        scalar(T.INT32, begin_mask),
        scalar(T.INT32, end_mask),
        scalar(T.INT32, shrink),
    ]
    return run(Op.STRIDED_SLICE, inputs, [out(F32)])[0], shape(Op.STRIDED_SLICE, inputs, [out(F32)])[0]


def test_strided_slice_basic_and_negative_indices():
    result, dims = strided(X, [1, -3], [3, 4], [1, 2])
    assert result.tolist() == [[5, 7], [9, 11]] and dims == (2, 2)


def test_strided_slice_reverses_with_a_negative_stride():
    # Masked begin/end with stride -1 walk the whole dimension backwards.
    result, dims = strided(X, [0, 0], [0, 0], [-1, 1], begin_mask=0b11, end_mask=0b11)
    assert result.tolist() == X[::-1].tolist() and dims == (3, 4)
    # An unmasked end of -1 means the last element, so the slice 3 -> -1 is empty.
    result, dims = strided(X, [2, 0], [-1, 4], [-1, 1])
    assert result.shape == (0, 4) and dims == (0, 4)


def test_strided_slice_shrinks_axes():
    result, dims = strided(X, [1, 0], [2, 4], [1, 1], shrink=0b01)
    assert result.tolist() == [4, 5, 6, 7] and dims == (4,)


def test_strided_slice_shrink_must_select_one_element():
    inputs = [tensor(F32, X), tensor(I32, [0, 0]), tensor(I32, [2, 4]), tensor(I32, [1, 1])]
    masks = [scalar(T.INT32, 0), scalar(T.INT32, 0), scalar(T.INT32, 1)]
    assert violations(Op.STRIDED_SLICE, inputs + masks, [out(F32)])
    with pytest.raises(ExecutionError):
        run(Op.STRIDED_SLICE, inputs + masks, [out(F32)])


def test_strided_slice_clamps_out_of_range_indices():
    result, dims = strided(X, [-10, 2], [10, 100], [2, 1])
    assert result.tolist() == [[2, 3], [10, 11]] and dims == (2, 2)


def test_slice_with_minus_one_size():
    inputs = [tensor(F32, X), tensor(I32, [1, 1]), tensor(I32, [-1, 2])]
    (result,) = run(Op.SLICE, inputs, [out(F32)])
    assert result.tolist() == [[5, 6], [9, 10]]
    assert shape(Op.SLICE, inputs, [out(F32)]) == [(2, 2)]


def test_slice_out_of_bounds_fails():
    inputs = [tensor(F32, X), tensor(I32, [2, 0]), tensor(I32, [2, 1])]
    assert violations(Op.SLICE, inputs, [out(F32)])
    with pytest.raises(ExecutionError):
        run(Op.SLICE, inputs, [out(F32)])


def test_gather_with_higher_rank_indices():
    inputs = [tensor(F32, X), scalar(T.INT32, 1), tensor(I32, [[3, 0], [1, 1]])]
    (result,) = run(Op.GATHER, inputs, [out(F32)])
    assert result.shape == (3, 2, 2) and result[1].tolist() == [[7, 4], [5, 5]]
    assert shape(Op.GATHER, inputs, [out(F32)]) == [(3, 2, 2)]


def test_gather_index_out_of_bounds_fails():
    with pytest.raises(ExecutionError):
        run(Op.GATHER, [tensor(F32, X), scalar(T.INT32, 0), tensor(I32, [3])], [out(F32)])


def test_fill_and_rank():
    (filled,) = run(Op.FILL, [tensor(I32, [2, 3]), scalar(T.FLOAT16, 1.5)], [out(T.TENSOR_FLOAT16)])
    assert filled.dtype == np.float16 and filled.tolist() == [[1.5] * 3] * 2
    assert shape(Op.FILL, [tensor(I32, [2, 3]), scalar(T.INT32, 7)], [out(I32)]) == [(2, 3)]
    assert shape(Op.FILL, [tensor(I32, [2, 3]), scalar(T.INT32, 7)], [out(I32)], known=[]) == [(0, 0)]
    (rank,) = run(Op.RANK, [tensor(T.TENSOR_BOOL8, np.zeros((1, 2, 3), bool))], [out(T.INT32)])
    assert rank.shape == () and rank.dtype == np.int32 and int(rank) == 3


def test_topk_orders_ties_by_larger_index_first():
    x = tensor(F32, [[1.0, 3.0, 3.0, 2.0], [0.0, -1.0, 5.0, 0.0]])
    values, indices = run(Op.TOPK_V2, [x, scalar(T.INT32, 3)], [out(F32), out(I32)])
    assert values.tolist() == [[3.0, 3.0, 2.0], [5.0, 0.0, 0.0]]
    assert indices.tolist() == [[2, 1, 3], [2, 3, 0]]


def test_topk_k_must_fit():
    x = tensor(T.TENSOR_QUANT8_ASYMM, [[1, 2]], scale=1.0)
    assert violations(Op.TOPK_V2, [x, scalar(T.INT32, 3)], [out(T.TENSOR_QUANT8_ASYMM, scale=1.0), out(I32)])
    assert violations(Op.TOPK_V2, [x, scalar(T.INT32, 0)], [out(T.TENSOR_QUANT8_ASYMM, scale=1.0), out(I32)])


def test_embedding_lookup():
    values = tensor(F32, X)
    (result,) = run(Op.EMBEDDING_LOOKUP, [tensor(I32, [2, 0]), values], [out(F32)])
    assert result.tolist() == [X[2].tolist(), X[0].tolist()]
    with pytest.raises(ExecutionError):
        run(Op.EMBEDDING_LOOKUP, [tensor(I32, [3]), values], [out(F32)])


def test_hashtable_lookup_hits_and_misses():
    q8 = T.TENSOR_QUANT8_ASYMM
    inputs = [tensor(I32, [7, 5, -1]), tensor(I32, [-1, 7]), tensor(I32, [[1, 2], [3, 4]])]
    result, hits = run(Op.HASHTABLE_LOOKUP, inputs, [out(I32), out(q8, scale=1.0)])
    assert result.tolist() == [[3, 4], [0, 0], [1, 2]]
    assert hits.tolist() == [1, 0, 1] and hits.dtype == np.uint8
    assert shape(Op.HASHTABLE_LOOKUP, inputs, [out(I32), out(q8, scale=1.0)]) == [(3, 2), (3,)]


def test_hashtable_lookup_checks():
    q8 = T.TENSOR_QUANT8_ASYMM
    inputs = [tensor(I32, [7]), tensor(I32, [7, -1]), tensor(F32, [[1.0], [2.0]])]
    assert violations(Op.HASHTABLE_LOOKUP, inputs, [out(F32), out(q8, scale=1.0)])  # keys not sorted
    sorted_inputs = [inputs[0], tensor(I32, [-1, 7]), inputs[2]]
    assert violations(Op.HASHTABLE_LOOKUP, sorted_inputs, [out(F32), out(q8, scale=0.5)])  # hits quantization
    assert not violations(Op.HASHTABLE_LOOKUP, sorted_inputs, [out(F32), out(q8, scale=1.0)])
