"""A reproducer folder's README.md, written as a bug report for the engine's owner: what the model computes,
expected against actual, the HAL rule that defines the expected values, the versions and the command to run."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness import ops
from harness.engines._semantics import FUSED_ACTIVATION, QUANTIZED_VALUES, RELAXED, semantics
from harness.engines._words import first_line, type_name
from harness.engines.adapter import EngineAdapter, RunOutcome
from harness.engines.bare import BareRun, BareRuns, Expected
from harness.hal import Model, OperandLifeTime, Subgraph, SymmPerChannelQuantParams
from harness.hal.sizes import QUANTIZED_TYPES
from harness.hal.values import constant_value
from harness.oracle.accuracy import SKIP_ABOVE
from harness.oracle.outputs import output_producer
from harness.reference import operation_name

_SMALL = 16  # values of at most this many elements are written out
_ACTIVATED = {"activation", "fused_activation"}  # catalogue names of a fused activation scalar


@dataclass(frozen=True)
class Report:
    """What the README says, gathered by the export."""

    adapter: EngineAdapter
    model: Model
    inputs: Sequence[np.ndarray]
    expected: Expected
    bare: BareRuns
    kernel_set: str  # the reproducer's default kernel set
    engine_version: str
    origin_lines: Sequence[str]  # where the case comes from (a finding), for nnfuzz users
    engine_model_lines: Sequence[str]  # the engine model in its own terms


def operations_summary(model: Model) -> str:
    """The operations of main in order, each once, with the tensor types they write ("ADD, MUL on TENSOR_FLOAT32")."""
    main = model.main
    names: list[str] = []
    for op in main.operations:
        name = operation_name(op.type)
        if name not in names:
            names.append(name)
    types: list[str] = []
    for op in main.operations:
        for index in op.outputs:
            name = type_name(main.operands[index].type)
            if name not in types:
                types.append(name)
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"{shown} on {', '.join(types)}" if types else shown


def title(report: Report) -> str:
    """The bug report's title: the engine, the kernel set and what goes wrong, for which operations."""
    engine, kernels = report.adapter.engine, report.kernel_set
    run = report.bare.runs.get(kernels)
    what = operations_summary(report.model)
    if run is None:
        return f"{engine}: {what}"
    if run.outcome == RunOutcome.CRASH:
        return f"{engine} ({kernels} kernels) is killed by {run.signal_name} running a model of {what}"
    if run.outcome == RunOutcome.HANG:
        return f"{engine} ({kernels} kernels) never returns from a model of {what}"
    if run.outcome == RunOutcome.ERROR:
        if run.matches:  # the HAL prescribes a failure too
            return f"{engine} ({kernels} kernels) raises on a model of {what}, as the HAL prescribes"
        return f"{engine} ({kernels} kernels) refuses a valid model of {what}"
    for position, comparison in enumerate(run.comparisons):
        if comparison is not None and not comparison.ok:
            producer = output_producer(report.model, position) or what
            kind = "a wrong output shape" if comparison.shape_message else "wrong values"
            out_type = report.expected.outputs[position].type_name
            return f"{engine} ({kernels} kernels) gives {kind} for {producer} ({out_type})"
    return f"{engine} ({kernels} kernels): a model of {what} (computes the expected values)"


def readme(report: Report) -> str:
    """The README.md text."""
    adapter, kernels = report.adapter, report.kernel_set
    run = report.bare.runs.get(kernels)
    lines = [f"# {title(report)}", ""]
    lines += _summary(report, run)
    lines += _reproduce(report)
    lines += _model_section(report)
    lines += _inputs_section(report)
    lines += _expected_vs_actual(report)
    lines += _rule_section(report)
    lines += [
        "## Versions",
        "",
        f"- {adapter.engine}: {report.engine_version}",
        f"- numpy {np.__version__}",
        f"- Python {platform.python_version()} ({platform.machine()}, {platform.system()})",
        "",
        "`repro.py` prints the versions it runs with.",
        "",
        "## Files",
        "",
        f"- `{adapter.file_name}`: the model in {adapter.engine}'s format",
        "- `inputs.npz`: one array per model input, in order (`input0`, `input1`, ...), in the dtypes and shapes "
        "the model is run with",
        "- `expected.npz`: the expected value of each compared output (`output0`, ...)",
        "- `tolerance.json`: the criterion, and per output its type, tolerance and whether it is compared",
        "- `repro.py`: the reproducer (numpy and the engine's package only)",
        "- `case.json`: the same execution as an nnfuzz case (the NN HAL model, its inputs and the request)",
        "- `export.json`: this export's summary",
        "",
    ]
    if report.origin_lines:
        lines += ["## For nnfuzz users", "", *report.origin_lines, ""]
    return "\n".join(lines)


def _summary(report: Report, run: BareRun | None) -> list[str]:
    adapter, kernels = report.adapter, report.kernel_set
    what = operations_summary(report.model)
    names = adapter.kernel_set_names.get(kernels, kernels)
    lines = [
        f"`{adapter.file_name}` is a small model of {what}. Run by {adapter.engine} with the {kernels} kernel set "
        f"({names}) on the inputs in `inputs.npz`, it " + _outcome_words(run) + ".",
        "",
    ]
    showing = report.bare.showing()
    shown = ", ".join(showing) if showing else "none"
    lines.append(f"Kernel sets that show it: {shown} (of {', '.join(report.bare.runs)}).")
    lines.append("")
    lines.append(
        f"`{adapter.file_name}` is nnfuzz's translation of the NN HAL model below (some HAL operations become "
        f"several {adapter.engine} operators). Where {adapter.engine} computes what its operators define (see the "
        "operators listed below) and the values still differ from the HAL's, the fault is in the translation, not "
        "in the engine."
    )
    lines.append("")
    return lines


def _outcome_words(run: BareRun | None) -> str:
    if run is None:
        return "was not run at export"
    if run.outcome == RunOutcome.CRASH:
        return f"kills the process with {run.signal_name} (signal {run.signal})"
    if run.outcome == RunOutcome.HANG:
        return "never returns"
    if run.outcome == RunOutcome.ERROR:
        return f"raises an error: `{first_line(run.error)}`" + (
            "" if run.matches else ", where the model is valid and the expected values are defined"
        )
    if run.matches:
        return "computes the expected values (the bug does not show on the engine alone)"
    bad = [k for k, c in enumerate(run.comparisons) if c is not None and not c.ok]
    if run.output_count_error:
        return run.output_count_error
    return f"gives output{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))} out of tolerance"


def _reproduce(report: Report) -> list[str]:
    adapter, kernels = report.adapter, report.kernel_set
    return [
        "## Reproduce",
        "",
        "```",
        f"pip install {adapter.requirement(_version_only(report.engine_version))} numpy",
        f"python repro.py                   # the {kernels} kernel set",
        "python repro.py --kernels each    # each kernel set in turn",
        "```",
        "",
        "`repro.py` runs the model in a child process (a crash is reported with the signal that killed it), prints "
        "per output the worst element, actual against expected, and whether it is within tolerance, and exits 1 "
        "while the bug is present, 0 once the engine computes the expected values.",
        "",
    ]


def _model_section(report: Report) -> list[str]:
    model = report.model
    lines = [
        "## What the model computes",
        "",
        f"The model is the translation into {report.adapter.engine}'s format of this NN HAL 1.3 model (main's inputs "
        f"and outputs are those of `{report.adapter.file_name}`, in the same order):",
        "",
    ]
    graphs = [("main", model.main), *((f"subgraph {k + 1}", g) for k, g in enumerate(model.referenced))]
    for name, graph in graphs:
        if len(graphs) > 1:
            lines += [f"{name}:", ""]
        for n, op in enumerate(graph.operations):
            op_name = operation_name(op.type)
            words = semantics(op.type)
            lines.append(f"{n + 1}. **{op_name}**" + (f": {words}" if words else ""))
            arg_names = _arg_names(op.type, len(op.inputs))
            for k, index in enumerate(op.inputs):
                label = arg_names[k] if k < len(arg_names) else f"input {k}"
                lines.append(f"   - {label}: {_operand(model, graph, index)}")
            for k, index in enumerate(op.outputs):
                lines.append(f"   - output {k}: {_operand(model, graph, index)}")
        lines.append("")
    if report.engine_model_lines:
        lines += [f"The {report.adapter.engine} model (`{report.adapter.file_name}`), as the engine reads it:", ""]
        lines += ["```", *report.engine_model_lines, "```", ""]
    return lines


def _inputs_section(report: Report) -> list[str]:
    lines = ["## Inputs (`inputs.npz`)", ""]
    main = report.model.main
    for position, (index, value) in enumerate(zip(main.input_indexes, report.inputs)):
        operand = main.operands[index]
        text = f"- input{position}: {type_name(operand.type)} {list(np.shape(value))}{_quant(operand)}"
        if 0 < np.size(value) <= _SMALL:
            text += f" = {np.asarray(value).reshape(-1).tolist()}"
        lines.append(text)
    return [*lines, ""]


def _expected_vs_actual(report: Report) -> list[str]:
    adapter = report.adapter
    lines = [
        "## Expected and actual",
        "",
        f"| kernel set | {adapter.engine} name | result |",
        "|---|---|---|",
    ]
    for kernels, run in report.bare.runs.items():
        result = run.describe().partition(": ")[2]
        lines.append(f"| {kernels} | {adapter.kernel_set_names.get(kernels, kernels)} | {_cell(result)} |")
    lines.append("")
    run = report.bare.runs.get(report.kernel_set)
    if run is not None and run.outcome == RunOutcome.CRASH and run.error:
        lines += [f"What the child process wrote before it died ({report.kernel_set} kernels):", ""]
        last_words = run.error.splitlines()[1:] or [run.error]
        lines += ["```", *last_words, "```", ""]
    if run is None or run.outcome != RunOutcome.OUTPUTS:
        lines += _expected_only(report)
        return lines
    lines += [f"Per output, with the {report.kernel_set} kernel set:", ""]
    for out, comparison, actual in zip(report.expected.outputs, run.comparisons, run.outputs):
        shape = list(out.value.shape) if out.value is not None else list(np.shape(actual))
        lines.append(f"- output{out.position} ({out.type_name} {shape}):")
        if comparison is None:
            lines.append(f"  not compared: {out.reason}")
            continue
        if not out.compared and comparison.ok:
            lines.append(f"  values not compared ({out.reason})")
            continue
        lines.append(f"  {comparison.describe()}")
        if out.value is not None and 0 < out.value.size <= _SMALL:
            lines.append(f"  - expected: {out.value.reshape(-1).tolist()}")
            lines.append(f"  - actual: {np.asarray(actual).reshape(-1).tolist()}")
    return [*lines, ""]


def _expected_only(report: Report) -> list[str]:
    lines = []
    for out in report.expected.outputs:
        if out.value is None:
            lines.append(f"- output{out.position} ({out.type_name}): no expected values: {out.reason}")
        elif 0 < out.value.size <= _SMALL:
            lines.append(f"- output{out.position} ({out.type_name}) expected: {out.value.reshape(-1).tolist()}")
        else:
            lines.append(f"- output{out.position} ({out.type_name} {list(out.value.shape)}): in expected.npz")
    return [*lines, ""]


def _rule_section(report: Report) -> list[str]:
    model, expected = report.model, report.expected
    lines = [
        "## Why these values are expected",
        "",
        "The expected values are those the NN HAL 1.3 (hardware/interfaces/neuralnetworks, types.hal) defines for "
        "the model above, computed by nnfuzz's reference executor (float64 arithmetic, rounded to each output's "
        "type as the HAL prescribes). What each operation computes is given with it above.",
        "",
    ]
    operands = [o for g in (model.main, *model.referenced) for o in g.operands]
    if any(o.type in QUANTIZED_TYPES for o in operands):
        lines += [QUANTIZED_VALUES, ""]
    if any(_ACTIVATED & set(_arg_names(op.type, len(op.inputs))) for op in model.main.operations):
        lines += [FUSED_ACTIVATION, ""]
    if model.relax_computation_float32_to_float16:
        lines += [RELAXED, ""]
    lines += [
        "Accuracy (the HAL's conformance criterion, nnfuzz REQUIREMENTS O2): an element passes when "
        "|actual - expected| <= atol + rtol * |expected|, with float32 atol 1e-5 and rtol 5 * 2^-23, float16 and "
        "relaxed float32 atol = rtol = 5 * 2^-10, int32 and quantized types atol 1 (one quantization step), booleans "
        f"exact. Float expected values that are NaN, infinite or above {SKIP_ABOVE:g} in magnitude are not "
        "compared.",
        "",
    ]
    if expected.quantized_operations > 1:
        lines += [
            f"The model has {expected.quantized_operations} operations that round to a quantized type; each may "
            "round a tie the other way, so quantized outputs are allowed one step per such operation (at most 3).",
            "",
        ]
    lines += ["The tolerance of each output (`tolerance.json`):", ""]
    for out in expected.outputs:
        text = f"- output{out.position} ({out.type_name}): atol {out.atol:g}, rtol {out.rtol:g}"
        if not out.compared:
            text += f"; not compared: {out.reason}"
        lines.append(text)
    lines.append("")
    if expected.note:
        lines += [f"No output values are expected: {expected.note}. Only a crash or a hang is a bug here.", ""]
    return lines


def _arg_names(operation: int, count: int) -> list[str]:
    """The catalogue's names of an operation's inputs for a signature of `count` inputs ([] if none fits)."""
    spec = ops.get(operation)
    if spec is None:
        return []
    for signature in spec.signatures:
        args = signature.inputs
        if any(a.repeated for a in args):
            return [args[0].name] * count
        if signature.required_inputs <= count <= len(args):
            return [a.name for a in args[:count]]
    return []


def _operand(model: Model, graph: Subgraph, index: int) -> str:
    operand = graph.operands[index]
    text = f"{type_name(operand.type)}"
    if operand.dimensions or _is_tensor(operand.type):
        text += f" {list(operand.dimensions)}"
        if not operand.dimensions or 0 in operand.dimensions:
            text += " (0 or no dimensions: unknown until run)"
    text += _quant(operand)
    lifetime = operand.lifetime
    if lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
        value = constant_value(model, graph, index)
        if value is None:
            text += ", constant"
        elif value.ndim == 0 or value.size == 1 and not operand.dimensions:
            text += f" = {value.reshape(-1)[0].item()}"
        elif value.size <= _SMALL:
            text += f", constant {value.reshape(-1).tolist()}"
        else:
            text += f", constant ({value.size} values)"
    elif lifetime == OperandLifeTime.SUBGRAPH_INPUT and graph is model.main:
        text += f", model input {model.main.input_indexes.index(index)}"
    elif lifetime == OperandLifeTime.SUBGRAPH_OUTPUT and graph is model.main:
        text += f", model output {model.main.output_indexes.index(index)}"
    elif lifetime == OperandLifeTime.NO_VALUE:
        text += ", omitted"
    elif lifetime == OperandLifeTime.SUBGRAPH:
        text = f"subgraph {operand.location.offset + 1}"
    return text


def _quant(operand: object) -> str:
    op_type = operand.type  # type: ignore[attr-defined]
    extra = operand.extra_params  # type: ignore[attr-defined]
    if isinstance(extra, SymmPerChannelQuantParams):
        scales = [round(float(s), 9) for s in extra.scales[:4]]
        return f" per-channel scales {scales}{'...' if len(extra.scales) > 4 else ''} (axis {extra.channel_dim})"
    if op_type in QUANTIZED_TYPES or operand.scale:  # type: ignore[attr-defined]
        return f" scale {operand.scale:.9g} zero point {operand.zero_point}"  # type: ignore[attr-defined]
    return ""


def _is_tensor(operand_type: int) -> bool:
    return type_name(operand_type).startswith("TENSOR_")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _version_only(engine: str) -> str | None:
    """The version in an engine string ("ai-edge-litert 2.3.0" -> "2.3.0")."""
    parts = engine.split()
    return parts[-1] if len(parts) > 1 and parts[-1][:1].isdigit() else None
