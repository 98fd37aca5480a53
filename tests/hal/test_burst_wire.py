"""The burst wire format: packets round trip, the layout is the documented one, every malformed form is refused."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.hal import DataLocation, ErrorStatus, MeasureTiming, OutputShape, RequestArgument, Timing, burst_wire
from harness.hal.burst_wire import (
    DATUM_SIZE,
    REQUEST,
    RESULT,
    BurstPacketError,
    Datum,
    RequestDatum,
    RequestPacket,
    ResultDatum,
    announced_size,
    decode_request_datums,
    deserialize_request,
    deserialize_result,
    encode_datums,
    encode_request_datum,
    encode_result_datum,
    request_datums,
    result_datums,
    serialize_request,
    serialize_result,
    unclean_datums,
)

R = RequestDatum
U32 = 0xFFFFFFFF


def packet() -> RequestPacket:
    """Two inputs (one without value), one output without dimensions, two pools, timing measured."""
    return RequestPacket(
        inputs=[RequestArgument(False, DataLocation(0, 0, 16), [2, 2]), RequestArgument(True, DataLocation(), [])],
        outputs=[RequestArgument(False, DataLocation(1, 16, 16), [])],
        slots=[3, 0],
        measure=MeasureTiming.YES,
    )


def fix_size(datums: list[Datum]) -> list[Datum]:
    """The datums with packetSize set to their number (so only the other checks can refuse them)."""
    head = datums[0]
    if head.kind == R.PACKET_INFORMATION:
        datums = [Datum(head.kind, (len(datums), *head.fields[1:])), *datums[1:]]
    return datums


# --- layout and round trips ---------------------------------------------------------------------------------


def test_a_request_packet_has_the_documented_datums_in_order() -> None:
    kinds = [d.kind for d in decode_request_datums(serialize_request(packet()))]
    assert kinds == [
        R.PACKET_INFORMATION,
        R.INPUT_OPERAND_INFORMATION,
        R.INPUT_OPERAND_DIMENSION_VALUE,
        R.INPUT_OPERAND_DIMENSION_VALUE,
        R.INPUT_OPERAND_INFORMATION,
        R.OUTPUT_OPERAND_INFORMATION,
        R.POOL_IDENTIFIER,
        R.POOL_IDENTIFIER,
        R.MEASURE_TIMING,
    ]


def test_datum_bytes_are_the_documented_layout() -> None:
    raw = serialize_request(packet())
    assert len(raw) == 9 * DATUM_SIZE
    # By hand: discriminator, 4 reserved bytes, then packetSize 9, 2 inputs, 1 output, 2 pools, then zeros.
    assert raw[:32] == struct.pack("<I4xIIII", 0, 9, 2, 1, 2) + bytes(8)
    # The first input: hasNoValue 0, 3 pad bytes, pool 0, offset 0, length 16, 2 dimensions.
    assert raw[32:64] == struct.pack("<I4xB3xIIII", 1, 0, 0, 0, 16, 2) + bytes(4)
    assert raw[64:96] == struct.pack("<I4xI", 2, 2) + bytes(20)
    assert raw[-64:-32] == struct.pack("<I4xi", 5, 0) + bytes(20)  # the second pool's slot
    assert raw[-32:] == struct.pack("<I4xi", 6, 1) + bytes(20)  # measureTiming YES


def test_result_datum_bytes_are_the_documented_layout() -> None:
    raw = serialize_result(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, [OutputShape([3], False)], Timing(5, 7))
    assert raw == (
        struct.pack("<I4xIiI", 0, 4, 3, 1).ljust(32, b"\0")
        + struct.pack("<I4xB3xI", 1, 0, 1).ljust(32, b"\0")
        + struct.pack("<I4xI", 2, 3).ljust(32, b"\0")
        + struct.pack("<I4xQQ", 3, 5, 7).ljust(32, b"\0")
    )


def test_a_request_round_trips() -> None:
    assert deserialize_request(serialize_request(packet())) == packet()


def test_a_result_round_trips() -> None:
    shapes = [OutputShape([2, 3], True), OutputShape([], False), OutputShape([0, 7, U32], True)]
    result = deserialize_result(serialize_result(ErrorStatus.NONE, shapes, Timing(10, 20)))
    assert (result.status, result.output_shapes, result.timing) == (ErrorStatus.NONE, shapes, Timing(10, 20))


def test_no_timing_round_trips_as_uint64_max() -> None:
    result = deserialize_result(serialize_result(ErrorStatus.GENERAL_FAILURE, [], Timing()))
    assert result.timing == Timing(2**64 - 1, 2**64 - 1) and result.output_shapes == []


def test_padding_bytes_are_zero_in_every_serialized_datum() -> None:
    request = serialize_request(packet())
    result = serialize_result(ErrorStatus.NONE, [OutputShape([2, 2], True)], Timing(1, 2))
    assert unclean_datums(request, REQUEST) == [] and unclean_datums(result, RESULT) == []
    # The operandInformation padding the HAL's tests check: the 3 bytes after isSufficient.
    info = result[DATUM_SIZE : 2 * DATUM_SIZE]
    assert info[4:8] == bytes(4) and info[9:12] == bytes(3) and info[16:] == bytes(16)


def test_announced_size_reads_the_first_datum() -> None:
    assert announced_size(serialize_request(packet())) == 9
    with pytest.raises(BurstPacketError):
        announced_size(encode_request_datum(R.MEASURE_TIMING, 0))


# --- refusals -------------------------------------------------------------------------------------------


def _refused(raw: bytes) -> None:
    with pytest.raises(BurstPacketError):
        deserialize_request(raw)


@pytest.mark.parametrize("raw", [b"", b"\0" * 31, b"\0" * 33], ids=["empty", "short", "ragged"])
def test_lengths_that_are_not_whole_datums_are_refused(raw: bytes) -> None:
    _refused(raw)
    with pytest.raises(BurstPacketError):
        deserialize_result(raw)


@pytest.mark.parametrize("discriminator", [7, 8, 255, U32])
def test_unknown_discriminators_are_refused(discriminator: int) -> None:
    raw = bytearray(serialize_request(packet()))
    raw[DATUM_SIZE * 8 : DATUM_SIZE * 8 + 4] = struct.pack("<I", discriminator)
    _refused(bytes(raw))


def test_removing_any_datum_is_refused_with_or_without_a_fixed_packet_size() -> None:
    datums = request_datums(packet())
    for i in range(len(datums)):
        removed = datums[:i] + datums[i + 1 :]
        _refused(encode_datums(removed))
        if removed:
            _refused(encode_datums(fix_size(removed)))


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


def test_adding_any_datum_anywhere_is_refused_with_or_without_a_fixed_packet_size() -> None:
    datums = request_datums(packet())
    for i in range(len(datums) + 1):
        for extra in BAD:
            added = [*datums[:i], extra, *datums[i:]]
            _refused(encode_datums(added))
            _refused(encode_datums(fix_size(added)))


def test_changing_any_datum_to_another_kind_or_count_is_refused() -> None:
    datums = request_datums(packet())
    for i, original in enumerate(datums):
        for bad in BAD:
            same_kind_value = bad.kind == original.kind and bad.kind in (
                R.INPUT_OPERAND_DIMENSION_VALUE,
                R.OUTPUT_OPERAND_DIMENSION_VALUE,
                R.POOL_IDENTIFIER,  # another slot is well formed; an unknown slot is the driver's to refuse
                R.MEASURE_TIMING,
            )
            if bad == original or same_kind_value:
                continue
            changed = [*datums[:i], bad, *datums[i + 1 :]]
            _refused(encode_datums(changed))


def test_swapping_two_datums_of_different_kinds_is_refused() -> None:
    datums = request_datums(packet())
    for i in range(len(datums)):
        for j in range(i + 1, len(datums)):
            if datums[i].kind != datums[j].kind:
                swapped = list(datums)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                _refused(encode_datums(swapped))


@pytest.mark.parametrize(
    ("index", "fields"),
    [
        (0, (9, 3, 1, 2)),  # one input too many
        (0, (9, 2, 1, 3)),  # one pool too many
        (0, (9, U32, U32, U32)),  # counts that cannot fit
        (1, (0, 0, 0, 16, 3)),  # three dimensions announced, two follow
        (1, (0, 0, 0, 16, U32)),  # a count that would walk far past the packet
        (1, (2, 0, 0, 16, 2)),  # hasNoValue neither 0 nor 1
    ],
    ids=["inputs", "pools", "huge-counts", "dims", "huge-dims", "bool"],
)
def test_wrong_counts_and_fields_are_refused(index: int, fields: tuple[int, ...]) -> None:
    datums = request_datums(packet())
    datums[index] = Datum(datums[index].kind, fields)
    _refused(encode_datums(datums))


def test_a_measure_timing_that_is_neither_no_nor_yes_is_refused() -> None:
    datums = request_datums(packet())
    datums[-1] = Datum(R.MEASURE_TIMING, (2,))
    _refused(encode_datums(datums))


@pytest.mark.parametrize("byte", [4, 7, 9, 11, 28, 31])
def test_non_zero_padding_in_a_request_is_refused(byte: int) -> None:
    raw = bytearray(serialize_request(packet()))
    raw[DATUM_SIZE + byte] = 1  # inside the first inputOperandInformation
    _refused(bytes(raw))


def test_malformed_results_are_refused() -> None:
    good = result_datums(ErrorStatus.NONE, [OutputShape([2], True)], Timing(1, 2))
    bad_forms = [
        good[:-1],  # no timing
        [*good, Datum(ResultDatum.OPERAND_DIMENSION_VALUE, (1,))],  # extra datum
        [good[0], good[2], good[1], good[3]],  # reordered
        [Datum(ResultDatum.PACKET_INFORMATION, (4, 99, 1)), *good[1:]],  # unknown status
        [good[0], Datum(ResultDatum.OPERAND_INFORMATION, (2, 1)), *good[2:]],  # isSufficient 2
        [good[0], Datum(ResultDatum.OPERAND_INFORMATION, (1, 2)), *good[2:]],  # two dimensions announced
    ]
    for datums in bad_forms:
        with pytest.raises(BurstPacketError):
            deserialize_result(encode_datums(datums))


def test_result_padding_is_refused_strictly_and_reported_leniently() -> None:
    raw = bytearray(serialize_result(ErrorStatus.NONE, [OutputShape([2], True)], Timing(1, 2)))
    raw[DATUM_SIZE + 10] = 0xAB  # a padding byte after isSufficient
    with pytest.raises(BurstPacketError, match="padding"):
        deserialize_result(bytes(raw))
    assert deserialize_result(bytes(raw), strict_padding=False).output_shapes == [OutputShape([2], True)]
    assert unclean_datums(bytes(raw), RESULT) == [1]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: setattr(p.inputs[0], "location", DataLocation(0, 2**32, 16)),
        lambda p: setattr(p.inputs[0], "dimensions", [-1]),
        lambda p: setattr(p, "slots", [2**31, 0]),
        lambda p: setattr(p.outputs[0], "dimensions", ["two"]),
        lambda p: setattr(p, "inputs", [None]),
    ],
    ids=["offset", "negative-dim", "slot", "non-int", "not-an-argument"],
)
def test_values_that_do_not_fit_their_fields_are_refused_at_serialization(mutate) -> None:
    p = packet()
    mutate(p)
    with pytest.raises(BurstPacketError):
        serialize_request(p)


def test_datum_encoders_refuse_unknown_kinds_and_wrong_field_counts() -> None:
    for call in (
        lambda: encode_request_datum(7, 0),
        lambda: encode_request_datum(R.POOL_IDENTIFIER, 1, 2),
        lambda: encode_result_datum(ResultDatum.EXECUTION_TIMING, -1, 0),
    ):
        with pytest.raises(BurstPacketError):
            call()


# --- properties ---------------------------------------------------------------------------------------------

u32s = st.integers(0, U32)
arguments = st.builds(
    RequestArgument,
    st.booleans(),
    st.builds(DataLocation, u32s, u32s, u32s),
    st.lists(u32s, max_size=5),
)
packets = st.builds(
    RequestPacket,
    st.lists(arguments, max_size=4),
    st.lists(arguments, max_size=4),
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4),
    st.sampled_from(list(MeasureTiming)),
)


@settings(max_examples=200)
@given(packets)
def test_every_request_packet_round_trips(p: RequestPacket) -> None:
    raw = serialize_request(p)
    assert deserialize_request(raw) == p
    assert unclean_datums(raw, REQUEST) == []


@settings(max_examples=200)
@given(
    st.sampled_from(list(ErrorStatus)),
    st.lists(st.builds(OutputShape, st.lists(u32s, max_size=4), st.booleans()), max_size=4),
    st.builds(Timing, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
)
def test_every_result_packet_round_trips_with_zero_padding(status, shapes, timing) -> None:
    raw = serialize_result(status, shapes, timing)
    assert unclean_datums(raw, RESULT) == []
    assert deserialize_result(raw) == deserialize_result(raw, strict_padding=False)
    result = deserialize_result(raw)
    assert (result.status, result.output_shapes, result.timing) == (status, shapes, timing)


@settings(max_examples=300)
@given(st.lists(st.binary(min_size=DATUM_SIZE, max_size=DATUM_SIZE), max_size=12), st.binary(max_size=40))
def test_arbitrary_bytes_either_parse_or_raise_burst_packet_error(datums: list[bytes], tail: bytes) -> None:
    for raw in (b"".join(datums), b"".join(datums) + tail):
        for parse in (deserialize_request, deserialize_result):
            try:
                parse(raw)
            except BurstPacketError:
                pass


@settings(max_examples=300)
@given(packets, st.data())
def test_a_packet_with_any_single_byte_changed_parses_to_a_packet_or_is_refused(p: RequestPacket, data) -> None:
    raw = bytearray(serialize_request(p))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] = data.draw(st.integers(0, 255))
    try:
        parsed = deserialize_request(bytes(raw))
    except BurstPacketError:
        return
    # Whatever survives the parser is a well-formed packet: it serializes back to the same bytes.
    assert serialize_request(parsed) == bytes(raw)


# --- the one-pass paths agree with the datum-by-datum ones ------------------------------------------------------


def _outcome(fn, *args) -> object:
    try:
        return fn(*args)
    except BurstPacketError as e:
        return f"refused: {e}"


@settings(max_examples=300)
@given(packets, st.data())
def test_the_one_pass_request_parser_accepts_only_what_the_datum_parser_accepts_alike(p, data) -> None:
    raw = bytearray(serialize_request(p))
    for _ in range(data.draw(st.integers(0, 2))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 255]))
    raw = bytes(raw[: data.draw(st.sampled_from([len(raw), len(raw) - DATUM_SIZE, len(raw) - 1]))])
    fast = burst_wire._parse_request(raw)
    if fast is not None:
        assert fast == burst_wire._deserialize_request_datums(raw)
    assert _outcome(deserialize_request, raw) == _outcome(burst_wire._deserialize_request_datums, raw)


@settings(max_examples=300)
@given(
    st.sampled_from(list(ErrorStatus)),
    st.lists(st.builds(OutputShape, st.lists(u32s, max_size=4), st.booleans()), max_size=4),
    st.builds(Timing, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    st.data(),
)
def test_the_one_pass_result_parser_accepts_only_what_the_datum_parser_accepts_alike(
    status, shapes, timing, data
) -> None:
    raw = bytearray(serialize_result(status, shapes, timing))
    for _ in range(data.draw(st.integers(0, 2))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.sampled_from([0, 1, 2, 3, 255]))
    raw = bytes(raw)
    fast = burst_wire._parse_result(raw)
    for strict in (True, False):
        if fast is not None:
            assert fast == burst_wire._deserialize_result_datums(raw, strict)
        parse = lambda raw, strict: deserialize_result(raw, strict_padding=strict)  # noqa: E731
        assert _outcome(parse, raw, strict) == _outcome(burst_wire._deserialize_result_datums, raw, strict)


@settings(max_examples=200)
@given(packets)
def test_the_one_pass_serializers_write_the_datums_bytes(p: RequestPacket) -> None:
    assert burst_wire._pack_request(p) == encode_datums(request_datums(p))
    shapes = [OutputShape(list(a.dimensions), not a.has_no_value) for a in p.inputs]
    timing = Timing(len(p.slots), 2**64 - 1)
    assert burst_wire._pack_result(ErrorStatus.NONE, shapes, timing) == encode_datums(
        result_datums(ErrorStatus.NONE, shapes, timing)
    )
