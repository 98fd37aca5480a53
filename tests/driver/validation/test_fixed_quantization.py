"""V10.fixed_input_quantization and V10.fixed_output_quantization: QUANTIZED_16BIT_LSTM's activations and cell
state have the quantization types.hal fixes, on both sides; the driver and the reference agree on it."""

from __future__ import annotations

import pytest

from driver_under_test.faults import FaultSet
from driver_under_test.validation import Limits, validate_model
from driver_under_test.validation.fixed_quantization import check_fixed_quantization
from harness.hal import Model
from harness.reference import validate_model as reference_validate_model

from .builders import OP, quantized_16bit_lstm_model, rejects

LIMITS = Limits()
# Operand index in the hand-built model -> (side, position, rule): the five operands whose quantization is fixed.
FIXED = {
    0: ("input", 0, "V10.fixed_input_quantization"),
    13: ("input", 13, "V10.fixed_input_quantization"),
    14: ("input", 14, "V10.fixed_input_quantization"),
    15: ("output", 0, "V10.fixed_output_quantization"),
    16: ("output", 1, "V10.fixed_output_quantization"),
}


def _off(index: int, scale_factor: float = 1.0, zero_point_shift: int = 0) -> Model:
    model = quantized_16bit_lstm_model()
    operand = model.main.operands[index]
    operand.scale *= scale_factor
    operand.zero_point += zero_point_shift
    return model


def test_the_fixed_quantization_is_accepted() -> None:
    validate_model(quantized_16bit_lstm_model(), LIMITS)
    assert reference_validate_model(quantized_16bit_lstm_model()) == []


# The cell state is TENSOR_QUANT16_SYMM, whose zero point V5 already holds at 0: only its scale is at stake here.
CHANGES = [
    (index, factor, shift)
    for index in sorted(FIXED)
    for factor, shift in ((2.0, 0), (0.5, 0), (1.0, 1), (1.0, -1))
    if not (shift and index in (13, 15))
]


@pytest.mark.parametrize("index, factor, shift", CHANGES)
def test_another_scale_or_zero_point_is_refused_by_driver_and_reference(index: int, factor: float, shift: int) -> None:
    model = _off(index, factor, shift)
    side, position, rule = FIXED[index]
    error = rejects(lambda: validate_model(model, LIMITS), rule)
    assert f"{side} {position} must have scale" in str(error)
    assert reference_validate_model(model) != []


def test_the_fault_accepts_another_quantization_of_the_16bit_lstm_only() -> None:
    faults = FaultSet(["q16_lstm_quantization_unchecked"])
    operands = quantized_16bit_lstm_model().main.operands
    operands[0].scale = 0.5
    check_fixed_quantization(OP.QUANTIZED_16BIT_LSTM, operands[:15], operands[15:], "op", faults)
    with pytest.raises(Exception, match="output 0 must have scale"):
        tanh_output = operands[16]  # an 8-bit operand at 1/128 and zero point 128: TANH's fixed output
        tanh_output.zero_point = 0
        check_fixed_quantization(OP.TANH, [operands[0]], [tanh_output], "op", faults)
