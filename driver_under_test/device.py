"""The driver's Device: capabilities, support queries and model preparation."""

from __future__ import annotations

import time
from collections.abc import Sequence

from driver_under_test import cache, memory_domain
from driver_under_test._workers import WorkerPool
from driver_under_test.backends.numpy.executor import CompiledSubgraph, compile_model
from driver_under_test.errors import DriverError, as_driver_error, failure
from driver_under_test.faults import FaultSet
from driver_under_test.memory_domain import MemoryDomain
from driver_under_test.options import DeviceOptions
from driver_under_test.pools import PoolFile, PoolMapping, open_pool
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


def _handles(handles: object) -> list:
    """Cache handles as a list; anything unusable counts as none (cache problems never fail preparation)."""
    try:
        return list(handles)  # type: ignore[call-overload]
    except TypeError:
        return []


class DriverDevice(Device):
    """An NN HAL 1.3-style device backed by this package's kernels."""

    def __init__(self, options: DeviceOptions, faults: FaultSet) -> None:
        self.options = options
        self.faults = faults
        self.domain = MemoryDomain(faults, options.limits)
        # Threads for asynchronous work (preparation, executions, burst listeners), shared by its prepared models.
        self.workers = WorkerPool("dut-worker")

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
        """IDevice::getNumberOfCacheFilesNeeded."""
        model_files, data_files = cache.files_needed(self)
        return ErrorStatus.NONE, model_files, data_files

    def get_supported_operations(self, model: Model) -> tuple[ErrorStatus, list[bool]]:
        """IDevice::getSupportedOperations_1_3."""
        try:
            validate_model(model, self.options.limits, self.faults)
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
        """IDevice::prepareModel_1_3: validates at launch, compiles on a worker thread."""
        if callback is None:
            return ErrorStatus.INVALID_ARGUMENT
        try:
            validate_preparation_args(preference, priority)
            validate_model(model, self.options.limits, self.faults)
        except Exception as e:
            # Only the status is kept: the error, held in a local of a frame its traceback holds, would keep the
            # model and everything reachable from this frame alive until the cycle collector finds them.
            status = as_driver_error(e).status
            callback.notify(status, None)
            return status
        args = (model, deadline, _handles(model_cache), _handles(data_cache), token, callback)
        self.workers.submit(self._prepare, *args)
        return ErrorStatus.NONE

    def _prepare(
        self,
        model: Model,
        deadline: Deadline,
        model_cache: list[CacheHandle],
        data_cache: list[CacheHandle],
        token: bytes,
        callback: PreparedModelCallback,
    ) -> None:
        try:
            prepared = self.compile(model, deadline)
        except Exception as e:
            callback.notify(as_driver_error(e).status, None)
            return
        # Cache problems never fail preparation: saving reports nothing back. Without a single handle there is
        # nothing to save to (whenever caching is on, the device needs one file of each kind).
        if model_cache or data_cache:
            cache.save_quietly(self, prepared, model_cache, data_cache, token)
        callback.notify(ErrorStatus.NONE, prepared)

    def compile(self, model: Model, deadline: Deadline) -> DriverPreparedModel:
        """Compile a validated model; DriverError for unsupported content or a missed deadline."""
        if deadline is not None and time.monotonic_ns() > deadline:
            raise DriverError(
                ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before preparation", "qos.deadline"
            )
        # Each pool is opened once: which ones fail decides support, and the others hold the constants.
        pools: list[PoolFile | PoolMapping] = []
        unusable: dict[int, DriverError] = {}
        try:
            for index, pool in enumerate(model.pools):
                try:
                    pools.append(open_pool(pool, self.options.constant_memory_kinds, writable=False))
                except DriverError as e:
                    unusable[index] = e
            if not all(supported_operations(model, self.options, set(unusable))):
                raise failure(
                    "the model uses operations or operand types this device does not support", "prepare.unsupported"
                )
            if unusable:
                raise unusable[min(unusable)]
            subgraphs = compile_model(model, pools)
        finally:
            for p in pools:
                p.close()
        if deadline is not None and time.monotonic_ns() > deadline:
            raise DriverError(
                ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed during preparation", "qos.deadline"
            )
        return self.adopt(model, subgraphs)

    def adopt(self, model: Model, subgraphs: list[CompiledSubgraph]) -> DriverPreparedModel:
        """A prepared model of this device from compiled subgraphs (freshly compiled or rebuilt from a cache)."""
        return DriverPreparedModel(
            model, subgraphs, self.options, self.faults, domain=self.domain, workers=self.workers
        )

    def prepare_model_from_cache(
        self,
        deadline: Deadline,
        model_cache: Sequence[CacheHandle],
        data_cache: Sequence[CacheHandle],
        token: bytes,
        callback: PreparedModelCallback,
    ) -> ErrorStatus:
        """IDevice::prepareModelFromCache_1_3."""
        if callback is None:
            return ErrorStatus.INVALID_ARGUMENT
        return cache.prepare_from_cache(self, deadline, _handles(model_cache), _handles(data_cache), token, callback)

    def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[PreparedModel],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ErrorStatus, Buffer | None, int]:
        """IDevice::allocate: a driver-managed buffer for these roles (rules and decisions in memory_domain.py)."""
        return memory_domain.allocate(self.domain, desc, prepared_models, input_roles, output_roles)
