"""A driver over a planted engine, for the classification tests: the bundled driver's HAL plumbing over LiteRT's
reference kernels, as an engine with two kernel sets, "good" (right) and "bad" (ADD gives one too many, or, with
NNFUZZ_PLANTED_ABORT set, aborts the process). The engine's models are LiteRT flatbuffers in a format of its own,
"planted", whose adapter (registered by `register`) runs them bare with the same planted bug on "bad".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import driver_under_test
from driver_under_test.backends import Executed, RunSettings
from driver_under_test.backends.litert.backend import LiteRTBackend
from driver_under_test.device import DriverDevice
from driver_under_test.faults import resolve
from driver_under_test.options import build_options
from harness.engines.adapter import EngineAdapter, adapters, register_adapter
from harness.hal import Model, OperationType

FORMAT = "planted"
ABORT = "NNFUZZ_PLANTED_ABORT"
VARIANTS = {
    "numpy": "driver_under_test:create_device",
    "planted-good": "tests.campaign.planted_engine:create_good",
    "planted-bad": "tests.campaign.planted_engine:create_bad",
}


@dataclass
class _Program:
    inner: object
    bad: bool
    has_add: bool

    @property
    def artifact(self) -> bytes:
        return self.inner.artifact  # type: ignore[attr-defined]

    def execute(self, inputs: Sequence[np.ndarray | None], settings: RunSettings) -> Executed:
        if self.bad and self.has_add and os.environ.get(ABORT):
            os.abort()
        executed = self.inner.execute(inputs, settings)  # type: ignore[attr-defined]
        if not (self.bad and self.has_add):
            return executed
        return Executed([np.asarray(o + 1, o.dtype) for o in executed.outputs], executed.device_ns)


class PlantedBackend:
    """LiteRT's reference kernels under another engine's name, with the planted bug on its "bad" kernel set."""

    export_format = FORMAT

    def __init__(self, kernel_set: str) -> None:
        self.litert = LiteRTBackend("reference")
        self.kernel_set = kernel_set
        self.name = f"planted-{kernel_set}"
        self.operand_types = self.litert.operand_types
        self.exec_time = self.litert.exec_time

    def version(self) -> str:
        return f"{self.engine()}, {self.kernel_set} kernels"

    def engine(self) -> str:
        return "planted-engine 1.0"

    def runs(self, model: Model, subgraph: int, operation: int, constants: object) -> bool:
        return self.litert.runs(model, subgraph, operation, constants)  # type: ignore[arg-type]

    def compile(self, model: Model, constants: object) -> _Program:
        return self._planted(model, self.litert.compile(model, constants))  # type: ignore[arg-type]

    def load(self, model: Model, constants: object, artifact: bytes) -> _Program:
        return self._planted(model, self.litert.load(model, constants, artifact))  # type: ignore[arg-type]

    def _planted(self, model: Model, program: object) -> _Program:
        has_add = any(op.type == OperationType.ADD for op in model.main.operations)
        return _Program(program, self.kernel_set == "bad", has_add)


def _device(kernel_set: str, faults: object = None, **options: object) -> DriverDevice:
    return DriverDevice(build_options(**options), resolve(faults or []), PlantedBackend(kernel_set))


def create_good(faults: object = None, **options: object) -> DriverDevice:
    """The planted engine's right kernel set."""
    return _device("good", faults, **options)


def create_bad(faults: object = None, **options: object) -> DriverDevice:
    """The planted engine's wrong kernel set."""
    return _device("bad", faults, **options)


class _ElsewhereBackend(PlantedBackend):
    """The same planted bug under a second engine's name: a variant over another engine."""

    def engine(self) -> str:
        return "other-engine 2.0"


def create_bad_elsewhere(faults: object = None, **options: object) -> DriverDevice:
    """Another engine with the planted engine's bug on its "bad" kernel set."""
    return DriverDevice(build_options(**options), resolve(faults or []), _ElsewhereBackend("bad"))


def register() -> None:
    """Register the planted format's adapter (once per process)."""
    if FORMAT not in adapters():
        register_adapter(
            EngineAdapter(
                format=FORMAT,
                engine="planted-engine",
                package="ai-edge-litert",
                module="ai_edge_litert",
                file_name="model.tflite",
                kernel_sets=("good", "bad"),
                script_part=str(Path(__file__).with_name("planted_script.py")),
            )
        )


assert driver_under_test  # the bundled driver is imported first: its catalogue of faults is complete
