"""Verdict rules: each a stable id named as a claim, and the functions that judge a driver's answers against it.

The judging functions take what the driver answered (statuses, flags, output shapes, timing, output arrays) and
what the oracle expects, and return `Breach`es: the rule broken, a title and details. They never call a driver;
the targets do that and turn the first breach into a Verdict (`verdict_of`).

Rules (the full claim of each is in harness.oracle.verdict.RULES):

| rule id | in short |
|---|---|
| status.valid_model_accepted | valid model: NONE + one flag per operation; prepared unless a flag is false |
| status.invalid_model_rejected | invalid model: INVALID_ARGUMENT from both calls, no flags, no prepared model |
| status.invalid_preparation_rejected | bad preference/priority: INVALID_ARGUMENT at launch and callback |
| status.launch_matches_callback | a launch status other than NONE is the callback's status |
| status.prepared_model_iff_none | a prepared model comes exactly with NONE |
| status.expected | an execution ends with the status the reference prescribes |
| status.invalid_request_rejected | invalid request: INVALID_ARGUMENT on every path, no shapes, no timing |
| outputs.match_reference | a successful execution writes outputs of the reference's shape |
| accuracy.<class> | output values within the O2 tolerance (float32 float16 int32 quant8 quant16 bool) |
| accuracy.exact | outputs the HAL defines exactly (indices, counts, hash bits, integer arithmetic) are equal |
| accuracy.rounding_bias | a quantized output's mean signed error is within what correct rounding can produce |
| shapes.reported | NONE: actual dimensions; OUTPUT_INSUFFICIENT_SIZE: exactly the too-small outputs marked |
| shapes.absent_on_failure | no output shapes unless NONE or OUTPUT_INSUFFICIENT_SIZE |
| timing.absent_unless_measured | UINT64_MAX unless measured and NONE |
| timing.in_driver_covers_on_device | timeInDriver >= timeOnDevice when both are reported |
| timing.within_wall_time | no reported time exceeds the wall time the harness measured around the execution |
| paths.agree | all execution paths end with the same status when the reference cannot prescribe one |
| driver.callback_notified_once | a callback is notified exactly once |
| driver.fenced_launch_delivers_fence | executeFenced returning NONE returns a fence and a callback |
| driver.returns_hal_values | HAL calls return HAL values (known statuses, results of the right shape) |
| driver.no_exception_escapes | no exception escapes a HAL call (shared, verdict.py) |
| driver.answers_in_time | every callback and fence is signalled in time, else HANG (shared, verdict.py) |
"""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.hal import NO_TIMING, ErrorStatus, OutputShape, Timing
from harness.oracle.accuracy import compare, within_tolerance
from harness.oracle.verdict import (
    DRIVER_ANSWERS,
    NO_EXCEPTION_ESCAPES,
    Outcome,
    Verdict,
    define_rule,
)

# --- Rule ids --------------------------------------------------------------------------------------------------

VALID_MODEL_ACCEPTED = define_rule(
    "status.valid_model_accepted",
    "a valid model gets NONE and one flag per operation from getSupportedOperations; with every flag true "
    "prepareModel succeeds, otherwise it may fail with GENERAL_FAILURE only",
)
INVALID_MODEL_REJECTED = define_rule(
    "status.invalid_model_rejected",
    "an invalid model gets INVALID_ARGUMENT (no flags) from getSupportedOperations and INVALID_ARGUMENT at launch "
    "and through the callback of prepareModel, with no prepared model",
)
INVALID_PREPARATION_REJECTED = define_rule(
    "status.invalid_preparation_rejected",
    "prepareModel with an execution preference or priority outside its enumeration is INVALID_ARGUMENT at launch "
    "and through the callback, with no prepared model",
)
LAUNCH_MATCHES_CALLBACK = define_rule(
    "status.launch_matches_callback", "a launch status other than NONE is the status the callback reports"
)
PREPARED_MODEL_IFF_NONE = define_rule(
    "status.prepared_model_iff_none", "the preparation callback delivers a prepared model exactly when it says NONE"
)
STATUS_EXPECTED = define_rule(
    "status.expected", "an execution ends with the status the reference prescribes for the model and request"
)
INVALID_REQUEST_REJECTED = define_rule(
    "status.invalid_request_rejected",
    "an invalid request is INVALID_ARGUMENT on every execution path, with no output shapes and no timing",
)
OUTPUTS_MATCH_REFERENCE = define_rule(
    "outputs.match_reference", "a successful execution writes every output with the shape the reference computes"
)
ACCURACY_CLASSES = ("float32", "float16", "int32", "quant8", "quant16", "bool")
ACCURACY = {
    cls: define_rule(f"accuracy.{cls}", f"{cls} output values are within the O2 tolerance of the reference")
    for cls in ACCURACY_CLASSES
}
ACCURACY_EXACT = define_rule(
    "accuracy.exact",
    "outputs the HAL defines exactly (indices, counts, hash bits, copies, integer arithmetic) equal the reference's "
    "(harness.oracle.exactness)",
)
ROUNDING_BIAS = define_rule(
    "accuracy.rounding_bias",
    "a quantized output's mean signed error stays within what correct rounding can produce, even when every "
    "element is within tolerance (harness.oracle.bias)",
)
SHAPES_REPORTED = define_rule(
    "shapes.reported",
    "NONE reports every output's actual dimensions (or none when all outputs are fully specified); "
    "OUTPUT_INSUFFICIENT_SIZE marks exactly the too-small outputs isSufficient = false",
)
SHAPES_ABSENT_ON_FAILURE = define_rule(
    "shapes.absent_on_failure", "output shapes are empty unless the status is NONE or OUTPUT_INSUFFICIENT_SIZE"
)
TIMING_ABSENT_UNLESS_MEASURED = define_rule(
    "timing.absent_unless_measured", "timing is UINT64_MAX unless it was asked for and the status is NONE"
)
TIMING_IN_DRIVER_COVERS_ON_DEVICE = define_rule(
    "timing.in_driver_covers_on_device", "when both times are reported, timeInDriver >= timeOnDevice"
)
TIMING_WITHIN_WALL_TIME = define_rule(
    "timing.within_wall_time",
    "a reported timeOnDevice or timeInDriver is no longer than the wall time the harness measured from the call "
    "launching the execution to the return of the call delivering the timing (plus the clocks' granularity)",
)
UNUSABLE_MEMORY_REFUSED = define_rule(
    "memory.unusable_refused",
    "a memory the driver must not use (a hardware-buffer descriptor with a wrong magic, version, format or size; a "
    "non-BLOB hardware buffer holding constants) fails the call that needs it with GENERAL_FAILURE or "
    "INVALID_ARGUMENT: no prepared model, no operation reading it reported supported, and an execution gives no "
    "output shapes and no timing (D13, D25)",
)
MEMORY_BOUNDED = define_rule(
    "limits.memory_bounded",
    "no case makes the driver's process grow its resident memory past the per-case budget: a size the driver will "
    "not run is refused with a status, not by exhausting memory (D26)",
)
SIZE_REFUSED_OR_RUN = define_rule(
    "limits.refused_or_run",
    "a model or request too big for the driver is refused with RESOURCE_EXHAUSTED_* or GENERAL_FAILURE from "
    "prepareModel or the execution (getSupportedOperations may call it unsupported); when the driver runs it, its "
    "answer is right (D26)",
)
PATHS_AGREE = define_rule(
    "paths.agree", "every execution path ends with the same status when the reference cannot prescribe one"
)
CALLBACK_NOTIFIED_ONCE = define_rule("driver.callback_notified_once", "a callback is notified exactly once")
FENCED_LAUNCH_DELIVERS_FENCE = define_rule(
    "driver.fenced_launch_delivers_fence", "executeFenced that returns NONE also returns a fence and a callback"
)
RETURNS_HAL_VALUES = define_rule(
    "driver.returns_hal_values", "every HAL call returns values of the HAL's types (known statuses, right shapes)"
)

_SHAPED_STATUSES = (ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE)
MISSED_DEADLINE = frozenset({ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT})
# A failure the reference reports for bad data may be reported by a driver with either of these.
_DATA_FAILURES = frozenset({ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT})
# A fenced execution cannot report output shapes: a too-small output may end it in any of these.
_FENCED_INSUFFICIENT = frozenset(
    {ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE}
)


@dataclass(frozen=True)
class Breach:
    """One broken rule within one case: its id, a one-line title and the details that explain it."""

    rule: str
    title: str
    details: str = ""
    path: str | None = None  # the execution path it was seen on, if any
    output: int | None = None  # the main output it concerns, if one
    locus: str = ""  # where in the input it broke (e.g. "TANH": the operation writing that output), for signatures


def _name(status: object) -> str:
    try:
        return ErrorStatus(status).name
    except ValueError:
        return f"status {status!r}"


def _names(statuses: frozenset[ErrorStatus] | set[ErrorStatus]) -> str:
    return " or ".join(sorted(s.name for s in statuses))


# --- Preparation --------------------------------------------------------------------------------------------------


def judge_supported_operations(status: ErrorStatus, flags: Sequence[bool], operation_count: int) -> Breach | None:
    """A valid model: NONE and exactly one flag per operation of main."""
    if status != ErrorStatus.NONE:
        return Breach(VALID_MODEL_ACCEPTED, f"getSupportedOperations rejected a valid model with {_name(status)}", "")
    if len(flags) != operation_count:
        return Breach(
            VALID_MODEL_ACCEPTED,
            "getSupportedOperations returned the wrong number of flags",
            f"{len(flags)} flags for {operation_count} operations",
        )
    return None


def judge_preparation_consistent(launch: ErrorStatus, status: ErrorStatus, prepared: object | None) -> Breach | None:
    """Launch and callback agree, and a prepared model comes exactly with NONE."""
    if launch != ErrorStatus.NONE and launch != status:
        return Breach(
            LAUNCH_MATCHES_CALLBACK,
            f"prepareModel launch status {_name(launch)} differs from callback status {_name(status)}",
        )
    if (status == ErrorStatus.NONE) != (prepared is not None):
        what = "no prepared model" if prepared is None else "a prepared model"
        return Breach(PREPARED_MODEL_IFF_NONE, f"prepareModel callback said {_name(status)} with {what}")
    return None


def judge_valid_preparation(
    launch: ErrorStatus, status: ErrorStatus, prepared: object | None, all_supported: bool
) -> tuple[Breach | None, bool]:
    """A valid model's preparation: (finding, unsupported). GENERAL_FAILURE is unsupported when a flag is false."""
    finding = judge_preparation_consistent(launch, status, prepared)
    if finding is not None:
        return finding, False
    if status == ErrorStatus.NONE:
        return None, False
    if not all_supported and status == ErrorStatus.GENERAL_FAILURE:
        return None, True
    if all_supported:
        why = "every operation is supported"
    else:
        why = "some operation is unsupported, which allows GENERAL_FAILURE only"
    return (
        Breach(
            VALID_MODEL_ACCEPTED,
            f"prepareModel failed a valid model with {_name(status)} (launch {_name(launch)})",
            why,
        ),
        False,
    )


def judge_model_rejected(
    gso_status: ErrorStatus, flags: Sequence[bool], launch: ErrorStatus, status: ErrorStatus, prepared: object | None
) -> Breach | None:
    """An invalid model: INVALID_ARGUMENT everywhere, no flags, no prepared model."""
    if gso_status != ErrorStatus.INVALID_ARGUMENT:
        return Breach(
            INVALID_MODEL_REJECTED, f"getSupportedOperations answered {_name(gso_status)} for an invalid model"
        )
    if len(flags):
        return Breach(
            INVALID_MODEL_REJECTED, f"getSupportedOperations returned {len(flags)} flags with INVALID_ARGUMENT"
        )
    return _judge_preparation_rejected(INVALID_MODEL_REJECTED, "an invalid model", launch, status, prepared)


def judge_preparation_rejected(launch: ErrorStatus, status: ErrorStatus, prepared: object | None) -> Breach | None:
    """Invalid preparation arguments: INVALID_ARGUMENT at launch and through the callback, no prepared model."""
    return _judge_preparation_rejected(INVALID_PREPARATION_REJECTED, "invalid arguments", launch, status, prepared)


def _judge_preparation_rejected(
    rule: str, what: str, launch: ErrorStatus, status: ErrorStatus, prepared: object | None
) -> Breach | None:
    if launch != ErrorStatus.INVALID_ARGUMENT or status != ErrorStatus.INVALID_ARGUMENT:
        return Breach(rule, f"prepareModel answered launch {_name(launch)}, callback {_name(status)} for {what}")
    if prepared is not None:
        return Breach(rule, f"prepareModel delivered a prepared model for {what}")
    return None


# --- Execution ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expectation:
    """What the oracle expects of one execution of a valid request."""

    status: ErrorStatus  # the reference's status with output sizes applied (NONE, OUTPUT_INSUFFICIENT_SIZE, ...)
    shapes: list[OutputShape] = field(default_factory=list)  # actual dimensions and sufficiency, one per output
    fully_specified: bool = True  # every output's dimensions are known before execution (model + request)
    measure: bool = False
    unspecified: bool = False  # the HAL leaves the result unspecified: status and values are not judged
    timing_dependent: bool = False  # a loop timeout or deadline may also end the execution with MISSED_DEADLINE_*
    unsupported_ok: bool = False  # some operation is unsupported: GENERAL_FAILURE is acceptable

    def acceptable(self, path: str) -> frozenset[ErrorStatus]:
        """The statuses a driver may answer on this path."""
        if self.status == ErrorStatus.NONE:
            ok = {ErrorStatus.NONE}
        elif self.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
            ok = set(_FENCED_INSUFFICIENT) if path == "fenced" else {ErrorStatus.OUTPUT_INSUFFICIENT_SIZE}
        elif self.status in MISSED_DEADLINE:
            ok = set(MISSED_DEADLINE)
        elif self.status == ErrorStatus.INVALID_ARGUMENT and path != "fenced":
            # An input argument the operation does not define (a parameter given at run time out of its range):
            # IPreparedModel names INVALID_ARGUMENT for invalid input arguments; GENERAL_FAILURE is for an
            # unspecified error. A fenced execution may find it only after its launch, and getExecutionInfo cannot
            # answer INVALID_ARGUMENT.
            ok = {ErrorStatus.INVALID_ARGUMENT}
        else:
            ok = set(_DATA_FAILURES)
        if self.timing_dependent:
            # A race between the execution and a deadline or loop timeout: either side may win.
            ok |= MISSED_DEADLINE
            if self.status in MISSED_DEADLINE:
                # The driver finished first: it succeeds, or finds an output too small for what it computed (the
                # reference, which ran out of time, knows no sizes to prescribe).
                ok.add(ErrorStatus.NONE)
                ok |= set(_FENCED_INSUFFICIENT) if path == "fenced" else {ErrorStatus.OUTPUT_INSUFFICIENT_SIZE}
        if self.unsupported_ok:
            ok.add(ErrorStatus.GENERAL_FAILURE)
        return frozenset(ok)


def judge_notes(outcome: object) -> Breach | None:
    """Convention breaches an execution path noticed on the way (launch vs callback, notifications, fences)."""
    path = outcome.path  # type: ignore[attr-defined]
    launch = outcome.launch_status  # type: ignore[attr-defined]
    status = outcome.status  # type: ignore[attr-defined]
    if path == "async" and launch is not None and launch != ErrorStatus.NONE and launch != status:
        return Breach(
            LAUNCH_MATCHES_CALLBACK,
            f"execute launch status {_name(launch)} differs from callback status {_name(status)}",
            path=path,
        )
    for note in outcome.notes:  # type: ignore[attr-defined]
        for prefix, rule in _NOTE_RULES:
            if note.startswith(prefix):
                return Breach(rule, note, path=path)
    return None


# Notes the execution paths (harness.paths) write, and the rule each stands for.
_NOTE_RULES = (
    ("launch status", LAUNCH_MATCHES_CALLBACK),
    ("callback notified", CALLBACK_NOTIFIED_ONCE),
    ("NONE returned without", FENCED_LAUNCH_DELIVERS_FENCE),
)


def judge_status(outcome: object, expected: Expectation) -> Breach | None:
    """The status is one the reference allows on this path."""
    if expected.unspecified:
        return None
    path, status = outcome.path, outcome.status  # type: ignore[attr-defined]
    ok = expected.acceptable(path)
    if status in ok:
        return None
    return Breach(
        STATUS_EXPECTED,
        f"{path} execution answered {_name(status)}, expected {_names(ok)}",
        f"reference status {expected.status.name}",
        path=path,
    )


def judge_shapes(outcome: object, expected: Expectation) -> Breach | None:
    """D7: shapes only with NONE/OUTPUT_INSUFFICIENT_SIZE; actual dimensions; exactly the too-small outputs marked."""
    path, status = outcome.path, outcome.status  # type: ignore[attr-defined]
    shapes: list[OutputShape] = outcome.output_shapes  # type: ignore[attr-defined]
    if status not in _SHAPED_STATUSES:
        if shapes:
            return Breach(
                SHAPES_ABSENT_ON_FAILURE,
                f"{path} execution answered {_name(status)} with {len(shapes)} output shapes",
                path=path,
            )
        return None
    if path == "fenced" or expected.unspecified:
        return None  # the fenced path reports no shapes; an unspecified result has no actual shapes to compare
    if expected.status in MISSED_DEADLINE:
        return None  # the driver finished a race the reference lost (a loop timeout): no actual shapes to compare
    want = expected.shapes
    if status == ErrorStatus.NONE:
        if not shapes and expected.fully_specified:
            return None
        if len(shapes) != len(want):
            return Breach(SHAPES_REPORTED, f"{path}: {len(shapes)} output shapes for {len(want)} outputs", path=path)
        for i, (got, exp) in enumerate(zip(shapes, want)):
            if not got.is_sufficient or list(got.dimensions) != list(exp.dimensions):
                return Breach(
                    SHAPES_REPORTED,
                    f"{path}: output {i} reported {_shape_text(got)} after NONE",
                    f"actual dimensions {list(exp.dimensions)}",
                    path=path,
                )
        return None
    if len(shapes) != len(want):
        return Breach(
            SHAPES_REPORTED,
            f"{path}: {len(shapes)} output shapes for {len(want)} outputs with OUTPUT_INSUFFICIENT_SIZE",
            path=path,
        )
    if expected.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
        marked = [i for i, s in enumerate(shapes) if not s.is_sufficient]
        small = [i for i, s in enumerate(want) if not s.is_sufficient]
        if marked != small:
            return Breach(
                SHAPES_REPORTED,
                f"{path}: outputs {marked} marked insufficient, the too-small outputs are {small}",
                path=path,
            )
    for i, (got, exp) in enumerate(zip(shapes, want)):
        if not _compatible(got.dimensions, exp.dimensions):
            return Breach(
                SHAPES_REPORTED,
                f"{path}: output {i} reported {_shape_text(got)}, incompatible with actual {list(exp.dimensions)}",
                path=path,
            )
    return None


def _compatible(reported: Sequence[int], actual: Sequence[int]) -> bool:
    # With OUTPUT_INSUFFICIENT_SIZE a driver reports as much as it knows: unknown rank, or 0 for unknown dimensions.
    if not len(reported):
        return True
    return len(reported) == len(actual) and all(r in (0, a) for r, a in zip(reported, actual))


def _shape_text(shape: OutputShape) -> str:
    return f"{list(shape.dimensions)} (isSufficient={shape.is_sufficient})"


# Allowance for the driver's and the harness's clocks ticking at different instants (or coarser than 1 us): a
# reported time may exceed the harness's measured interval by this much without being wrong.
TIMING_SLACK_US = 2_000


def judge_timing(outcome: object, measure: bool) -> Breach | None:
    """D8: timing only when asked and NONE; timeInDriver >= timeOnDevice; neither longer than the wall time."""
    path, status = outcome.path, outcome.status  # type: ignore[attr-defined]
    elapsed_ns = getattr(outcome, "elapsed_ns", None)
    timings = [("timing", outcome.timing)]  # type: ignore[attr-defined]
    launched = getattr(outcome, "timing_launched", None)
    if launched is not None:
        timings.append(("timingLaunched", launched))
    for label, timing in timings:
        if not isinstance(timing, Timing):
            return Breach(RETURNS_HAL_VALUES, f"{path}: {label} is {type(timing).__name__}, not Timing", path=path)
        reported = timing.time_on_device != NO_TIMING or timing.time_in_driver != NO_TIMING
        if reported and (not measure or status != ErrorStatus.NONE):
            why = "MeasureTiming.NO" if not measure else f"status {_name(status)}"
            return Breach(
                TIMING_ABSENT_UNLESS_MEASURED,
                f"{path}: {label} reported with {why}",
                f"timeOnDevice={timing.time_on_device} timeInDriver={timing.time_in_driver}",
                path=path,
            )
        both = timing.time_on_device != NO_TIMING and timing.time_in_driver != NO_TIMING
        if both and timing.time_in_driver < timing.time_on_device:
            return Breach(
                TIMING_IN_DRIVER_COVERS_ON_DEVICE,
                f"{path}: {label} timeInDriver {timing.time_in_driver} < timeOnDevice {timing.time_on_device}",
                path=path,
            )
        if elapsed_ns is not None:
            finding = _judge_within_wall_time(path, label, timing, elapsed_ns)
            if finding is not None:
                return finding
    return None


def _judge_within_wall_time(path: str, label: str, timing: Timing, elapsed_ns: int) -> Breach | None:
    # The driver's work happened inside the harness's measured interval, so no duration of it can be longer.
    bound = elapsed_ns // 1000 + TIMING_SLACK_US
    for name, value in (("timeOnDevice", timing.time_on_device), ("timeInDriver", timing.time_in_driver)):
        if value != NO_TIMING and value > bound:
            return Breach(
                TIMING_WITHIN_WALL_TIME,
                f"{path}: {label} {name} {value} us exceeds the {elapsed_ns // 1000} us the execution took",
                f"measured {elapsed_ns} ns from launch to the timing's delivery; slack {TIMING_SLACK_US} us",
                path=path,
            )
    return None


def only_sizes_differ(findings: Sequence[Breach], outcome: object, expected: Expectation) -> bool:
    """True when every finding says only that the outputs' sizes differ from the reference's: the dimensions
    reported, or NONE against OUTPUT_INSUFFICIENT_SIZE either way round (an output whose size depends on the
    data, such as the boxes BOX_WITH_NMS_LIMIT keeps)."""
    status = outcome.status  # type: ignore[attr-defined]
    sized = status in _SHAPED_STATUSES and expected.status in _SHAPED_STATUSES
    return bool(findings) and all(f.rule == SHAPES_REPORTED or (f.rule == STATUS_EXPECTED and sized) for f in findings)


def judge_execution(outcome: object, expected: Expectation) -> list[Breach]:
    """Every rule an execution's status, shapes and timing break (values are judged by judge_outputs)."""
    found = []
    for finding in (
        judge_notes(outcome),
        judge_status(outcome, expected),
        judge_shapes(outcome, expected),
        judge_timing(outcome, expected.measure),
    ):
        if finding is not None:
            found.append(finding)
    return found


def judge_outputs(
    path: str,
    actual: Sequence[np.ndarray | None],
    expected: Sequence[np.ndarray],
    operand_types: Sequence[int],
    relaxed: bool,
    ignore: Collection[int] = (),
    quantized_operations: int = 1,
    exact: Collection[int] = (),
) -> Breach | None:
    """O2: each output's values against the reference's, under the criterion of its operand type.

    Outputs in `ignore` have implementation-defined values (e.g. LSTM's scratch buffer): only their shape counts.
    `quantized_operations` selects the random-graph criterion for quantized outputs (harness.oracle.accuracy);
    outputs in `exact` are defined exactly by the HAL (harness.oracle.exactness) and compared with no tolerance.
    """
    for i, (a, e, t) in enumerate(zip(actual, expected, operand_types)):
        if a is None:
            return Breach(OUTPUTS_MATCH_REFERENCE, f"{path}: output {i} could not be read", path=path)
        only_shape = i in ignore and np.shape(a) == np.shape(e)
        strict = i in exact
        if within_tolerance(
            e, a, t, relaxed, ignore=only_shape, quantized_operations=quantized_operations, exact=strict
        ):
            continue
        # Only a failure needs the counts and the worst element, for its report.
        comparison = compare(
            e, a, t, relaxed, ignore=only_shape, quantized_operations=quantized_operations, exact=strict
        )
        rule = OUTPUTS_MATCH_REFERENCE if comparison.shape_message else comparison.rule
        title = f"{path}: output {i} differs from the reference"
        return Breach(rule, title, comparison.describe(), path=path, output=i)
    return None


def judge_rejected_request(outcome: object) -> Breach | None:
    """An invalid request: INVALID_ARGUMENT, no output shapes, no timing."""
    path, status = outcome.path, outcome.status  # type: ignore[attr-defined]
    if status != ErrorStatus.INVALID_ARGUMENT:
        launch = outcome.launch_status  # type: ignore[attr-defined]
        extra = f" (launch {_name(launch)})" if launch is not None and launch != status else ""
        return Breach(
            INVALID_REQUEST_REJECTED,
            f"{path} execution answered {_name(status)}{extra} for an invalid request",
            path=path,
        )
    if outcome.output_shapes:  # type: ignore[attr-defined]
        return Breach(INVALID_REQUEST_REJECTED, f"{path}: output shapes returned for an invalid request", path=path)
    for timing in (outcome.timing, getattr(outcome, "timing_launched", None)):  # type: ignore[attr-defined]
        if timing is not None and (timing.time_on_device != NO_TIMING or timing.time_in_driver != NO_TIMING):
            return Breach(INVALID_REQUEST_REJECTED, f"{path}: timing reported for an invalid request", path=path)
    return None


# What a call needing an unusable memory may answer: GENERAL_FAILURE (D13's recommendation for an unsupported
# memory) or INVALID_ARGUMENT (D25: a malformed argument).
UNUSABLE_MEMORY_STATUSES = frozenset({ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT})


def judge_unusable_memory_refused(outcome: object) -> Breach | None:
    """An execution over a memory the driver must not use: GENERAL_FAILURE or INVALID_ARGUMENT, no shapes, no timing."""
    path, status = outcome.path, outcome.status  # type: ignore[attr-defined]
    if status not in UNUSABLE_MEMORY_STATUSES:
        return Breach(UNUSABLE_MEMORY_REFUSED, f"{path} execution answered {_name(status)} over an unusable memory",
                      f"expected {_names(UNUSABLE_MEMORY_STATUSES)}", path=path)  # fmt: skip
    if outcome.output_shapes:  # type: ignore[attr-defined]
        return Breach(UNUSABLE_MEMORY_REFUSED, f"{path}: output shapes returned over an unusable memory", path=path)
    for timing in (outcome.timing, getattr(outcome, "timing_launched", None)):  # type: ignore[attr-defined]
        if timing is not None and (timing.time_on_device != NO_TIMING or timing.time_in_driver != NO_TIMING):
            return Breach(UNUSABLE_MEMORY_REFUSED, f"{path}: timing reported over an unusable memory", path=path)
    return None


def judge_unusable_model_pool(
    gso_status: ErrorStatus,
    flags: Sequence[bool],
    readers: Collection[int],
    operation_count: int,
    launch: ErrorStatus,
    status: ErrorStatus,
    prepared: object | None,
) -> Breach | None:
    """A model holding constants in a memory the driver must not use (D13, D25).

    getSupportedOperations may fail (GENERAL_FAILURE or INVALID_ARGUMENT, no flags) or answer NONE with every
    operation in `readers` (those reading the memory, in main or through a referenced subgraph) false: the HAL has an
    operation that may not be supported for any reason reported false. prepareModel fails with GENERAL_FAILURE or
    INVALID_ARGUMENT and no prepared model.
    """
    if gso_status == ErrorStatus.NONE:
        if len(flags) != operation_count:
            return Breach(
                RETURNS_HAL_VALUES,
                "getSupportedOperations returned the wrong number of flags",
                f"{len(flags)} flags for {operation_count} operations",
            )
        supported = sorted(k for k in readers if flags[k])
        if supported:
            return Breach(
                UNUSABLE_MEMORY_REFUSED,
                f"getSupportedOperations reported operations {supported} supported, which read an unusable memory",
            )
    elif gso_status not in UNUSABLE_MEMORY_STATUSES:
        return Breach(UNUSABLE_MEMORY_REFUSED, f"getSupportedOperations answered {_name(gso_status)} for a model "
                      "over an unusable memory", f"expected NONE or {_names(UNUSABLE_MEMORY_STATUSES)}")  # fmt: skip
    elif len(flags):
        return Breach(
            RETURNS_HAL_VALUES, f"getSupportedOperations returned {len(flags)} flags with {_name(gso_status)}"
        )
    finding = judge_preparation_consistent(launch, status, prepared)
    if finding is not None:
        return finding
    if status not in UNUSABLE_MEMORY_STATUSES:
        return Breach(
            UNUSABLE_MEMORY_REFUSED,
            f"prepareModel answered {_name(status)} for a model whose constants lie in an unusable memory",
            f"expected {_names(UNUSABLE_MEMORY_STATUSES)}",
        )
    return None


def judge_paths_agree(statuses: dict[str, ErrorStatus]) -> Breach | None:
    """Every path that ran ended with the same status."""
    if len(set(statuses.values())) <= 1:
        return None
    text = ", ".join(f"{p} {_name(s)}" for p, s in statuses.items())
    return Breach(PATHS_AGREE, f"execution paths disagree: {text}")


# --- Verdicts -----------------------------------------------------------------------------------------------------


def verdict_of(findings: Sequence[Breach], target: str, **extras: object) -> Verdict:
    """FAILURE naming the first finding (the others go to extras["also"]), or SUCCESS when there is none."""
    if not findings:
        return Verdict(Outcome.SUCCESS, target=target, extras=dict(extras))
    first = findings[0]
    extras = dict(extras)
    if first.path:
        extras["path"] = first.path
    if len(findings) > 1:
        extras["also"] = [f"[{f.rule}] {f.title}" for f in findings[1:]]
    return Verdict(
        Outcome.FAILURE,
        rule=first.rule,
        title=first.title,
        details=first.details,
        target=target,
        extras=extras,
        locus=first.locus,
    )


def hang_verdict(call: str, message: str, target: str) -> Verdict:
    """HANG: a callback or fence the driver never signalled."""
    return Verdict(Outcome.HANG, rule=DRIVER_ANSWERS, title=f"no answer from {call}", details=message, target=target)


def exception_verdict(call: str, exc: BaseException, target: str) -> Verdict:
    """FAILURE for an exception that escaped a HAL call, with the traceback's innermost driver frames."""
    frames = driver_frames(exc)
    text = "".join(traceback.format_exception(exc))
    # No driver frame at all: the driver returned something the HAL types cannot hold, and unpacking it failed.
    rule = NO_EXCEPTION_ESCAPES if frames else RETURNS_HAL_VALUES
    title = f"{type(exc).__name__} escaped {call}" if frames else f"{call} returned a value outside the HAL's types"
    return Verdict(
        Outcome.FAILURE,
        rule=rule,
        title=title,
        details=f"{exc}\n{text}",
        target=target,
        frames=frames,
        extras={"call": call, "exception": type(exc).__name__},
    )


_HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ROOT_DIR = os.path.dirname(_HARNESS_DIR)
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_LIBRARY_DIRS = (
    *{os.path.abspath(p) + os.sep for p in (sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")) if p},
    _NUMPY_DIR,
)


def _is_library(path: str) -> bool:
    # Installed packages live under the stdlib folder on some systems; a driver may be one of them.
    return path.startswith(_LIBRARY_DIRS) and "-packages" + os.sep not in path.replace(_NUMPY_DIR, "")


def driver_frames(exc: BaseException, limit: int = 5) -> tuple[str, ...]:
    """The innermost `limit` frames (path:function) of a traceback outside the harness, stdlib and numpy."""
    frames = []
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = os.path.abspath(frame.filename)
        if path.startswith(_HARNESS_DIR + os.sep) or _is_library(path):
            continue
        frames.append(f"{_relative(path)}:{frame.name}")
        if len(frames) == limit:
            break
    return tuple(frames)


def _relative(path: str) -> str:
    # Relative to the longest import root that holds it, so signatures do not depend on where a checkout lives.
    roots = [_ROOT_DIR, *(os.path.abspath(p) for p in sys.path if p)]
    best = max((r for r in roots if path.startswith(r + os.sep)), key=len, default="")
    return os.path.relpath(path, best) if best else os.path.basename(path)
