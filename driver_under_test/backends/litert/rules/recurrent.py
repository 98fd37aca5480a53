"""Recurrent operations: RNN, SVDF, LSTM, their sequence and bidirectional forms, and the quantized LSTMs.

TFLite's recurrent kernels keep their state in variable tensors, which each run reads and overwrites in place;
the HAL passes the state in as inputs and out as outputs. A rule therefore copies each state input into a fresh
variable tensor before the kernel (a CAST, which also converts float16 to float32, and sizes the variable for
each execution) and gives the HAL's state outputs the variable's value after it. The HAL's model inputs,
constants and other operations' results all work as state inputs, and are never written by the kernel.

The in-place write is invisible in the graph: an operator reading the variable depends, as far as LiteRT can
tell, on nothing the kernel writes, and the XNNPACK delegate's partitioning does run such a reader before the
kernel. Every read after the kernel therefore goes through `_after`, an operator that also reads the kernel's
output.

Float16 runs in float32 (LiteRT has no float16 recurrent kernels), see _graph.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from driver_under_test.backends.litert._graph import Op, TensorSpec
from driver_under_test.backends.litert._registry import rule
from driver_under_test.backends.litert.rules._common import FLOAT, Q8, QS8, activation, check_activation
from harness.hal import OperationType as O

# ---- state ----


def _state(op: Op, i: int) -> int:
    """A variable tensor holding the value of state input i, written by a CAST of it before the kernel runs."""
    variable = op.variable(op.spec(i))
    op.emit("CAST", [op.b.hal_tensor(op.operation.inputs[i])], [variable])
    return variable


def _after(op: Op, variable: int, spec: TensorSpec, output: int, output_spec: TensorSpec, rank: int) -> int:
    """The value of `variable` (of `spec`) once the kernel that wrote `output` (of `output_spec` and rank `rank`)
    has run: SELECT_V2(c, variable, variable), which is the variable whatever the condition c, with c =
    GREATER(x, x) for x the first element of the kernel's output (STRIDED_SLICE to a scalar), so that the read
    depends on the kernel."""
    first = op.temp(output_spec.with_shape(()))
    zeros, ones = op.const([0] * rank), op.const([1] * rank)
    mask = (1 << rank) - 1
    op.emit("STRIDED_SLICE", [output, zeros, ones, ones], [first], "StridedSliceOptions", shrinkAxisMask=mask)
    condition = op.temp(TensorSpec("BOOL", ()))
    op.emit("GREATER", [first, first], [condition])
    value = op.temp(spec)
    op.emit("SELECT_V2", [condition, variable, variable], [value])
    return value


def _final_states(op: Op, first: int, states: Sequence[tuple[int, int]], output: int) -> None:
    """Outputs `first`, `first` + 1, ... (when the operation lists them) take the final values of the sequence
    kernel's state variables, each given with its HAL input, read after the kernel wrote `output` (3-D, of
    output 0's type)."""
    if len(op.operation.outputs) > first:
        for k, (variable, i) in enumerate(states):
            op.result(first + k, _after(op, variable, op.spec(i), output, op.out_spec(0), 3))


def _known(*sizes: int) -> int:
    """The first known (non-zero) of several sources of one size, 0 when none is."""
    return next((size for size in sizes if size), 0)


def _dim(op: Op, i: int, axis: int) -> int:
    """Dimension `axis` of input i, 0 when unknown."""
    dims = op.dims(i)
    return dims[axis] if len(dims) > axis else 0


# ---- RNN ----


def _check_rnn(op: Op) -> str | None:
    """RNN and UNIDIRECTIONAL_SEQUENCE_RNN: the activation."""
    return check_activation(op, 5)


@rule(O.RNN, types=FLOAT, params={5: "activation"}, check=_check_rnn, half=True)
def rnn(op: Op) -> None:
    """HAL RNN: inputs 0 input [batch, input_size], 1 weights [units, input_size], 2 recurrent_weights [units,
    units], 3 bias [units], 4 hidden_state_in [batch, units], 5 activation; outputs 0 hidden_state_out, 1 output
    (both the new state activation(input W^T + state R^T + bias)). TFLite RNN (same inputs, the state a variable
    tensor) writes output 1, which output 0 repeats."""
    hidden = _state(op, 4)
    inputs = [op.input(i) for i in range(4)] + [hidden]
    output = op.output(1)
    op.emit("RNN", inputs, [output], "RNNOptions", fusedActivationFunction=activation(op, 5))
    op.result(0, output)


@rule(
    O.UNIDIRECTIONAL_SEQUENCE_RNN,
    types=FLOAT,
    params={5: "activation", 6: "time_major"},
    check=_check_rnn,
    half=True,
)
def unidirectional_sequence_rnn(op: Op) -> None:
    """HAL UNIDIRECTIONAL_SEQUENCE_RNN: inputs 0 input [max_time, batch, input_size] (time-major) or [batch,
    max_time, input_size], 1 weights, 2 recurrent_weights, 3 bias, 4 hidden_state_in [batch, units], 5
    activation, 6 time_major (INT32); outputs 0 output (the state after each step, in the input's layout), 1
    hidden_state_out (optional: the final state). TFLite UNIDIRECTIONAL_SEQUENCE_RNN (same inputs, the state a
    variable tensor) with time_major and the activation as options; the final state is the variable."""
    hidden = _state(op, 4)
    inputs = [op.input(i) for i in range(4)] + [hidden]
    output = op.output(0)
    op.emit(
        "UNIDIRECTIONAL_SEQUENCE_RNN",
        inputs,
        [output],
        "SequenceRNNOptions",
        timeMajor=bool(op.scalar(6)),
        fusedActivationFunction=activation(op, 5),
    )
    _final_states(op, 1, [(hidden, 4)], output)


def _check_bidirectional_rnn(op: Op) -> str | None:
    return check_activation(op, 12)


@rule(
    O.BIDIRECTIONAL_SEQUENCE_RNN,
    types=FLOAT,
    params={12: "activation", 13: "time_major", 14: "merge_outputs"},
    check=_check_bidirectional_rnn,
    half=True,
)
def bidirectional_sequence_rnn(op: Op) -> None:
    """HAL BIDIRECTIONAL_SEQUENCE_RNN: inputs 0 input, 1 fw_weights, 2 fw_recurrent_weights, 3 fw_bias, 4
    fw_hidden_state_in, 5 bw_weights, 6 bw_recurrent_weights, 7 bw_bias, 8 bw_hidden_state_in, 9 aux_input
    (optional), 10 fw_aux_weights, 11 bw_aux_weights (optional), 12 activation, 13 time_major (BOOL), 14
    merge_outputs (BOOL); outputs 0 fw_output (with merge_outputs: forward and backward concatenated), 1
    bw_output (without merge_outputs), then optionally fw_hidden_state_out, bw_hidden_state_out. The auxiliary
    input is absent, cross-linked (with aux weights) or parallel (without: the backward cell reads it instead
    of the input). TFLite BIDIRECTIONAL_SEQUENCE_RNN has the same 12 inputs, the same three linking modes and
    the options time_major and merge_outputs; the states are variable tensors, the final states their values."""
    merge = bool(op.scalar(14))
    fw, bw = _state(op, 4), _state(op, 8)
    inputs = [op.input(i) for i in range(4)] + [fw] + [op.input(i) for i in range(5, 8)] + [bw]
    inputs += [op.input(i) for i in range(9, 12)]
    sequences = 1 if merge else 2
    outputs = [op.output(k) for k in range(sequences)]
    op.emit(
        "BIDIRECTIONAL_SEQUENCE_RNN",
        inputs,
        outputs,
        "BidirectionalSequenceRNNOptions",
        timeMajor=bool(op.scalar(13)),
        fusedActivationFunction=activation(op, 12),
        mergeOutputs=merge,
    )
    _final_states(op, sequences, [(fw, 4), (bw, 8)], outputs[-1])


# ---- SVDF ----


def _check_svdf(op: Op) -> str | None:
    reason = check_activation(op, 6)
    if reason:
        return reason
    if op.rank(2) != 2 or 0 in op.dims(2):
        return f"{op.name}: the time weights' shape must be known (the state is rearranged per filter)"
    return None


@rule(O.SVDF, types=FLOAT, params={5: "rank", 6: "activation"}, check=_check_svdf, half=True)
def svdf(op: Op) -> None:
    """HAL SVDF: inputs 0 input [batch, input_size], 1 weights_feature [filters, input_size], 2 weights_time
    [filters, memory_size], 3 bias [units] (optional; filters = units * rank), 4 state_in [batch, filters *
    memory_size], 5 rank, 6 activation; outputs 0 state_out, 1 output [batch, units]. The HAL writes the new
    feature column into the last slot of each filter's memory, computes, then shifts the memory left with a
    zero at the end; TFLite SVDF (same inputs, the state a variable tensor, rank and activation as options)
    shifts first and then writes the last slot. So the variable starts as the HAL state shifted right by one
    (STRIDED_SLICE, PAD: the first slot, which TFLite drops, is zero) and state_out is the variable shifted left
    per filter with a zero last slot (RESHAPE [batch * filters, memory], STRIDED_SLICE, PAD, RESHAPE)."""
    filters, memory = op.dims(2)
    spec = op.spec(4).with_shape((-1, filters * memory))
    dropped = op.temp(spec.with_shape((-1, filters * memory - 1)))
    _strided(op, op.input(4), [0, 0], [0, -1], dropped)
    state = op.variable(spec)
    op.emit("PAD", [dropped, op.const([[0, 0], [1, 0]])], [state])
    inputs = [op.input(0), op.input(1), op.input(2), op.input(3), state]
    fields = dict(rank=int(op.scalar(5)), fusedActivationFunction=activation(op, 6))
    output = op.output(1)
    op.emit("SVDF", inputs, [output], "SVDFOptions", **fields)
    per_filter = spec.with_shape((-1, memory))
    rows = op.temp(per_filter)
    after = _after(op, state, spec, output, op.out_spec(1), 2)
    op.emit("RESHAPE", [after, op.const([-1, memory])], [rows])
    older = op.temp(per_filter.with_shape((-1, memory - 1)))
    _strided(op, rows, [0, 1], [0, 0], older)
    shifted = op.temp(per_filter)
    op.emit("PAD", [older, op.const([[0, 0], [0, 1]])], [shifted])
    op.emit("RESHAPE", [shifted, op.const([-1, filters * memory])], [op.output(0)])


def _strided(op: Op, x: int, begin: list[int], end: list[int], out: int) -> None:
    """out = x[begin[0]:, begin[1]:end[1]] (an end of 0 is the end of the axis) of a 2-D x."""
    mask = 1 | (2 if end[1] == 0 else 0)
    op.emit(
        "STRIDED_SLICE",
        [x, op.const(begin), op.const(end), op.const([1, 1])],
        [out],
        "StridedSliceOptions",
        beginMask=0,
        endMask=mask,
    )


# ---- LSTM ----

_SIGMOID = 6  # the HAL's cell activation code for sigmoid, which TFLite's ActivationFunctionType lacks


def _check_cell_activation(op: Op, i: int) -> str | None:
    code = int(op.scalar(i))
    if code == _SIGMOID:
        return (
            f"{op.name}: cell activation sigmoid (6) has no TFLite counterpart (TFLite's ActivationFunctionType "
            "stops at SIGN_BIT 5, and LiteRT reads an unknown code as NONE)"
        )
    if code not in (0, 1, 3, 4):
        return f"{op.name}: cell activation {code} is not one of the HAL's 0, 1, 3, 4, 6"
    return None


def _cell_options(op: Op, at: int) -> dict:
    """LSTM options from the HAL's activation, cell clip and projection clip inputs at `at`..`at` + 2."""
    return dict(
        fusedActivationFunction=int(op.scalar(at)),
        cellClip=float(op.scalar(at + 1, 0.0)),
        projClip=float(op.scalar(at + 2, 0.0)),
    )


def _cell_inputs(op: Op, weights: int, states: tuple[int, int], layer_norm: int | None) -> list[int]:
    """TFLite's 24 LSTM inputs for a cell whose input-to-input weights are HAL input `weights` (17 tensors in
    the HAL's order, the same as TFLite's), the two state variables, and the four layer-norm weights at
    `layer_norm` (omitted: -1)."""
    norms = [op.input(layer_norm + k) if layer_norm is not None else -1 for k in range(4)]
    return [op.input(0)] + [op.input(weights + k) for k in range(17)] + list(states) + norms


def _check_lstm(op: Op) -> str | None:
    """LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM: the cell activation; LSTM: its scratch buffer's size."""
    if op.type == O.LSTM and not (_batch(op) and _units(op)):
        return f"{op.name}: the batch and unit counts must be known (the scratch buffer output is sized by them)"
    return _check_cell_activation(op, 20)


def _batch(op: Op) -> int:
    return _known(_dim(op, 0, 0), _dim(op, 18, 0), _dim(op, 19, 0))


def _units(op: Op) -> int:
    return _known(_dim(op, 19, 1), _dim(op, 4, 0), _dim(op, 8, 0), _dim(op, 15, 0))


@rule(
    O.LSTM,
    types=FLOAT,
    params={20: "activation", 21: "cell_clip", 22: "proj_clip"},
    check=_check_lstm,
    half=True,
)
def lstm(op: Op) -> None:
    """HAL LSTM: inputs 0 input [batch, input_size], 1-4 input-to-{input, forget, cell, output} weights, 5-8
    recurrent-to-{input, forget, cell, output} weights, 9-11 cell-to-{input, forget, output} (peephole) weights,
    12-15 {input, forget, cell, output} gate biases, 16 projection weights, 17 projection bias (input-gate,
    peephole and projection tensors optional), 18 output_state_in [batch, output_size], 19 cell_state_in [batch,
    units], 20 activation, 21 cell_clip, 22 proj_clip, 23-26 layer-norm weights (optional); outputs 0
    scratch_buffer (implementation-defined), 1 output_state_out, 2 cell_state_out, 3 output. TFLite LSTM (full
    kernel: the same 18 tensors, the two states as variable tensors, the four layer-norm weights; activation and
    clips as options) writes output 3, which output 1 repeats; output 2 is the cell state variable after the run
    and the scratch buffer is zeros [batch, units * 4] (units * 3 without the input gate)."""
    h, c = _state(op, 18), _state(op, 19)
    inputs = _cell_inputs(op, 1, (h, c), 23 if op.has(24) else None)
    output = op.output(3)
    op.emit("LSTM", inputs, [output], "LSTMOptions", kernelType=0, **_cell_options(op, 20))
    op.result(1, output)
    op.result(2, _after(op, c, op.spec(19), output, op.out_spec(3), 2))
    batch, units = _batch(op), _units(op)
    gates = 4 if op.has(1) else 3
    zero = op.const(np.zeros((), dtype=np.float32))
    op.emit("FILL", [op.const([batch, units * gates]), zero], [op.output(0)])


@rule(
    O.UNIDIRECTIONAL_SEQUENCE_LSTM,
    types=FLOAT,
    params={20: "activation", 21: "cell_clip", 22: "proj_clip", 23: "time_major"},
    check=_check_lstm,
    half=True,
)
def unidirectional_sequence_lstm(op: Op) -> None:
    """HAL UNIDIRECTIONAL_SEQUENCE_LSTM: inputs 0 input [max_time, batch, input_size] (time-major) or [batch,
    max_time, input_size], 1-17 the LSTM cell's tensors (as LSTM), 18 output_state_in, 19 cell_state_in, 20
    activation, 21 cell_clip, 22 proj_clip, 23 time_major (BOOL), 24-27 layer-norm weights (optional); outputs 0
    output (each step's output state, in the input's layout), then optionally 1 output_state_out and 2
    cell_state_out (the final states). TFLite UNIDIRECTIONAL_SEQUENCE_LSTM (the LSTM's 24 inputs, the states as
    variable tensors; activation, clips and time_major as options); the final states are the variables."""
    h, c = _state(op, 18), _state(op, 19)
    inputs = _cell_inputs(op, 1, (h, c), 24 if op.has(25) else None)
    output = op.output(0)
    op.emit(
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        inputs,
        [output],
        "UnidirectionalSequenceLSTMOptions",
        timeMajor=bool(op.scalar(23)),
        diagonalRecurrentTensors=False,
        **_cell_options(op, 20),
    )
    _final_states(op, 1, [(h, 18), (c, 19)], output)


def _check_bidirectional_lstm(op: Op) -> str | None:
    return _check_cell_activation(op, 48)


@rule(
    O.BIDIRECTIONAL_SEQUENCE_LSTM,
    types=FLOAT,
    params={48: "activation", 49: "cell_clip", 50: "proj_clip", 51: "merge_outputs", 52: "time_major"},
    check=_check_bidirectional_lstm,
    half=True,
)
def bidirectional_sequence_lstm(op: Op) -> None:
    """HAL BIDIRECTIONAL_SEQUENCE_LSTM: inputs 0 input, 1-17 the forward cell's tensors, 18-34 the backward
    cell's (each in LSTM's order), 35 fw_output_state_in, 36 fw_cell_state_in, 37 bw_output_state_in, 38
    bw_cell_state_in, 39 aux_input (optional), 40-43 fw aux-input-to-{input, forget, cell, output} weights,
    44-47 the bw ones (optional), 48 activation, 49 cell_clip, 50 proj_clip, 51 merge_outputs, 52 time_major
    (BOOLs), 53-56 fw and 57-60 bw layer-norm weights (optional); outputs 0 fw_output (with merge_outputs:
    forward and backward concatenated), 1 bw_output (without merge_outputs), then optionally the final fw
    output and cell states and bw output and cell states. The auxiliary input is absent, cross-linked (with aux
    weights) or parallel (without: the backward cell reads it instead of the input).

    TFLite BIDIRECTIONAL_SEQUENCE_LSTM, whose 48 inputs are the HAL's 0-47 (the states as variable tensors) with
    the same three linking modes and options. It has no layer-norm inputs, and its Prepare checks both cells
    against the sizes of each in turn, so it refuses a forward and a backward cell of different sizes (units or
    output size), which the HAL allows. In those two cases each direction is a TFLite UNIDIRECTIONAL_SEQUENCE_LSTM:
    the backward one runs on the input reversed in time (REVERSE_V2) and its output is reversed back;
    cross-linked aux weights join the input's (the cell reads [input, aux] against [W, W_aux], CONCATENATION);
    merged outputs are concatenated. The final states are the variables."""
    merge = bool(op.scalar(51))
    states = [_state(op, i) for i in (35, 36, 37, 38)]
    sequences = 1 if merge else 2
    # The cells' sizes: units (input-to-output weights' rows), output size (recurrent-to-output weights' columns).
    fw_sizes = (_dim(op, 4, 0), _dim(op, 8, 1))
    same_sizes = 0 not in fw_sizes and fw_sizes == (_dim(op, 21, 0), _dim(op, 25, 1))
    if op.has(54) or op.has(58) or not same_sizes:
        last = _bidirectional_by_halves(op, states, merge)
    else:
        inputs = [op.input(i) for i in range(35)] + states + [op.input(i) for i in range(39, 48)]
        outputs = [op.output(k) for k in range(sequences)]
        last = outputs[-1]
        op.emit(
            "BIDIRECTIONAL_SEQUENCE_LSTM",
            inputs,
            outputs,
            "BidirectionalSequenceLSTMOptions",
            timeMajor=bool(op.scalar(52)),
            mergeOutputs=merge,
            **_cell_options(op, 48),
        )
    _final_states(op, sequences, list(zip(states, (35, 36, 37, 38))), last)


def _bidirectional_by_halves(op: Op, states: list[int], merge: bool) -> int:
    """BIDIRECTIONAL_SEQUENCE_LSTM as two UNIDIRECTIONAL_SEQUENCE_LSTMs; the last tensor written (which depends
    on both)."""
    time_major = bool(op.scalar(52))
    time_axis = 0 if time_major else 1
    spec = op.spec(0).with_shape(None)
    cross = op.has(39) and op.has(41)  # aux weights present: cross-linked
    halves = []
    for direction, (base, norms, aux_weights) in enumerate(((1, 53, 40), (18, 57, 44))):
        x = op.input(39) if op.has(39) and not cross and direction == 1 else op.input(0)
        weights = [op.input(base + k) for k in range(17)]
        if cross:
            x = _concat(op, [x, op.input(39)], 2, spec)
            for gate in range(4):
                if weights[gate] >= 0:
                    weights[gate] = _concat(op, [weights[gate], op.input(aux_weights + gate)], 1, spec)
        if direction == 1:
            x = _reverse(op, x, time_axis, spec)
        norm_inputs = [op.input(norms + k) if op.has(norms + 1) else -1 for k in range(4)]
        inputs = [x, *weights, states[2 * direction], states[2 * direction + 1], *norm_inputs]
        if direction == 1 or merge:
            out = op.temp(spec)
        else:
            out = op.output(0)
        op.emit(
            "UNIDIRECTIONAL_SEQUENCE_LSTM",
            inputs,
            [out],
            "UnidirectionalSequenceLSTMOptions",
            timeMajor=time_major,
            diagonalRecurrentTensors=False,
            **_cell_options(op, 48),
        )
        if direction == 1:
            target = op.temp(spec) if merge else op.output(1)
            out = _reverse(op, out, time_axis, spec, target)
        halves.append(out)
    if merge:
        op.emit("CONCATENATION", halves, [op.output(0)], "ConcatenationOptions", axis=2)
        return op.output(0)
    return halves[-1]


def _concat(op: Op, tensors: list[int], axis: int, spec: TensorSpec) -> int:
    out = op.temp(spec)
    op.emit("CONCATENATION", tensors, [out], "ConcatenationOptions", axis=axis)
    return out


def _reverse(op: Op, x: int, axis: int, spec: TensorSpec, target: int | None = None) -> int:
    out = op.temp(spec) if target is None else target
    op.emit("REVERSE_V2", [x, op.const([axis])], [out])
    return out


# ---- the quantized LSTMs ----

GATES = ("input", "forget", "cell", "output")
_Q16_INPUT = (1 / 128, 128)  # the fixed quantization of QUANTIZED_16BIT_LSTM's input and outputs
_Q16_CELL = 2.0**-11  # and of its cell state (int16, 4 integer bits)
# TFLite's basic LSTM orders the gates input, cell, forget, output; HAL inputs 1-4 are input, forget, cell, output.
_BASIC_GATE_ORDER = (0, 2, 1, 3)


def _check_quantized_16bit_lstm(op: Op) -> str | None:
    for i in (0, 14):
        operand = op.operand(i)
        if (np.float32(operand.scale), operand.zero_point) != (np.float32(_Q16_INPUT[0]), _Q16_INPUT[1]):
            return f"{op.name}: input {i} must have scale 1/128 and zero point 128 (LiteRT's fixed format)"
    if np.float32(op.operand(13).scale) != np.float32(_Q16_CELL):
        return f"{op.name}: the cell state must have scale 2^-11 (LiteRT's fixed format)"
    return None


@rule(O.QUANTIZED_16BIT_LSTM, types={Q8}, check=_check_quantized_16bit_lstm)
def quantized_16bit_lstm(op: Op) -> None:
    """HAL QUANTIZED_16BIT_LSTM: inputs 0 input [batch, input_size] (QUANT8_ASYMM, scale 1/128, zero point 128),
    1-4 input-to-{input, forget, cell, output} weights [output_size, input_size], 5-8 recurrent-to-{input,
    forget, cell, output} weights [output_size, output_size] (QUANT8_ASYMM, one scale and zero point for all),
    9-12 {input, forget, cell, output} gate biases [output_size] (TENSOR_INT32, scale input * weights), 13
    cell_state_in [batch, output_size] (QUANT16_SYMM, scale 2^-11), 14 output_state_in (as the input); outputs 0
    cell_state_out, 1 output. TFLite LSTM with the basic kernel (kernel type BASIC; inputs: input, previous
    output, weights [4 * output_size, input_size + output_size], biases [4 * output_size], previous cell state;
    outputs: output, cell state and two scratch tensors) computes this cell in the same fixed-point formats, each
    gate's weights row multiplying [input, previous output], the gates in the order input, cell, forget, output.
    The rule stacks the HAL's weights and biases in that order (at translation time when constant, else
    CONCATENATION); the row of a gate is [recurrent weights, input weights], the layout the conformance vectors
    (and so the HAL's reference) compute with. The kernel copies its results back into its state inputs, so the
    states are copied into variable tensors first."""
    x_spec = op.spec(0)
    out_size = _known(_dim(op, 14, 1), _dim(op, 5, 0)) or -1
    batch = _known(_dim(op, 0, 0), _dim(op, 13, 0), _dim(op, 14, 0)) or -1
    w_spec = op.spec(1).with_shape(None)
    rows = [_joined(op, [_part(op, 5 + gate), _part(op, 1 + gate)], 1, w_spec) for gate in _BASIC_GATE_ORDER]
    weights = _tensor(op, _joined(op, rows, 0, w_spec), w_spec)
    b_spec = op.spec(9).with_shape(None)
    biases = _tensor(op, _joined(op, [_part(op, 9 + gate) for gate in _BASIC_GATE_ORDER], 0, b_spec), b_spec)
    h, c = _state(op, 14), _state(op, 13)
    width = _dim(op, 0, 1) + out_size if _dim(op, 0, 1) and out_size > 0 else -1
    concat = op.temp(x_spec.with_shape((batch, width)))
    gates = op.temp(TensorSpec("INT16", (batch, 4 * out_size if out_size > 0 else -1), (2.0**-12,), (0,)))
    op.emit(
        "LSTM",
        [op.input(0), h, weights, biases, c],
        [op.output(1), op.output(0), concat, gates],
        "LSTMOptions",
        fusedActivationFunction=op.b.model.schema.ActivationFunctionType.TANH,
        kernelType=op.b.model.schema.LSTMKernelType.BASIC,
    )


def _part(op: Op, i: int) -> np.ndarray | int:
    """Input i's value when it is a constant, else its tensor."""
    return op.value(i) if op.is_const(i) else op.input(i)


def _joined(op: Op, parts: list[np.ndarray | int], axis: int, spec: TensorSpec) -> np.ndarray | int:
    """`parts` (values or tensors of `spec`) concatenated along `axis`: a value when all are values (joined at
    translation time), else a CONCATENATION."""
    if all(isinstance(p, np.ndarray) for p in parts):
        return np.concatenate(parts, axis=axis)
    return _concat(op, [_tensor(op, p, spec) for p in parts], axis, spec)


def _tensor(op: Op, part: np.ndarray | int, spec: TensorSpec) -> int:
    return op.const(part, spec) if isinstance(part, np.ndarray) else part


_GATE_INTERMEDIATE = 2.0**-12  # LiteRT's fixed gate format (Q3.12) without layer normalization


def _check_quantized_lstm(op: Op) -> str | None:
    exponent = np.log2(op.operand(19).scale)
    if abs(exponent - np.round(exponent)) >= 1e-3:  # LiteRT's CheckedLog2 tolerance
        return f"{op.name}: LiteRT's integer LSTM needs a power-of-two cell state scale"
    # Layer-norm weights given at run time may be left without a value by an execution, which then runs the LSTM
    # without layer normalization: what that translation needs must hold as well.
    may_lack_layer_norm = not op.has(21) or not op.is_const(21)
    if may_lack_layer_norm and any(np.float32(op.scalar(i)) != np.float32(_GATE_INTERMEDIATE) for i in range(26, 30)):
        return (
            f"{op.name}: without layer normalization (none, or weights an execution may omit) LiteRT's integer "
            "LSTM computes the gates at scale 2^-12 and ignores the intermediate scales, which differ from it here"
        )
    # LiteRT folds these tensors into its kernel's constants when it prepares the graph, before any input is set.
    folded = {17: "projection bias"}
    if may_lack_layer_norm:
        folded.update({12: "input gate bias", 13: "forget gate bias", 14: "cell gate bias", 15: "output gate bias"})
    if op.operand(0).zero_point:
        folded.update({k: "input-to-gate weights" for k in range(1, 5)})
    if op.operand(18).zero_point:
        folded.update({k: "recurrent-to-gate weights" for k in range(5, 9)})
    if op.scalar(30):
        folded[16] = "projection weights"
    for i, role in sorted(folded.items()):
        if op.has(i) and not op.is_const(i):
            return (
                f"{op.name}: input {i} ({role}) is given at run time; LiteRT's integer LSTM reads it when the graph "
                "is prepared, so it must be a constant"
            )
    return None


@rule(
    O.QUANTIZED_LSTM,
    types={QS8},
    params={
        24: "cell_clip",
        25: "proj_clip",
        **{26 + k: f"{g}_intermediate_scale" for k, g in enumerate(GATES)},
        30: "hidden_state_zero_point",
        31: "hidden_state_scale",
    },
    check=_check_quantized_lstm,
)
def quantized_lstm(op: Op) -> None:
    """HAL QUANTIZED_LSTM: inputs 0 input [batch, input_size] (QUANT8_ASYMM_SIGNED), 1-4 input-to-{input, forget,
    cell, output} and 5-8 recurrent-to-{input, forget, cell, output} weights (QUANT8_SYMM; the input gate's
    optional), 9-11 cell-to-{input, forget, output} weights (QUANT16_SYMM, optional), 12-15 gate biases
    (TENSOR_INT32; the input gate's optional), 16 projection weights (QUANT8_SYMM) and 17 projection bias
    (TENSOR_INT32), both optional, 18 output_state_in (QUANT8_ASYMM_SIGNED), 19 cell_state_in (QUANT16_SYMM), 20-23
    layer-norm weights (QUANT16_SYMM, optional), 24 cell_clip, 25 proj_clip, 26-29 the {input, forget, cell,
    output} gates' intermediate scales (of the matmul results that layer normalization reads), 30
    hidden_state_zero_point, 31 hidden_state_scale; outputs 0 output_state_out, 1 cell_state_out, 2 output.
    TFLite LSTM's integer kernel (8-bit weights, 16-bit cell): the same 18 tensors, the states as variable
    tensors, the layer-norm weights, and five intermediate tensors that carry, as their quantization, the four
    gate scales and the hidden state's scale and zero point; clips as options. It writes the output, which
    output 0 repeats; output 1 is the cell state variable after the run. Without layer normalization the kernel
    computes the gates at 2^-12 whatever the intermediate scales say, and it reads some tensors when the graph is
    prepared (see the check): those cases are unsupported unless they agree."""
    h, c = _state(op, 18), _state(op, 19)
    inputs = _cell_inputs(op, 1, (h, c), 20 if op.has(21) else None)
    intermediates = [op.temp(TensorSpec("INT16", (), (float(op.scalar(26 + k)),), (0,))) for k in range(4)]
    hidden = TensorSpec("INT8", (), (float(op.scalar(31)),), (int(op.scalar(30)),))
    intermediates.append(op.temp(hidden))
    output = op.output(2)
    op.emit(
        "LSTM",
        inputs,
        [output],
        "LSTMOptions",
        intermediates,
        fusedActivationFunction=op.b.model.schema.ActivationFunctionType.TANH,
        cellClip=float(op.scalar(24, 0.0)),
        projClip=float(op.scalar(25, 0.0)),
    )
    op.result(0, output)
    op.result(1, _after(op, c, op.spec(19), output, op.out_spec(2), 2))
