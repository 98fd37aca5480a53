"""How big and how plain a case is: the order every accepted candidate must go down in, so the loop never cycles.

Lexicographic, most important first: operations, operands, model inputs and outputs, elements, then how far the
values are from plain ones (per element of the input and constant tensors: 0 for real zero, 1 for real one, 2 for
anything else), how far the quantization parameters are (a scale that is no power of two, a zero point neither 0
nor the type's middle, unequal per-channel scales), relaxed computation, and a request not in the plain layout.
"""

from __future__ import annotations

import math

from harness.hal.sizes import QUANTIZED_TYPES, ZERO_POINT_RANGES
from harness.reduce._graph import count_operations, operand_type
from harness.reduce._state import State
from harness.reduce._values import middle_zero_point, real_one, real_zero

Cost = tuple[int, ...]


def cost(state: State) -> Cost:
    """The state's place in the reduction order (smaller is reduced further)."""
    model = state.model
    operands = model.get("operands", [])
    io = len(model.get("inputIndexes", [])) + len(model.get("outputIndexes", []))
    return (
        count_operations(model),
        len(operands) + sum(len(s.get("operands", [])) for s in model.get("referenced", [])),
        io,
        state.elements,
        _value_cost(state),
        sum(_quantization_cost(o) for o in operands),
        int(bool(model.get("relaxComputationFloat32toFloat16"))),
        int(not state.plain),
    )


def _value_cost(state: State) -> int:
    operands = state.model.get("operands", [])
    total = 0
    for k, value in state.data().items():
        operand = operands[k]
        zeros = value == real_zero(operand)
        ones = (value == real_one(operand, value)) & ~zeros
        total += 2 * int(value.size) - 2 * int(zeros.sum()) - int(ones.sum())
    return total


def _quantization_cost(operand: dict) -> int:
    t = operand_type(operand)
    if t not in QUANTIZED_TYPES:
        return 0
    irregular = 0
    scale = float(operand.get("scale", 0.0) or 0.0)
    if scale > 0 and 2.0 ** round(math.log2(scale)) != scale:
        irregular += 1
    if int(operand.get("zeroPoint", 0)) not in (0, middle_zero_point(t)) and ZERO_POINT_RANGES[t] != (0, 0):
        irregular += 1
    scales = operand.get("channelQuant", {}).get("scales", [])
    if len(set(scales)) > 1:
        irregular += 1
    return irregular
