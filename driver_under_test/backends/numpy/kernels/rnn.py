"""Basic recurrent layers: RNN (one step), UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import FLOAT_TYPES
from driver_under_test.backends.numpy.kernels._recurrent import (
    activation_fn,
    check_shape,
    from_time_major,
    optional_f32,
    required_f32,
    store,
    time_major,
)
from driver_under_test.backends.numpy.kernels.common import quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, kernel
from driver_under_test.errors import invalid
from harness.hal import OperationType


@dataclass
class _Cell:
    """Weights of one RNN cell: state = act(x W' + aux A' + state R' + b)."""

    weights: np.ndarray  # [units, input_size]
    recurrent: np.ndarray  # [units, units]
    bias: np.ndarray  # [units]
    aux_weights: np.ndarray | None = None  # [units, aux_size]

    @property
    def units(self) -> int:
        return self.weights.shape[0]

    def check(self, input_size: int, aux_size: int | None) -> None:
        """INVALID_ARGUMENT when the weights disagree with each other or with the input."""
        check_shape(self.weights, (self.units, input_size), "input weights")
        check_shape(self.recurrent, (self.units, self.units), "recurrent weights")
        check_shape(self.bias, (self.units,), "bias")
        if self.aux_weights is not None:
            check_shape(self.aux_weights, (self.units, aux_size or 0), "auxiliary weights")


def _cell(call: OpCall, first: int) -> _Cell:
    return _Cell(required_f32(call, first, 2, "weights"), required_f32(call, first + 1, 2, "recurrent weights"),
                 required_f32(call, first + 2, 1, "bias"))


def _run(cell: _Cell, inputs: np.ndarray, aux: np.ndarray | None, state: np.ndarray, activation: int,
         reverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Unroll a cell over [time, batch, input] (backwards if `reverse`); returns outputs and final state."""
    act = activation_fn(activation)
    check_shape(state, (inputs.shape[1], cell.units), "hidden state")
    # Input projections of every step at once, one matrix multiply; only the recurrence is sequential.
    projected = inputs @ cell.weights.T + cell.bias
    if aux is not None and cell.aux_weights is not None:
        projected = projected + aux @ cell.aux_weights.T
    outputs = np.empty((inputs.shape[0], inputs.shape[1], cell.units), dtype=np.float32)
    steps = range(inputs.shape[0] - 1, -1, -1) if reverse else range(inputs.shape[0])
    for t in steps:
        state = act(projected[t] + state @ cell.recurrent.T).astype(np.float32)
        outputs[t] = state
    return outputs, state


@kernel(OperationType.RNN, FLOAT_TYPES)
@quiet
def rnn(call: OpCall) -> list[np.ndarray]:
    """One step: outputs = state = activation(input W' + state R' + bias)."""
    x = required_f32(call, 0, 2, "input")
    cell = _cell(call, 1)
    cell.check(x.shape[1], None)
    state = required_f32(call, 4, 2, "hidden state")
    outputs, state = _run(cell, x[None], None, state, int(call.scalar(5, 0)))
    return [store(state, call.outputs[0]), store(outputs[0], call.outputs[1])]


@kernel(OperationType.UNIDIRECTIONAL_SEQUENCE_RNN, FLOAT_TYPES)
@quiet
def unidirectional_sequence_rnn(call: OpCall) -> list[np.ndarray]:
    """The RNN step unrolled over a sequence; the optional second output is the final hidden state."""
    is_time_major = bool(call.scalar(6, 0))
    seq = time_major(required_f32(call, 0, 3, "input"), is_time_major)
    cell = _cell(call, 1)
    cell.check(seq.shape[2], None)
    outputs, state = _run(cell, seq, None, required_f32(call, 4, 2, "hidden state"), int(call.scalar(5, 0)))
    results = [store(from_time_major(outputs, is_time_major), call.outputs[0])]
    if len(call.outputs) > 1:
        results.append(store(state, call.outputs[1]))
    return results


@kernel(OperationType.BIDIRECTIONAL_SEQUENCE_RNN, FLOAT_TYPES)
@quiet
def bidirectional_sequence_rnn(call: OpCall) -> list[np.ndarray]:
    """A forward and a backward RNN over the same sequence, with optional auxiliary input."""
    is_time_major = bool(call.scalar(13, False))
    merge = bool(call.scalar(14, False))
    activation = int(call.scalar(12, 0))
    seq = time_major(required_f32(call, 0, 3, "input"), is_time_major)
    fw, bw = _cell(call, 1), _cell(call, 5)
    aux = optional_f32(call, 9)
    fw.aux_weights, bw.aux_weights = optional_f32(call, 10), optional_f32(call, 11)
    if (fw.aux_weights is None) != (bw.aux_weights is None):
        raise invalid("forward and backward auxiliary weights must both be present or both omitted",
                      "inputs.optional")
    bw_seq = seq
    if aux is not None:
        aux = time_major(aux, is_time_major)
        if aux.shape[:2] != seq.shape[:2]:
            raise invalid(f"auxiliary input {aux.shape} does not match input {seq.shape}", "shape.aux_input")
        if fw.aux_weights is None:
            # Auxiliary input without weights: the backward cell reads it in place of the input.
            bw_seq, aux = aux, None
    elif fw.aux_weights is not None:
        raise invalid("auxiliary weights given without an auxiliary input", "inputs.optional")
    aux_size = None if aux is None else aux.shape[2]
    fw.check(seq.shape[2], aux_size)
    bw.check(bw_seq.shape[2], aux_size)
    fw_out, fw_state = _run(fw, seq, aux, required_f32(call, 4, 2, "forward hidden state"), activation)
    bw_out, bw_state = _run(bw, bw_seq, aux, required_f32(call, 8, 2, "backward hidden state"), activation,
                            reverse=True)
    sequences = [np.concatenate([fw_out, bw_out], axis=2)] if merge else [fw_out, bw_out]
    if len(call.outputs) < len(sequences):
        raise invalid(f"{len(sequences)} sequence outputs needed, {len(call.outputs)} declared", "outputs.count")
    results = [store(from_time_major(s, is_time_major), call.outputs[k]) for k, s in enumerate(sequences)]
    # Optional final-state outputs (forward, then backward) follow the sequence outputs.
    first_state = len(results)
    for k, state in zip(range(first_state, len(call.outputs)), (fw_state, bw_state)):
        results.append(store(state, call.outputs[k]))
    return results
