"""Recipes of the recurrent operations: LSTM and its sequence forms, RNN and its sequence forms, SVDF and
QUANTIZED_16BIT_LSTM. Sizes stay tiny (a few units, steps and features), now and then long (OpDraw.long: up to
40 time steps, 32 units); the optional LSTM groups (CIFG,
peephole, projection, layer normalization) are each present or absent as a whole, as the HAL requires."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.gen.model import _values as V
from harness.gen.model._operation import OpDraw
from harness.gen.model.recipes._registry import O, T, recipe
from harness.ops.parameters import MERGED_OUTPUTS

_W = (-0.5, 0.5)  # weights
_S = (-1.0, 1.0)  # states and inputs
GATES = ("input", "forget", "cell", "output")
_BIASES = ("input_gate_bias", "forget_gate_bias", "cell_bias", "output_gate_bias")
_LAYER_NORM = tuple(f"{g}_layer_norm_weights" for g in GATES)
# Long draws: time steps and units (OpDraw.long), past the sizes where loops over steps and units stay short.
_LONG_STEPS = (8, 40)
_LONG_UNITS = (8, 32)


def _names(d: OpDraw) -> dict[str, int]:
    return {a.name: i for i, a in enumerate(d.args)}


@dataclass
class Cell:
    """The shape of one LSTM cell."""

    n_cell: int
    n_out: int
    cifg: bool
    peephole: bool
    projection: bool
    projection_bias: bool
    layer_norm: bool


def _draw_cell(d: OpDraw, layer_norm_possible: bool) -> Cell:
    n_cell = d.long(1, 3, *_LONG_UNITS)
    projection = d.src.boolean()
    n_out = d.src.integer(1, 3) if projection else n_cell
    return Cell(
        n_cell=n_cell,
        n_out=n_out,
        cifg=d.src.boolean(),
        peephole=d.src.boolean(),
        projection=projection,
        projection_bias=projection and d.src.boolean(),
        layer_norm=layer_norm_possible and d.src.boolean(),
    )


def _tensor(d: OpDraw, names: dict[str, int], name: str, shape: tuple[int, ...] | None, real=_W) -> None:
    i = names[name]
    if shape is None:
        d.omit(i)
    else:
        d.weight(i, shape, real=real)


def _lstm_cell(d: OpDraw, names: dict[str, int], prefix: str, in_size: int, cell: Cell) -> None:
    """The 17 weight tensors (and layer-norm weights) of one cell."""
    nc, no = cell.n_cell, cell.n_out
    for g in GATES:
        skip = cell.cifg and g == "input"
        _tensor(d, names, f"{prefix}input_to_{g}_weights", None if skip else (nc, in_size))
        _tensor(d, names, f"{prefix}recurrent_to_{g}_weights", None if skip else (nc, no))
    for g in ("input", "forget", "output"):
        present = cell.peephole and not (cell.cifg and g == "input")
        _tensor(d, names, f"{prefix}cell_to_{g}_weights", (nc,) if present else None)
    for g, bias in zip(GATES, _BIASES):
        _tensor(d, names, prefix + bias, None if cell.cifg and g == "input" else (nc,))
    _tensor(d, names, f"{prefix}projection_weights", (no, nc) if cell.projection else None)
    _tensor(d, names, f"{prefix}projection_bias", (no,) if cell.projection_bias else None)
    for g, ln in zip(GATES, _LAYER_NORM):
        if prefix + ln in names:
            present = cell.layer_norm and not (cell.cifg and g == "input")
            _tensor(d, names, prefix + ln, (nc,) if present else None, real=(0.5, 1.5))


def _cell_params(d: OpDraw, names: dict[str, int]) -> None:
    d.param(names["activation"])
    d.param(names["cell_clip"])
    d.param(names["proj_clip"])


@recipe(O.LSTM)
def _lstm(d: OpDraw) -> None:
    names = _names(d)
    batch, in_size = d.src.integer(1, 2), d.src.integer(1, 3)
    cell = _draw_cell(d, "forget_layer_norm_weights" in names)
    d.data(0, shape=(batch, in_size), real=_S)
    _lstm_cell(d, names, "", in_size, cell)
    d.data(names["output_state_in"], shape=(batch, cell.n_out), real=_S)
    d.data(names["cell_state_in"], shape=(batch, cell.n_cell), real=_S)
    _cell_params(d, names)


def _sequence(d: OpDraw, time_major: bool, in_size: int) -> tuple[int, int]:
    steps, batch = d.long(1, 3, *_LONG_STEPS), d.src.integer(1, 2)
    d.data(0, shape=(steps, batch, in_size) if time_major else (batch, steps, in_size), real=_S)
    return steps, batch


@recipe(O.UNIDIRECTIONAL_SEQUENCE_LSTM)
def _unidirectional_lstm(d: OpDraw) -> None:
    names = _names(d)
    time_major = d.src.boolean()
    in_size = d.src.integer(1, 3)
    cell = _draw_cell(d, True)
    _, batch = _sequence(d, time_major, in_size)
    _lstm_cell(d, names, "", in_size, cell)
    d.data(names["output_state_in"], shape=(batch, cell.n_out), real=_S)
    d.data(names["cell_state_in"], shape=(batch, cell.n_cell), real=_S)
    _cell_params(d, names)
    d.param(names["time_major"], time_major)


def _merge(d: OpDraw) -> bool:
    """Bidirectional forms: merged outputs are the signatures without a separate backward output."""
    return not any(a.name == "bw_output" for a in d.sig.outputs)


def _aux(d: OpDraw, names: dict[str, int], steps: int, batch: int, in_size: int, time_major: bool) -> int | None:
    """The auxiliary input: none (None), cross-linked (its size, weights follow) or parallel (0)."""
    mode = d.src.integer(0, 3)
    if mode < 2:
        d.omit(names["aux_input"])
        return None
    aux_size = in_size if mode == 2 else d.src.integer(1, 3)
    shape = (steps, batch, aux_size) if time_major else (batch, steps, aux_size)
    d.data(names["aux_input"], shape=shape, real=_S)
    return 0 if mode == 2 else aux_size


@recipe(O.BIDIRECTIONAL_SEQUENCE_LSTM)
def _bidirectional_lstm(d: OpDraw) -> None:
    names = _names(d)
    time_major = d.src.boolean()
    in_size = d.src.integer(1, 3)
    layer_norm = d.src.boolean()
    steps, batch = _sequence(d, time_major, in_size)
    aux = _aux(d, names, steps, batch, in_size, time_major)
    for prefix in ("fw_", "bw_"):
        cell = _draw_cell(d, True)
        cell.layer_norm = layer_norm
        _lstm_cell(d, names, prefix, in_size, cell)
        d.data(names[f"{prefix}output_state_in"], shape=(batch, cell.n_out), real=_S)
        d.data(names[f"{prefix}cell_state_in"], shape=(batch, cell.n_cell), real=_S)
        for g in GATES:
            name = f"{prefix}aux_input_to_{g}_weights"
            present = bool(aux) and not (cell.cifg and g == "input")
            _tensor(d, names, name, (cell.n_cell, aux) if present else None)
    _cell_params(d, names)
    if _merge(d) and len(d.sig.outputs) == 1 and d.gen.break_parameter:
        # Without a backward output merge_outputs must be true: now and then it is a model input that may be given
        # false at run time. The form with final states breaks the same way; it is left out while the status a
        # driver owes it (the states would shift onto the missing backward output) is not settled.
        d.const(names["merge_outputs"], True, allow_input=True, domain=MERGED_OUTPUTS)
    else:
        d.param(names["merge_outputs"], _merge(d))
    d.param(names["time_major"], time_major)


@recipe(O.RNN)
def _rnn(d: OpDraw) -> None:
    batch, in_size, units = d.src.integer(1, 2), d.src.integer(1, 3), d.long(1, 3, *_LONG_UNITS)
    d.data(0, shape=(batch, in_size), real=_S)
    d.weight(1, (units, in_size), real=_W)
    d.weight(2, (units, units), real=_W)
    d.weight(3, (units,), real=_W)
    d.data(4, shape=(batch, units), real=_S)
    d.param(5)


@recipe(O.UNIDIRECTIONAL_SEQUENCE_RNN)
def _unidirectional_rnn(d: OpDraw) -> None:
    time_major = d.src.boolean()
    in_size, units = d.src.integer(1, 3), d.long(1, 3, *_LONG_UNITS)
    _, batch = _sequence(d, time_major, in_size)
    d.weight(1, (units, in_size), real=_W)
    d.weight(2, (units, units), real=_W)
    d.weight(3, (units,), real=_W)
    d.data(4, shape=(batch, units), real=_S)
    d.param(5)
    d.param(6, int(time_major))


@recipe(O.BIDIRECTIONAL_SEQUENCE_RNN)
def _bidirectional_rnn(d: OpDraw) -> None:
    names = _names(d)
    time_major = d.src.boolean()
    in_size = d.src.integer(1, 3)
    steps, batch = _sequence(d, time_major, in_size)
    aux = _aux(d, names, steps, batch, in_size, time_major)
    for prefix in ("fw_", "bw_"):
        units = d.src.integer(1, 3)
        d.weight(names[f"{prefix}weights"], (units, in_size), real=_W)
        d.weight(names[f"{prefix}recurrent_weights"], (units, units), real=_W)
        d.weight(names[f"{prefix}bias"], (units,), real=_W)
        d.data(names[f"{prefix}hidden_state_in"], shape=(batch, units), real=_S)
        _tensor(d, names, f"{prefix}aux_weights", (units, aux) if aux else None)
    d.param(names["activation"])
    d.param(names["time_major"], time_major)
    d.param(names["merge_outputs"], _merge(d))


@recipe(O.SVDF)
def _svdf(d: OpDraw) -> None:
    batch, in_size = d.src.integer(1, 2), d.src.integer(1, 3)
    units, rank, memory = d.src.integer(1, 2), d.src.integer(1, 2), d.src.integer(1, 3)
    filters = units * rank
    d.data(0, shape=(batch, in_size), real=_S)
    d.weight(1, (filters, in_size), real=_W)
    d.weight(2, (filters, memory), real=_W)
    if not d.maybe_omit(3):
        d.weight(3, (units,), real=_W)
    d.data(4, shape=(batch, memory * filters), real=_S)
    d.param(5, rank)
    d.param(6)


@recipe(O.QUANTIZED_16BIT_LSTM)
def _quantized_16bit_lstm(d: OpDraw) -> None:
    batch, in_size, out = d.src.integer(1, 2), d.src.integer(1, 3), d.src.integer(1, 3)
    io_quant = (1.0 / 128, 128)
    d.data(0, shape=(batch, in_size), quant=io_quant, real=_S)
    w_quant = V.quant_params(d.src, T.TENSOR_QUANT8_ASYMM, *_W)
    for k in range(4):
        d.weight(1 + k, (out, in_size), quant=w_quant, real=_W)
        d.weight(5 + k, (out, out), quant=w_quant, real=_W)
    bias_scale = V.f32(io_quant[0] * w_quant[0])
    bound = int(min(round(0.5 / bias_scale), 1 << 20))
    for k in range(4):
        d.weight(9 + k, (out,), quant=(bias_scale, 0), ints=(-bound, bound))
    # Now and then a cell state over the format's whole range [-16, 16): a large one scales the forget gate's last
    # steps of 2^-15 up by as much as 16, where gates computed otherwise than the HAL's reference show.
    cell = 16.0 if d.src.boolean() else 2.0
    d.data(13, shape=(batch, out), quant=(2.0**-11, 0), real=(-cell, cell))
    d.data(14, shape=(batch, out), quant=io_quant, real=_S)


# QUANTIZED_LSTM. The HAL gives the gate biases the scale input scale * weights scale, yet its own tests read them,
# with layer normalization, at another scale (the layer-norm weights' / 1024); the projection bias's "input" may be
# input 0 or the hidden state. Where the reading is open, the biases are zeros, which every reading agrees on.
_Q_INTERMEDIATE = tuple(f"{g}_intermediate_scale" for g in GATES)
_Q_GATE_SCALE = 2.0**-12  # the usual gate format without layer normalization (Q3.12)
_Q_CELL_EXPONENTS = (-15, -11)  # cell state scales 2^e: power-of-two scales, which fixed-point kernels need
_Q_HIDDEN = (-1.0, 1.0)  # the hidden state o * tanh(c)


def _q_bias(d: OpDraw, i: int, shape: tuple[int, ...], scale: float, zero: bool) -> None:
    """A TENSOR_INT32 bias at `scale` (zero point 0): zeros, or values up to a real magnitude of 0.5."""
    scale = V.f32(scale)
    bound = 0 if zero or not scale else int(min(round(0.5 / scale), 1 << 20))
    d.weight(i, shape, quant=(scale, 0), ints=(-bound, bound))


def _q_optional_scalar(d: OpDraw, i: int, real: tuple[float, float]) -> None:
    """An optional clip: omitted, 0 (no clipping) or a threshold drawn in `real`."""
    mode = d.src.integer(0, 2)
    if mode == 0:
        d.omit(i)
    else:
        d.param(i, 0.0 if mode == 1 else V.f32(d.src.floats(*real, width=32)))


@recipe(O.QUANTIZED_LSTM)
def _quantized_lstm(d: OpDraw) -> None:
    names = _names(d)
    batch, in_size = d.src.integer(1, 2), d.src.integer(1, 3)
    cell = _draw_cell(d, True)
    nc, no = cell.n_cell, cell.n_out
    x = d.data(0, shape=(batch, in_size), real=_S)
    w_scale: dict[str, float] = {}
    for g in GATES:
        skip = cell.cifg and g == "input"
        _tensor(d, names, f"input_to_{g}_weights", None if skip else (nc, in_size))
        _tensor(d, names, f"recurrent_to_{g}_weights", None if skip else (nc, no))
        if not skip:
            w_scale[g] = float(d.get(names[f"input_to_{g}_weights"]).op.scale)
    for g in ("input", "forget", "output"):
        present = cell.peephole and not (cell.cifg and g == "input")
        _tensor(d, names, f"cell_to_{g}_weights", (nc,) if present else None)
    for g, bias in zip(GATES, _BIASES):
        if g in w_scale:
            _q_bias(d, names[bias], (nc,), float(x.op.scale) * w_scale[g], zero=cell.layer_norm)
        else:
            d.omit(names[bias])
    for g, ln in zip(GATES, _LAYER_NORM):
        present = cell.layer_norm and not (cell.cifg and g == "input")
        _tensor(d, names, ln, (nc,) if present else None, real=(0.5, 1.5))
    h = d.data(names["output_state_in"], shape=(batch, no), real=_S)
    h_quant = (float(h.op.scale), int(h.op.zero_point))
    if cell.projection:
        _tensor(d, names, "projection_weights", (no, nc))
        hidden = V.quant_params(d.src, T.TENSOR_QUANT8_ASYMM_SIGNED, *_Q_HIDDEN)
        projection_scale = hidden[0] * float(d.get(names["projection_weights"]).op.scale)
        _q_bias(d, names["projection_bias"], (no,), projection_scale, zero=True)
    else:
        d.omit(names["projection_weights"])
        d.omit(names["projection_bias"])
        hidden = h_quant  # the hidden state is the output: one quantization, whichever of the two is read
    cell_quant = (2.0 ** d.src.integer(*_Q_CELL_EXPONENTS), 0)
    d.data(names["cell_state_in"], shape=(batch, nc), real=_S, quant=cell_quant, reuse=False)
    _q_optional_scalar(d, names["cell_clip"], (0.25, 1.0))
    _q_optional_scalar(d, names["proj_clip"], (0.25, 1.0))
    _q_intermediates(d, names, cell, in_size)
    d.param(names["hidden_state_zero_point"], hidden[1])
    d.param(names["hidden_state_scale"], V.f32(hidden[0]))
    d.out_quant.update({0: h_quant, 1: cell_quant, 2: h_quant})


def _q_intermediates(d: OpDraw, names: dict[str, int], cell: Cell, in_size: int) -> None:
    """The gates' intermediate scales: with layer normalization, wide enough that no matmul result saturates 16
    bits; without, where they go unread, mostly the usual 2^-12."""
    if cell.layer_norm:
        # |W_x x + W_h h + w_c c| <= 0.5 * (input size + output size + 1) with weights, states and input in [-1, 1].
        bound = 0.5 * (in_size + cell.n_out + 1)
        scale = 2.0 ** np.ceil(np.log2(2 * bound / 32767))
    else:
        scale = _Q_GATE_SCALE if d.src.integer(0, 3) else V.log_uniform(d.src, (-5.0, -2.0))
    for name in _Q_INTERMEDIATE:
        d.param(names[name], V.f32(scale))
