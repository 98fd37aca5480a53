"""Recurrent operations beyond the generated cases: QUANTIZED_LSTM (whose values the reference leaves to the
implementation: checked against the two examples of the public NNAPI QUANTIZED_LSTM test specification), the
state outputs read by later operations, and optional inputs that an execution gives no value."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.litert import KernelSet, LiteRTProgram, translate, unsupported_reason
from driver_under_test.backends.litert.backend import create_backend
from harness.hal import OperationType as O
from harness.reference import run_model
from tests.driver.backends.litert.build import Build, L, T, check_against_reference
from tests.driver.backends.litert.cases import constant_reader, mismatches

# The public NNAPI QUANTIZED_LSTM test specification (quantized_lstm.mod.py): batch 2, input 5, units 4, output 3,
# layer normalization and projection; example 2 couples the input gate (CIFG).
Q_INPUT_WEIGHTS = {
    "input": [64, 77, 89, -102, -115, 13, 25, 38, -51, 64, -102, 89, -77, 64, -51, -64, -51, -38, -25, -13],
    "forget": [-77, -13, 38, 25, 115, -64, -25, -51, 38, -102, -51, 38, -64, -51, -77, 38, -51, -77, -64, -64],
    "cell": [-51, -38, -25, -13, -64, 64, -25, -38, -25, -77, 77, -13, -51, -38, -89, 89, -115, -64, 102, 77],
    "output": [-102, -51, -25, -115, -13, -89, 38, -38, -102, -25, 77, -25, 51, -89, -38, -64, 13, 64, -77, -51],
}
Q_RECURRENT_WEIGHTS = {
    "input": [-25, -38, 51, 13, -64, 115, -25, -38, -89, 6, -25, -77],
    "forget": [-64, -38, -64, -25, 77, 51, 115, 38, -13, 25, 64, 25],
    "cell": [-38, 25, 13, -38, 102, -10, -25, 38, 102, -77, -13, 25],
    "output": [38, -13, 13, -25, -64, -89, -25, -77, -13, -51, -89, -25],
}
Q_BIASES = {
    "input": [644245, 3221226, 4724464, 8160438],
    "forget": [2147484, -6442451, -4294968, 2147484],
    "cell": [-1073742, 15461883, 5368709, 1717987],
    "output": [1073742, -214748, 4294968, 2147484],
}
Q_LAYER_NORM = {
    "input": [3277, 6553, 9830, 16384],
    "forget": [6553, 6553, 13107, 9830],
    "cell": [22937, 6553, 9830, 26214],
    "output": [19660, 6553, 6553, 16384],
}
Q_PROJECTION = [-25, 51, 3, -51, 25, 127, 77, 20, 18, 51, -102, 51]
Q_INPUT = [90, 102, 13, 26, 38, 102, 13, 26, 51, 64]
Q_EXPECTED = {
    False: ([127, 127, -108, -67, 127, 127], [-14650, 8939, 5771, 6715, -11843, 7847, 1508, 12939]),
    True: ([127, 127, 127, -128, 127, 127], [-11692, 9960, 5491, 8861, -9422, 7726, 2056, 13149]),
}
STATE_SCALE = 3.05176e-05
GATES = ("input", "forget", "cell", "output")


def quantized_lstm_model(cifg: bool, omitted_as_inputs: bool = False, norms_as_inputs: bool = False):
    """The specification's model; the input gate's tensors omitted with CIFG (NO_VALUE operands, or model inputs
    that the execution gives no value); the layer-norm weights model inputs if asked."""
    b = Build()
    x = b.input(T.TENSOR_QUANT8_ASYMM_SIGNED, [2, 5], 0.0078125, 0)
    absent: list[int] = []

    def optional(type_: int, present: bool, value, shape, scale: float = 0.0) -> int:
        if present:
            return b.const(type_, np.reshape(value, shape), scale)
        if omitted_as_inputs:
            absent.append(len(b.inputs))
            return b.input(type_, shape, scale)
        return b.absent(type_)

    weights = [
        optional(T.TENSOR_QUANT8_SYMM, not cifg or g != "input", Q_INPUT_WEIGHTS[g], (4, 5), 0.00784314) for g in GATES
    ]
    recurrent = [
        optional(T.TENSOR_QUANT8_SYMM, not cifg or g != "input", Q_RECURRENT_WEIGHTS[g], (4, 3), 0.00784314)
        for g in GATES
    ]
    peepholes = [b.absent(T.TENSOR_QUANT16_SYMM) for _ in range(3)]
    biases = [optional(T.TENSOR_INT32, not cifg or g != "input", Q_BIASES[g], (4,)) for g in GATES]
    projection = [
        b.const(T.TENSOR_QUANT8_SYMM, np.reshape(Q_PROJECTION, (3, 4)), 0.00392157),
        b.const(T.TENSOR_INT32, np.zeros(3)),
    ]
    states = len(b.inputs)
    h = b.input(T.TENSOR_QUANT8_ASYMM_SIGNED, [2, 3], STATE_SCALE, 0)
    c = b.input(T.TENSOR_QUANT16_SYMM, [2, 4], STATE_SCALE, 0)
    norms = [
        b.input(T.TENSOR_QUANT16_SYMM, [4], 3.05182e-05)
        if norms_as_inputs
        else optional(T.TENSOR_QUANT16_SYMM, not cifg or g != "input", Q_LAYER_NORM[g], (4,), 3.05182e-05)
        for g in GATES
    ]
    scalars = [b.const(T.FLOAT32, v) for v in (0.0, 0.0, 0.007059, 0.007812, 0.007059, 0.007812)]
    scalars += [b.i32(0), b.const(T.FLOAT32, 0.007)]
    outputs = [
        b.output(T.TENSOR_QUANT8_ASYMM_SIGNED, [2, 3], STATE_SCALE, 0),
        b.output(T.TENSOR_QUANT16_SYMM, [2, 4], STATE_SCALE, 0),
        b.output(T.TENSOR_QUANT8_ASYMM_SIGNED, [2, 3], STATE_SCALE, 0),
    ]
    inputs = [x, *weights, *recurrent, *peepholes, *biases, *projection, h, c, *norms, *scalars]
    b.op(O.QUANTIZED_LSTM, inputs, outputs)
    values = [None] * len(b.inputs)
    values[0] = np.asarray(Q_INPUT, dtype=np.int8).reshape(2, 5)
    values[states], values[states + 1] = np.zeros((2, 3), dtype=np.int8), np.zeros((2, 4), dtype=np.int16)
    return b.model(), values, absent


@pytest.mark.parametrize("kernel_set", list(KernelSet))
@pytest.mark.parametrize("cifg", [False, True], ids=["full", "cifg"])
def test_quantized_lstm_matches_the_public_examples(cifg: bool, kernel_set: KernelSet) -> None:
    model, values, _ = quantized_lstm_model(cifg)
    program = LiteRTProgram(translate(model, constant_reader(model)), kernel_set)
    output_state, cell_state, output = program.run(values)
    expected_output, expected_cell = Q_EXPECTED[cifg]
    np.testing.assert_allclose(output.reshape(-1), expected_output, atol=1)
    np.testing.assert_allclose(output_state.reshape(-1), expected_output, atol=1)
    np.testing.assert_allclose(cell_state.reshape(-1), expected_cell, atol=1)


def test_optional_inputs_given_no_value_run_the_translation_without_them() -> None:
    # One prepared model, the input gate's tensors as model inputs: given values, they make the full LSTM
    # (example 1); given no value, the coupled input gate (example 2), which runs a second translation.
    model, values, absent = quantized_lstm_model(cifg=True, omitted_as_inputs=True)
    read = constant_reader(model)
    constants = {
        (0, index): read(0, index)
        for index, operand in enumerate(model.main.operands)
        if operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)
    }
    program = create_backend(KernelSet.OPTIMIZED).compile(model, constants)
    gate = [
        np.reshape(Q_INPUT_WEIGHTS["input"], (4, 5)).astype(np.int8),
        np.reshape(Q_RECURRENT_WEIGHTS["input"], (4, 3)).astype(np.int8),
        np.asarray(Q_BIASES["input"], dtype=np.int32),
        np.asarray(Q_LAYER_NORM["input"], dtype=np.int16),
    ]
    given = list(values)
    for position, value in zip(absent, gate):
        given[position] = value
    for inputs, cifg in ((given, False), (values, True), (given, False)):
        output_state, cell_state, output = program.execute(inputs, None).outputs
        expected_output, expected_cell = Q_EXPECTED[cifg]
        np.testing.assert_allclose(output.reshape(-1), expected_output, atol=1)
        np.testing.assert_allclose(cell_state.reshape(-1), expected_cell, atol=1)


def svdf_with_a_consumer():
    """SVDF (batch 1, input 2, 2 filters of memory 3, rank 2) whose state output feeds an ADD."""
    rng = np.random.default_rng(3)
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [1, 2])
    feature = b.const(T.TENSOR_FLOAT32, rng.uniform(-0.5, 0.5, (2, 2)))
    time = b.const(T.TENSOR_FLOAT32, rng.uniform(-0.5, 0.5, (2, 3)))
    bias = b.const(T.TENSOR_FLOAT32, rng.uniform(-0.5, 0.5, 1))
    state = b.input(T.TENSOR_FLOAT32, [1, 6])
    state_out = b.temporary(T.TENSOR_FLOAT32, [1, 6])
    out = b.output(T.TENSOR_FLOAT32, [1, 1])
    b.op(O.SVDF, [x, feature, time, bias, state, b.i32(2), b.i32(0)], [state_out, out])
    total = b.output(T.TENSOR_FLOAT32, [1, 6])
    b.op(O.ADD, [state_out, state_out, b.i32(0)], [total])
    return b.model(), [rng.uniform(-1, 1, shape).astype(np.float32) for shape in ((1, 2), (1, 6))]


def test_state_outputs_are_read_after_the_kernel_ran() -> None:
    # The kernel updates its state variable in place, which LiteRT's graph does not show: with the XNNPACK
    # delegate, operators reading the variable and depending on nothing the kernel writes ran before it.
    model, values = svdf_with_a_consumer()
    check_against_reference(model, values)


def lstm_with_consumers():
    """LSTM (batch 1, input 2, 3 units, tanh) whose cell state output feeds an ADD and whose two output-state
    outputs feed a MUL."""
    rng = np.random.default_rng(3)
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [1, 2])
    weights = [b.const(T.TENSOR_FLOAT32, rng.uniform(-0.5, 0.5, (3, 2))) for _ in range(4)]
    recurrent = [b.const(T.TENSOR_FLOAT32, rng.uniform(-0.5, 0.5, (3, 3))) for _ in range(4)]
    peepholes = [b.absent(T.TENSOR_FLOAT32) for _ in range(3)]
    biases = [b.const(T.TENSOR_FLOAT32, rng.uniform(-0.5, 0.5, 3)) for _ in range(4)]
    projection = [b.absent(T.TENSOR_FLOAT32) for _ in range(2)]
    h, c = b.input(T.TENSOR_FLOAT32, [1, 3]), b.input(T.TENSOR_FLOAT32, [1, 3])
    params = [b.i32(4), b.const(T.FLOAT32, 0.0), b.const(T.FLOAT32, 0.0)]
    scratch, h_out, c_out, out = (b.temporary(T.TENSOR_FLOAT32, [1, k]) for k in (12, 3, 3, 3))
    inputs = [x, *weights, *recurrent, *peepholes, *biases, *projection, h, c, *params]
    b.op(O.LSTM, inputs, [scratch, h_out, c_out, out])
    total, product = b.output(T.TENSOR_FLOAT32, [1, 3]), b.output(T.TENSOR_FLOAT32, [1, 3])
    b.op(O.ADD, [c_out, c_out, b.i32(0)], [total])
    b.op(O.MUL, [out, h_out, b.i32(0)], [product])
    values = [rng.uniform(-1, 1, shape).astype(np.float32) for shape in ((1, 2), (1, 3), (1, 3))]
    return b.model(), values


def test_lstm_state_outputs_feed_later_operations() -> None:
    model, values = lstm_with_consumers()
    check_against_reference(model, values)


def svdf_of_unknown_batch():
    rng = np.random.default_rng(4)
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [0, 2])
    feature = b.const(T.TENSOR_FLOAT32, rng.uniform(-0.5, 0.5, (2, 2)))
    time = b.const(T.TENSOR_FLOAT32, rng.uniform(-0.5, 0.5, (2, 3)))
    state = b.input(T.TENSOR_FLOAT32, [0, 0])
    outputs = [b.output(T.TENSOR_FLOAT32, [0, 6]), b.output(T.TENSOR_FLOAT32, [0, 2])]
    b.op(O.SVDF, [x, feature, time, b.absent(T.TENSOR_FLOAT32), state, b.i32(1), b.i32(0)], outputs)
    return b.model()


@pytest.mark.parametrize("kernel_set", list(KernelSet))
def test_states_of_unknown_shape_are_sized_by_each_execution(kernel_set: KernelSet) -> None:
    model = svdf_of_unknown_batch()
    program = LiteRTProgram(translate(model, constant_reader(model)), kernel_set)
    rng = np.random.default_rng(5)
    for batch in (1, 3, 2):
        values = [rng.uniform(-1, 1, (batch, 2)).astype(np.float32), rng.uniform(-1, 1, (batch, 6)).astype(np.float32)]
        expected = run_model(model, values).outputs
        assert mismatches(model, values, expected, program.run(values)) == [], batch


def test_layer_norm_weights_an_execution_may_omit_need_what_the_lstm_without_them_needs() -> None:
    # Given at run time, the layer-norm weights may come without a value: the LSTM then runs without layer
    # normalization, at LiteRT's fixed gate scale 2^-12, which the specification's intermediate scales are not.
    model, _, _ = quantized_lstm_model(cifg=False, norms_as_inputs=True)
    reason = unsupported_reason(model, 0, 0, constant_reader(model))
    assert reason is not None and "intermediate scales" in reason
    constant_norms, _, _ = quantized_lstm_model(cifg=False)
    assert unsupported_reason(constant_norms, 0, 0, constant_reader(constant_norms)) is None
