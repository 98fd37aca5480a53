"""The driver's indexing kernels: conformance vectors and hand-computed cases, including index checks."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import OpCall, Tensor, lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels.conftest import run_vector_case, single_op_cases

OPS = {"STRIDED_SLICE", "SLICE", "GATHER", "FILL", "RANK", "TOPK_V2", "EMBEDDING_LOOKUP", "HASHTABLE_LOOKUP"}
CASES = single_op_cases(OPS)

F32, F16, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
Q8 = OperandType.TENSOR_QUANT8_ASYMM


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_vector(case):
    run_vector_case(case)


def tensor(operand_type, values, dtype=np.float32, scale=0.0, zero_point=0):
    data = np.asarray(values, dtype=dtype)
    return Tensor(type=int(operand_type), shape=data.shape, scale=scale, zero_point=zero_point, data=data)


def ints(*values):
    return tensor(I32, list(values), np.int32)


def scalar(value, operand_type=OperandType.INT32, dtype=np.int32):
    return Tensor(type=int(operand_type), shape=(), data=np.array(value, dtype=dtype))


def run(op, inputs, out_types=(F32,)):
    meta = [Tensor(type=int(t), shape=()) for t in out_types]
    return lookup(op).fn(OpCall(inputs=inputs, outputs=meta))


def invalid_argument(fn):
    with pytest.raises(DriverError) as info:
        fn()
    return info.value.status == ErrorStatus.INVALID_ARGUMENT


X = np.arange(12, dtype=np.float32).reshape(3, 4)


def strided(begin, end, strides, begin_mask=0, end_mask=0, shrink=0):
    inputs = [tensor(F32, X), ints(*begin), ints(*end), ints(*strides), scalar(begin_mask), scalar(end_mask)]
    return run(OperationType.STRIDED_SLICE, [*inputs, scalar(shrink)])[0]


def test_strided_slice_hand_examples():
    assert strided([0, 1], [3, 4], [2, 2]).tolist() == [[1, 3], [9, 11]]
    assert strided([-1, 0], [-4, 4], [-1, 3]).tolist() == [[8, 11], [4, 7], [0, 3]]  # end -4 -> -1: through row 0
    assert strided([2, 1], [0, 3], [-1, 1], end_mask=1).tolist() == [[9, 10], [5, 6], [1, 2]]
    assert strided([5, 0], [0, 4], [1, 1], begin_mask=1, end_mask=1).shape == (3, 4)
    assert strided([1, 0], [2, 4], [1, 1], shrink=1).tolist() == [4, 5, 6, 7]
    assert strided([1, 2], [2, 3], [1, 1], shrink=3).tolist() == [6]  # both dimensions shrunk: shape [1]
    assert strided([3, 0], [10, 4], [1, 1]).shape == (0, 4)


def test_strided_slice_rejects_zero_strides_and_out_of_range_shrinks():
    assert invalid_argument(lambda: strided([0, 0], [3, 4], [1, 0]))
    assert invalid_argument(lambda: strided([3, 0], [4, 4], [1, 1], shrink=1))


def test_slice_with_minus_one_size_and_bounds_check():
    x = tensor(F32, X)
    assert run(OperationType.SLICE, [x, ints(1, 2), ints(-1, 1)])[0].tolist() == [[6], [10]]
    assert invalid_argument(lambda: run(OperationType.SLICE, [x, ints(2, 0), ints(2, 1)]))


def test_gather_with_matrix_indices_and_bounds_check():
    x = tensor(F32, X)
    (out,) = run(OperationType.GATHER, [x, scalar(1), tensor(I32, [[3, 0]], np.int32)])
    assert out.shape == (3, 1, 2)
    assert out[:, 0, :].tolist() == [[3, 0], [7, 4], [11, 8]]
    assert invalid_argument(lambda: run(OperationType.GATHER, [x, scalar(0), ints(3)]))
    assert invalid_argument(lambda: run(OperationType.GATHER, [x, scalar(0), ints(-1)]))


@pytest.mark.parametrize(
    ("out_type", "value", "dtype"),
    [(F32, 1.5, np.float32), (F16, -2.0, np.float16), (I32, 7, np.int32)],
)
def test_fill_uses_the_output_type(out_type, value, dtype):
    value_operand = {F32: OperandType.FLOAT32, F16: OperandType.FLOAT16, I32: OperandType.INT32}[out_type]
    (out,) = run(OperationType.FILL, [ints(2, 3), scalar(value, value_operand, dtype)], (out_type,))
    assert out.dtype == dtype
    assert out.shape == (2, 3)
    assert np.all(out == value)


def test_rank_is_an_int32_scalar():
    (out,) = run(OperationType.RANK, [tensor(Q8, np.zeros((2, 1, 3)), np.uint8, 1.0, 0)], (OperandType.INT32,))
    assert out.shape == ()
    assert out.dtype == np.int32
    assert int(out) == 3


def test_topk_sorts_descending_and_lists_larger_indices_first_on_ties():
    x = tensor(I32, [[1, 5, 3, 5], [0, 0, 0, 0]], np.int32)
    values, indices = run(OperationType.TOPK_V2, [x, scalar(3)], (I32, I32))
    assert values.tolist() == [[5, 5, 3], [0, 0, 0]]
    assert indices.tolist() == [[3, 1, 2], [3, 2, 1]]
    assert indices.dtype == np.int32


def test_embedding_lookup_selects_rows_and_checks_indices():
    values = tensor(F32, [[1, 2], [3, 4], [5, 6]])
    assert run(OperationType.EMBEDDING_LOOKUP, [ints(2, 0, 2), values])[0].tolist() == [[5, 6], [1, 2], [5, 6]]
    assert invalid_argument(lambda: run(OperationType.EMBEDDING_LOOKUP, [ints(3), values]))


def test_hashtable_lookup_hits_and_misses():
    keys = ints(-5, 3, 40)
    values = tensor(Q8, [[1, 1], [2, 2], [3, 3]], np.uint8, 1.0, 0)
    out, hits = run(OperationType.HASHTABLE_LOOKUP, [ints(40, 7, -5), keys, values], (Q8, Q8))
    assert out.tolist() == [[3, 3], [0, 0], [1, 1]]
    assert hits.dtype == np.uint8
    assert hits.tolist() == [1, 0, 1]


def test_hashtable_lookup_rejects_unsorted_keys_and_mismatched_values():
    values = tensor(F32, [[1.0], [2.0]])
    assert invalid_argument(lambda: run(OperationType.HASHTABLE_LOOKUP, [ints(1), ints(5, 1), values], (F32, Q8)))
    assert invalid_argument(lambda: run(OperationType.HASHTABLE_LOOKUP, [ints(1), ints(1, 2, 3), values], (F32, Q8)))
