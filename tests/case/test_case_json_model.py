"""The case format beyond the vectors: pools, referenced subgraphs, NO_VALUE, per-channel and extension operands."""

from __future__ import annotations

import copy
import dataclasses
import os
import struct

import pytest

from harness.case import CaseFormatError, model_from_json, model_to_json, pools_from_json
from harness.case.pools import deferred_pool_from_json, pool_from_json, pool_to_json
from harness.hal import (
    DataLocation,
    MemoryKind,
    Operand,
    OperandLifeTime,
    OperandType,
    OperationType,
    SymmPerChannelQuantParams,
)

EXT_TYPE = (1 << 16) | 3  # extension prefix 1, type 3


def _operand(type_, dims, lifetime, **extra) -> dict:
    return {"type": type_, "dimensions": dims, "scale": 0.0, "zeroPoint": 0, "lifetime": lifetime, **extra}


def _branch(constant: int) -> dict:
    return {
        "operands": [
            _operand("TENSOR_INT32", [3], "SUBGRAPH_INPUT"),
            _operand("TENSOR_INT32", [3], "CONSTANT_COPY", value=[constant, constant, constant]),
            _operand("INT32", [], "CONSTANT_COPY", value=[0]),
            _operand("TENSOR_INT32", [3], "SUBGRAPH_OUTPUT"),
        ],
        "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
        "inputIndexes": [0],
        "outputIndexes": [3],
    }


def extended_model_json() -> dict:
    """Every extension of the vectors' schema in one (not necessarily valid) model."""
    return {
        "operands": [
            _operand("TENSOR_INT32", [3], "SUBGRAPH_INPUT"),  # 0
            _operand(
                "TENSOR_FLOAT32",
                [2],
                "CONSTANT_REFERENCE",
                location={"poolIndex": 0, "offset": 8, "length": 8},
                value=[1.5, -2.0],
            ),  # 1
            _operand(
                "TENSOR_QUANT8_SYMM_PER_CHANNEL",
                [2, 1],
                "CONSTANT_REFERENCE",
                location={"poolIndex": 1, "offset": 3, "length": 2},
                channelQuant={"channelDim": 0, "scales": [0.5, 0.25]},
                value=[-3, 4],
            ),  # 2
            _operand("BOOL", [], "CONSTANT_COPY", value=[True]),  # 3
            _operand("SUBGRAPH", [], "SUBGRAPH", location={"offset": 0}),  # 4
            _operand("SUBGRAPH", [], "SUBGRAPH", location={"offset": 1}),  # 5
            _operand("TENSOR_FLOAT32", [], "NO_VALUE"),  # 6
            _operand(EXT_TYPE, [4], "CONSTANT_COPY", extensionParams="deadbeef", valueHex="01020304"),  # 7
            _operand("TENSOR_INT32", [3], "CONSTANT_COPY", value=[1, 2, 3]),  # 8
            _operand("TENSOR_INT32", [3], "SUBGRAPH_OUTPUT"),  # 9
            _operand(
                "TENSOR_QUANT8_ASYMM",
                [4],
                "CONSTANT_REFERENCE",
                scale=0.5,
                zeroPoint=128,
                location={"poolIndex": 2, "offset": 4, "length": 4},
                value=[0, 1, 254, 255],
            ),  # 10
            _operand("TENSOR_FLOAT32", [2], "TEMPORARY_VARIABLE", numberOfConsumers=5),  # 11
        ],
        "operations": [
            {"type": "IF", "inputs": [3, 4, 5, 0], "outputs": [9]},
            {"type": "OEM_OPERATION", "inputs": [1, 2, 6, 7, 8, 10, 8], "outputs": [11]},
        ],
        "inputIndexes": [0],
        "outputIndexes": [9],
        "relaxComputationFloat32toFloat16": True,
        "referenced": [_branch(10), _branch(-10)],
        "pools": [
            {"kind": "ashmem", "size": 32},
            {"kind": "mmap_fd", "size": 16, "offset": 4099},
            {"kind": "hardware_buffer_blob", "size": 8},
        ],
        "extensionNameToPrefix": [{"name": "com.example.ext", "prefix": 1}],
    }


def test_extended_model_round_trips_exactly():
    d = extended_model_json()
    assert model_to_json(model_from_json(d)) == d


def test_extended_model_fields():
    m = model_from_json(extended_model_json())
    ops = m.main.operands
    assert ops[0].type == OperandType.TENSOR_INT32 and ops[7].type == EXT_TYPE
    assert m.main.operations[0].type == OperationType.IF
    assert m.relax_computation_float32_to_float16
    assert [(e.name, e.prefix) for e in m.extension_name_to_prefix] == [("com.example.ext", 1)]
    # Consumers counted by hand from the two operations (8 is read twice); 11 keeps its explicit count.
    assert [o.number_of_consumers for o in ops] == [1, 1, 1, 1, 1, 1, 1, 1, 2, 0, 1, 5]
    assert ops[2].extra_params == SymmPerChannelQuantParams(scales=[0.5, 0.25], channel_dim=0)
    assert ops[7].extra_params == bytes.fromhex("deadbeef")
    assert ops[6].lifetime == OperandLifeTime.NO_VALUE and ops[6].location == DataLocation(0, 0, 0)
    assert ops[5].lifetime == OperandLifeTime.SUBGRAPH and ops[5].location == DataLocation(0, 1, 0)
    assert (ops[10].scale, ops[10].zero_point) == (0.5, 128)


def test_constant_copy_layout_is_packed_in_operand_order_at_4_byte_alignment():
    m = model_from_json(extended_model_json())
    # main: op3 BOOL (1 byte) at 0, op7 (4) at 4, op8 (12) at 8; then each branch: a [3] tensor and a scalar.
    expected = (
        b"\x01\0\0\0"
        + bytes.fromhex("01020304")
        + struct.pack("<3i", 1, 2, 3)
        + struct.pack("<3i", 10, 10, 10)
        + struct.pack("<i", 0)
        + struct.pack("<3i", -10, -10, -10)
        + struct.pack("<i", 0)
    )
    assert m.operand_values == expected
    main = m.main.operands
    assert [main[i].location for i in (3, 7, 8)] == [
        DataLocation(0, 0, 1),
        DataLocation(0, 4, 4),
        DataLocation(0, 8, 12),
    ]
    branches = [m.referenced[k].operands[i].location for k in (0, 1) for i in (1, 2)]
    assert branches == [
        DataLocation(0, 20, 12),
        DataLocation(0, 32, 4),
        DataLocation(0, 36, 12),
        DataLocation(0, 48, 4),
    ]


def test_constant_reference_values_land_in_the_pools():
    m = model_from_json(extended_model_json())
    ashmem, mmap_fd, blob = m.pools
    assert [p.kind for p in m.pools] == [MemoryKind.ASHMEM, MemoryKind.MMAP_FD, MemoryKind.HARDWARE_BUFFER_BLOB]
    assert (mmap_fd.offset, mmap_fd.size) == (4099, 16)
    # Read the fds directly: pool data starts at the memory's offset in its fd.
    assert os.pread(ashmem.fd, 8, 8) == struct.pack("<2f", 1.5, -2.0)
    assert os.pread(mmap_fd.fd, 2, 4099 + 3) == b"\xfd\x04"
    assert os.pread(blob.fd, 4, 32 + 4) == bytes([0, 1, 254, 255])
    assert os.pread(ashmem.fd, 8, 0) == bytes(8)


def test_moved_operand_values_round_trip_through_explicit_locations():
    m = model_from_json(extended_model_json())
    m.operand_values = b"\xaa" * 4 + m.operand_values  # shift everything by 4 bytes
    for subgraph in [m.main, *m.referenced]:
        for operand in subgraph.operands:
            if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
                operand.location.offset += 4
    d = model_to_json(m)
    assert d["operandValues"] == m.operand_values.hex()
    assert d["operands"][8]["location"] == {"poolIndex": 0, "offset": 12, "length": 12}
    back = model_from_json(d)
    assert back.operand_values == m.operand_values
    assert back.main.operands[8].location == DataLocation(0, 12, 12)
    assert model_to_json(back) == d


def test_constant_location_outside_its_storage_round_trips_without_a_value():
    m = model_from_json(extended_model_json())
    m.main.operands[1].location = DataLocation(0, 30, 8)  # past the 32-byte pool
    m.main.operands[8].location = DataLocation(0, 8, 100)  # past operandValues
    d = model_to_json(m)
    assert "value" not in d["operands"][1] and "value" not in d["operands"][8]
    assert d["operands"][1]["location"] == {"poolIndex": 0, "offset": 30, "length": 8}
    back = model_from_json(d)
    assert back.main.operands[1].location == DataLocation(0, 30, 8)
    assert back.main.operands[8].location == DataLocation(0, 8, 100)
    assert model_to_json(back) == d


def test_nan_payloads_and_unknown_types_keep_their_exact_bytes():
    d = {
        "operands": [
            _operand("TENSOR_FLOAT32", [1], "CONSTANT_COPY", value=[0.0]),
            _operand(9999, [2], 7),
            _operand("TENSOR_BOOL8", [1], "CONSTANT_COPY", value=[True]),
        ],
        "operations": [{"type": 9999, "inputs": [0, 2], "outputs": [1]}],
        "inputIndexes": [],
        "outputIndexes": [1],
        "relaxComputationFloat32toFloat16": False,
    }
    m = model_from_json(d)
    assert model_to_json(m) == d
    assert m.main.operands[1].type == 9999 and m.main.operands[1].lifetime == 7
    m.operand_values = struct.pack("<I", 0x7FC00001) + b"\x02\0\0\0"  # a NaN with a payload, a bool byte of 2
    out = model_to_json(m)
    assert out["operands"][0]["valueHex"] == "0100c07f"
    assert out["operands"][2]["valueHex"] == "02"
    assert model_from_json(out).operand_values == m.operand_values


def test_non_finite_scales_are_written_as_strings():
    d = {
        "operands": [_operand("TENSOR_QUANT8_ASYMM", [1], "SUBGRAPH_INPUT", scale="nan")],
        "operations": [],
        "inputIndexes": [0],
        "outputIndexes": [],
        "relaxComputationFloat32toFloat16": False,
    }
    assert model_to_json(model_from_json(d)) == d


def _broken(mutate) -> dict:
    d = copy.deepcopy(extended_model_json())
    mutate(d)
    return d


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["operands"][0].pop("lifetime"),
        lambda d: d["operands"][0].update(type="TENSOR_FLOAT33"),
        lambda d: d["operands"][3].pop("value"),
        lambda d: d["operands"][1]["location"].update(length=4),  # value has 8 bytes
        lambda d: d["operands"][1]["location"].update(poolIndex=7),
        lambda d: d["operands"][1]["location"].update(offset=30),  # does not fit the 32-byte pool
        lambda d: d["operands"][8].update(value=[1, 2, 2**40]),
        lambda d: d["pools"][0].update(kind="gralloc"),
        lambda d: d["operations"][0].update(inputs="0"),
    ],
)
def test_malformed_json_is_refused_with_a_case_format_error(mutate):
    with pytest.raises(CaseFormatError):
        model_from_json(_broken(mutate))


def test_operand_fields_are_in_the_order_the_positional_constructions_assume():
    # model_from_json and the generator build Operands positionally (keywords cost a share of each operand).
    assert [f.name for f in dataclasses.fields(Operand)] == [
        "type",
        "dimensions",
        "number_of_consumers",
        "scale",
        "zero_point",
        "lifetime",
        "location",
        "extra_params",
    ]


def test_a_pool_model_from_json_fills_is_what_pools_from_json_gives() -> None:
    d = {
        "operands": [
            _operand(
                "TENSOR_FLOAT32",
                [2],
                "CONSTANT_REFERENCE",
                value=[1.5, -2.0],
                location={"poolIndex": 1, "offset": 4, "length": 8},
            ),
            _operand("TENSOR_FLOAT32", [2], "SUBGRAPH_OUTPUT"),
        ],
        "operations": [{"type": "RELU", "inputs": [0], "outputs": [1]}],
        "inputIndexes": [],
        "outputIndexes": [1],
        "pools": [{"kind": "ashmem", "size": 8}, {"kind": "mmap_fd", "size": 16}],
    }
    built = [p.read(0, p.size) for p in model_from_json(d).pools]
    alone = [p.read(0, p.size) for p in pools_from_json(d)]
    assert alone == built
    assert alone[1] == bytes(4) + struct.pack("<2f", 1.5, -2.0) + bytes(4)


def test_a_deferred_pool_from_json_holds_what_pool_from_json_and_the_fill_give() -> None:
    def fill(memory) -> None:
        memory.write(4, b"\x01\x02")

    for desc in (
        {"kind": "ashmem", "size": 16},
        {"kind": "mmap_fd", "size": 16, "offset": 3},
        {"kind": "hardware_buffer_blob", "size": 16},
    ):
        deferred, eager = deferred_pool_from_json(desc, fill), pool_from_json(desc)
        fill(eager)
        try:
            assert pool_to_json(deferred) == pool_to_json(eager) == desc
            assert (deferred.offset, deferred.size) == (eager.offset, eager.size)
            assert deferred.read(0, 16) == eager.read(0, 16)
        finally:
            deferred.close()
            eager.close()


def _two_references(second: dict) -> dict:
    """A model whose two float32 [2] CONSTANT_REFERENCE operands (ADD's inputs) sit in one ashmem pool."""
    operand = {"type": "TENSOR_FLOAT32", "dimensions": [2], "scale": 0.0, "zeroPoint": 0}
    first = {**operand, "lifetime": "CONSTANT_REFERENCE", "location": {"poolIndex": 0, "offset": 0, "length": 8}}
    return {
        "operands": [
            {**first, "value": [1.0, 2.0]},
            {**operand, "lifetime": "CONSTANT_REFERENCE", **second},
            {
                "type": "INT32",
                "dimensions": [],
                "scale": 0.0,
                "zeroPoint": 0,
                "lifetime": "CONSTANT_COPY",
                "value": [0],
            },
            {**operand, "lifetime": "SUBGRAPH_OUTPUT"},
        ],
        "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
        "inputIndexes": [],
        "outputIndexes": [3],
        "pools": [{"kind": "ashmem", "size": 16}],
    }


def test_constants_sharing_pool_bytes_must_agree_there():
    agreeing = {"location": {"poolIndex": 0, "offset": 4, "length": 8}, "value": [2.0, 3.0]}  # shares the 2.0
    m = model_from_json(_two_references(agreeing))
    assert os.pread(m.pools[0].fd, 12, 0) == struct.pack("<3f", 1.0, 2.0, 3.0)
    conflicting = {"location": {"poolIndex": 0, "offset": 0, "length": 8}, "value": [5.0, 6.0]}
    with pytest.raises(CaseFormatError, match="operands 0 and 1 share bytes 0..7 of pool 0"):
        model_from_json(_two_references(conflicting))
    with pytest.raises(CaseFormatError, match="share bytes"):
        pools_from_json(_two_references(conflicting))


@pytest.mark.parametrize("scale", [None, "scale", [0.5]])
def test_a_scale_that_is_not_a_number_round_trips_as_itself(scale):
    # A malformed operand's scale (D25) is kept as the object it is, not read as a float.
    d = {
        "operands": [_operand("TENSOR_QUANT8_ASYMM", [1], "SUBGRAPH_INPUT", scale={"raw": scale})],
        "operations": [],
        "inputIndexes": [0],
        "outputIndexes": [],
        "relaxComputationFloat32toFloat16": False,
    }
    model = model_from_json(d)
    assert model.main.operands[0].scale == scale
    assert model_to_json(model) == d
