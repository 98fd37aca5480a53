"""The driver's Device: capabilities, support queries, model preparation (from a model or from cache files)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from driver_under_test import memory_domain
from driver_under_test._cache_files import CacheFile, close_all
from driver_under_test._workers import WorkerPool
from driver_under_test.backends import Backend, create_backend
from driver_under_test.cache import CompilationCache
from driver_under_test.constants import ConstantsOnDemand, read_constants
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
    EngineExport,
    EngineModel,
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

_DEADLINE_STATUSES = (ErrorStatus.MISSED_DEADLINE_PERSISTENT, ErrorStatus.MISSED_DEADLINE_TRANSIENT)


def _handles(handles: object) -> list:
    """Cache handles as a list; anything unusable counts as none (cache problems never fail preparation)."""
    try:
        return list(handles)  # type: ignore[call-overload]
    except TypeError:
        return []


class DriverDevice(Device, EngineExport):
    """An NN HAL 1.3-style device: this package's HAL plumbing over one backend that runs prepared models."""

    def __init__(self, options: DeviceOptions, faults: FaultSet, backend: Backend | None = None) -> None:
        self.options = options
        self.faults = faults
        self.backend = backend if backend is not None else create_backend(options.backend, **options.backend_options)
        # The version names the backend and its engine: a cache saved by another one is not this device's.
        self.version = f"{options.version} ({self.backend.name}: {self.backend.version()})"
        self.cache = CompilationCache(options, faults, self.version, self.backend.name)
        self.domain = MemoryDomain(faults, options.limits)
        # Threads for asynchronous work (preparation, executions, burst listeners), shared by its prepared models.
        self.workers = WorkerPool("dut-worker")

    def __repr__(self) -> str:
        return f"DriverDevice({self.options.name!r}, {self.backend.name}, faults={sorted(self.faults.names)})"

    def get_capabilities(self) -> tuple[ErrorStatus, Capabilities]:
        """IDevice::getCapabilities_1_3: per-type performance of the types the device and its backend compute on,
        sorted by type, no SUBGRAPH entry."""
        backend = self.backend
        types = sorted(t for t in self.options.operand_types & backend.operand_types if t != OperandType.SUBGRAPH)
        performance = PerformanceInfo(exec_time=backend.exec_time, power_usage=backend.exec_time)
        return ErrorStatus.NONE, Capabilities(
            relaxed_float32_to_float16_performance_scalar=performance,
            relaxed_float32_to_float16_performance_tensor=performance,
            operand_performance=[OperandPerformance(OperandType(t), performance) for t in types],
            if_performance=performance,
            while_performance=performance,
        )

    def get_version_string(self) -> tuple[ErrorStatus, str]:
        """IDevice::getVersionString."""
        return ErrorStatus.NONE, self.version

    def get_type(self) -> tuple[ErrorStatus, DeviceType]:
        """IDevice::getType."""
        return ErrorStatus.NONE, DeviceType.CPU

    def get_supported_extensions(self) -> tuple[ErrorStatus, list[Extension]]:
        """IDevice::getSupportedExtensions: none."""
        return ErrorStatus.NONE, []

    def get_number_of_cache_files_needed(self) -> tuple[ErrorStatus, int, int]:
        """IDevice::getNumberOfCacheFilesNeeded."""
        model_files, data_files = self.cache.files_needed()
        return ErrorStatus.NONE, model_files, data_files

    def get_supported_operations(self, model: Model) -> tuple[ErrorStatus, list[bool]]:
        """IDevice::getSupportedOperations_1_3."""
        try:
            validate_model(model, self.options.limits, self.faults)
            constants = ConstantsOnDemand(model, self.options.constant_memory_kinds)
            try:
                return ErrorStatus.NONE, supported_operations(model, self.options, self.backend, constants)
            finally:
                constants.close()
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
            self.cache.save_quietly(
                model, prepared.constants, self.backend.name, prepared.program.artifact, model_cache, data_cache, token
            )
        callback.notify(ErrorStatus.NONE, prepared)

    def compile(self, model: Model, deadline: Deadline, artifact: bytes | None = None) -> DriverPreparedModel:
        """Compile a validated model (load the backend's `artifact` when a cache kept one); DriverError for
        unsupported content or a missed deadline."""
        if deadline is not None and time.monotonic_ns() > deadline:
            raise DriverError(
                ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before preparation", "qos.deadline"
            )
        # Each pool is opened once, to copy the constants out of it. A pool the device cannot map makes every
        # operation using its constants unsupported: preparation fails with GENERAL_FAILURE either way.
        pools: list[PoolFile | PoolMapping] = []
        try:
            for pool in model.pools:
                pools.append(open_pool(pool, self.options.constant_memory_kinds, writable=False))
            constants = read_constants(model, pools)
        finally:
            for p in pools:
                p.close()
        if not all(supported_operations(model, self.options, self.backend, lambda sg, i: constants[(sg, i)], set())):
            raise failure(
                "the model uses operations or operand types this device does not support", "prepare.unsupported"
            )
        if artifact is None:
            program = self.backend.compile(model, constants)
        else:
            program = self.backend.load(model, constants, artifact)
        if deadline is not None and time.monotonic_ns() > deadline:
            raise DriverError(
                ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed during preparation", "qos.deadline"
            )
        return DriverPreparedModel(
            model, program, constants, self.options, self.faults, domain=self.domain, workers=self.workers
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
        try:
            files, token = self.cache.open_for_reading(_handles(model_cache), _handles(data_cache), token)
        except Exception as e:
            status = as_driver_error(e).status  # only the status: see prepare_model
            callback.notify(status, None)
            return status
        self.workers.submit(self._prepare_from_cache, deadline, files, token, callback)
        return ErrorStatus.NONE

    def _prepare_from_cache(
        self, deadline: Deadline, files: list[CacheFile], token: bytes, callback: PreparedModelCallback
    ) -> None:
        try:
            if deadline is not None and time.monotonic_ns() > deadline:
                raise DriverError(
                    ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before preparation", "qos.deadline"
                )
            cached = self.cache.read(files, token)
            if cached.backend != self.backend.name:
                raise failure(f"the cache holds a program of backend {cached.backend!r}", "cache.backend")
            validate_model(cached.model, self.options.limits, self.faults)
            prepared = self.compile(cached.model, deadline, cached.artifact)
        except Exception as e:
            status = as_driver_error(e).status
            # Whatever went wrong with the files, the model or its validation, the cache is unusable.
            callback.notify(status if status in _DEADLINE_STATUSES else ErrorStatus.GENERAL_FAILURE, None)
            return
        finally:
            close_all(files)
        callback.notify(ErrorStatus.NONE, prepared)

    def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[PreparedModel],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ErrorStatus, Buffer | None, int]:
        """IDevice::allocate: a driver-managed buffer for these roles (rules and decisions in memory_domain.py)."""
        return memory_domain.allocate(self.domain, desc, prepared_models, input_roles, output_roles)

    def engine_identity(self) -> tuple[str, str] | None:
        """The backend's engine and kernel set when it is a third-party engine with a format of its own."""
        if self.backend.export_format is None:
            return None
        return self.backend.engine(), self.backend.kernel_set

    def export_engine_model(self, model: Model) -> tuple[ErrorStatus, EngineModel | None]:
        """The backend's model of a valid, supported model (the LiteRT flatbuffer); GENERAL_FAILURE for a backend
        without a format of its own (numpy)."""
        export_format = self.backend.export_format
        if export_format is None:
            return ErrorStatus.GENERAL_FAILURE, None
        try:
            validate_model(model, self.options.limits, self.faults)
            data = self.compile(model, None).program.artifact
        except Exception as e:
            return as_driver_error(e).status, None
        return ErrorStatus.NONE, EngineModel(self.backend.engine(), export_format, self.backend.kernel_set, data)
