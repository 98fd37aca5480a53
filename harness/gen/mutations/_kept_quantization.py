"""The V10 mutation of an output that keeps an input's quantization (harness.ops.same_quantization): its scale or
zero point moved away from the input's, as a converter that requantizes where it must not would write it."""

from __future__ import annotations

from harness.gen.mutations._common import copy_model, graphs, paired_operands, pick
from harness.gen.mutations._registry import mutation
from harness.gen.source import Source
from harness.hal import Model, OperandType
from harness.ops.same_quantization import SAME_OPERATIONS, kept_from

_QUANTIZED = frozenset(
    int(t)
    for t in (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT16_ASYMM)
)


@mutation(
    "quantization_unlike_input",
    "V10",
    "model",
    "an output that must keep an input's quantization (RESHAPE, MAX_POOL_2D, RELU, GATHER, SPLIT, ...) gets "
    "another scale or zero point",
    also={"V5"},
    operations=SAME_OPERATIONS,
)
def _quantization_unlike_input(model: Model, source: Source) -> Model:
    paired = paired_operands(model)
    sites = []
    for g, graph in enumerate(graphs(model)):
        for op in graph.operations:
            for k, index in enumerate(op.outputs):
                at = kept_from(int(op.type), k)
                if at is None or at >= len(op.inputs) or (g, index) in paired:
                    continue
                out, source_operand = graph.operands[index], graph.operands[op.inputs[at]]
                if int(out.type) in _QUANTIZED and out.type == source_operand.type:
                    sites.append((g, index))
    g, index = pick(source, sites, "quantized output keeping an input's quantization")
    mutated = copy_model(model)
    out = graphs(mutated)[g].operands[index]
    if source.boolean():
        out.scale = out.scale * source.choice([2.0, 0.5, 1.0 + 2.0**-10])
    else:
        lo, hi = (-128, 127) if int(out.type) == OperandType.TENSOR_QUANT8_ASYMM_SIGNED else (0, 255)
        if int(out.type) == OperandType.TENSOR_QUANT16_ASYMM:
            hi = 65535
        out.zero_point = out.zero_point + 1 if out.zero_point < hi else out.zero_point - 1
    return mutated
