"""The validation target on hand-written cases: the default driver passes, each broken fake breaks its rule."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from driver_under_test import create_device
from harness.case import Case, close_model_pools, model_from_json
from harness.gen import ModelConfig, generate_model
from harness.gen.handles import HANDLE_CHANGES
from harness.gen.source import GenerationRejected
from harness.gen.sources import RandomSource
from harness.hal import OperandType, OperationType
from harness.oracle.verdict import Outcome
from harness.targets import TARGETS
from harness.targets.validation import ValidationTarget
from tests.targets import fakes
from tests.targets.cases import add_model, validation_case, with_bad_scale
from tests.targets.model_view import driver_view
from tests.verdicts import assert_passes

TARGET = TARGETS["validation"]


@pytest.fixture(scope="module")
def device():
    return create_device(faults=[])


def test_a_valid_model_is_accepted(device) -> None:
    case = validation_case()
    verdict = TARGET.run(case, device)
    assert_passes(verdict, case)
    assert verdict.extras == {}


def test_an_invalid_model_rejected_by_the_driver_is_a_success(device) -> None:
    assert TARGET.run(validation_case(with_bad_scale(add_model()), kind="model"), device).ok


@pytest.mark.parametrize(("preference", "priority"), [(3, 1), (-1, 1), (1, 3), (1, -1)])
def test_invalid_preparation_arguments_rejected_by_the_driver_are_a_success(device, preference, priority) -> None:
    case = validation_case(kind="preparation", preference=preference, priority=priority)
    assert TARGET.run(case, device).ok


def test_a_driver_that_accepts_an_invalid_model_breaks_invalid_model_rejected(device) -> None:
    verdict = TARGET.run(validation_case(with_bad_scale(add_model()), kind="model"), fakes.AcceptsEverything(device))
    assert (verdict.outcome, verdict.rule) == (Outcome.FAILURE, "status.invalid_model_rejected")


def test_a_driver_that_accepts_invalid_arguments_breaks_invalid_preparation_rejected(device) -> None:
    verdict = TARGET.run(validation_case(kind="preparation", preference=7), fakes.AcceptsEverything(device))
    assert (verdict.outcome, verdict.rule) == (Outcome.FAILURE, "status.invalid_preparation_rejected")


def test_rejecting_only_through_the_callback_breaks_invalid_model_rejected(device) -> None:
    case = validation_case(with_bad_scale(add_model()), kind="model")
    verdict = TARGET.run(case, fakes.RejectsOnlyThroughCallback(device))
    assert verdict.rule == "status.invalid_model_rejected"
    assert "launch NONE" in verdict.title


def test_one_flag_too_many_breaks_valid_model_accepted(device) -> None:
    verdict = TARGET.run(validation_case(), fakes.OneFlagTooMany(device))
    assert verdict.rule == "status.valid_model_accepted"


def test_a_driver_that_rejects_a_generated_quantized_lstm_breaks_valid_model_accepted(device) -> None:
    # A QUANTIZED_LSTM model as the generator draws it: the driver accepts it; a driver whose operand table for
    # the operation is wrong rejects it, which the target reports.
    config = ModelConfig(operations=frozenset({OperationType.QUANTIZED_LSTM}), max_operations=1, control_flow=False)
    g = generate_model(RandomSource(3), config)
    case = Case("validation", g.model_json, execution={"preference": 1, "priority": 1}, expect={"valid": True})
    assert TARGET.run(case, device).ok
    verdict = TARGET.run(case, fakes.RejectsOperation(device, OperationType.QUANTIZED_LSTM))
    assert (verdict.outcome, verdict.rule) == (Outcome.FAILURE, "status.valid_model_accepted")
    g.close()


def test_an_exception_in_a_hal_call_is_a_failure_with_the_driver_frames(device) -> None:
    verdict = TARGET.run(validation_case(), fakes.RaisesInSupportedOperations(device))
    assert (verdict.outcome, verdict.rule) == (Outcome.FAILURE, "driver.no_exception_escapes")
    assert verdict.frames[0] == "tests/targets/fakes.py:get_supported_operations"
    assert "IndexError" in verdict.title and "Traceback" in verdict.details


def test_a_status_the_hal_does_not_define_breaks_returns_hal_values(device) -> None:
    verdict = TARGET.run(validation_case(), fakes.UnknownStatus(device))
    assert verdict.rule == "driver.returns_hal_values"


def test_a_callback_that_never_comes_is_a_hang(device) -> None:
    verdict = ValidationTarget(timeout_s=0.2).run(validation_case(), fakes.NeverCallsBack(device))
    assert (verdict.outcome, verdict.rule) == (Outcome.HANG, "driver.answers_in_time")


def test_an_unsupported_operation_is_a_success_marked_unsupported() -> None:
    # A device that computes on no float32 tensor cannot run ADD on TENSOR_FLOAT32.
    narrow = create_device(faults=[], operand_types=[OperandType.INT32, OperandType.TENSOR_INT32])
    verdict = TARGET.run(validation_case(), narrow)
    assert verdict.ok and verdict.extras == {"unsupported": True}


def test_a_mutation_that_left_the_model_valid_is_judged_as_valid(device) -> None:
    verdict = TARGET.run(validation_case(add_model(), kind="model"), device)
    assert verdict.ok and "reference validator says valid" in verdict.extras["disputed"]
    verdict = TARGET.run(validation_case(add_model(), kind="model"), fakes.OneFlagTooMany(device))
    assert verdict.rule == "status.valid_model_accepted"


def test_a_case_replays_identically_from_its_json(device) -> None:
    for seed in range(30):
        try:
            case = TARGET.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        loaded = Case.from_json(json.loads(case.dumps()))
        assert loaded == case
        assert TARGET.run(loaded, device).to_json() == TARGET.run(case, device).to_json()


def test_decoding_is_deterministic() -> None:
    for seed in range(10):
        try:
            first = TARGET.decode(RandomSource(seed)).dumps()
        except GenerationRejected:
            continue
        assert TARGET.decode(RandomSource(seed)).dumps() == first


def test_the_model_decode_hands_to_run_is_the_one_its_json_replays() -> None:
    compared = 0
    for seed in range(300):
        try:
            case = TARGET.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        assert case.live is not None
        rebuilt = model_from_json(case.model)
        try:
            assert driver_view(case.live.model) == driver_view(rebuilt), (seed, case.expect)
        finally:
            case.close()
            close_model_pools(rebuilt)
        compared += 1
    assert compared > 250


def test_a_case_gives_the_same_json_after_its_run_as_right_after_decoding(device) -> None:
    # The JSON is made when first read, from what decode made: running the case must not change it, for valid,
    # mutated and preparation cases alike.
    kinds = set()
    for seed in range(200):
        try:
            before = TARGET.decode(RandomSource(seed)).dumps()
        except GenerationRejected:
            continue
        case = TARGET.decode(RandomSource(seed))
        TARGET.run(case, device)
        assert case.dumps() == before, (seed, case.expect)
        kinds.add(case.expect.get("kind", "valid"))
    assert kinds == {"valid", "model", "preparation", "pool"}


def _pool_cases(seeds) -> list[tuple[int, Case]]:
    found = []
    for seed in seeds:
        try:
            case = TARGET.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        if case.expect.get("kind") == "pool":
            found.append((seed, case))
        else:
            case.close()
    return found


def test_models_over_unusual_pools_are_drawn_and_pass_on_the_default_driver(device) -> None:
    handles: Counter = Counter()
    for seed, case in _pool_cases(range(700)):
        handles[case.expect["handle"]] += 1
        verdict = TARGET.run(case, device)
        case.close()
        assert verdict.ok, (seed, case.expect, verdict.rule, verdict.title)
    assert set(handles) == set(HANDLE_CHANGES), handles


def test_reporting_an_operation_over_an_unusable_pool_supported_breaks_unusable_refused(device) -> None:
    lying = fakes.ReportsEverythingSupported(device)
    judged = 0
    for seed, case in _pool_cases(range(200)):
        if case.expect["memory"] == "refused":
            verdict = TARGET.run(case, lying)
            assert verdict.rule == "memory.unusable_refused", (seed, verdict.rule, verdict.title)
            judged += 1
        case.close()
    assert judged >= 5


def test_operation_cases_draw_each_operation_mutation_on_models_of_its_operations(device) -> None:
    # A mutation of particular operations finds a place in few of the usual models (a quantized bias in about one
    # in twenty): operation cases make the model for the mutation, which then applies to most of them.
    target = ValidationTarget(kinds=("operation",))
    drawn: Counter = Counter()
    for seed in range(120):
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        drawn[case.expect["mutation"]] += 1
        assert case.expect["kind"] == "model"
        verdict = target.run(case, device)
        case.close()
        assert verdict.ok, (seed, case.expect, verdict.rule, verdict.title)
    operation_mutations = (
        "bias_quantization_off",
        "fixed_quantization_off",
        "quantization_unlike_input",
        "parameter_out_of_range",
    )
    assert all(drawn[m] > 10 for m in operation_mutations), drawn


def test_a_driver_that_ignores_bias_scales_fails_operation_cases() -> None:
    faulty = create_device(faults=["bias_scale_unchecked"])
    target = ValidationTarget(kinds=("operation",))
    rules = Counter()
    for seed in range(60):
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        if case.expect["mutation"] == "bias_quantization_off":
            rules[target.run(case, faulty).rule] += 1
        case.close()
    assert rules["status.invalid_model_rejected"] > 0, rules
