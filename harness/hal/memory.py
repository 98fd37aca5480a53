"""Shared memory handles named as in the HAL: ashmem, mmap_fd and hardware buffers, all backed by real fds.

A `Memory` is an OS file descriptor plus the byte range of it that a model or a request addresses: `offset` is
where the pool's data starts in the fd and `size` is how many bytes requests and locations may address.

Kinds
- ``ashmem``: an anonymous memory file (memfd); the pool starts at byte 0.
- ``mmap_fd``: a regular file, by default an unnamed one (O_TMPFILE on tmpfs when the system has it, else a
  temporary file unlinked right after opening); the pool starts at `offset`, which need not be page aligned.
- ``hardware_buffer_blob`` and ``hardware_buffer``: a memfd that starts with a 32-byte descriptor header which a
  driver must decode itself; the pool's data starts right after it (`offset` = 32).

Hardware buffer header (little endian, at byte 0 of the fd):

    offset  size  field
    0       4     magic    b"AHWB"
    4       4     version  u32, 1
    8       4     width    u32
    12      4     height   u32
    16      4     layers   u32
    20      4     format   u32: 0x21 BLOB (1 byte per element, height = layers = 1, width = size in bytes)
                                or 1 R8G8B8A8_UNORM (4 bytes per pixel)
    24      8     usage    u64

The data is width * height * layers * bytes-per-pixel bytes. An undecodable header (``decodable=False``) has
magic b"\\0\\0\\0\\0" and format 0x7FFF; the client can still map such a buffer, a driver must refuse it.

Handles survive fork (the mapping is MAP_SHARED and the fds are inheritable) and travel over Unix sockets with
`send_memory` / `recv_memory`.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import socket
import stat
import struct
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from harness.hal._fd_messages import recv_with_fds, send_with_fds

PAGE_SIZE = mmap.ALLOCATIONGRANULARITY

HWB_HEADER_SIZE = 32
HWB_MAGIC = b"AHWB"
HWB_VERSION = 1
HWB_FORMAT_R8G8B8A8_UNORM = 1
HWB_FORMAT_BLOB = 0x21
# Written by create_hardware_buffer(decodable=False): a format no driver knows, next to a zeroed magic.
HWB_FORMAT_UNDECODABLE = 0x7FFF
HWB_UNDECODABLE_MAGIC = b"\0\0\0\0"
_HWB_HEADER = struct.Struct("<4sIIIIIQ")
assert _HWB_HEADER.size == HWB_HEADER_SIZE

_HWB_BYTES_PER_PIXEL = {HWB_FORMAT_BLOB: 1, HWB_FORMAT_R8G8B8A8_UNORM: 4}
# Memory._io_access for an fd that pread/pwrite must not be used on.
_NO_IO = -1
# Reads and writes of a memory done with pread/pwrite before it is mapped instead.
_IO_BEFORE_MAPPING = 16
# Seals that leave a mapping of the current size possible (memfds without MFD_ALLOW_SEALING carry F_SEAL_SEAL).
_HARMLESS_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW


def _write_sealed(fd: int) -> bool:
    """True for a memfd carrying a seal that restricts writing (or mapping for writing)."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        return False  # not a memfd or tmpfs file: no seals
    return bool(seals & ~_HARMLESS_SEALS)


# Creating memory larger than this is refused: fuzzed sizes must not exhaust the machine.
MAX_CREATE_SIZE = 1 << 32
# Sizes and offsets are u64 in the HAL; anything above cannot be a real handle.
_U64_MAX = (1 << 64) - 1


class MemoryKind(StrEnum):
    """The HAL's shared memory kinds (hidl_memory names)."""

    ASHMEM = "ashmem"
    MMAP_FD = "mmap_fd"
    HARDWARE_BUFFER_BLOB = "hardware_buffer_blob"
    HARDWARE_BUFFER = "hardware_buffer"


class MemoryBoundsError(ValueError):
    """A byte range that does not fit in a memory."""


class MemoryMapError(OSError):
    """A memory that cannot be mapped (closed, unreadable fd, or a file shorter than offset + size)."""


@dataclass(frozen=True)
class HardwareBufferDesc:
    """What a hardware buffer was created with (client-side record; drivers decode the header instead)."""

    width: int
    height: int
    layers: int
    format: int
    usage: int
    decodable: bool = True
    # Header fields written differently from the description above (a malformed descriptor): (field, value) pairs
    # over "magic" (4 bytes), "version", "width", "height", "layers" and "format".
    header: tuple[tuple[str, int | bytes], ...] = ()


def _check_int(name: str, value: int, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} {value} is out of range [{lo}, {hi}]")
    return value


def _check_create_size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"memory size must be an int, got {type(size).__name__}")
    if size < 0:
        raise ValueError(f"memory size must be >= 0, got {size}")
    if size > MAX_CREATE_SIZE:
        raise ValueError(f"memory size {size} exceeds the limit of {MAX_CREATE_SIZE} bytes")
    return size


def _nothing_to_close() -> None:
    """The finalizer of a deferred memory whose fd was never made."""


# Guards making deferred memories' fds (a driver's worker threads may be first to use one).
_DEFERRED_LOCK = threading.Lock()


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


class Memory:
    """A shared memory handle: an fd, where the pool starts in it (`offset`) and how many bytes it has (`size`)."""

    def __init__(
        self,
        kind: MemoryKind | str,
        fd: int,
        offset: int,
        size: int,
        *,
        hardware_buffer: HardwareBufferDesc | None = None,
    ) -> None:
        kind = MemoryKind(kind)
        fd = _check_int("fd", fd, 0, 1 << 31)
        self._set_up(kind, offset, size, hardware_buffer)
        self.fd = fd
        # The fd is owned: closed by close() or, failing that, when the handle is collected, so fuzz loops
        # do not run out of descriptors.
        self._finalizer = weakref.finalize(self, _close_quietly, fd)

    def _set_up(self, kind: MemoryKind, offset: int, size: int, hardware_buffer: HardwareBufferDesc | None) -> None:
        """Everything but the fd and its finalizer."""
        self.kind = kind
        self.offset = _check_int("offset", offset, 0, _U64_MAX)
        self.size = _check_int("size", size, 0, _U64_MAX)
        self.hardware_buffer = hardware_buffer
        self._lock = threading.Lock()
        self._mmap: mmap.mmap | None = None
        self._view: memoryview | None = None
        self._closed = False
        # Set once read/write found the fd fit for mapping: until something maps the pool they use pread/pwrite,
        # which spares a fuzz case an mmap and an munmap per pool. A pool read or written many times is mapped
        # after all (a copy through the mapping is cheaper than a system call).
        self._io_access: int | None = None
        self._io_left = _IO_BEFORE_MAPPING

    @classmethod
    def deferred(cls, kind: MemoryKind | str, offset: int, size: int, create: Callable[[], Memory]) -> Memory:
        """A memory whose shared memory `create()` makes when its fd is first used (closing it before makes none).

        `create` must return a new memory of this kind, offset and size; this one takes its fd over. A model's
        pools a driver turns down before touching them then cost no file (fuzz cases are mostly such models),
        while a driver that uses them finds the same memory as if it had been made at once.
        """
        memory = cls.__new__(cls)
        memory._set_up(MemoryKind(kind), offset, size, None)
        memory._finalizer = _nothing_to_close
        memory._create = create
        return memory

    def __getattr__(self, name: str) -> object:
        # Only reached for attributes not set: a deferred memory's fd, made here on first use.
        create = self.__dict__.get("_create")
        if name != "fd" or create is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        with _DEFERRED_LOCK:
            if "fd" not in self.__dict__:
                self._take_fd_of(None if self._closed else create())
        return self.__dict__["fd"]

    def _take_fd_of(self, made: Memory | None) -> None:
        """Own the fd of a memory just made for this deferred one (-1, a closed fd, when it was closed unmade)."""
        if made is None:
            self.fd = -1
        else:
            if (made.kind, made.offset, made.size) != (self.kind, self.offset, self.size):
                made.close()
                raise ValueError(f"a deferred {self.kind.value} memory was made as {made!r}")
            made._finalizer.detach()
            self.fd = made.fd
            self._io_access = made._io_access
            self._finalizer = weakref.finalize(self, _close_quietly, made.fd)
        del self._create

    @classmethod
    def from_fd(cls, kind: MemoryKind | str, fd: int, offset: int, size: int) -> Memory:
        """Wrap an fd received elsewhere; the Memory takes ownership of it."""
        return cls(kind, fd, offset, size)

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._closed

    def map(self, writable: bool = True) -> memoryview:
        """A view of the pool's `size` bytes starting at `offset` (mapped once, then cached)."""
        view = self._view
        if view is not None and not self._closed:
            # Already mapped: the lock only guards creating the mapping (close() may still race, as it always could
            # with a caller holding a view).
            if writable:
                if view.readonly:
                    raise MemoryMapError(f"{self!r} is mapped read-only (its fd is not writable)")
                return view
            return view.toreadonly()
        with self._lock:
            if self._closed:
                raise MemoryMapError(f"{self!r} is closed")
            if self._view is None:
                self._view = self._map_locked()
        view = self._view
        if writable:
            if view.readonly:
                raise MemoryMapError(f"{self!r} is mapped read-only (its fd is not writable)")
            return view
        return view.toreadonly()

    def _map_locked(self) -> memoryview:
        if self.size == 0:
            return memoryview(bytearray())
        access, _ = self._mappable_access()
        end = self.offset + self.size
        base = self.offset - self.offset % PAGE_SIZE
        try:
            self._mmap = mmap.mmap(self.fd, end - base, access=access, offset=base)
        except (OSError, ValueError, OverflowError) as e:
            raise MemoryMapError(f"cannot map {self!r}: {e}") from e
        view = memoryview(self._mmap)[self.offset - base : end - base]
        return view if access == mmap.ACCESS_WRITE else view.toreadonly()

    def _mappable_access(self) -> tuple[int, int]:
        """The mmap access the fd allows and its status flags; MemoryMapError when mapping would fail or fault."""
        end = self.offset + self.size
        try:
            st = os.fstat(self.fd)
            flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
        except OSError as e:
            raise MemoryMapError(f"cannot map {self!r}: {e}") from e
        if not stat.S_ISREG(st.st_mode):
            raise MemoryMapError(f"cannot map {self!r}: fd is not a regular or memory file")
        # Touching a mapping past the end of its file raises SIGBUS: refuse instead of crashing.
        if end > st.st_size:
            raise MemoryMapError(
                f"cannot map {self!r}: offset {self.offset} + size {self.size} exceeds the file size {st.st_size}"
            )
        access_mode = flags & os.O_ACCMODE
        if access_mode == os.O_WRONLY:
            raise MemoryMapError(f"cannot map {self!r}: fd is write-only")
        return (mmap.ACCESS_WRITE if access_mode == os.O_RDWR else mmap.ACCESS_READ), flags

    def _unmapped_io_access(self) -> int | None:
        """The access for pread/pwrite when the pool is not mapped (None: go through map(), which raises or maps).

        The checks are those of mapping the pool, so both paths accept and refuse the same pools. An fd opened
        with O_APPEND (pwrite would append instead of writing in place) or a memfd sealed against writes (whose
        mapping fails, for reads too) always goes through the mapping.
        """
        if self._view is not None or self._closed or self.size == 0:
            return None
        self._io_left -= 1
        if self._io_left < 0:
            return None
        if self._io_access is None:
            with self._lock:
                if self._closed or self._view is not None:
                    return None
                access, flags = self._mappable_access()
                self._io_access = _NO_IO if flags & os.O_APPEND or _write_sealed(self.fd) else access
        return None if self._io_access == _NO_IO else self._io_access

    def check_range(self, offset: int, length: int) -> None:
        """Raise MemoryBoundsError unless [offset, offset + length) lies within the pool."""
        if type(offset) is int and type(length) is int and offset >= 0 and length >= 0 and offset + length <= self.size:
            return
        for name, value in (("offset", offset), ("length", length)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise MemoryBoundsError(f"{name} must be an int, got {type(value).__name__}")
        if offset < 0 or length < 0 or offset + length > self.size:
            raise MemoryBoundsError(
                f"range offset {offset} length {length} is outside {self.kind.value} memory of size {self.size}"
            )

    def view(self, offset: int, length: int, writable: bool = True) -> memoryview:
        """A view of `length` bytes at `offset` within the pool; MemoryBoundsError if out of bounds."""
        self.check_range(offset, length)
        return self.map(writable)[offset : offset + length]

    def read(self, offset: int, length: int) -> bytes:
        """Copy `length` bytes at `offset` out of the pool."""
        self.check_range(offset, length)
        if self._unmapped_io_access() is not None:
            try:
                data = os.pread(self.fd, length, self.offset + offset)
            except OSError:
                data = None  # let mapping report it (or succeed where pread cannot)
            if data is not None and len(data) == length:
                return data
            # A short read: the file shrank under the pool, and mapping reports it.
        # A copy out of the mapping: no read-only view of it is needed for that.
        view = self._view
        if view is None or self._closed:
            view = self.map(writable=False)
        return bytes(view[offset : offset + length])

    def write(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        """Copy `data` into the pool at `offset`."""
        data = memoryview(data).cast("B")
        n = len(data)
        self.check_range(offset, n)
        access = self._unmapped_io_access()
        if access is None:
            self.map()[offset : offset + n] = data
            return
        if access != mmap.ACCESS_WRITE:
            raise MemoryMapError(f"{self!r} is mapped read-only (its fd is not writable)")
        position = self.offset + offset
        try:
            while data:
                written = os.pwrite(self.fd, data, position)
                data = data[written:]
                position += written
        except OSError:
            # A write the file refuses (a sealed memfd, a full file system): what is left goes through the
            # mapping, which reports it as mapping always did.
            self.map()[position - self.offset : offset + n] = data

    def close(self) -> None:
        """Release the mapping and close the fd; calling it again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._view is not None:
                    self._view.release()
                if self._mmap is not None:
                    self._mmap.close()
            except BufferError:
                # A caller still holds a view: the mapping goes away when that view is collected.
                pass
            self._view = None
            self._mmap = None
            self._finalizer()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        fd = self.__dict__.get("fd", "deferred")  # a repr does not make a deferred memory's fd
        return f"<Memory {self.kind.value} fd={fd} offset={self.offset} size={self.size}{state}>"


def _new_memfd(name: str, length: int) -> int:
    fd = os.memfd_create(name, 0)
    try:
        os.ftruncate(fd, length)
        os.set_inheritable(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _created(memory: Memory) -> Memory:
    """A memory this module just created: a read-write regular file of the right size that cannot be sealed (memfds
    without MFD_ALLOW_SEALING and tmpfs files carry F_SEAL_SEAL), so the checks before pread/pwrite are known."""
    memory._io_access = mmap.ACCESS_WRITE
    return memory


def create_ashmem(size: int) -> Memory:
    """A new zero-filled anonymous shared memory (memfd) of `size` bytes."""
    size = _check_create_size(size)
    return _created(Memory(MemoryKind.ASHMEM, _new_memfd("nnfuzz-ashmem", size), 0, size))


_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
# Where unnamed files are tried first: tmpfs costs no disk I/O. Directories found unable to hold an O_TMPFILE file
# are dropped for the rest of the process.
_SHM_DIR = "/dev/shm"
# Larger files go to the temp dir: a container's /dev/shm is often small, and a pool written past the space left
# there would fault when touched through a mapping.
_SHM_MAX_FILE = 64 << 20
_tmpfile_dirs: tuple[str, ...] | None = None
# Errors saying that a directory cannot hold O_TMPFILE files (old kernel or file system, missing directory).
_NO_TMPFILE = frozenset({errno.EOPNOTSUPP, errno.EISDIR, errno.ENOENT, errno.ENOTDIR, errno.EINVAL, errno.EACCES})


def _tmpfile_candidates() -> tuple[str, ...]:
    global _tmpfile_dirs
    if _tmpfile_dirs is None:
        dirs = [_SHM_DIR] if os.path.isdir(_SHM_DIR) else []
        default = tempfile.gettempdir()
        if default not in dirs:
            dirs.append(default)
        _tmpfile_dirs = tuple(dirs) if _O_TMPFILE else ()
    return _tmpfile_dirs


def _unnamed_file(length: int) -> int:
    """A new empty regular file (to be `length` bytes) that has no name, opened read-write (not inheritable yet)."""
    global _tmpfile_dirs
    for directory in _tmpfile_candidates():
        if directory == _SHM_DIR and length > _SHM_MAX_FILE:
            continue
        try:
            return os.open(directory, _O_TMPFILE | os.O_RDWR, 0o600)
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE):
                raise
            if e.errno in _NO_TMPFILE:
                _tmpfile_dirs = tuple(d for d in _tmpfile_candidates() if d != directory)
    fd, tmp = tempfile.mkstemp(prefix="nnfuzz-mmap-")
    os.unlink(tmp)
    return fd


def create_mmap_fd(size: int, offset: int = 0, path: str | None = None) -> Memory:
    """A new zero-filled file of offset + size bytes whose pool starts at `offset` (an unnamed file by default)."""
    size = _check_create_size(size)
    offset = _check_create_size(offset)
    if path is None:
        fd = _unnamed_file(offset + size)
    else:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.ftruncate(fd, offset + size)
        os.set_inheritable(fd, True)
    except BaseException:
        os.close(fd)
        raise
    memory = Memory(MemoryKind.MMAP_FD, fd, offset, size)
    # A file at a given path may be anything (a FIFO, a device): only the unnamed one is known to be plain.
    return _created(memory) if path is None else memory


def _create_hwb(kind: MemoryKind, desc: HardwareBufferDesc, size: int) -> Memory:
    fd = _new_memfd(f"nnfuzz-{kind.value}", HWB_HEADER_SIZE + size)
    magic = HWB_MAGIC if desc.decodable else HWB_UNDECODABLE_MAGIC
    fmt = desc.format if desc.decodable else HWB_FORMAT_UNDECODABLE
    fields = {"magic": magic, "version": HWB_VERSION, "width": desc.width, "height": desc.height,
              "layers": desc.layers, "format": fmt}  # fmt: skip
    unknown = set(dict(desc.header)) - set(fields)
    if unknown:
        raise ValueError(f"unknown hardware buffer header field(s) {sorted(unknown)}")
    fields.update(desc.header)
    header = _HWB_HEADER.pack(*fields.values(), desc.usage)
    try:
        os.pwrite(fd, header, 0)
    except BaseException:
        os.close(fd)
        raise
    return _created(Memory(kind, fd, HWB_HEADER_SIZE, size, hardware_buffer=desc))


def create_hardware_buffer_blob(
    size: int, usage: int = 0, decodable: bool = True, header: Mapping[str, int | bytes] | None = None
) -> Memory:
    """A new BLOB hardware buffer of `size` bytes (width = size, height = layers = 1); `header` overrides fields."""
    size = _check_create_size(size)
    _check_int("blob size", size, 0, 0xFFFFFFFF)
    _check_int("usage", usage, 0, _U64_MAX)
    desc = HardwareBufferDesc(size, 1, 1, HWB_FORMAT_BLOB, usage, decodable, tuple((header or {}).items()))
    return _create_hwb(MemoryKind.HARDWARE_BUFFER_BLOB, desc, size)


def create_hardware_buffer(
    width: int,
    height: int,
    layers: int = 1,
    format: int = HWB_FORMAT_R8G8B8A8_UNORM,
    usage: int = 0,
    decodable: bool = True,
    header: Mapping[str, int | bytes] | None = None,
) -> Memory:
    """A new non-BLOB hardware buffer of width x height x layers pixels; `header` overrides written fields."""
    for name, value in (("width", width), ("height", height), ("layers", layers)):
        _check_int(name, value, 0, 0xFFFFFFFF)
    _check_int("usage", usage, 0, _U64_MAX)
    if format not in _HWB_BYTES_PER_PIXEL:
        raise ValueError(f"unknown hardware buffer format {format:#x}")
    size = _check_create_size(width * height * layers * _HWB_BYTES_PER_PIXEL[format])
    desc = HardwareBufferDesc(width, height, layers, format, usage, decodable, tuple((header or {}).items()))
    return _create_hwb(MemoryKind.HARDWARE_BUFFER, desc, size)


def send_memory(sock: socket.socket, memory: Memory) -> None:
    """Send a memory's fd and a JSON header (kind, offset, size) over a Unix socket."""
    send_with_fds(sock, {"kind": memory.kind.value, "offset": memory.offset, "size": memory.size}, [memory.fd])


def recv_memory(sock: socket.socket) -> Memory:
    """Receive a memory sent with send_memory; the returned Memory owns the received fd."""
    header, (fd,) = recv_with_fds(sock, 1, "memory header")
    try:
        os.set_inheritable(fd, True)
        return Memory.from_fd(header["kind"], fd, header["offset"], header["size"])
    except BaseException:
        _close_quietly(fd)
        raise
