"""Bare runs: a case's engine model run on the engine alone, outside the HAL plumbing, on each of the engine's
kernel sets, and judged against the reference as the oracle judges a driver's outputs.

    engine_model = engine_model_of(case, device)     # the device's model for its engine (EngineExport)
    runs = bare_runs(case, engine_model)              # BareRuns: per kernel set, a BareRun
    runs.showing()                                    # the kernel sets on which the engine alone fails

A BareRun says how the run ended (`outcome`: outputs, crash with its signal, error with the engine's text, hang)
and, with outputs, `comparisons`: per output the `harness.oracle.accuracy.compare` result against the reference
(None for an output with no expected values). `matches` is True when the engine alone computes what the HAL
prescribes. Classifying a finding builds on this: a finding whose bare runs match did not come from the engine.

What is expected (`expected_of`): the reference's outputs for the case's model and inputs, each with the O2
tolerance of its operand type (`tolerance_for` with the model's relaxed flag and the random-graph criterion of its
quantized operations). Outputs the HAL leaves unspecified (`unspecified_outputs`) are compared by shape only; an
execution the HAL leaves unspecified, or that the reference ends with an error status, has no expected values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.case import Case
from harness.engines._words import first_line, type_name
from harness.engines.adapter import DEFAULT_TIMEOUT_S, EngineRun, RunOutcome, adapter_for
from harness.hal import EngineExport, EngineModel, ErrorStatus, numpy_dtype
from harness.oracle.accuracy import SKIP_ABOVE, Comparison, accuracy_class, compare, tolerance_for
from harness.oracle.outputs import quantized_operations, unspecified_outputs
from harness.reference import validate_model


class NotExportable(ValueError):
    """The case or the device cannot give an engine model to run (the message says why)."""


@dataclass(frozen=True)
class ExpectedOutput:
    """One main output as the HAL prescribes it: the reference's values and the tolerance they are held to."""

    position: int
    operand_type: int
    value: np.ndarray | None  # the reference's output (HAL storage dtype, actual shape); None: none defined
    atol: float
    rtol: float
    compared: bool  # False: only the shape is checked (the HAL leaves the values unspecified), or nothing
    reason: str = ""  # why the values are not compared

    @property
    def type_name(self) -> str:
        """The operand type's HAL name."""
        return type_name(self.operand_type)

    @property
    def accuracy_class(self) -> str:
        """float32, float16, int32, quant8, quant16 or bool."""
        return accuracy_class(self.operand_type)

    def to_json(self) -> dict:
        """The tolerance.json entry of this output."""
        cls = self.accuracy_class
        return {
            "output": self.position,
            "name": f"output{self.position}",
            "type": self.type_name,
            "class": cls,
            "shape": list(self.value.shape) if self.value is not None else None,
            "atol": self.atol,
            "rtol": self.rtol,
            "skip_above": SKIP_ABOVE if cls in ("float32", "float16") else None,
            "compared": self.compared,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Expected:
    """What the HAL prescribes for a case's execution: its outputs, and the accuracy criterion applied."""

    outputs: tuple[ExpectedOutput, ...]
    relaxed: bool
    quantized_operations: int
    reference_status: str  # the reference's status name (NONE when it computed the outputs)
    note: str = ""  # when no values are expected: why

    @property
    def compared(self) -> bool:
        """True when some output has expected values."""
        return any(o.value is not None for o in self.outputs)

    def compare(self, actual: Sequence[np.ndarray]) -> tuple[Comparison | None, ...]:
        """Each output against its expected values (harness.oracle.accuracy.compare); None where none are defined.
        An output the HAL leaves unspecified is compared by shape only."""
        comparisons: list[Comparison | None] = []
        for out, value in zip(self.outputs, actual):
            if out.value is None:
                comparisons.append(None)
                continue
            value = _stored(np.asarray(value), out.operand_type)
            only_shape = not out.compared and value.shape == out.value.shape
            comparisons.append(
                compare(
                    out.value,
                    value,
                    out.operand_type,
                    self.relaxed,
                    ignore=only_shape,
                    quantized_operations=self.quantized_operations,
                )
            )
        return tuple(comparisons)

    def tolerance_json(self) -> dict:
        """tolerance.json: the criterion and, per output, its tolerance."""
        return {
            "criterion": "|actual - expected| <= atol + rtol * |expected| per element (the NN HAL 1.3 conformance "
            "accuracy criterion); expected values NaN, infinite or above 1e3 in magnitude are not compared",
            "relaxed": self.relaxed,
            "quantized_operations": self.quantized_operations,
            "reference_status": self.reference_status,
            "compared": self.compared,
            "note": self.note,
            "outputs": [o.to_json() for o in self.outputs],
        }


def expected_of(case: Case) -> Expected:
    """The expected outputs of a case's execution (the reference's) and their tolerances."""
    live = case.materialized()
    model = live.model
    main = model.main
    relaxed = model.relax_computation_float32_to_float16
    steps = quantized_operations(model)
    reference = case.reference()
    unspecified = unspecified_outputs(model)
    status = ErrorStatus(reference.status).name
    note = ""
    if reference.unspecified:
        note = f"the HAL leaves this execution's result unspecified ({reference.message or 'see the reference'})"
    elif reference.status != ErrorStatus.NONE:
        note = f"the HAL prescribes that this execution fails with {status} ({reference.message})"
    outputs = []
    for position, index in enumerate(main.output_indexes):
        operand_type = main.operands[index].type
        atol, rtol = tolerance_for(operand_type, relaxed, steps)
        if note:
            outputs.append(ExpectedOutput(position, operand_type, None, atol, rtol, False, note))
            continue
        value = reference.outputs[position]
        if position in unspecified:
            reason = "the HAL leaves this output's values unspecified (only its shape is checked)"
            outputs.append(ExpectedOutput(position, operand_type, value, atol, rtol, False, reason))
        else:
            outputs.append(ExpectedOutput(position, operand_type, value, atol, rtol, True))
    return Expected(tuple(outputs), relaxed, steps, status, note)


def engine_inputs(case: Case) -> list[np.ndarray]:
    """Main's input values in HAL storage dtypes and actual shapes; NotExportable for an input without a value."""
    live = case.materialized()
    count = len(live.model.main.input_indexes)
    if len(live.inputs) != count:
        raise NotExportable(f"the case gives {len(live.inputs)} input values for main's {count} inputs")
    inputs = []
    for position, value in enumerate(live.inputs):
        if value is None:
            raise NotExportable(f"main input {position} has no value: an engine model reads every input")
        inputs.append(np.asarray(value))
    return inputs


def engine_model_of(case: Case, device: object) -> EngineModel:
    """The device's engine model of the case's model (harness.hal.EngineExport); NotExportable when the case has
    no valid model to execute or the device gives none."""
    if not isinstance(device, EngineExport):
        raise NotExportable(
            f"the device ({type(device).__name__}) does not hand out engine models (harness.hal.EngineExport): "
            "use a driver over an engine, e.g. driver_under_test:create_litert_device"
        )
    if case.request is None:
        raise NotExportable(f"the case (target {case.target}) executes nothing: it has no request")
    model = case.materialized().model
    violations = validate_model(model)
    if violations:
        first = violations[0]
        raise NotExportable(
            f"the case's model is invalid ({first.rule}: {first.message}): there is no model to execute"
        )
    status, engine_model = device.export_engine_model(model)
    if status != ErrorStatus.NONE or engine_model is None:
        raise NotExportable(
            f"the device gives no engine model for this model ({ErrorStatus(status).name}): its backend has no "
            "engine format, or the model has an operation it does not run"
        )
    return engine_model


@dataclass(frozen=True)
class BareRun:
    """One kernel set's bare run of a case's engine model, judged against the reference."""

    kernel_set: str
    outcome: RunOutcome  # outputs, crash, error or hang
    outputs: tuple[np.ndarray, ...] = ()  # OUTPUTS: main's outputs (HAL storage dtypes where the sizes agree)
    signal: int | None = None  # CRASH: the signal that killed the child
    signal_name: str = ""  # CRASH: its name (SIGABRT)
    error: str = ""  # ERROR: what the engine raised; CRASH, HANG: what the child said last
    comparisons: tuple[Comparison | None, ...] = ()  # OUTPUTS: per output; None: no expected values
    elapsed_s: float = 0.0
    output_count_error: str = ""  # OUTPUTS: set when the engine gave another number of outputs than main has
    values_expected: bool = True  # False when the HAL prescribes no output values for the execution

    @property
    def matches(self) -> bool:
        """True when the engine alone gives what the HAL prescribes: its outputs within tolerance; with no
        expected values (an execution the HAL leaves unspecified or fails), no crash and no hang."""
        if self.outcome in (RunOutcome.CRASH, RunOutcome.HANG):
            return False
        if self.outcome == RunOutcome.ERROR:
            return not self.values_expected
        return not self.output_count_error and all(c is None or c.ok for c in self.comparisons)

    def describe(self) -> str:
        """One line: how it ended and, with outputs, the first output out of tolerance."""
        if self.outcome == RunOutcome.CRASH:
            return f"{self.kernel_set}: crash, killed by {self.signal_name}"
        if self.outcome == RunOutcome.HANG:
            return f"{self.kernel_set}: hang ({self.error})"
        if self.outcome == RunOutcome.ERROR:
            return f"{self.kernel_set}: error: {first_line(self.error)}"
        if self.output_count_error:
            return f"{self.kernel_set}: {self.output_count_error}"
        for k, c in enumerate(self.comparisons):
            if c is not None and not c.ok:
                return f"{self.kernel_set}: output {k} {c.describe()}"
        return f"{self.kernel_set}: outputs match the reference"

    def to_json(self) -> dict:
        """A JSON-ready summary (the outputs' values left out)."""
        return {
            "kernel_set": self.kernel_set,
            "outcome": self.outcome.value,
            "matches": self.matches,
            "signal": self.signal,
            "signal_name": self.signal_name,
            "error": self.error,
            "outputs": [{"dtype": str(a.dtype), "shape": list(a.shape)} for a in self.outputs],
            "comparisons": [None if c is None else _comparison_json(c) for c in self.comparisons],
            "elapsed_s": round(self.elapsed_s, 3),
            "summary": self.describe(),
        }


@dataclass(frozen=True)
class BareRuns:
    """A case's engine model run bare on several kernel sets."""

    engine: str  # the engine and its version, as the device names it ("ai-edge-litert 2.3.0")
    format: str  # the engine model's format ("tflite")
    device_kernel_set: str  # the kernel set the device runs the model on
    expected: Expected
    runs: Mapping[str, BareRun] = field(default_factory=dict)  # by kernel set, in the engine's order

    def showing(self) -> tuple[str, ...]:
        """The kernel sets whose bare run does not give what the HAL prescribes."""
        return tuple(k for k, run in self.runs.items() if not run.matches)

    def to_json(self) -> dict:
        """A JSON-ready summary."""
        return {
            "engine": self.engine,
            "format": self.format,
            "device_kernel_set": self.device_kernel_set,
            "showing": list(self.showing()),
            "runs": {k: run.to_json() for k, run in self.runs.items()},
        }


def bare_runs(
    case: Case,
    engine_model: EngineModel,
    kernel_sets: Sequence[str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    expected: Expected | None = None,
) -> BareRuns:
    """Run the engine model on each kernel set (every one the engine has by default) in child processes, with the
    case's inputs, and compare the outputs with the reference."""
    adapter = adapter_for(engine_model.format)
    expected = expected or expected_of(case)
    kernel_sets = list(adapter.kernel_sets if kernel_sets is None else kernel_sets)
    runs = adapter.run_bare_each(engine_model.data, kernel_sets, engine_inputs(case), timeout_s)
    judged = {k: judge_run(runs[k], expected) for k in kernel_sets}
    return BareRuns(engine_model.engine, engine_model.format, engine_model.kernel_set, expected, judged)


def judge_run(run: EngineRun, expected: Expected) -> BareRun:
    """An engine run judged against the expected outputs."""
    outputs: tuple[np.ndarray, ...] = ()
    comparisons: tuple[Comparison | None, ...] = ()
    count_error = ""
    if run.outcome == RunOutcome.OUTPUTS:
        types = [o.operand_type for o in expected.outputs]
        outputs = tuple(_stored(np.asarray(a), t) for a, t in zip(run.outputs, types)) + run.outputs[len(types) :]
        if len(run.outputs) != len(expected.outputs):
            count_error = f"the engine model gave {len(run.outputs)} outputs, main has {len(expected.outputs)}"
        comparisons = expected.compare(outputs)
    return BareRun(
        kernel_set=run.kernel_set,
        outcome=run.outcome,
        outputs=outputs,
        signal=run.signal,
        signal_name=run.signal_name,
        error=run.error,
        comparisons=comparisons,
        elapsed_s=run.elapsed_s,
        output_count_error=count_error,
        values_expected=expected.compared,
    )


def _stored(value: np.ndarray, operand_type: int) -> np.ndarray:
    """An engine's output in the operand's HAL storage dtype, as the driver writes it back, when both dtypes are of
    one size and both integers or booleans, or both floats (a TFLite BOOL for TENSOR_BOOL8). Other dtypes are kept
    as they are: converting them would hide what the engine gave."""
    try:
        dtype = numpy_dtype(operand_type)
    except ValueError:
        return value
    same_kind = value.dtype.kind == dtype.kind or {value.dtype.kind, dtype.kind} <= set("biu")
    if value.dtype == dtype or value.dtype.itemsize != dtype.itemsize or not same_kind:
        return value
    return value.astype(dtype)


def _comparison_json(c: Comparison) -> dict:
    return {
        "ok": c.ok,
        "accuracy_class": c.accuracy_class,
        "checked": c.checked,
        "skipped": c.skipped,
        "mismatched": c.mismatched,
        "ignored": c.ignored,
        "shape_message": c.shape_message,
        "worst": c.worst.to_json() if c.worst is not None else None,
        "summary": c.describe(),
    }
