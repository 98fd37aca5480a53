"""The HAL interface layer: types, constants, sizes, shared memory, fences and abstract interfaces.

Everything else in the project depends on this package; it depends on numpy and the standard library only.
"""

from harness.hal.callbacks import CallbackTimeout, WaitableExecutionCallback, WaitablePreparedModelCallback
from harness.hal.constants import (
    BYTE_SIZE_OF_CACHE_TOKEN,
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
    MAX_NUMBER_OF_CACHE_FILES,
    NO_TIMING,
)
from harness.hal.enums import (
    DeviceType,
    ErrorStatus,
    ExecutionPreference,
    FusedActivation,
    MeasureTiming,
    OperandLifeTime,
    OperandType,
    OperationType,
    Priority,
)
from harness.hal.interfaces import (
    Buffer,
    BurstCallback,
    BurstContext,
    Device,
    EngineExport,
    EngineModel,
    ExecutionCallback,
    FencedExecutionCallback,
    PreparedModel,
    PreparedModelCallback,
)
from harness.hal.sizes import (
    element_count,
    element_size,
    has_unknown_dimensions,
    has_unknown_rank,
    is_extension_type,
    is_known_type,
    is_scalar_type,
    is_tensor_type,
    merge_dimensions,
    numpy_dtype,
    operand_byte_size,
)
from harness.hal.types import (
    NO_TIMING_INFO,
    BufferDesc,
    BufferRole,
    CacheHandle,
    Capabilities,
    DataLocation,
    Deadline,
    DriverBufferToken,
    Duration,
    Extension,
    ExtensionNameAndPrefix,
    MemoryPool,
    Model,
    Operand,
    OperandPerformance,
    Operation,
    OutputShape,
    PerformanceInfo,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
    Timing,
)

__all__ = [name for name in dir() if not name.startswith("_")]
from harness.hal.fence import FenceState, SyncFence  # noqa: E402, F401
from harness.hal.memory import (  # noqa: E402, F401
    HWB_FORMAT_BLOB,
    HWB_FORMAT_R8G8B8A8_UNORM,
    HWB_HEADER_SIZE,
    HWB_MAGIC,
    Memory,
    MemoryBoundsError,
    MemoryKind,
    MemoryMapError,
    create_ashmem,
    create_hardware_buffer,
    create_hardware_buffer_blob,
    create_mmap_fd,
    recv_memory,
    send_memory,
)

__all__ = [name for name in dir() if not name.startswith("_")]  # noqa: F811
