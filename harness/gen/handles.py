"""Unusual and malformed memory handles (D13, D25): hardware buffers whose descriptor has one bad field, non-BLOB
hardware buffers, and hardware buffers holding a model's constants.

Each `HandleChange` turns one pool description of the case format ({"kind", "size", ...}) into another and says
what a driver must do with the result, in a request and as a model pool:

- "usable": a well-formed handle of a kind the driver must support (hardware_buffer_blob, D13): it works as any other
  memory;
- "optional": a well-formed non-BLOB hardware buffer in a request: optional (D13), so the execution either runs as
  the reference says or fails with GENERAL_FAILURE;
- "refused": a descriptor that cannot be what it claims (bad magic, version, format or size, D25), or a non-BLOB
  hardware buffer holding constants (D13: only for execution): the call that needs the memory fails.

The table is drawn by `change_pool`; the request target judges "refused" with harness.oracle.rules'
judge_unusable_memory_refused. `change_model_pool` applies a drawn change to a pool holding a model's constants,
whose outcome is `in_model` (the validation target judges "refused" with judge_unusable_model_pool).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from harness.case import model_from_json, model_to_json
from harness.gen.source import Source
from harness.hal import Model, OperandLifeTime
from harness.hal.memory import HWB_FORMAT_BLOB, HWB_FORMAT_R8G8B8A8_UNORM, MemoryKind

Outcome = Literal["usable", "optional", "refused"]

_BLOB = MemoryKind.HARDWARE_BUFFER_BLOB.value
_NON_BLOB = MemoryKind.HARDWARE_BUFFER.value
_U32_MAX = 0xFFFFFFFF

# One bad value per field, each a plausible slip: a zeroed or byte-swapped magic, a neighbouring or wild version,
# a format of the other kind, none at all or no format anyone knows.
_BAD_MAGICS = (b"\0\0\0\0", b"BWHA", b"AHWC", b"ahwb")
_BAD_VERSIONS = (0, 2, _U32_MAX)
_BAD_FORMATS = {
    _BLOB: (0, HWB_FORMAT_R8G8B8A8_UNORM, 0x7FFF, _U32_MAX),
    _NON_BLOB: (0, HWB_FORMAT_BLOB, 0x7FFF, _U32_MAX),
}


@dataclass(frozen=True)
class HandleChange:
    """One way of making a pool an unusual or malformed handle, and what a driver must do with it."""

    name: str
    rule: str  # the requirement that says what the driver must do: D13 (memory kinds) or D25 (malformed input)
    description: str
    in_request: Outcome
    in_model: Outcome
    apply: Callable[[dict, Source], dict]  # (pool description, source) -> a new description


def _hardware_buffer(desc: dict, kind: str) -> dict:
    """The pool as a well-formed hardware buffer of `kind` holding at least its bytes (non-BLOB: a whole pixel)."""
    size = max(1, int(desc["size"]))
    if kind == _NON_BLOB:
        size = -(-size // 4) * 4
    return {"kind": kind, "size": size}


def _either_kind(desc: dict, source: Source) -> dict:
    return _hardware_buffer(desc, source.choice([_BLOB, _NON_BLOB]))


def _bad_magic(desc: dict, source: Source) -> dict:
    return {**_either_kind(desc, source), "header": {"magic": source.choice(_BAD_MAGICS).decode("latin-1")}}


def _bad_version(desc: dict, source: Source) -> dict:
    return {**_either_kind(desc, source), "header": {"version": source.choice(_BAD_VERSIONS)}}


def _bad_format(desc: dict, source: Source) -> dict:
    new = _either_kind(desc, source)
    return {**new, "header": {"format": source.choice(_BAD_FORMATS[new["kind"]])}}


def _bad_size(desc: dict, source: Source) -> dict:
    new = _either_kind(desc, source)
    # The header's width disagrees with the handle's size (a non-BLOB width counts pixels of 4 bytes).
    width = new["size"] if new["kind"] == _BLOB else new["size"] // 4
    deltas = [1, 4, 1 << 20] + ([-1] if width > 1 else [])
    return {**new, "header": {"width": min(_U32_MAX, width + source.choice(deltas))}}


HANDLE_CHANGES: dict[str, HandleChange] = {
    c.name: c
    for c in (
        HandleChange("hardware_buffer_bad_magic", "D25", "a hardware buffer whose descriptor has a wrong magic",
                     "refused", "refused", _bad_magic),
        HandleChange("hardware_buffer_bad_version", "D25", "a hardware buffer whose descriptor has a wrong version",
                     "refused", "refused", _bad_version),
        HandleChange("hardware_buffer_bad_format", "D25", "a hardware buffer whose descriptor has an unknown format or "
                     "the other kind's format", "refused", "refused", _bad_format),
        HandleChange("hardware_buffer_bad_size", "D25", "a hardware buffer whose descriptor's width disagrees with "
                     "the handle's size", "refused", "refused", _bad_size),
        HandleChange("hardware_buffer_blob", "D13", "a well-formed BLOB hardware buffer", "usable", "usable",
                     lambda desc, _source: _hardware_buffer(desc, _BLOB)),
        HandleChange("hardware_buffer_non_blob", "D13", "a well-formed non-BLOB hardware buffer (execution only)",
                     "optional", "refused", lambda desc, _source: _hardware_buffer(desc, _NON_BLOB)),
    )
}  # fmt: skip


def change_pool(desc: dict, source: Source) -> tuple[HandleChange, dict]:
    """A change drawn from HANDLE_CHANGES, applied to a pool description (which is left as it was)."""
    change = HANDLE_CHANGES[source.choice(sorted(HANDLE_CHANGES))]
    return change, change.apply(dict(desc), source)


def change_model_pool(model: Model, source: Source) -> tuple[HandleChange, int, Model] | None:
    """A new model like `model` with one pool holding constants changed as drawn from HANDLE_CHANGES: (change,
    pool index, model); None when no pool holds a constant. The caller still owns (and closes) `model`."""
    used = sorted(
        {
            o.location.pool_index
            for graph in (model.main, *model.referenced)
            for o in graph.operands
            if o.lifetime == OperandLifeTime.CONSTANT_REFERENCE
        }
    )
    if not used:
        return None
    index = source.choice(used)
    description = model_to_json(model)
    change, description["pools"][index] = change_pool(description["pools"][index], source)
    return change, index, model_from_json(description)
