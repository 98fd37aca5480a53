"""Mutations of parameter values: a constant scalar parameter outside the range its operation defines (V10).

The ranges are the catalogue's (harness.ops.parameters): strides and dilations of 0 or below, negative explicit
paddings, padding schemes and fused activation codes that do not exist. The new value is stored as a CONSTANT_COPY
(the validator reads only those), so the model must be refused at validation.
"""

from __future__ import annotations

from dataclasses import replace

from harness.gen.mutations._common import copy_model, graphs, pick
from harness.gen.mutations._registry import mutation
from harness.gen.source import Source
from harness.hal import DataLocation, Model, OperandLifeTime, OperandType
from harness.ops.parameters import PARAMETER_DOMAINS, bounded_positions

L = OperandLifeTime
_CONSTANTS = frozenset({int(L.CONSTANT_COPY), int(L.CONSTANT_REFERENCE)})


@mutation(
    "parameter_out_of_range",
    "V10",
    "model",
    "a constant stride, dilation, padding, padding scheme or fused activation of a windowed operation gets a value "
    "outside the range the operation defines",
    operations=frozenset(PARAMETER_DOMAINS),
)
def _parameter_out_of_range(model: Model, source: Source) -> Model:
    sites = []
    for g, graph in enumerate(graphs(model)):
        operands = graph.operands
        for op in graph.operations:
            types = [int(operands[k].type) for k in op.inputs]
            for position, _name, domain in bounded_positions(int(op.type), types):
                k = op.inputs[position]
                o = operands[k]
                # An operand only this operation reads: no other operation sees the new value.
                if int(o.type) == OperandType.INT32 and int(o.lifetime) in _CONSTANTS and o.number_of_consumers == 1:
                    sites.append((g, k, domain))
    g, k, domain = pick(source, sites, "constant bounded parameter")
    value = int(source.choice(domain.outside()))
    mutated = copy_model(model)
    values = bytes(mutated.operand_values)
    offset = -len(values) % 4 + len(values)  # 4-byte aligned, after what is there
    values = values.ljust(offset, b"\0") + value.to_bytes(4, "little", signed=True)
    operand = graphs(mutated)[g].operands[k]
    operand.lifetime = L.CONSTANT_COPY
    operand.location = DataLocation(pool_index=0, offset=offset, length=4)
    return replace(mutated, operand_values=values)
