"""Activations: RELU, RELU1, RELU6, LOGISTIC, TANH, ELU, HARD_SWISH, PRELU, SOFTMAX and LOG_SOFTMAX.

Quantized clamps (RELU family) work on stored integers; quantized transcendental activations go through a
256-entry lookup table built once per set of quantization parameters; quantized PRELU and SOFTMAX use
fixed-point multipliers and integer sums.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from driver_under_test.backends.numpy.kernels.common import (
    FLOAT_TYPES,
    FLOATS,
    QUANT8,
    QUANT8_TYPES,
    apply_table,
    broadcast_shape,
    compute_float,
    fault_active,
    float_activation,
    lookup_table,
    multiply_by_quantized_multiplier,
    normalize_axis,
    quantize_multiplier,
    quantized_activation_range,
    quiet,
    requantize_to,
    required,
    saturate,
    store,
)
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.errors import invalid
from driver_under_test.faults import define
from harness.hal import FusedActivation, OperationType, numpy_dtype

# --- RELU family: a clamp, expressed as the matching fused activation -------------------------------------

_CLAMPS = {
    OperationType.RELU: FusedActivation.RELU,
    OperationType.RELU1: FusedActivation.RELU1,
    OperationType.RELU6: FusedActivation.RELU6,
}


def _make_clamp(code: int) -> Callable[[OpCall], list[np.ndarray]]:
    @quiet
    def run(call: OpCall) -> list[np.ndarray]:
        x, out = required(call, 0), call.outputs[0]
        if x.type in QUANT8_TYPES:
            lo, hi = quantized_activation_range(code, out.scale, out.zero_point, out.type)
            return [np.clip(requantize_to(x, out), lo, hi)]
        return [store(float_activation(compute_float(x.data).copy(), code), out)]

    return run


for _op, _code in _CLAMPS.items():
    kernel(_op, (*FLOATS, *QUANT8))(_make_clamp(int(_code)))


# --- Smooth activations: float formula, 8-bit lookup table -----------------------------------------------


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _hard_swish(x: np.ndarray) -> np.ndarray:
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


_SMOOTH: dict[OperationType, Callable[[np.ndarray], np.ndarray]] = {
    OperationType.LOGISTIC: _logistic,
    OperationType.TANH: np.tanh,
    OperationType.HARD_SWISH: _hard_swish,
}


def _make_smooth(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[OpCall], list[np.ndarray]]:
    @quiet
    def run(call: OpCall) -> list[np.ndarray]:
        x, out = required(call, 0), call.outputs[0]
        if x.type in QUANT8_TYPES:
            table = lookup_table(fn, x.type, x.scale, x.zero_point, out.type, out.scale, out.zero_point)
            return [apply_table(x.data, table, x.type)]
        return [store(fn(compute_float(x.data)).astype(np.float32, copy=False), out)]

    return run


for _op, _fn in _SMOOTH.items():
    kernel(_op, (*FLOATS, *QUANT8))(_make_smooth(_fn))


@kernel(OperationType.ELU, FLOATS)
@quiet
def elu_kernel(call: OpCall) -> list[np.ndarray]:
    """max(0, x) + min(0, alpha * (exp(x) - 1))."""
    x = compute_float(required(call, 0).data)
    alpha = np.float32(call.scalar(1, 1.0))
    return [store(np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x)), call.outputs[0])]


# --- PRELU ---------------------------------------------------------------------------------------------------


@kernel(OperationType.PRELU, (*FLOATS, *QUANT8))
@quiet
def prelu_kernel(call: OpCall) -> list[np.ndarray]:
    """x for x >= 0, alpha * x otherwise; alpha broadcasts against x."""
    x, alpha, out = required(call, 0), required(call, 1), call.outputs[0]
    shape = broadcast_shape(x.data.shape, alpha.data.shape)
    if x.type in FLOAT_TYPES:
        xf, af = compute_float(x.data), compute_float(alpha.data)
        return [store(np.where(xf >= 0, xf, af * xf), out)]
    centred = np.broadcast_to(x.data.astype(np.int64) - x.zero_point, shape)
    slope = alpha.data.astype(np.int64) - alpha.zero_point
    m_pos, s_pos = quantize_multiplier(x.scale / out.scale)
    m_neg, s_neg = quantize_multiplier(x.scale * alpha.scale / out.scale)
    positive = multiply_by_quantized_multiplier(centred, m_pos, s_pos)
    negative = multiply_by_quantized_multiplier(centred * slope, m_neg, s_neg)
    return [saturate(np.where(centred >= 0, positive, negative) + out.zero_point, out.type)]


# --- SOFTMAX / LOG_SOFTMAX -----------------------------------------------------------------------------------

# Exponentials of the quantized softmax are kept as Q1.30 fixed-point integers.
_EXP_FRACTION_BITS = 30

SOFTMAX_BETA_IGNORED = define(
    "softmax_beta_ignored",
    "execution",
    "SOFTMAX (float and quantized) always computes exp(x - max) as if beta were 1.0, silently ignoring the beta "
    "input (breaks SOFTMAX semantics: wrong probabilities whenever beta != 1 and a row holds different values).",
).name


@functools.lru_cache(maxsize=1024)
def _exp_table(input_scale: float, beta: float) -> np.ndarray:
    """exp(-d * input_scale * beta) for every 8-bit distance d from the row maximum, in Q1.30."""
    distances = np.arange(256, dtype=np.float64)
    table = np.round(np.exp(-distances * input_scale * beta) * (1 << _EXP_FRACTION_BITS)).astype(np.int64)
    table.flags.writeable = False
    return table


def _softmax_axis(call: OpCall, rank: int, position: int) -> int:
    return normalize_axis(int(call.scalar(position, -1)), rank)


@kernel(OperationType.SOFTMAX, (*FLOATS, *QUANT8))
@quiet
def softmax_kernel(call: OpCall) -> list[np.ndarray]:
    """exp(beta * (x - max)) normalized along the axis (default: last)."""
    x, out = required(call, 0), call.outputs[0]
    beta = 1.0 if fault_active(call, SOFTMAX_BETA_IGNORED) else float(call.scalar(1, 1.0))
    if x.data.size == 0:
        return [np.zeros(x.data.shape, dtype=numpy_dtype(out.type))]
    axis = _softmax_axis(call, x.data.ndim, 2)
    if x.type in QUANT8_TYPES:
        return [_quant_softmax(x.data, x.scale, beta, axis, out)]
    # Subtracting the row maximum of beta * x keeps every exponent <= 0 whatever the sign of beta.
    scaled = compute_float(x.data) * np.float32(beta)
    e = np.exp(scaled - np.max(scaled, axis=axis, keepdims=True))
    return [store(e / np.sum(e, axis=axis, keepdims=True), out)]


def _quant_softmax(q: np.ndarray, in_scale: float, beta: float, axis: int, out: Tensor) -> np.ndarray:
    """Integer softmax: table exponentials of distances to the row maximum, integer sum, fixed-point ratio."""
    if not math.isfinite(in_scale * beta):
        raise invalid(f"softmax scale {in_scale} * beta {beta} is not finite", "exec.softmax_beta")
    values = q.astype(np.int32)
    # Distance to the code with the largest beta * x: the maximum code for beta >= 0, the minimum otherwise.
    if beta >= 0:
        distance = np.max(values, axis=axis, keepdims=True) - values
    else:
        distance = values - np.min(values, axis=axis, keepdims=True)
    exps = _exp_table(in_scale, abs(beta))[distance]
    total = np.sum(exps, axis=axis, keepdims=True)  # >= table[0] = 2^30, never zero
    # ratio in Q0.31, rounded
    ratio = ((exps << 31) + (total >> 1)) // total
    multiplier, shift = quantize_multiplier(2.0**-31 / out.scale)
    return saturate(multiply_by_quantized_multiplier(ratio, multiplier, shift) + out.zero_point, out.type)


@kernel(OperationType.LOG_SOFTMAX, FLOATS)
@quiet
def log_softmax_kernel(call: OpCall) -> list[np.ndarray]:
    """beta * x - log(sum(exp(beta * x))) along the axis, computed stably."""
    x, out = required(call, 0), call.outputs[0]
    if x.data.size == 0:
        return [x.data.copy()]
    beta = np.float32(call.scalar(1, 1.0))
    axis = _softmax_axis(call, x.data.ndim, 2)
    scaled = compute_float(x.data) * beta
    shifted = scaled - np.max(scaled, axis=axis, keepdims=True)
    return [store(shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True)), out)]
