"""A fast message queue (FMQ): a single-producer single-consumer circular FIFO of fixed-size elements in shared
memory, with a blocking mode driven by event flags and detection of a peer that closed or died.

Everything lives in three file descriptors that travel together (`FmqDescriptor`): a sealed memfd holding the
header and the ring, and two eventfds used as event flags ("data published" for the reader, "space freed" for the
writer). The descriptor survives fork and can be sent to another process over a Unix socket
(`send_descriptor` / `recv_descriptor`); `FastMessageQueue.from_descriptor` maps it on the other side.

Memory layout of the memfd (native 64-bit little-endian words; the offsets are bytes):

    offset  word  field              written by
    0       0     magic              creator   b"NNFZFMQ1"
    8       1     element size       creator   bytes per element
    16      2     capacity           creator   elements in the ring
    24..63        reserved, zero
    64      8     write counter      writer    elements ever published
    72      9     writer pid         writer    process that owns the writer role, 0 = unclaimed
    80      10    writer closed      writer    1 once the writer closed its end
    88..127       reserved, zero
    128     16    read counter       reader    elements ever consumed
    136     17    reader pid         reader    process that owns the reader role, 0 = unclaimed
    144     18    reader closed      reader    1 once the reader closed its end
    152..191      reserved, zero
    192           ring               writer    capacity x element size bytes; stream element i lives at
                                               192 + (i mod capacity) x element size

Each word has exactly one writer, so no read-modify-write is ever shared between processes. The counters only
grow; `write counter - read counter` is the number of elements ready (0 <= it <= capacity, anything else means a
corrupted queue). A counter is stored with one aligned 8-byte store through a numpy view, after the payload it
publishes has been copied, so a reader that sees the new counter sees the whole message: a message is published
atomically or not at all. (This relies on stores becoming visible in program order, as on x86-64.)

The memfd is sealed against shrinking and growing, so a peer cannot truncate it under the other side's mapping;
`from_descriptor` refuses an unsealed one.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import select
import socket
import struct
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.hal._fd_messages import recv_with_fds, send_with_fds

MAGIC = int.from_bytes(b"NNFZFMQ1", "little")
HEADER_SIZE = 192
DATA_OFFSET = HEADER_SIZE
# Word indexes of the header (see the module docstring).
_W_MAGIC, _W_ELEMENT_SIZE, _W_CAPACITY = 0, 1, 2
_W_WRITE, _W_WRITER_PID, _W_WRITER_CLOSED = 8, 9, 10
_W_READ, _W_READER_PID, _W_READER_CLOSED = 16, 17, 18

# The ring may not exceed this many bytes: a descriptor from another process must not make us map gigabytes.
MAX_RING_BYTES = 1 << 28
# A blocked wait wakes at least this often to look at the peer's state again (seconds).
WAIT_SLICE_S = 0.1

WRITER = "writer"
READER = "reader"
_ROLE_WORDS = {WRITER: (_W_WRITER_PID, _W_WRITER_CLOSED), READER: (_W_READER_PID, _W_READER_CLOSED)}
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL

if sys.byteorder != "little":  # the header is defined little endian and read through native views
    raise ImportError("harness.hal.fmq supports little-endian machines only")

# This process's id, asked once (and again in a forked child) rather than on every read and write.
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


class FmqError(Exception):
    """A queue that cannot be created or attached, or whose shared state is corrupted."""


@dataclass(frozen=True)
class FmqDescriptor:
    """What another process needs to attach to a queue: the fds (memfd, data eventfd, space eventfd) and sizes."""

    fds: tuple[int, int, int]
    capacity: int
    element_size: int


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _drain(efd: int) -> None:
    try:
        os.eventfd_read(efd)
    except BlockingIOError:
        pass


def _signal(efd: int) -> None:
    try:
        os.eventfd_write(efd, 1)
    except OSError:
        # The counter is saturated or the fd is gone: the peer is already awake or already gone.
        pass


def _check_size(name: str, value: object, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FmqError(f"{name} must be an int, got {type(value).__name__}")
    if not 1 <= value <= hi:
        raise FmqError(f"{name} {value} is out of range [1, {hi}]")
    return value


class _Mapping:
    """The mmap and the views into it, released together (views must go before the mmap can close)."""

    def __init__(self, memfd: int, length: int) -> None:
        self.mm = mmap.mmap(memfd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.words = np.frombuffer(self.mm, dtype=np.uint64, count=HEADER_SIZE // 8)

    def close(self) -> None:
        self.words = None
        try:
            self.mm.close()
        except BufferError:
            pass


def _release(mapping: _Mapping, fds: list[int], pidfds: dict[int, int]) -> None:
    mapping.close()
    _close_fds(fds)
    _close_fds(list(pidfds.values()))
    pidfds.clear()


class FastMessageQueue:
    """One end's handle on a shared SPSC queue; the writer and the reader each hold their own handle."""

    def __init__(self, memfd: int, data_efd: int, space_efd: int, capacity: int, element_size: int) -> None:
        """Attach to already validated fds, taking ownership of them (use create / from_descriptor)."""
        self._memfd, self._data_efd, self._space_efd = memfd, data_efd, space_efd
        self._capacity = capacity
        self._element_size = element_size
        self._ring_bytes = capacity * element_size
        self._map = _Mapping(memfd, DATA_OFFSET + self._ring_bytes)
        self._words = self._map.words
        self._mm = self._map.mm
        self._pidfds: dict[int, int] = {}
        self._owned: dict[str, int] = {}  # role -> pid of this process when it claimed the role
        self._closed = False
        # fds and mapping are released when the handle is collected, so fuzz loops do not leak descriptors.
        self._finalizer = weakref.finalize(self, _release, self._map, [memfd, data_efd, space_efd], self._pidfds)

    # --- creation and transport -------------------------------------------------------------------

    @classmethod
    def create(cls, capacity: int, element_size: int) -> FastMessageQueue:
        """A new empty queue of `capacity` elements of `element_size` bytes each."""
        _check_size("capacity", capacity, MAX_RING_BYTES)
        _check_size("element size", element_size, MAX_RING_BYTES)
        if capacity * element_size > MAX_RING_BYTES:
            raise FmqError(f"ring of {capacity} x {element_size} bytes exceeds {MAX_RING_BYTES} bytes")
        fds: list[int] = []
        try:
            memfd = os.memfd_create("nnfuzz-fmq", os.MFD_ALLOW_SEALING)
            fds.append(memfd)
            os.ftruncate(memfd, DATA_OFFSET + capacity * element_size)
            fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, _SEALS)
            header = struct.pack("<QQQ", MAGIC, element_size, capacity)
            os.pwrite(memfd, header, 0)
            fds.append(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC))
            fds.append(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC))
            return cls(fds[0], fds[1], fds[2], capacity, element_size)
        except OSError as e:
            _close_fds(fds)
            raise FmqError(f"cannot create a queue: {e}") from e

    @classmethod
    def from_descriptor(cls, descriptor: FmqDescriptor, *, adopt: bool = False) -> FastMessageQueue:
        """Attach to a queue described by `descriptor` (its fds are duplicated unless `adopt`); FmqError if unusable."""
        if not isinstance(descriptor, FmqDescriptor):
            raise FmqError(f"not a queue descriptor: {type(descriptor).__name__}")
        capacity = _check_size("capacity", descriptor.capacity, MAX_RING_BYTES)
        element_size = _check_size("element size", descriptor.element_size, MAX_RING_BYTES)
        if capacity * element_size > MAX_RING_BYTES:
            raise FmqError(f"ring of {capacity} x {element_size} bytes exceeds {MAX_RING_BYTES} bytes")
        fds_in = descriptor.fds
        if not isinstance(fds_in, tuple) or len(fds_in) != 3 or not all(type(fd) is int and fd >= 0 for fd in fds_in):
            raise FmqError(f"a queue descriptor holds three fds, got {fds_in!r}")
        fds: list[int] = []
        try:
            fds = list(fds_in) if adopt else [os.dup(fd) for fd in fds_in]
            cls._validate(fds, capacity, element_size)
            return cls(fds[0], fds[1], fds[2], capacity, element_size)
        except OSError as e:
            _close_fds(fds)
            raise FmqError(f"cannot attach to the queue: {e}") from e
        except FmqError:
            _close_fds(fds)
            raise

    @staticmethod
    def _validate(fds: list[int], capacity: int, element_size: int) -> None:
        memfd, data_efd, space_efd = fds
        st = os.fstat(memfd)
        if st.st_size != DATA_OFFSET + capacity * element_size:
            raise FmqError(f"queue memory has {st.st_size} bytes, expected {DATA_OFFSET + capacity * element_size}")
        try:
            seals = fcntl.fcntl(memfd, fcntl.F_GET_SEALS)
        except OSError as e:
            raise FmqError("queue memory is not a sealable memory file") from e
        if seals & (fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW) != fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW:
            raise FmqError("queue memory is not sealed against resizing")
        magic, size, cap = struct.unpack("<QQQ", os.pread(memfd, 24, 0))
        if (magic, size, cap) != (MAGIC, element_size, capacity):
            raise FmqError(f"queue header (magic {magic:#x}, element size {size}, capacity {cap}) does not match")
        for efd in (data_efd, space_efd):
            # An eventfd reads as exactly 8 bytes; anything else is not an event flag.
            if not os.readlink(f"/proc/self/fd/{efd}").startswith("anon_inode:[eventfd]"):
                raise FmqError(f"fd {efd} is not an eventfd")

    def descriptor(self) -> FmqDescriptor:
        """The fds and sizes another process needs (the fds stay owned by this handle)."""
        self._check_open()
        return FmqDescriptor((self._memfd, self._data_efd, self._space_efd), self._capacity, self._element_size)

    # --- state ------------------------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        """Elements the ring holds."""
        return self._capacity

    @property
    def element_size(self) -> int:
        """Bytes per element."""
        return self._element_size

    @property
    def closed(self) -> bool:
        """True once this handle was closed."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise FmqError("the queue handle is closed")

    def _counters(self) -> tuple[int, int]:
        w, r = int(self._words[_W_WRITE]), int(self._words[_W_READ])
        if not 0 <= w - r <= self._capacity:
            raise FmqError(f"corrupted queue: write counter {w}, read counter {r}, capacity {self._capacity}")
        return w, r

    def available_to_read(self) -> int:
        """Elements published and not yet consumed."""
        self._check_open()
        w, r = self._counters()
        return w - r

    def available_to_write(self) -> int:
        """Elements that fit right now."""
        self._check_open()
        w, r = self._counters()
        return self._capacity - (w - r)

    # --- roles and the peer -----------------------------------------------------------------------

    def claim(self, role: str) -> None:
        """Record this process as the owner of `role` ("writer" or "reader"), so the peer can tell if it dies."""
        self._check_open()
        pid = _pid
        if self._owned.get(role) == pid:
            return
        pid_word, closed_word = _ROLE_WORDS[role]
        self._words[closed_word] = 0
        self._words[pid_word] = pid
        self._owned[role] = pid

    def peer_gone(self, role: str) -> bool:
        """True if the owner of `role` closed its end or its process has ended."""
        self._check_open()
        pid_word, closed_word = _ROLE_WORDS[role]
        if int(self._words[closed_word]):
            return True
        pid = int(self._words[pid_word])
        if pid in (0, _pid):
            return False
        pidfd = self._pidfd(pid)
        if pidfd is None:
            return not _process_exists(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(0))

    def writer_gone(self) -> bool:
        """True if the writer closed its end or died."""
        return self.peer_gone(WRITER)

    def reader_gone(self) -> bool:
        """True if the reader closed its end or died."""
        return self.peer_gone(READER)

    def _pidfd(self, pid: int) -> int | None:
        """A pidfd of the process (readable once it has ended), or None when the kernel offers none."""
        if pid not in self._pidfds:
            try:
                self._pidfds[pid] = os.pidfd_open(pid)
            except OSError:  # already gone (the caller checks), or no pidfd support
                return None
        return self._pidfds[pid]

    # --- waiting ----------------------------------------------------------------------------------

    def _wait(
        self,
        ready: Callable[[], bool],
        efd: int,
        peer: str,
        timeout: float | None,
        cancelled: Callable[[], bool] | None,
    ) -> bool:
        """Block until ready() holds, the timeout passes, the peer is gone or cancelled(); returns ready()."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            # Drain before checking: a publish after the drain leaves the flag set, so no wake-up is lost.
            _drain(efd)
            if ready():
                return True
            if self._closed or self.peer_gone(peer) or (cancelled is not None and cancelled()):
                return ready()
            wait = WAIT_SLICE_S
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                wait = min(wait, remaining)
            poller = select.poll()
            poller.register(efd, select.POLLIN)
            pid = int(self._words[_ROLE_WORDS[peer][0]])
            if pid not in (0, _pid):
                pidfd = self._pidfd(pid)
                if pidfd is not None:
                    poller.register(pidfd, select.POLLIN)
            poller.poll(max(1, int(wait * 1000)))

    # --- writing and reading ----------------------------------------------------------------------

    def write(
        self,
        elements: bytes | bytearray | memoryview,
        blocking: bool = False,
        timeout: float | None = None,
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> bool:
        """Publish whole elements as one message, all or nothing; False if it does not fit (in time).

        A blocking write gives up early when the reader is gone or, after a wake-up, when cancelled() is true.
        """
        self._check_open()
        data = memoryview(elements).cast("B")
        if len(data) % self._element_size:
            raise ValueError(f"{len(data)} bytes is not a whole number of {self._element_size}-byte elements")
        n = len(data) // self._element_size
        if n > self._capacity:
            return False
        self.claim(WRITER)
        fits = lambda: self.available_to_write() >= n  # noqa: E731
        if not fits() and not (blocking and self._wait(fits, self._space_efd, READER, timeout, cancelled)):
            return False
        if n == 0:
            return True
        w, _ = self._counters()
        pos = (w % self._capacity) * self._element_size
        first = min(len(data), self._ring_bytes - pos)
        self._mm[DATA_OFFSET + pos : DATA_OFFSET + pos + first] = data[:first]
        if first < len(data):
            self._mm[DATA_OFFSET : DATA_OFFSET + len(data) - first] = data[first:]
        self._words[_W_WRITE] = w + n  # publish: one aligned 8-byte store, after the payload
        _signal(self._data_efd)
        return True

    def _copy_out(self, r: int, n: int) -> bytes:
        pos = (r % self._capacity) * self._element_size
        length = n * self._element_size
        first = min(length, self._ring_bytes - pos)
        out = self._mm[DATA_OFFSET + pos : DATA_OFFSET + pos + first]
        if first < length:
            out += self._mm[DATA_OFFSET : DATA_OFFSET + length - first]
        return out

    def read(
        self,
        n: int,
        blocking: bool = False,
        timeout: float | None = None,
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> bytes | None:
        """Consume exactly `n` elements (as bytes), all or nothing; None if they are not there (in time).

        A blocking read gives up early when the writer is gone or, after a wake-up, when cancelled() is true.
        """
        self._check_open()
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"element count must be a non-negative int, got {n!r}")
        if n > self._capacity:
            return None
        self.claim(READER)
        enough = lambda: self.available_to_read() >= n  # noqa: E731
        if not enough() and not (blocking and self._wait(enough, self._data_efd, WRITER, timeout, cancelled)):
            return None
        if n == 0:
            return b""
        _, r = self._counters()
        out = self._copy_out(r, n)
        self._words[_W_READ] = r + n  # release the space only after copying it out
        _signal(self._space_efd)
        return out

    def read_all(
        self, blocking: bool = False, timeout: float | None = None, *, cancelled: Callable[[], bool] | None = None
    ) -> bytes | None:
        """Consume everything readable once at least one element is there (as read(1) then a read of the rest
        would, with one wake-up of the writer); None if nothing came (in time)."""
        self._check_open()
        self.claim(READER)
        enough = lambda: self.available_to_read() >= 1  # noqa: E731
        if not enough() and not (blocking and self._wait(enough, self._data_efd, WRITER, timeout, cancelled)):
            return None
        w, r = self._counters()
        out = self._copy_out(r, w - r)
        self._words[_W_READ] = w  # release the space only after copying it out
        _signal(self._space_efd)
        return out

    def peek(self, n: int) -> bytes | None:
        """The next `n` elements without consuming them; None if fewer are there."""
        self._check_open()
        if n > self._capacity or self.available_to_read() < n:
            return None
        _, r = self._counters()
        return self._copy_out(r, n)

    def discard(self) -> int:
        """Consume and drop everything currently readable; returns how many elements were dropped."""
        self._check_open()
        self.claim(READER)
        w, r = self._counters()
        if w != r:
            self._words[_W_READ] = w
            _signal(self._space_efd)
        return w - r

    def waker(self) -> FmqWaker:
        """A handle that wakes whoever blocks on this queue, usable from any thread even after this handle closes."""
        self._check_open()
        return FmqWaker((self._data_efd, self._space_efd))

    def close(self) -> None:
        """Close this handle; a role this process owns is marked closed so the peer stops waiting. Idempotent."""
        if self._closed:
            return
        for role, owner in self._owned.items():
            if owner == _pid:
                self._words[_ROLE_WORDS[role][1]] = 1
        if self._owned:
            _signal(self._data_efd)
            _signal(self._space_efd)
        self._closed = True
        self._words = None
        self._mm = None
        self._finalizer()

    def __enter__(self) -> FastMessageQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"<FastMessageQueue capacity={self._capacity} element_size={self._element_size}{state}>"


class FmqWaker:
    """Its own duplicates of a queue's event flags: wake() makes a blocked reader or writer look again."""

    def __init__(self, efds: tuple[int, int]) -> None:
        self._lock = threading.Lock()
        self._fds = [os.dup(fd) for fd in efds]
        self._finalizer = weakref.finalize(self, _close_fds, self._fds)

    def wake(self) -> None:
        """Signal both event flags (does nothing once closed)."""
        with self._lock:
            for fd in self._fds:
                _signal(fd)

    def close(self) -> None:
        """Close the duplicates. Idempotent."""
        with self._lock:
            self._finalizer()
            self._fds.clear()


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def send_descriptor(sock: socket.socket, descriptor: FmqDescriptor) -> None:
    """Send a queue descriptor (its three fds and a JSON header) over a Unix socket."""
    header = {"capacity": descriptor.capacity, "element_size": descriptor.element_size}
    send_with_fds(sock, header, list(descriptor.fds))


def recv_descriptor(sock: socket.socket) -> FmqDescriptor:
    """Receive a descriptor sent with send_descriptor; the caller owns the received fds (pass adopt=True)."""
    header, fds = recv_with_fds(sock, 3, "queue descriptor")
    try:
        return FmqDescriptor((fds[0], fds[1], fds[2]), int(header["capacity"]), int(header["element_size"]))
    except BaseException:
        _close_fds(fds)
        raise
