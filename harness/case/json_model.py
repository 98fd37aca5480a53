"""Models in the case format (the conformance vectors' JSON schema, extended) <-> harness.hal.Model.

Model keys: "operands", "operations", "inputIndexes", "outputIndexes" (the main subgraph),
"relaxComputationFloat32toFloat16", and when used: "referenced" (subgraphs with the same four keys), "pools"
(see harness.case.pools), "extensionNameToPrefix" [{"name", "prefix"}] and "operandValues".

Operand keys: "type" and "lifetime" (HAL names, or integers for values the HAL does not name), "dimensions",
"scale", "zeroPoint", and when used: "numberOfConsumers" (absent = the number of operation inputs that name the
operand in its subgraph), "location" {"poolIndex", "offset", "length"} (missing keys are 0), "channelQuant"
{"channelDim", "scales"}, "extensionParams" (hex), "value" (a flat list; "nan"/"inf"/"-inf" for non-finite
floats) or "valueHex" (raw bytes, for values a list cannot carry exactly). A "scale" that is not a number (a
malformed operand, D25) is written {"raw": value} and read back as that JSON value itself.

Constants: CONSTANT_COPY values are packed into operandValues in operand order (main, then referenced
subgraphs), each at a 4-byte aligned offset, and need no "location". A model whose operandValues do not follow
that layout (a mutated one) is written with "operandValues" (hex) and an explicit "location" on every
CONSTANT_COPY operand; their "value" is then informational. CONSTANT_REFERENCE operands carry a "location" into
"pools" and their "value" is written there. SUBGRAPH operands carry {"offset": index into "referenced"}.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum

from harness.case._shared_bytes import Placed, disagreement
from harness.case.pools import pool_from_json, pool_to_json
from harness.case.values import (
    float_from_json,
    float_to_json,
    json_values_round_trip,
    pack,
    to_json_values,
)
from harness.hal import (
    DataLocation,
    ExtensionNameAndPrefix,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
    SymmPerChannelQuantParams,
    numpy_dtype,
)
from harness.hal.memory import Memory, MemoryBoundsError, MemoryMapError
from harness.hal.values import constant_bytes, unpack

# Each CONSTANT_COPY value starts at a multiple of this in operandValues.
CONSTANT_ALIGNMENT = 4


class CaseFormatError(ValueError):
    """A case or model JSON that does not follow the case format."""


def _aligned(n: int) -> int:
    return -(-n // CONSTANT_ALIGNMENT) * CONSTANT_ALIGNMENT


# Per enum, name -> member and value -> name: a dict lookup where an enum call costs a microsecond per operand.
_MEMBERS: dict[type[IntEnum], dict[str, IntEnum]] = {}
_NAMES: dict[type[IntEnum], dict[int, str]] = {}
for _enum in (OperandType, OperandLifeTime, OperationType):
    _MEMBERS[_enum] = dict(_enum.__members__)
    _NAMES[_enum] = {int(m): m.name for m in _enum}


def _enum_from_json(enum: type[IntEnum], value: object, what: str) -> int:
    if isinstance(value, str):
        member = _MEMBERS[enum].get(value)
        if member is None:
            raise CaseFormatError(f"unknown {what} {value!r}")
        return member
    if isinstance(value, bool) or not isinstance(value, int):
        raise CaseFormatError(f"{what} must be a name or an integer, got {value!r}")
    try:
        return enum(value)
    except ValueError:
        return value  # a value the HAL does not name (extension or deliberately invalid)


def _enum_to_json(enum: type[IntEnum], value: int) -> str | int:
    try:
        return _NAMES[enum][value]
    except (KeyError, TypeError):
        pass
    try:
        return enum(value).name
    except ValueError:
        return int(value)


_INT_ONLY = frozenset({int})


def _int_list(values: object) -> list[int]:
    if not isinstance(values, list):
        raise CaseFormatError(f"expected a list of integers, got {values!r}")
    if _INT_ONLY.issuperset(map(type, values)):
        return list(values)
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise CaseFormatError(f"expected an integer, got {v!r}")
        out.append(v)
    return out


def _location_from_json(d: dict, default_length: int = 0) -> DataLocation:
    if d == {}:
        return DataLocation(0, 0, int(default_length))
    return DataLocation(int(d.get("poolIndex", 0)), int(d.get("offset", 0)), int(d.get("length", default_length)))


def _consumer_counts(subgraph_operations: list[Operation], n_operands: int) -> list[int]:
    counts = [0] * n_operands
    for operation in subgraph_operations:
        for i in operation.inputs:
            if 0 <= i < n_operands:
                counts[i] += 1
    return counts


class _ModelReader:
    """Builds one Model: keeps the growing operandValues and the pools CONSTANT_REFERENCE values go to."""

    def __init__(self, d: dict) -> None:
        self.explicit_values = "operandValues" in d
        self.operand_values = bytearray(bytes.fromhex(d["operandValues"]) if self.explicit_values else b"")
        self.pools: list[Memory] = [pool_from_json(p) for p in d.get("pools", [])]
        self.references: list[Placed] = []  # the CONSTANT_REFERENCE values written so far

    def subgraph(self, d: dict) -> Subgraph:
        operations = [self.operation(o) for o in d.get("operations", [])]
        operand_dicts = d.get("operands", [])
        counts = _consumer_counts(operations, len(operand_dicts))
        operands = [self.operand(i, od, counts[i]) for i, od in enumerate(operand_dicts)]
        return Subgraph(
            operands, operations, _int_list(d.get("inputIndexes", [])), _int_list(d.get("outputIndexes", []))
        )

    def operation(self, d: dict) -> Operation:
        return Operation(
            _enum_from_json(OperationType, d["type"], "operation type"), _int_list(d["inputs"]), _int_list(d["outputs"])
        )

    def operand(self, index: int, d: dict, consumers: int) -> Operand:
        operand_type = _enum_from_json(OperandType, d["type"], "operand type")
        lifetime = _enum_from_json(OperandLifeTime, d["lifetime"], "lifetime")
        raw = self.value_bytes(index, d, operand_type)
        if lifetime == OperandLifeTime.CONSTANT_COPY and not self.explicit_values:
            if raw is None:
                raise CaseFormatError(f"CONSTANT_COPY operand {index} has no value")
            location = self.append_copy(raw)
        elif lifetime == OperandLifeTime.CONSTANT_REFERENCE:
            location = _location_from_json(d.get("location", {}), len(raw) if raw is not None else 0)
            if raw is not None:
                self.write_reference(index, location, raw)
        else:
            location = _location_from_json(d.get("location", {}))
        # Positional arguments, in Operand's field order (type, dimensions, number_of_consumers, scale, zero_point,
        # lifetime, location, extra_params): keywords cost a noticeable share of building an operand.
        return Operand(
            operand_type,
            _int_list(d.get("dimensions", [])),
            int(d.get("numberOfConsumers", consumers)),
            _scale_from_json(d.get("scale", 0.0)),
            int(d.get("zeroPoint", 0)),
            lifetime,
            location,
            self.extra_params(index, d),
        )

    @staticmethod
    def value_bytes(index: int, d: dict, operand_type: int) -> bytes | None:
        if "valueHex" in d:
            return bytes.fromhex(d["valueHex"])
        if "value" not in d:
            return None
        try:
            return pack(d["value"], operand_type)
        except ValueError as e:
            raise CaseFormatError(f"operand {index}: {e}") from None

    @staticmethod
    def extra_params(index: int, d: dict) -> SymmPerChannelQuantParams | bytes | None:
        if "channelQuant" not in d and "extensionParams" not in d:
            return None
        if "channelQuant" in d and "extensionParams" in d:
            raise CaseFormatError(f"operand {index} has both channelQuant and extensionParams")
        if "channelQuant" in d:
            cq = d["channelQuant"]
            return SymmPerChannelQuantParams(
                scales=[float_from_json(s) for s in cq.get("scales", [])], channel_dim=int(cq.get("channelDim", 0))
            )
        if "extensionParams" in d:
            return bytes.fromhex(d["extensionParams"])
        return None

    def append_copy(self, raw: bytes) -> DataLocation:
        offset = _aligned(len(self.operand_values))
        self.operand_values.extend(bytes(offset - len(self.operand_values)))
        self.operand_values.extend(raw)
        return DataLocation(0, offset, len(raw))

    def write_reference(self, index: int, location: DataLocation, raw: bytes) -> None:
        if len(raw) != location.length:
            raise CaseFormatError(
                f"CONSTANT_REFERENCE operand {index}: value has {len(raw)} bytes, location length {location.length}"
            )
        if not 0 <= location.pool_index < len(self.pools):
            raise CaseFormatError(f"CONSTANT_REFERENCE operand {index}: pool {location.pool_index} does not exist")
        self.check_shared_bytes(index, location, raw)
        try:
            self.pools[location.pool_index].write(location.offset, raw)
        except (MemoryBoundsError, MemoryMapError) as e:
            raise CaseFormatError(f"CONSTANT_REFERENCE operand {index}: {e}") from None
        self.references.append((index, location.pool_index, location.offset, raw))

    def check_shared_bytes(self, index: int, location: DataLocation, raw: bytes) -> None:
        """Constants may share bytes of a pool only where their values agree: otherwise what the model holds is
        not what its JSON says."""
        found = disagreement(self.references, location.pool_index, location.offset, raw)
        if found is not None:
            other, lo, hi = found
            raise CaseFormatError(
                f"CONSTANT_REFERENCE operands {other} and {index} share bytes {lo}..{hi - 1} of pool "
                f"{location.pool_index} with different values there"
            )


@contextmanager
def _format_errors() -> Iterator[None]:
    """Any error reading malformed JSON surfaces as a CaseFormatError."""
    try:
        yield
    except CaseFormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CaseFormatError(f"invalid model JSON: {type(e).__name__}: {e}") from e


def model_from_json(d: dict) -> Model:
    """A hal.Model built from its case-format JSON (new zero-filled pools hold the CONSTANT_REFERENCE values)."""
    with _format_errors():
        reader = _ModelReader(d)
        main = reader.subgraph(d)
        referenced = [reader.subgraph(s) for s in d.get("referenced", [])]
        return Model(
            main=main,
            referenced=referenced,
            operand_values=bytes(reader.operand_values),
            pools=reader.pools,
            relax_computation_float32_to_float16=bool(d.get("relaxComputationFloat32toFloat16", False)),
            extension_name_to_prefix=[
                ExtensionNameAndPrefix(str(e["name"]), int(e["prefix"])) for e in d.get("extensionNameToPrefix", [])
            ],
        )


def pools_from_json(d: dict) -> list[Memory]:
    """The pools model_from_json(d) builds: new, zero-filled, holding every CONSTANT_REFERENCE value."""
    with _format_errors():
        reader = _ModelReader(d)
        for subgraph in [d, *d.get("referenced", [])]:
            for index, od in enumerate(subgraph.get("operands", [])):
                lifetime = _enum_from_json(OperandLifeTime, od["lifetime"], "lifetime")
                if lifetime != OperandLifeTime.CONSTANT_REFERENCE:
                    continue
                raw = reader.value_bytes(index, od, _enum_from_json(OperandType, od["type"], "operand type"))
                if raw is not None:
                    reader.write_reference(index, _location_from_json(od.get("location", {}), len(raw)), raw)
        return reader.pools


def _copy_layout_is_canonical(model: Model, copies: dict[int, bytes | None] | None = None) -> bool:
    """True when operandValues and CONSTANT_COPY locations are exactly what model_from_json would lay out.

    `copies`, when given, receives each CONSTANT_COPY operand's bytes by id(operand) (read once, used twice).
    """
    expected = bytearray()
    for subgraph in [model.main, *model.referenced]:
        for operand in subgraph.operands:
            if operand.lifetime != OperandLifeTime.CONSTANT_COPY:
                continue
            raw = constant_bytes(model, operand.lifetime, operand.location)
            if copies is not None:
                copies[id(operand)] = raw
            if raw is None:
                return False
            offset = _aligned(len(expected))
            loc = operand.location
            if (loc.pool_index, loc.offset, loc.length) != (0, offset, len(raw)):
                return False
            expected.extend(bytes(offset - len(expected)))
            expected.extend(raw)
    return bytes(expected) == bytes(model.operand_values)


def _location_to_json(loc: DataLocation, keep: tuple[str, ...] = ()) -> dict:
    if not keep and not (loc.pool_index or loc.offset or loc.length):
        return {}
    full = {"poolIndex": loc.pool_index, "offset": loc.offset, "length": loc.length}
    return {k: v for k, v in full.items() if v or k in keep}


def _value_to_json(raw: bytes, operand_type: int) -> tuple[str, list | str]:
    try:
        numpy_dtype(operand_type)
    except ValueError:
        return "valueHex", raw.hex()
    if not json_values_round_trip(raw, operand_type):
        return "valueHex", raw.hex()
    return "value", to_json_values(unpack(raw, operand_type))


def _extra_params_to_json(extra: object) -> dict:
    if extra is None:
        return {}
    if isinstance(extra, SymmPerChannelQuantParams):
        return {"channelQuant": {"channelDim": extra.channel_dim, "scales": [float_to_json(s) for s in extra.scales]}}
    return {"extensionParams": bytes(extra).hex()}  # type: ignore[arg-type]


_ALL_LOCATION_KEYS = ("poolIndex", "offset", "length")
# Which location keys an operand always carries, by lifetime, when the copy layout is canonical.
_LOCATION_KEYS: dict[int, tuple[str, ...]] = {
    OperandLifeTime.CONSTANT_REFERENCE: _ALL_LOCATION_KEYS,
    OperandLifeTime.SUBGRAPH: ("offset",),
}


def _scale_to_json(scale: object) -> object:
    """A scale as JSON: a number as usual, anything else (a malformed operand's) wrapped as {"raw": value}."""
    if isinstance(scale, numbers.Real):
        return float_to_json(float(scale))
    return {"raw": scale}


def _scale_from_json(x: object) -> object:
    """A scale from JSON: a number, or the value a {"raw": value} wrapper carries, unconverted."""
    if isinstance(x, dict) and "raw" in x:
        return x["raw"]
    return float_from_json(x)


def _operand_to_json(
    model: Model, operand: Operand, consumers: int, canonical: bool, copies: dict[int, bytes | None]
) -> dict:
    lifetime = operand.lifetime
    d: dict = {
        "type": _enum_to_json(OperandType, operand.type),
        "dimensions": list(map(int, operand.dimensions)),
        "scale": _scale_to_json(operand.scale),
        "zeroPoint": int(operand.zero_point),
        "lifetime": _enum_to_json(OperandLifeTime, lifetime),
    }
    if operand.number_of_consumers != consumers:
        d["numberOfConsumers"] = int(operand.number_of_consumers)
    is_copy = lifetime == OperandLifeTime.CONSTANT_COPY
    if not (is_copy and canonical):
        keep = _ALL_LOCATION_KEYS if is_copy else _LOCATION_KEYS.get(lifetime, ())
        location = _location_to_json(operand.location, keep)
        if location:
            d["location"] = location
    if operand.extra_params is not None:
        d.update(_extra_params_to_json(operand.extra_params))
    if is_copy or lifetime == OperandLifeTime.CONSTANT_REFERENCE:
        key = id(operand)
        raw = copies[key] if is_copy and key in copies else constant_bytes(model, lifetime, operand.location)
        if raw is not None:
            key, value = _value_to_json(raw, operand.type)
            d[key] = value
    return d


def _subgraph_to_json(model: Model, subgraph: Subgraph, canonical: bool, copies: dict[int, bytes | None]) -> dict:
    counts = _consumer_counts(subgraph.operations, len(subgraph.operands))
    return {
        "operands": [
            _operand_to_json(model, op, counts[i], canonical, copies) for i, op in enumerate(subgraph.operands)
        ],
        "operations": [
            {
                "type": _enum_to_json(OperationType, op.type),
                "inputs": list(map(int, op.inputs)),
                "outputs": list(map(int, op.outputs)),
            }
            for op in subgraph.operations
        ],
        "inputIndexes": list(map(int, subgraph.input_indexes)),
        "outputIndexes": list(map(int, subgraph.output_indexes)),
    }


def model_to_json(model: Model) -> dict:
    """The case-format JSON of a hal.Model, reading constants back from operandValues and the pools."""
    copies: dict[int, bytes | None] = {}
    canonical = _copy_layout_is_canonical(model, copies)
    d = _subgraph_to_json(model, model.main, canonical, copies)
    d["relaxComputationFloat32toFloat16"] = bool(model.relax_computation_float32_to_float16)
    if model.referenced:
        d["referenced"] = [_subgraph_to_json(model, s, canonical, copies) for s in model.referenced]
    if model.pools:
        d["pools"] = [pool_to_json(p) for p in model.pools]
    if model.extension_name_to_prefix:
        d["extensionNameToPrefix"] = [{"name": e.name, "prefix": e.prefix} for e in model.extension_name_to_prefix]
    if not canonical:
        d["operandValues"] = bytes(model.operand_values).hex()
    return d
