"""Control flow: IF and WHILE run referenced subgraphs through `OpCall.run_subgraph`.

A SUBGRAPH input operand reaches the kernel as a Tensor whose `data` is np.array(k), k being the operand's
location.offset, i.e. the index of the subgraph in the model's `referenced` list; `run_subgraph(k, inputs)`
runs that referenced subgraph and returns its output tensors.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from driver_under_test.backends.numpy.kernels.common import BOOL8
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.errors import DriverError, failure, invalid
from harness.hal import LOOP_TIMEOUT_DEFAULT_NS, ErrorStatus, OperandType, OperationType


def _subgraph_index(call: OpCall, i: int) -> int:
    t = call.inputs[i] if i < len(call.inputs) else None
    if t is None or t.data is None or t.type != OperandType.SUBGRAPH:
        raise invalid(f"input {i} must reference a subgraph", "exec.subgraph_reference")
    return int(np.asarray(t.data).reshape(-1)[0])


def _runner(call: OpCall) -> Callable[[int, list[Tensor]], list[Tensor]]:
    if call.run_subgraph is None:
        raise failure("control flow needs a subgraph runner", "exec.control_flow")
    return call.run_subgraph


def _truth(tensors: Sequence[Tensor], what: str) -> bool:
    """The value of a TENSOR_BOOL8 [1] condition."""
    if not tensors or tensors[0].data is None or np.asarray(tensors[0].data).size == 0:
        raise failure(f"{what} produced no boolean value", "exec.control_flow")
    return bool(np.asarray(tensors[0].data).reshape(-1)[0])


def _present(call: OpCall, start: int) -> list[Tensor]:
    values = list(call.inputs[start:])
    if any(t is None for t in values):
        raise invalid("control-flow operands cannot be omitted", "exec.missing_input")
    return values  # type: ignore[return-value]


@kernel(OperationType.IF, (BOOL8,))
def if_kernel(call: OpCall) -> list[np.ndarray]:
    """Run the then-subgraph (input 1) or the else-subgraph (input 2) on inputs 3.. depending on input 0."""
    run = _runner(call)
    branch = 1 if _truth([call.inputs[0]] if call.inputs[0] is not None else [], "IF condition") else 2
    outputs = run(_subgraph_index(call, branch), _present(call, 3))
    if len(outputs) != len(call.outputs):
        raise failure(f"IF branch produced {len(outputs)} outputs, expected {len(call.outputs)}", "exec.control_flow")
    return [t.data for t in outputs]


@kernel(OperationType.WHILE, (OperandType.SUBGRAPH,))
def while_kernel(call: OpCall) -> list[np.ndarray]:
    """Run the body while the condition holds; returns the final input-output values.

    With m WHILE outputs and a body producing m + k outputs, the first m + k loop values are replaced by the
    body's outputs after each iteration and the remaining n input-only values stay fixed.
    """
    run = _runner(call)
    condition, body = _subgraph_index(call, 0), _subgraph_index(call, 1)
    values = _present(call, 2)
    m = len(call.outputs)
    if m < 1 or m > len(values):
        raise invalid(f"WHILE has {m} outputs for {len(values)} loop values", "exec.control_flow")
    deadline = call.loop_deadline_ns
    if deadline is None:
        deadline = time.monotonic_ns() + LOOP_TIMEOUT_DEFAULT_NS
    while True:
        if time.monotonic_ns() > deadline:
            raise DriverError(
                ErrorStatus.MISSED_DEADLINE_PERSISTENT, "WHILE loop exceeded the loop timeout", "qos.loop_timeout"
            )
        if not _truth(run(condition, values), "WHILE condition"):
            break
        produced = run(body, values)
        if not m <= len(produced) <= len(values):
            raise failure(
                f"WHILE body produced {len(produced)} outputs for {len(values)} loop values", "exec.control_flow"
            )
        values = [*produced, *values[len(produced) :]]
    return [t.data for t in values[:m]]
