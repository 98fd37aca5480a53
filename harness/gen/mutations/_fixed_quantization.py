"""The V10 mutation of a quantization the HAL fixes: an operand of harness.ops.fixed_quantization's table (a
LOGISTIC or TANH output, QUANTIZED_16BIT_LSTM's activations and cell state, ...) gets another scale or zero point.

The values drawn are those a converter gets wrong: the scale doubled or halved, 1/256 for 1/128 and the other way
round, and the zero point moved by one or to the other end of an 8-bit range.
"""

from __future__ import annotations

from harness.gen.mutations._common import copy_model, graphs, paired_operands, pick
from harness.gen.mutations._registry import mutation
from harness.gen.source import Source
from harness.hal import Model, OperandLifeTime, OperandType
from harness.ops.fixed_quantization import FIXED_OPERATIONS, fixed_quantization

_NO_VALUE = int(OperandLifeTime.NO_VALUE)
# Symmetric types hold the zero point at 0 under V5 already: only their scale is at stake here.
_SYMMETRIC = frozenset(int(t) for t in (OperandType.TENSOR_QUANT16_SYMM, OperandType.TENSOR_QUANT8_SYMM))


def _wrong(scale: float, zero_point: int, symmetric: bool) -> list[tuple[float, int]]:
    scales = [scale * 2, scale / 2, 1.0 / 256 if scale != 1.0 / 256 else 1.0 / 128]
    drawn = [(s, zero_point) for s in scales]
    if not symmetric:
        drawn += [(scale, zero_point + 1), (scale, zero_point - 1), (scale, 0 if zero_point else 128)]
    return drawn


@mutation(
    "fixed_quantization_off",
    "V10",
    "model",
    "an operand whose scale and zero point the HAL fixes (a LOGISTIC, SOFTMAX or TANH output, QUANTIZED_16BIT_LSTM's "
    "activations and cell state, ...) gets others",
    also={"V5"},
    operations=FIXED_OPERATIONS,
)
def _fixed_quantization_off(model: Model, source: Source) -> Model:
    paired = paired_operands(model)
    sites = []
    for g, graph in enumerate(graphs(model)):
        for op in graph.operations:
            for side, indexes in (("input", op.inputs), ("output", op.outputs)):
                for position, k in enumerate(indexes):
                    operand = graph.operands[k]
                    fixed = fixed_quantization(int(op.type), side, position, int(operand.type))
                    if fixed is None or int(operand.lifetime) == _NO_VALUE or (g, k) in paired:
                        continue
                    sites.append((g, k, _wrong(*fixed, int(operand.type) in _SYMMETRIC)))
    g, k, wrong = pick(source, sites, "operand of a quantization the HAL fixes")
    mutated = copy_model(model)
    operand = graphs(mutated)[g].operands[k]
    operand.scale, operand.zero_point = source.choice(wrong)
    return mutated
