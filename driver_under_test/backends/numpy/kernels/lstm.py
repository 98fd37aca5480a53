"""Long short-term memory layers: LSTM (one step), UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM and
QUANTIZED_16BIT_LSTM.

One cell implementation serves all three, with the optional CIFG (coupled input and forget gates), peephole,
projection, clipping, layer normalization and auxiliary-input variants. The gates' input projections of a whole
sequence are computed with one stacked matrix multiply; only the recurrence runs step by step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import FLOAT_TYPES, quantize_multipliers, requantize
from driver_under_test.backends.numpy.kernels._recurrent import (
    activation_fn,
    check_shape,
    from_time_major,
    optional_f32,
    required_f32,
    sigmoid,
    store,
    time_major,
)
from driver_under_test.backends.numpy.kernels.common import fault_active, quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, kernel
from driver_under_test.errors import invalid
from driver_under_test.faults import define
from harness.hal import OperandType, OperationType

_LAYER_NORM_EPSILON = np.float32(1e-8)
_GATES = ("input", "forget", "cell", "output")


@dataclass(frozen=True)
class _Layout:
    """Input positions of one LSTM cell's operands in an operation's input list."""

    weights: int  # input-to-input weights; the other 16 weight/bias operands follow in HAL order
    layer_norm: int | None  # input layer-norm weights; forget, cell and output follow
    aux_weights: int | None = None  # auxiliary input-to-input weights; the other three follow


def _gate_inputs(call: OpCall, first: int) -> dict[str, np.ndarray | None]:
    return {gate: optional_f32(call, first + k) for k, gate in enumerate(_GATES)}


class _Cell:
    """Decoded and validated weights of one LSTM cell."""

    def __init__(self, call: OpCall, layout: _Layout, activation: int, cell_clip: float, proj_clip: float) -> None:
        w = layout.weights
        self.input_w = _gate_inputs(call, w)
        self.recurrent_w = _gate_inputs(call, w + 4)
        self.peephole = {gate: optional_f32(call, w + 8 + k) for k, gate in enumerate(("input", "forget", "output"))}
        self.bias = _gate_inputs(call, w + 11)
        self.projection_w = optional_f32(call, w + 15)
        self.projection_b = optional_f32(call, w + 16)
        self.layer_norm = (_gate_inputs(call, layout.layer_norm) if layout.layer_norm is not None
                           else dict.fromkeys(_GATES))
        self.aux_w = (_gate_inputs(call, layout.aux_weights) if layout.aux_weights is not None
                      else dict.fromkeys(_GATES))
        self.activation = activation_fn(activation)
        if cell_clip < 0 or proj_clip < 0:
            raise invalid("clipping thresholds must be non-negative", "param.clip")
        self.cell_clip = np.float32(cell_clip)
        self.proj_clip = np.float32(proj_clip)
        self._validate()

    # --- structure --------------------------------------------------------------------------------------------

    def _validate(self) -> None:
        cifg_parts = (self.input_w["input"], self.recurrent_w["input"], self.bias["input"])
        if any(p is None for p in cifg_parts) and not all(p is None for p in cifg_parts):
            raise invalid("input gate weights and bias must all be present or all omitted (CIFG)", "lstm.cifg")
        self.cifg = self.input_w["input"] is None
        self.gates = _GATES[1:] if self.cifg else _GATES
        for name, table in (("input", self.input_w), ("recurrent", self.recurrent_w), ("bias", self.bias)):
            for gate in self.gates:
                if table[gate] is None:
                    raise invalid(f"{name} operand of the {gate} gate is missing", "inputs.missing")
        peep = self.peephole
        if (peep["forget"] is None) != (peep["output"] is None):
            raise invalid("cell-to-forget and cell-to-output weights must be present together", "lstm.peephole")
        self.has_peephole = peep["forget"] is not None
        if (peep["input"] is not None) != (self.has_peephole and not self.cifg):
            raise invalid("cell-to-input weights must be present exactly when peephole is used without CIFG",
                          "lstm.peephole")
        norms = [self.layer_norm[g] for g in self.gates]
        if any(n is None for n in norms) and not all(n is None for n in norms):
            raise invalid("layer normalization weights must all be present or all omitted", "lstm.layer_norm")
        self.has_layer_norm = norms[0] is not None
        if self.cifg and self.layer_norm["input"] is not None:
            raise invalid("input layer normalization weights given with CIFG", "lstm.layer_norm")
        if self.projection_w is None and self.projection_b is not None:
            raise invalid("projection bias given without projection weights", "lstm.projection")
        aux = [self.aux_w[g] for g in self.gates]
        if any(a is None for a in aux) and not all(a is None for a in aux):
            raise invalid("auxiliary weights must all be present or all omitted", "lstm.aux")
        self.has_aux_weights = aux[0] is not None
        self._check_shapes()
        gates = self.gates
        # Stacked [gates * units, size] matrices so one multiply feeds every gate.
        self.stacked_input = np.concatenate([self.input_w[g] for g in gates])
        self.stacked_recurrent = np.concatenate([self.recurrent_w[g] for g in gates])
        self.stacked_aux = np.concatenate([self.aux_w[g] for g in gates]) if self.has_aux_weights else None

    def _check_shapes(self) -> None:
        units, input_size = self.input_w["forget"].shape if self.input_w["forget"].ndim == 2 else (-1, -1)
        if units < 0:
            raise invalid("input-to-forget weights must have rank 2", "shape.rank")
        self.units, self.input_size = units, input_size
        self.output_size = self.projection_w.shape[0] if self.projection_w is not None else units
        for gate in self.gates:
            check_shape(self.input_w[gate], (units, input_size), f"input-to-{gate} weights")
            check_shape(self.recurrent_w[gate], (units, self.output_size), f"recurrent-to-{gate} weights")
            check_shape(self.bias[gate], (units,), f"{gate} gate bias")
            if self.has_layer_norm:
                check_shape(self.layer_norm[gate], (units,), f"{gate} layer normalization weights")
        for gate, peep in self.peephole.items():
            if peep is not None:
                check_shape(peep, (units,), f"cell-to-{gate} weights")
        if self.has_aux_weights:
            first = self.aux_w[self.gates[0]]
            aux_size = first.shape[1] if first.ndim == 2 else -1
            for gate in self.gates:
                check_shape(self.aux_w[gate], (units, aux_size), f"auxiliary input-to-{gate} weights")
        if self.projection_w is not None:
            check_shape(self.projection_w, (self.output_size, units), "projection weights")
        if self.projection_b is not None:
            check_shape(self.projection_b, (self.output_size,), "projection bias")

    # --- computation ------------------------------------------------------------------------------------------

    def _finish_gate(self, z: np.ndarray, gate: str) -> np.ndarray:
        """Layer normalization (if any) and bias of one gate's pre-activation [batch, units]."""
        if self.has_layer_norm:
            mean = z.mean(axis=1, keepdims=True)
            centered = z - mean
            variance = (centered * centered).mean(axis=1, keepdims=True)
            z = centered / np.sqrt(variance + _LAYER_NORM_EPSILON) * self.layer_norm[gate]
        return z + self.bias[gate]

    def run(self, xs: np.ndarray, aux: np.ndarray | None, h: np.ndarray, c: np.ndarray,
            reverse: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Unroll over [time, batch, input]; returns outputs [time, batch, output], final h, final c, scratch."""
        steps, batch, size = xs.shape
        if size != self.input_size:
            raise invalid(f"input size {size} does not match weights {self.input_size}", "shape.input")
        check_shape(h, (batch, self.output_size), "output state")
        check_shape(c, (batch, self.units), "cell state")
        projected = xs @ self.stacked_input.T
        if self.stacked_aux is not None:
            if aux is None or aux.shape[:2] != xs.shape[:2] or aux.shape[2] != self.stacked_aux.shape[1]:
                raise invalid("auxiliary input missing or of the wrong shape", "shape.aux_input")
            projected = projected + aux @ self.stacked_aux.T
        outputs = np.empty((steps, batch, self.output_size), dtype=np.float32)
        units = self.units
        scratch = np.zeros((batch, units * len(self.gates)), dtype=np.float32)
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for t in order:
            z = projected[t] + h @ self.stacked_recurrent.T
            pre = {gate: z[:, k * units : (k + 1) * units] for k, gate in enumerate(self.gates)}
            if self.has_peephole:
                pre["forget"] = pre["forget"] + c * self.peephole["forget"]
                if not self.cifg:
                    pre["input"] = pre["input"] + c * self.peephole["input"]
            forget = sigmoid(self._finish_gate(pre["forget"], "forget"))
            input_gate = 1 - forget if self.cifg else sigmoid(self._finish_gate(pre["input"], "input"))
            candidate = self.activation(self._finish_gate(pre["cell"], "cell"))
            c = forget * c + input_gate * candidate
            if self.cell_clip > 0:
                c = np.clip(c, -self.cell_clip, self.cell_clip)
            out_pre = pre["output"] + (c * self.peephole["output"] if self.has_peephole else 0)
            output_gate = sigmoid(self._finish_gate(out_pre, "output"))
            h = (output_gate * self.activation(c)).astype(np.float32)
            if self.projection_w is not None:
                h = h @ self.projection_w.T
                if self.projection_b is not None:
                    h = h + self.projection_b
                if self.proj_clip > 0:
                    h = np.clip(h, -self.proj_clip, self.proj_clip)
            c = c.astype(np.float32)
            h = h.astype(np.float32)
            outputs[t] = h
            gate_values = ([] if self.cifg else [input_gate]) + [forget, candidate, output_gate]
            scratch = np.concatenate(gate_values, axis=1).astype(np.float32)
        return outputs, h, c, scratch


def _clips(call: OpCall, first: int) -> tuple[float, float]:
    return float(call.scalar(first, 0.0)), float(call.scalar(first + 1, 0.0))


@kernel(OperationType.LSTM, FLOAT_TYPES)
@quiet
def lstm(call: OpCall) -> list[np.ndarray]:
    """One LSTM step: outputs scratch buffer, output state, cell state and output."""
    cell = _Cell(call, _Layout(weights=1, layer_norm=23), int(call.scalar(20)), *_clips(call, 21))
    x = required_f32(call, 0, 2, "input")
    h = required_f32(call, 18, 2, "output state")
    c = required_f32(call, 19, 2, "cell state")
    outputs, h, c, scratch = cell.run(x[None], None, h, c)
    out = call.outputs
    return [store(scratch, out[0]), store(h, out[1]), store(c, out[2]), store(outputs[0], out[3])]


@kernel(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, FLOAT_TYPES)
@quiet
def unidirectional_sequence_lstm(call: OpCall) -> list[np.ndarray]:
    """The LSTM step unrolled over a sequence; optional outputs 1 and 2 are the final states."""
    cell = _Cell(call, _Layout(weights=1, layer_norm=24), int(call.scalar(20)), *_clips(call, 21))
    is_time_major = bool(call.scalar(23, False))
    xs = time_major(required_f32(call, 0, 3, "input"), is_time_major)
    outputs, h, c, _ = cell.run(xs, None, required_f32(call, 18, 2, "output state"),
                                required_f32(call, 19, 2, "cell state"))
    results = [store(from_time_major(outputs, is_time_major), call.outputs[0])]
    for k, state in zip(range(1, len(call.outputs)), (h, c)):
        results.append(store(state, call.outputs[k]))
    return results


@kernel(OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, FLOAT_TYPES)
@quiet
def bidirectional_sequence_lstm(call: OpCall) -> list[np.ndarray]:
    """A forward and a backward LSTM over one sequence, with optional auxiliary input and merged outputs."""
    activation = int(call.scalar(48))
    clips = _clips(call, 49)
    merge = bool(call.scalar(51, False))
    is_time_major = bool(call.scalar(52, False))
    fw = _Cell(call, _Layout(weights=1, layer_norm=53, aux_weights=40), activation, *clips)
    bw = _Cell(call, _Layout(weights=18, layer_norm=57, aux_weights=44), activation, *clips)
    if fw.has_aux_weights != bw.has_aux_weights:
        raise invalid("forward and backward auxiliary weights must be present together", "lstm.aux")
    xs = time_major(required_f32(call, 0, 3, "input"), is_time_major)
    aux = optional_f32(call, 39)
    bw_xs = xs
    if aux is not None:
        aux = time_major(aux, is_time_major)
        if aux.shape[:2] != xs.shape[:2]:
            raise invalid(f"auxiliary input {aux.shape} does not match input {xs.shape}", "shape.aux_input")
        if not fw.has_aux_weights:
            # Auxiliary input without weights: the backward cell reads it in place of the input.
            bw_xs, aux = aux, None
    elif fw.has_aux_weights:
        raise invalid("auxiliary weights given without an auxiliary input", "lstm.aux")
    fw_out, fw_h, fw_c, _ = fw.run(xs, aux, required_f32(call, 35, 2, "forward output state"),
                                   required_f32(call, 36, 2, "forward cell state"))
    bw_out, bw_h, bw_c, _ = bw.run(bw_xs, aux, required_f32(call, 37, 2, "backward output state"),
                                   required_f32(call, 38, 2, "backward cell state"), reverse=True)
    sequences = [np.concatenate([fw_out, bw_out], axis=2)] if merge else [fw_out, bw_out]
    if len(call.outputs) < len(sequences):
        raise invalid(f"{len(sequences)} sequence outputs needed, {len(call.outputs)} declared", "outputs.count")
    results = [store(from_time_major(s, is_time_major), call.outputs[k]) for k, s in enumerate(sequences)]
    # Optional final states follow: forward output and cell state, then backward output and cell state.
    first_state = len(results)
    for k, state in zip(range(first_state, len(call.outputs)), (fw_h, fw_c, bw_h, bw_c)):
        results.append(store(state, call.outputs[k]))
    return results


# --- QUANTIZED_16BIT_LSTM: 8-bit activations and weights, 16-bit fixed-point internal state -------------------

_INT16_MIN, _INT16_MAX = -(1 << 15), (1 << 15) - 1
_GATE_BITS = 3  # gate pre-activations are int16 with 3 integer bits (scale 2^-12)
_STATE_BITS = 4  # the cell state is int16 with 4 integer bits (scale 2^-11)


def _high_mul16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Saturating rounding doubling high multiply of int16 fixed-point raws (the fixed-point product)."""
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    product = a * b
    nudge = np.where(product >= 0, 1 << 14, 1 - (1 << 14))
    total = product + nudge
    high = np.where(total >= 0, total >> 15, -((-total) >> 15))  # division truncating toward zero
    return np.where((a == _INT16_MIN) & (b == _INT16_MIN), _INT16_MAX, high)


def _round_shift(x: np.ndarray, exponent: int) -> np.ndarray:
    """x / 2^exponent rounded to nearest, ties away from zero."""
    x = x.astype(np.int64)
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


# The HAL's reference computes the gates' logistic and tanh in int16 fixed point (gemmlowp's functions, which the
# conformance vectors embody), not as rounded real functions: the two differ by a few Q15 steps, enough to move the
# cell state by two steps of 2^-11. So the functions below follow the reference's arithmetic step by step: exp on
# [-1/4, 0) by a Taylor polynomial around -1/8, exp of the rest by multiplying in exp(-2^k) for each set bit of
# the multiple of 1/4, and 1/(1+x) and (1-x)/(1+x) by three Newton-Raphson steps from 48/17 - 32/17 * d.


def _wrap16(x: np.ndarray) -> np.ndarray:
    """Plain int16 arithmetic: values outside the int16 range wrap around."""
    return ((np.asarray(x, dtype=np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def _shift_left16(x: np.ndarray, exponent: int) -> np.ndarray:
    """x * 2^exponent on int16 raws, saturating."""
    limit = (1 << (15 - exponent)) - 1
    return np.where(x > limit, _INT16_MAX, np.where(x < -limit, _INT16_MIN, x << exponent))


def _rescale16(x: np.ndarray, integer_bits: int, to_integer_bits: int) -> np.ndarray:
    """A raw with `integer_bits` integer bits re-expressed with `to_integer_bits` (rounding or saturating)."""
    exponent = integer_bits - to_integer_bits
    if exponent > 0:
        return _shift_left16(x, exponent)
    return _round_shift(x, -exponent) if exponent < 0 else x


def _constant16(real: float, integer_bits: int = 0) -> np.int64:
    """A constant as the reference writes it: rounded to 32 bits, then narrowed to 16 bits by a rounding shift."""
    raw32 = np.array([round(real * 2.0 ** (31 - integer_bits))], dtype=np.int64)
    return _round_shift(raw32, 16)[0]


_ONE_EIGHTH_EXP = _constant16(math.exp(-1 / 8))
_ONE_THIRD = _constant16(1 / 3)
_EXP_OF_POWERS = tuple((k, _constant16(math.exp(-(2.0**k)))) for k in range(-2, 5))  # exp(-2^k)
_NEWTON_START = (_constant16(48 / 17, 2), _constant16(-32 / 17, 2))  # Q2.13
_ONE_Q2 = 1 << 13
_HALF_Q0 = _constant16(0.5)


def _exp_on_last_quarter(a: np.ndarray) -> np.ndarray:
    """exp(a) for Q0.15 raws a in [-1/4, 0), as Q0.15."""
    x = _wrap16(a + (1 << 12))  # a + 1/8: the polynomial is a Taylor expansion around -1/8
    x2 = _high_mul16(x, x)
    x3 = _high_mul16(x2, x)
    x4 = _high_mul16(x2, x2)
    cubic_and_quartic = _high_mul16(_wrap16(_round_shift(x4, 2) + x3), _ONE_THIRD)  # x^4/12 + x^3/3
    tail = _round_shift(_wrap16(cubic_and_quartic + x2), 1)  # x^4/24 + x^3/6 + x^2/2
    return np.clip(_ONE_EIGHTH_EXP + _high_mul16(_ONE_EIGHTH_EXP, _wrap16(x + tail)), _INT16_MIN, _INT16_MAX)


def _exp_on_negative(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """exp(a) for raws a <= 0 with `integer_bits` integer bits (at most 4), as Q0.15."""
    fractional = 15 - integer_bits
    quarter = 1 << (fractional - 2)
    last_quarter = _wrap16((a & (quarter - 1)) - quarter)  # in [-1/4, 0); a = last_quarter - whole quarters
    result = _exp_on_last_quarter(_rescale16(last_quarter, integer_bits, 0))
    quarters = _wrap16(last_quarter - a)
    for k, factor in _EXP_OF_POWERS:
        if integer_bits > k:
            result = np.where(quarters & (1 << (fractional + k)), _high_mul16(result, factor), result)
    return np.where(a == 0, _INT16_MAX, result)


def _newton_reciprocal(x: np.ndarray) -> np.ndarray:
    """Q2.13 approximation of 2 / (1 + x) for Q0.15 raws x in [0, 1)."""
    half_denominator = (x + _INT16_MAX + 1) >> 1  # (1 + x) / 2, rounded half up (the sum is never negative)
    start, slope = _NEWTON_START
    estimate = _wrap16(start + _high_mul16(half_denominator, slope))
    for _ in range(3):
        error = _wrap16(_ONE_Q2 - _high_mul16(half_denominator, estimate))
        estimate = _wrap16(estimate + _rescale16(_high_mul16(estimate, error), 4, 2))
    return estimate


def _fixed_sigmoid(raw: np.ndarray, integer_bits: int) -> np.ndarray:
    """The logistic of raws with `integer_bits` integer bits, as Q0.15 raws."""
    positive = raw > 0
    magnitude = np.where(positive, raw, _wrap16(-raw))
    of_positive = _rescale16(_newton_reciprocal(_exp_on_negative(_wrap16(-magnitude), integer_bits)), 1, 0)
    result = np.where(positive, of_positive, _wrap16(_INT16_MAX - of_positive))
    return np.where(raw == 0, _HALF_Q0, result)


def _fixed_tanh(raw: np.ndarray, integer_bits: int) -> np.ndarray:
    """The tanh of raws with `integer_bits` integer bits, as Q0.15 raws."""
    negative = raw < 0
    minus_magnitude = np.where(negative, raw, _wrap16(-raw))
    # exp(-2|x|): the same raw read with one more integer bit is twice the value.
    decay = _exp_on_negative(minus_magnitude, integer_bits + 1)
    of_magnitude = _rescale16(_wrap16(_newton_reciprocal(decay) - _ONE_Q2), 2, 0)  # (1 - e) / (1 + e)
    return np.where(raw == 0, 0, np.where(negative, _wrap16(-of_magnitude), of_magnitude))


Q16_LSTM_REAL_GATES = define(
    "q16_lstm_real_gates",
    "execution",
    "QUANTIZED_16BIT_LSTM computes its gates' logistic and tanh as the real functions rounded to Q0.15 instead of "
    "the HAL reference's int16 fixed-point ones: a few steps of 2^-15 apart, which the forget gate scales by the "
    "previous cell state past one step of 2^-11 when that is large (breaks O2 on the cell state output).",
).name


def _rounded_real(function: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray, int], np.ndarray]:
    """A gate function as the real one rounded to Q0.15 (the fault's gates)."""

    def gate(raw: np.ndarray, integer_bits: int) -> np.ndarray:
        real = function(raw / float(1 << (15 - integer_bits)))
        return np.clip(np.floor(real * (1 << 15) + 0.5), _INT16_MIN, _INT16_MAX).astype(np.int64)

    return gate


@kernel(OperationType.QUANTIZED_16BIT_LSTM, (OperandType.TENSOR_QUANT8_ASYMM,))
@quiet
def quantized_16bit_lstm(call: OpCall) -> list[np.ndarray]:
    """One quantized LSTM step; outputs the int16 cell state and the uint8 output."""
    inp = call.inputs[0]
    weights = [call.inputs[i] for i in range(1, 9)]
    biases = [call.inputs[i] for i in range(9, 13)]
    prev_state, prev_output = call.inputs[13], call.inputs[14]
    for t in (inp, *weights, *biases, prev_state, prev_output):
        if t is None or t.data is None:
            raise invalid("QUANTIZED_16BIT_LSTM has no optional inputs", "inputs.missing")
    batch, input_size = inp.data.shape
    units = prev_output.data.shape[1]
    w_scale, w_zero = weights[0].scale, weights[0].zero_point
    if any(w.scale != w_scale or w.zero_point != w_zero for w in weights):
        raise invalid("all weights must share one scale and zero point", "quant.weights")
    for k, w in enumerate(weights):
        check_shape(w.data, (units, input_size if k < 4 else units), "weights")
    for b in biases:
        check_shape(b.data, (units,), "bias")
    check_shape(prev_state.data, (batch, units), "previous cell state")
    check_shape(prev_output.data, (batch, units), "previous output")
    # Gate order of the stacked matrix: input, cell (input modulation), forget, output. Each row holds the
    # recurrent weights followed by the input weights and multiplies the concatenation [input, previous output],
    # the layout the public conformance vectors are computed with (when input and output sizes differ, the
    # columns do not line up with the documented roles of the weights; the conformance suite expects this).
    order = (0, 2, 1, 3)
    stacked = np.concatenate([np.concatenate([weights[g + 4].data, weights[g].data], axis=1) for g in order])
    bias = np.concatenate([biases[g].data for g in order]).astype(np.int64)
    concat = np.concatenate([inp.data, prev_output.data], axis=1).astype(np.int32) - 128
    acc = (concat @ (stacked.astype(np.int32) - np.int32(w_zero)).T).astype(np.int64) + bias
    # Accumulators have scale input_scale * weights_scale; gates want scale 2^-12.
    multiplier, shift = quantize_multipliers(np.array([w_scale / 128.0 * (1 << (15 - _GATE_BITS))]))
    gates = np.clip(requantize(acc, multiplier, shift), _INT16_MIN, _INT16_MAX)
    g_in, g_cell, g_forget, g_out = (gates[:, k * units : (k + 1) * units] for k in range(4))
    logistic, tanh = _fixed_sigmoid, _fixed_tanh
    if fault_active(call, Q16_LSTM_REAL_GATES):
        logistic, tanh = _rounded_real(sigmoid), _rounded_real(np.tanh)
    input_gate = logistic(g_in, _GATE_BITS)
    modulation = tanh(g_cell, _GATE_BITS)
    forget_gate = logistic(g_forget, _GATE_BITS)
    output_gate = logistic(g_out, _GATE_BITS)
    # new_state = input * modulation (rescaled from 0 to 4 integer bits) + forget * prev_state, saturating.
    gated_input = _round_shift(_high_mul16(input_gate, modulation), _STATE_BITS)
    kept = _high_mul16(prev_state.data.astype(np.int64), forget_gate)
    state = np.clip(gated_input + kept, _INT16_MIN, _INT16_MAX)
    # tanh reads the state rescaled (saturating) to the gates' 3 integer bits.
    state_f3 = np.clip(state << (_STATE_BITS - _GATE_BITS), _INT16_MIN, _INT16_MAX)
    activation = _high_mul16(output_gate, tanh(state_f3, _GATE_BITS))
    output = np.clip(_round_shift(activation, 8), -128, 127) + 128
    return [state.astype(np.int16), output.astype(np.uint8)]
