"""What a driver can read from a hal.Model, as plain comparable values (pools by their content, not their fd)."""

from __future__ import annotations

import dataclasses
import enum
import struct

import numpy as np

from harness.hal.memory import Memory


def driver_view(value: object) -> object:
    """A plain, comparable image of a model (or any part of one) as the driver would see it."""
    if isinstance(value, Memory):
        descriptor = driver_view(value.hardware_buffer)
        return ("memory", value.kind.value, value.offset, value.size, descriptor, _content(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return (type(value).__name__, tuple((f.name, driver_view(getattr(value, f.name))) for f in fields))
    if isinstance(value, enum.Enum):
        return (type(value).__name__, value.value)
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))  # bits: NaN equals itself, -0.0 differs from 0.0
    if isinstance(value, bytes | bytearray | memoryview):
        return ("bytes", bytes(value))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, list | tuple):
        return tuple(driver_view(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, driver_view(v)) for k, v in value.items()))
    return value


def _content(memory: Memory) -> object:
    try:
        return memory.read(0, memory.size)
    except (OSError, ValueError) as exc:  # a pool a mutation made unreadable reads as the error it gives
        return ("unreadable", type(exc).__name__)
