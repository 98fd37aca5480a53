"""Burst executions (D20): the same results as executeSynchronously, slots resolved once and cached until freed."""

from __future__ import annotations

import os
import struct
import time

import numpy as np
import pytest

from driver_under_test.burst import DriverBurstContext
from harness.case import simple_request
from harness.hal import NO_TIMING, ErrorStatus, MeasureTiming
from harness.hal.burst_wire import DATUM_SIZE
from harness.hal.fmq import FastMessageQueue, FmqDescriptor
from harness.paths.burst_client import BurstClient, BurstUnavailable
from tests.driver.burst.support import open_handles
from tests.driver.conftest import f32, prepared
from tests.driver.models import add_model, add_then_mul_model

A = f32([[1, 2], [3, 4]])
B = f32([[10, 20], [30, 40]])
SUM = f32([[11, 22], [33, 44]])  # A + B by hand

# (model, inputs, output sizes, output dims): valid, unknown output dimensions, and a too-small second output.
CASES = {
    "add": (add_model, [A, B], [16], None),
    "unknown-output-dims": (lambda: add_model(out_dims=[0, 0]), [A, B], [16], None),
    "two-outputs": (add_then_mul_model, [A, B], [16, 16], [[2, 2], [2, 2]]),
    "insufficient": (add_then_mul_model, [A, B], [16, 8], None),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("measure", list(MeasureTiming))
def test_burst_results_equal_execute_synchronously(device, case: str, measure: MeasureTiming) -> None:
    build, inputs, sizes, dims = CASES[case]
    model = build()
    pm = prepared(device, model)
    with (
        simple_request(model, inputs, sizes, output_dims=dims) as sync_rb,
        simple_request(model, inputs, sizes, output_dims=dims) as burst_rb,
        BurstClient(pm) as client,
    ):
        sync = pm.execute_synchronously(sync_rb.request, measure, None, None)
        burst = client.execute(burst_rb.request, measure)
        assert burst[:2] == sync[:2]
        assert client.last_notes == []
        out = burst_rb.memories[1]
        assert out.read(0, out.size) == sync_rb.memories[1].read(0, out.size)
        measured = measure == MeasureTiming.YES and sync[0] == ErrorStatus.NONE
        assert (burst[2].time_in_driver != NO_TIMING) == measured
        assert burst[2].time_in_driver >= burst[2].time_on_device or not measured


def test_a_burst_serves_many_requests_in_a_row(device) -> None:
    model = add_model()
    pm = prepared(device, model)
    with BurstClient(pm) as client:
        for k in range(20):
            a = A * k
            with simple_request(model, [a, B], [16]) as rb:
                assert client.execute(rb.request)[0] == ErrorStatus.NONE
                np.testing.assert_array_equal(rb.read_output(0, [2, 2]), a + B)
                client.free_memory(rb.memories[0])
                client.free_memory(rb.memories[1])


def test_slots_are_resolved_through_the_callback_once_and_cached(device) -> None:
    model = add_model()
    pm = prepared(device, model)
    with simple_request(model, [A, B], [16]) as rb, BurstClient(pm) as client:
        for _ in range(3):
            assert client.execute(rb.request)[0] == ErrorStatus.NONE
        assert client.callback.requested == [[0, 1]]  # one getMemories for both pools, then the cache
        assert client.context.cached_slots() == [0, 1]
        # A new output memory is the only thing asked for.
        with simple_request(model, [A, B], [16]) as other:
            rb.request.pools[1] = other.memories[1]
            assert client.execute(rb.request)[0] == ErrorStatus.NONE
            assert client.callback.requested == [[0, 1], [2]]
            np.testing.assert_array_equal(other.read_output(0, [2, 2]), SUM)


def test_free_memory_drops_the_cached_memory_and_its_handle(device) -> None:
    model = add_model()
    pm = prepared(device, model)
    with simple_request(model, [A, B], [16]) as rb, BurstClient(pm) as client:
        out = rb.memories[1]
        before = open_handles(out)
        assert client.execute(rb.request)[0] == ErrorStatus.NONE
        assert open_handles(out) == before + 1  # the driver's own handle, cached under slot 1
        client.free_memory(out)
        assert client.context.cached_slots() == [0]
        assert open_handles(out) == before
        # Used again, the memory gets a slot again and is fetched again.
        out.write(0, bytes(16))
        assert client.execute(rb.request)[0] == ErrorStatus.NONE
        assert client.callback.requested == [[0, 1], [1]]
        np.testing.assert_array_equal(rb.read_output(0, [2, 2]), SUM)


def test_free_memory_of_an_unknown_slot_does_nothing(device) -> None:
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb, BurstClient(pm) as client:
        assert client.execute(rb.request)[0] == ErrorStatus.NONE
        for slot in (7, -1, 2**31 - 1, "x", None):
            client.context.free_memory(slot)  # type: ignore[arg-type]
        assert client.context.cached_slots() == [0, 1]


def test_release_joins_the_listener_and_frees_every_cached_memory(device) -> None:
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb:
        client = BurstClient(pm)
        context = client.context
        assert isinstance(context, DriverBurstContext) and context.listening
        before = [open_handles(m) for m in rb.memories]
        assert client.execute(rb.request)[0] == ErrorStatus.NONE
        assert [open_handles(m) for m in rb.memories] == [n + 1 for n in before]
        client.close()
        assert not context.listening and context.wait_ended(0)
        assert context.cached_slots() == [] and [open_handles(m) for m in rb.memories] == before
        context.release()  # idempotent
        client.close()


def test_a_client_that_closes_its_request_channel_ends_the_listener(device) -> None:
    pm = prepared(device, add_model())
    client = BurstClient(pm)
    client.requests.close()
    assert client.context.wait_ended(2)
    client.close()


def test_a_client_whose_burst_ended_is_told_at_once_instead_of_hanging(device) -> None:
    from harness.paths.burst_client import BurstBroken

    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb, BurstClient(pm, timeout_s=30) as client:
        client.context.release()
        started = time.monotonic()
        with pytest.raises(BurstBroken):
            client.execute(rb.request)
        assert time.monotonic() - started < 2


def test_corrupted_channel_counters_end_the_burst_without_crashing(device) -> None:
    pm = prepared(device, add_model())
    client = BurstClient(pm)
    memfd = client.requests.descriptor().fds[0]
    os.pwrite(memfd, struct.pack("<Q", 10**9), 64)  # the write counter jumps far past the capacity
    assert client.context.wait_ended(2)
    client.close()


def _channels(request_length=16, result_length=16, element_size=DATUM_SIZE):
    return FastMessageQueue.create(request_length, element_size), FastMessageQueue.create(result_length, element_size)


@pytest.mark.parametrize(
    "bad",
    ["no-callback", "not-a-descriptor", "element-size", "too-short", "forged-fds", "one-queue-both-ways"],
)
def test_configure_refuses_bad_arguments(device, bad: str) -> None:
    from harness.paths.burst_client import SlotCallback

    pm = prepared(device, add_model())
    requests, results = _channels(element_size=16 if bad == "element-size" else DATUM_SIZE)
    if bad == "too-short":
        requests.close()
        requests = FastMessageQueue.create(1, DATUM_SIZE)
    callback = None if bad == "no-callback" else SlotCallback()
    req = requests.descriptor()
    if bad == "not-a-descriptor":
        req = "request channel"
    if bad == "forged-fds":
        req = FmqDescriptor((0, 1, 2), req.capacity, req.element_size)
    res = req if bad == "one-queue-both-ways" else results.descriptor()
    status, context = pm.configure_execution_burst(callback, req, res)
    assert (status, context) == (ErrorStatus.INVALID_ARGUMENT, None)
    requests.close()
    results.close()


def test_a_refused_burst_raises_burst_unavailable_with_the_status(device) -> None:
    pm = prepared(device, add_model())
    with pytest.raises(BurstUnavailable) as info:
        BurstClient(pm, result_length=1)
    assert info.value.status == ErrorStatus.INVALID_ARGUMENT
