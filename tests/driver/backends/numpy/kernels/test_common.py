"""The driver's fixed-point helpers, checked against hand computations and the definitions they implement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from driver_under_test.backends.numpy.kernels.common import (
    apply_table,
    broadcast_shape,
    lookup_table,
    multiply_by_quantized_multiplier,
    normalize_axis,
    quantize_multiplier,
    quantized_activation_range,
    requantize,
    requantize_float,
    round_half_away,
    rounding_divide,
    rounding_divide_by_pot,
)
from driver_under_test.backends.numpy.kernels.registry import Tensor
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType

Q8 = OperandType.TENSOR_QUANT8_ASYMM
Q8S = OperandType.TENSOR_QUANT8_ASYMM_SIGNED


@given(st.floats(min_value=1e-9, max_value=1e9, allow_nan=False, allow_infinity=False))
def test_quantize_multiplier_round_trips_within_2_pow_minus_31(real):
    multiplier, shift = quantize_multiplier(real)
    assert (1 << 30) <= multiplier < (1 << 31)
    represented = multiplier * 2.0 ** (shift - 31)
    assert abs(represented - real) <= real * 2.0**-31


def test_quantize_multiplier_exact_powers_of_two():
    # 0.5 = 2^30 / 2^31 with no shift; 1.0 and 4.0 move the exponent only.
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(1.0) == (1 << 30, 1)
    assert quantize_multiplier(4.0) == (1 << 30, 3)
    assert quantize_multiplier(0.0) == (0, 0)


@pytest.mark.parametrize("bad", [-1.0, math.inf, math.nan])
def test_quantize_multiplier_rejects_unrepresentable_factors(bad):
    with pytest.raises(DriverError) as info:
        quantize_multiplier(bad)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize(
    ("x", "real", "expected"),
    [
        (100, 0.5, 50),
        (3, 0.5, 2),  # 1.5: the doubling high multiply rounds the tie up
        (-3, 0.5, -1),  # -1.5: ... and up again for negative values (gemmlowp's nudge)
        (3, 0.25, 1),  # high multiply gives 2 (1.5 -> 2), then 2 / 2 rounds to 1
        (1000, 3.0, 3000),  # multiplier above one: left shift first
        (7, 1.0, 7),
    ],
)
def test_multiply_by_quantized_multiplier_hand_examples(x, real, expected):
    multiplier, shift = quantize_multiplier(real)
    assert int(multiply_by_quantized_multiplier(np.array([x]), multiplier, shift)[0]) == expected


def test_multiply_by_quantized_multiplier_saturates_like_an_int32_register():
    # 2^20 = 0.5 * 2^21: x is shifted left by 21 (saturating at the int32 limits), then multiplied by 0.5.
    multiplier, shift = quantize_multiplier(2.0**20)
    result = multiply_by_quantized_multiplier(np.array([1 << 20, -(1 << 20), 3]), multiplier, shift)
    assert result.tolist() == [1 << 30, -(1 << 30), 3 << 20]


@pytest.mark.parametrize(
    ("x", "exponent", "expected"),
    [(5, 1, 3), (-5, 1, -3), (4, 1, 2), (7, 2, 2), (6, 2, 2), (-6, 2, -2), (-7, 2, -2), (0, 5, 0), (9, 0, 9)],
)
def test_rounding_divide_by_pot_rounds_half_away_from_zero(x, exponent, expected):
    assert int(rounding_divide_by_pot(np.array([x], dtype=np.int64), exponent)[0]) == expected


def test_rounding_divide_hand_examples():
    assert rounding_divide(np.array([3, -3, 7, -7, 4, 0]), 2).tolist() == [2, -2, 4, -4, 2, 0]
    assert rounding_divide(np.array([10, 11, -10]), 3).tolist() == [3, 4, -3]


def test_round_half_away_from_zero():
    values = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.4, -2.6])
    assert round_half_away(values).tolist() == [1, 2, 3, -1, -3, 2, -3]


@pytest.mark.parametrize(
    ("code", "scale", "zero_point", "operand_type", "expected"),
    [
        (0, 0.1, 10, Q8, (0, 255)),
        (1, 0.1, 10, Q8, (10, 255)),
        (3, 0.1, 10, Q8, (10, 70)),
        (2, 0.5, 128, Q8, (126, 130)),
        (2, 2.0, 100, Q8, (99, 101)),  # +-0.5 codes: ties round away from zero
        (3, 0.01, 0, Q8S, (0, 127)),  # 6.0 / 0.01 = 600 saturates
        (1, 1.0, -128, Q8S, (-128, 127)),
    ],
)
def test_quantized_activation_range_hand_examples(code, scale, zero_point, operand_type, expected):
    assert quantized_activation_range(code, scale, zero_point, operand_type) == expected


def test_requantize_hand_example():
    # Codes 0, 128, 255 at scale 1/128, zero point 128 are -1, 0, 127/128; at scale 1/64, zero point 64 those
    # are 0, 64 and 127.5 -> 128.
    out = Tensor(type=Q8, shape=(3,), scale=1 / 64, zero_point=64)
    result = requantize(np.array([0, 128, 255], dtype=np.uint8), 1 / 128, 128, out)
    assert result.dtype == np.uint8
    assert result.tolist() == [0, 64, 128]


def test_requantize_saturates_to_the_output_type():
    out = Tensor(type=Q8S, shape=(2,), scale=0.5, zero_point=0)
    assert requantize(np.array([0, 255], dtype=np.uint8), 1.0, 0, out).tolist() == [0, 127]


def test_requantize_float_ties_and_nan():
    out = Tensor(type=Q8, shape=(4,), scale=1.0, zero_point=128)
    assert requantize_float(np.array([0.5, -0.5, np.nan, 1e9]), out).tolist() == [129, 127, 128, 255]


def test_lookup_table_of_logistic_hand_values():
    def logistic(x):
        return 1.0 / (1.0 + np.exp(-x))

    table = lookup_table(logistic, int(Q8), 1 / 16, 128, int(Q8), 1 / 256, 0)
    codes = np.array([128, 255, 0], dtype=np.uint8)
    # sigmoid(0) = 0.5 -> 128; sigmoid(7.9375) = 0.99964 -> 255.9 saturates to 255; sigmoid(-8) = 0.000335 -> 0
    assert apply_table(codes, table, int(Q8)).tolist() == [128, 255, 0]


def test_apply_table_indexes_signed_codes_from_minus_128():
    table = np.arange(256, dtype=np.int16)
    codes = np.array([-128, 0, 127], dtype=np.int8)
    assert apply_table(codes, table, int(Q8S)).tolist() == [0, 128, 255]


def test_normalize_axis_and_broadcast_shape_report_invalid_arguments():
    assert normalize_axis(-1, 4) == 3
    assert broadcast_shape((4, 1, 2), (5, 4, 3, 1)) == (5, 4, 3, 2)
    for bad in (lambda: normalize_axis(4, 4), lambda: broadcast_shape((2, 3), (4, 3))):
        with pytest.raises(DriverError) as info:
            bad()
        assert info.value.status == ErrorStatus.INVALID_ARGUMENT
