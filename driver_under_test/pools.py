"""Mapping of client memory pools: the driver decodes each handle itself and maps its file descriptor.

Kinds follow the HAL's names. ashmem and mmap_fd map the descriptor directly; the two hardware-buffer kinds
start with a 32-byte descriptor header (little endian: magic b"AHWB", version, width, height, layers, format,
usage) that the driver must decode before it may touch the data that follows.

A pool the driver only reads once (the constants of a model being prepared) is checked by mapping it like any
other, then read from its file: touching a fresh mapping costs a page fault per page, a read does not.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass

import numpy as np

from driver_under_test.errors import DriverError, failure, invalid
from harness.hal import ErrorStatus

_HEADER = struct.Struct("<4sIIIIIQ")
_MAGIC = b"AHWB"
_FORMAT_BLOB = 0x21
_FORMAT_BYTES_PER_PIXEL = {0x21: 1, 1: 4}
_PAGE = mmap.ALLOCATIONGRANULARITY

ALL_KINDS = ("ashmem", "mmap_fd", "hardware_buffer_blob", "hardware_buffer")


@dataclass
class PoolMapping:
    """A mapped client pool: `data` is a writable byte array of exactly the pool's size."""

    kind: str
    size: int
    data: np.ndarray
    _mm: mmap.mmap | None

    def read(self, offset: int, length: int) -> bytes:
        """Copy `length` bytes starting at `offset` (bounds were validated against `size`)."""
        return self.data[offset : offset + length].tobytes()

    def close(self) -> None:
        """Unmap the pool (idempotent)."""
        if self._mm is not None:
            self.data = np.empty(0, np.uint8)
            try:
                self._mm.close()
            except BufferError:
                # A view is still alive somewhere; the mapping is released with it.
                pass
            self._mm = None


@dataclass
class PoolFile:
    """A client pool that map_pool accepts, read through the driver's own duplicate of its descriptor."""

    kind: str
    size: int
    fd: int
    start: int  # where the pool's bytes begin in the file

    def read(self, offset: int, length: int) -> bytes:
        """Copy `length` bytes starting at `offset` (bounds were validated against `size`)."""
        try:
            data = os.pread(self.fd, length, self.start + offset)
        except OSError:
            data = b""
        if len(data) == length:
            return data
        # A descriptor that can be mapped but not read, or a file that shrank: read it as a mapping would.
        skip = self.start % _PAGE
        with mmap.mmap(self.fd, skip + self.size, mmap.MAP_SHARED, mmap.PROT_READ, offset=self.start - skip) as mm:
            return mm[skip + offset : skip + offset + length]

    def close(self) -> None:
        """Close the duplicate descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _kind_name(memory: object) -> str:
    kind = getattr(memory, "kind", None)
    return str(getattr(kind, "value", kind))


def _decode_hardware_buffer(fd: int, kind: str, check_header: bool = True) -> tuple[int, int]:
    """Decode a hardware buffer's header: (data offset, data size), or raise if it cannot be decoded."""
    raw = os.pread(fd, _HEADER.size, 0)
    if len(raw) != _HEADER.size:
        raise failure(f"{kind}: descriptor header truncated", "memory.hardware_buffer.header")
    magic, version, width, height, layers, fmt, _usage = _HEADER.unpack(raw)
    if check_header and (magic != _MAGIC or version != 1):
        raise failure(
            f"{kind}: undecodable descriptor (magic {magic!r}, version {version})", "memory.hardware_buffer.header"
        )
    if fmt not in _FORMAT_BYTES_PER_PIXEL:
        raise failure(f"{kind}: unsupported format {fmt:#x}", "memory.hardware_buffer.format")
    if kind == "hardware_buffer_blob" and (fmt != _FORMAT_BLOB or height != 1 or layers != 1):
        raise failure("hardware_buffer_blob: descriptor is not a BLOB buffer", "memory.hardware_buffer.blob")
    if kind == "hardware_buffer" and fmt == _FORMAT_BLOB:
        raise failure("hardware_buffer: a BLOB descriptor under the non-BLOB kind", "memory.hardware_buffer.kind")
    return _HEADER.size, width * height * layers * _FORMAT_BYTES_PER_PIXEL[fmt]


def map_pool(
    memory: object, allowed_kinds: tuple[str, ...], *, writable: bool = True, check_header: bool = True
) -> PoolMapping:
    """Map a client memory handle; GENERAL_FAILURE for kinds the device does not support or cannot decode."""
    kind, _, start, size, mm = _map(memory, allowed_kinds, writable, check_header)
    if mm is None:
        return PoolMapping(kind, 0, np.empty(0, np.uint8), None)
    return PoolMapping(kind, size, np.frombuffer(mm, dtype=np.uint8, count=size, offset=start % _PAGE), mm)


def check_pool(memory: object, allowed_kinds: tuple[str, ...], *, writable: bool = True) -> None:
    """Raise what map_pool raises for this handle; the mapping it makes is undone at once."""
    mm = _map(memory, allowed_kinds, writable)[4]
    if mm is not None:
        mm.close()


def open_pool(memory: object, allowed_kinds: tuple[str, ...], *, writable: bool = True) -> PoolFile | PoolMapping:
    """Raise what map_pool raises for this handle, else a reader of its bytes (close it when done).

    The handle is mapped, as map_pool maps it, then read from a duplicate of its descriptor, which keeps the file
    whatever the client closes. Without a descriptor to spare, the mapping itself is the reader.
    """
    kind, fd, start, size, mm = _map(memory, allowed_kinds, writable)
    if mm is None:
        return PoolMapping(kind, 0, np.empty(0, np.uint8), None)
    try:
        own = os.dup(fd)
    except OSError:
        return PoolMapping(kind, size, np.frombuffer(mm, dtype=np.uint8, count=size, offset=start % _PAGE), mm)
    mm.close()
    return PoolFile(kind, size, own, start)


def _map(
    memory: object, allowed_kinds: tuple[str, ...], writable: bool, check_header: bool = True
) -> tuple[str, int, int, int, mmap.mmap | None]:
    """(kind, descriptor, where the bytes begin in the file, size, the mapping or None for an empty pool)."""
    kind = _kind_name(memory)
    if kind not in ALL_KINDS:
        raise invalid(f"unknown memory kind {kind!r}", "memory.kind")
    if kind not in allowed_kinds:
        raise failure(f"memory kind {kind} is not supported by this device", "memory.unsupported_kind")
    fd = getattr(memory, "fd", -1)
    size = getattr(memory, "size", -1)
    offset = getattr(memory, "offset", 0)
    if not isinstance(fd, int) or fd < 0 or not isinstance(size, int) or size < 0:
        raise invalid("memory handle without a valid descriptor or size", "memory.handle")
    if kind.startswith("hardware_buffer"):
        offset, decoded_size = _decode_hardware_buffer(fd, kind, check_header)
        if decoded_size != size:
            raise failure(
                f"{kind}: descriptor says {decoded_size} bytes, handle says {size}", "memory.hardware_buffer.size"
            )
    if not isinstance(offset, int) or offset < 0:
        raise invalid("memory handle with a negative offset", "memory.handle")
    try:
        file_size = os.fstat(fd).st_size
    except OSError as e:
        raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"memory descriptor unusable: {e}", "memory.handle") from None
    if offset + size > file_size:
        raise invalid(f"memory handle claims {offset}+{size} bytes but its file has {file_size}", "memory.handle.size")
    if size == 0:
        return kind, fd, offset, 0, None
    start = offset - offset % _PAGE
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    try:
        mm = mmap.mmap(fd, offset - start + size, mmap.MAP_SHARED, prot, offset=start)
    except (OSError, ValueError) as e:
        raise failure(f"cannot map {kind} memory: {e}", "memory.map") from None
    return kind, fd, offset, size, mm
