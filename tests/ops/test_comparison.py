"""Comparisons, logical operations and SELECT: laws relating the comparisons (Hypothesis) and hand cases."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays, mutually_broadcastable_shapes

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from tests.ops._build import out, run, shape, tensor, violations

FAST = settings(max_examples=50, deadline=None)
SMALL_FLOATS = st.floats(width=32, min_value=-3, max_value=3, allow_nan=False).map(lambda v: float(round(v)))


def compare(op, a, b, t=T.TENSOR_FLOAT32, **quant):
    return run(op, [tensor(t, a, **quant), tensor(t, b, **quant)], [out(T.TENSOR_BOOL8)])[0]


@FAST
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=3), data=st.data())
def test_less_is_greater_swapped_and_equal_is_not_not_equal(shapes, data):
    a = data.draw(arrays(np.float32, shapes.input_shapes[0], elements=SMALL_FLOATS))
    b = data.draw(arrays(np.float32, shapes.input_shapes[1], elements=SMALL_FLOATS))
    np.testing.assert_array_equal(compare(Op.LESS, a, b), compare(Op.GREATER, b, a))
    np.testing.assert_array_equal(compare(Op.LESS_EQUAL, a, b), compare(Op.GREATER_EQUAL, b, a))
    np.testing.assert_array_equal(compare(Op.EQUAL, a, b), ~compare(Op.NOT_EQUAL, a, b))
    np.testing.assert_array_equal(compare(Op.LESS_EQUAL, a, b), compare(Op.LESS, a, b) | compare(Op.EQUAL, a, b))


def test_comparisons_broadcast():
    a, b = [[1.0], [2.0]], [1.0, 2.0, 3.0]
    assert compare(Op.GREATER, a, b).tolist() == [[False, False, False], [True, False, False]]
    assert compare(Op.NOT_EQUAL, a, b).tolist() == [[False, True, True], [True, False, True]]
    assert shape(Op.LESS, [tensor(T.TENSOR_FLOAT32, a), tensor(T.TENSOR_FLOAT32, b)], [out(T.TENSOR_BOOL8)]) == [(2, 3)]


def test_quantized_comparison_uses_real_values():
    # a: 1.0 * (q - 128) = [1, 2]; b: 2.0 * (129 - 128) = 2
    q8 = T.TENSOR_QUANT8_ASYMM
    a = tensor(q8, [129, 130], scale=1.0, zero_point=128)
    b = tensor(q8, [129], scale=2.0, zero_point=128)
    assert run(Op.EQUAL, [a, b], [out(T.TENSOR_BOOL8)])[0].tolist() == [False, True]
    assert run(Op.LESS, [a, b], [out(T.TENSOR_BOOL8)])[0].tolist() == [True, False]


def test_booleans_compare_false_below_true():
    assert compare(Op.GREATER, [True, False, True], [False, False, True], t=T.TENSOR_BOOL8).tolist() == [
        True,
        False,
        False,
    ]


def test_int32_comparison_is_exact():
    big = 2**31 - 1
    assert compare(Op.LESS, [big - 1, big], [big, big], t=T.TENSOR_INT32).tolist() == [True, False]


def test_logical_operations():
    b8 = T.TENSOR_BOOL8
    a, b = tensor(b8, [[True], [False]]), tensor(b8, [True, False])
    assert run(Op.LOGICAL_AND, [a, b], [out(b8)])[0].tolist() == [[True, False], [False, False]]
    assert run(Op.LOGICAL_OR, [a, b], [out(b8)])[0].tolist() == [[True, True], [True, False]]
    assert run(Op.LOGICAL_NOT, [b], [out(b8)])[0].tolist() == [False, True]


def test_select_chooses_elementwise():
    cond = tensor(T.TENSOR_BOOL8, [True, False, True])
    a, b = tensor(T.TENSOR_INT32, [1, 2, 3]), tensor(T.TENSOR_INT32, [-1, -2, -3])
    assert run(Op.SELECT, [cond, a, b], [out(T.TENSOR_INT32)])[0].tolist() == [1, -2, 3]


def test_select_requantizes_each_branch():
    # a: 0.5 * (q - 0) = [1, 2]; b: 1.0 * (q - 10) = [5, 6]; output scale 0.25 -> [4, 24]
    q8 = T.TENSOR_QUANT8_ASYMM
    cond = tensor(T.TENSOR_BOOL8, [True, False])
    a, b = tensor(q8, [2, 4], scale=0.5), tensor(q8, [15, 16], scale=1.0, zero_point=10)
    assert run(Op.SELECT, [cond, a, b], [out(q8, scale=0.25)])[0].tolist() == [4, 24]


def test_select_needs_equal_shapes():
    cond = tensor(T.TENSOR_BOOL8, [True, False])
    a, b = tensor(T.TENSOR_FLOAT32, [1.0, 2.0]), tensor(T.TENSOR_FLOAT32, [1.0])
    assert violations(Op.SELECT, [cond, a, b], [out(T.TENSOR_FLOAT32)])
    assert not violations(Op.SELECT, [cond, a, a], [out(T.TENSOR_FLOAT32)])
