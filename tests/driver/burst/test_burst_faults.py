"""The burst faults: the fault-free device does the right thing, a device started with the fault shows its bug."""

from __future__ import annotations

import numpy as np

import driver_under_test.burst  # noqa: F401  (registers the burst faults)
from driver_under_test import create_device
from harness.case import simple_request
from harness.hal import NO_TIMING_INFO, ErrorStatus, MeasureTiming
from harness.hal.burst_wire import (
    RESULT,
    Datum,
    RequestDatum,
    decode_request_datums,
    encode_datums,
    unclean_datums,
)
from harness.paths import PATHS, ExecutionArgs
from harness.paths.burst_client import BurstClient
from tests.driver.conftest import f32, prepared
from tests.driver.models import add_model

A = f32([[1, 2], [3, 4]])
B = f32([[10, 20], [30, 40]])
SUM = f32([[11, 22], [33, 44]])  # A + B by hand


def _device(fault: str | None):
    return create_device(faults=[fault] if fault else [])


def _second_request_output(fault: str | None) -> np.ndarray:
    """Run A + B in pools P, free P's memories, run B + B in new pools Q (which reuse P's slots): Q's output."""
    model = add_model()
    pm = prepared(_device(fault), model)
    with BurstClient(pm) as client:
        with simple_request(model, [A, B], [16]) as first:
            assert client.execute(first.request)[0] == ErrorStatus.NONE
            for memory in first.memories:
                client.free_memory(memory)
        with simple_request(model, [B, B], [16]) as second:
            assert client.callback.slots_for(second.request.pools) == [0, 1]  # the freed slots, reused
            assert client.execute(second.request)[0] == ErrorStatus.NONE
            return second.read_output(0, [2, 2])


def test_burst_slot_cache_not_invalidated() -> None:
    np.testing.assert_array_equal(_second_request_output(None), B + B)
    # The faulty burst still reaches the first request's freed memories under the reused slots.
    faulty = _second_request_output("burst_slot_cache_not_invalidated")
    np.testing.assert_array_equal(faulty, np.zeros((2, 2), np.float32))


def _output_without_dimension_datums(fault: str | None, claimed: int):
    """Send ADD with unknown output dimensions, its output claiming `claimed` dimensions but followed by none."""
    model = add_model(out_dims=[0, 0])
    pm = prepared(_device(fault), model)
    with simple_request(model, [A, B], [16]) as rb, BurstClient(pm) as client:
        datums = decode_request_datums(client.packet_for(rb.request, MeasureTiming.NO))
        at = next(i for i, d in enumerate(datums) if d.kind == RequestDatum.OUTPUT_OPERAND_INFORMATION)
        info = datums[at]
        assert info.fields[4] == 0  # the client sent no output dimensions
        datums[at] = Datum(info.kind, (*info.fields[:4], claimed))
        result = client.exchange(encode_datums(datums))
        return result, rb.read_output(0, [2, 2])


def test_burst_trusts_dimension_count() -> None:
    clean, _ = _output_without_dimension_datums(None, 2)
    assert (clean.status, clean.output_shapes, clean.timing) == (ErrorStatus.GENERAL_FAILURE, [], NO_TIMING_INFO)
    # The faulty parser reads two zero dimensions from past the packet and runs the malformed request.
    faulty, output = _output_without_dimension_datums("burst_trusts_dimension_count", 2)
    assert faulty.status == ErrorStatus.NONE
    assert [s.dimensions for s in faulty.output_shapes] == [[2, 2]]
    np.testing.assert_array_equal(output, SUM)
    # A count far past any packet still ends in an error result, not a crash or a hang.
    huge, _ = _output_without_dimension_datums("burst_trusts_dimension_count", 2**32 - 1)
    assert (huge.status, huge.output_shapes) == (ErrorStatus.GENERAL_FAILURE, [])


def test_burst_result_padding_not_zeroed() -> None:
    model = add_model()
    for fault, leaks in ((None, False), ("burst_result_padding_not_zeroed", True)):
        pm = prepared(_device(fault), model)
        with simple_request(model, [A, B], [16]) as rb, BurstClient(pm) as client:
            status, shapes, _ = client.execute(rb.request, MeasureTiming.YES)
            # The values are right either way; only the padding differs.
            assert status == ErrorStatus.NONE and [s.dimensions for s in shapes] == [[2, 2]]
            assert bool(unclean_datums(client.last_result, RESULT)) == leaks
            assert bool(client.last_notes) == leaks
            outcome = PATHS["burst"](pm, rb.request, ExecutionArgs())
            assert bool(outcome.notes) == leaks
