"""The numpy backend: the driver's own graph executor and kernels (the default backend).

It runs an operation when a kernel is registered for it and takes the type of its first input; compiling binds
kernels to operations, so a model cache needs nothing of it (its artifact is empty) and loading compiles again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from driver_under_test.backends import ConstantReader, Constants, Executed, RunSettings
from driver_under_test.backends.numpy.executor import (
    CompiledSubgraph,
    Executor,
    RunContext,
    compile_model,
    operand_tensor,
)
from driver_under_test.backends.numpy.kernels import lookup
from harness.hal import Model, OperandType

NAME = "numpy"
_TYPE_CLASSES = frozenset({int, OperandType})


@dataclass(frozen=True)
class NumpyProgram:
    """Compiled subgraphs (main first) run by the executor."""

    subgraphs: list[CompiledSubgraph]
    artifact: bytes = b""

    def execute(self, inputs: Sequence[np.ndarray | None], settings: RunSettings) -> Executed:
        """Main's outputs for main's inputs."""
        main = self.subgraphs[0]
        tensors = [
            None if value is None else operand_tensor(main.operands[index], shape=value.shape, data=value)
            for value, index in zip(inputs, main.inputs)
        ]
        s = settings
        ctx = RunContext(self.subgraphs, s.relaxed, s.faults, s.deadline_ns, s.loop_timeout_ns)
        outputs = Executor(ctx).run(0, tensors)
        return Executed([t.data for t in outputs], ctx.kernel_ns)


class NumpyBackend:
    """The driver's own kernels."""

    name = NAME
    operand_types = frozenset(OperandType)  # its kernels cover every HAL type some operation takes
    exec_time = 0.9  # relative execution time reported by getCapabilities (1.0: the CPU)
    export_format = None  # compiled subgraphs are the driver's own objects, not an engine's model
    kernel_set = ""

    def version(self) -> str:
        """numpy and its version."""
        return self.engine()

    def engine(self) -> str:
        """numpy and its version."""
        return f"numpy {np.__version__}"

    def runs(self, model: Model, subgraph: int, operation: int, constants: ConstantReader) -> bool:
        """A kernel is registered for the operation and takes the type of its first input."""
        sg = model.main if subgraph == 0 else model.referenced[subgraph - 1]
        op = sg.operations[operation]
        entry = lookup(op.type)
        if entry is None or not op.inputs:
            return False
        t = sg.operands[op.inputs[0]].type
        # Types were validated as integers; ints and OperandType members hash as themselves.
        return (t if t.__class__ in _TYPE_CLASSES else int(t)) in entry.types

    def compile(self, model: Model, constants: Constants) -> NumpyProgram:
        """Kernels bound to operations, constants as runtime tensors."""
        return NumpyProgram(compile_model(model, constants))

    def load(self, model: Model, constants: Constants, artifact: bytes) -> NumpyProgram:
        """Compiled again: binding kernels costs less than any format for it would."""
        return self.compile(model, constants)


def create_backend() -> NumpyBackend:
    """The numpy backend (it has no options)."""
    return NumpyBackend()
