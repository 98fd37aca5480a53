"""Runs the public conformance vectors through the reference or a driver and judges every case.

Every case ends as passed, failed (with the rule it broke and the worst element) or skipped (with the
reason); none is dropped. The judgement is the same for both backends: status NONE, output shapes equal to the
expected dimensions, output values within the O2 accuracy criteria (ignored outputs excepted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from harness.case import ConformanceCase
from harness.case.conformance import case_from_json, iter_vector_json
from harness.conformance.backend import Backend, Execution, Stop
from harness.conformance.driver_backend import (
    DriverBackend,
    DriverContractError,
    DriverException,
    DriverTimeout,
    load_device,
)
from harness.conformance.known_issues import known_wrong_reason
from harness.conformance.reference_backend import HarnessBug, ReferenceBackend
from harness.conformance.report import FAILED, PASSED, SKIPPED, CaseResult, ConformanceReport
from harness.hal import Device, ErrorStatus, OperationType
from harness.oracle.accuracy import compare
from harness.oracle.exactness import exact_outputs

# progress(done, total, result): called after every case.
Progress = Callable[[int, int, CaseResult], None]

MULTINOMIAL_SKIP = "distribution comparison not implemented"


def load_cases(vectors: Sequence[Path] | None = None, only: str | None = None) -> list[ConformanceCase]:
    """The conformance cases of these files (all public files if None), optionally only names containing `only`."""
    return [case_from_json(d, source) for d, source in iter_vector_json(vectors) if only is None or only in d["name"]]


def run_conformance(
    vectors: Sequence[Path] | None = None,
    driver: str | None = None,
    progress: Progress | None = None,
    *,
    only: str | None = None,
    timeout: float = 30.0,
    cases: Iterable[ConformanceCase] | None = None,
    device: Device | None = None,
) -> ConformanceReport:
    """Run the vectors through the reference executor (driver None) or the driver a "module:factory" spec names.

    `device` passes an already created device instead (then `driver` only names it in the report); `cases`
    passes already loaded cases instead of `vectors`.
    """
    backend: Backend
    if device is not None:
        backend = DriverBackend(device, driver or type(device).__name__, timeout)
    elif driver is not None:
        backend = DriverBackend(load_device(driver), driver, timeout)
    else:
        backend = ReferenceBackend()
    selected = list(cases) if cases is not None else load_cases(vectors, only)
    report = ConformanceReport(target=backend.name)
    for done, case in enumerate(selected, 1):
        result = run_case(backend, case)
        report.add(result)
        if progress is not None:
            progress(done, len(selected), result)
    return report


def case_operation(case: ConformanceCase) -> str:
    """The operation a case is filed under: its only operation type, else the last operation (the one tested)."""
    operations = case.model.main.operations
    if not operations:
        return "(none)"
    kinds = {op.type for op in operations}
    op_type = operations[-1].type if len(kinds) > 1 else operations[0].type
    try:
        return OperationType(op_type).name
    except ValueError:
        return f"operation {op_type}"


def run_case(backend: Backend, case: ConformanceCase) -> CaseResult:
    """Prepare and run one case on a backend and judge it."""

    def ended(outcome: str, **kw: object) -> CaseResult:
        return CaseResult(name=case.name, file=case.source, operation=case_operation(case), outcome=outcome, **kw)

    if case.multinomial_tolerance is not None:
        return ended(SKIPPED, reason=MULTINOMIAL_SKIP)
    wrong = known_wrong_reason(case.spec)
    if wrong:
        return ended(SKIPPED, reason=f"known wrong vector: {wrong}")
    try:
        session = backend.prepare(case)
        if isinstance(session, Stop):
            if session.outcome == SKIPPED:
                return ended(SKIPPED, reason=session.reason)
            return ended(FAILED, rule=session.rule, detail=session.detail)
        for number, example in enumerate(case.examples):
            # As in the public harnesses, an input given no values is an omitted optional input (hasNoValue).
            inputs = [None if x is None or x.size == 0 else x for x in example.inputs]
            execution = session.execute(inputs, example.outputs)
            failure = judge(case, example.outputs, execution)
            if failure is not None:
                rule, detail, worst = failure
                prefix = f"example {number}: " if len(case.examples) > 1 else ""
                return ended(FAILED, rule=rule, detail=prefix + detail, worst=worst)
    except DriverException as exc:
        return ended(FAILED, rule="driver.exception", detail=str(exc))
    except DriverContractError as exc:
        return ended(FAILED, rule="driver.contract", detail=str(exc))
    except DriverTimeout as exc:
        return ended(FAILED, rule="driver.timeout", detail=str(exc))
    except HarnessBug as exc:
        return ended(FAILED, rule="reference.exception", detail=str(exc))
    return ended(PASSED)


def judge(
    case: ConformanceCase, expected: Sequence[np.ndarray], execution: Execution
) -> tuple[str, str, dict | None] | None:
    """(rule, detail, worst element) of the first rule an execution breaks, or None if it conforms."""
    if execution.status != ErrorStatus.NONE:
        message = f": {execution.message}" if execution.message else ""
        return "status.unexpected", f"expected status NONE, got {execution.status.name}{message}", None
    if execution.insufficient:
        return "shape.mismatch", f"outputs {execution.insufficient} reported insufficient with status NONE", None
    shapes = execution.shapes
    if shapes is None or len(shapes) != len(expected):
        got = "no output shapes" if shapes is None else f"{len(shapes)} output shapes"
        return "shape.mismatch", f"{got} for {len(expected)} outputs", None
    for i, (shape, e) in enumerate(zip(shapes, expected)):
        if list(shape) != list(np.shape(e)):
            return "shape.mismatch", f"output {i}: expected dimensions {list(np.shape(e))}, got {list(shape)}", None
    main = case.model.main
    relaxed = case.model.relax_computation_float32_to_float16
    exact = exact_outputs(case.model)
    for i, (e, actual) in enumerate(zip(expected, execution.outputs)):
        operand = main.operands[main.output_indexes[i]]
        comparison = compare(
            e, actual, operand.type, relaxed=relaxed, ignore=i in case.ignored_outputs, exact=i in exact
        )
        if not comparison.ok:
            worst = comparison.worst.to_json() if comparison.worst is not None else None
            return comparison.rule, f"output {i}: {comparison.describe()}", worst
    return None
