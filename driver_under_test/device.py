"""The driver's Device: capabilities, support queries and model preparation."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from driver_under_test.errors import DriverError, as_driver_error, failure
from driver_under_test.executor import compile_model
from driver_under_test.faults import FaultSet
from driver_under_test.options import DeviceOptions
from driver_under_test.pools import map_pool
from driver_under_test.prepared_model import DriverPreparedModel
from driver_under_test.support import supported_operations
from driver_under_test.validation import validate_model, validate_preparation_args
from harness.hal import (
    Buffer,
    BufferDesc,
    BufferRole,
    CacheHandle,
    Capabilities,
    Deadline,
    Device,
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    Extension,
    Model,
    OperandPerformance,
    OperandType,
    PerformanceInfo,
    PreparedModel,
    PreparedModelCallback,
    Priority,
)

_CPU_LIKE = PerformanceInfo(exec_time=0.9, power_usage=0.9)


class DriverDevice(Device):
    """An NN HAL 1.3-style device backed by this package's kernels."""

    def __init__(self, options: DeviceOptions, faults: FaultSet) -> None:
        self.options = options
        self.faults = faults

    def __repr__(self) -> str:
        return f"DriverDevice({self.options.name!r}, faults={sorted(self.faults.names)})"

    def get_capabilities(self) -> tuple[ErrorStatus, Capabilities]:
        """IDevice::getCapabilities_1_3: per-type performance sorted by type, no SUBGRAPH entry."""
        types = sorted(t for t in self.options.operand_types if t != OperandType.SUBGRAPH)
        return ErrorStatus.NONE, Capabilities(
            relaxed_float32_to_float16_performance_scalar=_CPU_LIKE,
            relaxed_float32_to_float16_performance_tensor=_CPU_LIKE,
            operand_performance=[OperandPerformance(OperandType(t), _CPU_LIKE) for t in types],
            if_performance=_CPU_LIKE,
            while_performance=_CPU_LIKE,
        )

    def get_version_string(self) -> tuple[ErrorStatus, str]:
        """IDevice::getVersionString."""
        return ErrorStatus.NONE, self.options.version

    def get_type(self) -> tuple[ErrorStatus, DeviceType]:
        """IDevice::getType."""
        return ErrorStatus.NONE, DeviceType.CPU

    def get_supported_extensions(self) -> tuple[ErrorStatus, list[Extension]]:
        """IDevice::getSupportedExtensions: none."""
        return ErrorStatus.NONE, []

    def get_number_of_cache_files_needed(self) -> tuple[ErrorStatus, int, int]:
        """IDevice::getNumberOfCacheFilesNeeded: this version does not cache compilations."""
        return ErrorStatus.NONE, 0, 0

    def get_supported_operations(self, model: Model) -> tuple[ErrorStatus, list[bool]]:
        """IDevice::getSupportedOperations_1_3."""
        try:
            validate_model(model, self.options.limits)
            return ErrorStatus.NONE, supported_operations(model, self.options)
        except Exception as e:
            return as_driver_error(e).status, []

    def prepare_model(
        self,
        model: Model,
        preference: ExecutionPreference,
        priority: Priority,
        deadline: Deadline,
        model_cache: Sequence[CacheHandle],
        data_cache: Sequence[CacheHandle],
        token: bytes,
        callback: PreparedModelCallback,
    ) -> ErrorStatus:
        """IDevice::prepareModel_1_3: validates at launch, compiles in a worker thread."""
        if callback is None:
            return ErrorStatus.INVALID_ARGUMENT
        try:
            validate_preparation_args(preference, priority)
            validate_model(model, self.options.limits)
        except Exception as e:
            error = as_driver_error(e)
            callback.notify(error.status, None)
            return error.status
        # Cache handles are ignored: this version does not cache, and cache problems never fail preparation.
        threading.Thread(
            target=self._prepare, args=(model, deadline, callback), name="dut-prepare", daemon=True
        ).start()
        return ErrorStatus.NONE

    def _prepare(self, model: Model, deadline: Deadline, callback: PreparedModelCallback) -> None:
        try:
            prepared = self.compile(model, deadline)
        except Exception as e:
            callback.notify(as_driver_error(e).status, None)
            return
        callback.notify(ErrorStatus.NONE, prepared)

    def compile(self, model: Model, deadline: Deadline) -> DriverPreparedModel:
        """Compile a validated model; DriverError for unsupported content or a missed deadline."""
        if deadline is not None and time.monotonic_ns() > deadline:
            raise DriverError(
                ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before preparation", "qos.deadline"
            )
        if not all(supported_operations(model, self.options)):
            raise failure(
                "the model uses operations or operand types this device does not support", "prepare.unsupported"
            )
        pools = []
        try:
            for pool in model.pools:
                pools.append(map_pool(pool, self.options.constant_memory_kinds, writable=False))
            subgraphs = compile_model(model, pools)
        finally:
            for p in pools:
                p.close()
        if deadline is not None and time.monotonic_ns() > deadline:
            raise DriverError(
                ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed during preparation", "qos.deadline"
            )
        return DriverPreparedModel(model, subgraphs, self.options, self.faults)

    def prepare_model_from_cache(
        self,
        deadline: Deadline,
        model_cache: Sequence[CacheHandle],
        data_cache: Sequence[CacheHandle],
        token: bytes,
        callback: PreparedModelCallback,
    ) -> ErrorStatus:
        """IDevice::prepareModelFromCache_1_3: caching is not supported by this version (GENERAL_FAILURE)."""
        if callback is None:
            return ErrorStatus.INVALID_ARGUMENT
        callback.notify(ErrorStatus.GENERAL_FAILURE, None)
        return ErrorStatus.GENERAL_FAILURE

    def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[PreparedModel],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ErrorStatus, Buffer | None, int]:
        """IDevice::allocate: memory domains are not offered by this version (GENERAL_FAILURE)."""
        return ErrorStatus.GENERAL_FAILURE, None, 0
