"""Abstract HAL interfaces: Device, PreparedModel, Buffer, BurstContext and the callbacks they report to.

HAL results are statuses, not exceptions: every method returns an ErrorStatus (alone or first in a tuple).
An exception escaping one of these methods is a driver failure.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.hal.enums import DeviceType, ErrorStatus, ExecutionPreference, MeasureTiming, Priority
from harness.hal.types import (
    BufferDesc,
    BufferRole,
    CacheHandle,
    Capabilities,
    Deadline,
    Duration,
    Extension,
    Model,
    OutputShape,
    Request,
    Timing,
)

if TYPE_CHECKING:
    from harness.hal.fence import SyncFence
    from harness.hal.memory import Memory


class PreparedModelCallback(abc.ABC):
    """Receives the result of prepareModel / prepareModelFromCache (IPreparedModelCallback)."""

    @abc.abstractmethod
    def notify(self, status: ErrorStatus, prepared_model: PreparedModel | None) -> None:
        """IPreparedModelCallback::notify_1_3: status NONE iff a prepared model is delivered."""


class ExecutionCallback(abc.ABC):
    """Receives the result of an asynchronous execute (IExecutionCallback)."""

    @abc.abstractmethod
    def notify(self, status: ErrorStatus, output_shapes: list[OutputShape], timing: Timing) -> None:
        """IExecutionCallback::notify_1_3: shapes only for NONE/OUTPUT_INSUFFICIENT_SIZE, timing per D8."""


class FencedExecutionCallback(abc.ABC):
    """Reports the outcome of a fenced execution once its fence is signalled (IFencedExecutionCallback)."""

    @abc.abstractmethod
    def get_execution_info(self) -> tuple[ErrorStatus, Timing, Timing]:
        """IFencedExecutionCallback::getExecutionInfo: (status, timingLaunched, timingFenced)."""


class BurstCallback(abc.ABC):
    """Client side of a burst: resolves memory slots the server has not cached yet (IBurstCallback)."""

    @abc.abstractmethod
    def get_memories(self, slots: Sequence[int]) -> tuple[ErrorStatus, list[Memory]]:
        """IBurstCallback::getMemories: the memories for these slots, INVALID_ARGUMENT for unknown ones."""


class BurstContext(abc.ABC):
    """Server side of a burst: a listener reading the request channel (IBurstContext)."""

    @abc.abstractmethod
    def free_memory(self, slot: int) -> None:
        """IBurstContext::freeMemory: forget the cached mapping of a slot (no effect for unknown slots)."""

    @abc.abstractmethod
    def release(self) -> None:
        """End the burst: stop the listener and free every cached mapping. Idempotent."""


class Buffer(abc.ABC):
    """A driver-managed memory of a memory domain (IBuffer)."""

    @abc.abstractmethod
    def copy_to(self, dst: Memory) -> ErrorStatus:
        """IBuffer::copyTo: INVALID_ARGUMENT for a wrong-size memory, GENERAL_FAILURE if uninitialized."""

    @abc.abstractmethod
    def copy_from(self, src: Memory, dimensions: Sequence[int]) -> ErrorStatus:
        """IBuffer::copyFrom: INVALID_ARGUMENT for a wrong size or dimensions conflicting with known ones."""


class PreparedModel(abc.ABC):
    """A compiled model that can be executed (IPreparedModel, 1.3)."""

    @abc.abstractmethod
    def execute(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout_duration: Duration,
        callback: ExecutionCallback,
    ) -> ErrorStatus:
        """IPreparedModel::execute_1_3: launch status; an invalid request is reported both ways."""

    @abc.abstractmethod
    def execute_synchronously(
        self,
        request: Request,
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout_duration: Duration,
    ) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        """IPreparedModel::executeSynchronously_1_3: (status, output shapes, timing)."""

    @abc.abstractmethod
    def execute_fenced(
        self,
        request: Request,
        wait_for: Sequence[SyncFence],
        measure: MeasureTiming,
        deadline: Deadline,
        loop_timeout_duration: Duration,
        timeout_after_fence: Duration,
    ) -> tuple[ErrorStatus, SyncFence | None, FencedExecutionCallback | None]:
        """IPreparedModel::executeFenced: (status, fence signalled on completion, callback)."""

    @abc.abstractmethod
    def configure_execution_burst(
        self,
        callback: BurstCallback,
        request_channel: object,
        result_channel: object,
    ) -> tuple[ErrorStatus, BurstContext | None]:
        """IPreparedModel::configureExecutionBurst: a context whose listener serves the channels."""


class Device(abc.ABC):
    """A driver's device (IDevice, 1.3)."""

    @abc.abstractmethod
    def get_capabilities(self) -> tuple[ErrorStatus, Capabilities]:
        """IDevice::getCapabilities_1_3."""

    @abc.abstractmethod
    def get_version_string(self) -> tuple[ErrorStatus, str]:
        """IDevice::getVersionString."""

    @abc.abstractmethod
    def get_type(self) -> tuple[ErrorStatus, DeviceType]:
        """IDevice::getType."""

    @abc.abstractmethod
    def get_supported_extensions(self) -> tuple[ErrorStatus, list[Extension]]:
        """IDevice::getSupportedExtensions."""

    @abc.abstractmethod
    def get_supported_operations(self, model: Model) -> tuple[ErrorStatus, list[bool]]:
        """IDevice::getSupportedOperations_1_3: one flag per operation of main; INVALID_ARGUMENT if invalid."""

    @abc.abstractmethod
    def get_number_of_cache_files_needed(self) -> tuple[ErrorStatus, int, int]:
        """IDevice::getNumberOfCacheFilesNeeded: (status, model cache files, data cache files)."""

    @abc.abstractmethod
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
        """IDevice::prepareModel_1_3: launch status; the result arrives through the callback."""

    @abc.abstractmethod
    def prepare_model_from_cache(
        self,
        deadline: Deadline,
        model_cache: Sequence[CacheHandle],
        data_cache: Sequence[CacheHandle],
        token: bytes,
        callback: PreparedModelCallback,
    ) -> ErrorStatus:
        """IDevice::prepareModelFromCache_1_3: GENERAL_FAILURE when caching is unsupported."""

    @abc.abstractmethod
    def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[PreparedModel],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ErrorStatus, Buffer | None, int]:
        """IDevice::allocate: (status, buffer, token > 0); no buffer and token 0 on error."""


@dataclass(frozen=True)
class EngineModel:
    """A model in a third-party engine's own format, as the driver built it for that engine.

    Main's inputs and outputs, in the HAL's order, are the engine model's inputs and outputs in the same order.
    """

    engine: str  # the engine and its version, e.g. "ai-edge-litert 2.3.0"
    format: str  # the file format, e.g. "tflite"
    kernel_set: str  # which of the engine's kernel sets the device runs it on, e.g. "optimized"
    data: bytes


class EngineExport(abc.ABC):
    """A vendor extension, not part of the HAL: a device over a third-party engine hands out the engine's model of a
    HAL model, so that a finding can be reproduced on the engine alone. The harness uses it where a device has it."""

    @abc.abstractmethod
    def engine_identity(self) -> tuple[str, str] | None:
        """(the engine and its version, e.g. "ai-edge-litert 2.3.0"; the kernel set), None for no third-party engine."""

    @abc.abstractmethod
    def export_engine_model(self, model: Model) -> tuple[ErrorStatus, EngineModel | None]:
        """The engine's model of a valid model the device supports; (status, None) when it cannot give one."""
