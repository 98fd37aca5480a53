"""The execution and request targets on hand-written ADD cases (expected sums computed by hand)."""

from __future__ import annotations

import json

import pytest

from driver_under_test import create_device
from harness.case import Case
from harness.gen.source import GenerationRejected
from harness.gen.sources import RandomSource
from harness.oracle.verdict import Outcome
from harness.targets import TARGETS
from harness.targets.execution import ExecutionTarget
from harness.targets.request import RequestTarget
from tests.targets import fakes
from tests.targets.cases import add_model, add_request, execution_case
from tests.verdicts import assert_passes

EXECUTION = TARGETS["execution"]
REQUEST = TARGETS["request"]


@pytest.fixture(scope="module")
def device():
    return create_device(faults=[])


def test_a_valid_request_passes_on_every_path(device) -> None:
    for measure in (False, True):
        case = execution_case(measure=measure)
        assert_passes(EXECUTION.run(case, device), case)


def test_dynamic_output_dimensions_pass(device) -> None:
    case = execution_case(add_model(out_dims=[0, 0]))
    assert_passes(EXECUTION.run(case, device), case)


def test_a_too_small_output_must_be_reported_insufficient(device) -> None:
    # 4 float32 sums need 16 bytes; 8 are given.
    case = execution_case(add_model(out_dims=[0, 0]), add_request(out_length=8))
    assert_passes(EXECUTION.run(case, device), case)


def test_a_wrong_output_value_breaks_the_float32_accuracy_rule(device) -> None:
    # The first sum is 1 + 10 = 11; float32 allows 1e-5 + 5.96e-7 * 11 = 1.66e-5 of error there.
    within = EXECUTION.run(execution_case(), fakes.WrapsPreparedModel(device, fakes.sync_shifts_first_output(1e-5)))
    assert within.ok, within.details
    beyond = EXECUTION.run(execution_case(), fakes.WrapsPreparedModel(device, fakes.sync_shifts_first_output(5e-5)))
    assert (beyond.outcome, beyond.rule, beyond.extras["path"]) == (Outcome.FAILURE, "accuracy.float32", "sync")


def test_a_fenced_timing_longer_than_the_execution_breaks_within_wall_time(device) -> None:
    verdict = EXECUTION.run(execution_case(measure=True), fakes.WrapsPreparedModel(device, fakes.FencedTimingTooLong))
    assert (verdict.rule, verdict.extras["path"]) == ("timing.within_wall_time", "fenced")
    unmeasured = EXECUTION.run(execution_case(), fakes.WrapsPreparedModel(device, fakes.FencedTimingTooLong))
    assert unmeasured.ok, unmeasured.details


def test_a_zero_loop_timeout_runs_a_model_without_while_and_refusing_it_breaks_status_expected(device) -> None:
    case = execution_case()
    case.execution["loopTimeoutNs"] = 0
    assert_passes(EXECUTION.run(case, device), case)
    verdict = EXECUTION.run(case, fakes.WrapsPreparedModel(device, fakes.RefusesZeroLoopTimeout))
    assert (verdict.rule, verdict.extras["path"]) == ("status.expected", "sync")


def test_an_exception_in_execute_names_the_driver_frame(device) -> None:
    verdict = EXECUTION.run(execution_case(), fakes.WrapsPreparedModel(device, fakes.AsyncRaises))
    assert verdict.rule == "driver.no_exception_escapes"
    assert verdict.frames[0] == "tests/targets/fakes.py:execute"


def test_an_execution_callback_that_never_comes_is_a_hang(device) -> None:
    target = ExecutionTarget(timeout_s=0.2)
    verdict = target.run(execution_case(), fakes.WrapsPreparedModel(device, fakes.AsyncNeverNotifies))
    assert (verdict.outcome, verdict.rule) == (Outcome.HANG, "driver.answers_in_time")


def test_an_invalid_request_is_rejected_by_the_default_driver(device) -> None:
    request = add_request()
    request["outputs"][0]["offset"] = 8  # 8 + 16 bytes in a 16-byte pool: V31
    case = execution_case(request=request, target="request", valid=False, kind="request", mutation="by hand")
    assert_passes(REQUEST.run(case, device), case)


def test_a_driver_that_accepts_an_invalid_request_breaks_invalid_request_rejected(device) -> None:
    request = add_request()
    request["outputs"][0]["poolIndex"] = 5  # V35
    case = execution_case(request=request, target="request", valid=False, kind="request", mutation="by hand")
    verdict = REQUEST.run(case, fakes.WrapsPreparedModel(device, fakes.AcceptsAnyRequest))
    assert (verdict.rule, verdict.extras["path"]) == ("status.invalid_request_rejected", "sync")


def constant_overlap_case() -> Case:
    """ADD of an input and a CONSTANT_REFERENCE, whose output is placed over the constant itself (V34)."""
    model = add_model()
    model["operands"][1] = {
        "type": "TENSOR_FLOAT32", "dimensions": [2, 2], "scale": 0.0, "zeroPoint": 0,
        "lifetime": "CONSTANT_REFERENCE", "location": {"poolIndex": 0, "offset": 0, "length": 16},
        "value": [10.0, 20.0, 30.0, 40.0],
    }  # fmt: skip
    model["inputIndexes"] = [0]
    model["pools"] = [{"kind": "ashmem", "size": 16}]
    request = add_request()
    request["inputs"] = request["inputs"][:1]
    request["pools"][1] = {"modelPool": 0}  # {"modelPool": k}: the model's own pool k, the same memory
    case = execution_case(model, request, target="request", valid=False, kind="request", mutation="by hand")
    case.inputs = case.inputs[:1]
    return case


def test_an_output_over_a_model_constant_replays_over_the_same_memory(device) -> None:
    direct = RequestTarget(paths=("sync", "async", "fenced"))
    case = constant_overlap_case()
    assert_passes(direct.run(case, device), case)
    verdict = direct.run(constant_overlap_case(), fakes.WrapsPreparedModel(device, fakes.AcceptsAnyRequest))
    assert verdict.rule == "status.invalid_request_rejected"


def test_the_burst_path_rejects_an_output_over_a_model_constant(device) -> None:
    # Once a finding: the driver compared memories by handle identity, which a burst slot's copy does not share.
    case = constant_overlap_case()
    assert_passes(RequestTarget(paths=("burst",)).run(case, device), case)


@pytest.mark.parametrize("name", ["execution", "request"])
def test_generated_cases_replay_identically_from_their_json(device, name) -> None:
    target = TARGETS[name]
    for seed in range(15):
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        loaded = Case.from_json(json.loads(case.dumps()))
        assert loaded == case
        first, again = target.run(case, device), target.run(loaded, device)
        assert (first.outcome, first.rule, first.title) == (again.outcome, again.rule, again.title)
