"""The int16 fixed-point arithmetic of the HAL's reference QUANTIZED_16BIT_LSTM: its roundings worked by hand and
its logistic and tanh against the real functions."""

from __future__ import annotations

import numpy as np

from harness.ops import _fixed16 as fixed


def test_products_round_ties_upward_and_shifts_round_them_away_from_zero():
    # 1/2 * 1/2 = 1/4; -1 * -1 saturates; the ties -0.5 and 0.5 (raw 1 times 1/2) become 0 and 1; a rounding shift
    # takes -1.5 to -2 and 1.5 to 2.
    assert fixed.product(np.array([16384, -32768, -1, 1]), np.array([16384, -32768, 16384, 16384])).tolist() == [
        8192,
        32767,
        0,
        1,
    ]
    assert fixed.rounding_shift(np.array([-24, 24, 23, -23]), 4).tolist() == [-2, 2, 1, -1]


def test_rescale_rounds_down_to_fewer_fraction_bits_and_saturates_up():
    assert fixed.rescale(np.array([24, -24]), 0, 4).tolist() == [2, -2]
    assert fixed.rescale(np.array([16383, 16384, -16384, -16385]), 4, 3).tolist() == [32766, 32767, -32768, -32768]


def test_requantize_rounds_twice():
    # 4096 * 0.003921670373529196 / 128 as mantissa 1077980544 * 2^-33: -21942 times it is -2753.58, yet the
    # reference rounds -11014.31 to -11014 first, whose quarter -2753.5 then rounds away from zero to -2754.
    assert fixed.requantize(np.array([-21942, 19986]), 4096 * 0.003921670373529196 / 128).tolist() == [-2754, 2508]


def test_logistic_and_tanh_stay_within_a_few_steps_of_the_real_functions():
    raw = np.arange(-(1 << 15), 1 << 15)
    assert fixed.logistic(np.array([0]), 3).tolist() == [16384] and fixed.tanh(np.array([0]), 3).tolist() == [0]
    assert 0 < np.abs(fixed.logistic(raw, 3) - 32768 / (1 + np.exp(-raw / 4096))).max() < 8
    assert 0 < np.abs(fixed.tanh(raw, 3) - 32768 * np.tanh(raw / 4096)).max() < 13
