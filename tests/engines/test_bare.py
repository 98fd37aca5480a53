"""Bare runs: a case's engine model run on each of the engine's kernel sets outside the HAL plumbing, each run
judged against the reference (harness.oracle.accuracy.compare per output)."""

from __future__ import annotations

import signal

import numpy as np
import pytest

from driver_under_test import create_device, create_litert_device
from harness.engines import (
    Expected,
    ExpectedOutput,
    NotExportable,
    RunOutcome,
    bare_runs,
    engine_inputs,
    engine_model_of,
    expected_of,
)
from harness.hal import OperandType as T
from tests.engines.planted import aborting_device, add_case, wrong_operation_device


def test_a_correct_engine_model_matches_the_reference_on_every_kernel_set() -> None:
    case = add_case(T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=3)
    runs = bare_runs(case, engine_model_of(case, create_litert_device()))
    assert list(runs.runs) == ["optimized", "xnnpack", "reference"]
    assert runs.showing() == () and runs.device_kernel_set == "optimized" and runs.format == "tflite"
    for run in runs.runs.values():
        assert run.outcome == RunOutcome.OUTPUTS and run.matches
        assert [c.ok for c in run.comparisons] == [True]
        assert run.outputs[0].dtype == case.reference().outputs[0].dtype


def test_a_wrong_engine_model_shows_on_every_kernel_set_with_the_worst_element() -> None:
    case = add_case()
    runs = bare_runs(case, engine_model_of(case, wrong_operation_device()), kernel_sets=["reference"])
    run = runs.runs["reference"]
    assert runs.showing() == ("reference",) and not run.matches
    (comparison,) = run.comparisons
    assert not comparison.ok and comparison.mismatched == 6 and comparison.rule == "accuracy.float32"
    assert run.describe().startswith("reference: output 0 float32: 6 of 6 elements out of tolerance")
    assert run.to_json()["comparisons"][0]["worst"]["index"] == list(comparison.worst.index)


def test_a_crash_is_reported_with_the_signal_that_killed_the_engine() -> None:
    case = add_case(T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=3)
    runs = bare_runs(case, engine_model_of(case, aborting_device()), kernel_sets=["optimized", "reference"])
    for run in runs.runs.values():
        assert run.outcome == RunOutcome.CRASH and run.signal == signal.SIGABRT and not run.matches
        assert run.describe().endswith("crash, killed by SIGABRT")
    assert runs.to_json()["runs"]["optimized"]["signal_name"] == "SIGABRT"


def test_expected_outputs_carry_the_tolerance_of_their_type() -> None:
    expected = expected_of(add_case(T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=3))
    (out,) = expected.outputs
    assert (out.atol, out.rtol, out.compared, out.type_name) == (1.0, 0.0, True, "TENSOR_QUANT8_ASYMM")
    assert expected.tolerance_json()["outputs"][0]["class"] == "quant8" and expected.compared


def test_only_a_device_that_hands_out_an_engine_model_of_a_case_to_execute_can_be_run_bare() -> None:
    case = add_case()
    with pytest.raises(NotExportable, match="no engine model"):
        engine_model_of(case, create_device())  # the numpy backend has no engine format
    with pytest.raises(NotExportable, match="does not hand out engine models"):
        engine_model_of(case, object())
    with pytest.raises(NotExportable, match="no request"):
        engine_model_of(case.replace(request=None), create_litert_device())
    broken = case.to_json()
    broken["model"]["operands"][0]["type"] = "TENSOR_INT32"  # ADD of int32 and float32 (V10)
    with pytest.raises(NotExportable, match="model is invalid"):
        engine_model_of(type(case).from_json(broken), create_litert_device())


def test_a_case_without_a_value_for_every_input_has_nothing_to_run() -> None:
    with pytest.raises(NotExportable, match="gives 1 input values for main's 2 inputs"):
        engine_inputs(add_case().replace(inputs=add_case().inputs[:1]))


def test_an_output_the_hal_leaves_unspecified_is_compared_by_shape_only() -> None:
    out = ExpectedOutput(0, T.TENSOR_FLOAT32, np.zeros((2, 2), np.float32), 1e-5, 0.0, False, "unspecified")
    expected = Expected((out,), relaxed=False, quantized_operations=0, reference_status="NONE")
    (same_shape,) = expected.compare([np.ones((2, 2), np.float32)])
    assert same_shape.ok and same_shape.ignored
    (other_shape,) = expected.compare([np.ones(3, np.float32)])
    assert not other_shape.ok and other_shape.shape_message
