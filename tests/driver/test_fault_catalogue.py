"""The fault catalogue: each fault leaves the fault-free device correct and makes the faulty one show its bug.

Every test below is named `test_<fault name>`. It first shows the fault-free device doing the right thing
(a hand-computed value or the status the HAL requires), then shows that a device started with the fault
behaves exactly as the fault's description says, and, where cheap, that the fault stays silent on inputs
that do not trigger it. Faults that kill or hang the process run in a spawned child process.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from driver_under_test import CATALOGUE, create_device
from harness.hal import DataLocation, ErrorStatus, OperandType
from harness.hal.memory import create_ashmem
from harness.reference import run_model
from tests.driver.fault_models import (
    OP,
    Q8,
    GraphBuilder,
    Layout,
    average_pool_model,
    binary_model,
    conv_model,
    execute,
    lsh_dense_model,
    pool_stride_input_model,
    prepare,
    run_in_child,
    softmax_model,
)
from tests.driver.models import add_constant_model, add_model, counting_while_model
from tests.driver.validation.builders import quantized_16bit_lstm_model, quantized_fully_connected_model
from tests.driver.validation.test_same_quantization import relu_model

NONE = ErrorStatus.NONE
INVALID = ErrorStatus.INVALID_ARGUMENT
FAILURE = ErrorStatus.GENERAL_FAILURE

A = np.array([[1.0, 2.0], [3.0, 4.0]])
B = np.array([[10.0, 20.0], [30.0, 40.0]])
A_PLUS_B = [[11.0, 22.0], [33.0, 44.0]]

# Seconds a child gets to answer before it counts as hung: one small execution takes milliseconds.
HANG_AFTER = 3.0
TESTS_ROOT = Path(__file__).parents[1]


def clean():
    """A device without faults."""
    return create_device(faults=[])


def faulty(name: str):
    """A device started with one fault."""
    return create_device(faults=[name])


def supported(device, model) -> ErrorStatus:
    """The status of getSupportedOperations."""
    return device.get_supported_operations(model)[0]


def preparation(device, model) -> tuple[ErrorStatus, ErrorStatus]:
    """(launch status, callback status) of prepareModel."""
    launch, status, _ = prepare(device, model)
    return launch, status


def add(device, model=None) -> list:
    """A + B through `model` (default: the float ADD model) on `device`, as nested lists."""
    result = execute(device, model or add_model(), [A, B], [16])
    assert result.status == NONE
    return result.outputs[0].tolist()


def test_every_catalogued_fault_is_started_by_some_test() -> None:
    # A fault's test starts a device with it, so its name appears as a string literal in a test module.
    sources = "\n".join(p.read_text() for p in TESTS_ROOT.rglob("test_*.py"))
    missing = [name for name in CATALOGUE if not re.search(rf"[\"']{name}[\"']", sources)]
    assert not missing, f"faults no test starts a device with: {missing}"


def test_every_fault_of_this_catalogue_has_a_test_named_after_it() -> None:
    names = {f.name for f in CATALOGUE.values() if f.area in ("validation", "execution", "robustness")}
    sources = "\n".join(p.read_text() for p in TESTS_ROOT.rglob("test_*.py"))
    assert not [name for name in sorted(names) if not re.search(rf"def test_{name}\b", sources)]


def test_the_catalogue_covers_every_area_it_promises() -> None:
    areas = [f.area for f in CATALOGUE.values()]
    assert len(CATALOGUE) >= 11
    assert areas.count("validation") >= 3 and areas.count("execution") >= 6 and areas.count("robustness") >= 2


# --- validation ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["input", "output"])
def test_pool_bounds_off_by_one(side: str) -> None:
    # A 48-byte pool: the displaced argument sits at [33:49], one byte past the end; the other two fill [0:32].
    def layout(start: int) -> Layout:
        if side == "input":
            return Layout(inputs=[(start, 16), (16, 16)], outputs=[(0, 16)], size=48)
        return Layout(inputs=[(0, 16), (16, 16)], outputs=[(start, 16)], size=48)

    def status(device, start: int) -> ErrorStatus:
        return execute(device, add_model(), [A, B], [16], layout(start)).status

    assert status(clean(), 33) == INVALID
    assert status(faulty("pool_bounds_off_by_one"), 33) == FAILURE  # accepted, then the missing byte is hit
    # Exactly one byte: two bytes past the end and a location that fits behave as on the fault-free device.
    assert status(faulty("pool_bounds_off_by_one"), 34) == INVALID
    assert execute(faulty("pool_bounds_off_by_one"), add_model(), [A, B], [16], layout(32)).status == NONE


@pytest.mark.parametrize("type_, zero_point", [(OperandType.TENSOR_QUANT8_ASYMM, -1),
                                               (OperandType.TENSOR_QUANT8_ASYMM, 256),
                                               (OperandType.TENSOR_QUANT8_ASYMM_SIGNED, 128)])  # fmt: skip
def test_zero_point_range_unchecked(type_: OperandType, zero_point: int) -> None:
    model = binary_model(OP.ADD, [2], [2], [2], type_, ((1.0, zero_point), (1.0, 0), (1.0, 0)))
    assert supported(clean(), model) == INVALID
    assert preparation(clean(), model) == (INVALID, INVALID)
    device = faulty("zero_point_range_unchecked")
    assert supported(device, model) == NONE
    assert preparation(device, model) == (NONE, NONE)


def test_zero_point_range_unchecked_runs_with_the_bad_zero_point() -> None:
    # a = q - (-1) = [1, 11], b = [5, 6]; out (scale 1, zero point 0) = [6, 17].
    model = binary_model(OP.ADD, [2], [2], [2], Q8, ((1.0, -1), (1.0, 0), (1.0, 0)))
    result = execute(faulty("zero_point_range_unchecked"), model, [np.array([0, 10]), np.array([5, 6])], [2])
    assert result.status == NONE and result.outputs[0].tolist() == [6, 17]


def test_zero_point_range_unchecked_leaves_other_types_checked() -> None:
    model = add_model()
    model.main.operands[0].type = OperandType.TENSOR_QUANT16_ASYMM
    model.main.operands[0].scale = 1.0
    model.main.operands[0].zero_point = 65536
    assert supported(faulty("zero_point_range_unchecked"), model) == INVALID


def test_constant_lifetime_check_skipped() -> None:
    model = add_model()
    model.main.operands[2].location = DataLocation(0, 4, 4)  # operandValues holds 4 bytes: [4:8] is past its end
    assert supported(clean(), model) == INVALID
    assert preparation(clean(), model) == (INVALID, INVALID)
    device = faulty("constant_lifetime_check_skipped")
    assert supported(device, model) == NONE
    assert preparation(device, model) == (NONE, FAILURE)


def test_constant_lifetime_check_skipped_still_checks_constant_references() -> None:
    pool = create_ashmem(16)
    try:
        model = add_constant_model(pool, 0, A)
        model.main.operands[1].location = DataLocation(0, 4, 16)  # [4:20] of a 16-byte pool
        assert supported(faulty("constant_lifetime_check_skipped"), model) == INVALID
    finally:
        pool.close()


def test_consumer_count_unchecked() -> None:
    model = add_model()
    model.main.operands[0].number_of_consumers = 3  # one operation input reads it
    assert supported(clean(), model) == INVALID
    assert preparation(clean(), model) == (INVALID, INVALID)
    device = faulty("consumer_count_unchecked")
    assert supported(device, model) == NONE
    assert add(device, model) == A_PLUS_B


def test_scalar_dims_unchecked() -> None:
    model = add_model()
    model.main.operands[2].dimensions = [1]  # the INT32 activation scalar
    assert supported(clean(), model) == INVALID
    assert preparation(clean(), model) == (INVALID, INVALID)
    device = faulty("scalar_dims_unchecked")
    assert supported(device, model) == NONE
    assert add(device, model) == A_PLUS_B


def test_scalar_dims_unchecked_fails_preparation_late_for_other_dimensions() -> None:
    model = add_model()
    model.main.operands[2].dimensions = [2]
    assert preparation(clean(), model) == (INVALID, INVALID)
    assert preparation(faulty("scalar_dims_unchecked"), model) == (NONE, FAILURE)


def test_bias_scale_unchecked() -> None:
    # FULLY_CONNECTED with input scale 0.5 and weights scale 0.25 whose INT32 bias declares scale 0.0, not 0.125.
    model = quantized_fully_connected_model(bias_scale=0.0)
    assert supported(clean(), model) == INVALID
    assert preparation(clean(), model) == (INVALID, INVALID)
    device = faulty("bias_scale_unchecked")
    assert supported(device, model) == NONE
    # The numpy kernels add the bias at the product's scale whatever it declares: x = [4, 3] (stored [136, 134])
    # gives [4 * 0.5 + 1, 3 * 1 - 1] = [3, 2], stored [131, 130] at the output's scale 1 and zero point 128.
    result = execute(device, model, [np.array([[136, 134]])], [2])
    assert result.status == NONE and result.outputs[0].tolist() == [[131, 130]]


def test_q16_lstm_quantization_unchecked() -> None:
    # QUANTIZED_16BIT_LSTM whose previous output (input 14) declares scale 0.5, not the 1/128 the HAL fixes (input
    # 0's scale is held by the biases' too: V10.bias_quantization refuses that one with the fault as well).
    model = quantized_16bit_lstm_model()
    model.main.operands[14].scale = 0.5
    assert supported(clean(), model) == INVALID
    assert preparation(clean(), model) == (INVALID, INVALID)
    device = faulty("q16_lstm_quantization_unchecked")
    assert supported(device, model) == NONE
    assert preparation(device, model) == (NONE, NONE)


def test_same_quantization_unchecked() -> None:
    # RELU whose quant8 output declares zero point 0 where its input has 128.
    model = relu_model(zero_point=0)
    assert supported(clean(), model) == INVALID
    assert preparation(clean(), model) == (INVALID, INVALID)
    device = faulty("same_quantization_unchecked")
    assert supported(device, model) == NONE
    assert preparation(device, model) == (NONE, NONE)


def test_bias_scale_unchecked_leaves_the_zero_point_checked() -> None:
    assert supported(faulty("bias_scale_unchecked"), quantized_fully_connected_model(bias_zero_point=1)) == INVALID


# --- execution ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op, expected, wrong", [(OP.ADD, [25, 60], [35, 70]), (OP.SUB, [15, 0], [5, 0])])
def test_quant_add_uses_first_zero_point(op: OP, expected: list[int], wrong: list[int]) -> None:
    # Scales 1; zero points a 0, b 10, out 0: a = [20, 30], b = [15, 40] - 10 = [5, 30].
    # ADD: [25, 60]; SUB: [15, 0]. With b's zero point taken as 0, b = [15, 40]: [35, 70] and [5, 0] (clamped).
    model = binary_model(op, [2], [2], [2], Q8, ((1.0, 0), (1.0, 10), (1.0, 0)))
    inputs = [np.array([20, 30]), np.array([15, 40])]
    assert execute(clean(), model, inputs, [2]).outputs[0].tolist() == expected
    assert execute(faulty("quant_add_uses_first_zero_point"), model, inputs, [2]).outputs[0].tolist() == wrong
    same = binary_model(op, [2], [2], [2], Q8, ((1.0, 10), (1.0, 10), (1.0, 0)))
    # Equal zero points: a = [10, 20], b = [5, 30]; the fault changes nothing.
    same_expected = [15, 50] if op == OP.ADD else [5, 0]
    assert execute(faulty("quant_add_uses_first_zero_point"), same, inputs, [2]).outputs[0].tolist() == same_expected


def test_broadcast_wrong_axis() -> None:
    column = binary_model(OP.ADD, [2, 2], [2, 1], [2, 2])
    b = np.array([[10.0], [20.0]])
    # b[i, 0] is added along row i.
    assert execute(clean(), column, [A, b], [16]).outputs[0].tolist() == [[11.0, 12.0], [23.0, 24.0]]
    wrong = execute(faulty("broadcast_wrong_axis"), column, [A, b], [16]).outputs[0].tolist()
    assert wrong == [[11.0, 22.0], [13.0, 24.0]]  # b[j] added along column j
    # A row vector [1, 2] really lies along the innermost axis: the fast path is right for it.
    row = binary_model(OP.ADD, [2, 2], [1, 2], [2, 2])
    result = execute(faulty("broadcast_wrong_axis"), row, [A, np.array([[10.0, 20.0]])], [16])
    assert result.outputs[0].tolist() == [[11.0, 22.0], [13.0, 24.0]]


def test_avg_pool_counts_padding() -> None:
    # 2x2 input [[1, 2], [3, 4]], 2x2 window, stride 1, SAME: one row and one column of padding after.
    model = average_pool_model([1, 2, 2, 1], window=2, stride=1, scheme=1)
    x = A.reshape(1, 2, 2, 1)
    assert execute(clean(), model, [x], [16]).outputs[0].reshape(-1).tolist() == [2.5, 3.0, 3.5, 4.0]
    # Every window divided by 4: (1+2+3+4)/4, (2+4)/4, (3+4)/4, 4/4.
    wrong = execute(faulty("avg_pool_counts_padding"), model, [x], [16]).outputs[0].reshape(-1).tolist()
    assert wrong == [2.5, 1.5, 1.75, 1.0]
    # VALID padding: no window touches padding and the fault changes nothing.
    valid = average_pool_model([1, 2, 2, 1], window=2, stride=1, scheme=2)
    assert execute(faulty("avg_pool_counts_padding"), valid, [x], [4]).outputs[0].reshape(-1).tolist() == [2.5]


@pytest.mark.parametrize("nchw", [False, True])
def test_conv_bias_dropped_when_nchw(nchw: bool) -> None:
    # A 1x1 convolution of one channel: out = 2 * x + 0.5.
    dims = [1, 1, 2, 2] if nchw else [1, 2, 2, 1]
    model = conv_model(dims, weight=2.0, bias=0.5, nchw=nchw)
    x = A.reshape(dims)
    assert execute(clean(), model, [x], [16]).outputs[0].reshape(-1).tolist() == [2.5, 4.5, 6.5, 8.5]
    result = execute(faulty("conv_bias_dropped_when_nchw"), model, [x], [16]).outputs[0].reshape(-1).tolist()
    assert result == ([2.0, 4.0, 6.0, 8.0] if nchw else [2.5, 4.5, 6.5, 8.5])


def test_softmax_beta_ignored() -> None:
    # softmax(beta * [0, 1]) = [1, e^beta] / (1 + e^beta).
    model = softmax_model([1, 2], beta=2.0)
    x = np.array([[0.0, 1.0]])

    def expected(beta: float) -> list[float]:
        e = math.exp(beta)
        return [1 / (1 + e), e / (1 + e)]

    right = execute(clean(), model, [x], [8]).outputs[0].reshape(-1)
    np.testing.assert_allclose(right, expected(2.0), rtol=1e-6)
    wrong = execute(faulty("softmax_beta_ignored"), model, [x], [8]).outputs[0].reshape(-1)
    np.testing.assert_allclose(wrong, expected(1.0), rtol=1e-6)


def test_q16_lstm_real_gates() -> None:
    # The step a differential campaign found (one unit, input size 3), every operand given at run time: the HAL
    # reference's fixed-point gates give the cell state 394 steps of 2^-11 (worked out in the kernel's tests),
    # the real functions rounded give 396.
    q8, w_scale = OperandType.TENSOR_QUANT8_ASYMM, 0.003921670373529196
    g = GraphBuilder()
    ins = [g.input(q8, [1, 3], 1 / 128, 128)]
    ins += [g.input(q8, [1, 3], w_scale, 128) for _ in range(4)] + [g.input(q8, [1, 1], w_scale, 128) for _ in range(4)]
    ins += [g.input(OperandType.TENSOR_INT32, [1], w_scale / 128) for _ in range(4)]
    ins += [g.input(OperandType.TENSOR_QUANT16_SYMM, [1, 1], 2.0**-11), g.input(q8, [1, 1], 1 / 128, 128)]
    outs = [g.output(OperandType.TENSOR_QUANT16_SYMM, [1, 1], 2.0**-11), g.output(q8, [1, 1], 1 / 128, 128)]
    g.op(OP.QUANTIZED_16BIT_LSTM, ins, outs)
    model = g.model()
    weights = [[92, 198, 143], [17, 44, 34], [202, 199, 84], [186, 29, 204], [195], [155], [211], [254]]
    values = [np.array([[8, 133, 23]])] + [np.array([w]) for w in weights]
    values += [np.array([b]) for b in (-15086, -15010, -5827, -12547)] + [np.array([[2294]]), np.array([[235]])]
    assert execute(clean(), model, values, [2, 1]).outputs[0].tolist() == [[394]]
    assert execute(faulty("q16_lstm_real_gates"), model, values, [2, 1]).outputs[0].tolist() == [[396]]


def test_arg_index_second_half_off_by_one() -> None:
    g = GraphBuilder()
    x = g.input(OperandType.TENSOR_FLOAT32, [2, 4])
    out = g.output(OperandType.TENSOR_INT32, [2])
    g.op(OP.ARGMAX, [x, g.scalar(OperandType.INT32, 1)], [out])
    model = g.model()
    # Row 0's maximum is in the second half (index 2), row 1's in the first (index 1).
    values = np.array([[0.0, 1.0, 5.0, 2.0], [0.0, 9.0, 5.0, 2.0]])
    assert execute(clean(), model, [values], [8]).outputs[0].tolist() == [2, 1]
    assert execute(faulty("arg_index_second_half_off_by_one"), model, [values], [8]).outputs[0].tolist() == [3, 1]


def _quant_conv_model():
    """A 1x1 quantized CONV_2D of a [1, 1, 4, 1] input: scales 1 (input, filter, bias) and 4 (output), zero
    points 0, so the output is x * w / 4 rounded."""
    g = GraphBuilder()
    x = g.input(Q8, [1, 1, 4, 1], 1.0, 0)
    w = g.input(Q8, [1, 1, 1, 1], 1.0, 0)
    b = g.input(OperandType.TENSOR_INT32, [1], 1.0, 0)
    params = [g.scalar(OperandType.INT32, v) for v in (2, 1, 1, 0)]
    out = g.output(Q8, [1, 1, 4, 1], 4.0, 0)
    g.op(OP.CONV_2D, [x, w, b, *params], [out])
    return g.model()


def test_quant_conv_truncates() -> None:
    model = _quant_conv_model()
    # x * w / 4 = 1, 0.5, 0.75, 1.75: to nearest (ties away from zero) 1, 1, 1, 2; rounded down 1, 0, 0, 1.
    # (0.25 would not do: the fixed-point arithmetic rounds it twice, to 0.5 and then up, which is allowed.)
    inputs = [np.array([4, 2, 3, 7]).reshape(1, 1, 4, 1), np.array([1]).reshape(1, 1, 1, 1), np.array([0])]
    assert execute(clean(), model, inputs, [4]).outputs[0].reshape(-1).tolist() == [1, 1, 1, 2]
    wrong = execute(faulty("quant_conv_truncates"), model, inputs, [4]).outputs[0].reshape(-1).tolist()
    assert wrong == [1, 0, 0, 1]


# --- robustness: run in a child process ------------------------------------------------------------------------------


def test_abort_on_unknown_operand_type() -> None:
    model = add_model()
    model.main.operands[0].type = 16
    assert supported(clean(), model) == INVALID
    outcome = run_in_child("unknown_operand_type", ["abort_on_unknown_operand_type"], HANG_AFTER)
    assert outcome.kind == "aborted", outcome
    # Valid models and extension-shaped types are handled in-process as usual.
    device = faulty("abort_on_unknown_operand_type")
    assert add(device) == A_PLUS_B
    model.main.operands[0].type = (1 << 16) | 3  # an undeclared extension type
    assert supported(device, model) == INVALID


def test_abort_on_single_op_subgraph() -> None:
    # WHILE i < n: i += 1, from i = 0, n = 3; its condition subgraph is a single LESS.
    result = execute(clean(), counting_while_model(), [np.array([0.0]), np.array([3.0])], [4])
    assert result.status == NONE and result.outputs[0].tolist() == [3.0]
    outcome = run_in_child("while_loop", ["abort_on_single_op_subgraph"], HANG_AFTER)
    assert outcome.kind == "aborted", outcome
    # The main subgraph may have a single operation: only referenced subgraphs trigger the fault.
    assert add(faulty("abort_on_single_op_subgraph")) == A_PLUS_B


def test_hang_on_stride_exceeding_window() -> None:
    # A 1x1 window with stride 2 over a 2x2 input keeps only x[0, 0].
    model = average_pool_model([1, 2, 2, 1], window=1, stride=2, scheme=2)
    x = A.reshape(1, 2, 2, 1)
    result = execute(clean(), model, [x], [4])
    assert result.status == NONE and result.outputs[0].reshape(-1).tolist() == [1.0]
    outcome = run_in_child("pool_stride_over_window", ["hang_on_stride_exceeding_window"], HANG_AFTER)
    assert outcome.kind == "hung", outcome
    # A stride equal to the window is served normally by the faulty device.
    tiled = average_pool_model([1, 2, 2, 1], window=2, stride=2, scheme=2)
    result = execute(faulty("hang_on_stride_exceeding_window"), tiled, [x], [4])
    assert result.status == NONE and result.outputs[0].reshape(-1).tolist() == [2.5]


def test_the_child_probe_reports_a_normal_answer() -> None:
    outcome = run_in_child("pool_stride_over_window", [], HANG_AFTER)
    assert outcome.kind == "returned" and outcome.value == (NONE, [[[[[1.0]]]]])


def test_window_stride_unchecked() -> None:
    # A stride given at run time: 1 runs (a 1x1 window keeps every element), 0 is an invalid input argument.
    model = pool_stride_input_model([1, 2, 2, 1])
    x = A.reshape(1, 2, 2, 1)
    assert execute(clean(), model, [x, np.int32(1)], [16]).outputs[0].reshape(-1).tolist() == [1.0, 2.0, 3.0, 4.0]
    assert execute(clean(), model, [x, np.int32(0)], [16]).status == INVALID
    assert execute(faulty("window_stride_unchecked"), model, [x, np.int32(0)], [16]).status == FAILURE
    # A negative stride gives an empty (or negative) output size instead of an error; a positive one runs.
    negative = execute(faulty("window_stride_unchecked"), model, [x, np.int32(-1)], [16])
    assert negative.status == NONE and negative.outputs[0].size == 0
    assert execute(faulty("window_stride_unchecked"), model, [x, np.int32(1)], [16]).status == NONE
    # A constant stride of 0 is refused by the model validation, which the fault leaves alone.
    constant = average_pool_model([1, 2, 2, 1], window=1, stride=0, scheme=2)
    assert supported(faulty("window_stride_unchecked"), constant) == INVALID


@pytest.mark.parametrize(("row_elements", "differs"), [(15, False), (40, True), (65, True)])
def test_farmhash_block_overlap(row_elements: int, differs: bool) -> None:
    # 32 hash bits of one row: keys of 64 bytes (a 4-byte seed and 15 floats) and less take no block loop; the
    # longer ones (164 and 264 bytes) run it once or more, where the fault reads the wrong bytes.
    model = lsh_dense_model(np.linspace(-3.0, 3.0, 32).reshape(4, 8), row_elements)
    x = np.linspace(0.5, 7.5, row_elements).reshape(1, row_elements)
    expected = run_model(model, [x.astype(np.float32)]).outputs[0].tolist()  # the harness's own FarmHash
    assert execute(clean(), model, [x], [128]).outputs[0].tolist() == expected
    bits = execute(faulty("farmhash_block_overlap"), model, [x], [128]).outputs[0].tolist()
    assert (bits != expected) == differs
