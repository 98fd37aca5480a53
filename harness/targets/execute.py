"""Executing a case on every execution path and judging each path against the reference (shared by the execution
and request targets).

The case's model is prepared, its request run on each path of a Plan, and each path judged: paths that must reject
the request (a broken one) must answer INVALID_ARGUMENT with no shapes and no timing; the others must execute it as
the reference result prescribes (status, output shapes, values, timing). The fenced path runs only when it must
reject the request or the request's outputs are fully specified. When the driver disagrees with how the case was
built, the reference validator has the last word.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from harness.case import Case, Live, LiveRequest
from harness.hal import (
    Device,
    ErrorStatus,
    MeasureTiming,
    Model,
    OperationType,
    PreparedModel,
    Request,
    is_tensor_type,
    merge_dimensions,
)
from harness.oracle.bias import judge_bias
from harness.oracle.exactness import exact_outputs
from harness.oracle.outputs import (
    output_producer,
    quantized_operations,
    reference_is_stable,
    unspecified_outputs,
)
from harness.oracle.rules import (
    Breach,
    Expectation,
    judge_execution,
    judge_model_rejected,
    judge_outputs,
    judge_paths_agree,
    judge_rejected_request,
    judge_supported_operations,
    judge_unusable_memory_refused,
    judge_valid_preparation,
    only_sizes_differ,
    verdict_of,
)
from harness.oracle.verdict import Verdict
from harness.paths import PATHS, ExecutionArgs
from harness.reference import judge_output_sizes, validate_model
from harness.reference.validator import validate_fenced_request, validate_request
from harness.targets._common import (
    DEFAULT_TIMEOUT_S,
    Preparation,
    call,
    guarded,
    prepare,
    supported_operations,
)

# A deadline this far away cannot be missed by a small execution: it is judged like no deadline.
FAR_DEADLINE_NS = 10_000_000_000


@dataclass
class _Context:
    """Everything one case's executions share."""

    target: str
    case: Case
    live: Live
    prepared: PreparedModel
    all_supported: bool
    timeout_s: float
    expectation: Expectation | None = None
    extras: dict = field(default_factory=dict)
    memory: str = "usable"  # Plan.memory

    @property
    def model(self) -> Model:
        return self.live.model

    @property
    def measure(self) -> bool:
        return bool(self.case.execution.get("measure", False))

    def args(self) -> ExecutionArgs:
        """Per-execution arguments; a relative deadline becomes absolute just before the call."""
        deadline_ns = self.case.execution.get("deadlineNs")
        deadline = None if deadline_ns is None else time.monotonic_ns() + int(deadline_ns)
        return ExecutionArgs(
            measure=MeasureTiming.YES if self.measure else MeasureTiming.NO,
            deadline=deadline,
            loop_timeout=self.case.execution.get("loopTimeoutNs"),
            timeout_s=self.timeout_s,
        )


@dataclass(frozen=True)
class Plan:
    """How execute_case runs a case: on which paths, which of them must reject it, and how long to wait."""

    invalid_on: frozenset[str] = frozenset()  # paths that must reject the request
    paths: tuple[str, ...] | None = None  # None: every path of harness.paths.PATHS
    timeout_s: float = DEFAULT_TIMEOUT_S
    # What the request's memories allow (harness.gen.handles): "usable" as generated, "optional" (a memory kind the
    # driver may turn down: GENERAL_FAILURE is also acceptable) or "refused" (every path must fail).
    memory: str = "usable"


def execute_case(target: str, case: Case, device: Device, plan: Plan) -> Verdict:
    """Prepare the case's model and run its request on each path of the plan, judging each with the oracle.

    Paths in `plan.invalid_on` must reject the request; the others must execute it as the reference does. The
    fenced path runs only when it must reject the request or the request's outputs are fully specified.
    """
    live = case.materialized()
    return guarded(target, lambda: _execute(target, case, live, device, plan))


def _execute(target: str, case: Case, live: Live, device: Device, plan: Plan) -> Verdict:
    model = live.model
    supported, flags = supported_operations(device, model)
    finding = judge_supported_operations(supported, flags, len(model.main.operations))
    prepared = None
    p = None
    if finding is None:
        p = prepare(device, model, timeout_s=plan.timeout_s)
        finding, unsupported = judge_valid_preparation(p.launch, p.status, p.prepared, all(flags))
        if unsupported:
            return verdict_of([], target, unsupported=True)
        prepared = p.prepared
    if finding is not None or prepared is None:
        if validate_model(model):
            # The generator built an invalid model: the driver was right to reject it.
            return verdict_of([], target, disputed="built as valid, the reference validator says invalid")
        return verdict_of([finding] if finding else [], target)
    ctx = _Context(target, case, live, prepared, all(flags), plan.timeout_s, memory=plan.memory)
    statuses: dict[str, ErrorStatus] = {}
    # One set of pools serves every path (as a client reuses its memories), put back as built before each.
    built = live.request
    assert built is not None, "an executed case has a request"
    for path in _paths_for(case, model, plan):
        built.rewind()
        findings, status = _run_path(ctx, built, path, rejects=path in plan.invalid_on)
        if findings:
            return verdict_of(_accepted_invalid_model(model, supported, flags, p) or findings, target, **ctx.extras)
        statuses[path] = status
    # When the reference cannot prescribe a status, the paths judged valid must at least agree with each other.
    if ctx.expectation is not None and ctx.expectation.unspecified:
        finding = judge_paths_agree(statuses)
        if finding is not None:
            return verdict_of(_accepted_invalid_model(model, supported, flags, p) or [finding], target, **ctx.extras)
    return verdict_of([], target, **ctx.extras)


def _accepted_invalid_model(model: Model, status: ErrorStatus, flags: list[bool], p: Preparation) -> list:
    """[the invalid-model finding] when the reference validator rejects the model the driver accepted, else [].

    Generated models are valid by construction, but a minimized or hand-edited case may not be: judging the
    executions of an invalid model would charge the driver with the wrong rule (and let a minimizer drift from one
    bug to another under one signature). Checked only once something failed.
    """
    violations = validate_model(model)
    if not violations:
        return []
    finding = judge_model_rejected(status, flags, p.launch, p.status, p.prepared)
    if finding is None:
        return []
    first = violations[0]
    return [Breach(finding.rule, finding.title, f"the reference validator says {first.v}: {first.message}")]


def _paths_for(case: Case, model: Model, plan: Plan) -> list[str]:
    """The plan's paths in PATHS order; fenced only when it must reject or the request suits it."""
    fenced = "fenced" in plan.invalid_on or _fenced_applies(case, model)
    wanted = PATHS if plan.paths is None else plan.paths
    return [p for p in PATHS if p in wanted and (p != "fenced" or fenced)]


def _fenced_applies(case: Case, model: Model) -> bool:
    """The fenced path takes only requests whose outputs are fully specified and non-empty (V37)."""
    main = model.main
    for arg, index in zip((case.request or {}).get("outputs", []), main.output_indexes):
        operand = main.operands[index]
        if arg.get("hasNoValue") or not is_tensor_type(operand.type):
            continue
        dims = merge_dimensions(operand.dimensions, arg.get("dimensions", []))
        if not dims or any(d == 0 for d in dims):
            return False
    return True


def _run_path(ctx: _Context, built: LiveRequest, path: str, *, rejects: bool) -> tuple[list[Breach], ErrorStatus]:
    """Run one path on the request and judge it; (findings, status)."""
    outcome = call(f"{path} execution", PATHS[path], ctx.prepared, built.request, ctx.args())
    if ctx.memory == "refused":
        finding = judge_unusable_memory_refused(outcome)
        return ([finding] if finding else []), outcome.status
    if rejects:
        finding = judge_rejected_request(outcome)
        if finding is None:
            return [], outcome.status
        if not _validator_rejects(ctx, built.request, path):
            ctx.extras["disputed"] = f"built as invalid on {path}, the reference validator says valid"
            return _judge_valid(ctx, path, outcome, built), outcome.status
        return [finding], outcome.status
    return _judge_valid(ctx, path, outcome, built), outcome.status


def _validator_rejects(ctx: _Context, request: Request, path: str) -> bool:
    validate = validate_fenced_request if path == "fenced" else validate_request
    return bool(validate(ctx.model, request))


def _judge_valid(ctx: _Context, path: str, outcome: object, built: LiveRequest) -> list[Breach]:
    expected = _expectation(ctx, built.request)
    findings = judge_execution(outcome, expected)
    reference = ctx.case.reference()
    loop_timeout = ctx.case.execution.get("loopTimeoutNs")
    if only_sizes_differ(findings, outcome, expected) and not reference_is_stable(
        ctx.model, ctx.live.inputs, reference, loop_timeout
    ):
        # How many values an output holds hinges on an edge (an overlap exactly at the IoU threshold keeps a box
        # in float64 and drops it at float32 precision): no implementation can be judged on those sizes.
        ctx.extras["ill_conditioned"] = findings[0].title
        return []
    if findings or outcome.status != ErrorStatus.NONE:  # type: ignore[attr-defined]
        return findings
    if reference.unspecified or reference.status != ErrorStatus.NONE:
        return []
    if expected.status != ErrorStatus.NONE:
        return []  # NONE accepted because of a deadline or loop timeout: the outputs may not be complete
    actual = built.read_outputs([e.shape for e in reference.outputs])
    types = [ctx.model.main.operands[i].type for i in ctx.model.main.output_indexes]
    relaxed = ctx.model.relax_computation_float32_to_float16
    ignore = unspecified_outputs(ctx.model)
    exact = exact_outputs(ctx.model)
    finding = judge_outputs(
        path,
        actual,
        reference.outputs,
        types,
        relaxed,
        ignore=ignore,
        quantized_operations=quantized_operations(ctx.model),
        exact=exact,
    )
    if finding is None:
        finding = judge_bias(path, ctx.model, ctx.live.inputs, reference.outputs, actual, ignore | exact, loop_timeout)
    if (
        finding is not None
        and finding.rule.startswith("accuracy.")
        and not reference_is_stable(ctx.model, ctx.live.inputs, reference, loop_timeout)
    ):
        # The reference itself jumps under perturbations far below any tolerance (a FLOOR, a comparison or a
        # threshold sits on an edge): no implementation can be judged on these outputs.
        ctx.extras["ill_conditioned"] = finding.title
        return []
    if finding is not None and finding.output is not None:
        finding = replace(finding, locus=output_producer(ctx.model, finding.output))
    return [finding] if finding else []


def _expectation(ctx: _Context, request: Request) -> Expectation:
    """The oracle's expectation for this case (computed once; the reference runs lazily)."""
    if ctx.expectation is not None:
        return ctx.expectation
    execution = ctx.case.execution
    loop_timeout = execution.get("loopTimeoutNs")
    reference = ctx.case.reference()
    deadline_ns = execution.get("deadlineNs")
    timing_dependent = (deadline_ns is not None and 0 < deadline_ns < FAR_DEADLINE_NS) or (
        loop_timeout is not None and _has_while(ctx.model)
    )
    status = reference.status
    shapes = []
    if deadline_ns is not None and deadline_ns <= 0:
        status = ErrorStatus.MISSED_DEADLINE_TRANSIENT  # the deadline has passed before the execution starts
    elif status == ErrorStatus.NONE and not reference.unspecified:
        lengths = [None if a.has_no_value else a.location.length for a in request.outputs]
        status, shapes = judge_output_sizes(ctx.model, lengths, reference.outputs)
    ctx.expectation = Expectation(
        status=status,
        shapes=shapes,
        fully_specified=_fenced_applies(ctx.case, ctx.model),
        measure=ctx.measure,
        unspecified=reference.unspecified,
        timing_dependent=timing_dependent,
        unsupported_ok=not ctx.all_supported or ctx.memory == "optional",
    )
    return ctx.expectation


def _has_while(model: Model) -> bool:
    return any(op.type == OperationType.WHILE for g in (model.main, *model.referenced) for op in g.operations)
