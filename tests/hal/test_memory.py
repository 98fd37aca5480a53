"""Shared memory handles: real fds that other processes see, offsets honoured, bounds enforced."""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import struct
import subprocess
import sys
import textwrap
import threading

import pytest

from harness.hal import memory as memory_module
from harness.hal.memory import (
    HWB_FORMAT_BLOB,
    HWB_FORMAT_R8G8B8A8_UNORM,
    HWB_HEADER_SIZE,
    HWB_MAGIC,
    MAX_CREATE_SIZE,
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


def _run_in_child(body) -> bytes:
    """Fork, run body() in the child, return what it wrote to a pipe (the child always exits)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        status = 1
        try:
            os.close(r)
            os.write(w, body())
            status = 0
        finally:
            os._exit(status)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return b"".join(chunks)


def test_ashmem_written_in_parent_is_read_in_forked_child():
    with create_ashmem(10000) as mem:
        mem.write(9000, b"hello from the parent")

        def child() -> bytes:
            # A fresh mapping of the inherited fd, not the parent's cached one.
            other = Memory.from_fd(MemoryKind.ASHMEM, os.dup(mem.fd), 0, 10000)
            data = other.read(9000, 21)
            other.write(0, b"child")
            return data

        assert _run_in_child(child) == b"hello from the parent"
        # MAP_SHARED: what the child wrote is visible in the parent's mapping.
        assert mem.read(0, 5) == b"child"


def test_memory_sent_over_unix_socket_to_another_process():
    parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    code = textwrap.dedent(
        f"""
        import socket
        from harness.hal.memory import recv_memory
        sock = socket.socket(fileno={child_sock.fileno()})
        mem = recv_memory(sock)
        data = mem.read(100, 5)
        mem.write(200, data[::-1])
        sock.sendall(repr((mem.kind.value, mem.offset, mem.size)).encode())
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=[child_sock.fileno()])
    child_sock.close()
    with parent_sock, create_mmap_fd(300, offset=7) as mem:
        mem.write(100, b"abcde")
        send_memory(parent_sock, mem)
        reply = parent_sock.recv(1000)
        assert proc.wait(timeout=60) == 0
        assert reply == repr(("mmap_fd", 7, 300)).encode()
        assert mem.read(200, 5) == b"edcba"


def test_send_and_recv_memory_over_seqpacket_socket():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with a, b, create_ashmem(64) as mem:
        mem.write(3, b"xyz")
        send_memory(a, mem)
        with recv_memory(b) as received:
            assert (received.kind, received.offset, received.size) == (MemoryKind.ASHMEM, 0, 64)
            assert received.fd != mem.fd
            assert received.read(3, 3) == b"xyz"


def test_mmap_fd_honours_a_non_page_aligned_offset():
    offset = 4096 + 13
    with create_mmap_fd(5000, offset=offset) as mem:
        assert os.fstat(mem.fd).st_size == offset + 5000
        mem.write(17, b"\x01\x02\x03")
        assert os.pread(mem.fd, 3, offset + 17) == b"\x01\x02\x03"
        assert os.pread(mem.fd, 17, offset) == bytes(17)
        os.pwrite(mem.fd, b"zz", offset + 4998)
        assert mem.read(4998, 2) == b"zz"
        assert len(mem.map()) == 5000


def _assert_unnamed_zeroed_file(mem: Memory, total: int) -> None:
    st = os.fstat(mem.fd)
    assert stat.S_ISREG(st.st_mode) and st.st_nlink == 0 and st.st_size == total
    assert os.get_inheritable(mem.fd)
    assert os.pread(mem.fd, total, 0) == bytes(total)


def test_mmap_fd_by_default_is_an_unnamed_zero_filled_regular_file():
    with create_mmap_fd(40, offset=9) as mem:
        assert mem.kind == MemoryKind.MMAP_FD
        _assert_unnamed_zeroed_file(mem, 49)


def test_a_large_mmap_fd_is_not_put_on_tmpfs(monkeypatch):
    monkeypatch.setattr(memory_module, "_SHM_MAX_FILE", 100)
    with create_mmap_fd(1000, offset=5) as small_limit_exceeded:
        _assert_unnamed_zeroed_file(small_limit_exceeded, 1005)
        assert not os.readlink(f"/proc/self/fd/{small_limit_exceeded.fd}").startswith(memory_module._SHM_DIR + "/")


@pytest.mark.parametrize("dirs", [(), ("/nonexistent-nnfuzz-dir",)])
def test_mmap_fd_falls_back_to_a_temporary_file_without_o_tmpfile(monkeypatch, dirs):
    monkeypatch.setattr(memory_module, "_tmpfile_dirs", dirs)
    with create_mmap_fd(40, offset=9) as mem:
        _assert_unnamed_zeroed_file(mem, 49)
        mem.write(0, b"ok")
        assert os.pread(mem.fd, 2, 9) == b"ok"
    assert memory_module._tmpfile_dirs == ()  # a directory that cannot hold such files is not tried again


def test_mmap_fd_at_a_given_path(tmp_path):
    path = tmp_path / "pool.bin"
    with create_mmap_fd(16, offset=3, path=str(path)) as mem:
        mem.write(0, b"Q")
    assert path.read_bytes() == b"\0\0\0Q" + bytes(15)


@pytest.mark.parametrize(
    ("offset", "length"),
    [
        (101, 0),  # offset past the end
        (90, 11),  # length past the end
        (-1, 4),  # negative offset
        (0, -4),  # negative length
        (2**64, 1),  # huge offset
        (1, 2**64 - 1),  # offset + length overflows 64 bits
        (100, 1),  # one past the last byte
    ],
)
def test_out_of_bounds_ranges_are_refused_with_a_clear_error(offset, length):
    with create_ashmem(100) as mem:
        with pytest.raises(MemoryBoundsError) as info:
            mem.view(offset, length)
        message = str(info.value)
        assert f"offset {offset}" in message and f"length {length}" in message and "size 100" in message
        with pytest.raises(MemoryBoundsError):
            mem.read(offset, length)
        if length >= 0:
            with pytest.raises(MemoryBoundsError):
                mem.write(offset, b"x" * min(length, 200))


def test_in_bounds_edges_are_accepted():
    with create_ashmem(100) as mem:
        assert len(mem.view(0, 100)) == 100
        assert len(mem.view(100, 0)) == 0
        assert mem.read(99, 1) == b"\0"


def test_bounds_error_is_a_value_error():
    assert issubclass(MemoryBoundsError, ValueError)


def _header(fd: int) -> tuple:
    return struct.unpack("<4sIIIIIQ", os.pread(fd, 32, 0))


def test_hardware_buffer_header_is_laid_out_as_documented():
    with create_hardware_buffer(5, 3, layers=2, usage=0x1234_5678_9ABC) as mem:
        magic, version, width, height, layers, fmt, usage = _header(mem.fd)
        assert (magic, version, width, height, layers) == (b"AHWB", 1, 5, 3, 2)
        assert (fmt, usage) == (HWB_FORMAT_R8G8B8A8_UNORM, 0x1234_5678_9ABC)
        assert (mem.kind, mem.offset, mem.size) == (MemoryKind.HARDWARE_BUFFER, 32, 5 * 3 * 2 * 4)
        assert os.fstat(mem.fd).st_size == 32 + 120
        mem.write(0, b"\xaa")
        assert os.pread(mem.fd, 1, 32) == b"\xaa"


def test_hardware_buffer_blob_header():
    with create_hardware_buffer_blob(1000) as mem:
        magic, version, width, height, layers, fmt, usage = _header(mem.fd)
        assert (magic, version, width, height, layers, fmt, usage) == (b"AHWB", 1, 1000, 1, 1, 0x21, 0)
        assert (mem.kind, mem.offset, mem.size) == (MemoryKind.HARDWARE_BUFFER_BLOB, 32, 1000)
    assert (HWB_HEADER_SIZE, HWB_MAGIC, HWB_FORMAT_BLOB) == (32, b"AHWB", 0x21)


def test_undecodable_hardware_buffer_is_still_mappable_by_the_client():
    with create_hardware_buffer_blob(64, decodable=False) as mem:
        magic, _, _, _, _, fmt, _ = _header(mem.fd)
        assert magic != b"AHWB" and fmt == 0x7FFF
        mem.write(60, b"abcd")
        assert os.pread(mem.fd, 4, 32 + 60) == b"abcd"


def test_close_is_idempotent_and_closes_the_fd():
    mem = create_ashmem(4096)
    mem.map()
    fd = mem.fd
    mem.close()
    with pytest.raises(OSError):
        os.fstat(fd)
    mem.close()
    assert mem.closed
    with pytest.raises(MemoryMapError):
        mem.map()


def test_close_while_a_view_is_still_held_does_not_raise():
    mem = create_ashmem(4096)
    view = mem.view(0, 10)
    mem.close()
    mem.close()
    del view


def test_map_is_cached_and_readonly_views_refuse_writes():
    with create_ashmem(32) as mem:
        mem.map()[0:3] = b"abc"
        ro = mem.map(writable=False)
        assert ro.readonly and bytes(ro[0:3]) == b"abc"
        with pytest.raises(TypeError):
            ro[0] = 1


def test_zero_size_memory_maps_to_an_empty_view():
    with create_ashmem(0) as mem:
        assert len(mem.map()) == 0
        assert mem.read(0, 0) == b""


@pytest.mark.parametrize("size", [-1, MAX_CREATE_SIZE + 1, 2**70])
def test_absurd_sizes_are_refused(size):
    with pytest.raises(ValueError, match="size"):
        create_ashmem(size)
    with pytest.raises(ValueError, match="size"):
        create_mmap_fd(size)


def test_declared_size_beyond_the_file_is_refused_at_map_time_instead_of_crashing():
    fd = os.memfd_create("short", 0)
    os.ftruncate(fd, 100)
    with Memory.from_fd("ashmem", fd, 0, 1 << 40) as mem:
        with pytest.raises(MemoryMapError, match="exceeds the file size"):
            mem.read(0, 1)


def test_handles_are_inheritable_and_described_by_repr():
    with create_ashmem(8) as a, create_mmap_fd(8, offset=1) as b, create_hardware_buffer_blob(8) as c:
        for mem in (a, b, c):
            assert os.get_inheritable(mem.fd)
        assert "ashmem" in repr(a) and "size=8" in repr(a)
        assert "offset=1" in repr(b)


def _reopened(mem: Memory, flags: int) -> Memory:
    """Another Memory over the same file, through a descriptor opened with `flags`."""
    return Memory.from_fd(mem.kind, os.open(f"/proc/self/fd/{mem.fd}", flags), mem.offset, mem.size)


def test_reads_and_writes_before_and_after_mapping_see_the_same_bytes():
    with create_mmap_fd(64, offset=4099) as mem:
        mem.write(10, b"before")
        assert mem.read(10, 6) == b"before"
        assert bytes(mem.map()[10:16]) == b"before"
        mem.write(20, b"after")
        assert os.pread(mem.fd, 5, 4099 + 20) == b"after"
        assert mem.read(20, 5) == b"after"


def test_a_read_only_descriptor_reads_but_refuses_writes_whether_mapped_or_not():
    with create_ashmem(16) as mem:
        mem.write(0, b"abc")
        for map_first in (False, True):
            with _reopened(mem, os.O_RDONLY) as ro:
                if map_first:
                    ro.map(writable=False)
                assert ro.read(0, 3) == b"abc"
                with pytest.raises(MemoryMapError, match="read-only"):
                    ro.write(0, b"x")


def test_a_write_only_descriptor_is_refused_for_reads_and_writes():
    with create_ashmem(16) as mem, _reopened(mem, os.O_WRONLY) as wo:
        for call in (lambda: wo.read(0, 1), lambda: wo.write(0, b"x")):
            with pytest.raises(MemoryMapError, match="write-only"):
                call()


def test_an_append_only_descriptor_still_writes_in_place():
    with create_mmap_fd(16) as mem, _reopened(mem, os.O_RDWR | os.O_APPEND) as appending:
        appending.write(4, b"in place")
        assert os.fstat(mem.fd).st_size == 16
        assert mem.read(4, 8) == b"in place"


def test_writes_to_a_closed_memory_are_refused():
    mem = create_ashmem(8)
    mem.close()
    for call in (lambda: mem.write(0, b"x"), lambda: mem.read(0, 1)):
        with pytest.raises(MemoryMapError, match="closed"):
            call()


def test_a_write_sealed_memfd_opened_read_write_cannot_be_mapped_for_reads_or_writes():
    fd = os.memfd_create("sealed", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 16)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)
    with Memory.from_fd("ashmem", fd, 0, 16) as mem:
        for call in (lambda: mem.read(0, 4), lambda: mem.write(0, b"x")):
            with pytest.raises(MemoryMapError, match="not permitted"):
                call()


def test_a_memory_read_and_written_many_times_keeps_its_bytes_across_the_switch_to_a_mapping():
    with create_mmap_fd(64, offset=7) as mem:
        for k in range(40):
            mem.write(k, bytes([k + 1]))
            assert mem.read(0, k + 1) == bytes(range(1, k + 2))
        assert os.pread(mem.fd, 40, 7) == bytes(range(1, 41))


def _counted(made: list[Memory], make=lambda: create_ashmem(64)):
    def create() -> Memory:
        made.append(make())
        return made[-1]

    return create


def test_a_deferred_memory_is_made_when_its_fd_is_first_used_and_owns_that_fd():
    made: list[Memory] = []
    mem = Memory.deferred(MemoryKind.ASHMEM, 0, 64, _counted(made))
    assert made == [] and mem.size == 64 and mem.kind == MemoryKind.ASHMEM and "deferred" in repr(mem)
    fd = mem.fd
    assert len(made) == 1 and made[0].fd == fd == mem.fd
    assert stat.S_ISREG(os.fstat(fd).st_mode) and os.fstat(fd).st_size == 64
    del made[:]  # the memory it was made as gives up its fd: collecting it closes nothing
    os.fstat(fd)
    mem.write(3, b"abc")
    assert mem.read(0, 8) == b"\0\0\0abc\0\0" and mem.map()[3:6] == b"abc"
    mem.close()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_deferred_memory_closed_before_use_makes_nothing_and_refuses_access():
    made: list[Memory] = []
    mem = Memory.deferred(MemoryKind.MMAP_FD, 8, 64, _counted(made, lambda: create_mmap_fd(64, offset=8)))
    mem.close()
    assert mem.closed and mem.fd == -1 and made == []
    with pytest.raises(MemoryMapError):
        mem.read(0, 4)


def test_a_deferred_memory_made_with_another_layout_is_refused():
    made: list[Memory] = []
    mem = Memory.deferred(MemoryKind.MMAP_FD, 0, 64, _counted(made, lambda: create_mmap_fd(64, offset=8)))
    with pytest.raises(ValueError, match="deferred"):
        mem.fd  # noqa: B018
    assert made[0].closed


def test_a_deferred_memory_reached_from_many_threads_is_made_once():
    made: list[Memory] = []
    mem = Memory.deferred(MemoryKind.ASHMEM, 0, 64, _counted(made))
    fds: list[int] = []
    threads = [threading.Thread(target=lambda: fds.append(mem.fd)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and set(fds) == {mem.fd}
    mem.close()


def test_a_missing_attribute_of_a_memory_is_still_an_attribute_error():
    for mem in (create_ashmem(8), Memory.deferred(MemoryKind.ASHMEM, 0, 8, lambda: create_ashmem(8))):
        with pytest.raises(AttributeError):
            mem.no_such_attribute  # noqa: B018
        mem.close()
