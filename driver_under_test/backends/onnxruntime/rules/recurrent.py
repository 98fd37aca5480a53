"""Recurrent operations: RNN and LSTM (one step, their sequence and bidirectional forms) on ONNX's RNN and LSTM
operators, SVDF as a composition.

ONNX's RNN and LSTM take stacked per-direction tensors: W [directions, gates * units, input], R [directions,
gates * units, units], B [directions, 2 * gates * units] (input biases, then recurrent biases: zeros here, as the
HAL has one bias per gate), peepholes P [directions, 3 * units], states [directions, batch, units]; outputs Y
[time, directions, batch, units] and the final states. The rules build these from the HAL's per-gate tensors with
Concat and Unsqueeze nodes (ONNX Runtime folds them when the tensors are constants), so weights given at run time
work as constants do. Sequences are time-major for ONNX: a batch-major HAL input is transposed in and out.

Activations. The HAL's fused activations (RNN) map onto ONNX's activation list and its `clip`, which bounds the
input of the activations: NONE is Affine(1, 0), RELU is Relu, RELU1 is Affine(1, 0) with clip 1, RELU6 is Relu
with clip 6. The HAL's LSTM cell activation (g and h; the gates always use sigmoid) is NONE (Affine(1, 0)), RELU,
TANH or SIGMOID; RELU6 has no ONNX recurrent activation.

LSTM gates. ONNX orders the gates i, o, f, c and the peepholes i, o, f; the HAL's tensors come in i, f, c, o.
The HAL's CIFG (no input gate tensors) sets i = 1 - f; ONNX LSTM's input_forget = 1, as ONNX Runtime computes it,
sets f = 1 - i instead. Since sigmoid(-a) = 1 - sigmoid(a), the HAL's CIFG cell is ONNX's coupled cell whose
input gate tensors are the forget gate's negated: then ONNX's i is 1 - (the HAL's f) and its f the HAL's f.

What ONNX LSTM cannot compute: projection (and its clip), layer normalization, the HAL's cell clip (ONNX's clip
bounds every gate's pre-activation, the HAL's bounds the cell state) and the RELU6 cell activation. Those forms
run the HAL's cell written out in ONNX operators (MatMul, Sigmoid, ReduceMean, Clip, ...) as the body of an ONNX
Scan over time (reverse for a backward direction), whose state is the output and cell states. The quantized
LSTMs are declared unsupported (rules/unsupported.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from driver_under_test.backends.onnxruntime._graph import Body, Op
from driver_under_test.backends.onnxruntime._registry import rule
from driver_under_test.backends.onnxruntime.rules._common import FLOAT, activate, activation, check_activation
from harness.hal import OperandType
from harness.hal import OperationType as O

# ---- shared pieces ----


def _dim(op: Op, i: int, axis: int) -> int:
    """Dimension `axis` of input i (0 when the input is absent or the dimension unknown)."""
    if not op.has(i):
        return 0
    dims = op.dims(i)
    return dims[axis] if len(dims) > axis else 0


def _known(*sizes: int) -> int:
    """The first known (non-zero) of several sources of one size, 0 when none is."""
    return next((size for size in sizes if size), 0)


def _unsqueeze(op: Op, tensor: str, axis: int = 0) -> str:
    return op.node("Unsqueeze", [tensor, op.ints([axis])])


def _squeeze(op: Op, tensor: str, axis: int, target: str | None = None) -> str:
    outputs: Sequence[str] | int = [target] if target else 1
    return op.node("Squeeze", [tensor, op.ints([axis])], outputs)


def _concat(op: Op, tensors: Sequence[str], axis: int) -> str:
    return tensors[0] if len(tensors) == 1 else op.node("Concat", list(tensors), axis=axis)


def _stacked(op: Op, per_direction: Sequence[str]) -> str:
    """Per-direction tensors stacked along a new leading axis (ONNX's directions axis)."""
    return _concat(op, [_unsqueeze(op, t) for t in per_direction], 0)


def _time_major(op: Op, tensor: str, time_major: bool) -> str:
    """A [batch, time, ...] sequence as [time, batch, ...] (as it is when already time-major)."""
    return tensor if time_major else op.node("Transpose", [tensor], perm=[1, 0, 2])


def _sequence_out(op: Op, y: str, direction: int | None, time_major: bool, target: str | None = None) -> str:
    """One direction of ONNX's Y [time, directions, batch, units] (`direction` None: a [time, batch, units]
    sequence already) as a HAL sequence output in its layout."""
    if direction is not None:
        y = op.node("Gather", [y, op.const(np.int64(direction))], axis=1)
    if time_major:
        return op.node("Identity", [y], [target]) if target else y
    return op.node("Transpose", [y], [target] if target else 1, perm=[1, 0, 2])


def _merged(op: Op, y: str, time_major: bool, target: str) -> None:
    """A bidirectional Y [time, 2, batch, units] as the HAL's merged output (forward then backward units)."""
    sequence = op.node("Transpose", [y], perm=[0, 2, 1, 3])
    joined = op.node("Reshape", [sequence, op.ints([0, 0, -1])])
    _sequence_out(op, joined, None, time_major, target)


def _zeros_like(op: Op, tensor: str) -> str:
    """Zeros of `tensor`'s shape (ONNX's recurrent biases, which the HAL does not have)."""
    return _zeros(op, op.node("Shape", [tensor]))


def _zeros(op: Op, shape: str, target: str | None = None) -> str:
    """float32 zeros of the int64 shape `shape` (Expand of a 0-d zero)."""
    return op.node("Expand", [op.const(np.float32(0)), shape], [target] if target else 1)


@dataclass(frozen=True)
class Direction:
    """One direction of a sequence in the HAL's terms: the tensors it reads (input positions)."""

    x: str  # the float32 time-major input this direction reads ([input, aux] when cross-linked)
    weights: int  # the first of its tensors (RNN: weights, recurrent weights, bias; LSTM: the 17 cell tensors)
    states: tuple[int, ...]  # its state inputs (RNN: hidden; LSTM: output state, cell state)
    aux_weights: int | None = None  # the first of its aux-input weights when the aux input is cross-linked


def _aux_links(op: Op, aux: int, probes: tuple[int, int], bases: tuple[int, int], x: str, time_major: bool):
    """(forward input, backward input, forward aux weights, backward aux weights) for the HAL's three linking
    modes of a bidirectional operation's aux input: absent; cross-linked (the forward aux weights, input
    `probes[0]`, given: a direction with aux weights reads [input, aux] against [weights, aux weights], one
    without reads the input alone); parallel (no forward aux weights: the backward direction reads the aux input
    instead of the input). `probes` are each direction's always-present aux weights, `bases` its first ones."""
    if not op.has(aux):
        return x, x, None, None
    aux_x = _time_major(op, op.x(aux), time_major)
    if not op.has(probes[0]):
        return x, aux_x, None, None
    both = op.node("Concat", [x, aux_x], axis=2)
    linked = [(both, base) if op.has(probe) else (x, None) for probe, base in zip(probes, bases)]
    return linked[0][0], linked[1][0], linked[0][1], linked[1][1]


def _with_aux(op: Op, weights: int, aux_weights: int | None, offset: int) -> str:
    """Input-to-gate weights [units, input] extended with the aux-input weights ([units, input + aux]) when the
    direction reads a cross-linked aux input."""
    if aux_weights is None:
        return op.x(weights)
    return op.node("Concat", [op.x(weights), op.x(aux_weights + offset)], axis=1)


# ---- RNN ----

# The HAL's fused activation code -> (ONNX activation, its alpha and beta, clip of its input or None).
_RNN_ACTIVATIONS: dict[int, tuple[str, tuple[float, float] | None, float | None]] = {
    0: ("Affine", (1.0, 0.0), None),
    1: ("Relu", None, None),
    2: ("Affine", (1.0, 0.0), 1.0),
    3: ("Relu", None, 6.0),
}


def _rnn_attrs(op: Op, at: int, directions: int) -> dict:
    name, coefficients, clip = _RNN_ACTIVATIONS[activation(op, at)]
    attrs: dict = {"activations": [name] * directions}
    if coefficients is not None:
        attrs["activation_alpha"] = [coefficients[0]] * directions
        attrs["activation_beta"] = [coefficients[1]] * directions
    if clip is not None:
        attrs["clip"] = clip
    return attrs


def _rnn_units(op: Op, weights: int, state: int) -> int:
    return _known(_dim(op, weights, 0), _dim(op, weights + 1, 0), _dim(op, weights + 1, 1),
                  _dim(op, weights + 2, 0), _dim(op, state, 1))  # fmt: skip


def _rnn(op: Op, directions: Sequence[Direction], onnx_direction: str, at: int) -> tuple[str, str]:
    """One ONNX RNN node over `directions` (one, or forward and backward stacked); its (Y, Y_h)."""
    w = [_with_aux(op, d.weights, d.aux_weights, 0) for d in directions]
    r = [op.x(d.weights + 1) for d in directions]
    biases = [op.x(d.weights + 2) for d in directions]
    b = [op.node("Concat", [bias, _zeros_like(op, bias)], axis=0) for bias in biases]
    h = [op.x(d.states[0]) for d in directions]
    units = _rnn_units(op, directions[0].weights, directions[0].states[0])
    inputs = [directions[0].x, _stacked(op, w), _stacked(op, r), _stacked(op, b), "", _stacked(op, h)]
    attrs = _rnn_attrs(op, at, len(directions))
    y, y_h = op.node("RNN", inputs, 2, hidden_size=units, direction=onnx_direction, **attrs)
    return y, y_h


def _check_rnn_units(op: Op, weights: int, state: int) -> str | None:
    if not _rnn_units(op, weights, state):
        return f"{op.name}: the unit count must be known (ONNX RNN's hidden_size attribute)"
    return None


def _check_rnn(op: Op) -> str | None:
    return check_activation(op, 5) or _check_rnn_units(op, 1, 4)


@rule(O.RNN, types=FLOAT, params={5: "activation"}, check=_check_rnn)
def rnn(op: Op) -> None:
    """HAL RNN: inputs 0 input [batch, input_size], 1 weights [units, input_size], 2 recurrent_weights [units,
    units], 3 bias [units], 4 hidden_state_in [batch, units], 5 activation (fused code); outputs 0 hidden_state_out,
    1 output (both activation(input W^T + state R^T + bias)). ONNX RNN over a one-step sequence (the input
    unsqueezed to [1, batch, input_size]); its final state Y_h [1, batch, units], squeezed, is both outputs."""
    x = _unsqueeze(op, op.x(0))
    _, y_h = _rnn(op, [Direction(x, 1, (4,))], "forward", 5)
    _squeeze(op, y_h, 0, op.y(1))
    op.node("Identity", [op.y(1)], [op.y(0)])


@rule(O.UNIDIRECTIONAL_SEQUENCE_RNN, types=FLOAT, params={5: "activation", 6: "time_major"}, check=_check_rnn)
def unidirectional_sequence_rnn(op: Op) -> None:
    """HAL UNIDIRECTIONAL_SEQUENCE_RNN: inputs 0 input [max_time, batch, input_size] (time-major) or [batch,
    max_time, input_size], 1 weights, 2 recurrent_weights, 3 bias, 4 hidden_state_in [batch, units], 5 activation,
    6 time_major (INT32); outputs 0 output (the state after each step, in the input's layout), 1 hidden_state_out
    (optional: the final state). ONNX RNN, direction forward, over the time-major input; Y's one direction is
    output 0, Y_h output 1."""
    time_major = bool(op.scalar(6))
    x = _time_major(op, op.x(0), time_major)
    y, y_h = _rnn(op, [Direction(x, 1, (4,))], "forward", 5)
    _sequence_out(op, y, 0, time_major, op.y(0))
    if len(op.operation.outputs) > 1:
        _squeeze(op, y_h, 0, op.y(1))


def _check_bidirectional_rnn(op: Op) -> str | None:
    return check_activation(op, 12) or _check_rnn_units(op, 1, 4) or _check_rnn_units(op, 5, 8)


@rule(
    O.BIDIRECTIONAL_SEQUENCE_RNN,
    types=FLOAT,
    params={12: "activation", 13: "time_major", 14: "merge_outputs"},
    check=_check_bidirectional_rnn,
)
def bidirectional_sequence_rnn(op: Op) -> None:
    """HAL BIDIRECTIONAL_SEQUENCE_RNN: inputs 0 input, 1 fw_weights, 2 fw_recurrent_weights, 3 fw_bias, 4
    fw_hidden_state_in, 5 bw_weights, 6 bw_recurrent_weights, 7 bw_bias, 8 bw_hidden_state_in, 9 aux_input
    (optional), 10 fw_aux_weights, 11 bw_aux_weights (optional: present, the aux input is cross-linked; absent,
    parallel), 12 activation, 13 time_major (BOOL), 14 merge_outputs (BOOL); outputs 0 fw_output (merged: forward
    and backward units concatenated), 1 bw_output (unless merged), then optionally fw_hidden_state_out,
    bw_hidden_state_out. One ONNX RNN with direction bidirectional when both directions read the same input and
    have as many units; else two, forward and reverse."""
    time_major, merge = bool(op.scalar(13)), bool(op.scalar(14))
    x = _time_major(op, op.x(0), time_major)
    fw_x, bw_x, fw_aux, bw_aux = _aux_links(op, 9, (10, 11), (10, 11), x, time_major)
    fw = Direction(fw_x, 1, (4,), fw_aux)
    bw = Direction(bw_x, 5, (8,), bw_aux)
    same = fw_x == bw_x and _rnn_units(op, 1, 4) == _rnn_units(op, 5, 8)
    if same:
        y, y_h = _rnn(op, [fw, bw], "bidirectional", 12)
        ys, finals = [(y, 0), (y, 1)], [(y_h, 0), (y_h, 1)]
    else:
        (y_fw, h_fw), (y_bw, h_bw) = _rnn(op, [fw], "forward", 12), _rnn(op, [bw], "reverse", 12)
        ys, finals = [(y_fw, 0), (y_bw, 0)], [(h_fw, 0), (h_bw, 0)]
    _bidirectional_outputs(op, ys, finals, same, merge, time_major)


def _bidirectional_outputs(
    op: Op,
    ys: list[tuple[str, int]],
    finals: list[tuple[str, int]],
    one_node: bool,
    merge: bool,
    time_major: bool,
) -> None:
    """The HAL outputs of a bidirectional operation from the ONNX nodes' Y (tensor, direction) of each direction
    and their final states (tensor, direction) in the HAL's order of the state outputs."""
    if merge and one_node:
        _merged(op, ys[0][0], time_major, op.y(0))
    elif merge:
        halves = [_sequence_out(op, y, d, True) for y, d in ys]
        joined = op.node("Concat", halves, axis=2)
        _sequence_out(op, joined, None, time_major, op.y(0))
    else:
        for k, (y, d) in enumerate(ys):
            _sequence_out(op, y, d, time_major, op.y(k))
    first = 1 if merge else 2
    for k, (state, d) in enumerate(finals):
        if len(op.operation.outputs) > first + k:
            op.node("Gather", [state, op.const(np.int64(d))], [op.y(first + k)], axis=0)


# ---- LSTM ----

# The HAL's cell activation code -> (ONNX activation, its alpha and beta, or None).
_CELL_ACTIVATIONS: dict[int, tuple[str, tuple[float, float] | None]] = {
    0: ("Affine", (1.0, 0.0)),
    1: ("Relu", None),
    4: ("Tanh", None),
    6: ("Sigmoid", None),
}
# Offsets within the HAL's 17 cell tensors.
_W_X = {"i": 0, "f": 1, "c": 2, "o": 3}
_W_H = {"i": 4, "f": 5, "c": 6, "o": 7}
_PEEPHOLE = {"i": 8, "f": 9, "o": 10}
_BIAS = {"i": 11, "f": 12, "c": 13, "o": 14}
_PROJECTION, _PROJECTION_BIAS = 15, 16
_ONNX_GATES = ("i", "o", "f", "c")
_ONNX_PEEPHOLES = ("i", "o", "f")


@dataclass(frozen=True)
class LstmForm:
    """Where one LSTM form keeps its scalars and optional groups: the scalars' first position (activation, cell
    clip, projection clip) and each cell's first tensor and first layer-norm weight."""

    scalars: int
    cells: tuple[int, ...]
    layer_norms: tuple[int, ...]


_FORMS = {
    O.LSTM: LstmForm(20, (1,), (23,)),
    O.UNIDIRECTIONAL_SEQUENCE_LSTM: LstmForm(20, (1,), (24,)),
    O.BIDIRECTIONAL_SEQUENCE_LSTM: LstmForm(48, (1, 18), (53, 57)),
}


def _cifg(op: Op, base: int) -> bool:
    return not op.has(base + _W_X["i"])


def _peephole(op: Op, base: int) -> bool:
    return op.has(base + _PEEPHOLE["f"])


def _lstm_units(op: Op, base: int) -> int:
    return _known(*(_dim(op, base + _W_X[g], 0) for g in "fco"), *(_dim(op, base + _BIAS[g], 0) for g in "fco"))


# The HAL's cell activation code -> the composition's activation (the Scan form).
_CELL_FUNCTIONS: dict[int, Callable[[Op, str], str]] = {
    0: lambda op, v: v,
    1: lambda op, v: op.node("Relu", [v]),
    3: lambda op, v: op.node("Clip", [v, op.const(np.float32(0)), op.const(np.float32(6))]),
    4: lambda op, v: op.node("Tanh", [v]),
    6: lambda op, v: op.node("Sigmoid", [v]),
}
LAYER_NORM_EPSILON = 1e-8  # the HAL's layer normalization divides by sqrt(variance + this)


def _onnx_lstm_maps(op: Op) -> bool:
    """True when ONNX's LSTM operator computes this form: its cell activation, no cell clip, projection or layer
    normalization, and a known unit count (its hidden_size attribute)."""
    form = _FORMS[op.type]
    if int(op.scalar(form.scalars)) not in _CELL_ACTIVATIONS or float(op.scalar(form.scalars + 1, 0.0)) > 0:
        return False
    for base, norms in zip(form.cells, form.layer_norms):
        if op.has(base + _PROJECTION) or any(op.has(norms + k) for k in range(4)) or not _lstm_units(op, base):
            return False
    return True


def _check_lstm(op: Op) -> str | None:
    """The cell activation: one of the HAL's (either ONNX LSTM or the composition computes every other form)."""
    code = int(op.scalar(_FORMS[op.type].scalars))
    if code not in _CELL_FUNCTIONS:
        return f"{op.name}: cell activation {code} is not one of the HAL's 0, 1, 3, 4, 6"
    return None


def _gate(op: Op, d: Direction, gate: str, table: dict[str, int], aux: bool = False) -> str:
    """A gate's tensor for ONNX: with CIFG, ONNX's input gate is the HAL's forget gate negated."""
    source = "f" if gate == "i" and _cifg(op, d.weights) else gate
    if aux:
        tensor = _with_aux(op, d.weights + table[source], d.aux_weights, _W_X[source])
    else:
        tensor = op.x(d.weights + table[source])
    return op.node("Neg", [tensor]) if source != gate else tensor


def _lstm(op: Op, directions: Sequence[Direction], onnx_direction: str) -> tuple[str, str, str]:
    """The LSTM over `directions` (one, or forward and backward when ONNX LSTM computes the form); its (Y [time,
    directions, batch, output], Y_h, Y_c [directions, batch, ...]) as ONNX LSTM gives them."""
    if not _onnx_lstm_maps(op):
        assert len(directions) == 1, "the Scan form runs one direction"
        return _lstm_scan(op, directions[0], onnx_direction == "reverse")
    form = _FORMS[op.type]
    base = directions[0].weights
    w = [_concat(op, [_gate(op, d, g, _W_X, aux=True) for g in _ONNX_GATES], 0) for d in directions]
    r = [_concat(op, [_gate(op, d, g, _W_H) for g in _ONNX_GATES], 0) for d in directions]
    b = []
    for d in directions:
        biases = _concat(op, [_gate(op, d, g, _BIAS) for g in _ONNX_GATES], 0)
        b.append(op.node("Concat", [biases, _zeros_like(op, biases)], axis=0))
    inputs = [directions[0].x, _stacked(op, w), _stacked(op, r), _stacked(op, b), ""]
    inputs += [_stacked(op, [op.x(d.states[0]) for d in directions])]
    inputs += [_stacked(op, [op.x(d.states[1]) for d in directions])]
    if _peephole(op, base):
        p = [_concat(op, [_gate(op, d, g, _PEEPHOLE) for g in _ONNX_PEEPHOLES], 0) for d in directions]
        inputs.append(_stacked(op, p))
    name, coefficients = _CELL_ACTIVATIONS[int(op.scalar(form.scalars))]
    attrs: dict = {"activations": ["Sigmoid", name, name] * len(directions)}
    if coefficients is not None:
        # Only the activations that take coefficients consume them, in order.
        attrs["activation_alpha"] = [coefficients[0]] * 2 * len(directions)
        attrs["activation_beta"] = [coefficients[1]] * 2 * len(directions)
    if _cifg(op, base):
        attrs["input_forget"] = 1
    y, y_h, y_c = op.node("LSTM", inputs, 3, hidden_size=_lstm_units(op, base), direction=onnx_direction, **attrs)
    return y, y_h, y_c


@rule(
    O.LSTM,
    types=FLOAT,
    params={20: "activation", 21: "cell_clip", 22: "proj_clip"},
    check=_check_lstm,
)
def lstm(op: Op) -> None:
    """HAL LSTM: inputs 0 input [batch, input_size], 1-4 input-to-{input, forget, cell, output} weights [units,
    input_size], 5-8 recurrent-to-{input, forget, cell, output} weights [units, output_size], 9-11 cell-to-{input,
    forget, output} (peephole) weights [units], 12-15 {input, forget, cell, output} gate biases [units], 16
    projection weights, 17 projection bias (input gate, peephole and projection tensors optional), 18
    output_state_in [batch, output_size], 19 cell_state_in [batch, units], 20 activation, 21 cell_clip, 22
    proj_clip, 23-26 layer-norm weights (optional); outputs 0 scratch_buffer (implementation-defined, [batch, units
    * 4], units * 3 with CIFG), 1 output_state_out, 2 cell_state_out, 3 output. ONNX LSTM (or the Scan form, see
    the module) over a one-step sequence; Y_h is outputs 1 and 3, Y_c output 2, the scratch buffer zeros."""
    x = _unsqueeze(op, op.x(0))
    _, y_h, y_c = _lstm(op, [Direction(x, 1, (18, 19))], "forward")
    _squeeze(op, y_h, 0, op.y(3))
    op.node("Identity", [op.y(3)], [op.y(1)])
    _squeeze(op, y_c, 0, op.y(2))
    gates = 3 if _cifg(op, 1) else 4
    batch = op.node("Shape", [op.x(0)], start=0, end=1)
    units = op.node("Shape", [op.x(1 + _W_X["f"])], start=0, end=1)
    shape = op.node("Concat", [batch, op.node("Mul", [units, op.ints([gates])])], axis=0)
    _zeros(op, shape, op.y(0))


@rule(
    O.UNIDIRECTIONAL_SEQUENCE_LSTM,
    types=FLOAT,
    params={20: "activation", 21: "cell_clip", 22: "proj_clip", 23: "time_major"},
    check=_check_lstm,
)
def unidirectional_sequence_lstm(op: Op) -> None:
    """HAL UNIDIRECTIONAL_SEQUENCE_LSTM: inputs 0 input [max_time, batch, input_size] (time-major) or [batch,
    max_time, input_size], 1-17 the LSTM cell's tensors (as LSTM), 18 output_state_in, 19 cell_state_in, 20
    activation, 21 cell_clip, 22 proj_clip, 23 time_major (BOOL), 24-27 layer-norm weights (optional); outputs 0
    output (each step's output state, in the input's layout), then optionally 1 output_state_out and 2
    cell_state_out (the final states). ONNX LSTM, direction forward (or the Scan form, see the module), over the
    time-major input."""
    time_major = bool(op.scalar(23))
    x = _time_major(op, op.x(0), time_major)
    y, y_h, y_c = _lstm(op, [Direction(x, 1, (18, 19))], "forward")
    _sequence_out(op, y, 0, time_major, op.y(0))
    for k, state in ((1, y_h), (2, y_c)):
        if len(op.operation.outputs) > k:
            _squeeze(op, state, 0, op.y(k))


@rule(
    O.BIDIRECTIONAL_SEQUENCE_LSTM,
    types=FLOAT,
    params={48: "activation", 49: "cell_clip", 50: "proj_clip", 51: "merge_outputs", 52: "time_major"},
    check=_check_lstm,
)
def bidirectional_sequence_lstm(op: Op) -> None:
    """HAL BIDIRECTIONAL_SEQUENCE_LSTM: inputs 0 input, 1-17 the forward cell's tensors, 18-34 the backward
    cell's (each in LSTM's order), 35 fw_output_state_in, 36 fw_cell_state_in, 37 bw_output_state_in, 38
    bw_cell_state_in, 39 aux_input (optional), 40-43 fw aux-input-to-{input, forget, cell, output} weights, 44-47
    the bw ones (optional: present, the aux input is cross-linked; absent, parallel), 48 activation, 49 cell_clip,
    50 proj_clip, 51 merge_outputs, 52 time_major (BOOLs), 53-56 fw and 57-60 bw layer-norm weights (optional);
    outputs 0 fw_output (merged: forward and backward concatenated), 1 bw_output (unless merged), then optionally
    the final fw output and cell states and bw output and cell states. One ONNX LSTM with direction
    bidirectional when ONNX LSTM computes the form and both directions read the same input and have the same
    units, CIFG and peephole forms; else two, forward and reverse (each ONNX LSTM or the Scan form)."""
    time_major, merge = bool(op.scalar(52)), bool(op.scalar(51))
    x = _time_major(op, op.x(0), time_major)
    fw_x, bw_x, fw_aux, bw_aux = _aux_links(op, 39, (41, 45), (40, 44), x, time_major)
    fw = Direction(fw_x, 1, (35, 36), fw_aux)
    bw = Direction(bw_x, 18, (37, 38), bw_aux)
    same = (
        fw_x == bw_x
        and _onnx_lstm_maps(op)
        and _lstm_units(op, 1) == _lstm_units(op, 18)
        and _cifg(op, 1) == _cifg(op, 18)
        and _peephole(op, 1) == _peephole(op, 18)
    )
    if same:
        y, y_h, y_c = _lstm(op, [fw, bw], "bidirectional")
        ys, finals = [(y, 0), (y, 1)], [(y_h, 0), (y_c, 0), (y_h, 1), (y_c, 1)]
    else:
        (y_fw, h_fw, c_fw), (y_bw, h_bw, c_bw) = _lstm(op, [fw], "forward"), _lstm(op, [bw], "reverse")
        ys, finals = [(y_fw, 0), (y_bw, 0)], [(h_fw, 0), (c_fw, 0), (h_bw, 0), (c_bw, 0)]
    _bidirectional_outputs(op, ys, finals, same, merge, time_major)


# ---- the LSTM cell as a Scan body (forms ONNX LSTM does not compute) ----


@dataclass(frozen=True)
class CellTensors:
    """One direction's cell in float32, made in the outer graph (the Scan body reads them from there): per gate
    the transposed input and recurrent weights, peephole, bias and layer-norm weights (None: absent)."""

    w_x: dict[str, str | None]
    w_h: dict[str, str | None]
    peephole: dict[str, str | None]
    bias: dict[str, str | None]
    layer_norm: dict[str, str | None]
    projection: str | None
    projection_bias: str | None


def _cell_tensors(op: Op, d: Direction) -> CellTensors:
    form = _FORMS[op.type]
    norms = form.layer_norms[form.cells.index(d.weights)]

    def real(i: int) -> str | None:
        return op.x(i) if op.has(i) else None

    def transposed(tensor: str | None) -> str | None:
        return None if tensor is None else op.node("Transpose", [tensor], perm=[1, 0])

    return CellTensors(
        w_x={
            g: transposed(_with_aux(op, d.weights + k, d.aux_weights, k) if op.has(d.weights + k) else None)
            for g, k in _W_X.items()
        },
        w_h={g: transposed(real(d.weights + k)) for g, k in _W_H.items()},
        peephole={g: real(d.weights + k) for g, k in _PEEPHOLE.items()},
        bias={g: real(d.weights + k) for g, k in _BIAS.items()},
        layer_norm={g: real(norms + k) for k, g in enumerate("ifco")},
        projection=transposed(real(d.weights + _PROJECTION)),
        projection_bias=real(d.weights + _PROJECTION_BIAS),
    )


def _cell_step(op: Op, cell: CellTensors, x: str, h: str, c: str) -> tuple[str, str]:
    """The HAL's LSTM cell, one step: (output state, cell state) from x_t, h_{t-1}, c_{t-1} (all float32)."""
    form = _FORMS[op.type]
    act = _CELL_FUNCTIONS[int(op.scalar(form.scalars))]
    cell_clip, proj_clip = float(op.scalar(form.scalars + 1, 0.0)), float(op.scalar(form.scalars + 2, 0.0))

    def add(a: str, b: str | None) -> str:
        return a if b is None else op.node("Add", [a, b])

    def pre(g: str, state: str | None = None) -> str:
        v = op.node("Add", [op.node("MatMul", [x, cell.w_x[g]]), op.node("MatMul", [h, cell.w_h[g]])])
        peephole = cell.peephole.get(g)
        if state is not None and peephole is not None:
            v = op.node("Add", [v, op.node("Mul", [state, peephole])])
        norm = cell.layer_norm[g]
        if norm is not None:
            centred = op.node("Sub", [v, op.node("ReduceMean", [v, op.ints([1])], keepdims=1)])
            variance = op.node("ReduceMean", [op.node("Mul", [centred, centred]), op.ints([1])], keepdims=1)
            spread = op.node("Sqrt", [op.node("Add", [variance, op.const(np.float32(LAYER_NORM_EPSILON))])])
            v = op.node("Mul", [op.node("Div", [centred, spread]), norm])
        return add(v, cell.bias[g])

    f = op.node("Sigmoid", [pre("f", c)])
    if cell.w_x["i"] is None:
        i = op.node("Sub", [op.const(np.float32(1)), f])
    else:
        i = op.node("Sigmoid", [pre("i", c)])
    c_new = op.node("Add", [op.node("Mul", [f, c]), op.node("Mul", [i, act(op, pre("c"))])])
    if cell_clip > 0:
        c_new = op.node("Clip", [c_new, op.const(np.float32(-cell_clip)), op.const(np.float32(cell_clip))])
    o = op.node("Sigmoid", [pre("o", c_new)])
    h_new = op.node("Mul", [o, act(op, c_new)])
    if cell.projection is not None:
        h_new = add(op.node("MatMul", [h_new, cell.projection]), cell.projection_bias)
        if proj_clip > 0:
            h_new = op.node("Clip", [h_new, op.const(np.float32(-proj_clip)), op.const(np.float32(proj_clip))])
    return h_new, c_new


def _lstm_scan(op: Op, d: Direction, reverse: bool) -> tuple[str, str, str]:
    """One direction of the LSTM as an ONNX Scan over time whose body is the HAL's cell; its outputs shaped as
    ONNX LSTM's (Y [time, 1, batch, output], Y_h and Y_c [1, batch, ...])."""
    cell = _cell_tensors(op, d)
    h0, c0 = op.x(d.states[0]), op.x(d.states[1])
    outer = op.b
    body = outer.child(op.graph, op.subgraph)
    float32 = replace(op.out(0), type=OperandType.TENSOR_FLOAT32)  # the body's values: float32, shape open
    h, c, x = body.fresh("h"), body.fresh("c"), body.fresh("x")
    op.builder = body
    try:
        h_new, c_new = _cell_step(op, cell, x, h, c)
        results = [op.node("Identity", [t]) for t in (h_new, c_new, h_new)]
    finally:
        op.builder = outer
    graph = Body(body, ((h, float32), (c, float32), (x, float32)), tuple((t, float32) for t in results))
    directions = {"scan_input_directions": [1], "scan_output_directions": [1]} if reverse else {}
    y_h, y_c, y = op.node("Scan", [h0, c0, d.x], 3, body=graph, num_scan_inputs=1, **directions)
    return _unsqueeze(op, y, 1), _unsqueeze(op, y_h), _unsqueeze(op, y_c)


# ---- SVDF ----


def _check_svdf(op: Op) -> str | None:
    reason = check_activation(op, 6)
    if reason:
        return reason
    if int(op.scalar(5)) <= 0:
        return f"{op.name}: rank {op.scalar(5)} is not positive"
    return None


@rule(O.SVDF, types=FLOAT, params={5: "rank", 6: "activation"}, check=_check_svdf)
def svdf(op: Op) -> None:
    """HAL SVDF: inputs 0 input [batch, input_size], 1 weights_feature [filters, input_size], 2 weights_time
    [filters, memory_size], 3 bias [units] (optional; filters = units * rank), 4 state_in [batch, filters *
    memory_size], 5 rank, 6 activation; outputs 0 state_out, 1 output [batch, units]. ONNX has no SVDF: the
    state as [batch, filters, memory] (Reshape), its last slot replaced by the new feature column input
    weights_feature^T (Slice, Concat), weighed by weights_time and summed over the memory (Mul, ReduceSum), the
    ranks of each unit summed (Reshape, ReduceSum), then bias and activation; state_out is the memory shifted
    left with a zero last slot (Slice, Pad, Reshape)."""
    rank = int(op.scalar(5))
    x, features, times = op.x(0), op.x(1), op.x(2)
    column = op.node("Gemm", [x, features], transB=1)  # [batch, filters]
    memory_shape = op.node("Concat", [op.ints([0]), op.node("Shape", [times])], axis=0)
    memory = op.node("Reshape", [op.x(4), memory_shape])  # [batch, filters, memory]
    kept = op.node("Slice", [memory, op.ints([0]), op.ints([-1]), op.ints([2])])
    updated = op.node("Concat", [kept, _unsqueeze(op, column, 2)], axis=2)
    per_filter = op.node("ReduceSum", [op.node("Mul", [updated, times]), op.ints([2])], keepdims=0)
    per_unit = op.node("Reshape", [per_filter, op.ints([0, -1, rank])])
    out = op.node("ReduceSum", [per_unit, op.ints([2])], keepdims=0)
    if op.has(3):
        out = op.node("Add", [out, op.x(3)])
    activate(op, out, activation(op, 6), op.y(1))
    shifted = op.node("Slice", [updated, op.ints([1]), op.ints([np.iinfo(np.int64).max]), op.ints([2])])
    padded = op.node("Pad", [shifted, op.ints([0, 0, 0, 0, 0, 1])])
    op.node("Reshape", [padded, op.ints([0, -1])], [op.y(0)])
