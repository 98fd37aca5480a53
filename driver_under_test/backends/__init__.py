"""What runs a prepared model: the backends a device can be created with.

A device's HAL plumbing (validation, pools, memory domains, bursts, caching, the fault catalogue) is the same
whatever its backend. The backend decides which operations the device runs (getSupportedOperations answers from
it, so the device refuses what the backend cannot run instead of running it wrongly), compiles a validated model
into a Program once per prepared model, and runs that Program for every execution. A Program's `artifact` is what
the model cache keeps of it, so that `load` can rebuild it without compiling again.

Backends are listed by name in one table; `create_backend(name, **options)` builds one (options are the backend's
own, e.g. LiteRT's kernel set, ONNX Runtime's graph optimization level).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from driver_under_test.faults import FaultSet
from harness.hal import Model

# (subgraph, operand) -> the value of a constant operand, in its storage dtype and dimensions (0 = main,
# k + 1 = referenced subgraph k).
Constants = Mapping[tuple[int, int], np.ndarray]
ConstantReader = Callable[[int, int], np.ndarray]


@dataclass(frozen=True)
class RunSettings:
    """Per-execution settings a Program runs under."""

    relaxed: bool  # relaxComputationFloat32toFloat16: float32 may be computed with float16 range and precision
    faults: FaultSet
    deadline_ns: int | None  # absolute, time.monotonic_ns() clock
    loop_timeout_ns: int


@dataclass(frozen=True)
class Executed:
    """What one run of a Program gives: main's outputs (storage dtype, actual shape) and time spent computing."""

    outputs: list[np.ndarray]
    device_ns: int


class Program(Protocol):
    """A model compiled for one backend, run once per execution (concurrent runs must be safe)."""

    @property
    def artifact(self) -> bytes:
        """What the model cache keeps so that the backend can load the program without compiling again."""
        ...

    def execute(self, inputs: Sequence[np.ndarray | None], settings: RunSettings) -> Executed:
        """Main's outputs for main's inputs (None: an input without value); DriverError or any exception on failure."""
        ...


class Backend(Protocol):
    """An engine that runs prepared models."""

    @property
    def name(self) -> str:
        """The variant's name (e.g. "numpy", "litert-optimized"), part of the device's version string."""
        ...

    @property
    def operand_types(self) -> frozenset[int]:
        """The operand types some operation of the backend computes on (getCapabilities lists these)."""
        ...

    @property
    def exec_time(self) -> float:
        """Execution time relative to the CPU (1.0) that getCapabilities reports."""
        ...

    @property
    def export_format(self) -> str | None:
        """The file format of its programs' artifacts when they are an engine's own models (None: no such format)."""
        ...

    @property
    def kernel_set(self) -> str:
        """Which of the engine's kernel sets it runs ("" when it has one)."""
        ...

    def version(self) -> str:
        """The engine, its version and the kernel set (e.g. "ai-edge-litert 2.3.0, optimized kernels")."""
        ...

    def engine(self) -> str:
        """The engine and its version, as its package names them (e.g. "ai-edge-litert 2.3.0")."""
        ...

    def runs(self, model: Model, subgraph: int, operation: int, constants: ConstantReader) -> bool:
        """Whether the backend runs this operation of a valid model (control flow bodies are asked one by one)."""
        ...

    def compile(self, model: Model, constants: Constants) -> Program:
        """The program of a validated model whose every operation the backend runs."""
        ...

    def load(self, model: Model, constants: Constants, artifact: bytes) -> Program:
        """The program a model cache kept (`artifact`), for the model it was compiled from."""
        ...


BackendFactory = Callable[..., Backend]
_FACTORIES: dict[str, str] = {
    # name -> module defining its factory `create_backend(**options)`, imported when first asked for (an engine's
    # import is expensive, and it may not be installed).
    "numpy": "driver_under_test.backends.numpy",
    "litert": "driver_under_test.backends.litert.backend",
    "onnxruntime": "driver_under_test.backends.onnxruntime.backend",
}


def backend_names() -> list[str]:
    """The names create_backend knows."""
    return sorted(_FACTORIES)


def create_backend(name: str, **options: object) -> Backend:
    """A backend by name with its own options; ValueError for an unknown name or option."""
    module = _FACTORIES.get(name)
    if module is None:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(backend_names())}")
    factory: BackendFactory = importlib.import_module(module).create_backend
    return factory(**options)
