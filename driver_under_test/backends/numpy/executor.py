"""The numpy backend's graph executor: compiles a validated model into runnable subgraphs and runs them.

Compilation turns the constants (copied out of the client's memory once, by the device) into runtime Tensors and
binds each operation to its kernel. Running evaluates operations in order on runtime Tensors; IF and WHILE call
back into `run_subgraph`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from driver_under_test.backends import Constants
from driver_under_test.backends.numpy.kernels import OpCall, Tensor, lookup
from driver_under_test.backends.numpy.kernels.registry import KernelFn
from driver_under_test.errors import DriverError, failure
from driver_under_test.faults import FaultSet, define
from harness.hal import (
    ErrorStatus,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Subgraph,
    SymmPerChannelQuantParams,
    numpy_dtype,
)

ABORT_ON_SINGLE_OP_SUBGRAPH = define(
    "abort_on_single_op_subgraph",
    "robustness",
    "Sizes the scratch arena of a referenced subgraph (run by IF or WHILE) by its number of operations minus "
    "one, assuming the last operation writes straight into the caller's outputs; a referenced subgraph with a "
    "single operation (e.g. a WHILE condition made of one LESS) gets no arena and an internal assertion aborts "
    "the process with SIGABRT when it runs (breaks D9, D25).",
).name


def operand_tensor(operand: Operand, shape: tuple[int, ...] | None = None, data: np.ndarray | None = None) -> Tensor:
    """A runtime Tensor carrying an operand's type and quantization parameters."""
    scales = None
    channel_dim = 0
    if isinstance(operand.extra_params, SymmPerChannelQuantParams):
        scales = np.asarray(operand.extra_params.scales, dtype=np.float32)
        channel_dim = operand.extra_params.channel_dim
    # Positional: a dataclass matches keyword arguments at a cost that shows in every compilation and execution.
    return Tensor(
        int(operand.type),
        tuple(operand.dimensions) if shape is None else shape,
        float(operand.scale),
        int(operand.zero_point),
        scales,
        channel_dim,
        data,
    )


@dataclass
class CompiledOperation:
    """An operation bound to its kernel."""

    type: int
    inputs: list[int]
    outputs: list[int]
    fn: KernelFn


@dataclass
class CompiledSubgraph:
    """A subgraph ready to run: operand metadata, resolved constants and bound operations."""

    operands: list[Operand]
    constants: dict[int, Tensor]
    operations: list[CompiledOperation]
    inputs: list[int]
    outputs: list[int]
    output_meta: list[Tensor] = field(default_factory=list)


def compile_model(model: Model, constants: Constants) -> list[CompiledSubgraph]:
    """Compile main (index 0) and every referenced subgraph (index k+1); GENERAL_FAILURE if a kernel is missing."""
    return [_compile_subgraph(s, sg, constants) for s, sg in enumerate([model.main, *model.referenced])]


def _compile_subgraph(s: int, sg: Subgraph, values: Constants) -> CompiledSubgraph:
    constants: dict[int, Tensor] = {}
    for index, operand in enumerate(sg.operands):
        lifetime = operand.lifetime
        if lifetime in _CONSTANT_LIFETIMES:
            constants[index] = operand_tensor(operand, data=values[(s, index)])
        elif lifetime == _SUBGRAPH_LIFETIME:
            # Kernels of IF/WHILE read the referenced subgraph's index from the tensor's value.
            constants[index] = Tensor(type=int(OperandType.SUBGRAPH), shape=(), data=np.array(operand.location.offset))
    operations = []
    for op in sg.operations:
        entry = lookup(op.type)
        if entry is None:
            raise failure(f"operation {op.type} is not implemented by this driver", "prepare.unsupported_operation")
        operations.append(CompiledOperation(int(op.type), list(op.inputs), list(op.outputs), entry.fn))
    return CompiledSubgraph(
        operands=sg.operands,
        constants=constants,
        operations=operations,
        inputs=list(sg.input_indexes),
        outputs=list(sg.output_indexes),
        output_meta=[operand_tensor(sg.operands[i]) for i in sg.output_indexes],
    )


@dataclass
class RunContext:
    """Per-execution settings shared by every subgraph the execution runs."""

    subgraphs: list[CompiledSubgraph]
    relaxed: bool
    faults: FaultSet
    deadline_ns: int | None
    loop_timeout_ns: int
    kernel_ns: int = 0  # time spent inside kernels ("on device")


class Executor:
    """Runs compiled subgraphs for one execution."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        # What every OpCall of this execution hands its kernel as options (kernels only read it).
        self._options = {"faults": ctx.faults}

    def run(self, index: int, inputs: list[Tensor | None]) -> list[Tensor]:
        """Run subgraph `index` (0 = main) on these input tensors; returns its output tensors."""
        sg = self.ctx.subgraphs[index]
        if index > 0 and len(sg.operations) == 1 and self.ctx.faults.active(ABORT_ON_SINGLE_OP_SUBGRAPH):
            os.abort()  # the planted bug: the arena assertion fails
        if len(inputs) != len(sg.inputs):
            raise failure(f"subgraph {index} expects {len(sg.inputs)} inputs, got {len(inputs)}", "exec.subgraph_arity")
        slots: list[Tensor | None] = [None] * len(sg.operands)
        for k, t in sg.constants.items():
            slots[k] = t
        for operand_index, tensor in zip(sg.inputs, inputs):
            slots[operand_index] = tensor
        operands = sg.operands
        for op in sg.operations:
            self._check_deadline()
            call = OpCall(
                inputs=[slots[i] if operands[i].lifetime != _NO_VALUE else None for i in op.inputs],
                outputs=[operand_tensor(operands[i]) for i in op.outputs],
                relaxed=self.ctx.relaxed,
                run_subgraph=self._run_referenced,
                loop_deadline_ns=time.monotonic_ns() + self.ctx.loop_timeout_ns,
                options=self._options,
            )
            started = time.perf_counter_ns()
            try:
                results = op.fn(call)
            except DriverError:
                raise
            except Exception as e:
                # A kernel that trips over its input reports a failure naming the operation.
                raise failure(f"operation {op.type} failed: {type(e).__name__}: {e}", "exec.kernel") from e
            finally:
                self.ctx.kernel_ns += time.perf_counter_ns() - started
            if len(results) != len(op.outputs):
                raise failure(f"operation {op.type} produced {len(results)} outputs, expected {len(op.outputs)}")
            for operand_index, value in zip(op.outputs, results):
                slots[operand_index] = self._as_output(sg.operands[operand_index], value)
        outputs = []
        for operand_index in sg.outputs:
            tensor = slots[operand_index]
            if tensor is None:
                raise failure(f"output operand {operand_index} of subgraph {index} was never written")
            outputs.append(tensor)
        return outputs

    def _run_referenced(self, k: int, inputs: list[Tensor]) -> list[Tensor]:
        """Run referenced subgraph k (the kernels' numbering; compiled index k + 1, as 0 is main)."""
        if not 0 <= k < len(self.ctx.subgraphs) - 1:
            raise failure(f"referenced subgraph {k} does not exist", "exec.subgraph_index")
        return self.run(k + 1, inputs)

    def _as_output(self, operand: Operand, value: np.ndarray) -> Tensor:
        value = np.asarray(value)
        declared = operand.dimensions
        if declared and value.ndim == len(declared):
            for want, got in zip(declared, value.shape):
                if want and want != got:
                    raise failure(
                        f"computed shape {value.shape} conflicts with the declared {tuple(declared)}", "exec.shape"
                    )
        elif declared and value.ndim != len(declared) and int(operand.type) not in _SCALAR_TYPES:
            raise failure(f"computed rank {value.ndim} conflicts with the declared {tuple(declared)}", "exec.shape")
        dtype = numpy_dtype(operand.type)
        if value.dtype != dtype:
            value = value.astype(dtype)
        return operand_tensor(operand, shape=tuple(value.shape), data=value)

    def _check_deadline(self) -> None:
        if self.ctx.deadline_ns is not None and time.monotonic_ns() > self.ctx.deadline_ns:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "deadline passed during execution", "qos.deadline")


_NO_VALUE = int(OperandLifeTime.NO_VALUE)
_SUBGRAPH_LIFETIME = int(OperandLifeTime.SUBGRAPH)
_CONSTANT_LIFETIMES = frozenset({int(OperandLifeTime.CONSTANT_COPY), int(OperandLifeTime.CONSTANT_REFERENCE)})


_SCALAR_TYPES = {
    int(t) for t in (OperandType.FLOAT32, OperandType.INT32, OperandType.UINT32, OperandType.BOOL, OperandType.FLOAT16)
}
