"""V10.bias_quantization: a TENSOR_INT32 bias has zero point 0 and scale input scale * weights scale, as types.hal
gives it for the convolutions, FULLY_CONNECTED and QUANTIZED_16BIT_LSTM; the driver and the reference agree on it."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.faults import FaultSet
from driver_under_test.validation import Limits, validate_model
from driver_under_test.validation.bias_quantization import check_bias_quantization
from harness.hal import Model, SymmPerChannelQuantParams
from harness.reference import validate_model as reference_validate_model

from .builders import (
    BIAS_SCALE,
    OP,
    Q16_BIAS_SCALE,
    per_channel_conv_model,
    quantized_16bit_lstm_model,
    quantized_conv_model,
    quantized_fully_connected_model,
    rejects,
)

LIMITS = Limits()
RULE = "V10.bias_quantization"
CONVOLUTIONS = [OP.CONV_2D, OP.DEPTHWISE_CONV_2D, OP.GROUPED_CONV_2D, OP.TRANSPOSE_CONV_2D]


def _with_bias_scale(name: str, scale: float) -> Model:
    """The named hand-built model with its (first) bias at `scale`."""
    if name == "FULLY_CONNECTED":
        return quantized_fully_connected_model(bias_scale=scale)
    if name == "QUANTIZED_16BIT_LSTM":
        return quantized_16bit_lstm_model((scale, Q16_BIAS_SCALE, Q16_BIAS_SCALE, Q16_BIAS_SCALE))
    return quantized_conv_model(OP[name], bias_scale=scale)


PRODUCTS = {"FULLY_CONNECTED": BIAS_SCALE, "QUANTIZED_16BIT_LSTM": Q16_BIAS_SCALE} | {
    op.name: BIAS_SCALE for op in CONVOLUTIONS
}


def _driver_accepts(model: Model) -> bool:
    try:
        validate_model(model, LIMITS)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_a_bias_at_the_product_scale_is_accepted_also_rounded_to_float32(name: str) -> None:
    for scale in (PRODUCTS[name], float(np.float32(PRODUCTS[name] * (1 + 3e-8)))):
        validate_model(_with_bias_scale(name, scale), LIMITS)


@pytest.mark.parametrize("name", sorted(PRODUCTS))
@pytest.mark.parametrize("factor", [0.0, 0.5, 2.0, 1 + 2**-10, 1 - 1e-5])
def test_a_bias_scale_off_the_product_is_refused(name: str, factor: float) -> None:
    model = _with_bias_scale(name, PRODUCTS[name] * factor)
    error = rejects(lambda: validate_model(model, LIMITS), RULE)
    assert "input 9 (bias)" in str(error) if name == "QUANTIZED_16BIT_LSTM" else "input 2 (bias)" in str(error)


@pytest.mark.parametrize("gate", [9, 10, 11, 12])
def test_each_gate_bias_of_the_16bit_lstm_is_checked(gate: int) -> None:
    scales = [Q16_BIAS_SCALE] * 4
    scales[gate - 9] = 1 / 128  # the input scale alone
    rejects(lambda: validate_model(quantized_16bit_lstm_model(tuple(scales)), LIMITS), RULE)


def test_the_tolerance_is_the_reference_s_relative_1e_6_of_the_smaller_scale() -> None:
    # Both sides of the bound, above and below the product: the driver and the reference answer alike.
    for name, product in PRODUCTS.items():
        for factor, valid in ((1 + 0.9e-6, True), (1 - 0.9e-6, True), (1 + 1.1e-6, False), (1 - 1.1e-6, False)):
            model = _with_bias_scale(name, product * factor)
            assert _driver_accepts(model) is valid, (name, factor)
            assert (reference_validate_model(model) == []) is valid, (name, factor)


def test_a_per_channel_filter_leaves_the_bias_scale_to_its_channels() -> None:
    # types.hal gives each value the scale input scale * its channel's filter scale; the operand's own scale
    # (0.0 in the HAL's words) takes no part in the result, and the reference does not compare it either.
    model = per_channel_conv_model()
    model.main.operands[2].scale = 0.3
    validate_model(model, LIMITS)
    assert reference_validate_model(model) == []


def test_a_non_zero_bias_zero_point_is_refused() -> None:
    # validate_model reports it as V5.zero_point first (TENSOR_INT32 has no zero point); the operation's own check
    # names the bias.
    model = quantized_fully_connected_model(bias_zero_point=3)
    rejects(lambda: validate_model(model, LIMITS), "V5.zero_point")
    inputs = [model.main.operands[i] for i in model.main.operations[0].inputs]
    rejects(lambda: check_bias_quantization(int(OP.FULLY_CONNECTED), inputs, "FC", FaultSet()), RULE)


def test_a_per_channel_filter_s_bias_still_needs_zero_point_0() -> None:
    model = per_channel_conv_model()
    model.main.operands[2].zero_point = 1
    inputs = [model.main.operands[i] for i in model.main.operations[0].inputs]
    assert isinstance(inputs[1].extra_params, SymmPerChannelQuantParams)
    rejects(lambda: check_bias_quantization(int(OP.CONV_2D), inputs, "CONV", FaultSet()), RULE)
