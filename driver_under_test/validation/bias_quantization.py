"""Quantized biases: the scale and zero point the HAL prescribes for an operation's TENSOR_INT32 bias (types.hal).

A bias added to a sum of input x weights products is stored at that sum's scale: bias scale = input scale *
weights scale, zero point 0. For a per-channel filter the HAL sets each value's scale apart (input scale *
filter scale of its channel) and gives the bias operand's own scale no meaning for the result, so only the zero
point is checked then. QUANTIZED_16BIT_LSTM's weights share one scale (input 1's stands for all of them).
QUANTIZED_LSTM is left out: which input and weights scales its biases carry stays open in the HAL (a layer-norm
model reads them at another scale; the projection's "input" may be the hidden state).
"""

from __future__ import annotations

from collections.abc import Sequence

from driver_under_test.errors import invalid
from driver_under_test.faults import FaultSet, define
from harness.hal import Operand, OperandType, OperationType

_O = OperationType
_TENSOR_INT32 = int(OperandType.TENSOR_INT32)
_PER_CHANNEL = int(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL)
_RULE = "V10.bias_quantization"

BIAS_SCALE_UNCHECKED = define(
    "bias_scale_unchecked",
    "validation",
    "Never compares a quantized bias's scale with input scale * weights scale (CONV_2D, DEPTHWISE_CONV_2D, "
    "GROUPED_CONV_2D, TRANSPOSE_CONV_2D, FULLY_CONNECTED, QUANTIZED_16BIT_LSTM): a model whose TENSOR_INT32 bias "
    "has another scale (0.0, say) is accepted instead of INVALID_ARGUMENT (breaks V10) and runs, each engine "
    "reading the bias at a scale of its own choosing.",
).name

# (bias, input, weights): input positions of the bias and of the two operands whose scales multiply to its scale.
_CONVOLUTION = ((2, 0, 1),)
# Operation -> its quantized biases.
BIAS_PRODUCTS: dict[int, tuple[tuple[int, int, int], ...]] = {
    int(_O.CONV_2D): _CONVOLUTION,
    int(_O.DEPTHWISE_CONV_2D): _CONVOLUTION,
    int(_O.GROUPED_CONV_2D): _CONVOLUTION,
    int(_O.TRANSPOSE_CONV_2D): _CONVOLUTION,
    int(_O.FULLY_CONNECTED): _CONVOLUTION,
    int(_O.QUANTIZED_16BIT_LSTM): tuple((gate, 0, 1) for gate in (9, 10, 11, 12)),
}
BIAS_OPERATIONS = frozenset(BIAS_PRODUCTS)


def _is_product(scale: float, product: float) -> bool:
    # Relative 1e-6 of the smaller scale, as the HAL's reference implementation and the harness's reference
    # compare them: float32 scales and their float64 product differ far less, a wrong scale far more.
    return abs(scale - product) <= 1e-6 * min(abs(scale), abs(product))


def check_bias_quantization(op_type: int, inputs: Sequence[Operand], what: object, faults: FaultSet) -> None:
    """Raise INVALID_ARGUMENT when a quantized bias's zero point is not 0 or its scale not input * weights scale."""
    for bias_at, input_at, weights_at in BIAS_PRODUCTS.get(op_type, ()):
        if bias_at >= len(inputs):
            continue
        bias = inputs[bias_at]
        if int(bias.type) != _TENSOR_INT32:
            continue  # a float bias: nothing quantized
        if bias.zero_point != 0:
            raise invalid(f"{what} input {bias_at} (bias) must have zero point 0, got {bias.zero_point}", _RULE)
        weights = inputs[weights_at]
        if int(weights.type) == _PER_CHANNEL or faults.active(BIAS_SCALE_UNCHECKED):
            continue
        product = float(inputs[input_at].scale) * float(weights.scale)
        if not _is_product(float(bias.scale), product):
            raise invalid(
                f"{what} input {bias_at} (bias) must have scale input {input_at} scale * input {weights_at} "
                f"scale = {product}, got {bias.scale}",
                _RULE,
            )
