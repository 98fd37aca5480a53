"""The LiteRT backend behind the driver's backend seam (driver_under_test.backends): support, compile, load, run.

Support is the translation's (`unsupported_reason`, asked per operation). Compiling translates the model into
one flatbuffer at preparation (translation problems show there, where the HAL expects them); the interpreter is
created at the first execution (D3: no heavy resources at preparation) and serves every execution after it. The
model cache keeps the flatbuffer, so preparing from cache does not translate again. An execution that gives
optional model inputs no value runs another translation, without them, made the first time that set of inputs
is absent and kept with the prepared model.

What LiteRT raises, or how it fails, is not guarded: an engine that aborts the process or gives wrong values is what
the harness looks for. Two HAL duties LiteRT cannot take: WHILE's loop timeout (LiteRT's WHILE has none and an
invoke cannot be cancelled, so a loop that never ends hangs the execution) and deadlines during an execution (they
are checked before it starts).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np

from driver_under_test.backends import ConstantReader, Constants, Executed, RunSettings
from driver_under_test.backends.litert._engine import KernelSet, engine_version
from driver_under_test.backends.litert._program import LiteRTProgram
from driver_under_test.backends.litert._translate import translate, unsupported_reason
from harness.hal import Model


class LiteRTBackendProgram:
    """A translated model: its flatbuffer (the cache's artifact) and the interpreter made on first use; the
    translations without absent optional inputs, made when an execution first omits them."""

    def __init__(
        self, flatbuffer: bytes, kernel_set: KernelSet, threads: int, model: Model, constants: ConstantReader
    ) -> None:
        self.artifact = flatbuffer
        self.kernel_set = kernel_set
        self.threads = threads
        self._model = model
        self._constants = constants
        self._programs: dict[tuple[int, ...], LiteRTProgram] = {}  # absent input positions -> interpreter
        self._lock = threading.Lock()

    def _interpreter(self, absent: tuple[int, ...]) -> LiteRTProgram:
        with self._lock:
            program = self._programs.get(absent)
            if program is None:
                flatbuffer = translate(self._model, self._constants, absent) if absent else self.artifact
                program = self._programs[absent] = LiteRTProgram(flatbuffer, self.kernel_set, self.threads)
            return program

    def execute(self, inputs: Sequence[np.ndarray | None], settings: RunSettings) -> Executed:
        """Main's outputs for main's inputs, run by LiteRT (relaxed float32 is computed in float32, as D11 allows);
        inputs without a value (None) are absent optional operands."""
        program = self._interpreter(tuple(k for k, value in enumerate(inputs) if value is None))
        started = time.perf_counter_ns()
        outputs = program.run([value for value in inputs if value is not None])
        return Executed(outputs, time.perf_counter_ns() - started)


class LiteRTBackend:
    """LiteRT with one of its three kernel sets."""

    def __init__(self, kernel_set: KernelSet | str = KernelSet.OPTIMIZED, threads: int = 1) -> None:
        self.kernel_set = KernelSet(kernel_set)
        self.threads = int(threads)
        self.name = f"litert-{self.kernel_set.value}"

    def version(self) -> str:
        """The engine, its version and the kernel set."""
        return f"{engine_version()}, {self.kernel_set.value} kernels"

    def runs(self, model: Model, subgraph: int, operation: int, constants: ConstantReader) -> bool:
        """The translation has a rule for the operation, and its operands and parameters meet the rule's conditions."""
        return unsupported_reason(model, subgraph, operation, constants) is None

    def compile(self, model: Model, constants: Constants) -> LiteRTBackendProgram:
        """The model translated into one flatbuffer."""
        read = _reader(constants)
        return LiteRTBackendProgram(translate(model, read), self.kernel_set, self.threads, model, read)

    def load(self, model: Model, constants: Constants, artifact: bytes) -> LiteRTBackendProgram:
        """The flatbuffer a model cache kept (verified by the cache), without translating again."""
        return LiteRTBackendProgram(bytes(artifact), self.kernel_set, self.threads, model, _reader(constants))


def _reader(constants: Constants) -> ConstantReader:
    return lambda subgraph, index: constants[(subgraph, index)]


def create_backend(kernel_set: KernelSet | str = KernelSet.OPTIMIZED, threads: int = 1) -> LiteRTBackend:
    """The LiteRT backend with this kernel set (optimized without XNNPACK by default)."""
    return LiteRTBackend(kernel_set, threads)
