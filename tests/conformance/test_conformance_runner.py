"""The conformance runner on a few public vectors, through the reference and through fake drivers that
misbehave in one known way each: every case must end passed, failed with the right rule, or skipped with the
right reason."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

import harness.ops
from harness.case import ConformanceCase, load_vectors, vector_files
from harness.conformance import run_conformance
from harness.conformance.driver_backend import load_device
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.conformance.conformance_fakes import Behaviour, FakeDevice

# v1_0 cases whose operations the catalogue covers: static and dynamic output shapes, float32 and quant8.
NAMES = ["add", "add_dynamic_output_shape", "add_broadcast_quant8", "add_broadcast_quant8_dynamic_output_shape"]


def v1_0() -> Path:
    return next(p for p in vector_files() if p.name == "aosp_cts_v1_0.jsonl.gz")


@pytest.fixture(scope="module")
def add_cases() -> list[ConformanceCase]:
    cases = list(load_vectors([v1_0()], names=NAMES))
    assert sorted(c.name for c in cases) == sorted(NAMES)
    return cases


def only(cases: list[ConformanceCase], name: str) -> ConformanceCase:
    return copy.deepcopy(next(c for c in cases if c.name == name))


def outcome(report, name: str):
    return next(r for r in report.results if r.name == name)


def test_reference_passes_the_add_vectors(add_cases) -> None:
    report = run_conformance(cases=add_cases)
    assert (report.passed, report.failed, report.skipped) == (4, 0, 0), report.format_failures()
    assert {r.operation for r in report.results} == {"ADD"}
    assert {r.file for r in report.results} == {"aosp_cts_v1_0.jsonl.gz"}


def test_a_correct_driver_passes_through_shared_memory_pools(add_cases) -> None:
    report = run_conformance(cases=add_cases, device=FakeDevice(), driver="fake")
    assert report.target == "fake"
    assert (report.passed, report.failed, report.skipped) == (4, 0, 0), report.format_failures()


def test_progress_is_reported_once_per_case(add_cases) -> None:
    calls = []
    run_conformance(cases=add_cases, progress=lambda done, total, result: calls.append((done, total, result.name)))
    assert [(d, t) for d, t, _ in calls] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert [n for _, _, n in calls] == [c.name for c in add_cases]


def test_wrong_values_fail_with_the_accuracy_rule_and_the_worst_element(add_cases) -> None:
    # "add": [1, 2] + [3, 4] = [4, 6]; the fake adds 1 to the first element: 5 against 4.
    report = run_conformance(cases=[only(add_cases, "add")], device=FakeDevice(Behaviour(value_error=1.0)))
    result = outcome(report, "add")
    assert result.outcome == "failed" and result.rule == "accuracy.float32"
    assert result.worst == {
        "index": [0],
        "expected": 4.0,
        "actual": 5.0,
        "allowed": pytest.approx(1e-5 + 4 * 5 * 1.1920928955078125e-7),
        "error": 1.0,
    }
    assert "output 0" in result.detail


def test_quant8_off_by_one_passes_but_off_by_two_fails(add_cases) -> None:
    case = only(add_cases, "add_broadcast_quant8")
    assert run_conformance(cases=[case], device=FakeDevice(Behaviour(value_error=1))).passed == 1
    # A uint8 result of 255 would wrap around rather than grow: pick the direction that stays in range.
    first = int(case.examples[0].outputs[0].reshape(-1)[0])
    report = run_conformance(cases=[case], device=FakeDevice(Behaviour(value_error=2 if first < 250 else -2)))
    assert outcome(report, case.name).rule == "accuracy.quant8"


def test_reported_dimensions_are_compared_with_the_expected_ones(add_cases) -> None:
    report = run_conformance(
        cases=[only(add_cases, "add_dynamic_output_shape")], device=FakeDevice(Behaviour(report_dims=[1, 2]))
    )
    result = outcome(report, "add_dynamic_output_shape")
    assert result.rule == "shape.mismatch"
    assert "[2]" in result.detail and "[1, 2]" in result.detail


def test_an_unexpected_status_fails(add_cases) -> None:
    report = run_conformance(
        cases=[only(add_cases, "add")], device=FakeDevice(Behaviour(execute_status=ErrorStatus.GENERAL_FAILURE))
    )
    result = outcome(report, "add")
    assert result.rule == "status.unexpected" and "GENERAL_FAILURE" in result.detail


def test_an_exception_escaping_the_driver_is_a_failure_with_its_traceback(add_cases) -> None:
    report = run_conformance(cases=[only(add_cases, "add")], device=FakeDevice(Behaviour(raise_on_execute=True)))
    result = outcome(report, "add")
    assert result.rule == "driver.exception"
    assert "Traceback" in result.detail and "boom in the fake driver" in result.detail


def test_a_driver_that_does_not_answer_times_out(add_cases) -> None:
    report = run_conformance(cases=[only(add_cases, "add")], device=FakeDevice(Behaviour(hang_s=1.0)), timeout=0.1)
    assert outcome(report, "add").rule == "driver.timeout"


def test_operations_the_driver_does_not_support_are_skipped(add_cases) -> None:
    report = run_conformance(cases=add_cases, device=FakeDevice(Behaviour(unsupported_ops={OperationType.ADD})))
    assert report.skipped == 4
    assert report.skipped_reasons() == {"unsupported by driver: ADD": 4}


def test_failed_preparation_for_a_type_the_capabilities_rate_unsupported_is_skipped(add_cases) -> None:
    behaviour = Behaviour(prepare_status=ErrorStatus.GENERAL_FAILURE, unsupported_types={OperandType.TENSOR_FLOAT32})
    report = run_conformance(cases=[only(add_cases, "add")], device=FakeDevice(behaviour))
    assert outcome(report, "add").reason == "unsupported by driver: ADD (TENSOR_FLOAT32)"


def test_failed_preparation_of_a_supported_model_is_a_failure(add_cases) -> None:
    report = run_conformance(
        cases=[only(add_cases, "add")], device=FakeDevice(Behaviour(prepare_status=ErrorStatus.GENERAL_FAILURE))
    )
    result = outcome(report, "add")
    assert result.rule == "status.unexpected" and "prepare_model" in result.detail


def test_ignored_outputs_are_not_compared(add_cases) -> None:
    case = only(add_cases, "add")
    case.examples[0].outputs[0] = case.examples[0].outputs[0] + np.float32(100)
    assert run_conformance(cases=[case]).failed == 1
    case.ignored_outputs = [0]
    assert run_conformance(cases=[case]).passed == 1


def test_multinomial_cases_are_skipped_with_the_reason(add_cases) -> None:
    case = only(add_cases, "add")
    case.multinomial_tolerance = 0.025
    report = run_conformance(cases=[case])
    assert report.skipped_reasons() == {"distribution comparison not implemented": 1}


def test_cases_without_a_reference_kernel_are_skipped_with_the_operation(add_cases) -> None:
    case = only(add_cases, "add")
    case.model.main.operations[0].type = OperationType.OEM_OPERATION
    report = run_conformance(cases=[case])
    assert report.skipped_reasons() == {"no reference kernel: OEM_OPERATION": 1}


def test_a_reference_kernel_crash_fails_the_case_not_the_run(add_cases, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx):
        raise TypeError("kernel bug")

    monkeypatch.setattr(harness.ops.get(OperationType.ADD), "kernel", broken)
    report = run_conformance(cases=add_cases)
    assert report.failed == 4
    assert {r.rule for r in report.results} == {"reference.exception"}
    assert "kernel bug" in report.results[0].detail


def test_a_driver_is_loaded_from_a_module_factory_spec(add_cases) -> None:
    assert isinstance(load_device("tests.conformance.conformance_fakes:create_device"), FakeDevice)
    spec = "tests.conformance.conformance_fakes:create_corrupting_device"
    report = run_conformance(cases=[only(add_cases, "add")], driver=spec)
    assert report.target == spec
    assert report.failed == 1


@pytest.mark.parametrize("spec", ["no_colon", ":factory", "module:"])
def test_a_malformed_driver_spec_is_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        load_device(spec)
