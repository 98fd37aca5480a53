"""Data movement: round-trip laws (Hypothesis) and hand-computed layouts, paddings and checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.ops.common import ExecutionError
from tests.ops._build import OMITTED, out, run, scalar, shape, tensor, violations

FAST = settings(max_examples=50, deadline=None)
FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)
F32 = T.TENSOR_FLOAT32


@FAST
@given(
    x=arrays(np.float32, array_shapes(min_dims=1, max_dims=4, max_side=3), elements=FLOAT32),
    data=st.data(),
)
def test_concatenation_then_split_is_identity(x, data):
    axis = data.draw(st.integers(0, x.ndim - 1))
    copies = data.draw(st.integers(1, 3))
    whole = run(Op.CONCATENATION, [tensor(F32, x)] * copies + [scalar(T.INT32, axis)], [out(F32)])[0]
    parts = run(Op.SPLIT, [tensor(F32, whole), scalar(T.INT32, axis), scalar(T.INT32, copies)], [out(F32)] * copies)
    assert len(parts) == copies
    for part in parts:
        np.testing.assert_array_equal(part, x)


@FAST
@given(x=arrays(np.float32, array_shapes(min_dims=1, max_dims=4, max_side=3), elements=FLOAT32), data=st.data())
def test_transpose_twice_with_the_inverse_permutation_is_identity(x, data):
    perm = data.draw(st.permutations(range(x.ndim)))
    inverse = list(np.argsort(perm))
    once = run(Op.TRANSPOSE, [tensor(F32, x), tensor(T.TENSOR_INT32, perm)], [out(F32)])[0]
    assert once.shape == tuple(x.shape[p] for p in perm)
    back = run(Op.TRANSPOSE, [tensor(F32, once), tensor(T.TENSOR_INT32, inverse)], [out(F32)])[0]
    np.testing.assert_array_equal(back, x)


@FAST
@given(x=arrays(np.uint8, array_shapes(min_dims=1, max_dims=4, max_side=4)), data=st.data())
def test_reshape_preserves_elements_in_order(x, data):
    target = list(data.draw(st.permutations(x.shape)))  # same element count, other shape
    if data.draw(st.booleans()):
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    q8 = T.TENSOR_QUANT8_ASYMM
    (result,) = run(
        Op.RESHAPE, [tensor(q8, x, 0.5, 3), tensor(T.TENSOR_INT32, target)], [out(q8, scale=0.5, zero_point=3)]
    )
    assert result.size == x.size
    np.testing.assert_array_equal(result.reshape(-1), x.reshape(-1))


def test_reshape_resolves_minus_one_and_rejects_wrong_counts():
    x = tensor(F32, np.zeros((2, 3, 4)))
    assert shape(Op.RESHAPE, [x, tensor(T.TENSOR_INT32, [4, -1])], [out(F32)]) == [(4, 6)]
    assert violations(Op.RESHAPE, [x, tensor(T.TENSOR_INT32, [5, -1])], [out(F32)])
    assert violations(Op.RESHAPE, [x, tensor(T.TENSOR_INT32, [-1, -1])], [out(F32)])
    with pytest.raises(ExecutionError):
        run(Op.RESHAPE, [x, tensor(T.TENSOR_INT32, [7])], [out(F32)])
    # Target not constant: only the rank is known.
    assert shape(Op.RESHAPE, [x, tensor(T.TENSOR_INT32, [4, -1])], [out(F32)], known=[]) == [(0, 0)]


def test_squeeze():
    x = tensor(F32, np.zeros((1, 3, 1, 2)))
    assert run(Op.SQUEEZE, [x], [out(F32)])[0].shape == (3, 2)
    assert run(Op.SQUEEZE, [x, OMITTED], [out(F32)])[0].shape == (3, 2)
    assert run(Op.SQUEEZE, [x, tensor(T.TENSOR_INT32, [-2])], [out(F32)])[0].shape == (1, 3, 2)
    assert violations(Op.SQUEEZE, [x, tensor(T.TENSOR_INT32, [1])], [out(F32)])
    with pytest.raises(ExecutionError):
        run(Op.SQUEEZE, [x, tensor(T.TENSOR_INT32, [1])], [out(F32)])


def test_expand_dims_negative_axis():
    x = tensor(T.TENSOR_INT32, [[1, 2], [3, 4]])
    assert run(Op.EXPAND_DIMS, [x, scalar(T.INT32, -1)], [out(T.TENSOR_INT32)])[0].shape == (2, 2, 1)
    assert run(Op.EXPAND_DIMS, [x, scalar(T.INT32, -3)], [out(T.TENSOR_INT32)])[0].shape == (1, 2, 2)
    assert violations(Op.EXPAND_DIMS, [x, scalar(T.INT32, 3)], [out(T.TENSOR_INT32)])


def test_transpose_defaults_to_reversed_axes():
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    (result,) = run(Op.TRANSPOSE, [tensor(F32, x)], [out(F32)])
    np.testing.assert_array_equal(result, x.T)
    assert violations(Op.TRANSPOSE, [tensor(F32, x), tensor(T.TENSOR_INT32, [0, 0, 1])], [out(F32)])


def test_concatenation_requantizes_mixed_inputs():
    # 0.5 * (4 - 0) = 2.0 and 1.0 * (13 - 10) = 3.0 into scale 0.25, zero point 1 -> 9 and 13
    q8 = T.TENSOR_QUANT8_ASYMM
    a, b = tensor(q8, [4], scale=0.5), tensor(q8, [13], scale=1.0, zero_point=10)
    assert run(Op.CONCATENATION, [a, b, scalar(T.INT32, 0)], [out(q8, scale=0.25, zero_point=1)])[0].tolist() == [9, 13]


def test_concatenation_shapes_and_checks():
    a, b = tensor(F32, np.zeros((2, 3))), tensor(F32, np.zeros((2, 5)))
    assert shape(Op.CONCATENATION, [a, b, scalar(T.INT32, 1)], [out(F32)]) == [(2, 8)]
    assert violations(Op.CONCATENATION, [a, b, scalar(T.INT32, 0)], [out(F32)])
    assert not violations(Op.CONCATENATION, [a, b, scalar(T.INT32, 1)], [out(F32)])
    # The HAL documents no negative axis for CONCATENATION.
    assert violations(Op.CONCATENATION, [a, b, scalar(T.INT32, -1)], [out(F32)])
    with pytest.raises(ExecutionError):
        run(Op.CONCATENATION, [a, b, scalar(T.INT32, -1)], [out(F32)])


def test_split_needs_as_many_outputs_as_splits():
    x = tensor(F32, np.zeros((4,)))
    assert violations(Op.SPLIT, [x, scalar(T.INT32, 0), scalar(T.INT32, 2)], [out(F32)] * 3)
    assert violations(Op.SPLIT, [x, scalar(T.INT32, 0), scalar(T.INT32, 3)], [out(F32)] * 3)


def test_tile():
    (result,) = run(Op.TILE, [tensor(T.TENSOR_INT32, [[1, 2]]), tensor(T.TENSOR_INT32, [2, 2])], [out(T.TENSOR_INT32)])
    assert result.tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]


def test_pad_fills_with_logical_zero():
    q8 = T.TENSOR_QUANT8_ASYMM
    x = tensor(q8, [[5]], scale=0.5, zero_point=7)
    (result,) = run(Op.PAD, [x, tensor(T.TENSOR_INT32, [[1, 0], [0, 2]])], [out(q8, scale=0.5, zero_point=7)])
    assert result.tolist() == [[7, 7, 7], [5, 7, 7]]
    (floats,) = run(Op.PAD, [tensor(F32, [1.0]), tensor(T.TENSOR_INT32, [[1, 1]])], [out(F32)])
    assert floats.tolist() == [0.0, 1.0, 0.0]


def test_pad_v2_fills_with_the_given_value():
    (floats,) = run(
        Op.PAD_V2, [tensor(F32, [1.0]), tensor(T.TENSOR_INT32, [[2, 0]]), scalar(T.FLOAT32, 9.5)], [out(F32)]
    )
    assert floats.tolist() == [9.5, 9.5, 1.0]
    q8 = T.TENSOR_QUANT8_ASYMM
    x = tensor(q8, [5], scale=0.5, zero_point=7)
    (stored,) = run(
        Op.PAD_V2, [x, tensor(T.TENSOR_INT32, [[0, 1]]), scalar(T.INT32, 3)], [out(q8, scale=0.5, zero_point=7)]
    )
    assert stored.tolist() == [5, 3]


def test_pad_checks():
    x = tensor(F32, np.zeros((2, 2)))
    assert violations(Op.PAD, [x, tensor(T.TENSOR_INT32, [[0, 1], [-1, 0]])], [out(F32)])
    assert violations(Op.PAD, [x, tensor(T.TENSOR_INT32, [[0, 1]])], [out(F32)])
    assert shape(Op.PAD, [x, tensor(T.TENSOR_INT32, [[0, 1], [2, 3]])], [out(F32)]) == [(3, 7)]


def test_depth_to_space_moves_depth_into_blocks():
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 1, 8)  # 2x2 blocks of depth 2
    (nhwc,) = run(Op.DEPTH_TO_SPACE, [tensor(F32, x), scalar(T.INT32, 2)], [out(F32)])
    assert nhwc.shape == (1, 2, 2, 2)
    assert nhwc[0, :, :, 0].tolist() == [[0, 2], [4, 6]] and nhwc[0, :, :, 1].tolist() == [[1, 3], [5, 7]]
    nchw_in = x.transpose(0, 3, 1, 2)
    (nchw,) = run(Op.DEPTH_TO_SPACE, [tensor(F32, nchw_in), scalar(T.INT32, 2), scalar(T.BOOL, True)], [out(F32)])
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))


@FAST
@given(
    x=arrays(
        np.float32,
        st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.integers(1, 3)),
        elements=FLOAT32,
    ),
    block=st.integers(1, 3),
    nchw=st.booleans(),
)
def test_space_to_depth_inverts_depth_to_space(x, block, nchw):
    n, h, w, c = x.shape
    x = np.resize(x, (n, h, w, c * block * block))
    if nchw:
        x = x.transpose(0, 3, 1, 2)
    params = [scalar(T.INT32, block), scalar(T.BOOL, nchw)]
    (spread,) = run(Op.DEPTH_TO_SPACE, [tensor(F32, x), *params], [out(F32)])
    (back,) = run(Op.SPACE_TO_DEPTH, [tensor(F32, spread), *params], [out(F32)])
    np.testing.assert_array_equal(back, x)


@FAST
@given(
    x=arrays(
        np.float32,
        st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2)),
        elements=FLOAT32,
    ),
    bh=st.integers(1, 3),
    bw=st.integers(1, 3),
)
def test_batch_to_space_inverts_space_to_batch(x, bh, bw):
    n, h, w, c = x.shape
    x = np.resize(x, (n, h * bh, w * bw, c))
    block = tensor(T.TENSOR_INT32, [bh, bw])
    (batched,) = run(
        Op.SPACE_TO_BATCH_ND, [tensor(F32, x), block, tensor(T.TENSOR_INT32, [[0, 0], [0, 0]])], [out(F32)]
    )
    assert batched.shape == (n * bh * bw, h, w, c)
    (back,) = run(Op.BATCH_TO_SPACE_ND, [tensor(F32, batched), block], [out(F32)])
    np.testing.assert_array_equal(back, x)


def test_space_to_batch_pads_with_logical_zero():
    q8 = T.TENSOR_QUANT8_ASYMM
    x = tensor(q8, np.full((1, 1, 1, 1), 50), scale=1.0, zero_point=9)
    inputs = [x, tensor(T.TENSOR_INT32, [2, 1]), tensor(T.TENSOR_INT32, [[1, 0], [0, 0]])]
    (result,) = run(Op.SPACE_TO_BATCH_ND, inputs, [out(q8, scale=1.0, zero_point=9)])
    assert result.reshape(-1).tolist() == [9, 50]
    assert shape(Op.SPACE_TO_BATCH_ND, inputs, [out(q8)]) == [(2, 1, 1, 1)]


def test_channel_shuffle():
    x = np.arange(6, dtype=np.float32).reshape(1, 6)
    (result,) = run(Op.CHANNEL_SHUFFLE, [tensor(F32, x), scalar(T.INT32, 2), scalar(T.INT32, -1)], [out(F32)])
    assert result.tolist() == [[0, 3, 1, 4, 2, 5]]
    (on_axis_0,) = run(Op.CHANNEL_SHUFFLE, [tensor(F32, x.T), scalar(T.INT32, 3), scalar(T.INT32, 0)], [out(F32)])
    assert on_axis_0.reshape(-1).tolist() == [0, 2, 4, 1, 3, 5]
    assert violations(Op.CHANNEL_SHUFFLE, [tensor(F32, x), scalar(T.INT32, 4), scalar(T.INT32, 1)], [out(F32)])


def test_layout_shapes():
    x = tensor(F32, np.zeros((1, 2, 4, 6)))
    assert shape(Op.SPACE_TO_DEPTH, [x, scalar(T.INT32, 2)], [out(F32)]) == [(1, 1, 2, 24)]
    assert shape(Op.SPACE_TO_DEPTH, [x, scalar(T.INT32, 2), scalar(T.BOOL, True)], [out(F32)]) == [(1, 8, 2, 3)]
    assert shape(
        Op.BATCH_TO_SPACE_ND, [tensor(F32, np.zeros((4, 1, 2, 3))), tensor(T.TENSOR_INT32, [2, 2])], [out(F32)]
    ) == [(1, 2, 4, 3)]
