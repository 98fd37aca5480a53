"""The driver's convolution kernels: public conformance vectors, hand-computed examples and algebraic laws."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import lookup
from driver_under_test.backends.numpy.kernels._conv_common import Geometry, quantize_multipliers, requantize
from driver_under_test.backends.numpy.kernels._im2col import im2col
from driver_under_test.backends.numpy.kernels.common import multiply_by_quantized_multiplier, quantize_multiplier
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels._vectors_b import (
    call_of,
    case_params,
    check_signed_variant,
    output,
    quant8_cases,
    run_and_check,
    scalar,
    tensor,
)

T = OperandType
CONV_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D")


@pytest.mark.parametrize("case", case_params(CONV_OPS))
def test_conformance_vector(case) -> None:
    run_and_check(case)


@pytest.mark.parametrize("case", quant8_cases(CONV_OPS, files=("aosp_cts_v1_0", "aosp_cts_v1_2")))
def test_signed_storage_gives_the_same_real_results(case) -> None:
    check_signed_variant(case)


def _conv(inputs, out=None) -> np.ndarray:
    return lookup(OperationType.CONV_2D).fn(call_of(inputs, [out or output()]))[0]


_IMAGE = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)  # 1 2 3 / 4 5 6 / 7 8 9
_FILTER = np.array([1, 2, 3, 4], dtype=np.float32).reshape(1, 2, 2, 1)  # 1 2 / 3 4


def test_conv_valid_matches_hand_computed_windows() -> None:
    # out[i, j] = x[i,j]*1 + x[i,j+1]*2 + x[i+1,j]*3 + x[i+1,j+1]*4, plus bias 1.
    got = _conv(
        [
            tensor(_IMAGE),
            tensor(_FILTER),
            tensor([1.0]),
            scalar(0),
            scalar(0),
            scalar(0),
            scalar(0),
            scalar(1),
            scalar(1),
            scalar(0),
        ]
    )
    assert got.shape == (1, 2, 2, 1)
    assert got.reshape(-1).tolist() == [38.0, 48.0, 68.0, 78.0]


def test_conv_same_padding_with_stride_two_pads_bottom_and_right() -> None:
    # SAME on 3 with window 2 and stride 2 needs one padded row/column, all at the end.
    got = _conv([tensor(_IMAGE), tensor(_FILTER), tensor([0.0]), scalar(1), scalar(2), scalar(2), scalar(0)])
    assert got.reshape(-1).tolist() == [37.0, 3 * 1 + 6 * 3, 7 * 1 + 8 * 2, 9 * 1]


def test_conv_dilation_spreads_the_filter_taps() -> None:
    # Dilation 2 puts the 2x2 taps on the image corners: 1*1 + 3*2 + 7*3 + 9*4.
    got = _conv(
        [
            tensor(_IMAGE),
            tensor(_FILTER),
            tensor([0.0]),
            scalar(2),
            scalar(1),
            scalar(1),
            scalar(0),
            scalar(False, T.BOOL),
            scalar(2),
            scalar(2),
        ]
    )
    assert got.reshape(-1).tolist() == [64.0]


def test_conv_relu6_activation_clamps() -> None:
    got = _conv([tensor(_IMAGE), tensor(_FILTER), tensor([-40.0]), scalar(2), scalar(1), scalar(1), scalar(3)])
    assert got.reshape(-1).tolist() == [0.0, 6.0, 6.0, 6.0]


def test_im2col_matrix_times_filter_equals_direct_convolution() -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    g = Geometry(3, 2, 2, 1, 1, 2, 1, 1, 0, 2, 3, 4)
    got = (im2col(x, g, 0.0) @ w.reshape(4, -1).T).reshape(2, 3, 4, 4)
    padded = np.pad(x, ((0, 0), (1, 1), (0, 2), (0, 0)))
    direct = np.zeros((2, 3, 4, 4), dtype=np.float64)
    for i in range(3):
        for j in range(4):
            for kh in range(3):
                for kw in range(2):
                    pixel = padded[:, i * 2 + kh, j * 1 + kw * 2, :].astype(np.float64)
                    direct[:, i, j, :] += pixel @ w[:, kh, kw, :].T.astype(np.float64)
    np.testing.assert_allclose(got, direct, rtol=1e-5, atol=1e-5)


def test_nchw_layout_is_the_transposed_nhwc_result() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 5, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    common = [tensor(w), tensor(np.zeros(3)), scalar(1), scalar(1), scalar(1), scalar(0)]
    nhwc = _conv([tensor(x), *common, scalar(False, T.BOOL)])
    nchw = _conv([tensor(x.transpose(0, 3, 1, 2)), *common, scalar(True, T.BOOL)])
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))


def test_per_channel_requantization_hand_computed() -> None:
    # Input real 5.0 (stored 138, scale 0.5, zero point 128); filters 4 and 8 with scales 0.5 and 0.25 are both
    # real 2.0. Accumulators 40 + bias and 80 + bias are scaled by 0.25 and 0.125 respectively.
    filt = tensor(
        [[[[4]]], [[[8]]]],
        T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
        channel_scales=np.array([0.5, 0.25], dtype=np.float32),
        channel_dim=0,
    )
    out = output(T.TENSOR_QUANT8_ASYMM_SIGNED, scale=1.0, zero_point=0)
    x = tensor([[[[10]]]], T.TENSOR_QUANT8_ASYMM_SIGNED, scale=0.5, zero_point=0)
    params = [scalar(0)] * 4 + [scalar(1), scalar(1), scalar(0)]
    # 42 * 0.25 = 10.5 and 84 * 0.125 = 10.5 round half away from zero to 11.
    got = _conv([x, filt, tensor([2, 4], T.TENSOR_INT32), *params], out)
    assert got.reshape(-1).tolist() == [11, 11]
    got = _conv([x, filt, tensor([1, -2], T.TENSOR_INT32), *params], out)
    # Fixed-point pipeline, multiplier 0.25 = 2^30 * 2^-1 / 2^31: 41 * 2^30 / 2^31 = 20.5 rounds to 21, then
    # 21 / 2 = 10.5 rounds to 11 (the reference arithmetic rounds twice; the real product is 10.25).
    # Channel 1: 78 * 2^30 / 2^31 = 39, then 39 / 4 = 9.75 rounds to 10.
    assert got.reshape(-1).tolist() == [11, 10]
    got = _conv([x, filt, tensor([-1, -2], T.TENSOR_INT32), *params], out)
    # 39 * 2^30 / 2^31 = 19.5 -> 20, 20 / 2 = 10.
    assert got.reshape(-1).tolist() == [10, 10]
    # Negative ties round away from zero too: -42 * 0.25 = -10.5 -> -11.
    neg = tensor([[[[-10]]]], T.TENSOR_QUANT8_ASYMM_SIGNED, scale=0.5, zero_point=0)
    got = _conv([neg, filt, tensor([-2, -4], T.TENSOR_INT32), *params], out)
    assert got.reshape(-1).tolist() == [-11, -11]


@pytest.mark.parametrize("real", [0.25, 0.1234567, 0.999999, 1.0, 3.75, 1e-6, 0.0])
def test_vector_requantization_agrees_with_the_scalar_fixed_point_helpers(real: float) -> None:
    values = np.array([-(1 << 20), -1001, -7, -1, 0, 1, 7, 1000, 123457, 1 << 20], dtype=np.int64)
    m, s = quantize_multiplier(real)
    vm, vs = quantize_multipliers(np.array([real]))
    assert (int(vm[0]), int(vs[0])) == (m, s)
    expected = multiply_by_quantized_multiplier(values, m, s)
    np.testing.assert_array_equal(requantize(values, vm, vs), expected)


def test_requantize_final_shift_rounds_ties_away_from_zero() -> None:
    # 0.125 = 2^30 * 2^-2 / 2^31: the high multiply halves exactly, then the shift by 2 meets the ties.
    m, s = quantize_multipliers(np.array([0.125]))
    assert (int(m[0]), int(s[0])) == (1 << 30, -2)
    assert requantize(np.array([20, -20, 12, -12, 4]), m, s).tolist() == [3, -3, 2, -2, 1]


def test_requantize_high_multiply_ties_follow_the_nudge() -> None:
    # 0.5 = 2^30 / 2^31 with no shift: 7 -> 3.5 -> (7 * 2^30 + 2^30) / 2^31 = 4, while -7 -> -3.5 gets the nudge
    # 1 - 2^30 and truncates to -3 (the doubling high multiply's own tie rule).
    m, s = quantize_multipliers(np.array([0.5]))
    assert requantize(np.array([7, -7, 5, -5]), m, s).tolist() == [4, -3, 3, -2]


def test_depthwise_multiplier_expands_each_channel() -> None:
    # Output channel c * 2 + q = input channel c times filter tap c * 2 + q.
    got = lookup(OperationType.DEPTHWISE_CONV_2D).fn(
        call_of(
            [
                tensor([[[[3.0, 5.0]]]]),
                tensor([[[[1.0, 2.0, 3.0, 4.0]]]]),
                tensor([0.0, 0.0, 0.0, 1.0]),
                scalar(2),
                scalar(1),
                scalar(1),
                scalar(2),
                scalar(0),
            ]
        )
    )[0]
    assert got.reshape(-1).tolist() == [3.0, 6.0, 15.0, 21.0]


def test_grouped_conv_equals_separate_convolutions_per_group() -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 4, 4, 6)).astype(np.float32)
    w = rng.standard_normal((4, 2, 2, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    grouped = lookup(OperationType.GROUPED_CONV_2D).fn(
        call_of(
            [
                tensor(x),
                tensor(w),
                tensor(b),
                scalar(2),
                scalar(1),
                scalar(1),
                scalar(2),
                scalar(0),
                scalar(False, T.BOOL),
            ]
        )
    )[0]
    halves = [
        _conv(
            [
                tensor(x[..., 3 * k : 3 * k + 3]),
                tensor(w[2 * k : 2 * k + 2]),
                tensor(b[2 * k : 2 * k + 2]),
                scalar(2),
                scalar(1),
                scalar(1),
                scalar(0),
            ]
        )
        for k in range(2)
    ]
    np.testing.assert_allclose(grouped, np.concatenate(halves, axis=3), rtol=1e-6, atol=1e-6)


def test_transpose_conv_scatters_each_pixel_through_the_filter() -> None:
    # Stride 1, 2x2 all-ones filter: each output is the sum of the input pixels whose window covers it.
    got = lookup(OperationType.TRANSPOSE_CONV_2D).fn(
        call_of(
            [
                tensor([[[[1.0], [2.0]], [[3.0], [4.0]]]]),
                tensor(np.ones((1, 2, 2, 1))),
                tensor([0.0]),
                scalar(0),
                scalar(0),
                scalar(0),
                scalar(0),
                scalar(1),
                scalar(1),
                scalar(0),
                scalar(False, T.BOOL),
            ]
        )
    )[0]
    assert got.reshape(3, 3).tolist() == [[1, 3, 2], [4, 10, 6], [3, 7, 4]]


def test_transpose_conv_implicit_same_padding_crops_to_the_requested_shape() -> None:
    # Stride 2 without overlap: every input pixel becomes a 2x2 block; SAME asks for exactly 4x4.
    got = lookup(OperationType.TRANSPOSE_CONV_2D).fn(
        call_of(
            [
                tensor([[[[1.0], [2.0]], [[3.0], [4.0]]]]),
                tensor(np.ones((1, 2, 2, 1))),
                tensor([0.5]),
                tensor([1, 4, 4, 1], T.TENSOR_INT32),
                scalar(1),
                scalar(2),
                scalar(2),
                scalar(0),
                scalar(False, T.BOOL),
            ]
        )
    )[0]
    expected = np.kron(np.array([[1, 2], [3, 4]]), np.ones((2, 2))) + 0.5
    assert got.reshape(4, 4).tolist() == expected.tolist()


@pytest.mark.parametrize(
    "params",
    [
        [scalar(1), scalar(0), scalar(1), scalar(0)],  # zero stride
        [scalar(7), scalar(1), scalar(1), scalar(0)],  # unknown padding scheme
        [scalar(1), scalar(1), scalar(1), scalar(9)],  # unknown activation
    ],
)
def test_invalid_parameters_are_invalid_argument(params) -> None:
    with pytest.raises(DriverError) as err:
        _conv([tensor(_IMAGE), tensor(_FILTER), tensor([0.0]), *params])
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_filter_depth_mismatch_is_invalid_argument() -> None:
    with pytest.raises(DriverError) as err:
        _conv(
            [tensor(np.zeros((1, 3, 3, 2))), tensor(_FILTER), tensor([0.0]), scalar(1), scalar(1), scalar(1), scalar(0)]
        )
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_blocked_im2col_gives_the_same_result_as_one_block(monkeypatch) -> None:
    rng = np.random.default_rng(13)
    x = tensor(rng.integers(0, 256, (2, 7, 6, 3)), T.TENSOR_QUANT8_ASYMM, 0.5, 120)
    w = tensor(rng.integers(0, 256, (4, 3, 3, 3)), T.TENSOR_QUANT8_ASYMM, 0.25, 130)
    b = tensor(rng.integers(-500, 500, 4), T.TENSOR_INT32, 0.125)
    inputs = [x, w, b, scalar(1), scalar(1), scalar(1), scalar(0)]
    out = output(T.TENSOR_QUANT8_ASYMM, 2.0, 100)
    whole = _conv(inputs, out)
    # one row per block
    monkeypatch.setattr("driver_under_test.backends.numpy.kernels._im2col.PATCH_BLOCK_ELEMENTS", 100)
    np.testing.assert_array_equal(_conv(inputs, out), whole)


def test_zero_batches_give_an_empty_output_of_the_right_shape() -> None:
    got = _conv([tensor(np.zeros((0, 3, 3, 1))), tensor(_FILTER), tensor([0.0]), scalar(2), scalar(1), scalar(1),
                 scalar(0)])
    assert got.shape == (0, 2, 2, 1)
