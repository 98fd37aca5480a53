"""Burst sessions and request packet mutations (REQUIREMENTS D20-D22).

A burst session is JSON: {"resultChannel": n | None, "steps": [step, ...]}. Steps are run in order on one burst:

    {"do": "run", "measure": bool}                  a valid request over the burst
    {"do": "packet", "mutation": m, "measure": b}   the valid request's packet, broken by mutation m
    {"do": "renew", "which": w, "free": bool}       new memories for the pools `w` ("outputs" or "all"), after
                                                    freeMemory of the old ones when `free` (their slots are then
                                                    reused for the new memories)
    {"do": "free_unknown", "slot": s}               freeMemory of a slot that was never used (no effect)
    {"do": "release"}                               release the burst; a request after it must not be served

Every "packet" step is followed by a "run" step: the listener must keep serving after a malformed packet.

A mutation works on the datums of a serialized request (positions taken modulo the packet's length when
applied, so it is drawn without knowing the packet): remove, insert or replace a datum with one of the HAL
conformance suite's bad datums, change a count or an operand's numberOfDimensions (with packetSize fixed up or
not), drop a dimension, name an unknown slot, an invalid measureTiming, an unknown discriminator, a field set to an
arbitrary value, a truncated packet. `judge_packet` says what a driver must do with the result: refuse it
(malformed, unknown slot), execute it as the original request, or anything well formed (it became another
request).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.gen.source import Source
from harness.hal import MeasureTiming
from harness.hal.burst_wire import (
    DATUM_SIZE,
    I32_MAX,
    REQUEST,
    U32_MAX,
    BurstPacketError,
    RequestDatum,
    RequestPacket,
    decode_request_datums,
    deserialize_request,
    encode_request_datum,
    padding_mask,
    unclean_datums,
)

__all__ = [
    "BAD_DATUMS",
    "BurstSessionConfig",
    "PacketJudgement",
    "apply_mutation",
    "clean_padding",
    "generate_mutation",
    "generate_session",
    "judge_packet",
    "split_datums",
]

D = RequestDatum
# The conformance suite's bad datums: one of each kind, each wrong wherever it is inserted or substituted.
BAD_DATUMS: tuple[tuple[RequestDatum, tuple[int, ...]], ...] = (
    (D.PACKET_INFORMATION, (10, 10, 10, 10)),
    (D.INPUT_OPERAND_INFORMATION, (0, 0, 0, 0, 10)),
    (D.INPUT_OPERAND_DIMENSION_VALUE, (0,)),
    (D.OUTPUT_OPERAND_INFORMATION, (0, 0, 0, 0, 10)),
    (D.OUTPUT_OPERAND_DIMENSION_VALUE, (0,)),
    (D.POOL_IDENTIFIER, (I32_MAX,)),
    (D.MEASURE_TIMING, (int(MeasureTiming.YES),)),
)
_INFO = (D.INPUT_OPERAND_INFORMATION, D.OUTPUT_OPERAND_INFORMATION)
_DIMS = (D.INPUT_OPERAND_DIMENSION_VALUE, D.OUTPUT_OPERAND_DIMENSION_VALUE)
_POSITIONS = 1 << 12  # positions are drawn in [0, _POSITIONS) and taken modulo the packet's length
_UNKNOWN_SLOTS = (I32_MAX, -1, 1 << 20, 4096)


@dataclass(frozen=True)
class BurstSessionConfig:
    """What generate_session may draw."""

    max_steps: int = 6  # steps drawn (each "packet" step also brings its "run" step)
    small_channel_probability: float = 0.15  # the result channel holds only 2..16 datums
    step_weights: tuple[tuple[str, int], ...] = (
        ("run", 3),
        ("packet", 5),
        ("renew", 3),
        ("free_unknown", 1),
    )
    release_probability: float = 0.15  # the session ends by releasing the burst


# --- generation -----------------------------------------------------------------------------------------------


def _weighted(src: Source, table: Sequence[tuple[str, int]]) -> str:
    return src.choice([name for name, weight in table for _ in range(weight)])


def generate_mutation(source: Source) -> dict:
    """One request packet mutation, as JSON."""
    op = source.choice(
        (
            "remove",
            "insert",
            "replace",
            "replace",
            "count",
            "dimensions",
            "drop_dimension",
            "drop_dimension",
            "unknown_slot",
            "measure",
            "discriminator",
            "field",
            "truncate",
        )
    )
    at = source.integer(0, _POSITIONS - 1)
    if op == "remove":
        return {"op": op, "index": at, "fixSize": source.boolean()}
    if op == "insert":
        return {"op": op, "index": at, "bad": source.integer(0, len(BAD_DATUMS) - 1), "fixSize": source.boolean()}
    if op == "replace":
        return {"op": op, "index": at, "bad": source.integer(0, len(BAD_DATUMS) - 1)}
    if op == "count":
        return {"op": op, "field": source.integer(0, 3), "delta": source.choice((-2, -1, 1, 2, 1000))}
    if op in ("dimensions", "drop_dimension"):
        mutation = {"op": op, "argument": at, "fixSize": op == "drop_dimension" or source.boolean()}
        if op == "dimensions":
            mutation["delta"] = source.choice((-1, 1, 2))
        return mutation
    if op == "unknown_slot":
        return {"op": op, "pool": at, "slot": source.choice(_UNKNOWN_SLOTS)}
    if op == "measure":
        return {"op": op, "value": source.choice((2, -1, I32_MAX))}
    if op == "discriminator":
        return {"op": op, "index": at, "value": source.choice((7, 8, 255, U32_MAX))}
    if op == "field":
        return {"op": op, "index": at, "field": source.integer(0, 4), "value": source.integer(0, U32_MAX)}
    return {"op": "truncate", "keep": at}


def generate_session(source: Source, config: BurstSessionConfig | None = None) -> dict:
    """A burst session, as JSON (see the module docstring)."""
    cfg = config or BurstSessionConfig()
    small = source.integer(0, 999) < cfg.small_channel_probability * 1000
    steps: list[dict] = []
    for _ in range(source.integer(1, cfg.max_steps)):
        kind = _weighted(source, cfg.step_weights)
        if kind == "run":
            steps.append({"do": "run", "measure": source.boolean()})
        elif kind == "packet":
            steps.append({"do": "packet", "mutation": generate_mutation(source), "measure": source.boolean()})
            steps.append({"do": "run", "measure": source.boolean()})
        elif kind == "renew":
            which = source.choice(("outputs", "all"))
            steps.append({"do": "renew", "which": which, "free": source.integer(0, 3) > 0})
            steps.append({"do": "run", "measure": False})
        else:
            steps.append({"do": "free_unknown", "slot": source.choice(_UNKNOWN_SLOTS)})
    if source.integer(0, 999) < cfg.release_probability * 1000:
        steps.append({"do": "release"})
    return {"resultChannel": source.integer(2, 16) if small else None, "steps": steps}


# --- application ----------------------------------------------------------------------------------------------


def split_datums(raw: bytes) -> list[bytes]:
    """The datums of a packet (a trailing partial datum is padded with zeros)."""
    raw = bytes(raw)
    if len(raw) % DATUM_SIZE:
        raw += bytes(DATUM_SIZE - len(raw) % DATUM_SIZE)
    return [raw[i : i + DATUM_SIZE] for i in range(0, len(raw), DATUM_SIZE)]


def _kind(datum: bytes) -> int:
    return int.from_bytes(datum[:4], "little")


def _fields(datum: bytes) -> list[int]:
    return list(decode_request_datums(clean_padding(datum))[0].fields)


def _with_fields(datum: bytes, fields: Sequence[int]) -> bytes:
    return encode_request_datum(_kind(datum), *fields)


def _fix_size(datums: list[bytes]) -> None:
    """Set packetSize to the number of datums (when the first datum is a packetInformation)."""
    if datums and _kind(datums[0]) == D.PACKET_INFORMATION:
        fields = _fields(datums[0])
        fields[0] = len(datums)
        datums[0] = _with_fields(datums[0], fields)


def _bad(k: int) -> bytes:
    kind, fields = BAD_DATUMS[k % len(BAD_DATUMS)]
    return encode_request_datum(kind, *fields)


def _arguments(datums: list[bytes]) -> list[int]:
    """Indexes of the operand information datums."""
    return [i for i, d in enumerate(datums) if _kind(d) in _INFO]


def _remove(datums: list[bytes], op: dict) -> None:
    if len(datums) > 1:
        del datums[op["index"] % len(datums)]
        if op.get("fixSize"):
            _fix_size(datums)


def _insert(datums: list[bytes], op: dict) -> None:
    datums.insert(op["index"] % (len(datums) + 1), _bad(op["bad"]))
    if op.get("fixSize"):
        _fix_size(datums)


def _replace(datums: list[bytes], op: dict) -> None:
    datums[op["index"] % len(datums)] = _bad(op["bad"])


def _count(datums: list[bytes], op: dict) -> None:
    if _kind(datums[0]) != D.PACKET_INFORMATION:
        return
    fields = _fields(datums[0])
    k = op["field"] % 4
    fields[k] = max(0, min(U32_MAX, fields[k] + op["delta"]))
    datums[0] = _with_fields(datums[0], fields)


def _dimensions(datums: list[bytes], op: dict) -> None:
    infos = _arguments(datums)
    if not infos:
        return
    i = infos[op["argument"] % len(infos)]
    fields = _fields(datums[i])
    fields[4] = max(0, min(U32_MAX, fields[4] + op["delta"]))
    datums[i] = _with_fields(datums[i], fields)
    if op.get("fixSize"):
        _fix_size(datums)


def _drop_dimension(datums: list[bytes], op: dict) -> None:
    """Remove one dimension datum of an operand that has some (its numberOfDimensions unchanged)."""
    with_dims = [i for i in _arguments(datums) if i + 1 < len(datums) and _kind(datums[i + 1]) in _DIMS]
    if not with_dims:
        return
    i = with_dims[op["argument"] % len(with_dims)]
    del datums[i + 1]
    if op.get("fixSize", True):
        _fix_size(datums)


def _unknown_slot(datums: list[bytes], op: dict) -> None:
    pools = [i for i, d in enumerate(datums) if _kind(d) == D.POOL_IDENTIFIER]
    if pools:
        datums[pools[op["pool"] % len(pools)]] = encode_request_datum(D.POOL_IDENTIFIER, op["slot"])


def _measure(datums: list[bytes], op: dict) -> None:
    if _kind(datums[-1]) == D.MEASURE_TIMING:
        datums[-1] = encode_request_datum(D.MEASURE_TIMING, op["value"])


def _discriminator(datums: list[bytes], op: dict) -> None:
    i = op["index"] % len(datums)
    datums[i] = op["value"].to_bytes(4, "little") + datums[i][4:]


def _field(datums: list[bytes], op: dict) -> None:
    i = op["index"] % len(datums)
    fields = _fields(datums[i])
    k = op["field"] % len(fields)
    value = op["value"]
    kind = _kind(datums[i])
    if kind in _INFO and k == 0:
        value %= 256  # hasNoValue is a byte
    elif kind in (D.POOL_IDENTIFIER, D.MEASURE_TIMING):
        value = value - (1 << 32) if value > I32_MAX else value
    fields[k] = value
    datums[i] = _with_fields(datums[i], fields)


def _truncate(datums: list[bytes], op: dict) -> None:
    if len(datums) > 1:
        del datums[max(1, op["keep"] % len(datums)) :]


_OPS: dict[str, Callable[[list[bytes], dict], None]] = {
    "remove": _remove,
    "insert": _insert,
    "replace": _replace,
    "count": _count,
    "dimensions": _dimensions,
    "drop_dimension": _drop_dimension,
    "unknown_slot": _unknown_slot,
    "measure": _measure,
    "discriminator": _discriminator,
    "field": _field,
    "truncate": _truncate,
}


def apply_mutation(packet: bytes, mutation: dict) -> bytes:
    """The packet's bytes with the mutation applied (ValueError for an unknown operation)."""
    apply = _OPS.get(mutation.get("op"))
    if apply is None:
        raise ValueError(f"unknown packet mutation {mutation.get('op')!r}")
    datums = split_datums(packet)
    if datums:
        apply(datums, mutation)
    return b"".join(datums)


# --- judging --------------------------------------------------------------------------------------------------


def clean_padding(raw: bytes) -> bytes:
    """The packet with the reserved and padding bytes of every datum of a known kind zeroed.

    Non-zero padding in a request is not what makes a packet malformed: a driver may ignore it.
    """
    out = bytearray()
    for datum in split_datums(raw):
        keep = _KEEP.get(_kind(datum))
        if keep is not None:
            datum = (int.from_bytes(datum, "little") & keep).to_bytes(DATUM_SIZE, "little")
        out += datum
    return bytes(out)


# Per request datum kind: an integer mask of the bytes that are not padding (0xFF per field byte).
_KEEP = {
    kind: int.from_bytes(bytes(0 if m else 0xFF for m in padding_mask(kind, REQUEST)), "little")
    for kind in REQUEST.payloads
}


MALFORMED = "malformed"  # the wire format is broken: an error result, no shapes, no timing
UNKNOWN_SLOT = "unknown_slot"  # a slot the client's callback does not know: an error result
SAME = "same"  # the original request (measureTiming may differ): executed as it would be synchronously
OTHER = "other"  # a well-formed packet of another request: any well-formed result


@dataclass(frozen=True)
class PacketJudgement:
    """What a driver must do with a packet, why, and the packet as parsed (None when malformed)."""

    expect: str
    reason: str
    parsed: RequestPacket | None = None
    # Non-zero padding in a packet that is otherwise well formed: a strict driver may refuse it as malformed.
    dirty: bool = False


def judge_packet(packet: bytes, original: RequestPacket | None, known_slots: Sequence[int]) -> PacketJudgement:
    """What the driver must answer to `packet`, compared with the request it was made from (if any)."""
    if not packet:
        return PacketJudgement(MALFORMED, "an empty packet")
    try:
        parsed = deserialize_request(clean_padding(packet))
    except BurstPacketError as e:
        return PacketJudgement(MALFORMED, str(e))
    dirty = bool(unclean_datums(packet, REQUEST))
    unknown = [s for s in parsed.slots if s not in known_slots]
    if unknown:
        return PacketJudgement(UNKNOWN_SLOT, f"slots {unknown} are unknown to the client", parsed, dirty)
    if original is not None and (parsed.inputs, parsed.outputs, parsed.slots) == (
        original.inputs,
        original.outputs,
        original.slots,
    ):
        return PacketJudgement(SAME, "the original request", parsed, dirty)
    return PacketJudgement(OTHER, "a well-formed packet of another request", parsed, dirty)
