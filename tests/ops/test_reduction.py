"""Reductions and arg min/max: hand-computed values, axes handling, shapes and checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.ops.common import ExecutionError, UnspecifiedResult
from tests.ops._build import out, run, scalar, shape, tensor, violations

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)  # x[i, j, k] = 12 i + 4 j + k


def reduce(op, x, axes, keep, t=T.TENSOR_FLOAT32, keep_type=T.BOOL, **quant):
    inputs = [tensor(t, x, **quant), tensor(T.TENSOR_INT32, axes), scalar(keep_type, keep)]
    return run(op, inputs, [out(t, **quant)])[0]


def test_reduce_sum_with_negative_and_repeated_axes():
    # Summing over axes 0 and 2: sum_i sum_k (12 i + 4 j + k) = 2 * (4 * 4 j + 6) + 12 * 4 = 32 j + 60
    result = reduce(Op.REDUCE_SUM, X, [0, -1, 2], keep=False)
    assert result.tolist() == [60.0, 92.0, 124.0]
    assert reduce(Op.REDUCE_SUM, X, [0, 2], keep=True).shape == (1, 3, 1)


def test_reduce_max_min_prod():
    assert reduce(Op.REDUCE_MAX, X, [1], keep=False).tolist() == [[8, 9, 10, 11], [20, 21, 22, 23]]
    assert reduce(Op.REDUCE_MIN, X, [0, 1], keep=False).tolist() == [0, 1, 2, 3]
    assert reduce(Op.REDUCE_PROD, [[1.0, 2.0], [3.0, 4.0]], [1], keep=False).tolist() == [2.0, 12.0]


def test_reduce_max_quantized_keeps_stored_values():
    q8 = T.TENSOR_QUANT8_ASYMM
    result = reduce(Op.REDUCE_MAX, [[3, 200], [250, 7]], [0], keep=False, t=q8, scale=0.5, zero_point=100)
    assert result.tolist() == [250, 200] and result.dtype == np.uint8


def test_reduce_all_any():
    b = [[True, False], [True, True]]
    assert reduce(Op.REDUCE_ALL, b, [1], keep=False, t=T.TENSOR_BOOL8).tolist() == [False, True]
    assert reduce(Op.REDUCE_ANY, b, [0], keep=True, t=T.TENSOR_BOOL8).tolist() == [[True, True]]


def test_mean_keep_dims_is_an_int32_kept_when_positive():
    assert reduce(Op.MEAN, X, [2], keep=2, keep_type=T.INT32).shape == (2, 3, 1)
    result = reduce(Op.MEAN, X, [2], keep=0, keep_type=T.INT32)
    assert result.tolist() == [[1.5, 5.5, 9.5], [13.5, 17.5, 21.5]]


def test_mean_quantized_rounds_half_away_from_zero():
    # Mean of reals 1.0 and 2.0 with scale 1 is 1.5 -> 2 (ties away from zero)
    q8 = T.TENSOR_QUANT8_ASYMM
    assert reduce(Op.MEAN, [[1, 2]], [1], keep=0, t=q8, keep_type=T.INT32, scale=1.0).tolist() == [2]


def test_reduce_shape_with_unknown_axes():
    x, axes = tensor(T.TENSOR_FLOAT32, X), tensor(T.TENSOR_INT32, [1])
    o = [out(T.TENSOR_FLOAT32)]
    assert shape(Op.REDUCE_SUM, [x, axes, scalar(T.BOOL, True)], o, known=[2]) == [(0, 0, 0)]
    assert shape(Op.REDUCE_SUM, [x, axes, scalar(T.BOOL, False)], o, known=[2]) == [()]
    assert shape(Op.REDUCE_SUM, [x, axes, scalar(T.BOOL, False)], o) == [(2, 4)]


def test_axes_out_of_range_are_reported():
    inputs = [tensor(T.TENSOR_FLOAT32, X), tensor(T.TENSOR_INT32, [3]), scalar(T.BOOL, False)]
    assert violations(Op.REDUCE_SUM, inputs, [out(T.TENSOR_FLOAT32)])


@settings(max_examples=50, deadline=None)
@given(
    x=arrays(np.float32, array_shapes(min_dims=1, max_dims=4, max_side=4), elements=st.integers(-4, 4).map(float)),
    data=st.data(),
)
def test_argmax_points_at_the_first_maximum(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    inputs = [tensor(T.TENSOR_FLOAT32, x), scalar(T.INT32, axis)]
    (index,) = run(Op.ARGMAX, inputs, [out(T.TENSOR_INT32)])
    moved = np.moveaxis(x, axis, -1)
    picked = np.take_along_axis(moved, index[..., None].astype(np.int64), axis=-1)[..., 0]
    assert index.dtype == np.int32
    np.testing.assert_array_equal(picked, moved.max(axis=-1))
    # No earlier position along the axis holds the maximum.
    for pos in np.ndindex(index.shape):
        assert moved[pos][: index[pos]].max(initial=-np.inf) < picked[pos]


def test_argmin_with_ties_and_negative_axis():
    x = tensor(T.TENSOR_INT32, [[3, 1, 1], [0, 5, 0]])
    assert run(Op.ARGMIN, [x, scalar(T.INT32, -1)], [out(T.TENSOR_INT32)])[0].tolist() == [1, 0]
    assert shape(Op.ARGMIN, [x, scalar(T.INT32, -1)], [out(T.TENSOR_INT32)]) == [(2,)]


def test_argmax_of_a_vector_is_zero_dimensional():
    x = tensor(T.TENSOR_QUANT8_ASYMM, [1, 9, 3], scale=1.0)
    (result,) = run(Op.ARGMAX, [x, scalar(T.INT32, 0)], [out(T.TENSOR_INT32)])
    assert result.shape == () and int(result) == 1


def test_argmax_axis_out_of_range():
    x = tensor(T.TENSOR_FLOAT32, [[1.0, 2.0]])
    assert violations(Op.ARGMAX, [x, scalar(T.INT32, 2)], [out(T.TENSOR_INT32)])
    with pytest.raises(ExecutionError):
        run(Op.ARGMAX, [x, scalar(T.INT32, 2)], [out(T.TENSOR_INT32)])


def test_reducing_an_empty_set():
    empty = np.zeros((0, 3), np.float32)
    assert reduce(Op.REDUCE_SUM, empty, [0], keep=False).tolist() == [0.0, 0.0, 0.0]
    assert reduce(Op.REDUCE_PROD, empty, [0], keep=False).tolist() == [1.0, 1.0, 1.0]
    assert reduce(Op.REDUCE_MAX, empty, [1], keep=False).shape == (0,)  # no group to reduce
    with pytest.raises(UnspecifiedResult):
        reduce(Op.REDUCE_MAX, empty, [0], keep=False)
