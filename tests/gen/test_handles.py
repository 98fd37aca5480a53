"""Unusual and malformed memory handles: each change breaks exactly the field it names, and survives the case format."""

from __future__ import annotations

import os
import struct

import pytest

from harness.case import close_model_pools, model_to_json
from harness.case.pools import pool_from_json, pool_to_json
from harness.gen import GenerationRejected, generate_model
from harness.gen.handles import HANDLE_CHANGES, change_model_pool, change_pool
from harness.gen.sources import RandomSource
from harness.hal import OperandLifeTime

_HEADER = struct.Struct("<4sIIIIIQ")
_FIELDS = ("magic", "version", "width", "height", "layers", "format")
# The header field each malformed-descriptor change must break (the others break none).
_BROKEN = {
    "hardware_buffer_bad_magic": {"magic"},
    "hardware_buffer_bad_version": {"version"},
    "hardware_buffer_bad_format": {"format"},
    "hardware_buffer_bad_size": {"width"},
}


def _header(desc: dict) -> dict:
    memory = pool_from_json(desc)
    try:
        raw = os.pread(memory.fd, _HEADER.size, 0)
        assert memory.size == desc["size"]
        return dict(zip(_FIELDS, _HEADER.unpack(raw)[:6]))
    finally:
        memory.close()


@pytest.mark.parametrize("name", sorted(HANDLE_CHANGES))
def test_each_change_breaks_only_the_field_it_names(name: str) -> None:
    change = HANDLE_CHANGES[name]
    for seed in range(12):
        new = change.apply({"kind": "ashmem", "size": 37}, RandomSource(seed))
        assert new["kind"].startswith("hardware_buffer") and new["size"] >= 37
        fields = _header(new)
        pixels = 1 if new["kind"] == "hardware_buffer_blob" else 4
        good = {"magic": b"AHWB", "version": 1, "width": new["size"] // pixels, "height": 1, "layers": 1,
                "format": 0x21 if pixels == 1 else 1}  # fmt: skip
        wrong = {k for k in _FIELDS if fields[k] != good[k]}
        expected = _BROKEN.get(name, set())
        assert wrong == expected, (seed, new, fields)


def test_a_malformed_descriptor_survives_the_case_format() -> None:
    desc = {"kind": "hardware_buffer_blob", "size": 16, "header": {"magic": "BWHA"}}
    memory = pool_from_json(desc)
    try:
        assert pool_to_json(memory) == desc
    finally:
        memory.close()


def test_every_change_is_drawn_and_the_input_is_left_alone() -> None:
    desc = {"kind": "mmap_fd", "size": 24, "offset": 3}
    drawn = {change_pool(desc, RandomSource(seed))[0].name for seed in range(200)}
    assert drawn == set(HANDLE_CHANGES)
    assert desc == {"kind": "mmap_fd", "size": 24, "offset": 3}


def test_what_a_driver_must_do_follows_d13_and_d25() -> None:
    outcomes = {n: (c.in_request, c.in_model) for n, c in HANDLE_CHANGES.items()}
    assert outcomes["hardware_buffer_blob"] == ("usable", "usable")  # D13: BLOB must be supported
    assert outcomes["hardware_buffer_non_blob"] == ("optional", "refused")  # D13: optional, only for execution
    for field in ("magic", "version", "format", "size"):
        assert outcomes[f"hardware_buffer_bad_{field}"] == ("refused", "refused")  # D25


def test_a_changed_model_pool_keeps_every_constant_and_changes_only_that_pool() -> None:
    changed_kinds = set()
    for seed in range(120):
        try:
            generated = generate_model(RandomSource(seed))
        except GenerationRejected:
            continue
        drawn = change_model_pool(generated.model, RandomSource(seed))
        if drawn is None:
            assert not generated.model.pools or not _constant_pools(generated.model)
            generated.close()
            continue
        change, index, model = drawn
        try:
            assert index in _constant_pools(generated.model)
            before, after = model_to_json(generated.model), model_to_json(model)
            assert after["pools"][index] != before["pools"][index]
            assert after["pools"][index]["kind"] in ("hardware_buffer", "hardware_buffer_blob")
            others = [p for k, p in enumerate(after["pools"]) if k != index]
            assert others == [p for k, p in enumerate(before["pools"]) if k != index]
            # The constants read back from the new pool are the model's.
            assert {k: v for k, v in after.items() if k != "pools"} == {k: v for k, v in before.items() if k != "pools"}
            changed_kinds.add(change.name)
        finally:
            close_model_pools(model)
            generated.close()
    assert len(changed_kinds) >= 4, changed_kinds


def _constant_pools(model) -> set[int]:
    return {
        o.location.pool_index
        for graph in (model.main, *model.referenced)
        for o in graph.operands
        if o.lifetime == OperandLifeTime.CONSTANT_REFERENCE
    }
