"""Cache file handles: checking what the client passed, reading a file once, writing one.

A handle is usable when it holds exactly one file descriptor of a regular file opened with the access the
operation needs, and a non-negative offset: the cache file's content starts at that offset and runs to the end
of the file. Regular files only, because reading a pipe or a socket could block the driver forever.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from driver_under_test.errors import failure, invalid
from harness.hal import CacheHandle

_MAX_OFFSET = (1 << 63) - 1
_READABLE = (os.O_RDONLY, os.O_RDWR)
_WRITABLE = (os.O_WRONLY, os.O_RDWR)
# Largest single read: Linux transfers at most about 2 GiB per call anyway.
_CHUNK = 1 << 30


@dataclass(frozen=True)
class CacheFile:
    """One checked cache file: the descriptor and where its content starts."""

    fd: int
    offset: int


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_handle(handle: object, what: str, *, writable: bool) -> CacheFile:
    if not isinstance(handle, CacheHandle):
        raise invalid(f"{what} is not a cache handle", "cache.handle")
    fds = handle.fds
    if not isinstance(fds, tuple | list) or len(fds) != 1:
        count = len(fds) if isinstance(fds, tuple | list) else "no"
        raise invalid(f"{what} holds {count} file descriptors, not exactly one", "cache.handle_fds")
    fd, offset = fds[0], handle.offset
    if not _is_int(fd) or fd < 0:
        raise invalid(f"{what} holds {fd!r}, not a file descriptor", "cache.handle_fds")
    if not _is_int(offset) or not 0 <= offset <= _MAX_OFFSET:
        raise invalid(f"{what} has offset {offset!r}", "cache.handle_offset")
    try:
        st = os.fstat(fd)
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError as e:
        raise invalid(f"{what}: file descriptor {fd} is not usable ({e.strerror})", "cache.handle_fds") from None
    if not stat.S_ISREG(st.st_mode):
        raise failure(f"{what}: file descriptor {fd} is not a regular file", "cache.file_kind")
    if mode not in (_WRITABLE if writable else _READABLE):
        needed = "writing" if writable else "reading"
        raise failure(f"{what}: file descriptor {fd} is not open for {needed}", "cache.access_mode")
    return CacheFile(fd, offset)


def check_handles(handles: object, expected: int, kind: str, *, writable: bool) -> list[CacheFile]:
    """The checked files of one cache kind; DriverError for a wrong count, a bad handle or an unusable file."""
    if not isinstance(handles, Sequence) or isinstance(handles, str | bytes):
        raise invalid(f"the {kind} cache handles are not a list", "cache.handle_count")
    if len(handles) != expected:
        raise invalid(f"{len(handles)} {kind} cache handles given, {expected} needed", "cache.handle_count")
    return [_check_handle(h, f"{kind} cache handle {i}", writable=writable) for i, h in enumerate(handles)]


def duplicate(files: Sequence[CacheFile]) -> list[CacheFile]:
    """Private duplicates of the descriptors, so a worker keeps its files whatever the client closes."""
    dups: list[CacheFile] = []
    try:
        for f in files:
            dups.append(CacheFile(os.dup(f.fd), f.offset))
    except OSError as e:
        close_all(dups)
        raise failure(f"cannot duplicate a cache file descriptor ({e.strerror})", "cache.dup") from None
    return dups


def close_all(files: Sequence[CacheFile]) -> None:
    """Close descriptors this driver owns, ignoring ones already gone."""
    for f in files:
        try:
            os.close(f.fd)
        except OSError:
            pass


def read_all(file: CacheFile, limit: int, what: str) -> bytes:
    """The file's content from its offset to its end, read into memory once; GENERAL_FAILURE past `limit` bytes."""
    try:
        size = os.fstat(file.fd).st_size
    except OSError as e:
        raise failure(f"{what}: cannot stat ({e.strerror})", "cache.read") from None
    length = max(0, size - file.offset)
    if length > limit:
        raise failure(f"{what} holds {length} bytes, above this driver's limit of {limit}", "cache.too_large")
    chunks: list[bytes] = []
    done = 0
    try:
        while done < length:
            chunk = os.pread(file.fd, min(length - done, _CHUNK), file.offset + done)
            if not chunk:  # the file shrank since fstat: what was read is the content
                break
            chunks.append(chunk)
            done += len(chunk)
    except OSError as e:
        raise failure(f"{what}: read failed ({e.strerror})", "cache.read") from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def write_all(file: CacheFile, data: bytes, what: str) -> None:
    """Make the file's content (from its offset on) exactly `data`; DriverError if the file refuses."""
    view = memoryview(data)
    done = 0
    try:
        while done < len(data):
            done += os.pwrite(file.fd, view[done:], file.offset + done)
        os.ftruncate(file.fd, file.offset + len(data))
    except OSError as e:
        raise failure(f"{what}: write failed ({e.strerror})", "cache.write") from None
    finally:
        view.release()
