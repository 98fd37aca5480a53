"""Small wordings the engines unit's reports share."""

from __future__ import annotations

from harness.hal import OperandType


def type_name(operand_type: int) -> str:
    """An operand type's HAL name (its number when it has none)."""
    try:
        return OperandType(operand_type).name
    except ValueError:
        return str(operand_type)


def first_line(text: str) -> str:
    """The first line of a text without its leading blank lines ("" for none)."""
    lines = text.strip().splitlines()
    return lines[0] if lines else ""
