"""The driver's PreparedModel: request validation, pool mapping, execution, output shapes and timing."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from driver_under_test._workers import WorkerPool
from driver_under_test.backends import Constants, Program, RunSettings
from driver_under_test.burst import configure_burst
from driver_under_test.errors import DriverError, as_driver_error, failure, invalid
from driver_under_test.faults import HARDWARE_BUFFER_HEADER_UNCHECKED, FaultSet, define
from driver_under_test.memory_domain import DriverBuffer, MemoryDomain, check_request, forget_outputs
from driver_under_test.options import DeviceOptions
from driver_under_test.pools import PoolMapping, map_pool
from driver_under_test.validation import validate_request
from harness.hal import (
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
    NO_TIMING_INFO,
    BurstCallback,
    BurstContext,
    Deadline,
    DriverBufferToken,
    Duration,
    ErrorStatus,
    ExecutionCallback,
    FencedExecutionCallback,
    MeasureTiming,
    Model,
    Operand,
    OutputShape,
    PreparedModel,
    Request,
    Timing,
    element_size,
    numpy_dtype,
)
from harness.hal.fence import FenceState, SyncFence

_STATUSES_WITH_SHAPES = (ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE)
# IFencedExecutionCallback::getExecutionInfo may answer only these (1.3/IFencedExecutionCallback.hal): the request
# was checked at launch, so a failure found while running (an output buffer too small, an input the run could not
# read) is an unspecified error there.
_FENCED_INFO_STATUSES = frozenset(
    {
        ErrorStatus.NONE,
        ErrorStatus.DEVICE_UNAVAILABLE,
        ErrorStatus.GENERAL_FAILURE,
        ErrorStatus.MISSED_DEADLINE_TRANSIENT,
        ErrorStatus.MISSED_DEADLINE_PERSISTENT,
        ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT,
        ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT,
    }
)

TIMING_WHEN_NOT_ASKED = define(
    "timing_when_not_asked",
    "execution",
    "Reports measured timing even when the client passed MeasureTiming.NO (D8 says UINT64_MAX).",
).name
INSUFFICIENT_MARKS_WRONG_OUTPUT = define(
    "insufficient_marks_wrong_output",
    "execution",
    "When an output buffer is too small, marks the next output (wrapping around) isSufficient = false instead.",
).name
UNKNOWN_SHAPE_NOT_REPORTED = define(
    "unknown_shape_not_reported",
    "execution",
    "Reports the model's declared dimensions (zeros for unknown ones) instead of the actual output shape.",
).name


@dataclass
class ExecutionResult:
    """What one execution reports through any of the execution paths."""

    status: ErrorStatus
    output_shapes: list[OutputShape]
    timing: Timing
    message: str = ""

    @classmethod
    def error(cls, e: DriverError) -> ExecutionResult:
        """The result of a failed execution: no shapes, no timing."""
        return cls(e.status, [], NO_TIMING_INFO, str(e))


def _loop_timeout(duration: Duration) -> int:
    if duration is None:
        return LOOP_TIMEOUT_DEFAULT_NS
    if duration < 0:
        raise invalid(f"negative loop timeout {duration}", "request.loop_timeout")
    return min(int(duration), LOOP_TIMEOUT_MAXIMUM_NS)


class DriverPreparedModel(PreparedModel):
    """A model prepared by this driver: the validated model, its constants and its backend's program."""

    def __init__(
        self,
        model: Model,
        program: Program,
        constants: Constants,
        options: DeviceOptions,
        faults: FaultSet,
        *,
        domain: MemoryDomain,
        workers: WorkerPool,
    ):
        self._model = model
        self.program = program
        self.constants = constants  # what a model cache keeps besides the program
        self._options = options
        self._faults = faults
        # The device's driver buffers (not the device itself: a prepared model must not keep its device alive).
        self._domain = domain
        # The device's worker threads (asynchronous executions, fenced executions, burst listeners).
        self._workers = workers
        domain.admit(self)

    # --- the core every path shares -------------------------------------------------------------------

    @property
    def memory_domain(self) -> MemoryDomain:
        """The memory domain (driver buffers by token) of the device that prepared this model."""
        return self._domain

    @property
    def workers(self) -> WorkerPool:
        """The worker threads of the device that prepared this model."""
        return self._workers

    @property
    def faults(self) -> FaultSet:
        """The faults of the device that prepared this model."""
        return self._faults

    def io_operands(self, is_output: bool) -> list[Operand]:
        """The operands of main's outputs (or inputs), in order."""
        main = self._model.main
        return [main.operands[i] for i in (main.output_indexes if is_output else main.input_indexes)]

    def _validate(self, request: Request, *, fenced: bool) -> list[list[int]]:
        domain = self.memory_domain
        dims = validate_request(self._model, request, fenced=fenced, limits=self._options.limits, faults=self._faults,
                                known_tokens=domain)  # fmt: skip
        return check_request(self, request, dims, fenced=fenced)

    def _map_pools(self, request: Request) -> list[PoolMapping | DriverBuffer]:
        mappings: list[PoolMapping | DriverBuffer] = []
        try:
            for pool in request.pools:
                if isinstance(pool, DriverBufferToken):
                    buffer = self.memory_domain.lookup(pool.token)
                    if buffer is None:
                        raise invalid(f"driver buffer token {pool.token} is unknown to this device",
                                      "V35.unknown_buffer_token")  # fmt: skip
                    mappings.append(buffer)
                    continue
                check_header = not self._faults.active(HARDWARE_BUFFER_HEADER_UNCHECKED)
                mappings.append(map_pool(pool, self._options.execution_memory_kinds, check_header=check_header))
        except DriverError:
            for m in mappings:
                if isinstance(m, PoolMapping):
                    m.close()
            raise
        return mappings

    def _run(
        self,
        request: Request,
        input_dims: list[list[int]],
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout: Duration,
    ) -> ExecutionResult:
        result: ExecutionResult | None = None
        try:
            result = self._compute(request, input_dims, measure, deadline, loop_timeout)
            return result
        finally:
            # D17: an execution that fails leaves every driver buffer it was to write uninitialized.
            if result is None or result.status != ErrorStatus.NONE:
                forget_outputs(self.memory_domain, request)

    def _compute(
        self,
        request: Request,
        input_dims: list[list[int]],
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout: Duration,
    ) -> ExecutionResult:
        started = time.perf_counter_ns()
        loop_timeout_ns = _loop_timeout(loop_timeout)
        if deadline is not None and time.monotonic_ns() > deadline:
            raise DriverError(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "deadline passed before execution", "qos.deadline")
        pools = self._map_pools(request)
        try:
            main = self._model.main
            inputs: list[np.ndarray | None] = []
            for arg, operand_index, dims in zip(request.inputs, main.input_indexes, input_dims):
                if arg.has_no_value:
                    inputs.append(None)
                    continue
                operand = main.operands[operand_index]
                pool = pools[arg.location.pool_index]
                if isinstance(pool, DriverBuffer):
                    state = pool.read_input(len(inputs), dims)
                    raw, dims = state.data, list(state.dimensions)
                else:
                    raw = pool.read(arg.location.offset, arg.location.length)
                inputs.append(np.frombuffer(raw, dtype=numpy_dtype(operand.type)).reshape(tuple(dims)))
            settings = RunSettings(self._model.relax_computation_float32_to_float16, self._faults, deadline,
                                   loop_timeout_ns)  # fmt: skip
            executed = self.program.execute(inputs, settings)
            result = self._deliver(request, executed.outputs, pools)
        finally:
            for m in pools:
                if isinstance(m, PoolMapping):
                    m.close()
        measured = measure == MeasureTiming.YES or self._faults.active(TIMING_WHEN_NOT_ASKED)
        if result.status == ErrorStatus.NONE and measured:
            in_driver = (time.perf_counter_ns() - started) // 1000
            on_device = min(executed.device_ns // 1000, in_driver)
            result.timing = Timing(time_on_device=on_device, time_in_driver=in_driver)
        return result

    def _deliver(self, request: Request, outputs: list[np.ndarray], pools: list) -> ExecutionResult:
        main = self._model.main
        if len(outputs) != len(main.output_indexes):
            raise failure(f"the program gave {len(outputs)} outputs for {len(main.output_indexes)}", "exec.outputs")
        shapes = []
        sufficient = True
        for arg, operand_index, value in zip(request.outputs, main.output_indexes, outputs):
            actual = [int(d) for d in value.shape]
            wanted = arg.dimensions or main.operands[operand_index].dimensions
            if wanted and len(wanted) == len(actual) and any(w and w != a for w, a in zip(wanted, actual)):
                raise failure(
                    f"output {operand_index}: computed shape {actual} conflicts with {list(wanted)}", "exec.shape"
                )
            needed = value.size * element_size(main.operands[operand_index].type)
            pool = None if arg.has_no_value else pools[arg.location.pool_index]
            if isinstance(pool, DriverBuffer):
                pool.check_result_shape(len(shapes), actual)
                fits = True  # a driver buffer takes whatever shape its allocation allows
            else:
                fits = arg.has_no_value or needed <= arg.location.length
            sufficient &= fits
            reported = actual
            if self._faults.active(UNKNOWN_SHAPE_NOT_REPORTED):
                reported = list(main.operands[operand_index].dimensions)
            shapes.append(OutputShape(dimensions=reported, is_sufficient=fits))
        if not sufficient and self._faults.active(INSUFFICIENT_MARKS_WRONG_OUTPUT):
            flags = [s.is_sufficient for s in shapes]
            for s, flag in zip(shapes, flags[-1:] + flags[:-1]):
                s.is_sufficient = flag
        if not sufficient:
            return ExecutionResult(
                ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, shapes, NO_TIMING_INFO, "output buffer too small"
            )
        for arg, operand_index, value in zip(request.outputs, main.output_indexes, outputs):
            if arg.has_no_value:
                continue
            # The program's arrays carry the operand's storage dtype (a backend may hand back another of its size).
            stored = np.ascontiguousarray(value, dtype=numpy_dtype(main.operands[operand_index].type))
            raw = stored.view(np.uint8).reshape(-1)
            pool = pools[arg.location.pool_index]
            if isinstance(pool, DriverBuffer):
                pool.store(value.shape, raw.tobytes())
                continue
            pool.data[arg.location.offset : arg.location.offset + raw.size] = raw
        return ExecutionResult(ErrorStatus.NONE, shapes, NO_TIMING_INFO)

    def run_request(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout: Duration,
        *,
        fenced: bool = False,
    ) -> ExecutionResult:
        """Validate and execute one request; every failure becomes a result, never an exception."""
        try:
            dims = self._validate(request, fenced=fenced)
            result = self._run(request, dims, measure, deadline, loop_timeout)
        except Exception as e:  # the HAL boundary: statuses, never exceptions
            return ExecutionResult.error(as_driver_error(e))
        if result.status not in _STATUSES_WITH_SHAPES:
            result.output_shapes = []
        return result

    # --- the HAL methods ------------------------------------------------------------------------------

    def execute_synchronously(
        self, request: Request, measure: MeasureTiming, deadline: Deadline, loop_timeout_duration: Duration
    ) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        """IPreparedModel::executeSynchronously_1_3."""
        r = self.run_request(request, measure, deadline, loop_timeout_duration)
        return r.status, r.output_shapes, r.timing

    def execute(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout_duration: Duration,
        callback: ExecutionCallback,
    ) -> ErrorStatus:
        """IPreparedModel::execute_1_3: invalid requests fail at launch and through the callback."""
        if callback is None:
            return ErrorStatus.INVALID_ARGUMENT
        try:
            dims = self._validate(request, fenced=False)
        except Exception as e:
            status = as_driver_error(e).status  # only the status: see DriverDevice.prepare_model
            callback.notify(status, [], NO_TIMING_INFO)
            return status

        def work() -> None:
            try:
                r = self._run(request, dims, measure, deadline, loop_timeout_duration)
            except Exception as e:
                r = ExecutionResult.error(as_driver_error(e))
            callback.notify(r.status, r.output_shapes if r.status in _STATUSES_WITH_SHAPES else [], r.timing)

        self._workers.submit(work)
        return ErrorStatus.NONE

    def execute_fenced(
        self,
        request: Request,
        wait_for: Sequence[SyncFence],
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout_duration: Duration,
        timeout_after_fence: Duration,
    ) -> tuple[ErrorStatus, SyncFence | None, FencedExecutionCallback | None]:
        """IPreparedModel::executeFenced: waits for the fences in a worker, signals the returned fence."""
        try:
            dims = self._validate(request, fenced=True)
            # Pools that cannot be mapped are an argument error, which only the launch may report
            # (getExecutionInfo cannot answer INVALID_ARGUMENT).
            for mapping in self._map_pools(request):
                if isinstance(mapping, PoolMapping):
                    mapping.close()
            for fence in wait_for:
                if not isinstance(fence, SyncFence):
                    raise invalid("wait_for holds something that is not a sync fence", "fenced.fence")
                if fence.state() == FenceState.ERROR:
                    raise invalid("a fence to wait for is in an error state", "fenced.fence_error")
            if timeout_after_fence is not None and timeout_after_fence < 0:
                raise invalid("negative timeout after fence", "fenced.timeout")
            _loop_timeout(loop_timeout_duration)
        except Exception as e:
            return as_driver_error(e).status, None, None
        # The driver signals its own handle; the client gets a duplicate it may close at any time.
        done = SyncFence.create()
        client_fence = done.dup()
        callback = _FencedCallback()
        launched = time.perf_counter_ns()

        def work() -> None:
            try:
                limit = time.monotonic() + self._options.fence_wait_limit_s
                for fence in wait_for:
                    while True:
                        state = fence.wait(0.05)
                        if state == FenceState.SIGNALED:
                            break
                        if state == FenceState.ERROR:
                            raise failure("a fence waited for went into an error state", "fenced.fence_error")
                        if deadline is not None and time.monotonic_ns() > deadline:
                            raise DriverError(
                                ErrorStatus.MISSED_DEADLINE_TRANSIENT, "deadline passed waiting for fences"
                            )
                        if time.monotonic() > limit:
                            raise failure("gave up waiting for fences", "fenced.fence_wait")
                fenced_at = time.perf_counter_ns()
                effective = deadline
                if timeout_after_fence is not None:
                    after = time.monotonic_ns() + int(timeout_after_fence)
                    effective = after if effective is None else min(effective, after)
                r = self._run(request, dims, measure, effective, loop_timeout_duration)
                if r.status != ErrorStatus.NONE:
                    raise DriverError(r.status, r.message or "fenced execution failed")
                end = time.perf_counter_ns()
                if measure == MeasureTiming.YES:
                    on_device = r.timing.time_on_device
                    callback.complete(
                        ErrorStatus.NONE,
                        Timing(min(on_device, (end - launched) // 1000), (end - launched) // 1000),
                        Timing(min(on_device, (end - fenced_at) // 1000), (end - fenced_at) // 1000),
                    )
                else:
                    callback.complete(ErrorStatus.NONE, NO_TIMING_INFO, NO_TIMING_INFO)
                done.signal()
            except Exception as e:
                status = as_driver_error(e).status
                status = status if status in _FENCED_INFO_STATUSES else ErrorStatus.GENERAL_FAILURE
                callback.complete(status, NO_TIMING_INFO, NO_TIMING_INFO)
                done.set_error()
            finally:
                done.close()

        self._workers.submit(work)
        return ErrorStatus.NONE, client_fence, callback

    def configure_execution_burst(
        self,
        callback: BurstCallback,
        request_channel: object,
        result_channel: object,
    ) -> tuple[ErrorStatus, BurstContext | None]:
        """IPreparedModel::configureExecutionBurst: a burst context whose listener serves the two channels."""
        return configure_burst(self, callback, request_channel, result_channel)


class _FencedCallback(FencedExecutionCallback):
    """Holds a fenced execution's outcome; asking before completion is GENERAL_FAILURE."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._result: tuple[ErrorStatus, Timing, Timing] | None = None

    def complete(self, status: ErrorStatus, launched: Timing, fenced: Timing) -> None:
        """Record the outcome (called once by the worker)."""
        with self._lock:
            self._result = (status, launched, fenced)

    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        """IFencedExecutionCallback::getExecutionInfo."""
        with self._lock:
            if self._result is None:
                return ErrorStatus.GENERAL_FAILURE, NO_TIMING_INFO, NO_TIMING_INFO
            return self._result
