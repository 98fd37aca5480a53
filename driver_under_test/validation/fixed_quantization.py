"""Outputs whose scale and zero point the HAL fixes (types.hal): a model that declares others is invalid.

The values follow from the output range: a sigmoid or softmax lies in [0, 1] (steps of 1/256), a tanh or an L2
normalized value in [-1, 1] (steps of 1/128), a hit flag is 0 or 1, a quantized box coordinate has 3 fraction bits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from driver_under_test.errors import invalid
from harness.hal import Operand, OperandType, OperationType

_O, _T = OperationType, OperandType
_Q8, _Q8S, _Q16A = _T.TENSOR_QUANT8_ASYMM, _T.TENSOR_QUANT8_ASYMM_SIGNED, _T.TENSOR_QUANT16_ASYMM

_UNIT_INTERVAL = {_Q8: (1.0 / 256, 0), _Q8S: (1.0 / 256, -128)}
_SYMMETRIC_UNIT = {_Q8: (1.0 / 128, 128), _Q8S: (1.0 / 128, 0)}

# (operation type, output position) -> {output type: (scale, zero point)}
FIXED_OUTPUT_QUANTIZATION: dict[tuple[int, int], dict[int, tuple[float, int]]] = {
    (_O.LOGISTIC, 0): _UNIT_INTERVAL,
    (_O.SOFTMAX, 0): _UNIT_INTERVAL,
    (_O.TANH, 0): _SYMMETRIC_UNIT,
    (_O.L2_NORMALIZATION, 0): _SYMMETRIC_UNIT,
    (_O.HASHTABLE_LOOKUP, 1): {_Q8: (1.0, 0)},
    (_O.AXIS_ALIGNED_BBOX_TRANSFORM, 0): {_Q16A: (0.125, 0)},
}
# The operations with at least one such output.
FIXED_OPERATIONS = frozenset(op for op, _ in FIXED_OUTPUT_QUANTIZATION)


def _same_scale(a: float, b: float) -> bool:
    # Scales travel as float32: 1/256 declared in float32 and compared in float64 must still match.
    return math.isclose(float(a), b, rel_tol=1e-6, abs_tol=0.0)


def check_fixed_output_quantization(op_type: int, outputs: Sequence[Operand], what: object) -> None:
    """Raise INVALID_ARGUMENT when an output the HAL fixes has another scale or zero point."""
    if op_type not in FIXED_OPERATIONS:
        return
    for position, operand in enumerate(outputs):
        fixed = FIXED_OUTPUT_QUANTIZATION.get((op_type, position), {}).get(operand.type)
        if fixed is None:
            continue
        scale, zero_point = fixed
        if not _same_scale(operand.scale, scale) or operand.zero_point != zero_point:
            raise invalid(
                f"{what} output {position} must have scale {scale} and zero point {zero_point}, "
                f"got {operand.scale} and {operand.zero_point}",
                "V10.fixed_output_quantization",
            )
