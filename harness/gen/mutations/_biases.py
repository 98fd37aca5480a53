"""Mutations of a quantized bias (V10): its scale moved off input scale * weights scale, or its zero point off 0.

The sites are the catalogue's (harness.ops.biases): the TENSOR_INT32 biases of the convolutions, FULLY_CONNECTED
and QUANTIZED_16BIT_LSTM, next to per-tensor weights (a per-channel filter's bias has no scale of its own to
break). The scales drawn are those a converter gets wrong: 0 (no quantization recorded), the input's or the
weights' scale alone, the product doubled or halved, and the product off by 2^-10, well past the relative 1e-6
scales are compared with and still close enough to tell a validator that only looks for gross errors.
"""

from __future__ import annotations

import math

from harness.gen.mutations._common import copy_model, graphs, paired_operands, pick
from harness.gen.mutations._registry import mutation
from harness.gen.source import Source
from harness.hal import Model, OperandLifeTime, OperandType
from harness.ops.biases import QUANTIZED_BIASES, bias_sites

_TENSOR_INT32 = int(OperandType.TENSOR_INT32)
_PER_CHANNEL = int(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL)
_NO_VALUE = int(OperandLifeTime.NO_VALUE)
# Out of 5 draws, how many break the zero point rather than the scale (V5 has a mutation of its own for that).
_ZERO_POINT_DRAWS = 1


def _wrong_scales(input_scale: float, weights_scale: float) -> list[float]:
    product = input_scale * weights_scale
    step = 2.0**-10
    drawn = [0.0, input_scale, weights_scale, product * 2, product / 2, product * (1 + step), product * (1 - step)]
    return [s for s in drawn if not math.isclose(s, product, rel_tol=1e-5)]


@mutation(
    "bias_quantization_off",
    "V10",
    "model",
    "a quantized (TENSOR_INT32) bias of a convolution, FULLY_CONNECTED or QUANTIZED_16BIT_LSTM gets a scale other "
    "than input scale * weights scale, or a non-zero zero point",
    also={"V5"},
    operations=frozenset(QUANTIZED_BIASES),
)
def _bias_quantization_off(model: Model, source: Source) -> Model:
    paired = paired_operands(model)
    sites = []
    for g, graph in enumerate(graphs(model)):
        operands = graph.operands
        for op in graph.operations:
            for site in bias_sites(int(op.type)):
                if site.bias >= len(op.inputs):
                    continue
                k = op.inputs[site.bias]
                bias, weights = operands[k], operands[op.inputs[site.weights]]
                # A bias only this operation reads: no other operation's rules see the change.
                if (
                    int(bias.type) != _TENSOR_INT32
                    or int(bias.lifetime) == _NO_VALUE
                    or bias.number_of_consumers != 1
                    or (g, k) in paired
                    or int(weights.type) == _PER_CHANNEL
                ):
                    continue
                scales = _wrong_scales(float(operands[op.inputs[site.input]].scale), float(weights.scale))
                sites.append((g, k, scales))
    g, k, scales = pick(source, sites, "quantized bias next to per-tensor weights")
    mutated = copy_model(model)
    bias = graphs(mutated)[g].operands[k]
    if source.integer(1, 5) <= _ZERO_POINT_DRAWS:
        bias.zero_point = source.choice([1, -1, 128, source.integer(2, 1 << 20)])
    else:
        bias.scale = source.choice(scales)
    return mutated
