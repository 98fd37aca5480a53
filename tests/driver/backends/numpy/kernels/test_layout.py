"""The driver's data-movement kernels: conformance vectors, hand-computed cases and inverse-pair laws."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import OpCall, Tensor, lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels.conftest import run_vector_case, single_op_cases

OPS = {
    "RESHAPE",
    "SQUEEZE",
    "EXPAND_DIMS",
    "TRANSPOSE",
    "CONCATENATION",
    "SPLIT",
    "TILE",
    "PAD",
    "PAD_V2",
    "DEPTH_TO_SPACE",
    "SPACE_TO_DEPTH",
    "BATCH_TO_SPACE_ND",
    "SPACE_TO_BATCH_ND",
    "CHANNEL_SHUFFLE",
}
CASES = single_op_cases(OPS)

F32, I32, Q8 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_QUANT8_ASYMM


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


def run(op, inputs, out_type=F32, scale=0.0, zero_point=0, outputs=1):
    meta = [Tensor(type=int(out_type), shape=(), scale=scale, zero_point=zero_point) for _ in range(outputs)]
    return lookup(op).fn(OpCall(inputs=inputs, outputs=meta))


def invalid_argument(fn):
    with pytest.raises(DriverError) as info:
        fn()
    return info.value.status == ErrorStatus.INVALID_ARGUMENT


def test_reshape_infers_minus_one_and_rejects_bad_sizes():
    x = tensor(F32, np.arange(12))
    assert run(OperationType.RESHAPE, [x, ints(3, -1)])[0].shape == (3, 4)
    assert invalid_argument(lambda: run(OperationType.RESHAPE, [x, ints(5, -1)]))
    assert invalid_argument(lambda: run(OperationType.RESHAPE, [x, ints(-1, -1)]))


def test_squeeze_all_and_listed_axes():
    x = tensor(F32, np.zeros((1, 3, 1, 2)))
    assert run(OperationType.SQUEEZE, [x, None])[0].shape == (3, 2)
    assert run(OperationType.SQUEEZE, [x, ints(-2)])[0].shape == (1, 3, 2)
    assert invalid_argument(lambda: run(OperationType.SQUEEZE, [x, ints(1)]))


def test_expand_dims_negative_axis_counts_from_the_end_of_the_result():
    x = tensor(I32, [[1, 2, 3]], np.int32)
    assert run(OperationType.EXPAND_DIMS, [x, scalar(-1)], I32)[0].shape == (1, 3, 1)
    assert run(OperationType.EXPAND_DIMS, [x, scalar(0)], I32)[0].shape == (1, 1, 3)


def test_transpose_default_reverses_dimensions():
    x = tensor(F32, np.arange(6).reshape(1, 2, 3))
    assert run(OperationType.TRANSPOSE, [x, None])[0].shape == (3, 2, 1)
    assert run(OperationType.TRANSPOSE, [x, ints(1, 0, 2)])[0].tolist() == [[[0, 1, 2]], [[3, 4, 5]]]
    assert invalid_argument(lambda: run(OperationType.TRANSPOSE, [x, ints(0, 0, 1)]))


def test_concatenation_requantizes_quantized_inputs_to_the_output():
    a = tensor(Q8, [[10, 20]], np.uint8, 1.0, 0)  # 10, 20
    b = tensor(Q8, [[5]], np.uint8, 2.0, 0)  # 10
    (out,) = run(OperationType.CONCATENATION, [a, b, scalar(1)], Q8, 0.5, 0)
    assert out.tolist() == [[20, 40, 20]]


def test_concatenation_rejects_mismatched_shapes():
    a, b = tensor(F32, np.zeros((2, 2))), tensor(F32, np.zeros((3, 3)))
    assert invalid_argument(lambda: run(OperationType.CONCATENATION, [a, b, scalar(0)]))


def test_split_into_equal_parts():
    x = tensor(I32, np.arange(6).reshape(2, 3), np.int32)
    parts = run(OperationType.SPLIT, [x, scalar(1), scalar(3)], I32, outputs=3)
    assert [p.tolist() for p in parts] == [[[0], [3]], [[1], [4]], [[2], [5]]]
    assert invalid_argument(lambda: run(OperationType.SPLIT, [x, scalar(1), scalar(2)], I32, outputs=2))


def test_tile():
    x = tensor(F32, [[1, 2]])
    assert run(OperationType.TILE, [x, ints(2, 2)])[0].tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]


def test_pad_uses_the_logical_zero_and_pad_v2_the_given_value():
    x = tensor(Q8, [[7]], np.uint8, 0.5, 100)
    paddings = tensor(I32, [[1, 0], [0, 2]], np.int32)
    assert run(OperationType.PAD, [x, paddings], Q8, 0.5, 100)[0].tolist() == [[100, 100, 100], [7, 100, 100]]
    assert run(OperationType.PAD_V2, [x, paddings, scalar(3)], Q8, 0.5, 100)[0].tolist() == [[3, 3, 3], [7, 3, 3]]
    y = tensor(F32, [1.0])
    pad_value = scalar(-1.5, OperandType.FLOAT32, np.float32)
    assert run(OperationType.PAD_V2, [y, tensor(I32, [[2, 1]], np.int32), pad_value])[0].tolist() == [
        -1.5,
        -1.5,
        1.0,
        -1.5,
    ]


def test_depth_to_space_hand_example():
    # one pixel with 4 channels becomes a 2x2 block, channels in row-major block order
    x = tensor(F32, np.arange(4).reshape(1, 1, 1, 4))
    (out,) = run(OperationType.DEPTH_TO_SPACE, [x, scalar(2)])
    assert out.reshape(2, 2).tolist() == [[0, 1], [2, 3]]


@pytest.mark.parametrize("nchw", [False, True])
def test_space_to_depth_then_depth_to_space_is_identity(nchw):
    data = np.arange(2 * 4 * 6 * 6, dtype=np.float32).reshape(2, 4, 6, 6)
    x = tensor(F32, data)
    layout = scalar(nchw, OperandType.BOOL, np.bool_)
    (packed,) = run(OperationType.SPACE_TO_DEPTH, [x, scalar(2), layout])
    (unpacked,) = run(OperationType.DEPTH_TO_SPACE, [tensor(F32, packed), scalar(2), layout])
    assert np.array_equal(unpacked, data)


def test_nchw_result_is_the_transposed_nhwc_result():
    nhwc = np.arange(1 * 4 * 4 * 2, dtype=np.float32).reshape(1, 4, 4, 2)
    (expected,) = run(OperationType.SPACE_TO_DEPTH, [tensor(F32, nhwc), scalar(2)])
    nchw_in = tensor(F32, nhwc.transpose(0, 3, 1, 2))
    (actual,) = run(OperationType.SPACE_TO_DEPTH, [nchw_in, scalar(2), scalar(True, OperandType.BOOL, np.bool_)])
    assert np.array_equal(actual, expected.transpose(0, 3, 1, 2))


def test_space_to_batch_then_batch_to_space_restores_the_unpadded_input():
    data = np.arange(1 * 4 * 4 * 1, dtype=np.float32).reshape(1, 4, 4, 1)
    block = ints(2, 2)
    (batched,) = run(
        OperationType.SPACE_TO_BATCH_ND, [tensor(F32, data), block, tensor(I32, [[0, 0], [0, 0]], np.int32)]
    )
    assert batched.shape == (4, 2, 2, 1)
    assert batched[:, 0, 0, 0].tolist() == [0, 1, 4, 5]  # the four cells of the top-left block
    (restored,) = run(OperationType.BATCH_TO_SPACE_ND, [tensor(F32, batched), block])
    assert np.array_equal(restored, data)


def test_space_to_batch_pads_quantized_data_with_the_zero_point():
    x = tensor(Q8, np.full((1, 1, 1, 1), 9), np.uint8, 0.5, 77)
    (out,) = run(OperationType.SPACE_TO_BATCH_ND, [x, ints(2, 1), tensor(I32, [[0, 1], [0, 0]], np.int32)], Q8, 0.5, 77)
    assert out.reshape(-1).tolist() == [9, 77]


def test_channel_shuffle_hand_example_and_inverse():
    x = tensor(F32, np.arange(6).reshape(1, 6))
    (out,) = run(OperationType.CHANNEL_SHUFFLE, [x, scalar(2), scalar(-1)])
    assert out.tolist() == [[0, 3, 1, 4, 2, 5]]
    # shuffling with groups g and then with channels/g groups restores the order
    (back,) = run(OperationType.CHANNEL_SHUFFLE, [tensor(F32, out), scalar(3), scalar(1)])
    assert back.tolist() == [[0, 1, 2, 3, 4, 5]]
