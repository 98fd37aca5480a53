"""The LiteRT backend behind the driver's backend seam (driver_under_test.backends): support, compile, load, run.

Support is the translation's (`unsupported_reason`, asked per operation), so preparation fails only for what the
translation refuses. The flatbuffer is built when first needed (the first execution, or saving the model cache
when preparation is given cache handles) and the interpreter at the first execution (D3: no heavy resources at
preparation); both then serve every execution. The model cache keeps the flatbuffer, so preparing from cache does
not translate again.

What LiteRT raises, or how it fails, is not guarded: an engine that aborts the process or gives wrong values is what
the harness looks for. Two HAL duties LiteRT cannot take: WHILE's loop timeout (LiteRT's WHILE has none and an
invoke cannot be cancelled, so a loop that never ends hangs the execution) and deadlines during an execution (they
are checked before it starts).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from driver_under_test.backends import ConstantReader, Constants, Executed, RunSettings
from driver_under_test.backends._run_time import check_run_time, run_time_parameters
from driver_under_test.backends._translated import TranslatedProgram
from driver_under_test.backends.litert._engine import KernelSet, LiteRTMissing, engine_version
from driver_under_test.backends.litert._program import LiteRTProgram
from driver_under_test.backends.litert._translate import translate, unsupported_reason
from harness.hal import Model, OperandType


class LiteRTBackendProgram(TranslatedProgram[LiteRTProgram]):
    """A model for LiteRT: its flatbuffer (the cache's artifact) and its interpreter, each made on first use; the
    translations without absent optional inputs, made when an execution first omits them."""

    def __init__(
        self,
        model: Model,
        constants: ConstantReader,
        kernel_set: KernelSet,
        threads: int,
        flatbuffer: bytes | None = None,
    ) -> None:
        self.kernel_set = kernel_set
        self.threads = threads
        self._run_time = run_time_parameters(model)  # bounded parameters an execution gives
        super().__init__(model, constants, translate, self._interpreter, flatbuffer)

    def _interpreter(self, flatbuffer: bytes) -> LiteRTProgram:
        return LiteRTProgram(flatbuffer, self.kernel_set, self.threads)

    def execute(self, inputs: Sequence[np.ndarray | None], settings: RunSettings) -> Executed:
        """Main's outputs for main's inputs, run by LiteRT (relaxed float32 is computed in float32, as D11 allows);
        inputs without a value (None) are absent optional operands; a bounded parameter given outside its domain is
        INVALID_ARGUMENT before LiteRT runs."""
        check_run_time(self._run_time, inputs)
        program, present = self.program_for(inputs)
        started = time.perf_counter_ns()
        outputs = program.run(present)
        return Executed(outputs, time.perf_counter_ns() - started)


# Relative execution time a device reports per kernel set (getCapabilities: lower is faster than the CPU's 1.0).
_EXEC_TIME = {KernelSet.OPTIMIZED: 0.5, KernelSet.XNNPACK: 0.4, KernelSet.REFERENCE: 2.0}


class LiteRTBackend:
    """LiteRT with one of its three kernel sets."""

    export_format = "tflite"  # a program's artifact is the TFLite flatbuffer LiteRT runs

    # The HAL types LiteRT computes on in some operation (TENSOR_QUANT16_ASYMM has no kernel; OEM types none).
    operand_types = frozenset(
        t
        for t in OperandType
        if t not in (OperandType.TENSOR_QUANT16_ASYMM, OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
    )

    def __init__(self, kernel_set: KernelSet | str = KernelSet.OPTIMIZED, threads: int = 1) -> None:
        self.kernel_set = KernelSet(kernel_set).value
        self.threads = int(threads)
        self.name = f"litert-{self.kernel_set}"
        self.exec_time = _EXEC_TIME[KernelSet(self.kernel_set)]

    def version(self) -> str:
        """The engine, its version and the kernel set."""
        return f"{self.engine()}, {self.kernel_set} kernels"

    def engine(self) -> str:
        """The distribution and its version."""
        return engine_version()

    def runs(self, model: Model, subgraph: int, operation: int, constants: ConstantReader) -> bool:
        """The translation has a rule for the operation, and its operands and parameters meet the rule's conditions."""
        return unsupported_reason(model, subgraph, operation, constants) is None

    def compile(self, model: Model, constants: Constants) -> LiteRTBackendProgram:
        """The program of the model, translated into one flatbuffer when first needed."""
        return LiteRTBackendProgram(model, _reader(constants), KernelSet(self.kernel_set), self.threads)

    def load(self, model: Model, constants: Constants, artifact: bytes) -> LiteRTBackendProgram:
        """The flatbuffer a model cache kept (verified by the cache), without translating again."""
        reader = _reader(constants)
        return LiteRTBackendProgram(model, reader, KernelSet(self.kernel_set), self.threads, bytes(artifact))


def _reader(constants: Constants) -> ConstantReader:
    return lambda subgraph, index: constants[(subgraph, index)]


def create_backend(kernel_set: KernelSet | str = KernelSet.OPTIMIZED, threads: int = 1) -> LiteRTBackend:
    """The LiteRT backend with this kernel set (optimized without XNNPACK by default)."""
    return LiteRTBackend(kernel_set, threads)


__all__ = ["LiteRTBackend", "LiteRTBackendProgram", "LiteRTMissing", "create_backend"]
