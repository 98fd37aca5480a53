"""A flatbuffer writer that lays the file out front to back, and what it learns of a table from the generated schema.

The flatbuffers runtime builds a file back to front, one checked Prepend call per scalar; packing a model's
tables that way took about a quarter of a whole LiteRT execution case. Here a table is a plain list of fields,
and the writer appends each table with its vtable just before it and its children (tables, vectors, strings)
after it, so every offset points forward as the format requires. Every scalar sits at a position aligned to its
size from the start of the file, which is what readers and verifiers check. Vtables are not shared between
tables (a few bytes more); the layout of a table with a given set of fields is worked out once (`_Plan`).

Field kinds: a struct format character for an inline scalar ("b", "B", "?", "h", "H", "i", "I", "f", "q", "Q",
"d"), TABLE (a nested Table), TABLES (a vector of Tables), STRING, VECTOR + a scalar format ("V" "i": a vector of
int32) and ALIGNED16 (bytes whose data starts on a 16-byte boundary).

Which slot and scalar format a field has is read off the schema's generated `<Table>Add<Field>` functions, once
per table, by calling them on a recorder (`slots`); options tables are turned into fields by running their
object API's own Pack on a recorder (`recorded`).
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from functools import cache
from types import ModuleType
from typing import Any

TABLE = "T"
TABLES = "L"
STRING = "S"
VECTOR = "V"
ALIGNED16 = "A"

_SIZES = {"b": 1, "B": 1, "?": 1, "h": 2, "H": 2, "i": 4, "I": 4, "f": 4, "q": 8, "Q": 8, "d": 8}
_ARRAY_CODES = {"?": "B"}  # array has no bool code; a flatbuffer bool is one byte, 0 or 1
_BIG_ENDIAN = sys.byteorder == "big"  # arrays hold native order; flatbuffers are little-endian
_OFFSET = struct.Struct("<I")
_SOFFSET = struct.Struct("<i")

Field = tuple[int, str, Any]  # (slot, kind, value)


class Table:
    """One table's fields, as (slot, kind, value); fields left out take the schema's defaults."""

    __slots__ = ("fields",)

    def __init__(self, fields: list[Field] | None = None) -> None:
        self.fields: list[Field] = fields if fields is not None else []


def write_file(root: Table, identifier: bytes) -> bytes:
    """The flatbuffer whose root table is `root`, with a 4-byte file identifier."""
    if len(identifier) != 4:
        raise ValueError(f"a file identifier has 4 bytes, not {len(identifier)}")
    out = bytearray(8)
    out[4:8] = identifier
    _OFFSET.pack_into(out, 0, _table(out, root))
    return bytes(out)


def _pad(out: bytearray, before: int, alignment: int) -> None:
    """Pad so that the position `before` bytes after the end is a multiple of `alignment`."""
    extra = -(len(out) + before) % alignment
    if extra:
        out += bytes(extra)


class _Plan:
    """How a table with a given set of (slot, kind) fields is laid out: its vtable, its inline bytes as one struct
    (the vtable offset first, offsets as zero placeholders) and which fields are offsets to patch."""

    __slots__ = ("vtable", "inline", "alignment", "scalars", "children")

    def __init__(self, shape: tuple[tuple[int, str], ...]) -> None:
        # Widest first: after the 4-byte vtable offset every field lands aligned with no padding between them,
        # but 8-byte ones (which start at 8).
        order = sorted(range(len(shape)), key=lambda k: -_SIZES.get(shape[k][1], 4))
        slots = max((slot for slot, _ in shape), default=-1) + 1
        offsets = [0] * slots
        fmt = "<i"
        at = 4
        self.scalars: list[int] = []  # field positions whose values go into the struct, in its order
        self.children: list[tuple[int, int]] = []  # (offset in the table, field position) of offset fields
        for k in order:
            slot, kind = shape[k]
            size = _SIZES.get(kind, 4)
            if at % size:
                fmt += f"{size - at % size}x"
                at += size - at % size
            offsets[slot] = at
            if kind in _SIZES:
                fmt += kind
                self.scalars.append(k)
            else:
                fmt += "4x"
                self.children.append((at, k))
            at += size
        self.vtable = struct.pack(f"<{2 + slots}H", 4 + 2 * slots, at, *offsets)
        self.inline = struct.Struct(fmt)
        self.alignment = 8 if any(_SIZES.get(kind) == 8 for _, kind in shape) else 4


_PLANS: dict[tuple[tuple[int, str], ...], _Plan] = {}


def _table(out: bytearray, table: Table) -> int:
    fields = table.fields
    shape = tuple([(slot, kind) for slot, kind, _ in fields])
    plan = _PLANS.get(shape)
    if plan is None:
        plan = _PLANS[shape] = _Plan(shape)
    if len(out) % 2:
        out += b"\0"
    vtable = len(out)
    out += plan.vtable
    _pad(out, 0, plan.alignment)
    start = len(out)
    out += plan.inline.pack(start - vtable, *[fields[k][2] for k in plan.scalars])
    for offset, k in plan.children:
        where = start + offset
        _, kind, value = fields[k]
        _OFFSET.pack_into(out, where, _child(out, kind, value) - where)
    return start


def _child(out: bytearray, kind: str, value: Any) -> int:
    """Write an object a table or vector refers to; its position."""
    if kind == TABLE:
        return _table(out, value)
    if kind == STRING:
        data = value.encode("utf-8")
        _pad(out, 0, 4)
        start = len(out)
        out += _OFFSET.pack(len(data)) + data + b"\0"
        return start
    if kind == TABLES:
        _pad(out, 0, 4)
        start = len(out)
        out += _OFFSET.pack(len(value)) + bytes(4 * len(value))
        for k, item in enumerate(value):
            where = start + 4 + 4 * k
            _OFFSET.pack_into(out, where, _table(out, item) - where)
        return start
    if kind == ALIGNED16:
        _pad(out, 4, 16)
        start = len(out)
        out += _OFFSET.pack(len(value)) + value
        return start
    if kind[0] == VECTOR:
        fmt = kind[1]
        size = _SIZES[fmt]
        _pad(out, 4, max(4, size))
        start = len(out)
        out += _OFFSET.pack(len(value))
        if fmt == "B" and isinstance(value, bytes | bytearray):
            out += value
        else:
            data = array(_ARRAY_CODES.get(fmt, fmt), value)
            if _BIG_ENDIAN:
                data.byteswap()
            out += data.tobytes()
        return start
    raise ValueError(f"unknown field kind {kind!r}")


# The runtime's Prepend<Type>Slot / Prepend<Type> methods -> struct format.
_FORMATS = {
    "Bool": "?",
    "Int8": "b",
    "Uint8": "B",
    "Int16": "h",
    "Uint16": "H",
    "Int32": "i",
    "Uint32": "I",
    "Int64": "q",
    "Uint64": "Q",
    "Float32": "f",
    "Float64": "d",
}
_OFFSET_SLOT = "PrependUOffsetTRelativeSlot"


class _Vector:
    """A vector the generated code built on a recorder: its elements and their format."""

    def __init__(self) -> None:
        self.format = ""
        self.items: list[Any] = []


class _Recorder:
    """Stands for the runtime's Builder under generated code: records slots and vectors instead of writing.

    Generated code passes offsets through int(), so the recorder hands out tokens (1-based indices into what it
    built) where the runtime would give offsets.
    """

    def __init__(self) -> None:
        self.fields: list[Field] = []
        self.slot_kinds: dict[int, str] = {}  # slot -> struct format, or "" for an offset
        self.built: list[Table | _Vector] = []
        self._vector: _Vector | None = None

    def StartObject(self, count: int) -> None:  # noqa: N802  (the runtime's method names)
        self.fields = []

    def EndObject(self) -> int:  # noqa: N802
        self.built.append(Table(self.fields))
        return len(self.built)

    def StartVector(self, size: int, count: int, alignment: int) -> None:  # noqa: N802
        self._vector = _Vector()

    def EndVector(self, count: int | None = None) -> int:  # noqa: N802
        vector, self._vector = self._vector, None
        assert vector is not None
        vector.items.reverse()  # generated code prepends from the last element
        self.built.append(vector)
        return len(self.built)

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name == _OFFSET_SLOT:
            return self._offset_slot
        if name.startswith("Prepend") and name.endswith("Slot") and name[7:-4] in _FORMATS:
            fmt = _FORMATS[name[7:-4]]
            return lambda slot, value, default: self._scalar_slot(fmt, slot, value, default)
        if name.startswith("Prepend") and name[7:] in _FORMATS:
            fmt = _FORMATS[name[7:]]
            return lambda value: self._element(fmt, value)
        raise AttributeError(f"the recorder cannot stand for Builder.{name}")

    def _scalar_slot(self, fmt: str, slot: int, value: Any, default: Any) -> None:
        self.slot_kinds[slot] = fmt
        if value != default:
            self.fields.append((slot, fmt, value))

    def _offset_slot(self, slot: int, token: int, default: int) -> None:
        self.slot_kinds[slot] = ""
        if not token:
            return
        found = self.built[token - 1]
        if isinstance(found, Table):
            self.fields.append((slot, TABLE, found))
        else:
            self.fields.append((slot, VECTOR + (found.format or "i"), found.items))

    def _element(self, fmt: str, value: Any) -> None:
        assert self._vector is not None, "an element outside a vector"
        self._vector.format = fmt
        self._vector.items.append(value)


def recorded(obj: Any) -> Table:
    """The fields of a generated object-API table (e.g. an `AddOptionsT`) as its own Pack writes them."""
    recorder = _Recorder()
    token = obj.Pack(recorder)
    found = recorder.built[token - 1]
    assert isinstance(found, Table)
    return found


@cache
def slots(schema: ModuleType, table: str) -> dict[str, tuple[int, str]]:
    """Field name (as in `<table>Add<Field>`, e.g. "ShapeSignature") -> (slot, struct format or "" for an offset)."""
    prefix = f"{table}Add"
    found: dict[str, tuple[int, str]] = {}
    for name in dir(schema):
        if not name.startswith(prefix):
            continue
        recorder = _Recorder()
        getattr(schema, name)(recorder, 0)
        ((slot, kind),) = recorder.slot_kinds.items()
        found[name[len(prefix) :]] = (slot, kind)
    return found


def fields(schema: ModuleType, table: str, values: Sequence[tuple[str, Any, str | None]]) -> Table:
    """A Table of `table` from (field name, value, kind for offsets: TABLE, STRING, a vector kind) triples; None
    values are left out."""
    layout = slots(schema, table)
    found: list[Field] = []
    for name, value, kind in values:
        if value is None:
            continue
        slot, fmt = layout[name]
        if not fmt and kind is None:
            raise ValueError(f"{table}.{name} is an offset field: say its kind")
        found.append((slot, fmt or kind, value))
    return Table(found)
