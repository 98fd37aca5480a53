"""A fake HAL driver for the conformance runner's tests: correct answers from the reference executor, plus knobs
that make it misbehave in one chosen way (unsupported operations, failed preparation, wrong values, wrong
shapes, exceptions, hangs)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.hal import (
    NO_TIMING_INFO,
    BufferDesc,
    BufferRole,
    CacheHandle,
    Capabilities,
    Device,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    MeasureTiming,
    Model,
    OperandPerformance,
    OperandType,
    PerformanceInfo,
    PreparedModel,
    PreparedModelCallback,
    Priority,
    Request,
    numpy_dtype,
)
from harness.reference.executor import judge_output_sizes, run_model

FLT_MAX = 3.4028234663852886e38


@dataclass
class Behaviour:
    """How the fake misbehaves (the defaults make it a correct driver)."""

    unsupported_ops: set[int] = field(default_factory=set)
    unsupported_types: set[int] = field(default_factory=set)
    prepare_status: ErrorStatus = ErrorStatus.NONE
    execute_status: ErrorStatus = ErrorStatus.NONE
    raise_on_execute: bool = False
    hang_s: float = 0.0
    value_error: float = 0.0  # added to the first element of the first output
    report_dims: list[int] | None = None  # reported dimensions of output 0, instead of the actual ones


class FakePreparedModel(PreparedModel):
    """Executes with the reference executor, reading and writing the request's pools like a driver."""

    def __init__(self, model: Model, behaviour: Behaviour) -> None:
        self.model = model
        self.behaviour = behaviour

    def execute_synchronously(self, request: Request, measure: MeasureTiming, deadline, loop_timeout_duration):
        b = self.behaviour
        if b.raise_on_execute:
            raise RuntimeError("boom in the fake driver")
        if b.hang_s:
            time.sleep(b.hang_s)
        if b.execute_status != ErrorStatus.NONE:
            return b.execute_status, [], NO_TIMING_INFO
        main = self.model.main
        inputs: list[np.ndarray | None] = []
        for arg, index in zip(request.inputs, main.input_indexes):
            if arg.has_no_value:
                inputs.append(None)
                continue
            operand = main.operands[index]
            raw = request.pools[arg.location.pool_index].read(arg.location.offset, arg.location.length)
            dims = arg.dimensions or operand.dimensions
            inputs.append(np.frombuffer(raw, dtype=numpy_dtype(operand.type)).reshape(dims))
        result = run_model(self.model, inputs)
        if result.status != ErrorStatus.NONE:
            return result.status, [], NO_TIMING_INFO
        outputs = [o.copy() for o in result.outputs]
        if b.value_error and outputs[0].size:
            flat = outputs[0].reshape(-1)
            flat[0] = flat[0] + np.asarray(b.value_error).astype(flat.dtype)
        status, shapes = judge_output_sizes(self.model, [a.location.length for a in request.outputs], outputs)
        if status == ErrorStatus.NONE:
            for arg, value in zip(request.outputs, outputs):
                request.pools[arg.location.pool_index].write(arg.location.offset, value.tobytes())
        if b.report_dims is not None:
            shapes[0].dimensions = list(b.report_dims)
        return status, shapes, NO_TIMING_INFO

    def execute(self, request, measure, deadline, loop_timeout_duration, callback):
        return ErrorStatus.GENERAL_FAILURE

    def execute_fenced(self, request, wait_for, measure, deadline, loop_timeout_duration, timeout_after_fence):
        return ErrorStatus.GENERAL_FAILURE, None, None

    def configure_execution_burst(self, callback, request_channel, result_channel):
        return ErrorStatus.GENERAL_FAILURE, None


class FakeDevice(Device):
    """A device whose prepared models are FakePreparedModels."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()

    def get_capabilities(self) -> tuple[ErrorStatus, Capabilities]:
        performance = [
            OperandPerformance(
                t,
                PerformanceInfo(FLT_MAX, FLT_MAX)
                if t in self.behaviour.unsupported_types
                else PerformanceInfo(1.0, 1.0),
            )
            for t in OperandType
            if t not in (OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
        ]
        return ErrorStatus.NONE, Capabilities(operand_performance=performance)

    def get_version_string(self) -> tuple[ErrorStatus, str]:
        return ErrorStatus.NONE, "fake-1"

    def get_type(self) -> tuple[ErrorStatus, DeviceType]:
        return ErrorStatus.NONE, DeviceType.CPU

    def get_supported_extensions(self):
        return ErrorStatus.NONE, []

    def get_supported_operations(self, model: Model) -> tuple[ErrorStatus, list[bool]]:
        return ErrorStatus.NONE, [op.type not in self.behaviour.unsupported_ops for op in model.main.operations]

    def get_number_of_cache_files_needed(self) -> tuple[ErrorStatus, int, int]:
        return ErrorStatus.NONE, 0, 0

    def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference,
        priority: Priority,
        deadline,
        model_cache: Sequence[CacheHandle],
        data_cache: Sequence[CacheHandle],
        token: bytes,
        callback: PreparedModelCallback,
    ) -> ErrorStatus:
        if self.behaviour.prepare_status != ErrorStatus.NONE:
            callback.notify(self.behaviour.prepare_status, None)
        else:
            callback.notify(ErrorStatus.NONE, FakePreparedModel(model, self.behaviour))
        return ErrorStatus.NONE

    def prepare_model_from_cache(self, deadline, model_cache, data_cache, token, callback) -> ErrorStatus:
        callback.notify(ErrorStatus.GENERAL_FAILURE, None)
        return ErrorStatus.GENERAL_FAILURE

    def allocate(self, desc: BufferDesc, prepared_models, input_roles: Sequence[BufferRole], output_roles):
        return ErrorStatus.GENERAL_FAILURE, None, 0


def create_device() -> FakeDevice:
    """A correct fake driver (for "module:factory" specs)."""
    return FakeDevice()


def create_corrupting_device() -> FakeDevice:
    """A fake driver whose first output element is off by 1 (for "module:factory" specs)."""
    return FakeDevice(Behaviour(value_error=1.0))
