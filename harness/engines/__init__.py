"""Third-party engines a driver runs models on: running a case's engine model bare, and exporting it as a
standalone reproducer for the engine's owner.

A device over an engine hands out the engine's model of a HAL model (harness.hal.EngineExport). Per engine model
format, an adapter (`EngineAdapter`, registered by format: "tflite" for LiteRT, "onnx" for ONNX Runtime) runs such
a model in a child process on one of the engine's kernel sets (a crash is reported with its signal) and writes the
reproducer script.

- `engine_model_of(case, device)`: the device's engine model of a case's model (NotExportable when there is none).
- `bare_runs(case, engine_model) -> BareRuns`: the engine model run bare on every kernel set, each `BareRun`
  judged against the reference with harness.oracle.accuracy.compare (for classifying findings).
- `export_case(case, engine_model, out) -> Export`: the reproducer folder (model, inputs, expected outputs,
  tolerances, repro.py, README.md as a bug report, case.json, export.json).

Layer 5: it imports hal, ops, reference, oracle and case, and the engines' own packages only lazily (LiteRT's
schema or the onnx package to describe a model; the engine itself runs in child processes). It never imports a
driver.
"""

from harness.engines import onnx, tflite  # noqa: F401  (register the ONNX Runtime and LiteRT adapters)
from harness.engines.adapter import (
    DEFAULT_TIMEOUT_S,
    EngineAdapter,
    EngineRun,
    RunOutcome,
    UnknownFormat,
    adapter_for,
    adapters,
    register_adapter,
)
from harness.engines.bare import (
    BareRun,
    BareRuns,
    Expected,
    ExpectedOutput,
    NotExportable,
    bare_runs,
    engine_inputs,
    engine_model_of,
    expected_of,
    judge_run,
)
from harness.engines.export import EXPORT_FILES, Export, Origin, export_case

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "EXPORT_FILES",
    "BareRun",
    "BareRuns",
    "EngineAdapter",
    "EngineRun",
    "Expected",
    "ExpectedOutput",
    "Export",
    "NotExportable",
    "Origin",
    "RunOutcome",
    "UnknownFormat",
    "adapter_for",
    "adapters",
    "bare_runs",
    "engine_inputs",
    "engine_model_of",
    "expected_of",
    "export_case",
    "judge_run",
    "register_adapter",
]
