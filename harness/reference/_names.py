"""Readable names of HAL enumeration values for validation messages, tolerant of out-of-range numbers."""

from __future__ import annotations

from enum import IntEnum

from harness.hal import OperandLifeTime, OperandType, OperationType


def _name(enum: type[IntEnum], value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def type_name(value: int) -> str:
    """OperandType name, or the number."""
    return _name(OperandType, value)


def lifetime_name(value: int) -> str:
    """OperandLifeTime name, or the number."""
    return _name(OperandLifeTime, value)


def operation_name(value: int) -> str:
    """OperationType name, or the number."""
    return _name(OperationType, value)
