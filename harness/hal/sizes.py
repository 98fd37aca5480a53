"""Byte sizes of operand types and operands, and the unknown-dimension conventions."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.hal.enums import OperandType

_ELEMENT_SIZES: dict[int, int] = {
    OperandType.FLOAT32: 4,
    OperandType.INT32: 4,
    OperandType.UINT32: 4,
    OperandType.TENSOR_FLOAT32: 4,
    OperandType.TENSOR_INT32: 4,
    OperandType.TENSOR_QUANT8_ASYMM: 1,
    OperandType.BOOL: 1,
    OperandType.TENSOR_QUANT16_SYMM: 2,
    OperandType.TENSOR_FLOAT16: 2,
    OperandType.TENSOR_BOOL8: 1,
    OperandType.FLOAT16: 2,
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: 1,
    OperandType.TENSOR_QUANT16_ASYMM: 2,
    OperandType.TENSOR_QUANT8_SYMM: 1,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: 1,
    OperandType.SUBGRAPH: 0,
    OperandType.OEM: 0,
    OperandType.TENSOR_OEM_BYTE: 1,
}

SCALAR_TYPES = frozenset(
    {OperandType.FLOAT32, OperandType.INT32, OperandType.UINT32, OperandType.BOOL, OperandType.FLOAT16}
)
QUANTIZED_TYPES = frozenset(
    {
        OperandType.TENSOR_QUANT8_ASYMM,
        OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
        OperandType.TENSOR_QUANT8_SYMM,
        OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
        OperandType.TENSOR_QUANT16_ASYMM,
        OperandType.TENSOR_QUANT16_SYMM,
    }
)
# Zero-point range allowed for each quantized type (inclusive).
ZERO_POINT_RANGES: dict[int, tuple[int, int]] = {
    OperandType.TENSOR_QUANT8_ASYMM: (0, 255),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    OperandType.TENSOR_QUANT8_SYMM: (0, 0),
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: (0, 0),
    OperandType.TENSOR_QUANT16_ASYMM: (0, 65535),
    OperandType.TENSOR_QUANT16_SYMM: (0, 0),
}


def is_extension_type(operand_type: int) -> bool:
    """True for extension operand types (a non-zero prefix above the low 16 bits)."""
    return operand_type > 0xFFFF


def is_known_type(operand_type: int) -> bool:
    """True for the HAL's own operand types (not extensions)."""
    return operand_type in _ELEMENT_SIZES


def is_scalar_type(operand_type: int) -> bool:
    """True for the scalar operand types (FLOAT32, INT32, UINT32, BOOL, FLOAT16)."""
    return operand_type in SCALAR_TYPES


def is_tensor_type(operand_type: int) -> bool:
    """True for tensor operand types (everything known that is neither scalar, SUBGRAPH nor OEM)."""
    return (
        is_known_type(operand_type)
        and operand_type not in SCALAR_TYPES
        and operand_type
        not in (
            OperandType.SUBGRAPH,
            OperandType.OEM,
        )
    )


def element_size(operand_type: int) -> int:
    """Bytes per element of a HAL operand type; ValueError for unknown types."""
    try:
        return _ELEMENT_SIZES[operand_type]
    except KeyError:
        raise ValueError(f"unknown operand type {operand_type}") from None


def has_unknown_rank(dimensions: Sequence[int]) -> bool:
    """True when the dimensions leave the rank unknown (an empty list, for a tensor)."""
    return len(dimensions) == 0


def has_unknown_dimensions(dimensions: Sequence[int]) -> bool:
    """True when the rank or any dimension is unknown (empty list or a zero)."""
    return len(dimensions) == 0 or any(d == 0 for d in dimensions)


def element_count(dimensions: Sequence[int]) -> int:
    """Number of elements of fully specified dimensions (1 for a scalar's empty list)."""
    return math.prod(dimensions)


def operand_byte_size(operand_type: int, dimensions: Sequence[int]) -> int:
    """Bytes an operand of this type and these (fully specified) dimensions occupies; 0 if any is unknown."""
    size = element_size(operand_type)
    if is_scalar_type(operand_type):
        return size
    if has_unknown_dimensions(dimensions):
        return 0
    return size * element_count(dimensions)


def merge_dimensions(a: Sequence[int], b: Sequence[int]) -> list[int] | None:
    """Combine two partial shapes into the most specific one, or None if they conflict."""
    if not a:
        return list(b)
    if not b:
        return list(a)
    if len(a) != len(b):
        return None
    merged = []
    for x, y in zip(a, b):
        if x and y and x != y:
            return None
        merged.append(x or y)
    return merged


_DTYPE_CODES: dict[int, str] = {
    OperandType.FLOAT32: "<f4",
    OperandType.TENSOR_FLOAT32: "<f4",
    OperandType.INT32: "<i4",
    OperandType.TENSOR_INT32: "<i4",
    OperandType.UINT32: "<u4",
    OperandType.TENSOR_QUANT8_ASYMM: "u1",
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: "i1",
    OperandType.TENSOR_QUANT8_SYMM: "i1",
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: "i1",
    OperandType.TENSOR_QUANT16_SYMM: "<i2",
    OperandType.TENSOR_QUANT16_ASYMM: "<u2",
    OperandType.FLOAT16: "<f2",
    OperandType.TENSOR_FLOAT16: "<f2",
    OperandType.BOOL: "?",
    OperandType.TENSOR_BOOL8: "?",
    OperandType.TENSOR_OEM_BYTE: "u1",
}


# Built once: operands are packed and unpacked by the thousand per case, and np.dtype() builds a new object per call.
_NUMPY_DTYPES: dict[int, np.dtype] = {int(t): np.dtype(code) for t, code in _DTYPE_CODES.items()}


def numpy_dtype(operand_type: int) -> np.dtype:
    """The little-endian numpy dtype that stores one element of this operand type in memory."""
    dtype = _NUMPY_DTYPES.get(operand_type)  # type: ignore[call-overload]
    if dtype is None:
        raise ValueError(f"operand type {operand_type} has no element storage")
    return dtype
