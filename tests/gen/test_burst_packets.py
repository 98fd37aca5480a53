"""Burst packet mutations and sessions: each mutation breaks the packet as it says, judged against the wire
format's strict parser (harness.hal.burst_wire); the conformance suite's laws hold (any single datum removed or
bad datum inserted makes a packet malformed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.gen.burst_packets import (
    BAD_DATUMS,
    MALFORMED,
    OTHER,
    SAME,
    UNKNOWN_SLOT,
    BurstSessionConfig,
    apply_mutation,
    clean_padding,
    generate_mutation,
    generate_session,
    judge_packet,
    split_datums,
)
from harness.gen.sources import HypothesisSource
from harness.hal import DataLocation, MeasureTiming, RequestArgument
from harness.hal.burst_wire import DATUM_SIZE, RequestDatum, RequestPacket, deserialize_request, serialize_request

# Two inputs (one with dimensions [2, 3]), one output with dimensions [6], two pools in slots 0 and 1:
# 1 header + (1 + 2) + 1 + (1 + 1) + 2 pools + 1 measure = 10 datums.
PACKET = RequestPacket(
    inputs=[
        RequestArgument(False, DataLocation(0, 0, 24), [2, 3]),
        RequestArgument(False, DataLocation(0, 24, 4), []),
    ],
    outputs=[RequestArgument(False, DataLocation(1, 0, 24), [6])],
    slots=[0, 1],
    measure=MeasureTiming.NO,
)
RAW = serialize_request(PACKET)
KNOWN = [0, 1]


def kinds(raw: bytes) -> list[int]:
    return [int.from_bytes(d[:4], "little") for d in split_datums(raw)]


def test_the_test_packet_has_the_datums_counted_by_hand() -> None:
    assert len(RAW) == 10 * DATUM_SIZE
    assert judge_packet(RAW, PACKET, KNOWN).expect == SAME


@pytest.mark.parametrize("index", range(10))
def test_removing_any_datum_makes_the_packet_malformed(index: int) -> None:
    raw = apply_mutation(RAW, {"op": "remove", "index": index})
    assert len(raw) == 9 * DATUM_SIZE
    assert judge_packet(raw, PACKET, KNOWN).expect == MALFORMED


@pytest.mark.parametrize("index", range(11))
@pytest.mark.parametrize("bad", range(len(BAD_DATUMS)))
def test_inserting_any_bad_datum_anywhere_makes_the_packet_malformed(index: int, bad: int) -> None:
    raw = apply_mutation(RAW, {"op": "insert", "index": index, "bad": bad, "fixSize": True})
    assert kinds(raw)[index] == BAD_DATUMS[bad][0]
    assert judge_packet(raw, PACKET, KNOWN).expect == MALFORMED


def test_replacing_measure_timing_by_yes_is_still_the_same_request() -> None:
    raw = apply_mutation(RAW, {"op": "replace", "index": 9, "bad": 6})
    judgement = judge_packet(raw, PACKET, KNOWN)
    assert judgement.expect == SAME
    assert judgement.parsed.measure == MeasureTiming.YES


def test_replacing_a_pool_identifier_by_the_bad_one_names_an_unknown_slot() -> None:
    raw = apply_mutation(RAW, {"op": "replace", "index": 7, "bad": 5})
    assert judge_packet(raw, PACKET, KNOWN).expect == UNKNOWN_SLOT


def test_replacing_a_datum_by_one_of_another_kind_is_malformed() -> None:
    # Datum 1 is the first input's information; the bad packetInformation takes its place.
    raw = apply_mutation(RAW, {"op": "replace", "index": 1, "bad": 0})
    assert judge_packet(raw, PACKET, KNOWN).expect == MALFORMED


@pytest.mark.parametrize("field", range(4))
@pytest.mark.parametrize("delta", [-1, 1, 1000])
def test_a_wrong_count_in_the_header_is_malformed(field: int, delta: int) -> None:
    raw = apply_mutation(RAW, {"op": "count", "field": field, "delta": delta})
    assert judge_packet(raw, PACKET, KNOWN).expect == MALFORMED


def test_dropping_a_dimension_keeps_the_count_and_fixes_the_packet_size() -> None:
    raw = apply_mutation(RAW, {"op": "drop_dimension", "argument": 0, "fixSize": True})
    # The first input keeps numberOfDimensions 2 with one dimension datum left; packetSize says 9.
    assert len(raw) == 9 * DATUM_SIZE
    assert int.from_bytes(raw[8:12], "little") == 9
    assert kinds(raw)[:4] == [
        RequestDatum.PACKET_INFORMATION,
        RequestDatum.INPUT_OPERAND_INFORMATION,
        RequestDatum.INPUT_OPERAND_DIMENSION_VALUE,
        RequestDatum.INPUT_OPERAND_INFORMATION,
    ]
    assert judge_packet(raw, PACKET, KNOWN).expect == MALFORMED


def test_dropping_a_dimension_skips_operands_without_dimensions() -> None:
    # Arguments with dimensions: input 0 and output 0, so argument 1 is the output.
    raw = apply_mutation(RAW, {"op": "drop_dimension", "argument": 1, "fixSize": True})
    assert kinds(raw).count(RequestDatum.OUTPUT_OPERAND_DIMENSION_VALUE) == 0
    assert kinds(raw).count(RequestDatum.INPUT_OPERAND_DIMENSION_VALUE) == 2


@pytest.mark.parametrize("delta", [-1, 1, 2])
def test_a_wrong_number_of_dimensions_is_malformed(delta: int) -> None:
    raw = apply_mutation(RAW, {"op": "dimensions", "argument": 2, "delta": delta, "fixSize": True})
    assert judge_packet(raw, PACKET, KNOWN).expect == MALFORMED


@pytest.mark.parametrize(
    "mutation",
    [
        {"op": "measure", "value": 2},
        {"op": "measure", "value": -1},
        {"op": "discriminator", "index": 3, "value": 7},
        {"op": "truncate", "keep": 4},
    ],
    ids=["measure-2", "measure-minus-1", "discriminator", "truncate"],
)
def test_invalid_values_and_truncation_are_malformed(mutation: dict) -> None:
    assert judge_packet(apply_mutation(RAW, mutation), PACKET, KNOWN).expect == MALFORMED


def test_an_unknown_slot_is_refused_by_slot() -> None:
    raw = apply_mutation(RAW, {"op": "unknown_slot", "pool": 1, "slot": 4096})
    judgement = judge_packet(raw, PACKET, KNOWN)
    assert judgement.expect == UNKNOWN_SLOT
    assert judgement.parsed.slots == [0, 4096]


def test_a_changed_offset_is_another_well_formed_request() -> None:
    # Datum 4 is the second input's information; field 2 is its offset.
    raw = apply_mutation(RAW, {"op": "field", "index": 4, "field": 2, "value": 8})
    judgement = judge_packet(raw, PACKET, KNOWN)
    assert judgement.expect == OTHER
    assert judgement.parsed.inputs[1].location == DataLocation(0, 8, 4)


def test_padding_does_not_make_a_packet_malformed_but_is_noted() -> None:
    dirty = bytearray(RAW)
    dirty[5] = 0xFF  # a reserved byte of the header datum
    assert clean_padding(bytes(dirty)) == RAW
    judgement = judge_packet(bytes(dirty), PACKET, KNOWN)
    assert judgement.expect == SAME and judgement.dirty
    assert not judge_packet(RAW, PACKET, KNOWN).dirty


def test_an_empty_packet_is_malformed() -> None:
    assert judge_packet(b"", PACKET, KNOWN).expect == MALFORMED


def test_an_unknown_mutation_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown packet mutation"):
        apply_mutation(RAW, {"op": "shuffle"})


# --- generation -----------------------------------------------------------------------------------------------


@given(st.data())
def test_every_generated_mutation_is_json_and_applies_to_a_valid_packet(data) -> None:
    mutation = generate_mutation(HypothesisSource(data))
    assert json.loads(json.dumps(mutation)) == mutation
    raw = apply_mutation(RAW, mutation)
    assert raw and len(raw) % DATUM_SIZE == 0
    judgement = judge_packet(raw, PACKET, KNOWN)
    if judgement.expect == SAME:
        # Only measureTiming may differ from the original request.
        assert deserialize_request(clean_padding(raw)).inputs == PACKET.inputs


@given(st.data())
def test_every_packet_step_is_followed_by_a_valid_request_and_release_comes_last(data) -> None:
    session = generate_session(HypothesisSource(data), BurstSessionConfig())
    assert json.loads(json.dumps(session)) == session
    steps = session["steps"]
    for i, step in enumerate(steps):
        if step["do"] in ("packet", "renew"):
            assert steps[i + 1]["do"] == "run"
        if step["do"] == "release":
            assert i == len(steps) - 1
    channel = session["resultChannel"]
    assert channel is None or 2 <= channel <= 16
