"""HAL structures as dataclasses: operands, operations, models, requests, roles, shapes, timing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from harness.hal.constants import NO_TIMING
from harness.hal.enums import OperandLifeTime, OperandType, OperationType

if TYPE_CHECKING:
    from harness.hal.memory import Memory


@dataclass
class DataLocation:
    """Where an operand's bytes live: a pool (or operandValues) index, an offset and a length."""

    pool_index: int = 0
    offset: int = 0
    length: int = 0


@dataclass
class SymmPerChannelQuantParams:
    """Per-channel quantization parameters of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand."""

    scales: list[float] = field(default_factory=list)
    channel_dim: int = 0


@dataclass
class Operand:
    """An operand of a subgraph (types.hal Operand)."""

    type: OperandType | int
    dimensions: list[int] = field(default_factory=list)
    number_of_consumers: int = 0
    scale: float = 0.0
    zero_point: int = 0
    lifetime: OperandLifeTime | int = OperandLifeTime.TEMPORARY_VARIABLE
    location: DataLocation = field(default_factory=DataLocation)
    # None, SymmPerChannelQuantParams, or bytes (extension parameters).
    extra_params: SymmPerChannelQuantParams | bytes | None = None


@dataclass
class Operation:
    """One operation: its type and the operand indexes it reads and writes."""

    type: OperationType | int
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


@dataclass
class Subgraph:
    """A subgraph: operands, operations in execution order, and its input/output operand indexes."""

    operands: list[Operand] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    input_indexes: list[int] = field(default_factory=list)
    output_indexes: list[int] = field(default_factory=list)


@dataclass
class ExtensionNameAndPrefix:
    """Maps an extension name to the type prefix the model uses for it."""

    name: str
    prefix: int


@dataclass
class Model:
    """A model: the main subgraph, referenced subgraphs, constant storage and flags (types.hal Model)."""

    main: Subgraph = field(default_factory=Subgraph)
    referenced: list[Subgraph] = field(default_factory=list)
    operand_values: bytes = b""
    pools: list[Memory] = field(default_factory=list)
    relax_computation_float32_to_float16: bool = False
    extension_name_to_prefix: list[ExtensionNameAndPrefix] = field(default_factory=list)


@dataclass
class RequestArgument:
    """One execution input or output: where its bytes are and, optionally, its dimensions."""

    has_no_value: bool = False
    location: DataLocation = field(default_factory=DataLocation)
    dimensions: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class DriverBufferToken:
    """A request pool that names a driver-managed buffer (IBuffer) by the token allocate() returned."""

    token: int


# A request pool is either shared memory or a driver buffer token (types.hal Request.MemoryPool).
MemoryPool = Union["Memory", DriverBufferToken]


@dataclass
class Request:
    """An execution request: inputs, outputs and the memory pools they point into."""

    inputs: list[RequestArgument] = field(default_factory=list)
    outputs: list[RequestArgument] = field(default_factory=list)
    pools: list[MemoryPool] = field(default_factory=list)


@dataclass
class BufferDesc:
    """Dimensions requested for a driver-allocated buffer (empty or zeros = unknown)."""

    dimensions: list[int] = field(default_factory=list)


@dataclass
class BufferRole:
    """One role a driver buffer may play: input or output ioIndex of the modelIndex-th prepared model."""

    model_index: int
    io_index: int
    frequency: float = 1.0


@dataclass
class OutputShape:
    """The actual dimensions of an output and whether its buffer was large enough."""

    dimensions: list[int] = field(default_factory=list)
    is_sufficient: bool = True


@dataclass(frozen=True)
class Timing:
    """Execution timing in microseconds; NO_TIMING (UINT64_MAX) means not available."""

    time_on_device: int = NO_TIMING
    time_in_driver: int = NO_TIMING


NO_TIMING_INFO = Timing()


@dataclass
class PerformanceInfo:
    """Execution time and power usage relative to the CPU (lower is better)."""

    exec_time: float = 1.0
    power_usage: float = 1.0


@dataclass
class OperandPerformance:
    """Performance of one operand type."""

    type: OperandType | int
    info: PerformanceInfo = field(default_factory=PerformanceInfo)


@dataclass
class Capabilities:
    """Device capabilities (types.hal Capabilities, 1.3)."""

    relaxed_float32_to_float16_performance_scalar: PerformanceInfo = field(default_factory=PerformanceInfo)
    relaxed_float32_to_float16_performance_tensor: PerformanceInfo = field(default_factory=PerformanceInfo)
    operand_performance: list[OperandPerformance] = field(default_factory=list)
    if_performance: PerformanceInfo = field(default_factory=PerformanceInfo)
    while_performance: PerformanceInfo = field(default_factory=PerformanceInfo)


@dataclass
class Extension:
    """A vendor extension the device supports."""

    name: str
    operand_types: list[tuple[int, bool, int]] = field(default_factory=list)  # (type, isTensor, byteSize)


@dataclass(frozen=True)
class CacheHandle:
    """One compilation cache file handle: its file descriptors (exactly one is valid) and start offset."""

    fds: tuple[int, ...]
    offset: int = 0


# Deadlines are absolute times on time.monotonic_ns(); None means no deadline.
Deadline = int | None
# Durations are nanoseconds; None means "not given" (the default applies).
Duration = int | None
