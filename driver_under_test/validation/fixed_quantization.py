"""Operands whose scale and zero point the HAL fixes (types.hal): a model that declares others is invalid.

The values follow from the range of the values: a sigmoid or softmax lies in [0, 1] (steps of 1/256), a tanh or an
L2 normalized value in [-1, 1] (steps of 1/128), a hit flag is 0 or 1, a quantized box coordinate has 3 fraction
bits. QUANTIZED_16BIT_LSTM fixes its activations both ways: input, previous output and output in [-1, 127/128]
(1/128, zero point 128), the cell state in Q4.11 (2^-11, zero point 0); its fixed-point arithmetic is built on
those scales, so a model declaring others would be computed as if it had them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from driver_under_test.errors import invalid
from driver_under_test.faults import FaultSet, define
from harness.hal import Operand, OperandType, OperationType

_O, _T = OperationType, OperandType
_Q8, _Q8S, _Q16A, _Q16S = (
    _T.TENSOR_QUANT8_ASYMM,
    _T.TENSOR_QUANT8_ASYMM_SIGNED,
    _T.TENSOR_QUANT16_ASYMM,
    _T.TENSOR_QUANT16_SYMM,
)

_UNIT_INTERVAL = {_Q8: (1.0 / 256, 0), _Q8S: (1.0 / 256, -128)}
_SYMMETRIC_UNIT = {_Q8: (1.0 / 128, 128), _Q8S: (1.0 / 128, 0)}
_Q16_ACTIVATION = {_Q8: (1.0 / 128, 128)}
_Q16_CELL_STATE = {_Q16S: (2.0**-11, 0)}

Q16_LSTM_QUANTIZATION_UNCHECKED = define(
    "q16_lstm_quantization_unchecked",
    "validation",
    "Never checks the quantization QUANTIZED_16BIT_LSTM fixes (input, previous output and output 1/128 with zero "
    "point 128; cell state in and out 2^-11 with zero point 0): a model declaring others is accepted instead of "
    "INVALID_ARGUMENT (breaks V10) and computed as if it had the fixed ones.",
).name

# (operation type, output position) -> {output type: (scale, zero point)}
FIXED_OUTPUT_QUANTIZATION: dict[tuple[int, int], dict[int, tuple[float, int]]] = {
    (_O.LOGISTIC, 0): _UNIT_INTERVAL,
    (_O.SOFTMAX, 0): _UNIT_INTERVAL,
    (_O.TANH, 0): _SYMMETRIC_UNIT,
    (_O.L2_NORMALIZATION, 0): _SYMMETRIC_UNIT,
    (_O.HASHTABLE_LOOKUP, 1): {_Q8: (1.0, 0)},
    (_O.AXIS_ALIGNED_BBOX_TRANSFORM, 0): {_Q16A: (0.125, 0)},
    (_O.HEATMAP_MAX_KEYPOINT, 1): {_Q16A: (0.125, 0)},
    (_O.QUANTIZED_16BIT_LSTM, 0): _Q16_CELL_STATE,
    (_O.QUANTIZED_16BIT_LSTM, 1): _Q16_ACTIVATION,
}
# (operation type, input position) -> {input type: (scale, zero point)}
FIXED_INPUT_QUANTIZATION: dict[tuple[int, int], dict[int, tuple[float, int]]] = {
    (_O.QUANTIZED_16BIT_LSTM, 0): _Q16_ACTIVATION,
    (_O.QUANTIZED_16BIT_LSTM, 13): _Q16_CELL_STATE,
    (_O.QUANTIZED_16BIT_LSTM, 14): _Q16_ACTIVATION,
}
# The operations with at least one such operand.
FIXED_OPERATIONS = frozenset(op for op, _ in (*FIXED_OUTPUT_QUANTIZATION, *FIXED_INPUT_QUANTIZATION))
# side -> (its table, its rule)
_SIDES = {
    "input": (FIXED_INPUT_QUANTIZATION, "V10.fixed_input_quantization"),
    "output": (FIXED_OUTPUT_QUANTIZATION, "V10.fixed_output_quantization"),
}


def _same_scale(a: float, b: float) -> bool:
    # Scales travel as float32: 1/256 declared in float32 and compared in float64 must still match.
    return math.isclose(float(a), b, rel_tol=1e-6, abs_tol=0.0)


def check_fixed_quantization(
    op_type: int, inputs: Sequence[Operand], outputs: Sequence[Operand], what: object, faults: FaultSet
) -> None:
    """Raise INVALID_ARGUMENT when an input or output the HAL fixes has another scale or zero point."""
    if op_type not in FIXED_OPERATIONS:
        return
    if op_type == _O.QUANTIZED_16BIT_LSTM and faults.active(Q16_LSTM_QUANTIZATION_UNCHECKED):
        return
    for side, operands in (("input", inputs), ("output", outputs)):
        table, rule = _SIDES[side]
        for position, operand in enumerate(operands):
            fixed = table.get((op_type, position), {}).get(operand.type)
            if fixed is None:
                continue
            scale, zero_point = fixed
            if not _same_scale(operand.scale, scale) or operand.zero_point != zero_point:
                raise invalid(
                    f"{what} {side} {position} must have scale {scale} and zero point {zero_point}, "
                    f"got {operand.scale} and {operand.zero_point}",
                    rule,
                )
