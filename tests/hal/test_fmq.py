"""The fast message queue: FIFO order, wrap-around, atomic messages, blocking with timeouts, other processes."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness.hal.fmq import (
    DATA_OFFSET,
    MAGIC,
    FastMessageQueue,
    FmqDescriptor,
    FmqError,
    send_descriptor,
)

ROOT = Path(__file__).resolve().parents[2]


def elements(*values: int, size: int = 8) -> bytes:
    """One element per value: the value as a little-endian u64 padded to `size` bytes."""
    return b"".join(struct.pack("<Q", v).ljust(size, b"\0") for v in values)


@pytest.fixture
def queue():
    q = FastMessageQueue.create(5, 8)
    yield q
    q.close()


# --- order, wrap-around, all or nothing ---------------------------------------------------------------


def test_messages_come_out_in_the_order_they_went_in(queue) -> None:
    assert queue.write(elements(1, 2))
    assert queue.write(elements(3))
    assert queue.read(1) == elements(1)
    assert queue.read(2) == elements(2, 3)
    assert queue.read(1) is None


def test_the_ring_wraps_around_many_times_without_losing_order(queue) -> None:
    # Capacity 5 and messages of 3: every other message straddles the end of the ring.
    for start in range(0, 300, 3):
        assert queue.write(elements(start, start + 1, start + 2))
        assert queue.read(3) == elements(start, start + 1, start + 2)
    assert queue.available_to_read() == 0 and queue.available_to_write() == 5


def test_the_counters_sit_where_the_layout_says(queue) -> None:
    fd = queue.descriptor().fds[0]
    assert queue.write(elements(7, 8, 9))
    assert queue.read(2) == elements(7, 8)
    magic, element_size, capacity = struct.unpack("<QQQ", os.pread(fd, 24, 0))
    assert (magic, element_size, capacity) == (MAGIC, 8, 5)
    assert struct.unpack("<Q", os.pread(fd, 8, 64))[0] == 3  # write counter
    assert struct.unpack("<Q", os.pread(fd, 8, 128))[0] == 2  # read counter
    assert os.pread(fd, 8, DATA_OFFSET + 2 * 8) == elements(9)  # element 2 lives in ring slot 2
    assert os.fstat(fd).st_size == DATA_OFFSET + 5 * 8


def test_a_write_that_does_not_fit_writes_nothing(queue) -> None:
    assert queue.write(elements(1, 2, 3))
    assert not queue.write(elements(4, 5, 6))  # 2 free, 3 asked
    assert queue.available_to_read() == 3
    assert queue.read(3) == elements(1, 2, 3)
    assert queue.read(1) is None


def test_a_read_of_more_than_is_there_consumes_nothing(queue) -> None:
    assert queue.write(elements(1, 2))
    assert queue.read(3) is None
    assert queue.read(2) == elements(1, 2)


def test_a_message_larger_than_the_ring_is_refused_at_once_even_when_blocking(queue) -> None:
    started = time.monotonic()
    assert not queue.write(elements(*range(6)), blocking=True, timeout=5)
    assert queue.read(6, blocking=True, timeout=5) is None
    assert time.monotonic() - started < 1


def test_partial_elements_are_a_usage_error(queue) -> None:
    with pytest.raises(ValueError):
        queue.write(b"\1" * 12)


def test_peek_and_discard(queue) -> None:
    assert queue.write(elements(1, 2, 3))
    assert queue.peek(2) == elements(1, 2)
    assert queue.available_to_read() == 3
    assert queue.discard() == 3
    assert queue.read(1) is None and queue.available_to_write() == 5


def test_read_all_takes_everything_readable_across_the_end_of_the_ring(queue) -> None:
    assert queue.read_all() is None
    assert queue.write(elements(1, 2, 3)) and queue.read(3) == elements(1, 2, 3)
    assert queue.write(elements(4, 5)) and queue.write(elements(6, 7))
    assert queue.read_all() == elements(4, 5, 6, 7)
    assert queue.read_all() is None and queue.available_to_write() == 5


# --- blocking and non-blocking -------------------------------------------------------------------------


def test_non_blocking_calls_return_at_once(queue) -> None:
    started = time.monotonic()
    assert queue.read(1) is None
    assert queue.write(elements(1, 2, 3, 4, 5))
    assert not queue.write(elements(6))
    assert time.monotonic() - started < 0.5


def test_a_blocking_read_times_out_when_nothing_comes(queue) -> None:
    started = time.monotonic()
    assert queue.read(1, blocking=True, timeout=0.3) is None
    assert 0.3 <= time.monotonic() - started < 2


def test_a_blocking_read_all_times_out_when_nothing_comes(queue) -> None:
    started = time.monotonic()
    assert queue.read_all(blocking=True, timeout=0.3) is None
    assert 0.3 <= time.monotonic() - started < 2


def test_a_blocking_read_wakes_when_the_writer_publishes(queue) -> None:
    writer = FastMessageQueue.from_descriptor(queue.descriptor())
    timer = threading.Timer(0.1, lambda: writer.write(elements(42)))
    started = time.monotonic()
    timer.start()
    assert queue.read(1, blocking=True, timeout=10) == elements(42)
    assert time.monotonic() - started < 5
    timer.join()
    writer.close()


def test_a_blocking_write_waits_for_the_reader_to_make_room(queue) -> None:
    reader = FastMessageQueue.from_descriptor(queue.descriptor())
    assert queue.write(elements(1, 2, 3, 4))
    timer = threading.Timer(0.1, lambda: reader.read(3))
    timer.start()
    assert queue.write(elements(5, 6, 7), blocking=True, timeout=10)
    timer.join()
    assert reader.read(4) == elements(4, 5, 6, 7)
    reader.close()


def test_a_blocking_write_times_out_when_nobody_reads(queue) -> None:
    assert queue.write(elements(1, 2, 3, 4, 5))
    started = time.monotonic()
    assert not queue.write(elements(6), blocking=True, timeout=0.2)
    assert 0.2 <= time.monotonic() - started < 2


def test_a_writer_that_closes_wakes_a_blocked_reader(queue) -> None:
    writer = FastMessageQueue.from_descriptor(queue.descriptor())
    writer.claim("writer")
    timer = threading.Timer(0.1, writer.close)
    started = time.monotonic()
    timer.start()
    assert queue.read(1, blocking=True, timeout=10) is None
    assert time.monotonic() - started < 2
    assert queue.writer_gone()
    timer.join()


# --- descriptors and other processes -------------------------------------------------------------------


def test_a_descriptor_with_the_wrong_sizes_is_refused(queue) -> None:
    d = queue.descriptor()
    for bad in (
        FmqDescriptor(d.fds, d.capacity + 1, d.element_size),
        FmqDescriptor(d.fds, d.capacity, 16),
        FmqDescriptor(d.fds, 0, d.element_size),
        FmqDescriptor((d.fds[0], d.fds[0], d.fds[2]), d.capacity, d.element_size),
        FmqDescriptor((d.fds[0], -1, d.fds[2]), d.capacity, d.element_size),
        "not a descriptor",
    ):
        with pytest.raises(FmqError):
            FastMessageQueue.from_descriptor(bad)  # type: ignore[arg-type]


def test_an_unsealed_memory_is_refused(queue) -> None:
    d = queue.descriptor()
    unsealed = os.memfd_create("unsealed", 0)
    os.ftruncate(unsealed, os.fstat(d.fds[0]).st_size)
    os.pwrite(unsealed, os.pread(d.fds[0], DATA_OFFSET, 0), 0)
    with pytest.raises(FmqError, match="sealed"):
        FastMessageQueue.from_descriptor(FmqDescriptor((unsealed, d.fds[1], d.fds[2]), d.capacity, d.element_size))
    os.close(unsealed)


def test_corrupted_counters_are_an_error_not_a_crash(queue) -> None:
    os.pwrite(queue.descriptor().fds[0], struct.pack("<Q", 10**6), 64)  # a write counter far past capacity
    with pytest.raises(FmqError, match="corrupted"):
        queue.read(1)


def _fork(body) -> int:
    pid = os.fork()
    if pid == 0:  # child: never returns into the test runner
        code = 1
        try:
            body()
            code = 0
        finally:
            os._exit(code)
    return pid


def test_a_forked_writer_streams_through_a_small_ring_in_order() -> None:
    q = FastMessageQueue.create(7, 16)

    def child() -> None:
        q.claim("writer")
        for i in range(500):
            n = i % 4 + 1  # messages of 1..4 elements
            assert q.write(elements(*[i * 10 + k for k in range(n)], size=16), blocking=True, timeout=10)

    pid = _fork(child)
    for i in range(500):
        n = i % 4 + 1
        assert q.read(n, blocking=True, timeout=10) == elements(*[i * 10 + k for k in range(n)], size=16)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    q.close()


def test_a_reader_sees_the_writer_process_die() -> None:
    q = FastMessageQueue.create(4, 8)
    r, w = os.pipe()

    def child() -> None:
        q.claim("writer")
        os.write(w, b"x")
        time.sleep(60)

    pid = _fork(child)
    assert os.read(r, 1) == b"x"
    assert not q.writer_gone()
    threading.Timer(0.2, os.kill, (pid, signal.SIGKILL)).start()
    started = time.monotonic()
    assert q.read(1, blocking=True, timeout=30) is None
    assert time.monotonic() - started < 1.5
    assert q.writer_gone()
    os.waitpid(pid, 0)
    os.close(r)
    os.close(w)
    q.close()


def test_a_descriptor_sent_over_a_unix_socket_serves_another_process() -> None:
    to_child = FastMessageQueue.create(8, 8)
    from_child = FastMessageQueue.create(8, 8)
    parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    code = textwrap.dedent(
        f"""
        import socket, struct
        from harness.hal.fmq import FastMessageQueue, recv_descriptor
        sock = socket.socket(fileno={child_sock.fileno()})
        inbox = FastMessageQueue.from_descriptor(recv_descriptor(sock), adopt=True)
        outbox = FastMessageQueue.from_descriptor(recv_descriptor(sock), adopt=True)
        for _ in range(20):
            (v,) = struct.unpack("<Q", inbox.read(1, blocking=True, timeout=20))
            assert outbox.write(struct.pack("<Q", v * v), blocking=True, timeout=20)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        pass_fds=[child_sock.fileno()],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    child_sock.close()
    send_descriptor(parent_sock, to_child.descriptor())
    send_descriptor(parent_sock, from_child.descriptor())
    for v in range(20):
        assert to_child.write(elements(v), blocking=True, timeout=20)
        assert from_child.read(1, blocking=True, timeout=20) == elements(v * v)
    assert child.wait(timeout=30) == 0
    parent_sock.close()
    to_child.close()
    from_child.close()
