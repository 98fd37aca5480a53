"""A client process that dies or freezes in the middle of a burst never leaves the listener blocked (D21)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from harness.case import simple_request
from harness.hal import ErrorStatus, MeasureTiming
from harness.hal.burst_wire import DATUM_SIZE, RequestPacket, deserialize_result, serialize_request
from harness.hal.fmq import READER, WRITER, FastMessageQueue
from harness.paths.burst_client import SlotCallback
from tests.driver.burst.support import open_handles
from tests.driver.conftest import f32, prepared
from tests.driver.models import add_model

A = f32([[1, 2], [3, 4]])


def _streaming_client(requests: FastMessageQueue, results: FastMessageQueue, packet: bytes, signal_fd: int) -> None:
    """The child: claim the client's ends, then send requests and read results forever, reporting progress."""
    requests.claim(WRITER)
    results.claim(READER)
    os.write(signal_fd, b"c")
    done = 0
    while True:
        assert requests.write(packet, blocking=True, timeout=20)
        head = results.read(1, blocking=True, timeout=20)
        assert head is not None
        result = deserialize_result(head + (results.read(results.available_to_read()) or b""))
        assert result.status == ErrorStatus.NONE
        done += 1
        if done == 5:
            os.write(signal_fd, b"s")


@pytest.fixture
def client_process(device):
    """A burst whose client runs in a forked process that is streaming requests: (pid, context, memories)."""
    model = add_model()
    pm = prepared(device, model)
    rb = simple_request(model, [A, A], [16])
    requests = FastMessageQueue.create(64, DATUM_SIZE)
    results = FastMessageQueue.create(64, DATUM_SIZE)
    callback = SlotCallback()  # lives with the driver; the child only names slots
    slots = callback.slots_for(rb.request.pools)
    packet = serialize_request(RequestPacket(rb.request.inputs, rb.request.outputs, slots, MeasureTiming.NO))
    before = [open_handles(m) for m in rb.memories]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into the test runner
        try:
            os.close(r)
            _streaming_client(requests, results, packet, w)
        finally:
            os._exit(1)
    os.close(w)
    assert os.read(r, 1) == b"c"  # the child owns its ends before the driver attaches
    status, context = pm.configure_execution_burst(callback, requests.descriptor(), results.descriptor())
    assert status == ErrorStatus.NONE
    assert os.read(r, 1) == b"s"  # five results came back: mid-stream
    yield pid, context, rb.memories, before
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    os.close(r)
    context.release()
    requests.close()
    results.close()
    rb.close()


def test_a_killed_client_ends_the_listener_within_a_second_and_frees_its_memories(client_process) -> None:
    pid, context, memories, before = client_process
    assert context.cached_slots() == [0, 1]
    os.kill(pid, signal.SIGKILL)
    started = time.monotonic()
    assert context.wait_ended(1.0), "the listener still runs a second after its client died"
    assert time.monotonic() - started < 1.0
    assert not context.listening
    assert context.cached_slots() == []
    assert [open_handles(m) for m in memories] == before


def test_a_frozen_client_does_not_keep_release_from_returning(client_process) -> None:
    pid, context, memories, before = client_process
    os.kill(pid, signal.SIGSTOP)
    time.sleep(0.1)
    started = time.monotonic()
    context.release()
    assert time.monotonic() - started < 1.0
    assert not context.listening and context.cached_slots() == []
    assert [open_handles(m) for m in memories] == before
