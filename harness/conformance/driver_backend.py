"""The driver backend: conformance cases run on a driver through the HAL interface.

Every call into the driver is guarded: an exception becomes DriverException (with its traceback), a call that
does not return in time DriverTimeout, a malformed answer DriverContractError; the runner turns each into a
failure of the case.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from harness.case import ConformanceCase
from harness.conformance.backend import Execution, Session, Stop
from harness.drivers import create_device
from harness.hal import (
    Capabilities,
    DataLocation,
    Device,
    ErrorStatus,
    ExecutionPreference,
    MeasureTiming,
    Model,
    OperandType,
    OperationType,
    OutputShape,
    PreparedModel,
    Priority,
    Request,
    RequestArgument,
    WaitablePreparedModelCallback,
    has_unknown_dimensions,
    is_scalar_type,
    numpy_dtype,
)
from harness.hal.callbacks import CallbackTimeout
from harness.hal.memory import Memory, create_ashmem

# Capabilities at or above this performance mean "not supported" (the HAL's FLT_MAX convention).
_UNSUPPORTED_PERFORMANCE = 3.0e38
# Argument offsets in the request pools are aligned like a client's allocator would align them.
_ALIGNMENT = 64


class DriverException(Exception):
    """An exception escaped the driver's HAL interface; carries the traceback text."""


class DriverTimeout(Exception):
    """The driver did not answer within the time allowed."""


T = TypeVar("T")


def _call(what: str, fn: Callable[[], T], timeout: float | None = None) -> T:
    """Call into the driver: exceptions become DriverException, a call outliving `timeout` DriverTimeout."""
    if timeout is None:
        try:
            return fn()
        except Exception as exc:
            raise DriverException(f"{what} raised:\n{traceback.format_exc()}") from exc
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except Exception:
            box["error"] = traceback.format_exc()

    # A daemon thread: a driver that never returns must not keep the harness from exiting.
    thread = threading.Thread(target=target, name=f"conformance-{what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise DriverTimeout(f"{what} did not return within {timeout} s")
    if "error" in box:
        raise DriverException(f"{what} raised:\n{box['error']}")
    return box["value"]


class DriverContractError(Exception):
    """The driver answered with something the HAL interface does not allow (a malformed result)."""


def _status(what: str, value: object) -> ErrorStatus:
    """A driver's status value as an ErrorStatus; DriverContractError if it is not one."""
    try:
        return ErrorStatus(value)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        raise DriverContractError(f"{what} returned status {value!r}, which is not an ErrorStatus") from None


def _result(what: str, value: object, arity: int) -> tuple[Any, ...]:
    """A driver's (status, ...) tuple with the status converted; DriverContractError if malformed."""
    if not isinstance(value, tuple | list) or len(value) != arity:
        raise DriverContractError(f"{what} returned {value!r}; expected a tuple of {arity} values")
    return (_status(what, value[0]), *value[1:])


def load_device(spec: str) -> Device:
    """Create a device from a "module:factory" spec (a DriverSpecError, a ValueError, when it cannot be loaded)."""
    return create_device(spec)


def _layout(sizes: Sequence[int]) -> tuple[list[int], int]:
    """Aligned offsets for arguments of these byte sizes, and the pool size holding them all."""
    offsets, end = [], 0
    for size in sizes:
        offset = -(-end // _ALIGNMENT) * _ALIGNMENT
        offsets.append(offset)
        end = offset + size
    return offsets, max(end, 1)


class _DriverSession:
    def __init__(self, model: Model, prepared: PreparedModel, timeout: float) -> None:
        self.model = model
        self.prepared = prepared
        self.timeout = timeout

    def execute(self, inputs: Sequence[np.ndarray | None], expected: Sequence[np.ndarray]) -> Execution:
        main = self.model.main
        in_operands = [main.operands[i] for i in main.input_indexes]
        out_operands = [main.operands[i] for i in main.output_indexes]
        in_bytes = [b"" if x is None else np.ascontiguousarray(x).tobytes() for x in inputs]
        # A zero-sized output still gets one byte, as the public test harnesses allocate it.
        out_sizes = [max(np.asarray(e).nbytes, 1) for e in expected]
        in_offsets, in_size = _layout([len(b) for b in in_bytes])
        out_offsets, out_size = _layout(out_sizes)
        pools: list[Memory] = []
        try:
            pools.append(create_ashmem(in_size))
            pools.append(create_ashmem(out_size))
            request_inputs = []
            for operand, value, data, offset in zip(in_operands, inputs, in_bytes, in_offsets):
                if value is None:
                    request_inputs.append(RequestArgument(has_no_value=True))
                    continue
                pools[0].write(offset, data)
                # Dimensions go into the request only where the model leaves them unknown.
                unknown = not is_scalar_type(operand.type) and has_unknown_dimensions(operand.dimensions)
                dims = list(np.shape(value)) if unknown else []
                request_inputs.append(RequestArgument(location=DataLocation(0, offset, len(data)), dimensions=dims))
            request_outputs = [
                RequestArgument(location=DataLocation(1, offset, size)) for offset, size in zip(out_offsets, out_sizes)
            ]
            request = Request(inputs=request_inputs, outputs=request_outputs, pools=list(pools))
            status, shapes, _timing = _result(
                "execute_synchronously",
                _call(
                    "execute_synchronously",
                    lambda: self.prepared.execute_synchronously(request, MeasureTiming.NO, None, None),
                    self.timeout,
                ),
                3,
            )
            if shapes is not None and not all(isinstance(s, OutputShape) for s in shapes):
                raise DriverContractError(f"execute_synchronously returned output shapes {shapes!r}")
            outputs = []
            if status == ErrorStatus.NONE:
                for operand, e, offset in zip(out_operands, expected, out_offsets):
                    raw = pools[1].read(offset, np.asarray(e).nbytes)
                    outputs.append(np.frombuffer(raw, dtype=numpy_dtype(operand.type)).reshape(np.shape(e)).copy())
            return Execution(
                status=status,
                shapes=[list(s.dimensions) for s in shapes] if shapes is not None else None,
                insufficient=[i for i, s in enumerate(shapes or []) if not s.is_sufficient],
                outputs=outputs,
            )
        finally:
            for pool in pools:
                pool.close()


def _operand_types(model: Model) -> set[int]:
    return {o.type for sg in [model.main, *model.referenced] for o in sg.operands}


class DriverBackend:
    """Runs cases on a driver through getSupportedOperations, prepareModel and executeSynchronously."""

    def __init__(self, device: Device, name: str = "driver", timeout: float = 30.0) -> None:
        self.device = device
        self.name = name
        self.timeout = timeout
        self._unsupported_types: set[int] | None = None

    def unsupported_types(self) -> set[int]:
        """Operand types the device's capabilities rate as unsupported (missing or FLT_MAX performance)."""
        if self._unsupported_types is None:
            status, caps = _result(
                "get_capabilities", _call("get_capabilities", self.device.get_capabilities, self.timeout), 2
            )
            if not isinstance(caps, Capabilities):
                raise DriverContractError(f"get_capabilities returned {caps!r}, not Capabilities")
            rated = {
                p.type
                for p in caps.operand_performance
                if p.info.exec_time < _UNSUPPORTED_PERFORMANCE and p.info.power_usage < _UNSUPPORTED_PERFORMANCE
            }
            types = set(OperandType) - {OperandType.SUBGRAPH, OperandType.OEM, OperandType.TENSOR_OEM_BYTE}
            self._unsupported_types = types - rated if status == ErrorStatus.NONE else set()
        return self._unsupported_types

    def prepare(self, case: ConformanceCase) -> Session | Stop:
        """Skip what the driver says it does not support; fail on a wrong status; else a prepared session."""
        model = case.model
        status, supported = _result(
            "get_supported_operations",
            _call("get_supported_operations", lambda: self.device.get_supported_operations(model), self.timeout),
            2,
        )
        if status != ErrorStatus.NONE:
            return Stop(
                "failed",
                rule="status.unexpected",
                detail=f"get_supported_operations returned {status.name} for a valid model",
            )
        if not isinstance(supported, list | tuple) or len(supported) != len(model.main.operations):
            return Stop(
                "failed",
                rule="driver.contract",
                detail=f"get_supported_operations gave {supported!r} for {len(model.main.operations)} operations",
            )
        for flag, operation in zip(supported, model.main.operations):
            if not flag:
                return Stop("skipped", reason=f"unsupported by driver: {_op_name(operation.type)}")

        callback = WaitablePreparedModelCallback()
        launch = _status(
            "prepare_model",
            _call(
                "prepare_model",
                lambda: self.device.prepare_model(
                    model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM, None, [], [], b"\0" * 32, callback
                ),
                self.timeout,
            ),
        )
        try:
            status, prepared = callback.result(self.timeout)
        except CallbackTimeout as exc:
            raise DriverTimeout(f"prepare_model callback not notified within {self.timeout} s") from exc
        if status == ErrorStatus.NONE and prepared is not None and launch == ErrorStatus.NONE:
            return _DriverSession(model, prepared, self.timeout)
        if status == ErrorStatus.GENERAL_FAILURE:
            unsupported = sorted(_operand_types(model) & self.unsupported_types())
            if unsupported:
                ops = "+".join(sorted({_op_name(o.type) for o in model.main.operations}))
                return Stop("skipped", reason=f"unsupported by driver: {ops} ({OperandType(unsupported[0]).name})")
        return Stop(
            "failed",
            rule="status.unexpected",
            detail=f"prepare_model: launch {launch.name}, callback {status.name}"
            f"{'' if prepared is not None or status != ErrorStatus.NONE else ' without a prepared model'}",
        )


def _op_name(op_type: int) -> str:
    try:
        return OperationType(op_type).name
    except ValueError:
        return f"operation {op_type}"
