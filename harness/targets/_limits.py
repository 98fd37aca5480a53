"""Judging a case whose model has a huge size (harness.gen.huge, D26): refused with a status, or run correctly.

getSupportedOperations may call the operation unsupported (its own statuses are checked where it is called);
prepareModel may refuse with RESOURCE_EXHAUSTED_* or GENERAL_FAILURE (INVALID_ARGUMENT only when the reference
validator rejects the model); an execution may refuse likewise, and otherwise must answer what a correct run
answers: the output cannot fit the small buffer, so OUTPUT_INSUFFICIENT_SIZE with the output marked insufficient
and, when reported, its actual dimensions. The reference executor never runs on these cases.
"""

from __future__ import annotations

from harness.case import Case
from harness.hal import Device, ErrorStatus
from harness.oracle.rules import SIZE_REFUSED_OR_RUN, Breach, judge_preparation_consistent, verdict_of
from harness.oracle.verdict import Verdict
from harness.paths import PATHS, ExecutionArgs
from harness.reference import validate_model
from harness.targets._common import call, guarded, prepare, supported_operations

# D26: "RESOURCE_EXHAUSTED_* from prepareModel/execute (or GENERAL_FAILURE ...)".
REFUSALS = frozenset(
    {ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT, ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT, ErrorStatus.GENERAL_FAILURE}
)
# The output dimensions are unknown until run, so the fenced path does not apply (V37).
_PATHS = ("sync", "async", "burst")


def judge_huge_case(target: str, case: Case, device: Device, timeout_s: float) -> Verdict:
    """Prepare and execute a huge case on every non-fenced path; a refusal by size or a correct answer passes."""
    live = case.materialized()
    return guarded(target, lambda: _judge(target, case, live, device, timeout_s))


def _judge(target: str, case: Case, live: object, device: Device, timeout_s: float) -> Verdict:
    model = live.model  # type: ignore[attr-defined]
    supported_operations(device, model)
    p = prepare(device, model, timeout_s=timeout_s)
    finding = judge_preparation_consistent(p.launch, p.status, p.prepared)
    if finding is None and p.status != ErrorStatus.NONE:
        if p.status not in REFUSALS and not (p.status == ErrorStatus.INVALID_ARGUMENT and validate_model(model)):
            finding = Breach(SIZE_REFUSED_OR_RUN, f"prepareModel answered {p.status.name} for a huge model")
        return verdict_of([finding] if finding else [], target)
    if finding is not None:
        return verdict_of([finding], target)
    expected = [int(d) for d in case.expect.get("outputShape", [])]
    built = live.request  # type: ignore[attr-defined]
    for path in _PATHS:
        built.rewind()
        outcome = call(f"{path} execution", PATHS[path], p.prepared, built.request, ExecutionArgs(timeout_s=timeout_s))
        finding = _judge_outcome(path, outcome, expected)
        if finding is not None:
            return verdict_of([finding], target)
    return verdict_of([], target)


def _judge_outcome(path: str, outcome: object, expected: list[int]) -> Breach | None:
    status = outcome.status  # type: ignore[attr-defined]
    if status in REFUSALS:
        return None
    if status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
        return Breach(SIZE_REFUSED_OR_RUN, f"{path} execution answered {status.name} for a huge output",
                      f"expected OUTPUT_INSUFFICIENT_SIZE (a {expected} output in a small buffer) or a refusal "
                      "(RESOURCE_EXHAUSTED_*, GENERAL_FAILURE)", path=path)  # fmt: skip
    shapes = outcome.output_shapes  # type: ignore[attr-defined]
    if not shapes or shapes[0].is_sufficient:
        return Breach(SIZE_REFUSED_OR_RUN, f"{path}: the huge output is not marked insufficient", path=path)
    if shapes[0].dimensions and list(shapes[0].dimensions) != expected:
        return Breach(SIZE_REFUSED_OR_RUN, f"{path}: the huge output's dimensions are reported wrong",
                      f"{list(shapes[0].dimensions)}, expected {expected}", path=path)  # fmt: skip
    return None
