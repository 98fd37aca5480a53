"""The driver's cache file format: a prepared model as a model cache (structure) and a data cache (constants).

Both are little endian. The model cache is the security-sensitive one: the store keeps its hash, and it carries
the SHA-256 and length of the data cache, so the data cache is verified through it.

Model cache
    header (HEADER_SIZE = 16 bytes): magic b"NNFZMDL\\0", u32 format version, u32 reserved (0)
    data cache: 32-byte SHA-256 of the whole data cache file, u64 its length
    u8 relaxComputationFloat32toFloat16
    u32 subgraph count, then per subgraph (main first):
        u32 operand count, per operand: i64 type, dims (u32 count + u32 each), u32 numberOfConsumers,
            f64 scale, i64 zeroPoint, u32 lifetime, u32 poolIndex, u32 offset, u32 length,
            u8 extra kind (0 none, 1 per-channel: u32 count + f64 scales + u32 channelDim, 2 bytes: u64 + bytes)
        u32 operation count, per operation: i64 type, inputs (u32 count + u32 each), outputs (the same)
        inputIndexes, outputIndexes (u32 count + u32 each)
    u32 extension count, per extension: name (u64 length + UTF-8), u32 prefix
    backend: name (u64 length + UTF-8), artifact (u64 length + bytes: what the backend keeps of its program)
Data cache
    header: magic b"NNFZDAT\\0", u32 format version, u32 reserved (0); then the constants' bytes.

Every constant (CONSTANT_COPY or CONSTANT_REFERENCE in the prepared model) is stored as CONSTANT_COPY whose
location points into the data cache's payload, so the rebuilt model needs no client memory. Parsing is total:
any malformed input raises CacheFormatError, never another exception, and no count can make it allocate more
than the input's size.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from harness.hal import (
    DataLocation,
    ExtensionNameAndPrefix,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
    SymmPerChannelQuantParams,
)

MODEL_MAGIC = b"NNFZMDL\0"
DATA_MAGIC = b"NNFZDAT\0"
FORMAT_VERSION = 2
_HEADER = struct.Struct("<8sII")
HEADER_SIZE = _HEADER.size
DIGEST_SIZE = 32

_CONSTANTS = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)
_EXTRA_NONE, _EXTRA_CHANNEL, _EXTRA_BYTES = 0, 1, 2
# Smallest encodings (every list empty): a count read from the cache is refused when that many items of this
# size cannot fit in what is left, so no count can make the parser allocate more than the input's size.
_MIN_OPERAND = struct.calcsize("<qIIdqIIIIB")
_MIN_OPERATION = struct.calcsize("<qII")
_MIN_SUBGRAPH = struct.calcsize("<IIII")
_MIN_EXTENSION = struct.calcsize("<QI")


class CacheFormatError(Exception):
    """Cache bytes that do not decode to a model."""


@dataclass(frozen=True)
class CachedModel:
    """What a pair of cache files holds: the model (constants as CONSTANT_COPY) and its backend's program."""

    model: Model
    backend: str
    artifact: bytes


@dataclass(frozen=True)
class SavedSubgraph:
    """What the cache keeps of one compiled subgraph: its structure and its constants' values."""

    subgraph: Subgraph
    constants: dict[int, np.ndarray]


# --- writing ----------------------------------------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def pack(self, fmt: str, *values: object) -> None:
        self._parts.append(struct.pack("<" + fmt, *values))

    def u32s(self, values: Sequence[int]) -> None:
        self.pack(f"I{len(values)}I", len(values), *values)

    def blob(self, data: bytes) -> None:
        self.pack("Q", len(data))
        self._parts.append(bytes(data))

    def value(self) -> bytes:
        return b"".join(self._parts)


def _write_operand(w: _Writer, operand: Operand) -> None:
    loc = operand.location
    w.pack("q", int(operand.type))
    w.u32s([int(d) for d in operand.dimensions])
    w.pack("IdqIIII", operand.number_of_consumers, float(operand.scale), int(operand.zero_point),
           int(operand.lifetime), loc.pool_index, loc.offset, loc.length)  # fmt: skip
    extra = operand.extra_params
    if isinstance(extra, SymmPerChannelQuantParams):
        w.pack(f"BI{len(extra.scales)}dI", _EXTRA_CHANNEL, len(extra.scales), *map(float, extra.scales),
               extra.channel_dim)  # fmt: skip
    elif isinstance(extra, bytes | bytearray):
        w.pack("B", _EXTRA_BYTES)
        w.blob(bytes(extra))
    else:
        w.pack("B", _EXTRA_NONE)


def serialize(
    subgraphs: Sequence[SavedSubgraph],
    relaxed: bool,
    extensions: Sequence[ExtensionNameAndPrefix],
    backend: str = "",
    artifact: bytes = b"",
) -> tuple[bytes, bytes]:
    """(model cache, data cache) bytes of a prepared model; struct.error or ValueError if a field cannot be stored."""
    payload: list[bytes] = []
    data_length = 0
    body = _Writer()
    body.pack("B", 1 if relaxed else 0)
    body.pack("I", len(subgraphs))
    for saved in subgraphs:
        sg = saved.subgraph
        body.pack("I", len(sg.operands))
        for index, operand in enumerate(sg.operands):
            if int(operand.lifetime) in _CONSTANTS:
                raw = np.ascontiguousarray(saved.constants[index]).tobytes()
                location = DataLocation(0, data_length, len(raw))
                operand = replace(operand, lifetime=OperandLifeTime.CONSTANT_COPY, location=location)
                payload.append(raw)
                data_length += len(raw)
            _write_operand(body, operand)
        body.pack("I", len(sg.operations))
        for op in sg.operations:
            body.pack("q", int(op.type))
            body.u32s([int(i) for i in op.inputs])
            body.u32s([int(i) for i in op.outputs])
        body.u32s([int(i) for i in sg.input_indexes])
        body.u32s([int(i) for i in sg.output_indexes])
    body.pack("I", len(extensions))
    for ext in extensions:
        body.blob(ext.name.encode("utf-8"))
        body.pack("I", ext.prefix)
    body.blob(backend.encode("utf-8"))
    body.blob(artifact)
    data = _HEADER.pack(DATA_MAGIC, FORMAT_VERSION, 0) + b"".join(payload)
    head = _HEADER.pack(MODEL_MAGIC, FORMAT_VERSION, 0) + hashlib.sha256(data).digest() + struct.pack("<Q", len(data))
    return head + body.value(), data


# --- reading ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=512)
def _struct(fmt: str) -> struct.Struct:
    return struct.Struct("<" + fmt)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _need(self, n: int) -> None:
        if n < 0 or n > len(self._data) - self._pos:
            raise CacheFormatError(f"needs {n} bytes at {self._pos}, the cache ends at {len(self._data)}")

    def take(self, n: int) -> bytes:
        self._need(n)
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return chunk

    def unpack(self, fmt: str) -> tuple:
        s = _struct(fmt)
        self._need(s.size)
        values = s.unpack_from(self._data, self._pos)
        self._pos += s.size
        return values

    def one(self, fmt: str) -> int | float:
        return self.unpack(fmt)[0]

    def count(self, item_size: int) -> int:
        """A u32 count of items of at least `item_size` bytes each, refused if they cannot fit in what is left."""
        n = int(self.one("I"))
        if n * item_size > len(self._data) - self._pos:
            raise CacheFormatError(f"count {n} at {self._pos} runs past the end of the cache")
        return n

    def u32s(self) -> list[int]:
        n = self.count(4)
        return list(self.unpack(f"{n}I")) if n else []

    def blob(self) -> bytes:
        n = int(self.one("Q"))
        return self.take(n)

    def finish(self) -> None:
        if self._pos != len(self._data):
            raise CacheFormatError(f"{len(self._data) - self._pos} unexpected bytes after the model")


def _enum(kind: type, value: int) -> int:
    """The IntEnum member for a known value, the plain integer otherwise (validation judges it later)."""
    try:
        return kind(value)
    except ValueError:
        return value


def _read_operand(r: _Reader) -> Operand:
    type_ = int(r.one("q"))
    dims = r.u32s()
    consumers, scale, zero_point, lifetime, pool, offset, length = r.unpack("IdqIIII")
    kind = r.one("B")
    extra: SymmPerChannelQuantParams | bytes | None = None
    if kind == _EXTRA_CHANNEL:
        n = r.count(8)
        scales = [float(s) for s in r.unpack(f"{n}d")]
        extra = SymmPerChannelQuantParams(scales=scales, channel_dim=int(r.one("I")))
    elif kind == _EXTRA_BYTES:
        extra = bytes(r.blob())
    elif kind != _EXTRA_NONE:
        raise CacheFormatError(f"unknown extra-parameter kind {kind}")
    return Operand(
        type=_enum(OperandType, type_),
        dimensions=dims,
        number_of_consumers=consumers,
        scale=scale,
        zero_point=zero_point,
        lifetime=_enum(OperandLifeTime, lifetime),
        location=DataLocation(pool, offset, length),
        extra_params=extra,
    )


def _read_subgraph(r: _Reader) -> Subgraph:
    operands = [_read_operand(r) for _ in range(r.count(_MIN_OPERAND))]
    operations = []
    for _ in range(r.count(_MIN_OPERATION)):
        type_ = int(r.one("q"))
        operations.append(Operation(_enum(OperationType, type_), r.u32s(), r.u32s()))
    return Subgraph(operands, operations, r.u32s(), r.u32s())


def model_header_ok(model_cache: bytes) -> bool:
    """True if the bytes start with this driver's model cache header."""
    return model_cache[:HEADER_SIZE] == _HEADER.pack(MODEL_MAGIC, FORMAT_VERSION, 0)


def deserialize(model_cache: bytes, data_cache: bytes) -> CachedModel:
    """What a pair of cache files holds; CacheFormatError if malformed."""
    try:
        return _deserialize(model_cache, data_cache)
    except CacheFormatError:
        raise
    except (struct.error, ValueError, OverflowError, UnicodeDecodeError, MemoryError) as e:
        raise CacheFormatError(f"{type(e).__name__}: {e}") from None


def _deserialize(model_cache: bytes, data_cache: bytes) -> CachedModel:
    r = _Reader(model_cache)
    if not model_header_ok(r.take(HEADER_SIZE)):
        raise CacheFormatError("not a model cache of this driver's format")
    digest = r.take(DIGEST_SIZE)
    data_length = int(r.one("Q"))
    # The data cache is trusted only through the (verified) model cache that names its length and hash.
    if len(data_cache) != data_length:
        raise CacheFormatError(f"the data cache holds {len(data_cache)} bytes, the model cache says {data_length}")
    if hashlib.sha256(data_cache).digest() != digest:
        raise CacheFormatError("the data cache does not match the hash the model cache records")
    if data_cache[:HEADER_SIZE] != _HEADER.pack(DATA_MAGIC, FORMAT_VERSION, 0):
        raise CacheFormatError("not a data cache of this driver's format")
    relaxed = r.one("B")
    if relaxed not in (0, 1):
        raise CacheFormatError(f"relaxed flag {relaxed}")
    subgraphs = [_read_subgraph(r) for _ in range(r.count(_MIN_SUBGRAPH))]
    if not subgraphs:
        raise CacheFormatError("no main subgraph")
    extensions = []
    for _ in range(r.count(_MIN_EXTENSION)):
        name = r.blob().decode("utf-8")
        extensions.append(ExtensionNameAndPrefix(name, int(r.one("I"))))
    backend = r.blob().decode("utf-8")
    artifact = r.blob()
    r.finish()
    model = Model(
        main=subgraphs[0],
        referenced=subgraphs[1:],
        # A view, not a copy: compilation copies each constant out of it once.
        operand_values=memoryview(data_cache)[HEADER_SIZE:],
        pools=[],
        relax_computation_float32_to_float16=bool(relaxed),
        extension_name_to_prefix=extensions,
    )
    return CachedModel(model, backend, artifact)
