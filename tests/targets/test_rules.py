"""The judging functions of harness.oracle.rules on hand-made driver answers, each against the claim it names."""

from __future__ import annotations

import numpy as np
import pytest

from harness.hal import NO_TIMING_INFO, ErrorStatus, OperandType, OutputShape, Timing
from harness.oracle import rules
from harness.oracle.rules import Expectation
from harness.oracle.verdict import RULES, Outcome
from harness.paths import Outcome as PathOutcome
from harness.targets._common import DriverRaised, call, status_of

S = ErrorStatus
MEASURED = Timing(time_on_device=10, time_in_driver=20)


def ids(findings) -> list[str]:
    return [f.rule for f in findings]


def test_every_rule_is_registered_once_under_its_claim() -> None:
    for rule_id in [
        "status.valid_model_accepted",
        "status.invalid_model_rejected",
        "status.invalid_preparation_rejected",
        "status.launch_matches_callback",
        "status.prepared_model_iff_none",
        "status.expected",
        "status.invalid_request_rejected",
        "outputs.match_reference",
        "shapes.reported",
        "shapes.absent_on_failure",
        "timing.absent_unless_measured",
        "timing.in_driver_covers_on_device",
        "timing.within_wall_time",
        "paths.agree",
        *(f"accuracy.{c}" for c in ("float32", "float16", "int32", "quant8", "quant16", "bool")),
    ]:
        assert rule_id in RULES and RULES[rule_id].claim


# --- Preparation -----------------------------------------------------------------------------------------------


def test_a_valid_model_needs_none_and_one_flag_per_operation() -> None:
    assert rules.judge_supported_operations(S.NONE, [True, False], 2) is None
    assert rules.judge_supported_operations(S.INVALID_ARGUMENT, [], 2).rule == rules.VALID_MODEL_ACCEPTED
    assert rules.judge_supported_operations(S.NONE, [True], 2).rule == rules.VALID_MODEL_ACCEPTED


def test_a_fully_supported_valid_model_must_prepare() -> None:
    pm = object()
    assert rules.judge_valid_preparation(S.NONE, S.NONE, pm, True) == (None, False)
    finding, unsupported = rules.judge_valid_preparation(S.NONE, S.GENERAL_FAILURE, None, True)
    assert finding.rule == rules.VALID_MODEL_ACCEPTED and not unsupported


def test_an_unsupported_operation_allows_general_failure_but_not_invalid_argument() -> None:
    assert rules.judge_valid_preparation(S.GENERAL_FAILURE, S.GENERAL_FAILURE, None, False) == (None, True)
    assert rules.judge_valid_preparation(S.NONE, S.GENERAL_FAILURE, None, False) == (None, True)
    finding, _ = rules.judge_valid_preparation(S.INVALID_ARGUMENT, S.INVALID_ARGUMENT, None, False)
    assert finding.rule == rules.VALID_MODEL_ACCEPTED


def test_launch_and_callback_statuses_must_agree() -> None:
    finding, _ = rules.judge_valid_preparation(S.GENERAL_FAILURE, S.NONE, object(), True)
    assert finding.rule == rules.LAUNCH_MATCHES_CALLBACK


@pytest.mark.parametrize(("status", "prepared"), [(S.NONE, None), (S.GENERAL_FAILURE, object())])
def test_a_prepared_model_comes_exactly_with_none(status, prepared) -> None:
    assert rules.judge_preparation_consistent(S.NONE, status, prepared).rule == rules.PREPARED_MODEL_IFF_NONE


def test_an_invalid_model_is_rejected_by_both_calls() -> None:
    bad = S.INVALID_ARGUMENT
    assert rules.judge_model_rejected(bad, [], bad, bad, None) is None
    for gso, flags, launch, status, pm in [
        (S.NONE, [True], bad, bad, None),  # accepted by getSupportedOperations
        (bad, [False], bad, bad, None),  # flags with INVALID_ARGUMENT
        (bad, [], S.NONE, bad, None),  # launched fine, rejected only through the callback
        (bad, [], bad, S.GENERAL_FAILURE, None),  # wrong callback status
        (bad, [], S.NONE, S.NONE, object()),  # prepared
        (bad, [], bad, bad, object()),  # a prepared model with INVALID_ARGUMENT
    ]:
        assert rules.judge_model_rejected(gso, flags, launch, status, pm).rule == rules.INVALID_MODEL_REJECTED


def test_invalid_preparation_arguments_are_rejected() -> None:
    bad = S.INVALID_ARGUMENT
    assert rules.judge_preparation_rejected(bad, bad, None) is None
    assert rules.judge_preparation_rejected(S.NONE, S.NONE, object()).rule == rules.INVALID_PREPARATION_REJECTED


# --- Execution -------------------------------------------------------------------------------------------------


def outcome(path="sync", status=S.NONE, shapes=(), timing=NO_TIMING_INFO, **kw) -> PathOutcome:
    return PathOutcome(path, status, list(shapes), timing, **kw)


FULL = Expectation(S.NONE, [OutputShape([2, 3])], fully_specified=True)
DYNAMIC = Expectation(S.NONE, [OutputShape([2, 3]), OutputShape([4])], fully_specified=False)
TOO_SMALL = Expectation(
    S.OUTPUT_INSUFFICIENT_SIZE, [OutputShape([2, 3], True), OutputShape([4], False)], fully_specified=False
)


def test_a_correct_execution_breaks_nothing() -> None:
    assert rules.judge_execution(outcome(shapes=[OutputShape([2, 3])]), FULL) == []
    assert rules.judge_execution(outcome(), FULL) == []  # fully specified: shapes may be omitted
    assert rules.judge_execution(outcome(shapes=[OutputShape([2, 3]), OutputShape([4])]), DYNAMIC) == []


def test_the_status_must_be_the_prescribed_one() -> None:
    assert ids(rules.judge_execution(outcome(status=S.GENERAL_FAILURE), FULL)) == [rules.STATUS_EXPECTED]
    missed = Expectation(S.MISSED_DEADLINE_PERSISTENT)
    assert rules.judge_execution(outcome(status=S.MISSED_DEADLINE_TRANSIENT), missed) == []
    assert ids(rules.judge_execution(outcome(status=S.NONE), missed)) == [rules.STATUS_EXPECTED]
    failed = Expectation(S.GENERAL_FAILURE)
    assert rules.judge_execution(outcome(status=S.GENERAL_FAILURE), failed) == []
    assert ids(rules.judge_execution(outcome(status=S.NONE), failed)) == [rules.STATUS_EXPECTED]


def test_an_invalid_argument_found_at_run_time_must_be_answered_as_such() -> None:
    invalid = Expectation(S.INVALID_ARGUMENT)
    assert rules.judge_execution(outcome(status=S.INVALID_ARGUMENT), invalid) == []
    assert ids(rules.judge_execution(outcome(status=S.GENERAL_FAILURE), invalid)) == [rules.STATUS_EXPECTED]
    assert ids(rules.judge_execution(outcome(status=S.NONE), invalid)) == [rules.STATUS_EXPECTED]
    # getExecutionInfo cannot answer INVALID_ARGUMENT: a fenced execution may report it as a general failure.
    assert invalid.acceptable("fenced") == {S.INVALID_ARGUMENT, S.GENERAL_FAILURE}
    # An unsupported operation still allows a general failure.
    assert S.GENERAL_FAILURE in Expectation(S.INVALID_ARGUMENT, unsupported_ok=True).acceptable("sync")


def test_unsupported_operations_and_timeouts_widen_the_accepted_statuses() -> None:
    unsupported = Expectation(S.NONE, [OutputShape([1])], unsupported_ok=True)
    assert rules.judge_execution(outcome(status=S.GENERAL_FAILURE), unsupported) == []
    timed = Expectation(S.NONE, [OutputShape([1])], timing_dependent=True)
    assert rules.judge_execution(outcome(status=S.MISSED_DEADLINE_PERSISTENT), timed) == []


def test_an_unspecified_result_is_not_judged_on_status() -> None:
    assert rules.judge_execution(outcome(status=S.GENERAL_FAILURE), Expectation(S.NONE, unspecified=True)) == []


def test_none_must_report_the_actual_dimensions_of_every_output() -> None:
    assert ids(rules.judge_execution(outcome(), DYNAMIC)) == [rules.SHAPES_REPORTED]  # missing
    wrong = [OutputShape([2, 3]), OutputShape([0])]  # the declared, not the actual, dimensions
    assert ids(rules.judge_execution(outcome(shapes=wrong), DYNAMIC)) == [rules.SHAPES_REPORTED]
    unsure = [OutputShape([2, 3]), OutputShape([4], is_sufficient=False)]
    assert ids(rules.judge_execution(outcome(shapes=unsure), DYNAMIC)) == [rules.SHAPES_REPORTED]


def test_insufficient_size_marks_exactly_the_too_small_outputs() -> None:
    right = [OutputShape([2, 3], True), OutputShape([4], False)]
    assert rules.judge_execution(outcome(status=S.OUTPUT_INSUFFICIENT_SIZE, shapes=right), TOO_SMALL) == []
    partial = [OutputShape([2, 3], True), OutputShape([0], False)]  # 0 = unknown is allowed
    assert rules.judge_execution(outcome(status=S.OUTPUT_INSUFFICIENT_SIZE, shapes=partial), TOO_SMALL) == []
    swapped = [OutputShape([2, 3], False), OutputShape([4], True)]
    found = rules.judge_execution(outcome(status=S.OUTPUT_INSUFFICIENT_SIZE, shapes=swapped), TOO_SMALL)
    assert ids(found) == [rules.SHAPES_REPORTED]
    wrong_dims = [OutputShape([2, 3], True), OutputShape([5], False)]
    found = rules.judge_execution(outcome(status=S.OUTPUT_INSUFFICIENT_SIZE, shapes=wrong_dims), TOO_SMALL)
    assert ids(found) == [rules.SHAPES_REPORTED]


def test_only_sizes_differ_when_dimensions_or_none_against_insufficient_size_are_all_that_is_wrong() -> None:
    # What the target hands to the reference's stability probes: an output whose size hinges on an edge.
    def differ(o, expected=DYNAMIC) -> bool:
        return rules.only_sizes_differ(rules.judge_execution(o, expected), o, expected)

    assert differ(outcome(shapes=[OutputShape([2, 3]), OutputShape([5])]))
    assert differ(outcome(status=S.OUTPUT_INSUFFICIENT_SIZE, shapes=[OutputShape([2, 3]), OutputShape([5], False)]))
    assert differ(outcome(shapes=[OutputShape([2, 3], True), OutputShape([4], True)]), TOO_SMALL)
    assert not differ(outcome(shapes=[OutputShape([2, 3]), OutputShape([4])]))  # nothing wrong at all
    assert not differ(outcome(status=S.GENERAL_FAILURE))
    timed = outcome(shapes=[OutputShape([2, 3]), OutputShape([5])], timing=Timing(5, 9))  # timing not asked for
    assert not differ(timed)


def test_the_fenced_path_may_fail_a_too_small_output_in_several_ways() -> None:
    for status in (S.OUTPUT_INSUFFICIENT_SIZE, S.INVALID_ARGUMENT, S.GENERAL_FAILURE):
        assert rules.judge_execution(outcome("fenced", status), TOO_SMALL) == []
    assert ids(rules.judge_execution(outcome("fenced", S.NONE), TOO_SMALL)) == [rules.STATUS_EXPECTED]


def test_failures_carry_no_output_shapes() -> None:
    found = rules.judge_execution(
        outcome(status=S.GENERAL_FAILURE, shapes=[OutputShape([2, 3])]), Expectation(S.GENERAL_FAILURE)
    )
    assert ids(found) == [rules.SHAPES_ABSENT_ON_FAILURE]


def test_timing_only_when_measured_and_none() -> None:
    assert rules.judge_timing(outcome(timing=MEASURED), measure=True) is None
    assert rules.judge_timing(outcome(timing=MEASURED), measure=False).rule == rules.TIMING_ABSENT_UNLESS_MEASURED
    failed = outcome(status=S.GENERAL_FAILURE, timing=MEASURED)
    assert rules.judge_timing(failed, measure=True).rule == rules.TIMING_ABSENT_UNLESS_MEASURED
    half = Timing(time_on_device=2**64 - 1, time_in_driver=5)
    assert rules.judge_timing(outcome(timing=half), measure=True) is None
    fenced = outcome("fenced", timing=NO_TIMING_INFO, timing_launched=MEASURED)
    assert rules.judge_timing(fenced, measure=False).rule == rules.TIMING_ABSENT_UNLESS_MEASURED


def test_time_in_driver_covers_time_on_device() -> None:
    inverted = Timing(time_on_device=20, time_in_driver=10)
    assert rules.judge_timing(outcome(timing=inverted), measure=True).rule == rules.TIMING_IN_DRIVER_COVERS_ON_DEVICE


def test_path_notes_name_their_rules() -> None:
    launch = outcome("async", S.GENERAL_FAILURE, launch_status=S.INVALID_ARGUMENT)
    assert rules.judge_notes(launch).rule == rules.LAUNCH_MATCHES_CALLBACK
    twice = outcome("async", launch_status=S.NONE, notes=["callback notified 2 times"])
    assert rules.judge_notes(twice).rule == rules.CALLBACK_NOTIFIED_ONCE
    no_fence = outcome("fenced", notes=["NONE returned without a fence or callback"])
    assert rules.judge_notes(no_fence).rule == rules.FENCED_LAUNCH_DELIVERS_FENCE


def test_an_invalid_request_is_rejected_without_shapes_or_timing() -> None:
    bad = S.INVALID_ARGUMENT
    assert rules.judge_rejected_request(outcome(status=bad)) is None
    for o in [
        outcome(status=S.NONE),
        outcome(status=S.GENERAL_FAILURE),
        outcome(status=bad, shapes=[OutputShape([1])]),
        outcome(status=bad, timing=MEASURED),
        outcome("fenced", bad, timing_launched=MEASURED),
    ]:
        assert rules.judge_rejected_request(o).rule == rules.INVALID_REQUEST_REJECTED


def test_paths_must_agree_when_the_reference_cannot_say() -> None:
    assert rules.judge_paths_agree({"sync": S.NONE, "async": S.NONE}) is None
    assert rules.judge_paths_agree({"sync": S.NONE, "async": S.GENERAL_FAILURE}).rule == rules.PATHS_AGREE


# --- Values ----------------------------------------------------------------------------------------------------


def test_values_within_the_type_tolerance_pass() -> None:
    e = np.array([1.0, 2.0], np.float32)
    assert rules.judge_outputs("sync", [e + np.float32(1e-6)], [e], [OperandType.TENSOR_FLOAT32], False) is None


@pytest.mark.parametrize(
    ("operand_type", "expected", "actual", "rule"),
    [
        (OperandType.TENSOR_FLOAT32, [1.0], [1.001], "accuracy.float32"),
        (OperandType.TENSOR_FLOAT16, [1.0], [1.02], "accuracy.float16"),
        (OperandType.TENSOR_INT32, [5], [7], "accuracy.int32"),
        (OperandType.TENSOR_QUANT8_ASYMM, [5], [7], "accuracy.quant8"),
        (OperandType.TENSOR_QUANT16_SYMM, [5], [7], "accuracy.quant16"),
        (OperandType.TENSOR_BOOL8, [1], [0], "accuracy.bool"),
    ],
)
def test_values_beyond_the_tolerance_break_the_accuracy_rule_of_their_class(
    operand_type, expected, actual, rule
) -> None:
    from harness.hal import numpy_dtype

    dtype = numpy_dtype(operand_type)
    e, a = np.array(expected, dtype), np.array(actual, dtype)
    assert rules.judge_outputs("sync", [a], [e], [operand_type], False).rule == rule


def test_an_output_of_the_wrong_shape_does_not_match_the_reference() -> None:
    e = np.zeros((2, 2), np.float32)
    finding = rules.judge_outputs("sync", [np.zeros(3, np.float32)], [e], [OperandType.TENSOR_FLOAT32], False)
    assert finding.rule == rules.OUTPUTS_MATCH_REFERENCE


# --- Verdicts --------------------------------------------------------------------------------------------------


def test_the_first_finding_makes_the_verdict() -> None:
    a = rules.Breach(rules.STATUS_EXPECTED, "a", path="async")
    b = rules.Breach(rules.SHAPES_REPORTED, "b")
    verdict = rules.verdict_of([a, b], "execution")
    assert (verdict.outcome, verdict.rule, verdict.extras["path"]) == (Outcome.FAILURE, rules.STATUS_EXPECTED, "async")
    assert verdict.extras["also"] == ["[shapes.reported] b"]
    assert rules.verdict_of([], "execution", unsupported=True).ok


def test_an_escaped_exception_names_the_innermost_frames_outside_the_harness() -> None:
    def driver_method() -> None:
        raise RuntimeError("boom")

    try:
        driver_method()
    except RuntimeError as exc:
        verdict = rules.exception_verdict("prepareModel", exc, "validation")
    assert verdict.rule == "driver.no_exception_escapes"
    assert verdict.frames[0] == "tests/targets/test_rules.py:driver_method"
    assert "boom" in verdict.details


def test_an_exception_without_driver_frames_is_a_bad_return_value() -> None:
    # A status the HAL does not define fails in the harness's own conversion, under a HAL call.
    with pytest.raises(DriverRaised) as info:
        call("prepareModel", status_of, 99)
    verdict = rules.exception_verdict(info.value.call, info.value.error, "validation")
    assert verdict.rule == rules.RETURNS_HAL_VALUES and verdict.frames == ()


def test_no_reported_time_exceeds_the_wall_time_measured_around_the_execution() -> None:
    assert rules.judge_timing(outcome(timing=MEASURED, elapsed_ns=20_000), measure=True) is None
    assert rules.judge_timing(outcome(timing=Timing(10, 10**9)), measure=True) is None  # nothing measured
    slack = Timing(10, 20 + rules.TIMING_SLACK_US)
    assert rules.judge_timing(outcome(timing=slack, elapsed_ns=20_000), measure=True) is None
    past = Timing(10, 21 + rules.TIMING_SLACK_US)
    assert rules.judge_timing(outcome(timing=past, elapsed_ns=20_000), measure=True).rule == (
        rules.TIMING_WITHIN_WALL_TIME
    )
    launched = outcome("fenced", timing=MEASURED, timing_launched=Timing(10, 10**9), elapsed_ns=20_000)
    assert rules.judge_timing(launched, measure=True).rule == rules.TIMING_WITHIN_WALL_TIME


def test_a_model_over_an_unusable_pool_gets_no_operation_reading_it_supported_and_no_preparation() -> None:
    failed = (S.GENERAL_FAILURE, S.GENERAL_FAILURE, None)
    judge = rules.judge_unusable_model_pool
    assert judge(S.NONE, [True, False], [1], 2, *failed) is None
    assert judge(S.INVALID_ARGUMENT, [], [1], 2, S.INVALID_ARGUMENT, S.INVALID_ARGUMENT, None) is None
    assert judge(S.NONE, [True, True], [1], 2, *failed).rule == rules.UNUSABLE_MEMORY_REFUSED
    assert judge(S.NONE, [False], [0], 2, *failed).rule == rules.RETURNS_HAL_VALUES
    assert judge(S.GENERAL_FAILURE, [False, False], [1], 2, *failed).rule == rules.RETURNS_HAL_VALUES
    assert judge(S.NONE, [True, False], [1], 2, S.NONE, S.NONE, object()).rule == rules.UNUSABLE_MEMORY_REFUSED
    assert judge(S.NONE, [True, False], [1], 2, S.NONE, S.GENERAL_FAILURE, object()).rule == (
        rules.PREPARED_MODEL_IFF_NONE
    )


def test_a_driver_finishing_a_loop_the_reference_timed_out_is_not_held_to_shapes_it_cannot_know() -> None:
    timed_out = Expectation(S.MISSED_DEADLINE_TRANSIENT, timing_dependent=True)
    finished = outcome(shapes=[OutputShape([2, 3]), OutputShape([1])])
    assert rules.judge_execution(finished, timed_out) == []
    assert ids(rules.judge_execution(finished, Expectation(S.MISSED_DEADLINE_TRANSIENT))) == [rules.STATUS_EXPECTED]


def test_a_driver_finishing_a_loop_the_reference_timed_out_may_find_its_output_too_small() -> None:
    timed_out = Expectation(S.MISSED_DEADLINE_TRANSIENT, timing_dependent=True)
    assert S.OUTPUT_INSUFFICIENT_SIZE in timed_out.acceptable("sync")
    assert S.OUTPUT_INSUFFICIENT_SIZE not in Expectation(S.MISSED_DEADLINE_TRANSIENT).acceptable("sync")
