"""A driver with a planted bug in one operation type, for the reduction tests.

`CorruptsOperation` prepares with a real device and answers executeSynchronously as the reference executor would,
except that one operation type's results are wrong: always, or only where the operation reads a result of another
given type (a bug that needs two operations, like a faulty fusion). Wrong results flow on through the operations
after it, as a real bug's would. Only the synchronous path is corrupted: run the target with paths=("sync",).
"""

from __future__ import annotations

import math

import numpy as np

from harness import ops
from harness.hal import Device, ErrorStatus, Model, Request, numpy_dtype
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.reference import run_model
from tests.targets.fakes import Delegating, DelegatingPreparedModel


def corrupt(value: np.ndarray) -> np.ndarray:
    """A result made wrong by far more than any tolerance."""
    if value.dtype.kind == "f":
        return (value + 1 + np.abs(value)).astype(value.dtype)
    if value.dtype.kind == "b":
        return ~value
    return np.bitwise_xor(value, np.array(0x55, dtype=value.dtype))


class CorruptsOperation(Delegating):
    """A device whose synchronous executions get operation type `op_type` wrong (only when it reads a result of an
    operation of type `after`, if given)."""

    def __init__(self, inner: Device, op_type: int, after: int | None = None) -> None:
        super().__init__(inner)
        self.op_type, self.after = op_type, after

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        inner_callback = WaitablePreparedModelCallback()
        launch = self.inner.prepare_model(
            model, preference, priority, deadline, model_cache, data_cache, token, inner_callback
        )
        status, prepared = inner_callback.result(10)
        wrapped = None if prepared is None else _Corrupting(prepared, model, self.op_type, self.after)
        callback.notify(status, wrapped)
        return launch


class _Corrupting(DelegatingPreparedModel):
    def __init__(self, inner, model: Model, op_type: int, after: int | None) -> None:
        super().__init__(inner)
        self.model, self.op_type = model, op_type
        main = model.main
        self.marked = (
            None
            if after is None
            else {id(main.operands[k]) for op in main.operations if op.type == after for k in op.outputs}
        )

    def execute_synchronously(self, request, measure, deadline, loop_timeout_duration):
        status, shapes, timing = self.inner.execute_synchronously(request, measure, deadline, loop_timeout_duration)
        if status == ErrorStatus.NONE:
            result = self._wrong_outputs(_inputs(self.model, request))
            if result is not None:
                _write_outputs(self.model, request, result)
        return status, shapes, timing

    def _wrong_outputs(self, inputs: list[np.ndarray | None]) -> list[np.ndarray] | None:
        spec = ops.get(self.op_type)
        right = spec.kernel

        def wrong(ctx):
            results = right(ctx)
            if self.marked is None or any(o is not None and id(o) in self.marked for o in ctx.input_operands):
                return [corrupt(np.asarray(r)) for r in results]
            return results

        spec.kernel = wrong
        try:
            result = run_model(self.model, inputs)
        finally:
            spec.kernel = right
        return result.outputs if result.status == ErrorStatus.NONE else None


def _inputs(model: Model, request: Request) -> list[np.ndarray | None]:
    values: list[np.ndarray | None] = []
    for arg, k in zip(request.inputs, model.main.input_indexes):
        operand = model.main.operands[k]
        if arg.has_no_value:
            values.append(None)
            continue
        dims = list(arg.dimensions) or list(operand.dimensions)
        dtype = numpy_dtype(operand.type)
        raw = request.pools[arg.location.pool_index].read(arg.location.offset, math.prod(dims) * dtype.itemsize)
        values.append(np.frombuffer(raw, dtype=dtype).reshape(dims).copy())
    return values


def _write_outputs(model: Model, request: Request, outputs: list[np.ndarray]) -> None:
    for arg, value in zip(request.outputs, outputs):
        if not arg.has_no_value and value.nbytes <= arg.location.length:
            request.pools[arg.location.pool_index].write(arg.location.offset, value.tobytes())
