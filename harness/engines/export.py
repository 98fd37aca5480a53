"""Exporting a case as a standalone reproducer for an engine's owner: a folder that needs only the engine's package
and numpy.

    engine_model = engine_model_of(case, device)
    export = export_case(case, engine_model, Path("out"), origin=Origin(signature=..., title=...))

The folder (EXPORT_FILES):
    model.tflite    the engine model, in the engine's own format (the adapter's file name: model.onnx for ONNX)
    inputs.npz      one array per model input, in order (input0, input1, ...), HAL storage dtypes, actual shapes
    expected.npz    the reference's value of each output that has one (output0, ...)
    tolerance.json  the criterion and, per output, its type, atol, rtol and whether it is compared
    repro.py        the reproducer: runs the model in a child process on a kernel set (--kernels, default the
                    finding's), prints actual against expected per output, exits 1 while the bug is present
    README.md       the bug report: what the model computes, expected against actual, the HAL rule, versions
    case.json       the case, for nnfuzz users (`nnfuzz repro case.json --driver ...`)
    export.json     the summary of this export (Export.to_json)

The export runs the engine model bare on every kernel set (harness.engines.bare) to write what each gives; the
reproducer's verdict on its default kernel set is `Export.reproduces`.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.case import Case
from harness.engines._readme import Report, readme, title
from harness.engines.adapter import DEFAULT_TIMEOUT_S, adapter_for, input_arrays
from harness.engines.bare import BareRuns, bare_runs, engine_inputs, expected_of
from harness.hal import EngineModel

EXPORT_VERSION = 1
EXPORT_FILES = (
    "inputs.npz",
    "expected.npz",
    "tolerance.json",
    "repro.py",
    "README.md",
    "case.json",
    "export.json",
)  # and the model, under its adapter's file name


@dataclass(frozen=True)
class Origin:
    """Where an exported case comes from (a finding), as the README and the summary tell nnfuzz users."""

    signature: str = ""
    target: str = ""
    outcome: str = ""
    rule: str | None = None
    title: str = ""
    details: str = ""
    driver: str = ""
    faults: tuple[str, ...] = ()
    folder: str = ""

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return {**self.__dict__, "faults": list(self.faults)}


@dataclass(frozen=True)
class Export:
    """A written reproducer folder."""

    folder: Path
    title: str
    engine: str  # the engine and its version, as the device named it
    format: str
    kernel_set: str  # the reproducer's default kernel set
    device_kernel_set: str  # the kernel set the device runs the model on
    files: tuple[str, ...]
    bare: BareRuns
    origin: Origin = field(default_factory=Origin)

    @property
    def reproduces(self) -> bool:
        """True when the engine alone fails on the reproducer's kernel set (repro.py exits 1)."""
        return self.kernel_set in self.bare.showing()

    def to_json(self) -> dict:
        """export.json."""
        return {
            "version": EXPORT_VERSION,
            "title": self.title,
            "engine": self.engine,
            "format": self.format,
            "kernel_set": self.kernel_set,
            "device_kernel_set": self.device_kernel_set,
            "reproduces": self.reproduces,
            "showing": list(self.bare.showing()),
            "files": list(self.files),
            "bare_runs": self.bare.to_json()["runs"],
            "origin": self.origin.to_json(),
            "versions": {"numpy": np.__version__, "python": platform.python_version()},
        }


def export_case(
    case: Case,
    engine_model: EngineModel,
    out: Path,
    *,
    kernel_set: str | None = None,
    origin: Origin | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Export:
    """Write the reproducer folder of a case's execution on an engine model into `out` (created; the files it
    writes replace files of the same names). `kernel_set` is the reproducer's default (the engine model's own by
    default); raises NotExportable for a case without inputs to run, UnknownFormat for a format without adapter."""
    adapter = adapter_for(engine_model.format)
    kernels = adapter.check_kernel_set(kernel_set or engine_model.kernel_set)
    origin = origin or Origin()
    inputs = engine_inputs(case)
    expected = expected_of(case)
    runs = bare_runs(case, engine_model, timeout_s=timeout_s, expected=expected)
    live = case.materialized()
    report = Report(
        adapter=adapter,
        model=live.model,
        inputs=inputs,
        expected=expected,
        bare=runs,
        kernel_set=kernels,
        engine_version=engine_model.engine,
        origin_lines=_origin_lines(origin),
        engine_model_lines=adapter.describe_model(engine_model.data),
    )
    heading = title(report)
    out.mkdir(parents=True, exist_ok=True)
    (out / adapter.file_name).write_bytes(engine_model.data)
    np.savez(out / "inputs.npz", **input_arrays(inputs))
    np.savez(out / "expected.npz", **{f"output{o.position}": o.value for o in expected.outputs if o.value is not None})
    (out / "tolerance.json").write_text(json.dumps(expected.tolerance_json(), indent=1) + "\n")
    script = out / "repro.py"
    script.write_text(adapter.script(kernels, heading))
    script.chmod(0o755)
    (out / "README.md").write_text(readme(report))
    (out / "case.json").write_text(case.dumps() + "\n")
    export = Export(
        folder=out,
        title=heading,
        engine=engine_model.engine,
        format=engine_model.format,
        kernel_set=kernels,
        device_kernel_set=engine_model.kernel_set,
        files=(adapter.file_name, *EXPORT_FILES),
        bare=runs,
        origin=origin,
    )
    (out / "export.json").write_text(json.dumps(export.to_json(), indent=1, sort_keys=True) + "\n")
    return export


def _origin_lines(origin: Origin) -> list[str]:
    if not origin.signature and not origin.driver:
        return []
    lines = []
    if origin.signature:
        how = ", ".join(w for w in (origin.target, origin.outcome, f"rule {origin.rule}" if origin.rule else "") if w)
        lines.append(f"Finding `{origin.signature}`{f' ({how})' if how else ''}: {origin.title or 'untitled'}")
        if origin.details:
            lines += ["", f"    {origin.details}"]
        lines.append("")
    if origin.driver:
        faults = f" --faults {','.join(origin.faults)}" if origin.faults else ""
        lines.append(f"Through the HAL: `nnfuzz repro case.json --driver {origin.driver}{faults}`.")
    return lines
