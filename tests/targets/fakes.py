"""Small hand-written drivers for the targets' tests: each breaks one rule in a known way.

`Delegating` forwards every HAL call to a real device; the subclasses override the one call they break.
"""

from __future__ import annotations

import struct

from harness.hal import NO_TIMING, NO_TIMING_INFO, Device, ErrorStatus, PreparedModel, Timing
from harness.hal.callbacks import WaitablePreparedModelCallback


class Delegating(Device):
    """A device that forwards every call to `inner`."""

    def __init__(self, inner: Device) -> None:
        self.inner = inner

    def get_capabilities(self):
        return self.inner.get_capabilities()

    def get_version_string(self):
        return self.inner.get_version_string()

    def get_type(self):
        return self.inner.get_type()

    def get_supported_extensions(self):
        return self.inner.get_supported_extensions()

    def get_supported_operations(self, model):
        return self.inner.get_supported_operations(model)

    def get_number_of_cache_files_needed(self):
        return self.inner.get_number_of_cache_files_needed()

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        return self.inner.prepare_model(model, preference, priority, deadline, model_cache, data_cache, token, callback)

    def prepare_model_from_cache(self, deadline, model_cache, data_cache, token, callback):
        return self.inner.prepare_model_from_cache(deadline, model_cache, data_cache, token, callback)

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        return self.inner.allocate(desc, prepared_models, input_roles, output_roles)


class RaisesInSupportedOperations(Delegating):
    """getSupportedOperations raises instead of answering."""

    def get_supported_operations(self, model):
        raise IndexError("operand index out of range while checking the model")


class AcceptsEverything(Delegating):
    """Reports every operation supported and prepares any model, however invalid (validation skipped)."""

    def get_supported_operations(self, model):
        return ErrorStatus.NONE, [True] * len(model.main.operations)

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        callback.notify(ErrorStatus.NONE, _NullPreparedModel())
        return ErrorStatus.NONE


class ReportsEverythingSupported(Delegating):
    """getSupportedOperations reports every operation supported without looking at the model's pools; preparation
    is the inner device's."""

    def get_supported_operations(self, model):
        return ErrorStatus.NONE, [True] * len(model.main.operations)


class NeverCallsBack(Delegating):
    """prepareModel launches fine and never notifies its callback."""

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        return ErrorStatus.NONE


class OneFlagTooMany(Delegating):
    """getSupportedOperations answers one flag more than there are operations."""

    def get_supported_operations(self, model):
        status, flags = self.inner.get_supported_operations(model)
        return status, [*flags, True]


class RejectsOnlyThroughCallback(Delegating):
    """An invalid model launches with NONE and is rejected only through the callback."""

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        status = self.inner.prepare_model(
            model, preference, priority, deadline, model_cache, data_cache, token, callback
        )
        return ErrorStatus.NONE if status == ErrorStatus.INVALID_ARGUMENT else status


class UnknownStatus(Delegating):
    """getSupportedOperations answers a status the HAL does not define."""

    def get_supported_operations(self, model):
        return 42, [True] * len(model.main.operations)


class _NullPreparedModel(PreparedModel):
    """A prepared model that cannot execute anything (for preparation-only fakes)."""

    def execute(self, request, measure, deadline, loop_timeout_duration, callback):
        return ErrorStatus.GENERAL_FAILURE

    def execute_synchronously(self, request, measure, deadline, loop_timeout_duration):
        return ErrorStatus.GENERAL_FAILURE, [], None

    def execute_fenced(self, request, wait_for, measure, deadline, loop_timeout_duration, timeout_after_fence):
        return ErrorStatus.GENERAL_FAILURE, None, None

    def configure_execution_burst(self, callback, request_channel, result_channel):
        return ErrorStatus.GENERAL_FAILURE, None


class WrapsPreparedModel(Delegating):
    """Prepares with the inner device, then hands the client `wrapper(prepared_model)` instead."""

    def __init__(self, inner: Device, wrapper: type[PreparedModel]) -> None:
        super().__init__(inner)
        self.wrapper = wrapper

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        inner_callback = WaitablePreparedModelCallback()
        launch = self.inner.prepare_model(
            model, preference, priority, deadline, model_cache, data_cache, token, inner_callback
        )
        status, prepared = inner_callback.result(10)
        callback.notify(status, None if prepared is None else self.wrapper(prepared))
        return launch


class DelegatingPreparedModel(PreparedModel):
    """A prepared model that forwards every call to `inner`."""

    def __init__(self, inner: PreparedModel) -> None:
        self.inner = inner

    def execute(self, request, measure, deadline, loop_timeout_duration, callback):
        return self.inner.execute(request, measure, deadline, loop_timeout_duration, callback)

    def execute_synchronously(self, request, measure, deadline, loop_timeout_duration):
        return self.inner.execute_synchronously(request, measure, deadline, loop_timeout_duration)

    def execute_fenced(self, request, wait_for, measure, deadline, loop_timeout_duration, timeout_after_fence):
        return self.inner.execute_fenced(
            request, wait_for, measure, deadline, loop_timeout_duration, timeout_after_fence
        )

    def configure_execution_burst(self, callback, request_channel, result_channel):
        return self.inner.configure_execution_burst(callback, request_channel, result_channel)


def sync_shifts_first_output(delta: float) -> type[DelegatingPreparedModel]:
    """A prepared model whose executeSynchronously adds `delta` to the first float32 of output 0 (an output of
    fewer than 4 bytes gets its first byte inverted instead)."""

    class SyncShiftsFirstOutput(DelegatingPreparedModel):
        def execute_synchronously(self, request, measure, deadline, loop_timeout_duration):
            result = self.inner.execute_synchronously(request, measure, deadline, loop_timeout_duration)
            loc = request.outputs[0].location
            pool = request.pools[loc.pool_index]
            if loc.length < 4:
                pool.write(loc.offset, bytes([pool.read(loc.offset, 1)[0] ^ 0xFF]))
                return result
            (value,) = struct.unpack("<f", pool.read(loc.offset, 4))
            pool.write(loc.offset, struct.pack("<f", value + delta))
            return result

    return SyncShiftsFirstOutput


class AsyncRaises(DelegatingPreparedModel):
    """execute raises instead of launching."""

    def execute(self, request, measure, deadline, loop_timeout_duration, callback):
        raise RuntimeError("execution queue is gone")


class AsyncNeverNotifies(DelegatingPreparedModel):
    """execute launches with NONE and never notifies its callback."""

    def execute(self, request, measure, deadline, loop_timeout_duration, callback):
        return ErrorStatus.NONE


class AcceptsAnyRequest(DelegatingPreparedModel):
    """Every path answers NONE for every request, without validating or executing it."""

    def execute_synchronously(self, request, measure, deadline, loop_timeout_duration):
        return ErrorStatus.NONE, [], NO_TIMING_INFO

    def execute(self, request, measure, deadline, loop_timeout_duration, callback):
        callback.notify(ErrorStatus.NONE, [], NO_TIMING_INFO)
        return ErrorStatus.NONE


class _LaunchedTimingTooLong:
    """A fenced callback whose timingLaunched says the execution took a million times longer than it did."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def get_execution_info(self):
        status, launched, fenced = self.inner.get_execution_info()
        if launched.time_in_driver != NO_TIMING:
            launched = Timing(launched.time_on_device, launched.time_in_driver * 1_000_000 + 1_000_000)
        return status, launched, fenced


class FencedTimingTooLong(DelegatingPreparedModel):
    """executeFenced reports a timeInDriver far longer than the execution's wall time (a unit slip)."""

    def execute_fenced(self, request, wait_for, measure, deadline, loop_timeout_duration, timeout_after_fence):
        status, fence, callback = self.inner.execute_fenced(
            request, wait_for, measure, deadline, loop_timeout_duration, timeout_after_fence
        )
        return status, fence, None if callback is None else _LaunchedTimingTooLong(callback)


class RefusesZeroLoopTimeout(DelegatingPreparedModel):
    """A loopTimeoutDuration of 0 is refused as if it were not a duration (it is one: WHILE loops get no time)."""

    def execute_synchronously(self, request, measure, deadline, loop_timeout_duration):
        if loop_timeout_duration == 0:
            return ErrorStatus.INVALID_ARGUMENT, [], NO_TIMING_INFO
        return self.inner.execute_synchronously(request, measure, deadline, loop_timeout_duration)


class RejectsOperation(Delegating):
    """Rejects as invalid every model holding an operation of type `op` (a validation table that is wrong for it)."""

    def __init__(self, inner: Device, op: int) -> None:
        super().__init__(inner)
        self.op = int(op)

    def _rejects(self, model) -> bool:
        return any(int(o.type) == self.op for o in model.main.operations)

    def get_supported_operations(self, model):
        if self._rejects(model):
            return ErrorStatus.INVALID_ARGUMENT, []
        return self.inner.get_supported_operations(model)

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        if self._rejects(model):
            callback.notify(ErrorStatus.INVALID_ARGUMENT, None)
            return ErrorStatus.INVALID_ARGUMENT


class RefusesWhen(Delegating):
    """Answers INVALID_ARGUMENT (or `status`) to getSupportedOperations and prepareModel for the models `refuses`
    picks, and forwards the others: a validator with one wrong rule."""

    def __init__(self, inner: Device, refuses, status: ErrorStatus = ErrorStatus.INVALID_ARGUMENT) -> None:
        super().__init__(inner)
        self.refuses = refuses
        self.status = status

    def get_supported_operations(self, model):
        if self.refuses(model):
            return self.status, []
        return self.inner.get_supported_operations(model)

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        if self.refuses(model):
            callback.notify(self.status, None)
            return self.status
        return self.inner.prepare_model(model, preference, priority, deadline, model_cache, data_cache, token, callback)


class AcceptsWhen(Delegating):
    """Accepts (all operations supported, a prepared model that runs nothing) the models `accepts` picks, however
    invalid, and forwards the others: a validator missing one rule."""

    def __init__(self, inner: Device, accepts) -> None:
        super().__init__(inner)
        self.accepts = accepts

    def get_supported_operations(self, model):
        if self.accepts(model):
            return ErrorStatus.NONE, [True] * len(model.main.operations)
        return self.inner.get_supported_operations(model)

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        if self.accepts(model):
            callback.notify(ErrorStatus.NONE, _NullPreparedModel())
            return ErrorStatus.NONE
        return self.inner.prepare_model(model, preference, priority, deadline, model_cache, data_cache, token, callback)
