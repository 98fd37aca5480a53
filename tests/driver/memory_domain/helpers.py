"""Helpers for the memory-domain tests: models, allocation, requests mixing shared memory and driver buffers."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.case import pool_from_json
from harness.hal import (
    BufferDesc,
    BufferRole,
    DataLocation,
    DriverBufferToken,
    ErrorStatus,
    Model,
    Operand,
    OperandType,
    Operation,
    OperationType,
    Request,
    RequestArgument,
    Subgraph,
)
from harness.hal.memory import Memory
from tests.driver.models import LT, int32_constant, tensor

F32 = OperandType.TENSOR_FLOAT32
KINDS = ["ashmem", "hardware_buffer_blob", "mmap_fd"]  # the kinds copyFrom and copyTo must take (D18)

A = np.array([[1, 2], [3, 4]], dtype=np.float32)
B = np.array([[10, 20], [30, 40]], dtype=np.float32)


def typed_add_model(
    dims: Sequence[int], type_: int = F32, scale: float = 0.0, zero_point: int = 0, activation_input: bool = False
) -> Model:
    """out = ADD(a, b) on operands of one type; the activation is a constant, or the model's third input."""

    def operand(lifetime: LT, consumers: int) -> Operand:
        return Operand(type_, list(dims), consumers, scale, zero_point, lifetime)

    activation = int32_constant(0, 0)
    inputs = [0, 1]
    if activation_input:
        activation = Operand(OperandType.INT32, [], 1, lifetime=LT.SUBGRAPH_INPUT)
        inputs = [0, 1, 2]
    operands = [
        operand(LT.SUBGRAPH_INPUT, 1),
        operand(LT.SUBGRAPH_INPUT, 1),
        activation,
        operand(LT.SUBGRAPH_OUTPUT, 0),
    ]
    main = Subgraph(operands, [Operation(OperationType.ADD, [0, 1, 2], [3])], inputs, [3])
    return Model(main=main, operand_values=b"" if activation_input else struct.pack("<i", 0))


def two_adds_model(dims: Sequence[int] = (2, 2)) -> Model:
    """Two independent additions: out0 = a0 + b0, out1 = a1 + b1 (inputs a0, b0, a1, b1)."""
    dims = list(dims)
    operands = [tensor(dims, LT.SUBGRAPH_INPUT, 1) for _ in range(4)]
    operands += [int32_constant(0, 0, consumers=2), tensor(dims, LT.SUBGRAPH_OUTPUT), tensor(dims, LT.SUBGRAPH_OUTPUT)]
    ops = [Operation(OperationType.ADD, [0, 1, 4], [5]), Operation(OperationType.ADD, [2, 3, 4], [6])]
    return Model(main=Subgraph(operands, ops, [0, 1, 2, 3], [5, 6]), operand_values=struct.pack("<i", 0))


def allocate(
    device,
    models: Sequence[object],
    inputs: Sequence[tuple[int, int]] = (),
    outputs: Sequence[tuple[int, int]] = (),
    dims: Sequence[int] = (),
    frequency: float = 1.0,
):
    """device.allocate with roles given as (modelIndex, ioIndex) pairs."""
    return device.allocate(
        BufferDesc(list(dims)),
        list(models),
        [BufferRole(m, i, frequency) for m, i in inputs],
        [BufferRole(m, i, frequency) for m, i in outputs],
    )


def allocated(device, models: Sequence[object], **kw):
    """(buffer, token) of an allocation that must succeed."""
    status, buffer, token = allocate(device, models, **kw)
    assert status == ErrorStatus.NONE and buffer is not None and token > 0, (status, buffer, token)
    return buffer, token


def memory_with(data: bytes, kind: str = "ashmem") -> Memory:
    """A new memory of `kind` holding exactly `data`."""
    memory = pool_from_json({"kind": kind, "size": len(data)})
    memory.write(0, data)
    return memory


def copy_in(buffer, values: np.ndarray, dims: Sequence[int] | None = None, kind: str = "ashmem") -> ErrorStatus:
    """buffer.copy_from a memory holding `values` (dimensions: `dims`, default the array's shape)."""
    with memory_with(np.ascontiguousarray(values).tobytes(), kind) as memory:
        return buffer.copy_from(memory, list(values.shape) if dims is None else list(dims))


def copy_out(buffer, size: int, kind: str = "ashmem") -> tuple[ErrorStatus, bytes]:
    """buffer.copy_to a new zeroed memory of `size` bytes; (status, the memory's bytes afterwards)."""
    with pool_from_json({"kind": kind, "size": size}) as memory:
        status = buffer.copy_to(memory)
        return status, memory.read(0, size)


def read_f32(buffer, shape: Sequence[int]) -> np.ndarray:
    """The buffer's content as float32 of `shape` (copyTo must succeed)."""
    status, raw = copy_out(buffer, 4 * int(np.prod(shape)))
    assert status == ErrorStatus.NONE, status
    return np.frombuffer(raw, dtype=np.float32).reshape(tuple(shape))


@dataclass
class Buf:
    """A request argument that names a driver buffer by token (with optional request dimensions)."""

    token: int
    dims: list[int] = field(default_factory=list)


@dataclass
class Out:
    """A shared-memory output argument of `size` bytes (with optional request dimensions)."""

    size: int
    dims: list[int] = field(default_factory=list)


@dataclass
class MixedRequest:
    """A request with one pool per shared argument and one pool per distinct token."""

    request: Request
    memories: list[Memory]
    output_memories: dict[int, Memory]

    def output(self, j: int, shape: Sequence[int]) -> np.ndarray:
        """Shared output j as float32 of `shape`."""
        raw = self.output_memories[j].read(0, 4 * int(np.prod(shape)))
        return np.frombuffer(raw, dtype=np.float32).reshape(tuple(shape))

    def close(self) -> None:
        """Close every shared memory."""
        for m in self.memories:
            m.close()

    def __enter__(self) -> MixedRequest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def mixed_request(inputs: Sequence[np.ndarray | Buf], outputs: Sequence[Out | Buf]) -> MixedRequest:
    """A request whose arguments are arrays / Out (shared memory) or Buf (a driver buffer)."""
    pools: list = []
    memories: list[Memory] = []
    token_pool: dict[int, int] = {}
    output_memories: dict[int, Memory] = {}

    def buffer_argument(arg: Buf) -> RequestArgument:
        if arg.token not in token_pool:
            token_pool[arg.token] = len(pools)
            pools.append(DriverBufferToken(arg.token))
        return RequestArgument(False, DataLocation(token_pool[arg.token], 0, 0), list(arg.dims))

    def shared_argument(memory: Memory, dims: Sequence[int]) -> RequestArgument:
        pools.append(memory)
        memories.append(memory)
        return RequestArgument(False, DataLocation(len(pools) - 1, 0, memory.size), list(dims))

    in_args = []
    for value in inputs:
        if isinstance(value, Buf):
            in_args.append(buffer_argument(value))
        else:
            data = np.ascontiguousarray(value)
            in_args.append(shared_argument(memory_with(data.tobytes()), data.shape))
    out_args = []
    for j, out in enumerate(outputs):
        if isinstance(out, Buf):
            out_args.append(buffer_argument(out))
        else:
            memory = pool_from_json({"kind": "ashmem", "size": out.size})
            output_memories[j] = memory
            out_args.append(shared_argument(memory, out.dims))
    return MixedRequest(Request(in_args, out_args, pools), memories, output_memories)
