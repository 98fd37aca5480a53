"""16-bit fixed-point arithmetic of the HAL's reference QUANTIZED_16BIT_LSTM (gemmlowp's, which the conformance
vectors embody): requantizing an int32 accumulator, Q-format products and shifts, and the logistic and tanh of the
gates as tables over every int16 input.

A raw value with m integer bits stands for raw / 2^(15 - m). The reference's functions approximate the real ones
to a few steps of 2^-15 only, and its requantization rounds twice; a driver is judged against this arithmetic, not
against the real functions, because that is what the HAL's reference and so the conformance suite compute.
"""

from __future__ import annotations

import functools
import math

import numpy as np

_MIN, _MAX = -(1 << 15), (1 << 15) - 1


def wrap(x: np.ndarray) -> np.ndarray:
    """Plain int16 arithmetic (the reference's non-saturating adds): values wrap around."""
    return ((np.asarray(x, dtype=np.int64) - _MIN) & 0xFFFF) + _MIN


def saturate(x: np.ndarray) -> np.ndarray:
    """Clamp to int16."""
    return np.clip(x, _MIN, _MAX)


def rounding_shift(x: np.ndarray, exponent: int) -> np.ndarray:
    """x / 2^exponent rounded to nearest, ties away from zero."""
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    half = 1 << (exponent - 1)
    magnitude = (np.abs(x) + half) >> exponent
    return np.where(x < 0, -magnitude, magnitude)


def _high_half(x: np.ndarray, bits: int) -> np.ndarray:
    """x / 2^bits rounded to nearest, ties upward: the reference's doubling high multiply rounds so."""
    return (np.asarray(x, dtype=np.int64) + (1 << (bits - 1))) >> bits


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Q-format product a * b / 2^15 (ties upward); -1 * -1 saturates."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    return np.where((a == _MIN) & (b == _MIN), _MAX, _high_half(a * b, 15))


def rescale(x: np.ndarray, integer_bits: int, to_integer_bits: int) -> np.ndarray:
    """The same real value with another number of integer bits: rounded when it gains bits, saturated when not."""
    gained = to_integer_bits - integer_bits
    if gained >= 0:
        return rounding_shift(x, gained)
    return saturate(np.asarray(x, dtype=np.int64) << -gained)


def requantize(acc: np.ndarray, real_multiplier: float) -> np.ndarray:
    """acc * real_multiplier as the reference computes it: the multiplier as a 31-bit mantissa and a power of two,
    the product rounded to the mantissa's 31 bits (ties upward), then rounded again by the shift (ties away from
    zero). The int32 accumulator stays far from saturation for the operation's sizes."""
    fraction, exponent = math.frexp(real_multiplier)
    mantissa = int(math.floor(fraction * 2**31 + 0.5))
    if mantissa == 1 << 31:
        mantissa, exponent = mantissa >> 1, exponent + 1
    acc = np.asarray(acc, dtype=np.int64) << max(exponent, 0)
    return rounding_shift(_high_half(acc * mantissa, 31), max(-exponent, 0))


def _constant(real: float, integer_bits: int = 0) -> int:
    """A constant as the reference states it: rounded at 32 bits, then narrowed to 16 bits by a rounding shift."""
    return int(rounding_shift(np.array(round(real * 2.0 ** (31 - integer_bits))), 16))


def _exp_near_zero(a: np.ndarray) -> np.ndarray:
    """exp(a) for Q0.15 raws in [-1/4, 0): a Taylor polynomial of degree 4 around -1/8."""
    base = _constant(math.exp(-1 / 8))
    x = wrap(a + (1 << 12))
    x2 = product(x, x)
    x3 = product(x2, x)
    x4 = product(x2, x2)
    terms = rounding_shift(wrap(product(wrap(rounding_shift(x4, 2) + x3), _constant(1 / 3)) + x2), 1)
    return saturate(base + product(base, wrap(x + terms)))


def _exp_negative(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """exp(a) for raws a <= 0 with `integer_bits` integer bits (at most 4), as Q0.15: the last quarter by the
    polynomial, each whole 2^k quarter-multiple by a factor exp(-2^k)."""
    fractional = 15 - integer_bits
    quarter = 1 << (fractional - 2)
    remainder = wrap((a & (quarter - 1)) - quarter)
    result = _exp_near_zero(rescale(remainder, integer_bits, 0))
    whole = wrap(remainder - a)
    for k in range(-2, min(integer_bits, 5)):
        factor = _constant(math.exp(-(2.0**k)))
        result = np.where(whole & (1 << (fractional + k)) != 0, product(result, factor), result)
    return np.where(a == 0, _MAX, result)


def _two_over_one_plus(x: np.ndarray) -> np.ndarray:
    """2 / (1 + x) for Q0.15 raws x in [0, 1], as Q2.13: three Newton-Raphson steps from 48/17 - 32/17 * d."""
    d = (x + _MAX + 1) >> 1  # (1 + x) / 2, halved with rounding; never negative
    one = 1 << 13
    estimate = wrap(_constant(48 / 17, 2) + product(d, _constant(-32 / 17, 2)))
    for _ in range(3):
        estimate = wrap(estimate + rescale(product(estimate, wrap(one - product(d, estimate))), 4, 2))
    return estimate


@functools.cache
def _tables(integer_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(logistic, tanh) as Q0.15 raws of every int16 raw with `integer_bits` integer bits, indexed by raw + 2^15."""
    raw = np.arange(_MIN, _MAX + 1, dtype=np.int64)
    negated = wrap(-raw)
    of_positive = rescale(_two_over_one_plus(_exp_negative(np.where(raw > 0, negated, raw), integer_bits)), 1, 0)
    logistic = np.where(raw > 0, of_positive, wrap(_MAX - of_positive))
    logistic = np.where(raw == 0, _constant(0.5), logistic)
    # exp(-2|x|) is the raw of -|x| read with one more integer bit; tanh|x| = (1 - e) / (1 + e) = 2 / (1 + e) - 1.
    decay = _exp_negative(np.where(raw < 0, raw, negated), integer_bits + 1)
    of_magnitude = rescale(wrap(_two_over_one_plus(decay) - (1 << 13)), 2, 0)
    tanh = np.where(raw == 0, 0, np.where(raw < 0, wrap(-of_magnitude), of_magnitude))
    return logistic, tanh


def logistic(raw: np.ndarray, integer_bits: int) -> np.ndarray:
    """The reference's fixed-point logistic of int16 raws, as Q0.15 raws."""
    return _tables(integer_bits)[0][np.asarray(raw, dtype=np.int64) - _MIN]


def tanh(raw: np.ndarray, integer_bits: int) -> np.ndarray:
    """The reference's fixed-point tanh of int16 raws, as Q0.15 raws."""
    return _tables(integer_bits)[1][np.asarray(raw, dtype=np.int64) - _MIN]
