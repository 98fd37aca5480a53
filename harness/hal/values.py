"""Operand values in memory: bytes of an operand type as arrays, and where a model's constants are read from."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.hal.enums import OperandLifeTime
from harness.hal.memory import MemoryBoundsError, MemoryMapError
from harness.hal.sizes import numpy_dtype, operand_byte_size
from harness.hal.types import Model, Subgraph


def unpack(
    raw: bytes | bytearray | memoryview, operand_type: int, dimensions: Sequence[int] | None = None
) -> np.ndarray:
    """Bytes of an operand type as a new array in its stored dtype, shaped by `dimensions` (flat if None)."""
    dtype = numpy_dtype(operand_type)
    if len(raw) % dtype.itemsize:
        raise ValueError(f"{len(raw)} bytes is not a whole number of {dtype.itemsize}-byte elements")
    array = np.frombuffer(bytes(raw), dtype=dtype).copy()
    if dimensions is None:
        return array
    if math.prod(dimensions) != array.size:
        raise ValueError(f"{array.size} elements do not fill dimensions {list(dimensions)}")
    return array.reshape(tuple(dimensions))


def constant_bytes(model: Model, operand_lifetime: int, location: object) -> bytes | None:
    """The bytes a constant's location points at in operandValues or a pool, or None if it points nowhere."""
    pool_index, offset, length = location.pool_index, location.offset, location.length  # type: ignore[attr-defined]
    if offset < 0 or length < 0:
        return None
    if operand_lifetime == OperandLifeTime.CONSTANT_COPY:
        if pool_index != 0 or offset + length > len(model.operand_values):
            return None
        return bytes(model.operand_values[offset : offset + length])
    if operand_lifetime == OperandLifeTime.CONSTANT_REFERENCE:
        if not 0 <= pool_index < len(model.pools):
            return None
        try:
            return model.pools[pool_index].read(offset, length)
        except (MemoryBoundsError, MemoryMapError, AttributeError):
            return None
    return None


def constant_value(model: Model, subgraph: Subgraph, operand_index: int) -> np.ndarray | None:
    """A constant operand's value shaped by its dimensions, or None if it is not a readable constant."""
    if not 0 <= operand_index < len(subgraph.operands):
        return None
    operand = subgraph.operands[operand_index]
    try:
        expected = operand_byte_size(operand.type, operand.dimensions)
        numpy_dtype(operand.type)
    except ValueError:
        return None
    if expected == 0 and math.prod(operand.dimensions) != 0:
        return None  # unknown dimensions: a constant must be fully specified
    raw = constant_bytes(model, operand.lifetime, operand.location)
    if raw is None or len(raw) != expected:
        return None
    return unpack(raw, operand.type, operand.dimensions)
