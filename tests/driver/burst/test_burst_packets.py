"""Malformed request packets, unknown slots, misbehaving callbacks and oversized results (D22): each gets one
error result with no shapes and no timing, and the listener keeps serving."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driver_under_test import create_device
from harness.case import simple_request
from harness.hal import NO_TIMING_INFO, ErrorStatus, MeasureTiming
from harness.hal.burst_wire import (
    DATUM_SIZE,
    Datum,
    RequestDatum,
    ResultPacket,
    decode_request_datums,
    encode_datums,
)
from harness.paths.burst_client import BurstClient, SlotCallback
from tests.driver.conftest import f32, prepared
from tests.driver.models import add_model, add_then_mul_model

A = f32([[1, 2], [3, 4]])
B = f32([[10, 20], [30, 40]])
SUM = f32([[11, 22], [33, 44]])  # A + B by hand
R = RequestDatum
WIRE_ERROR = ErrorStatus.GENERAL_FAILURE


def assert_error(result: ResultPacket, status: ErrorStatus) -> None:
    """An error result as the HAL wants it: that status, no shapes, no timing."""
    assert (result.status, result.output_shapes, result.timing) == (status, [], NO_TIMING_INFO)


def assert_still_serving(client: BurstClient, rb) -> None:
    """A valid request after the bad ones is executed correctly."""
    rb.memories[1].write(0, bytes(16))
    assert client.execute(rb.request)[0] == ErrorStatus.NONE
    np.testing.assert_array_equal(rb.read_output(0, [2, 2]), SUM)


@pytest.fixture
def burst(device):
    """A burst on ADD with a valid request whose pools already have slots, and that request's datums."""
    model = add_model()
    pm = prepared(device, model)
    with simple_request(model, [A, B], [16], output_dims=[[2, 2]]) as rb, BurstClient(pm) as client:
        datums = decode_request_datums(client.packet_for(rb.request, MeasureTiming.YES))
        yield client, rb, datums


# The ill-formed entries the HAL's burst validation inserts or substitutes, one per datum kind.
BAD = [
    Datum(R.PACKET_INFORMATION, (10, 10, 10, 10)),
    Datum(R.INPUT_OPERAND_INFORMATION, (0, 0, 0, 0, 10)),
    Datum(R.INPUT_OPERAND_DIMENSION_VALUE, (0,)),
    Datum(R.OUTPUT_OPERAND_INFORMATION, (0, 0, 0, 0, 10)),
    Datum(R.OUTPUT_OPERAND_DIMENSION_VALUE, (0,)),
    Datum(R.POOL_IDENTIFIER, (2**31 - 1,)),
    Datum(R.MEASURE_TIMING, (1,)),
]


def test_a_packet_missing_any_datum_is_an_error(burst) -> None:
    client, rb, datums = burst
    for i in range(len(datums)):
        assert_error(client.exchange(encode_datums(datums[:i] + datums[i + 1 :])), WIRE_ERROR)
    assert_still_serving(client, rb)


def test_a_packet_with_an_extra_datum_anywhere_is_an_error(burst) -> None:
    client, rb, datums = burst
    for i in range(len(datums) + 1):
        for extra in BAD:
            assert_error(client.exchange(encode_datums([*datums[:i], extra, *datums[i:]])), WIRE_ERROR)
    assert_still_serving(client, rb)


def test_a_packet_with_any_datum_changed_is_an_error(burst) -> None:
    client, rb, datums = burst
    for i, original in enumerate(datums):
        for bad in BAD:
            same_dimension_kind = bad.kind == original.kind and bad.kind in (
                R.INPUT_OPERAND_DIMENSION_VALUE,
                R.OUTPUT_OPERAND_DIMENSION_VALUE,
            )
            if bad == original or same_dimension_kind:
                continue
            result = client.exchange(encode_datums([*datums[:i], bad, *datums[i + 1 :]]))
            # An unknown slot is well formed on the wire: the callback refuses it as an invalid argument.
            unknown_slot = bad.kind == original.kind == R.POOL_IDENTIFIER
            expected = ErrorStatus.INVALID_ARGUMENT if unknown_slot else WIRE_ERROR
            assert_error(result, expected)
    assert_still_serving(client, rb)


def test_a_packet_with_two_datums_swapped_is_an_error(burst) -> None:
    client, rb, datums = burst
    for i in range(len(datums)):
        for j in range(i + 1, len(datums)):
            if datums[i].kind != datums[j].kind:
                swapped = list(datums)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                assert_error(client.exchange(encode_datums(swapped)), WIRE_ERROR)
    assert_still_serving(client, rb)


@pytest.mark.parametrize(
    ("index", "fields"),
    [
        (0, (9, 3, 1, 2)),
        (0, (9, 2, 1, 3)),
        (0, (9, 2**32 - 1, 2**32 - 1, 2**32 - 1)),
        (1, (0, 0, 0, 16, 3)),
        (1, (0, 0, 0, 16, 2**32 - 1)),
    ],
    ids=["inputs", "pools", "huge-counts", "dims", "huge-dims"],
)
def test_wrong_counts_are_an_error(burst, index: int, fields: tuple[int, ...]) -> None:
    client, rb, datums = burst
    datums[index] = Datum(datums[index].kind, fields)
    assert_error(client.exchange(encode_datums(datums)), WIRE_ERROR)
    assert_still_serving(client, rb)


def test_bytes_that_are_not_datums_are_an_error(burst) -> None:
    client, rb, _ = burst
    for raw in (b"\xff" * DATUM_SIZE, bytes(DATUM_SIZE), b"\x07" + bytes(DATUM_SIZE - 1)):
        assert_error(client.exchange(raw), WIRE_ERROR)
    assert_still_serving(client, rb)


def test_an_unknown_slot_is_asked_of_the_callback_and_refused(burst) -> None:
    client, rb, datums = burst
    datums[-2] = Datum(R.POOL_IDENTIFIER, (12345,))
    assert_error(client.exchange(encode_datums(datums)), ErrorStatus.INVALID_ARGUMENT)
    assert 12345 in client.callback.requested[-1]
    assert 12345 not in client.context.cached_slots()
    assert_still_serving(client, rb)


class _Misbehaving(SlotCallback):
    def __init__(self, answer) -> None:
        super().__init__()
        self.answer = answer

    def get_memories(self, slots):
        return self.answer(self, slots)


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        (lambda cb, slots: (ErrorStatus.NONE, []), ErrorStatus.GENERAL_FAILURE),
        (lambda cb, slots: (ErrorStatus.NONE, ["memory"] * len(slots)), ErrorStatus.INVALID_ARGUMENT),
        (lambda cb, slots: (ErrorStatus.GENERAL_FAILURE, []), ErrorStatus.GENERAL_FAILURE),
        (lambda cb, slots: (ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, []), ErrorStatus.GENERAL_FAILURE),
        (lambda cb, slots: 1 / 0, ErrorStatus.GENERAL_FAILURE),
        (lambda cb, slots: None, ErrorStatus.GENERAL_FAILURE),
    ],
    ids=["too-few", "not-memories", "failure", "odd-status", "raises", "garbage"],
)
def test_a_misbehaving_callback_gives_an_error_result(device, answer, status: ErrorStatus) -> None:
    model = add_model()
    pm = prepared(device, model)
    with simple_request(model, [A, B], [16]) as rb, BurstClient(pm, callback=_Misbehaving(answer)) as client:
        result = client.execute(rb.request)
        assert (result[0], result[1], result[2]) == (status, [], NO_TIMING_INFO)
        assert client.context.cached_slots() == []


def test_a_result_larger_than_the_result_channel_is_an_error(device) -> None:
    model = add_then_mul_model()
    pm = prepared(device, model)
    # Two [2, 2] shapes take 1 + 2 x (1 + 2) + 1 = 8 datums; an error result takes 2.
    with simple_request(model, [A, B], [16, 16]) as rb:
        with BurstClient(pm, result_length=8) as roomy:
            assert roomy.execute(rb.request)[0] == ErrorStatus.NONE
        with BurstClient(pm, result_length=7) as tight:
            assert tight.execute(rb.request) == (ErrorStatus.GENERAL_FAILURE, [], NO_TIMING_INFO)
            # The listener keeps serving: a failing request's result (2 datums) still comes back.
            rb.request.inputs.pop()
            assert tight.execute(rb.request) == (ErrorStatus.INVALID_ARGUMENT, [], NO_TIMING_INFO)


_DEVICE = create_device(faults=[])
_PM = prepared(_DEVICE, add_model())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(min_size=DATUM_SIZE, max_size=DATUM_SIZE), min_size=1, max_size=16))
def test_any_packet_gets_exactly_one_well_formed_result(datums: list[bytes]) -> None:
    with simple_request(add_model(), [A, B], [16]) as rb, BurstClient(_PM, timeout_s=10) as client:
        client.packet_for(rb.request, MeasureTiming.NO)  # give the pools slots 0 and 1
        result = client.exchange(b"".join(datums))
        assert client.last_notes == []
        if result.status != ErrorStatus.NONE:
            assert result.output_shapes == [] and result.timing == NO_TIMING_INFO
        assert client.results.available_to_read() == 0
        assert_still_serving(client, rb)
