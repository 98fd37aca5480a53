"""Operands whose scale and zero point the HAL fixes (types.hal), by operation, side and position.

A sigmoid or softmax lies in [0, 1] (steps of 1/256), a tanh or an L2-normalized value in [-1, 1] (steps of 1/128), a
hit flag is 0 or 1, a quantized box coordinate has 3 fraction bits; QUANTIZED_16BIT_LSTM fixes its activations
(input, previous output, output: [-1, 127/128]) and its cell state (Q4.11) on both sides. The generators draw these
operands so; the mutation fixed_quantization_off moves one of them. The signature checks of the operations (in
their modules) refuse the others.
"""

from __future__ import annotations

from harness.hal import OperandType, OperationType

_O, _T = OperationType, OperandType
_UNIT_INTERVAL = {int(_T.TENSOR_QUANT8_ASYMM): (1.0 / 256, 0), int(_T.TENSOR_QUANT8_ASYMM_SIGNED): (1.0 / 256, -128)}
_SYMMETRIC_UNIT = {int(_T.TENSOR_QUANT8_ASYMM): (1.0 / 128, 128), int(_T.TENSOR_QUANT8_ASYMM_SIGNED): (1.0 / 128, 0)}
_Q16_ACTIVATION = {int(_T.TENSOR_QUANT8_ASYMM): (1.0 / 128, 128)}
_Q16_CELL_STATE = {int(_T.TENSOR_QUANT16_SYMM): (2.0**-11, 0)}

# (operation type, "input" or "output", position) -> {operand type: (scale, zero point)}
FIXED_QUANTIZATION: dict[tuple[int, str, int], dict[int, tuple[float, int]]] = {
    (int(_O.LOGISTIC), "output", 0): _UNIT_INTERVAL,
    (int(_O.SOFTMAX), "output", 0): _UNIT_INTERVAL,
    (int(_O.TANH), "output", 0): _SYMMETRIC_UNIT,
    (int(_O.L2_NORMALIZATION), "output", 0): _SYMMETRIC_UNIT,
    (int(_O.HASHTABLE_LOOKUP), "output", 1): {int(_T.TENSOR_QUANT8_ASYMM): (1.0, 0)},
    (int(_O.AXIS_ALIGNED_BBOX_TRANSFORM), "output", 0): {int(_T.TENSOR_QUANT16_ASYMM): (0.125, 0)},
    (int(_O.HEATMAP_MAX_KEYPOINT), "output", 1): {int(_T.TENSOR_QUANT16_ASYMM): (0.125, 0)},
    (int(_O.QUANTIZED_16BIT_LSTM), "input", 0): _Q16_ACTIVATION,
    (int(_O.QUANTIZED_16BIT_LSTM), "input", 13): _Q16_CELL_STATE,
    (int(_O.QUANTIZED_16BIT_LSTM), "input", 14): _Q16_ACTIVATION,
    (int(_O.QUANTIZED_16BIT_LSTM), "output", 0): _Q16_CELL_STATE,
    (int(_O.QUANTIZED_16BIT_LSTM), "output", 1): _Q16_ACTIVATION,
}
# The operations with at least one such operand.
FIXED_OPERATIONS = frozenset(op for op, _, _ in FIXED_QUANTIZATION)


def fixed_quantization(op_type: int, side: str, position: int, operand_type: int) -> tuple[float, int] | None:
    """(scale, zero point) the HAL fixes for this operand of the operation, or None when it fixes none."""
    return FIXED_QUANTIZATION.get((int(op_type), side, position), {}).get(int(operand_type))
