"""Quantized biases: which input of an operation is a TENSOR_INT32 bias and which inputs' scales multiply to its
scale (types.hal: zero point 0, bias scale = input scale * weights scale).

The catalogue's checks hold a model to this (`bias_check` for the convolutions and FULLY_CONNECTED, the
QUANTIZED_16BIT_LSTM check for its gate biases, whose eight weights share input 1's scale); the generators read
the table to break it on purpose. A per-channel filter gives each bias value a scale of its own, so the bias
operand's scale is not compared then. QUANTIZED_LSTM is absent: which scales its biases carry stays open in the
HAL (see harness.ops.recurrent).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.hal import OperationType


@dataclass(frozen=True)
class BiasSite:
    """Input positions of a quantized bias and of the two operands whose scales multiply to its scale."""

    bias: int
    input: int
    weights: int


_O = OperationType
_LAYER = (BiasSite(2, 0, 1),)
QUANTIZED_BIASES: dict[int, tuple[BiasSite, ...]] = {
    int(_O.CONV_2D): _LAYER,
    int(_O.DEPTHWISE_CONV_2D): _LAYER,
    int(_O.GROUPED_CONV_2D): _LAYER,
    int(_O.TRANSPOSE_CONV_2D): _LAYER,
    int(_O.FULLY_CONNECTED): _LAYER,
    int(_O.QUANTIZED_16BIT_LSTM): tuple(BiasSite(gate, 0, 1) for gate in (9, 10, 11, 12)),
}


def bias_sites(op_type: int) -> tuple[BiasSite, ...]:
    """The quantized-bias sites of an operation type (none for the others)."""
    return QUANTIZED_BIASES.get(int(op_type), ())
