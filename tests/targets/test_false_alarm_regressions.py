"""Cases that were once false alarms on the fault-free driver, and the oracle criteria that settled them."""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from driver_under_test import create_device
from harness.case import Case
from harness.gen import RandomSource
from harness.hal import (
    DataLocation,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
)
from harness.oracle.accuracy import RANDOM_GRAPH_QUANT_ATOL_CAP, tolerance_for
from harness.reference import run_model
from harness.targets import TARGETS
from tests.verdicts import assert_passes

CASES = sorted((Path(__file__).parent / "false_alarms").glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_former_false_alarms_pass_on_the_fault_free_driver(path: Path) -> None:
    # 4948...: quant8 PRELU -> SOFTMAX -> PRELU, off by 2 (random-graph criterion).
    # 960a...: float32 TANH of a large constant, squared, then FLOOR: the driver's last-ULP tanh flips the floor
    # (an ill-conditioned output, found by the stability probe).
    # lstm-scratch-chain: an LSTM's implementation-defined scratch output feeds a second LSTM, whose outputs are
    # then implementation-defined too.
    # avgpool-quant-tie: a quant8 AVERAGE_POOL_2D whose window averages to an exact half step (109.5), then
    # DEQUANTIZE: the fixed-point driver rounds the tie up, the float64 reference lands below it by noise, and the
    # float32 output cannot absorb one quantization step (an edge found by the probe's quantization nudge).
    # memory_domain-quant8-chain: a quant8 TRANSPOSE_CONV_2D then MUL written into a driver buffer, off by 2 when
    # read back: the buffer's values get the random-graph criterion of their model like any output.
    # tanh-output-zero-point: a minimized case whose quant8 TANH output has zero point 0 where the HAL fixes 128;
    # the driver used to accept such models (it now refuses them, V10.fixed_output_quantization). Its inputs, which the
    # minimizer had laid over one another with different values, sit apart (the case format now refuses that).
    # burst-invalid-bidirectional-rnn: a minimized burst case whose model the reference validator refuses (see the
    # test below); the numpy driver computes the same on both paths.
    # lstm-layer-norm-equal-gates: a float32 UNIDIRECTIONAL_SEQUENCE_LSTM with layer normalization whose gates are
    # nearly equal across its three units: one ULP of input noise moves its cell state by 7e-5 (the stability
    # probe's alternating nudge of given tensors shows it); the driver and ONNX Runtime agree, 2.7e-5 from float64.
    # request-fc-squared-double-rounding: quant8 FULLY_CONNECTED (RELU6) at 127.49999 steps, which the HAL's double
    # rounding takes to 128, then MUL of it by itself: 139 where the reference's 127 gives 136 (the probe's lean).
    # bidirectional-lstm-layer-norm-equal-rows: a BIDIRECTIONAL_SEQUENCE_LSTM with layer normalization whose weight
    # rows are equal in pairs: the exact gates are equal, the reference's outputs all 0, while float32 rounding grows
    # through the recurrence to -0.16 (the given tensors' nudges must differ from row to row to show it).
    # memory_domain-fc-squared-double-rounding: the request case's FULLY_CONNECTED (RELU6) then MUL of it by itself,
    # written into a driver buffer and read back 3 steps off: the read-back is judged under the reference's probes
    # like any output (the lean shows the edge).
    # memory_domain-transpose-conv-same-run-time-stride: TRANSPOSE_CONV_2D with SAME and an output height of 4 drawn
    # for stride 1, then a stride of 3 from a driver buffer: SAME with an output other than input * stride, where
    # types.hal defines no padding (the reference leaves the result unspecified).
    # differential-while-mul-squared-rounding: a WHILE then MUL of a value by itself, twice, quant8: the engines
    # following the HAL's fixed-point arithmetic and those rounding once land 5 steps apart on two elements, both
    # within the span of the reference's probed results (correct rounding either way, amplified by the squares).
    # box-nms-iou-at-threshold: BOX_WITH_NMS_LIMIT whose two boxes overlap with an IoU of exactly 0.1, its hard-NMS
    # threshold: the float64 reference keeps the second box (5 kept), float32 arithmetic suppresses it (4, the
    # driver's); the native probe shows the edge, and output sizes that hinge on one are not judged.
    # bidirectional-lstm-layer-norm-float32-drift: a float32 BIDIRECTIONAL_SEQUENCE_LSTM over 23 steps with layer
    # normalization over two units: computed in float32 (numpy, ONNX Runtime, and the reference's native probe, to
    # the last digit) its cell state lands 1.4e-5 from float64; no single nudge shows it.
    # differential-resize-softmax-mixed-ties: quant8 RESIZE_BILINEAR of a 2 x 2 input to 4 x 4 (exact half steps),
    # then SOFTMAX: ONNX Runtime resolves the ties element by element (its output is the exact softmax of its
    # intermediate), 7 steps from the others; nudging every tie the same way shifts a row's logits alike, which
    # SOFTMAX cancels, so the probes scatter the nudge too and its value lies within their span.
    # request-generate-proposals-box-at-min-size: quantized GENERATE_PROPOSALS whose one box is exactly min_size
    # (0.5) high: float64 keeps it (3 proposals), the driver's float32 arithmetic lands a rounding below (2); the
    # reference's size and IoU comparisons resolve values within float32 rounding of their threshold the other way
    # under the stability probe, and output sizes that hinge on such an edge are not judged.
    case = Case.from_json(json.loads(path.read_text()))
    assert_passes(TARGETS[case.target].run(case, create_device(faults=[])), case)


def test_quantized_outputs_of_larger_graphs_get_one_unit_per_quantized_operation() -> None:
    q8 = OperandType.TENSOR_QUANT8_ASYMM
    assert tolerance_for(q8) == (1.0, 0.0)
    assert tolerance_for(q8, quantized_operations=2) == (2.0, 0.0)
    assert tolerance_for(q8, quantized_operations=50) == (float(RANDOM_GRAPH_QUANT_ATOL_CAP), 0.0)
    f32 = OperandType.TENSOR_FLOAT32
    assert tolerance_for(f32, quantized_operations=5) == tolerance_for(f32)


def _floor_of_square() -> Model:
    f32 = OperandType.TENSOR_FLOAT32
    lt = OperandLifeTime
    operands = [
        Operand(f32, [2], 2, lifetime=lt.SUBGRAPH_INPUT),
        Operand(OperandType.INT32, [], 1, lifetime=lt.CONSTANT_COPY, location=DataLocation(0, 0, 4)),
        Operand(f32, [2], 1, lifetime=lt.TEMPORARY_VARIABLE),
        Operand(f32, [2], 0, lifetime=lt.SUBGRAPH_OUTPUT),
    ]
    ops = [Operation(OperationType.MUL, [0, 0, 1], [2]), Operation(OperationType.FLOOR, [2], [3])]
    return Model(main=Subgraph(operands, ops, [0], [3]), operand_values=struct.pack("<i", 0))


def test_the_stability_probe_moves_only_outputs_sitting_on_an_edge() -> None:
    # floor(1.0 * 1.0) = 1 sits on FLOOR's edge: one epsilon down gives 0. floor(1.5 * 1.5) = 2 does not move.
    model = _floor_of_square()
    x = np.array([1.0, 1.5], dtype=np.float32)
    exact = run_model(model, [x]).outputs[0]
    nudged = run_model(model, [x], perturbation=-1).outputs[0]
    assert exact.tolist() == [1.0, 2.0]
    assert nudged[0] == 0.0  # a jump of a whole unit
    assert abs(float(nudged[1]) - 2.0) <= 2.0 * np.finfo(np.float32).eps  # the probe's own nudge, nothing more


def _average_then_dequantize() -> Model:
    q8, f32, i32 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_FLOAT32, OperandType.INT32
    lt = OperandLifeTime
    scale = 0.03250713273882866  # not a power of two: x / scale * scale is not exact in float64
    # AVERAGE_POOL_2D, explicit padding 0, strides 1, a 2 x 1 filter over a [1, 2, 1, 1] NHWC input.
    scalars = [0, 0, 0, 0, 1, 1, 1, 2, 0]
    operands = [Operand(q8, [1, 2, 1, 1], 1, scale, 128, lt.SUBGRAPH_INPUT)]
    operands += [Operand(i32, [], 1, lifetime=lt.CONSTANT_COPY, location=DataLocation(0, 4 * k, 4)) for k in range(9)]
    operands += [
        Operand(q8, [1, 1, 1, 1], 1, scale, 128, lt.TEMPORARY_VARIABLE),
        Operand(f32, [1, 1, 1, 1], 0, lifetime=lt.SUBGRAPH_OUTPUT),
    ]
    ops = [
        Operation(OperationType.AVERAGE_POOL_2D, list(range(10)), [10]),
        Operation(OperationType.DEQUANTIZE, [10], [11]),
    ]
    return Model(main=Subgraph(operands, ops, [0], [11]), operand_values=struct.pack("<9i", *scalars))


def test_the_stability_probe_pushes_quantization_ties_both_ways() -> None:
    # avg(109, 110) = 109.5 steps: a tie, which the probe's two nudges round to different steps. A mean of whole
    # steps is no tie and stays put.
    model = _average_then_dequantize()
    tie = np.array([109, 110], dtype=np.uint8).reshape(1, 2, 1, 1)
    one_way = run_model(model, [tie], perturbation=-1).outputs[0]
    other_way = run_model(model, [tie], perturbation=1).outputs[0]
    assert abs(round(float(other_way.item() - one_way.item()) / 0.03250713273882866)) == 1
    plain = np.array([109, 109], dtype=np.uint8).reshape(1, 2, 1, 1)
    assert run_model(model, [plain], perturbation=-1).outputs[0].item() == pytest.approx(
        run_model(model, [plain], perturbation=1).outputs[0].item(), rel=1e-5
    )


def test_an_accepted_invalid_model_is_charged_as_such_not_as_an_accuracy_failure(monkeypatch) -> None:
    # With the driver's check of fixed output quantization taken out, the driver accepts the invalid TANH model
    # and computes it as if the output had the zero point the HAL fixes (128, not the model's 0): the verdict names
    # the acceptance, with the reference validator's reason, not the wrong values.
    import driver_under_test.validation.model as driver_model_validation
    from driver_under_test.backends.numpy.kernels import registry

    monkeypatch.setattr(driver_model_validation, "check_fixed_quantization", lambda *args: None)
    tanh = registry.lookup(OperationType.TANH)
    assert tanh is not None

    def tanh_with_the_fixed_zero_point(call):
        return [np.clip(out.astype(np.int32) + 128, 0, 255).astype(out.dtype) for out in tanh.fn(call)]

    monkeypatch.setitem(
        registry._KERNELS, OperationType.TANH, dataclasses.replace(tanh, fn=tanh_with_the_fixed_zero_point)
    )
    path = Path(__file__).parent / "false_alarms" / "execution-tanh-output-zero-point.json"
    case = Case.from_json(json.loads(path.read_text()))
    verdict = TARGETS[case.target].run(case, create_device(faults=[]))
    assert not verdict.ok
    assert verdict.rule == "status.invalid_model_rejected", verdict.rule
    assert "scale/zeroPoint must be" in verdict.details


def test_a_burst_on_a_prepared_invalid_model_is_charged_as_the_acceptance(monkeypatch) -> None:
    # A burst case the generic minimizer reduced into a BIDIRECTIONAL_SEQUENCE_RNN with rank-1 recurrent weights,
    # which the reference validator refuses and the driver (checking operand types, not ranks) prepares. On LiteRT,
    # whose answer for it varies from run to run, a burst and executeSynchronously then disagreed (the numpy
    # kernels refuse it at execution on both paths alike). Here the session's judgement is planted: whatever it
    # finds on a model the driver should have refused, the verdict names the acceptance.
    from harness.oracle.rules import Breach, verdict_of
    from harness.targets.burst_session import MATCHES_SYNCHRONOUS

    target = TARGETS["burst"]
    mismatch = Breach(MATCHES_SYNCHRONOUS, "outputs differ from executeSynchronously's", "planted")
    monkeypatch.setattr(type(target), "_session", lambda self, case, state, reuse: verdict_of([mismatch], "burst"))
    path = Path(__file__).parent / "false_alarms" / "burst-invalid-bidirectional-rnn.json"
    invalid = Case.from_json(json.loads(path.read_text()))
    verdict = target.run(invalid, create_device(faults=[]))
    assert verdict.rule == "status.invalid_model_rejected", verdict.rule
    assert "BIDIRECTIONAL_SEQUENCE_RNN" in verdict.details
    assert "burst.matches_synchronous" in verdict.details
    # On a valid model the session's finding stands.
    valid = TARGETS["burst"].decode(RandomSource(3))
    assert target.run(valid, create_device(faults=[])).rule == MATCHES_SYNCHRONOUS
