"""Recurrent layers: LSTM, RNN, SVDF, their sequence forms (UNIDIRECTIONAL_SEQUENCE_LSTM/RNN,
BIDIRECTIONAL_SEQUENCE_LSTM/RNN) and the quantized LSTMs (QUANTIZED_16BIT_LSTM, QUANTIZED_LSTM).

One LSTM cell serves every LSTM form. Its optional parts, as the HAL defines them:
- CIFG: without input-to-input weights (and recurrent-to-input weights and input gate bias) the input gate is
  1 - forget gate;
- peephole: cell-to-gate weights add c_{t-1} * w to the input and forget gates and c_t * w to the output gate;
- projection: h_t = clip(W_proj (o_t * g(c_t)) + b_proj, proj_clip), otherwise h_t = o_t * g(c_t);
- layer normalization: each gate's pre-activation (without bias) is normalized over the units, scaled by the
  layer-norm weights, and only then the bias is added.
A clip threshold of 0 disables clipping. LSTM's scratch buffer output is implementation-defined (its shape is
[batch, units * 4], or units * 3 with CIFG); the kernel fills it with zeros.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.hal import Operand, OperandType, OperationType
from harness.ops import _fixed16 as fixed
from harness.ops._nn_util import (
    BOOL,
    F16,
    F32,
    FLOAT,
    I32,
    Q8,
    Q8S,
    Q8SYMM,
    Q16S,
    RECURRENT_ACTIVATIONS,
    Inputs,
    close_scale,
    define_single_form,
    dim,
    dims_agree,
    recurrent_activation,
    scalar_type_for,
    scalars,
    sigmoid,
    tensor,
)
from harness.ops.common import (
    InvalidParameter,
    apply_activation,
    checks,
    fixed_output_quant,
    from_real,
    fused_activation,
    hal_scale,
    to_real,
)
from harness.ops.parameters import MERGED_OUTPUTS
from harness.ops.registry import Arg, KernelContext, ShapeContext, Signature

_TANH = 4  # the LSTM activation code of tanh
# Layer normalization of the LSTM gates divides by sqrt(variance + this).
LAYER_NORM_EPSILON = 1e-8
GATES = ("i", "f", "c", "o")


# --------------------------------------------------------------------------------------------------------------
# The float LSTM cell


@dataclass
class LstmCell:
    """Real-valued weights of one LSTM cell (None = absent optional part)."""

    w_x: dict[str, np.ndarray | None]
    w_h: dict[str, np.ndarray]
    peephole: dict[str, np.ndarray | None]
    bias: dict[str, np.ndarray | None]
    projection: np.ndarray | None
    projection_bias: np.ndarray | None
    layer_norm: dict[str, np.ndarray | None]
    w_aux: dict[str, np.ndarray | None]
    activation: int
    cell_clip: float
    proj_clip: float
    # Stores the hidden state o_t * g(c_t) where the operation keeps it in a type of its own (QUANTIZED_LSTM's
    # projection input); None keeps it real.
    hidden: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def cifg(self) -> bool:
        """True when the input gate is coupled to the forget gate."""
        return self.w_x["i"] is None

    def step(
        self, x: np.ndarray, h: np.ndarray, c: np.ndarray, aux: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One time step: (h_t, c_t) from x_t, h_{t-1}, c_{t-1} (and an auxiliary input)."""

        def pre(g: str) -> np.ndarray:
            v = x @ self.w_x[g].T + h @ self.w_h[g].T
            if aux is not None and self.w_aux[g] is not None:
                v = v + aux @ self.w_aux[g].T
            return v

        def finish(g: str, v: np.ndarray) -> np.ndarray:
            if self.layer_norm["f"] is not None:
                mean = v.mean(axis=1, keepdims=True)
                var = ((v - mean) ** 2).mean(axis=1, keepdims=True)
                v = (v - mean) / np.sqrt(var + LAYER_NORM_EPSILON) * self.layer_norm[g]
            return v + self.bias[g] if self.bias[g] is not None else v

        peephole = self.peephole["f"] is not None
        f_pre = pre("f") + (c * self.peephole["f"] if peephole else 0.0)
        f = sigmoid(finish("f", f_pre))
        if self.cifg:
            i = 1.0 - f
        else:
            i_pre = pre("i") + (c * self.peephole["i"] if peephole else 0.0)
            i = sigmoid(finish("i", i_pre))
        g = recurrent_activation(finish("c", pre("c")), self.activation)
        c_new = f * c + i * g
        if self.cell_clip > 0:
            c_new = np.clip(c_new, -self.cell_clip, self.cell_clip)
        o_pre = pre("o") + (c_new * self.peephole["o"] if peephole else 0.0)
        o = sigmoid(finish("o", o_pre))
        h_new = o * recurrent_activation(c_new, self.activation)
        if self.projection is not None:
            if self.hidden is not None:
                h_new = self.hidden(h_new)
            h_new = h_new @ self.projection.T
            if self.projection_bias is not None:
                h_new = h_new + self.projection_bias
            if self.proj_clip > 0:
                h_new = np.clip(h_new, -self.proj_clip, self.proj_clip)
        return h_new, c_new


def _real(ctx: KernelContext, i: int | None) -> np.ndarray | None:
    if i is None or not ctx.has(i):
        return None
    return to_real(ctx.inputs[i], ctx.input_operands[i])


def read_cell(
    ctx: KernelContext, base: int, scalars_at: int | None, layer_norm_at: int | None, aux_at: int | None = None
) -> LstmCell:
    """An LstmCell whose input-to-input weights are input `base`, followed by the HAL's order of the other
    16 tensors; activation, cell clip and projection clip at `scalars_at`.."+2 (None: tanh, no clipping)."""
    w = [_real(ctx, base + k) for k in range(17)]
    ln = [_real(ctx, layer_norm_at + k) if layer_norm_at is not None else None for k in range(4)]
    aux = [_real(ctx, aux_at + k) if aux_at is not None else None for k in range(4)]
    return LstmCell(
        w_x=dict(zip(GATES, w[0:4])),
        w_h=dict(zip(GATES, w[4:8])),
        peephole={"i": w[8], "f": w[9], "o": w[10]},
        bias=dict(zip(GATES, w[11:15])),
        projection=w[15],
        projection_bias=w[16],
        layer_norm=dict(zip(GATES, ln)),
        w_aux=dict(zip(GATES, aux)),
        activation=int(ctx.scalar(scalars_at)) if scalars_at is not None else _TANH,
        cell_clip=float(ctx.scalar(scalars_at + 1, 0.0)) if scalars_at is not None else 0.0,
        proj_clip=float(ctx.scalar(scalars_at + 2, 0.0)) if scalars_at is not None else 0.0,
    )


# --------------------------------------------------------------------------------------------------------------
# LSTM signatures

_LSTM_TENSORS = [
    ("input_to_input_weights", 2, True),
    ("input_to_forget_weights", 2, False),
    ("input_to_cell_weights", 2, False),
    ("input_to_output_weights", 2, False),
    ("recurrent_to_input_weights", 2, True),
    ("recurrent_to_forget_weights", 2, False),
    ("recurrent_to_cell_weights", 2, False),
    ("recurrent_to_output_weights", 2, False),
    ("cell_to_input_weights", 1, True),
    ("cell_to_forget_weights", 1, True),
    ("cell_to_output_weights", 1, True),
    ("input_gate_bias", 1, True),
    ("forget_gate_bias", 1, False),
    ("cell_bias", 1, False),
    ("output_gate_bias", 1, False),
    ("projection_weights", 2, True),
    ("projection_bias", 1, True),
]
_LAYER_NORM = [
    "input_layer_norm_weights",
    "forget_layer_norm_weights",
    "cell_layer_norm_weights",
    "output_layer_norm_weights",
]


def _weights(t: int, prefix: str = "") -> list[Arg]:
    return [tensor(prefix + name, t, rank, optional) for name, rank, optional in _LSTM_TENSORS]


def _lstm_scalars(t: int) -> list[Arg]:
    return scalars("activation") + scalars("cell_clip", "proj_clip", t=scalar_type_for(t))


def _layer_norm(t: int, prefix: str = "") -> list[Arg]:
    return [tensor(prefix + name, t, 1, True) for name in _LAYER_NORM]


def _lstm_dims(input_axis: int, base: int = 1, states: tuple[int, int] = (18, 19)) -> tuple:
    """Shape relations of one LSTM cell's tensors: weights against the input size, the units and the output
    size; biases and peepholes against the units; states against the units and the output size."""
    forget_x, forget_h = base + 1, base + 5
    pairs = [(base + k, 1, 0, input_axis) for k in range(4)]
    pairs += [(base + k, 0, forget_x, 0) for k in (0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)]
    pairs += [(base + k, 1, forget_h, 1) for k in (4, 6, 7)]
    pairs += [(states[0], 1, forget_h, 1), (states[1], 1, forget_x, 0)]
    return tuple(pairs)


def _lstm_signatures() -> list[Signature]:
    sigs = []
    for t, version in ((F32, "V1_0"), (F16, "V1_2")):
        s = scalar_type_for(t)
        base = [tensor("input", t, 2), *_weights(t), tensor("output_state_in", t, 2), tensor("cell_state_in", t, 2)]
        base += scalars("activation") + scalars("cell_clip", "proj_clip", t=s)
        outs = tuple(tensor(n, t, 2) for n in ("scratch_buffer", "output_state_out", "cell_state_out", "output"))
        check = dims_agree(*_lstm_dims(1), (18, 0, 0, 0), (19, 0, 0, 0))
        if version == "V1_0":
            sigs.append(Signature(tuple(base), outs, None, "V1_0", check))
        sigs.append(Signature(tuple(base + _layer_norm(t)), outs, 23, "V1_2", check))
    return sigs


def lstm_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """scratch [batch, units * (3 with CIFG else 4)], output state and output [batch, output_size], cell
    state [batch, units]."""
    inputs = Inputs(ctx)
    batch = dim(inputs.shape(0), 0)
    units = dim(inputs.shape(2), 0)
    output_size = dim(inputs.shape(18), 1) or dim(inputs.shape(6), 1)
    gates = 3 if not inputs.present(1) else 4
    return [(batch, units * gates), (batch, output_size), (batch, units), (batch, output_size)]


def lstm_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """LSTM: one time step of the cell."""
    cell = read_cell(ctx, 1, 20, 23 if ctx.has(24) else None)
    x, h, c = (_real(ctx, i) for i in (0, 18, 19))
    h_new, c_new = cell.step(x, h, c)
    units = c.shape[1]
    scratch = np.zeros((x.shape[0], units * (3 if cell.cifg else 4)))
    outs = ctx.output_operands
    return [
        from_real(scratch, outs[0]),
        from_real(h_new, outs[1]),
        from_real(c_new, outs[2]),
        from_real(h_new, outs[3]),
    ]


# --------------------------------------------------------------------------------------------------------------
# UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM


def _run_sequence(
    cell: LstmCell, xs: np.ndarray, h: np.ndarray, c: np.ndarray, aux: np.ndarray | None, reverse: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run a cell over a time-major sequence: (outputs [T, B, out], final h, final c)."""
    steps = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    outs = [np.zeros(0)] * xs.shape[0]
    for t in steps:
        h, c = cell.step(xs[t], h, c, None if aux is None else aux[t])
        outs[t] = h
    stacked = np.stack(outs) if outs else np.zeros((0, h.shape[0], h.shape[1]))
    return stacked, h, c


def _time_major(x: np.ndarray, time_major: bool) -> np.ndarray:
    return x if time_major else np.swapaxes(x, 0, 1)


def unidirectional_lstm_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """output [T, B, out] (time-major) or [B, T, out]; optional final states [B, out], [B, units]."""
    inputs = Inputs(ctx)
    shape = inputs.shape(0)
    a, b = dim(shape, 0), dim(shape, 1)
    out_size = dim(inputs.shape(18), 1)
    units = dim(inputs.shape(19), 1)
    batch = b if inputs.scalar(23, True) else a
    shapes = [(a, b, out_size), (batch, out_size), (batch, units)]
    return shapes[: len(ctx.outputs)]


def unidirectional_lstm_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """UNIDIRECTIONAL_SEQUENCE_LSTM: the LSTM cell over the time dimension."""
    time_major = bool(ctx.scalar(23))
    cell = read_cell(ctx, 1, 20, 24 if ctx.has(25) else None)
    xs = _time_major(_real(ctx, 0), time_major)
    ys, h, c = _run_sequence(cell, xs, _real(ctx, 18), _real(ctx, 19), None, False)
    results = [_time_major(ys, time_major), h, c]
    return [from_real(r, op) for r, op in zip(results, ctx.output_operands)]


def bidirectional_lstm_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """Forward (and unless merged, backward) outputs, then the optional final states."""
    inputs = Inputs(ctx)
    shape = inputs.shape(0)
    a, b = dim(shape, 0), dim(shape, 1)
    time_major = inputs.scalar(52, True)
    batch = b if time_major else a
    fw_out, bw_out = dim(inputs.shape(35), 1), dim(inputs.shape(37), 1)
    fw_units, bw_units = dim(inputs.shape(36), 1), dim(inputs.shape(38), 1)
    merge = inputs.scalar(51, False)
    outs = [(a, b, fw_out + bw_out if merge else fw_out)] + ([] if merge else [(a, b, bw_out)])
    outs += [(batch, fw_out), (batch, fw_units), (batch, bw_out), (batch, bw_units)]
    return outs[: len(ctx.outputs)]


def _aux_inputs(
    ctx: KernelContext, x: np.ndarray, aux: np.ndarray | None, has_aux_weights: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(forward input, backward input, auxiliary input fed through aux weights) for the three linking modes:
    regular (no aux), cross-linking (aux and aux weights), parallel (aux without aux weights: the backward
    cell reads the auxiliary input instead of the input)."""
    if aux is None:
        return x, x, None
    if has_aux_weights:
        return x, x, aux
    return x, aux, None


# Output counts of the forms without a separate backward output: the forward output, with or without the four
# final states.
_FORWARD_ONLY_OUTPUTS = (1, 5)


def bidirectional_lstm_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """BIDIRECTIONAL_SEQUENCE_LSTM: a forward and a backward LSTM over the sequence."""
    time_major = bool(ctx.scalar(52))
    merge = bool(ctx.scalar(51))
    if not merge and len(ctx.output_operands) in _FORWARD_ONLY_OUTPUTS:
        raise InvalidParameter(f"merge_outputs must be {MERGED_OUTPUTS.describe()}, got false")
    has_ln = ctx.has(54)
    fw = read_cell(ctx, 1, 48, 53 if has_ln else None, 40)
    bw = read_cell(ctx, 18, 48, 57 if has_ln else None, 44)
    x = _time_major(_real(ctx, 0), time_major)
    aux = _real(ctx, 39)
    aux = None if aux is None else _time_major(aux, time_major)
    fw_x, bw_x, aux_x = _aux_inputs(ctx, x, aux, ctx.has(41))
    fw_ys, fw_h, fw_c = _run_sequence(fw, fw_x, _real(ctx, 35), _real(ctx, 36), aux_x, False)
    bw_ys, bw_h, bw_c = _run_sequence(bw, bw_x, _real(ctx, 37), _real(ctx, 38), aux_x, True)
    if merge:
        results = [_time_major(np.concatenate([fw_ys, bw_ys], axis=2), time_major)]
    else:
        results = [_time_major(fw_ys, time_major), _time_major(bw_ys, time_major)]
    results += [fw_h, fw_c, bw_h, bw_c]
    return [from_real(r, op) for r, op in zip(results, ctx.output_operands)]


def _sequence_lstm_signatures() -> tuple[list[Signature], list[Signature]]:
    uni, bidi = [], []
    for t in (F32, F16):
        s = scalar_type_for(t)
        ins = [tensor("input", t, 3), *_weights(t), tensor("output_state_in", t, 2), tensor("cell_state_in", t, 2)]
        ins += scalars("activation") + scalars("cell_clip", "proj_clip", t=s) + scalars("time_major", t=BOOL)
        ins += _layer_norm(t)
        states = [tensor("output_state_out", t, 2), tensor("cell_state_out", t, 2)]
        check = dims_agree(*_lstm_dims(2))
        uni.append(Signature(tuple(ins), (tensor("output", t, 3),), None, "V1_2", check))
        uni.append(Signature(tuple(ins), (tensor("output", t, 3), *states), None, "V1_3", check))

        ins = [tensor("input", t, 3), *_weights(t, "fw_"), *_weights(t, "bw_")]
        ins += [
            tensor(n, t, 2)
            for n in ("fw_output_state_in", "fw_cell_state_in", "bw_output_state_in", "bw_cell_state_in")
        ]
        ins.append(tensor("aux_input", t, 3, True))
        ins += [
            tensor(f"{d}_aux_input_to_{g}_weights", t, 2, True)
            for d in ("fw", "bw")
            for g in ("input", "forget", "cell", "output")
        ]
        ins += scalars("activation") + scalars("cell_clip", "proj_clip", t=s)
        ins += scalars("merge_outputs", "time_major", t=BOOL)
        ins += _layer_norm(t, "fw_") + _layer_norm(t, "bw_")
        out_fw, out_bw = tensor("fw_output", t, 3), tensor("bw_output", t, 3)
        states = [
            tensor(n, t, 2)
            for n in ("fw_output_state_out", "fw_cell_state_out", "bw_output_state_out", "bw_cell_state_out")
        ]
        check = dims_agree(*_lstm_dims(2, 1, (35, 36)), *_lstm_dims(2, 18, (37, 38)))
        bidi.append(Signature(tuple(ins), (out_fw, out_bw), None, "V1_2", check))
        bidi.append(Signature(tuple(ins), (out_fw,), None, "V1_2", check))
        bidi.append(Signature(tuple(ins), (out_fw, out_bw, *states), None, "V1_3", check))
        bidi.append(Signature(tuple(ins), (out_fw, *states), None, "V1_3", check))
    return uni, bidi


# --------------------------------------------------------------------------------------------------------------
# RNN and its sequence forms


def rnn_step(
    x: np.ndarray,
    h: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: np.ndarray,
    act: int,
    aux: np.ndarray | None = None,
    w_aux: np.ndarray | None = None,
) -> np.ndarray:
    """h_t = activation(x W^T + h_{t-1} R^T + b (+ aux W_aux^T))."""
    v = x @ w.T + h @ r.T + b
    if aux is not None and w_aux is not None:
        v = v + aux @ w_aux.T
    return apply_activation(v, act)


def rnn_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """hidden state out and output: [batch, units]."""
    inputs = Inputs(ctx)
    shape = (dim(inputs.shape(0), 0), dim(inputs.shape(1), 0))
    return [shape, shape]


def rnn_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """RNN: one step of a basic recurrent cell; both outputs are the new state."""
    x, w, r, b, h = (_real(ctx, i) for i in range(5))
    h_new = rnn_step(x, h, w, r, b, int(ctx.scalar(5)))
    return [from_real(h_new, ctx.output_operands[0]), from_real(h_new, ctx.output_operands[1])]


def _rnn_sequence(
    xs: np.ndarray,
    h: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: np.ndarray,
    act: int,
    aux: np.ndarray | None,
    w_aux: np.ndarray | None,
    reverse: bool,
) -> tuple[np.ndarray, np.ndarray]:
    steps = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    outs = [np.zeros(0)] * xs.shape[0]
    for t in steps:
        h = rnn_step(xs[t], h, w, r, b, act, None if aux is None else aux[t], w_aux)
        outs[t] = h
    return (np.stack(outs) if outs else np.zeros((0,) + h.shape)), h


def unidirectional_rnn_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """output [T, B, units] or [B, T, units]; optional final hidden state [B, units]."""
    inputs = Inputs(ctx)
    a, b = dim(inputs.shape(0), 0), dim(inputs.shape(0), 1)
    units = dim(inputs.shape(1), 0)
    batch = b if inputs.scalar(6, 1) else a
    return [(a, b, units), (batch, units)][: len(ctx.outputs)]


def unidirectional_rnn_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """UNIDIRECTIONAL_SEQUENCE_RNN: the RNN cell over the time dimension."""
    time_major = bool(ctx.scalar(6))
    xs = _time_major(_real(ctx, 0), time_major)
    w, r, b, h = (_real(ctx, i) for i in (1, 2, 3, 4))
    ys, h = _rnn_sequence(xs, h, w, r, b, int(ctx.scalar(5)), None, None, False)
    return [from_real(r_, op) for r_, op in zip([_time_major(ys, time_major), h], ctx.output_operands)]


def bidirectional_rnn_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """Forward (and unless merged, backward) outputs, then the optional final hidden states."""
    inputs = Inputs(ctx)
    a, b = dim(inputs.shape(0), 0), dim(inputs.shape(0), 1)
    fw, bw = dim(inputs.shape(1), 0), dim(inputs.shape(5), 0)
    batch = b if inputs.scalar(13, True) else a
    merge = inputs.scalar(14, False)
    outs = [(a, b, fw + bw if merge else fw)] + ([] if merge else [(a, b, bw)])
    return (outs + [(batch, fw), (batch, bw)])[: len(ctx.outputs)]


def bidirectional_rnn_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """BIDIRECTIONAL_SEQUENCE_RNN: a forward and a backward RNN over the sequence."""
    time_major, merge = bool(ctx.scalar(13)), bool(ctx.scalar(14))
    act = int(ctx.scalar(12))
    x = _time_major(_real(ctx, 0), time_major)
    aux = _real(ctx, 9)
    aux = None if aux is None else _time_major(aux, time_major)
    fw_x, bw_x, aux_x = _aux_inputs(ctx, x, aux, ctx.has(10))
    fw_w, fw_r, fw_b, fw_h = (_real(ctx, i) for i in (1, 2, 3, 4))
    bw_w, bw_r, bw_b, bw_h = (_real(ctx, i) for i in (5, 6, 7, 8))
    fw_ys, fw_h = _rnn_sequence(fw_x, fw_h, fw_w, fw_r, fw_b, act, aux_x, _real(ctx, 10), False)
    bw_ys, bw_h = _rnn_sequence(bw_x, bw_h, bw_w, bw_r, bw_b, act, aux_x, _real(ctx, 11), True)
    if merge:
        results = [_time_major(np.concatenate([fw_ys, bw_ys], axis=2), time_major)]
    else:
        results = [_time_major(fw_ys, time_major), _time_major(bw_ys, time_major)]
    results += [fw_h, bw_h]
    return [from_real(r_, op) for r_, op in zip(results, ctx.output_operands)]


def _rnn_signatures() -> tuple[list[Signature], list[Signature], list[Signature]]:
    cell, uni, bidi = [], [], []
    for t, version in ((F32, "V1_0"), (F16, "V1_2")):
        ins = (
            tensor("input", t, 2),
            tensor("weights", t, 2),
            tensor("recurrent_weights", t, 2),
            tensor("bias", t, 1),
            tensor("hidden_state_in", t, 2),
            *scalars("activation"),
        )
        check = checks(
            dims_agree((1, 1, 0, 1), (2, 0, 1, 0), (2, 1, 1, 0), (3, 0, 1, 0), (4, 1, 1, 0), (4, 0, 0, 0)),
            fused_activation(5),
        )
        outs = (tensor("hidden_state_out", t, 2), tensor("output", t, 2))
        cell.append(Signature(ins, outs, None, version, check))
    for t in (F32, F16):
        ins = (
            tensor("input", t, 3),
            tensor("weights", t, 2),
            tensor("recurrent_weights", t, 2),
            tensor("bias", t, 1),
            tensor("hidden_state_in", t, 2),
            *scalars("activation", "time_major"),
        )
        check = checks(
            dims_agree((1, 1, 0, 2), (2, 0, 1, 0), (2, 1, 1, 0), (3, 0, 1, 0), (4, 1, 1, 0)), fused_activation(5)
        )
        uni.append(Signature(ins, (tensor("output", t, 3),), None, "V1_2", check))
        uni.append(Signature(ins, (tensor("output", t, 3), tensor("hidden_state_out", t, 2)), None, "V1_3", check))
        ins = (
            tensor("input", t, 3),
            tensor("fw_weights", t, 2),
            tensor("fw_recurrent_weights", t, 2),
            tensor("fw_bias", t, 1),
            tensor("fw_hidden_state_in", t, 2),
            tensor("bw_weights", t, 2),
            tensor("bw_recurrent_weights", t, 2),
            tensor("bw_bias", t, 1),
            tensor("bw_hidden_state_in", t, 2),
            tensor("aux_input", t, 3, True),
            tensor("fw_aux_weights", t, 2, True),
            tensor("bw_aux_weights", t, 2, True),
            *scalars("activation"),
            *scalars("time_major", "merge_outputs", t=BOOL),
        )
        fw, bw = tensor("fw_output", t, 3), tensor("bw_output", t, 3)
        states = (tensor("fw_hidden_state_out", t, 2), tensor("bw_hidden_state_out", t, 2))
        check = checks(
            dims_agree(
                *[(w, 1, 0, 2) for w in (1, 5)],
                *[(a, 0, w, 0) for w in (1, 5) for a in (w + 1, w + 2)],
                *[(w + 1, 1, w, 0) for w in (1, 5)],
                *[(w + 3, 1, w, 0) for w in (1, 5)],
            ),
            fused_activation(12),
        )
        bidi += [
            Signature(ins, (fw, bw), None, "V1_2", check),
            Signature(ins, (fw,), None, "V1_2", check),
            Signature(ins, (fw, bw, *states), None, "V1_3", check),
            Signature(ins, (fw, *states), None, "V1_3", check),
        ]
    return cell, uni, bidi


# --------------------------------------------------------------------------------------------------------------
# SVDF


def svdf_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """state out like state in; output [batch, num_filters / rank]."""
    inputs = Inputs(ctx)
    state = inputs.shape(4)
    rank = inputs.scalar(5)
    filters = dim(inputs.shape(1), 0)
    units = filters // rank if rank and filters else 0
    return [tuple(state) if state else (dim(inputs.shape(0), 0), 0), (dim(inputs.shape(0), 0), units)]


def svdf_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """SVDF: the feature filters push one new column into each filter's memory, the time filters weigh the
    memory, ranks are summed per unit, then bias and activation; the memory shifts left by one.

    The state holds, per batch, [num_filters, memory_size] with the newest entry last (the HAL text's
    (memory_size - 1) * num_units * rank state size is not what the conformance vectors use).
    """
    x, w_feature, w_time = _real(ctx, 0), _real(ctx, 1), _real(ctx, 2)
    bias, state = _real(ctx, 3), _real(ctx, 4)
    rank, act = int(ctx.scalar(5)), int(ctx.scalar(6))
    batch = x.shape[0]
    filters, memory = w_time.shape
    units = filters // rank
    mem = state.reshape(batch, filters, memory).copy()
    mem[:, :, -1] = x @ w_feature.T
    per_filter = np.einsum("bfm,fm->bf", mem, w_time)
    out = per_filter.reshape(batch, units, rank).sum(axis=2)
    if bias is not None:
        out = out + bias
    out = apply_activation(out, act)
    new_state = np.concatenate([mem[:, :, 1:], np.zeros((batch, filters, 1))], axis=2).reshape(batch, -1)
    return [from_real(new_state, ctx.output_operands[0]), from_real(out, ctx.output_operands[1])]


def _svdf_signatures() -> list[Signature]:
    return [
        Signature(
            (
                tensor("input", t, 2),
                tensor("weights_feature", t, 2),
                tensor("weights_time", t, 2),
                tensor("bias", t, 1, True),
                tensor("state_in", t, 2),
                *scalars("rank", "activation"),
            ),
            (tensor("state_out", t, 2), tensor("output", t, 2)),
            None,
            version,
            checks(dims_agree((1, 1, 0, 1), (2, 0, 1, 0), (4, 0, 0, 0)), fused_activation(6)),
        )
        for t, version in ((F32, "V1_0"), (F16, "V1_2"))
    ]


# --------------------------------------------------------------------------------------------------------------
# QUANTIZED_16BIT_LSTM

# The HAL's reference computes this operation in int16 fixed point (the conformance vectors embody it): gate
# pre-activations with 3 integer bits (steps of 2^-12), gate values with none, the cell state with 4 (2^-11). The
# kernel follows that arithmetic exactly, its logistic and tanh included, which are a few steps of 2^-15 off the
# real functions: a cell state near its range's ends scales such a difference up by as much as 16, past any
# tolerance a real-valued computation could be judged with.
_GATE_BITS, _CELL_BITS = 3, 4


def quantized_16bit_lstm_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """QUANTIZED_16BIT_LSTM: an LSTM cell without peephole, projection or CIFG, in the HAL reference's int16
    fixed-point arithmetic.

    Each gate multiplies the concatenation [input, previous output] by one row of a concatenated weight matrix.
    The conformance vectors (so the HAL's reference and every certified driver) lay that row out as
    [recurrent weights, input weights] rather than [input weights, recurrent weights]; the oracle follows the
    vectors. The two layouts agree in shape because both rows have input_size + output_size columns.
    """
    zero = ctx.input_operands[1].zero_point
    activations = np.concatenate([ctx.inputs[0], ctx.inputs[14]], axis=1).astype(np.int64) - 128
    cell = ctx.inputs[13].astype(np.int64)
    # The reference scales accumulators to steps of 2^-12 by 4096 * the bias scale (input scale * weights scale).
    multiplier = 4096 * float(np.float32(ctx.input_operands[9].scale))

    def gate(k: int) -> np.ndarray:
        weights = np.concatenate([ctx.inputs[5 + k], ctx.inputs[1 + k]], axis=1).astype(np.int64) - zero
        acc = activations @ weights.T + ctx.inputs[9 + k].astype(np.int64)
        return fixed.saturate(fixed.requantize(acc, multiplier))

    i = fixed.logistic(gate(0), _GATE_BITS)
    f = fixed.logistic(gate(1), _GATE_BITS)
    g = fixed.tanh(gate(2), _GATE_BITS)
    o = fixed.logistic(gate(3), _GATE_BITS)
    c_new = fixed.saturate(fixed.rescale(fixed.product(i, g), 0, _CELL_BITS) + fixed.product(f, cell))
    h_new = fixed.product(o, fixed.tanh(fixed.rescale(c_new, _CELL_BITS, _GATE_BITS), _GATE_BITS))
    output = np.clip(fixed.rounding_shift(h_new, 8), -128, 127) + 128
    return [c_new.astype(np.int16), output.astype(np.uint8)]


def quantized_16bit_lstm_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """cell state out and output: [batch, output_size]."""
    inputs = Inputs(ctx)
    shape = (dim(inputs.shape(0), 0), dim(inputs.shape(14), 1) or dim(inputs.shape(1), 0))
    return [shape, shape]


def _q16_check(ctx: ShapeContext) -> list[str]:
    ops = ctx.operands
    problems = []
    for i in (0, 14):
        if ops[i] is not None and (abs(ops[i].scale - 1 / 128) > 1e-9 or ops[i].zero_point != 128):
            problems.append(f"input {i} must have scale 1/128 and zero point 128")
    if ops[13] is not None and (abs(ops[13].scale - 2.0**-11) > 1e-12 or ops[13].zero_point != 0):
        problems.append("input 13 (cell state) must have scale 2^-11 and zero point 0")
    # The outputs are fixed as the inputs they continue: the cell state in Q4.11, the output in [-1, 127/128].
    problems += fixed_output_quant(2.0**-11, 0, out=0)(ctx) + fixed_output_quant(1 / 128, 128, out=1)(ctx)
    weights = [ops[i] for i in range(1, 9) if ops[i] is not None]
    if any(w.scale != weights[0].scale or w.zero_point != weights[0].zero_point for w in weights):
        problems.append("all weights must share one scale and zero point")
    for i in range(9, 13):
        b = ops[i]
        if (
            b is not None
            and ops[0] is not None
            and weights
            and (b.zero_point != 0 or not close_scale(b.scale, ops[0].scale * weights[0].scale))
        ):
            problems.append(f"bias {i} must have scale input scale * weights scale and zero point 0")
    return problems


_Q16_SIG = Signature(
    (
        tensor("input", Q8, 2),
        *[tensor(f"input_to_{g}_weights", Q8, 2) for g in ("input", "forget", "cell", "output")],
        *[tensor(f"recurrent_to_{g}_weights", Q8, 2) for g in ("input", "forget", "cell", "output")],
        *[tensor(f"{g}_gate_bias", I32, 1) for g in ("input", "forget", "cell", "output")],
        tensor("cell_state_in", Q16S, 2),
        tensor("output_state_in", Q8, 2),
    ),
    (tensor("cell_state_out", Q16S, 2), tensor("output", Q8, 2)),
    None,
    "V1_2",
    _q16_check,
)


# --------------------------------------------------------------------------------------------------------------
# QUANTIZED_LSTM
#
# The HAL defines it as the quantized version of LSTM and gives the operand types, shapes and quantizations, not
# the fixed-point steps: the kernel computes LSTM's cell (tanh cell activation, the activation of the HAL's own
# QUANTIZED_LSTM tests) on the real values of the operands. Of the quantizations the HAL names, it applies those
# that hold a value the result depends on: the biases' (input scale * weights scale, whatever scale their operands
# carry), the hidden state's (inputs 30 and 31, the projection's input) when there is a projection, and the
# outputs'. The intermediate scales (inputs 26-29) only say how an implementation stores the matmul results it
# normalizes; stored without saturation, they do not change the result. Two readings stay open, and generated
# models give both biases concerned zeros: with layer normalization the HAL's tests read the gate biases at the
# layer-norm weights' scale / 1024, and the projection bias's "input" is taken here to be the projection's input
# (the hidden state).


def _hidden_quantization(ctx: KernelContext) -> Operand:
    """The hidden state's operand: QUANT8_ASYMM_SIGNED at scale input 31 and zero point input 30."""
    return Operand(OperandType.TENSOR_QUANT8_ASYMM_SIGNED, [], 0, float(ctx.scalar(31)), int(ctx.scalar(30)))


def _bias(ctx: KernelContext, i: int, scale: float) -> np.ndarray | None:
    return ctx.inputs[i].astype(np.float64) * scale if ctx.has(i) else None


def quantized_lstm_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """QUANTIZED_LSTM: one LSTM step on the operands' real values; outputs output state, cell state, output."""
    # QUANTIZED_LSTM has no activation input (tanh) and its two clips at 24 and 25.
    cell = read_cell(ctx, 1, None, 20 if ctx.has(21) else None)
    cell.cell_clip = float(ctx.scalar(24, 0.0))
    cell.proj_clip = float(ctx.scalar(25, 0.0))
    input_scale = hal_scale(ctx.input_operands[0].scale)
    for k, g in enumerate(GATES):
        if ctx.has(1 + k):
            cell.bias[g] = _bias(ctx, 12 + k, input_scale * hal_scale(ctx.input_operands[1 + k].scale))
    hidden = _hidden_quantization(ctx)
    cell.hidden = lambda h: to_real(from_real(h, hidden), hidden)
    if ctx.has(16):
        cell.projection_bias = _bias(ctx, 17, hal_scale(hidden.scale) * hal_scale(ctx.input_operands[16].scale))
    h, c = cell.step(_real(ctx, 0), _real(ctx, 18), _real(ctx, 19))
    outputs = ctx.output_operands
    return [from_real(h, outputs[0]), from_real(c, outputs[1]), from_real(h, outputs[2])]


def _quantized_lstm_signature() -> Signature:
    ins = [tensor("input", Q8S, 2)]
    for name, rank, optional in _LSTM_TENSORS:
        if name.endswith("bias"):
            t = I32
        elif name.startswith("cell_to"):
            t = Q16S
        else:
            t = Q8SYMM
        ins.append(tensor(name, t, rank, optional))
    ins += [tensor("output_state_in", Q8S, 2), tensor("cell_state_in", Q16S, 2)]
    ins += [tensor(n, Q16S, 1, True) for n in _LAYER_NORM]
    ins += scalars("cell_clip", "proj_clip", t=FLOAT, optional=True)
    ins += scalars(
        "input_intermediate_scale",
        "forget_intermediate_scale",
        "cell_intermediate_scale",
        "output_intermediate_scale",
        t=FLOAT,
    )
    ins += scalars("hidden_state_zero_point") + scalars("hidden_state_scale", t=FLOAT)
    outs = (tensor("output_state_out", Q8S, 2), tensor("cell_state_out", Q16S, 2), tensor("output", Q8S, 2))
    return Signature(tuple(ins), outs, None, "V1_3")


def quantized_lstm_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """output state and output [batch, output_size], cell state [batch, units]."""
    inputs = Inputs(ctx)
    batch = dim(inputs.shape(0), 0)
    out_size = dim(inputs.shape(18), 1)
    units = dim(inputs.shape(19), 1) or dim(inputs.shape(2), 0)
    return [(batch, out_size), (batch, units), (batch, out_size)]


# --------------------------------------------------------------------------------------------------------------
# Registration

_CELL_PARAMS = {"activation": RECURRENT_ACTIVATIONS, "cell_clip": (0.0, 3.0), "proj_clip": (0.0, 3.0)}
_LSTM_HINTS = {
    "input_range": (-1.0, 1.0),
    "params": {
        "activation": RECURRENT_ACTIVATIONS,
        "cell_clip": (0.0, 3.0),
        "proj_clip": (0.0, 3.0),
        "time_major": [False, True],
        "merge_outputs": [False, True],
    },
    "note": "CIFG, peephole, projection and layer-norm groups are each all present or all absent",
}
_RNN_HINTS = {"input_range": (-1.0, 1.0), "params": {"activation": "fused_activation", "time_major": [0, 1]}}

_UNI_LSTM, _BIDI_LSTM = _sequence_lstm_signatures()
_RNN, _UNI_RNN, _BIDI_RNN = _rnn_signatures()

define_single_form(
    OperationType.LSTM,
    "recurrent",
    _lstm_signatures(),
    lstm_shape,
    lstm_kernel,
    {**_LSTM_HINTS, "params": _CELL_PARAMS, "unspecified_outputs": [0]},
)
define_single_form(
    OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM,
    "recurrent",
    _UNI_LSTM,
    unidirectional_lstm_shape,
    unidirectional_lstm_kernel,
    {**_LSTM_HINTS, "params": {**_CELL_PARAMS, "time_major": [False, True]}},
)
define_single_form(
    OperationType.BIDIRECTIONAL_SEQUENCE_LSTM,
    "recurrent",
    _BIDI_LSTM,
    bidirectional_lstm_shape,
    bidirectional_lstm_kernel,
    _LSTM_HINTS,
)
define_single_form(
    OperationType.RNN,
    "recurrent",
    _RNN,
    rnn_shape,
    rnn_kernel,
    {**_RNN_HINTS, "params": {"activation": "fused_activation"}},
)
define_single_form(
    OperationType.UNIDIRECTIONAL_SEQUENCE_RNN,
    "recurrent",
    _UNI_RNN,
    unidirectional_rnn_shape,
    unidirectional_rnn_kernel,
    {**_RNN_HINTS, "params": {"activation": "fused_activation", "time_major": [0, 1]}},
)
define_single_form(
    OperationType.BIDIRECTIONAL_SEQUENCE_RNN,
    "recurrent",
    _BIDI_RNN,
    bidirectional_rnn_shape,
    bidirectional_rnn_kernel,
    {
        **_RNN_HINTS,
        "params": {"activation": "fused_activation", "time_major": [False, True], "merge_outputs": [False, True]},
    },
)
define_single_form(
    OperationType.SVDF,
    "recurrent",
    _svdf_signatures(),
    svdf_shape,
    svdf_kernel,
    {
        "input_range": (-1.0, 1.0),
        "params": {"rank": (1, 2), "activation": "fused_activation"},
        "note": "weights_feature [units * rank, input]; weights_time [units * rank, memory]; "
        "state [batch, memory * units * rank]",
    },
)
define_single_form(
    OperationType.QUANTIZED_16BIT_LSTM,
    "recurrent",
    [_Q16_SIG],
    quantized_16bit_lstm_shape,
    quantized_16bit_lstm_kernel,
    {"note": "input/output scale 1/128 zp 128; cell scale 2^-11 zp 0; shared weight quantization"},
)
define_single_form(
    OperationType.QUANTIZED_LSTM,
    "recurrent",
    [_quantized_lstm_signature()],
    quantized_lstm_shape,
    quantized_lstm_kernel,
    {
        # The HAL leaves the fixed-point steps to the implementation: a driver's integer kernel and this real-valued
        # one differ by more than the one-unit quantized criterion (the normalization of nearly equal gate values
        # amplifies the intermediate rounding), so only the outputs' shapes are judged.
        "unspecified_outputs": [0, 1, 2],
        "note": "CIFG, peephole, projection and layer-norm groups are each all present or all absent",
    },
)
