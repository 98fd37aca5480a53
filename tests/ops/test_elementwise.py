"""Element-wise arithmetic: algebraic laws (Hypothesis) and hand-computed cases the vectors do not cover."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays, mutually_broadcastable_shapes

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.ops.common import UnspecifiedResult
from tests.ops._build import out, run, scalar, shape, tensor, violations

FAST = settings(max_examples=50, deadline=None)
FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)


def add(a, b, activation=0, t=T.TENSOR_FLOAT32):
    return run(Op.ADD, [tensor(t, a), tensor(t, b), scalar(T.INT32, activation)], [out(t)])[0]


@FAST
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=4, max_side=3),
    data=st.data(),
    activation=st.sampled_from([0, 1, 2, 3]),
)
def test_add_commutes(shapes, data, activation):
    a = data.draw(arrays(np.float32, shapes.input_shapes[0], elements=FLOAT32))
    b = data.draw(arrays(np.float32, shapes.input_shapes[1], elements=FLOAT32))
    np.testing.assert_array_equal(add(a, b, activation), add(b, a, activation))


@FAST
@given(x=arrays(np.float32, array_shapes(min_dims=1, max_dims=4, max_side=4), elements=FLOAT32))
def test_neg_twice_is_identity_float32(x):
    once = run(Op.NEG, [tensor(T.TENSOR_FLOAT32, x)], [out(T.TENSOR_FLOAT32)])[0]
    twice = run(Op.NEG, [tensor(T.TENSOR_FLOAT32, once)], [out(T.TENSOR_FLOAT32)])[0]
    np.testing.assert_array_equal(twice, x)


@FAST
@given(
    x=arrays(np.int32, array_shapes(min_dims=1, max_dims=4, max_side=4), elements=st.integers(-(2**31) + 1, 2**31 - 1))
)
def test_neg_twice_is_identity_int32(x):
    once = run(Op.NEG, [tensor(T.TENSOR_INT32, x)], [out(T.TENSOR_INT32)])[0]
    twice = run(Op.NEG, [tensor(T.TENSOR_INT32, once)], [out(T.TENSOR_INT32)])[0]
    np.testing.assert_array_equal(twice, x)


def test_add_applies_fused_activation():
    np.testing.assert_array_equal(add([1.0, -2.0, 7.0], [0.5, 0.0, 0.0], activation=3), [1.5, 0.0, 6.0])
    np.testing.assert_array_equal(add([1.0, -2.0, 7.0], [0.5, 0.0, 0.0], activation=2), [1.0, -1.0, 1.0])


def test_add_requantizes_inputs_with_different_scales():
    # 1.0 (0.5 * (12 - 10)) + 2.0 (0.25 * 8) = 3.0 -> 3.0 / 0.1 + 5 = 35
    a = tensor(T.TENSOR_QUANT8_ASYMM, [12], scale=0.5, zero_point=10)
    b = tensor(T.TENSOR_QUANT8_ASYMM, [8], scale=0.25, zero_point=0)
    (result,) = run(Op.ADD, [a, b, scalar(T.INT32, 0)], [out(T.TENSOR_QUANT8_ASYMM, scale=0.1, zero_point=5)])
    assert result.tolist() == [35] and result.dtype == np.uint8


def test_add_quantized_saturates():
    a = tensor(T.TENSOR_QUANT8_ASYMM_SIGNED, [127, -128], scale=1.0, zero_point=0)
    (result,) = run(Op.ADD, [a, a, scalar(T.INT32, 0)], [out(T.TENSOR_QUANT8_ASYMM_SIGNED, scale=1.0)])
    assert result.tolist() == [127, -128]


def test_int32_overflow_is_unspecified():
    big = tensor(T.TENSOR_INT32, [2**31 - 1])
    with pytest.raises(UnspecifiedResult):
        run(Op.ADD, [big, big, scalar(T.INT32, 0)], [out(T.TENSOR_INT32)])


def test_int32_div_is_floor_division():
    (result,) = run(
        Op.DIV,
        [tensor(T.TENSOR_INT32, [5, -5, 7, -7]), tensor(T.TENSOR_INT32, [2, 2, -2, -2]), scalar(T.INT32, 0)],
        [out(T.TENSOR_INT32)],
    )
    assert result.tolist() == [2, -3, -4, 3]


def test_int32_division_by_zero_is_unspecified():
    with pytest.raises(UnspecifiedResult):
        run(
            Op.DIV,
            [tensor(T.TENSOR_INT32, [1]), tensor(T.TENSOR_INT32, [0]), scalar(T.INT32, 0)],
            [out(T.TENSOR_INT32)],
        )


def test_float_division_by_zero_gives_infinity():
    f32 = T.TENSOR_FLOAT32
    (result,) = run(Op.DIV, [tensor(f32, [1.0, -1.0]), tensor(f32, [0.0, 0.0]), scalar(T.INT32, 0)], [out(f32)])
    assert result.tolist() == [np.inf, -np.inf]


def test_broadcast_shape_follows_the_hal_example():
    a, b = tensor(T.TENSOR_FLOAT32, np.zeros((4, 1, 2))), tensor(T.TENSOR_FLOAT32, np.zeros((5, 4, 3, 1)))
    assert shape(Op.SUB, [a, b, scalar(T.INT32, 0)], [out(T.TENSOR_FLOAT32)]) == [(5, 4, 3, 2)]
    (result,) = run(Op.SUB, [a, b, scalar(T.INT32, 0)], [out(T.TENSOR_FLOAT32)])
    assert result.shape == (5, 4, 3, 2)


def test_broadcast_shape_with_unknown_dimensions():
    a = tensor(T.TENSOR_FLOAT32, np.zeros((2, 3)))
    a.operand.dimensions = [0, 3]
    b = tensor(T.TENSOR_FLOAT32, np.zeros((2, 1)))
    assert shape(Op.MUL, [a, b, scalar(T.INT32, 0)], [out(T.TENSOR_FLOAT32)]) == [(2, 3)]


def test_incompatible_shapes_are_reported():
    a, b = tensor(T.TENSOR_FLOAT32, np.zeros((2, 3))), tensor(T.TENSOR_FLOAT32, np.zeros((4,)))
    assert violations(Op.ADD, [a, b, scalar(T.INT32, 0)], [out(T.TENSOR_FLOAT32)])


def test_int32_arithmetic_only_allows_no_activation():
    a = tensor(T.TENSOR_INT32, [1])
    assert violations(Op.MUL, [a, a, scalar(T.INT32, 1)], [out(T.TENSOR_INT32)])
    assert not violations(Op.MUL, [a, a, scalar(T.INT32, 0)], [out(T.TENSOR_INT32)])


def test_activation_code_must_be_known():
    a = tensor(T.TENSOR_FLOAT32, [1.0])
    assert violations(Op.ADD, [a, a, scalar(T.INT32, 4)], [out(T.TENSOR_FLOAT32)])


def test_quantized_mul_output_scale_must_exceed_the_product():
    a = tensor(T.TENSOR_QUANT8_ASYMM, [1], scale=0.5, zero_point=0)
    assert violations(Op.MUL, [a, a, scalar(T.INT32, 0)], [out(T.TENSOR_QUANT8_ASYMM, scale=0.25)])
    assert not violations(Op.MUL, [a, a, scalar(T.INT32, 0)], [out(T.TENSOR_QUANT8_ASYMM, scale=0.3)])


def test_minimum_compares_real_values():
    # 0.5 * (4 - 0) = 2.0 vs 1.0 * (3 - 0) = 3.0 and 0.5 * 10 = 5.0 vs 1.0 * 1 = 1.0
    a = tensor(T.TENSOR_QUANT8_ASYMM, [4, 10], scale=0.5, zero_point=0)
    b = tensor(T.TENSOR_QUANT8_ASYMM, [3, 1], scale=1.0, zero_point=0)
    (result,) = run(Op.MINIMUM, [a, b], [out(T.TENSOR_QUANT8_ASYMM, scale=0.25, zero_point=0)])
    assert result.tolist() == [8, 4]


@pytest.mark.parametrize(
    ("op", "x", "expected"),
    [
        (Op.ABS, [-3.5, 2.0], [3.5, 2.0]),
        (Op.EXP, [0.0, 1.0], [1.0, np.e]),
        (Op.LOG, [1.0, np.e], [0.0, 1.0]),
        (Op.SQRT, [4.0, 2.25], [2.0, 1.5]),
        (Op.RSQRT, [4.0, 0.25], [0.5, 2.0]),
        (Op.SIN, [0.0, np.pi / 2], [0.0, 1.0]),
        (Op.FLOOR, [-1.5, 2.5], [-2.0, 2.0]),
    ],
)
def test_unary_math(op, x, expected):
    for t in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        (result,) = run(op, [tensor(t, x)], [out(t)])
        assert result.dtype == np.dtype(np.float32 if t == T.TENSOR_FLOAT32 else np.float16)
        np.testing.assert_allclose(result.astype(np.float64), expected, rtol=1e-3, atol=1e-6)


def test_abs_int32_and_its_overflow():
    (result,) = run(Op.ABS, [tensor(T.TENSOR_INT32, [-3, 4])], [out(T.TENSOR_INT32)])
    assert result.tolist() == [3, 4]
    with pytest.raises(UnspecifiedResult):
        run(Op.ABS, [tensor(T.TENSOR_INT32, [-(2**31)])], [out(T.TENSOR_INT32)])


def test_pow_broadcasts():
    f32 = T.TENSOR_FLOAT32
    (result,) = run(Op.POW, [tensor(f32, [[2.0], [9.0]]), tensor(f32, [3.0, 0.5])], [out(f32)])
    np.testing.assert_allclose(result, [[8.0, np.sqrt(2.0)], [729.0, 3.0]], rtol=1e-6)
