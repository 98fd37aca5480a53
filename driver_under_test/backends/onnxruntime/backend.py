"""The ONNX Runtime backend behind the driver's backend seam (driver_under_test.backends): support, compile, load,
run.

Support is the translation's (`unsupported_reason`, asked per operation), so preparation fails only for what the
translation refuses. The ONNX model is built when first needed (the first execution, or saving the model cache
when preparation is given cache handles) and the session at the first execution (D3: no heavy resources at
preparation); both then serve every execution. The model cache keeps the serialized ONNX model, so preparing from
cache does not translate again.

The "kernel set" of this backend is ONNX Runtime's graph optimization level. The default is "all", ONNX Runtime's
own default for a session: the driver then runs models the way the engine's users do, with every graph rewrite
(QDQ fusion into integer kernels included) in play. "disabled" runs the translated graph node by node, which
tells a rewrite's bug from a kernel's.

What ONNX Runtime raises, or how it fails, is not guarded: an engine that aborts or gives wrong values is what
the harness looks for.

Time limits. ONNX Runtime can terminate a run from another thread (RunOptions.terminate, checked between kernels
and inside Loop bodies), so a run is stopped when it passes the execution's deadline (MISSED_DEADLINE_TRANSIENT,
as the numpy backend reports a deadline passed during execution) or, for a model with WHILE operations, its loop
budget (MISSED_DEADLINE_PERSISTENT, the status the HAL's reference gives a loop past its timeout). The HAL bounds
each WHILE by the loop timeout; a run can only be timed as a whole, so the budget is the loop timeout times the
number of WHILE operations in the model: a WHILE that is not nested in another runs at most once per run (main's
operations run once, an IF branch at most once), so loops that each respect the timeout spend less than the
budget together, and a loop that never ends is stopped once the budget is spent. The budget is looser than the
HAL's bound (a loop may run past the timeout while the others are quick) and counts the time of the other
operations too, which for a model whose non-loop work takes as long as a loop timeout could stop a run the HAL
lets finish.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from driver_under_test.backends import ConstantReader, Constants, Executed, RunSettings
from driver_under_test.backends._translated import TranslatedProgram
from driver_under_test.backends.onnxruntime._engine import OnnxRuntimeMissing, OptLevel, engine_version
from driver_under_test.backends.onnxruntime._program import OrtProgram, RunStopped
from driver_under_test.backends.onnxruntime._translate import translate, unsupported_reason
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, Model, OperandType, OperationType


class OrtBackendProgram(TranslatedProgram[OrtProgram]):
    """A model for ONNX Runtime: its ONNX model (the cache's artifact) and its session, each made on first use;
    the translations without absent optional inputs, made when an execution first omits them."""

    def __init__(
        self, model: Model, constants: ConstantReader, level: OptLevel, threads: int, onnx_model: bytes | None = None
    ) -> None:
        self.level = level
        self.threads = threads
        self._loops = _while_count(model)
        super().__init__(model, constants, translate, self._session, onnx_model)

    def _session(self, onnx_model: bytes) -> OrtProgram:
        return OrtProgram(onnx_model, self.level, self.threads)

    def execute(self, inputs: Sequence[np.ndarray | None], settings: RunSettings) -> Executed:
        """Main's outputs for main's inputs, run by ONNX Runtime (relaxed float32 is computed in float32, as D11
        allows); inputs without a value (None) are absent optional operands."""
        program, present = self.program_for(inputs)
        limit = self._limit(settings)
        started = time.perf_counter_ns()
        try:
            outputs = program.run(present, None if limit is None else limit[0])
        except RunStopped as exc:
            assert limit is not None
            raise DriverError(limit[1], f"{limit[2]}: {exc}", limit[3]) from exc
        return Executed(outputs, time.perf_counter_ns() - started)

    def _limit(self, settings: RunSettings) -> tuple[int, ErrorStatus, str, str] | None:
        """(how long the run may last, the status, message and rule of stopping it then), the nearer of the loop
        budget and the deadline; None without either."""
        limits = []
        if self._loops:
            budget = settings.loop_timeout_ns * self._loops
            limits.append((budget, ErrorStatus.MISSED_DEADLINE_PERSISTENT, "WHILE loop exceeded the loop timeout",
                           "qos.loop_timeout"))  # fmt: skip
        if settings.deadline_ns is not None:
            remaining = settings.deadline_ns - time.monotonic_ns()
            limits.append((remaining, ErrorStatus.MISSED_DEADLINE_TRANSIENT, "deadline passed during execution",
                           "qos.deadline"))  # fmt: skip
        return min(limits, key=lambda limit: limit[0]) if limits else None


# Relative execution time a device reports per optimization level (getCapabilities: lower is faster).
_EXEC_TIME = {OptLevel.DISABLED: 0.8, OptLevel.BASIC: 0.7, OptLevel.EXTENDED: 0.6, OptLevel.ALL: 0.6}


class OrtBackend:
    """ONNX Runtime on its CPU provider at one graph optimization level."""

    export_format = "onnx"  # a program's artifact is the ONNX model ONNX Runtime runs

    # The HAL types some translated operation computes on.
    operand_types = frozenset(
        t for t in OperandType if t not in (OperandType.UINT32, OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
    )

    def __init__(self, level: OptLevel | str = OptLevel.ALL, threads: int = 1) -> None:
        self.kernel_set = OptLevel(level).value
        self.threads = int(threads)
        self.name = f"onnxruntime-{self.kernel_set}"
        self.exec_time = _EXEC_TIME[OptLevel(self.kernel_set)]

    def version(self) -> str:
        """The engine, its version and the optimization level."""
        return f"{self.engine()}, graph optimization {self.kernel_set}"

    def engine(self) -> str:
        """The distribution and its version."""
        return engine_version()

    def runs(self, model: Model, subgraph: int, operation: int, constants: ConstantReader) -> bool:
        """The translation has a rule for the operation, and its operands and parameters meet the rule's conditions."""
        return unsupported_reason(model, subgraph, operation, constants) is None

    def compile(self, model: Model, constants: Constants) -> OrtBackendProgram:
        """The program of the model, translated into one ONNX model when first needed."""
        return OrtBackendProgram(model, _reader(constants), OptLevel(self.kernel_set), self.threads)

    def load(self, model: Model, constants: Constants, artifact: bytes) -> OrtBackendProgram:
        """The ONNX model a model cache kept (verified by the cache), without translating again."""
        return OrtBackendProgram(model, _reader(constants), OptLevel(self.kernel_set), self.threads, bytes(artifact))


def _while_count(model: Model) -> int:
    """How many WHILE operations the model has, in main and its referenced subgraphs."""
    graphs = [model.main, *model.referenced]
    return sum(operation.type == OperationType.WHILE for graph in graphs for operation in graph.operations)


def _reader(constants: Constants) -> ConstantReader:
    return lambda subgraph, index: constants[(subgraph, index)]


def create_backend(level: OptLevel | str = OptLevel.ALL, threads: int = 1) -> OrtBackend:
    """The ONNX Runtime backend at this graph optimization level (all by default)."""
    return OrtBackend(level, threads)


__all__ = ["OnnxRuntimeMissing", "OrtBackend", "OrtBackendProgram", "create_backend"]
