"""Scalar parameters whose values the HAL bounds (types.hal), checked where a model gives them as constants.

Strides and dilation factors are positive, explicit paddings non-negative, an implicit padding scheme is a
PaddingCode (0 is taken as VALID) and a fused activation a FusedActivationFunc. A CONSTANT_COPY parameter outside
these makes the model invalid (INVALID_ARGUMENT from getSupportedOperations and prepareModel); a parameter given at
run time is the kernels' business (INVALID_ARGUMENT from the execution).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from driver_under_test.errors import invalid
from harness.hal import Model, Operand, OperandLifeTime, OperandType, OperationType

_O = OperationType
_INT32 = int(OperandType.INT32)
_BOOL = int(OperandType.BOOL)
_COPY = int(OperandType.INT32), int(OperandLifeTime.CONSTANT_COPY)

_POSITIVE = ("positive", lambda v: v >= 1)
_NON_NEGATIVE = ("non-negative", lambda v: v >= 0)
_PADDING_CODE = ("a padding code (0, 1 or 2)", lambda v: v in (0, 1, 2))
_ACTIVATION = ("a fused activation (0 to 3)", lambda v: 0 <= v <= 3)
# Parameter name -> (what it must be, the test).
_DOMAINS: dict[str, tuple[str, Callable[[int], bool]]] = {
    "stride": _POSITIVE,
    "dilation": _POSITIVE,
    "padding": _NON_NEGATIVE,
    "padding scheme": _PADDING_CODE,
    "activation": _ACTIVATION,
}


@dataclass(frozen=True)
class _Window:
    """Where a windowed operation's parameters sit: `first` is the first padding input; `window` counts the
    window-size scalars (pooling), `extras` the scalars between them and the activation (multiplier, groups)."""

    first: int
    window: int = 0
    extras: int = 0
    dilation: bool = False

    def positions(self, inputs: Sequence[Operand]) -> list[tuple[str, int]]:
        """(parameter, input position) of the calling form these inputs use."""
        implicit_required = self.first + 1 + 2 + self.window + self.extras + 1
        n = len(inputs)
        explicit = n >= implicit_required + 3 and int(inputs[implicit_required].type) != _BOOL
        i = self.first
        named = [("padding", i + k) for k in range(4)] if explicit else [("padding scheme", i)]
        i += 4 if explicit else 1
        named += [("stride", i), ("stride", i + 1)]
        i += 2 + self.window + self.extras
        named.append(("activation", i))
        if self.dilation:
            named += [("dilation", i + 2), ("dilation", i + 3)]
        return named


def _transpose_positions(inputs: Sequence[Operand]) -> list[tuple[str, int]]:
    # The implicit form has the output shape tensor at position 3, the explicit one a padding scalar.
    if len(inputs) > 3 and int(inputs[3].type) != _INT32:
        return [("padding scheme", 4), ("stride", 5), ("stride", 6), ("activation", 7)]
    return [("padding", 3), ("padding", 4), ("padding", 5), ("padding", 6), ("stride", 7), ("stride", 8),
            ("activation", 9)]


_POOL = _Window(first=1, window=2).positions


def _activation_at(position: int) -> Callable[[Sequence[Operand]], list[tuple[str, int]]]:
    """An operation whose only bounded parameter is its fused activation, at this input position."""
    return lambda inputs: [("activation", position)]

# Operation -> where its bounded parameters sit, given its input operands.
PARAMETER_POSITIONS: dict[int, Callable[[Sequence[Operand]], list[tuple[str, int]]]] = {
    int(_O.CONV_2D): _Window(first=3, dilation=True).positions,
    int(_O.DEPTHWISE_CONV_2D): _Window(first=3, extras=1, dilation=True).positions,
    int(_O.GROUPED_CONV_2D): _Window(first=3, extras=1).positions,
    int(_O.TRANSPOSE_CONV_2D): _transpose_positions,
    int(_O.AVERAGE_POOL_2D): _POOL,
    int(_O.MAX_POOL_2D): _POOL,
    int(_O.L2_POOL_2D): _POOL,
    **{int(op): _activation_at(2) for op in (_O.ADD, _O.SUB, _O.MUL, _O.DIV)},
    int(_O.FULLY_CONNECTED): _activation_at(3),
    int(_O.RNN): _activation_at(5),
    int(_O.UNIDIRECTIONAL_SEQUENCE_RNN): _activation_at(5),
    int(_O.BIDIRECTIONAL_SEQUENCE_RNN): _activation_at(12),
    int(_O.SVDF): _activation_at(6),
}


def check_parameters(model: Model, op_type: int, inputs: Sequence[Operand], what: object) -> None:
    """Raise INVALID_ARGUMENT when a CONSTANT_COPY parameter of the operation lies outside its domain."""
    positions = PARAMETER_POSITIONS.get(op_type)
    if positions is None:
        return
    for name, i in positions(inputs):
        if i >= len(inputs):
            continue
        operand = inputs[i]
        if (int(operand.type), int(operand.lifetime)) != _COPY or operand.location.length != 4:
            continue  # a model input (checked at run time), a pool constant, or an omitted optional input
        offset = operand.location.offset
        value = int.from_bytes(bytes(model.operand_values[offset : offset + 4]), "little", signed=True)
        must, holds = _DOMAINS[name]
        if not holds(value):
            raise invalid(f"{what} input {i} ({name}) must be {must}, got {value}", f"V10.{name.replace(' ', '_')}")
