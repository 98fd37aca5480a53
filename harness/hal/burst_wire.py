"""The burst wire format (REQUIREMENTS D22): request and result packets as sequences of fixed-size datums.

A datum is DATUM_SIZE (32) bytes, little endian:

    offset  size  field
    0       4     discriminator (u32): which member of the union the datum holds
    4       4     reserved, zero
    8       24    payload: the member's fields packed as below; every byte no field covers is zero

Request datums (the HAL's FmqRequestDatum, in its order):

    0 packetInformation            u32 packetSize, u32 numberOfInputOperands, u32 numberOfOutputOperands,
                                   u32 numberOfPools
    1 inputOperandInformation      u8 hasNoValue, 3 pad, u32 poolIndex, u32 offset, u32 length,
                                   u32 numberOfDimensions
    2 inputOperandDimensionValue   u32
    3 outputOperandInformation     as inputOperandInformation
    4 outputOperandDimensionValue  u32
    5 poolIdentifier               i32 slot
    6 measureTiming                i32 (0 NO, 1 YES)

    packet: packetInformation; per input its information then one dimension datum per dimension; the same for
    the outputs; one poolIdentifier per pool; measureTiming. packetSize counts every datum, itself included.

Result datums (the HAL's FmqResultDatum, in its order):

    0 packetInformation      u32 packetSize, i32 errorStatus, u32 numberOfOperands
    1 operandInformation     u8 isSufficient, 3 pad, u32 numberOfDimensions
    2 operandDimensionValue  u32
    3 executionTiming        u64 timeOnDevice, u64 timeInDriver

    packet: packetInformation; per output shape its information then its dimension datums; executionTiming.

Parsing is strict: a wrong length, an unknown discriminator, a datum out of place, a count that disagrees with
the datums present, a field out of range or a non-zero reserved or padding byte raises BurstPacketError, and
nothing else. Semantic checks (does the request fit the model, are the slots known) are the driver's business.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from harness.hal.enums import ErrorStatus, MeasureTiming
from harness.hal.types import DataLocation, OutputShape, RequestArgument, Timing

DATUM_SIZE = 32
PAYLOAD_OFFSET = 8
PAYLOAD_SIZE = DATUM_SIZE - PAYLOAD_OFFSET
_DISCRIMINATOR = struct.Struct("<I")

U32_MAX = 0xFFFFFFFF
U64_MAX = 0xFFFFFFFFFFFFFFFF
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
# The smallest packets: a request with no arguments and no pools, a result with no shapes.
MIN_REQUEST_DATUMS = 2
MIN_RESULT_DATUMS = 2


class BurstPacketError(ValueError):
    """A packet or datum that does not follow the wire format."""


class RequestDatum(IntEnum):
    """Discriminators of request datums (FmqRequestDatum members, in the HAL's order)."""

    PACKET_INFORMATION = 0
    INPUT_OPERAND_INFORMATION = 1
    INPUT_OPERAND_DIMENSION_VALUE = 2
    OUTPUT_OPERAND_INFORMATION = 3
    OUTPUT_OPERAND_DIMENSION_VALUE = 4
    POOL_IDENTIFIER = 5
    MEASURE_TIMING = 6


class ResultDatum(IntEnum):
    """Discriminators of result datums (FmqResultDatum members, in the HAL's order)."""

    PACKET_INFORMATION = 0
    OPERAND_INFORMATION = 1
    OPERAND_DIMENSION_VALUE = 2
    EXECUTION_TIMING = 3


_OPERAND_INFORMATION = struct.Struct("<B3xIIII")
_REQUEST_PAYLOADS: dict[int, struct.Struct] = {
    RequestDatum.PACKET_INFORMATION: struct.Struct("<IIII"),
    RequestDatum.INPUT_OPERAND_INFORMATION: _OPERAND_INFORMATION,
    RequestDatum.INPUT_OPERAND_DIMENSION_VALUE: struct.Struct("<I"),
    RequestDatum.OUTPUT_OPERAND_INFORMATION: _OPERAND_INFORMATION,
    RequestDatum.OUTPUT_OPERAND_DIMENSION_VALUE: struct.Struct("<I"),
    RequestDatum.POOL_IDENTIFIER: struct.Struct("<i"),
    RequestDatum.MEASURE_TIMING: struct.Struct("<i"),
}
_RESULT_PAYLOADS: dict[int, struct.Struct] = {
    ResultDatum.PACKET_INFORMATION: struct.Struct("<IiI"),
    ResultDatum.OPERAND_INFORMATION: struct.Struct("<B3xI"),
    ResultDatum.OPERAND_DIMENSION_VALUE: struct.Struct("<I"),
    ResultDatum.EXECUTION_TIMING: struct.Struct("<QQ"),
}
assert all(s.size <= PAYLOAD_SIZE for s in (*_REQUEST_PAYLOADS.values(), *_RESULT_PAYLOADS.values()))

# Allowed range of each struct code, for encoding and for strict decoding.
_RANGES = {"B": (0, 0xFF), "I": (0, U32_MAX), "i": (I32_MIN, I32_MAX), "Q": (0, U64_MAX)}


def _field_codes(s: struct.Struct) -> list[str]:
    return [c for c in s.format.lstrip("<") if c.isalpha() and c != "x"]


def _padding_mask(s: struct.Struct) -> bytes:
    """1 for every datum byte no field covers (found by packing all-ones fields: padding stays zero)."""
    ones = [-1 if code == "i" else _RANGES[code][1] for code in _field_codes(s)]
    payload = s.pack(*ones).ljust(PAYLOAD_SIZE, b"\0")
    return bytes(PAYLOAD_OFFSET * [0]) + bytes(1 if b == 0 else 0 for b in payload)


class _Family:
    """One union of datums (requests or results): its discriminators and payload layouts."""

    def __init__(self, name: str, kinds: type[IntEnum], payloads: dict[int, struct.Struct]) -> None:
        self.name = name
        self.kinds = kinds
        self.payloads = payloads
        self.codes = {k: _field_codes(s) for k, s in payloads.items()}
        self.masks = {k: _padding_mask(s) for k, s in payloads.items()}
        # Reserved bytes 4..7 are padding of every datum too.
        self.masks = {k: bytes([0, 0, 0, 0, 1, 1, 1, 1]) + m[PAYLOAD_OFFSET:] for k, m in self.masks.items()}
        # The same masks as integers (0xFF per padding byte), to test a whole datum with one AND.
        self.int_masks = {k: int.from_bytes(bytes(0xFF * b for b in m), "little") for k, m in self.masks.items()}
        self.unknown_mask = int.from_bytes(bytes(4) + bytes([0xFF]) * (DATUM_SIZE - 4), "little")
        # Whole-datum layouts (discriminator, reserved, payload, zero tail) packed or unpacked in one call.
        self.whole = {
            k: struct.Struct(f"<I4x{s.format.lstrip('<')}{PAYLOAD_SIZE - s.size}x") for k, s in payloads.items()
        }
        self.members = {int(k): k for k in kinds}

    def encode(self, kind: int, fields: Sequence[int]) -> bytes:
        whole = self.whole.get(kind)
        if whole is not None:
            try:
                return whole.pack(kind, *fields)
            except (struct.error, TypeError):
                pass  # the checked path below says what is wrong
        return self._encode_checked(kind, fields)

    def _encode_checked(self, kind: int, fields: Sequence[int]) -> bytes:
        if kind not in self.payloads:
            raise BurstPacketError(f"unknown {self.name} datum discriminator {kind}")
        codes = self.codes[kind]
        if len(fields) != len(codes):
            raise BurstPacketError(f"{self.kinds(kind).name} takes {len(codes)} fields, got {len(fields)}")
        values = []
        for code, value in zip(codes, fields):
            try:
                v = operator.index(value)
            except TypeError:
                raise BurstPacketError(f"{self.kinds(kind).name}: field {value!r} is not an integer") from None
            lo, hi = _RANGES[code]
            if not lo <= v <= hi:
                raise BurstPacketError(f"{self.kinds(kind).name}: field {v} is out of range [{lo}, {hi}]")
            values.append(v)
        payload = self.payloads[kind].pack(*values)
        return _DISCRIMINATOR.pack(kind) + bytes(4) + payload.ljust(PAYLOAD_SIZE, b"\0")

    def decode(self, raw: bytes, index: int, *, strict_padding: bool = True) -> Datum:
        (kind,) = _DISCRIMINATOR.unpack_from(raw, 0)
        if kind not in self.payloads:
            raise BurstPacketError(f"datum {index}: unknown {self.name} datum discriminator {kind}")
        if strict_padding and int.from_bytes(raw, "little") & self.int_masks[kind]:
            raise BurstPacketError(f"datum {index}: non-zero padding in a {self.kinds(kind).name} datum")
        return Datum(self.members[kind], self.whole[kind].unpack(raw)[1:])

    def unclean(self, raw: bytes, index: int) -> bool:
        (kind,) = _DISCRIMINATOR.unpack_from(raw, 0)
        return bool(int.from_bytes(raw, "little") & self.int_masks.get(kind, self.unknown_mask))


@dataclass(frozen=True)
class Datum:
    """One decoded datum: its discriminator and the fields of its payload, in wire order."""

    kind: IntEnum
    fields: tuple[int, ...]


REQUEST = _Family("request", RequestDatum, _REQUEST_PAYLOADS)
RESULT = _Family("result", ResultDatum, _RESULT_PAYLOADS)
# Each kind's whole-datum layout without its byte-order prefix, to pack a packet's datums in one call.
_REQUEST_FORMATS = {k: w.format.lstrip("<") for k, w in REQUEST.whole.items()}
_RESULT_FORMATS = {k: w.format.lstrip("<") for k, w in RESULT.whole.items()}
_WORDS = DATUM_SIZE // 4  # a datum is eight little-endian u32 words


def _split(raw: bytes | bytearray | memoryview) -> list[bytes]:
    raw = bytes(raw)
    if not raw or len(raw) % DATUM_SIZE:
        raise BurstPacketError(f"a packet is a non-empty whole number of {DATUM_SIZE}-byte datums, not {len(raw)}")
    return [raw[i : i + DATUM_SIZE] for i in range(0, len(raw), DATUM_SIZE)]


def encode_request_datum(kind: RequestDatum | int, *fields: int) -> bytes:
    """One request datum, padding zeroed; BurstPacketError for an unknown kind or a field out of range."""
    return REQUEST.encode(int(kind), fields)


def encode_result_datum(kind: ResultDatum | int, *fields: int) -> bytes:
    """One result datum, padding zeroed; BurstPacketError for an unknown kind or a field out of range."""
    return RESULT.encode(int(kind), fields)


def decode_request_datums(raw: bytes | bytearray | memoryview) -> list[Datum]:
    """Every datum of a request byte string, each checked on its own (not their order)."""
    return [REQUEST.decode(d, i) for i, d in enumerate(_split(raw))]


def decode_result_datums(raw: bytes | bytearray | memoryview, *, strict_padding: bool = True) -> list[Datum]:
    """Every datum of a result byte string, each checked on its own (not their order)."""
    return [RESULT.decode(d, i, strict_padding=strict_padding) for i, d in enumerate(_split(raw))]


def encode_datums(datums: Sequence[Datum]) -> bytes:
    """The bytes of a sequence of datums (request or result, by their kinds)."""
    family = {RequestDatum: REQUEST, ResultDatum: RESULT}
    return b"".join(family[type(d.kind)].encode(int(d.kind), d.fields) for d in datums)


def announced_size(first: bytes | bytearray | memoryview, family: _Family = REQUEST) -> int:
    """The packetSize a packet's first datum announces; BurstPacketError if it is not a packetInformation."""
    datum = family.decode(bytes(first[:DATUM_SIZE]).ljust(DATUM_SIZE, b"\0"), 0, strict_padding=False)
    if datum.kind != 0:
        raise BurstPacketError(f"a packet starts with packetInformation, not {datum.kind.name}")
    return datum.fields[0]


def unclean_datums(raw: bytes | bytearray | memoryview, family: _Family = RESULT) -> list[int]:
    """Indexes of the datums whose reserved or padding bytes are not all zero."""
    return [i for i, d in enumerate(_split(raw)) if family.unclean(d, i)]


def padding_mask(kind: int, family: _Family = RESULT) -> bytes:
    """Per byte of a datum of this kind: 1 where it is reserved or padding (must be zero), 0 where a field is."""
    return family.masks[kind]


# --- requests ---------------------------------------------------------------------------------------------


@dataclass
class RequestPacket:
    """What a request packet carries: the arguments, one slot per pool and whether to measure timing."""

    inputs: list[RequestArgument] = field(default_factory=list)
    outputs: list[RequestArgument] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    measure: MeasureTiming = MeasureTiming.NO


_ARGUMENT_KINDS = (
    (RequestDatum.INPUT_OPERAND_INFORMATION, RequestDatum.INPUT_OPERAND_DIMENSION_VALUE),
    (RequestDatum.OUTPUT_OPERAND_INFORMATION, RequestDatum.OUTPUT_OPERAND_DIMENSION_VALUE),
)


def request_datums(packet: RequestPacket) -> list[Datum]:
    """The datums of a request packet, in wire order (not range-checked until encoded)."""
    body: list[Datum] = []
    for args, (info, dim) in zip((packet.inputs, packet.outputs), _ARGUMENT_KINDS):
        for arg in args:
            if not isinstance(arg, RequestArgument) or not isinstance(arg.location, DataLocation):
                raise BurstPacketError(f"not a request argument: {arg!r}")
            loc = arg.location
            dims = list(arg.dimensions)
            fields = (bool(arg.has_no_value), loc.pool_index, loc.offset, loc.length, len(dims))
            body.append(Datum(info, fields))
            body.extend(Datum(dim, (d,)) for d in dims)
    body.extend(Datum(RequestDatum.POOL_IDENTIFIER, (s,)) for s in packet.slots)
    body.append(Datum(RequestDatum.MEASURE_TIMING, (packet.measure,)))
    size = 1 + len(body)
    head = Datum(RequestDatum.PACKET_INFORMATION, (size, len(packet.inputs), len(packet.outputs), len(packet.slots)))
    return [head, *body]


def serialize_request(packet: RequestPacket) -> bytes:
    """A request packet's bytes; BurstPacketError if a value does not fit its wire field."""
    raw = _pack_request(packet)
    if raw is not None:
        return raw
    try:
        return encode_datums(request_datums(packet))
    except TypeError as e:
        raise BurstPacketError(f"request cannot be serialized: {e}") from None


def _pack_request(packet: RequestPacket) -> bytes | None:
    """The bytes encode_datums(request_datums(packet)) gives, packed in one call; None if anything is unusual (a
    value out of range, a wrong object), for the datum-by-datum path to report."""
    try:
        formats = [_REQUEST_FORMATS[0]]
        values: list[object] = []
        for args, (info, dim) in zip((packet.inputs, packet.outputs), _ARGUMENT_KINDS):
            for arg in args:
                if arg.__class__ is not RequestArgument or arg.location.__class__ is not DataLocation:
                    return None
                loc = arg.location
                dims = list(arg.dimensions)
                formats.append(_REQUEST_FORMATS[info])
                values += (info, bool(arg.has_no_value), loc.pool_index, loc.offset, loc.length, len(dims))
                for d in dims:
                    formats.append(_REQUEST_FORMATS[dim])
                    values += (dim, d)
        for slot in packet.slots:
            formats.append(_REQUEST_FORMATS[RequestDatum.POOL_IDENTIFIER])
            values += (RequestDatum.POOL_IDENTIFIER, slot)
        formats.append(_REQUEST_FORMATS[RequestDatum.MEASURE_TIMING])
        values += (RequestDatum.MEASURE_TIMING, packet.measure)
        head = (RequestDatum.PACKET_INFORMATION, len(formats), len(packet.inputs), len(packet.outputs))
        return struct.pack("<" + "".join(formats), *head, len(packet.slots), *values)
    except Exception:  # the datum-by-datum path raises the documented error, or explains the value
        return None


class _Cursor:
    """Walks a decoded packet, checking that each datum is of the kind expected at its place."""

    def __init__(self, datums: list[Datum]) -> None:
        self.datums = datums
        self.index = 0

    def take(self, kind: IntEnum, what: str) -> tuple[int, ...]:
        if self.index >= len(self.datums):
            raise BurstPacketError(f"packet ended at datum {self.index}, expected {what} ({kind.name})")
        datum = self.datums[self.index]
        if datum.kind != kind:
            raise BurstPacketError(f"datum {self.index}: expected {kind.name} for {what}, got {datum.kind.name}")
        self.index += 1
        return datum.fields

    def remaining(self) -> int:
        return len(self.datums) - self.index


def _check_header(datums: list[Datum], size: int, counts: Sequence[int], minimum: int) -> None:
    if size != len(datums):
        raise BurstPacketError(f"packetSize {size} but the packet holds {len(datums)} datums")
    # Each counted item takes at least one datum: refuse impossible counts before walking.
    if minimum + sum(counts) > len(datums):
        raise BurstPacketError(f"counts {list(counts)} cannot fit in a packet of {len(datums)} datums")


def _take_argument(cursor: _Cursor, info: IntEnum, dim: IntEnum, what: str) -> RequestArgument:
    has_no_value, pool_index, offset, length, ndims = cursor.take(info, what)
    if has_no_value > 1:
        raise BurstPacketError(f"datum {cursor.index - 1}: hasNoValue is {has_no_value}, not a boolean")
    if ndims > cursor.remaining():
        raise BurstPacketError(f"{what}: numberOfDimensions {ndims} exceeds the {cursor.remaining()} datums left")
    dims = [cursor.take(dim, f"dimension {d} of {what}")[0] for d in range(ndims)]
    return RequestArgument(bool(has_no_value), DataLocation(pool_index, offset, length), dims)


def _words(raw: bytes | bytearray | memoryview) -> tuple[int, ...] | None:
    """The packet as u32 words, or None if it is not a non-empty whole number of datums."""
    raw = bytes(raw)
    if not raw or len(raw) % DATUM_SIZE:
        return None
    return struct.unpack(f"<{len(raw) // 4}I", raw)


def _clean(w: tuple[int, ...], start: int, stop: int) -> bool:
    """True if words [start, stop) are all zero."""
    return not any(w[start:stop])


def _parse_request(raw: bytes | bytearray | memoryview) -> RequestPacket | None:
    """The packet deserialize_request gives for a well-formed request packet, read straight from its words; None
    for anything else, for the strict parser to explain (every check below is one of the strict ones)."""
    w = _words(raw)
    if w is None:
        return None
    end = len(w)
    # packetInformation: packetSize, numberOfInputOperands, numberOfOutputOperands, numberOfPools; words 6-7 pad.
    if w[0] != RequestDatum.PACKET_INFORMATION or w[1] or w[6] or w[7]:
        return None
    size, n_inputs, n_outputs, n_pools = w[2:6]
    if size * _WORDS != end or MIN_REQUEST_DATUMS + n_inputs + n_outputs + n_pools > size:
        return None
    p = _WORDS
    sides: tuple[list[RequestArgument], list[RequestArgument]] = ([], [])
    for (info, dim), count, target in zip(_ARGUMENT_KINDS, (n_inputs, n_outputs), sides):
        for _ in range(count):
            # operandInformation: u8 hasNoValue (its 3 pad bytes make word 2 < 256), poolIndex, offset, length,
            # numberOfDimensions; word 7 pad.
            if p >= end or w[p] != info or w[p + 1] or w[p + 2] > 1 or w[p + 7]:
                return None
            has_no_value, pool_index, offset, length, ndims = w[p + 2 : p + 7]
            p += _WORDS
            if p + ndims * _WORDS > end:
                return None
            dims = []
            for _ in range(ndims):
                if w[p] != dim or w[p + 1] or not _clean(w, p + 3, p + _WORDS):
                    return None
                dims.append(w[p + 2])
                p += _WORDS
            target.append(RequestArgument(bool(has_no_value), DataLocation(pool_index, offset, length), dims))
    slots = []
    for _ in range(n_pools):
        if p >= end or w[p] != RequestDatum.POOL_IDENTIFIER or w[p + 1] or not _clean(w, p + 3, p + _WORDS):
            return None
        slot = w[p + 2]
        slots.append(slot - (1 << 32) if slot > I32_MAX else slot)
        p += _WORDS
    # measureTiming, the last datum.
    if p + _WORDS != end or w[p] != RequestDatum.MEASURE_TIMING or w[p + 1] or not _clean(w, p + 3, end):
        return None
    if w[p + 2] not in (MeasureTiming.NO, MeasureTiming.YES):
        return None
    return RequestPacket(sides[0], sides[1], slots, MeasureTiming(w[p + 2]))


def deserialize_request(raw: bytes | bytearray | memoryview) -> RequestPacket:
    """Parse a request packet strictly; BurstPacketError describes the first thing wrong."""
    packet = _parse_request(raw)
    return packet if packet is not None else _deserialize_request_datums(raw)


def _deserialize_request_datums(raw: bytes | bytearray | memoryview) -> RequestPacket:
    """deserialize_request datum by datum, the way that finds and names the first thing wrong."""
    datums = decode_request_datums(raw)
    cursor = _Cursor(datums)
    size, n_inputs, n_outputs, n_pools = cursor.take(RequestDatum.PACKET_INFORMATION, "the packet header")
    _check_header(datums, size, (n_inputs, n_outputs, n_pools), MIN_REQUEST_DATUMS)
    packet = RequestPacket()
    for count, target, (info, dim), label in (
        (n_inputs, packet.inputs, _ARGUMENT_KINDS[0], "input"),
        (n_outputs, packet.outputs, _ARGUMENT_KINDS[1], "output"),
    ):
        for i in range(count):
            target.append(_take_argument(cursor, info, dim, f"{label} {i}"))
    packet.slots = [cursor.take(RequestDatum.POOL_IDENTIFIER, f"pool {i}")[0] for i in range(n_pools)]
    (measure,) = cursor.take(RequestDatum.MEASURE_TIMING, "measureTiming")
    if measure not in (MeasureTiming.NO, MeasureTiming.YES):
        raise BurstPacketError(f"measureTiming {measure} is neither NO nor YES")
    packet.measure = MeasureTiming(measure)
    if cursor.remaining():
        raise BurstPacketError(f"{cursor.remaining()} datums after measureTiming")
    return packet


# --- results ----------------------------------------------------------------------------------------------


@dataclass
class ResultPacket:
    """What a result packet carries."""

    status: ErrorStatus
    output_shapes: list[OutputShape] = field(default_factory=list)
    timing: Timing = field(default_factory=Timing)


def result_length(output_shapes: Sequence[OutputShape]) -> int:
    """How many datums the result packet of these shapes takes."""
    return MIN_RESULT_DATUMS + sum(1 + len(s.dimensions) for s in output_shapes)


def result_datums(status: ErrorStatus, output_shapes: Sequence[OutputShape], timing: Timing) -> list[Datum]:
    """The datums of a result packet, in wire order (not range-checked until encoded)."""
    body: list[Datum] = []
    for shape in output_shapes:
        dims = list(shape.dimensions)
        body.append(Datum(ResultDatum.OPERAND_INFORMATION, (bool(shape.is_sufficient), len(dims))))
        body.extend(Datum(ResultDatum.OPERAND_DIMENSION_VALUE, (d,)) for d in dims)
    body.append(Datum(ResultDatum.EXECUTION_TIMING, (timing.time_on_device, timing.time_in_driver)))
    head = Datum(ResultDatum.PACKET_INFORMATION, (1 + len(body), int(status), len(output_shapes)))
    return [head, *body]


def _pack_result(status: ErrorStatus, output_shapes: Sequence[OutputShape], timing: Timing) -> bytes | None:
    """The bytes encode_datums(result_datums(...)) gives, packed in one call; None if anything is unusual."""
    try:
        formats = [_RESULT_FORMATS[0]]
        values: list[object] = []
        for shape in output_shapes:
            dims = list(shape.dimensions)
            formats.append(_RESULT_FORMATS[ResultDatum.OPERAND_INFORMATION])
            values += (ResultDatum.OPERAND_INFORMATION, bool(shape.is_sufficient), len(dims))
            for d in dims:
                formats.append(_RESULT_FORMATS[ResultDatum.OPERAND_DIMENSION_VALUE])
                values += (ResultDatum.OPERAND_DIMENSION_VALUE, d)
        formats.append(_RESULT_FORMATS[ResultDatum.EXECUTION_TIMING])
        values += (ResultDatum.EXECUTION_TIMING, timing.time_on_device, timing.time_in_driver)
        head = (ResultDatum.PACKET_INFORMATION, len(formats), int(status), len(output_shapes))
        return struct.pack("<" + "".join(formats), *head, *values)
    except Exception:  # the datum-by-datum path raises the documented error
        return None


def serialize_result(status: ErrorStatus, output_shapes: Sequence[OutputShape], timing: Timing) -> bytes:
    """A result packet's bytes, every padding byte zero; BurstPacketError if a value does not fit its field."""
    raw = _pack_result(status, output_shapes, timing)
    if raw is not None:
        return raw
    try:
        return encode_datums(result_datums(status, output_shapes, timing))
    except (TypeError, ValueError) as e:
        if isinstance(e, BurstPacketError):
            raise
        raise BurstPacketError(f"result cannot be serialized: {e}") from None


def deserialize_result(raw: bytes | bytearray | memoryview, *, strict_padding: bool = True) -> ResultPacket:
    """Parse a result packet strictly; BurstPacketError describes the first thing wrong.

    With strict_padding=False non-zero padding is tolerated (check it with unclean_datums), so a client can
    still read a result whose only fault is its padding.
    """
    packet = _parse_result(raw)
    return packet if packet is not None else _deserialize_result_datums(raw, strict_padding)


def _deserialize_result_datums(raw: bytes | bytearray | memoryview, strict_padding: bool) -> ResultPacket:
    """deserialize_result datum by datum, the way that finds and names the first thing wrong."""
    datums = decode_result_datums(raw, strict_padding=strict_padding)
    cursor = _Cursor(datums)
    size, status, n_operands = cursor.take(ResultDatum.PACKET_INFORMATION, "the packet header")
    _check_header(datums, size, (n_operands,), MIN_RESULT_DATUMS)
    try:
        error_status = ErrorStatus(status)
    except ValueError:
        raise BurstPacketError(f"errorStatus {status} is not an ErrorStatus") from None
    shapes = []
    for i in range(n_operands):
        sufficient, ndims = cursor.take(ResultDatum.OPERAND_INFORMATION, f"output shape {i}")
        if sufficient > 1:
            raise BurstPacketError(f"datum {cursor.index - 1}: isSufficient is {sufficient}, not a boolean")
        if ndims > cursor.remaining():
            raise BurstPacketError(f"output shape {i}: numberOfDimensions {ndims} exceeds the datums left")
        dim = ResultDatum.OPERAND_DIMENSION_VALUE
        dims = [cursor.take(dim, f"dimension {d} of shape {i}")[0] for d in range(ndims)]
        shapes.append(OutputShape(dims, bool(sufficient)))
    on_device, in_driver = cursor.take(ResultDatum.EXECUTION_TIMING, "executionTiming")
    if cursor.remaining():
        raise BurstPacketError(f"{cursor.remaining()} datums after executionTiming")
    return ResultPacket(error_status, shapes, Timing(on_device, in_driver))


def _parse_result(raw: bytes | bytearray | memoryview) -> ResultPacket | None:
    """The packet deserialize_result gives for a well-formed result packet whose padding is all zero (so either
    padding mode accepts it), read straight from its words; None for anything else, for the strict parser."""
    w = _words(raw)
    if w is None:
        return None
    end = len(w)
    # packetInformation: packetSize, i32 errorStatus, numberOfOperands; words 5-7 pad.
    if w[0] != ResultDatum.PACKET_INFORMATION or w[1] or not _clean(w, 5, _WORDS):
        return None
    size, status, n_operands = w[2:5]
    if size * _WORDS != end or MIN_RESULT_DATUMS + n_operands > size:
        return None
    try:
        error_status = ErrorStatus(status - (1 << 32) if status > I32_MAX else status)
    except ValueError:
        return None
    p = _WORDS
    shapes = []
    for _ in range(n_operands):
        # operandInformation: u8 isSufficient (3 pad bytes), numberOfDimensions; words 4-7 pad.
        if p >= end or w[p] != ResultDatum.OPERAND_INFORMATION or w[p + 1] or w[p + 2] > 1:
            return None
        if not _clean(w, p + 4, p + _WORDS):
            return None
        sufficient, ndims = w[p + 2], w[p + 3]
        p += _WORDS
        if p + ndims * _WORDS > end:
            return None
        dims = []
        for _ in range(ndims):
            if w[p] != ResultDatum.OPERAND_DIMENSION_VALUE or w[p + 1] or not _clean(w, p + 3, p + _WORDS):
                return None
            dims.append(w[p + 2])
            p += _WORDS
        shapes.append(OutputShape(dims, bool(sufficient)))
    # executionTiming, the last datum: two u64; words 6-7 pad.
    if p + _WORDS != end or w[p] != ResultDatum.EXECUTION_TIMING or w[p + 1] or w[p + 6] or w[p + 7]:
        return None
    timing = Timing(w[p + 2] | w[p + 3] << 32, w[p + 4] | w[p + 5] << 32)
    return ResultPacket(error_status, shapes, timing)
