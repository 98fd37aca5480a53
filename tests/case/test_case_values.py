"""Operand values: byte layout checked against struct and IEEE encodings computed by hand."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from harness.case.values import normalize_values, pack, to_json_values, unpack
from harness.hal import (
    OperandType,
)

T = OperandType


@pytest.mark.parametrize(
    ("values", "operand_type", "expected"),
    [
        ([1.0, -2.5], T.TENSOR_FLOAT32, struct.pack("<2f", 1.0, -2.5)),
        ([0.1], T.FLOAT32, struct.pack("<f", 0.1)),
        # IEEE half: 1 + 2**-10 is 0x3C01, -2 is 0xC000, 65504 (largest half) is 0x7BFF.
        ([1.0009765625, -2.0, 65504.0], T.TENSOR_FLOAT16, bytes.fromhex("013c00c0ff7b")),
        (["inf", "-inf"], T.FLOAT16, bytes.fromhex("007c00fc")),
        ([-1, 2**31 - 1], T.TENSOR_INT32, bytes.fromhex("ffffffffffffff7f")),
        ([2**32 - 1], T.UINT32, bytes.fromhex("ffffffff")),
        ([0, 255], T.TENSOR_QUANT8_ASYMM, b"\x00\xff"),
        ([-128, 127], T.TENSOR_QUANT8_ASYMM_SIGNED, b"\x80\x7f"),
        ([-2], T.TENSOR_QUANT16_SYMM, b"\xfe\xff"),
        ([65535], T.TENSOR_QUANT16_ASYMM, b"\xff\xff"),
        ([True, False, True], T.TENSOR_BOOL8, b"\x01\x00\x01"),
        ([False], T.BOOL, b"\x00"),
        ([], T.TENSOR_FLOAT32, b""),
    ],
)
def test_pack_produces_the_hal_little_endian_layout(values, operand_type, expected):
    assert pack(values, operand_type) == expected


def test_pack_nan_is_a_nan_of_the_type():
    (half,) = struct.unpack("<e", pack(["nan"], T.TENSOR_FLOAT16))
    (single,) = struct.unpack("<f", pack(["nan"], T.TENSOR_FLOAT32))
    assert math.isnan(half) and math.isnan(single)


@pytest.mark.parametrize(
    ("values", "operand_type"),
    [
        ([256], T.TENSOR_QUANT8_ASYMM),
        ([-1], T.TENSOR_QUANT8_ASYMM),
        ([-129], T.TENSOR_QUANT8_SYMM),
        ([2**31], T.INT32),
        ([1.5], T.TENSOR_INT32),
        ([2], T.TENSOR_BOOL8),
        (["x"], T.TENSOR_FLOAT32),
        (["1"], T.TENSOR_INT32),
    ],
)
def test_pack_refuses_values_the_type_cannot_hold(values, operand_type):
    with pytest.raises(ValueError):
        pack(values, operand_type)


def test_pack_refuses_types_without_element_storage():
    with pytest.raises(ValueError):
        pack([1], T.SUBGRAPH)


def test_unpack_shapes_and_types():
    raw = struct.pack("<6i", 1, 2, 3, 4, 5, 6)
    array = unpack(raw, T.TENSOR_INT32, [2, 3])
    assert array.dtype == np.dtype("<i4") and array.shape == (2, 3)
    assert array.tolist() == [[1, 2, 3], [4, 5, 6]]
    scalar = unpack(struct.pack("<f", 2.0), T.FLOAT32, [])
    assert scalar.shape == () and float(scalar) == 2.0
    assert unpack(b"", T.TENSOR_FLOAT32, [0, 3]).shape == (0, 3)
    with pytest.raises(ValueError):
        unpack(raw, T.TENSOR_INT32, [5])
    with pytest.raises(ValueError):
        unpack(b"\x00\x00\x00", T.TENSOR_INT32)


def test_to_json_values_uses_the_shortest_form_of_the_stored_precision():
    assert to_json_values(np.array([0.1, 1 / 3], dtype=np.float32)) == [0.1, 0.33333334]
    assert to_json_values(np.array([1.0009765625, 0.1], dtype=np.float16)) == [1.001, 0.1]
    assert to_json_values(np.array([np.nan, np.inf, -np.inf, -0.0], dtype=np.float32)) == ["nan", "inf", "-inf", -0.0]
    assert to_json_values(np.array([[1, -2]], dtype=np.int8)) == [1, -2]
    assert to_json_values(np.array([True, False])) == [True, False]
    out = to_json_values(np.array([7], dtype=np.uint8))
    assert type(out[0]) is int


def test_json_values_read_back_to_the_same_bits():
    for operand_type, values in [
        (T.TENSOR_FLOAT32, [0.1, 1e-45, 3.4028234663852886e38, -7.25]),
        (T.TENSOR_FLOAT16, [6e-08, 0.0001, 65504.0, -1.5]),
    ]:
        raw = pack(values, operand_type)
        assert pack(to_json_values(unpack(raw, operand_type)), operand_type) == raw


def test_normalize_values_rounds_to_the_type():
    assert normalize_values([0.1], T.TENSOR_FLOAT16) == [0.1]
    assert normalize_values([1.00001], T.TENSOR_FLOAT16) == [1.0]
