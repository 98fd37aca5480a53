"""Model mutations that break the references between subgraphs (V25): out of range, malformed, cyclic, mismatched."""

from __future__ import annotations

from harness.gen.mutations._common import CONTROL_FLOW, UINT32_MAX, copy_model, graphs, pick
from harness.gen.mutations._registry import mutation
from harness.gen.source import Source
from harness.hal import DataLocation, Model, Operand, OperandLifeTime, OperandType, Operation, OperationType, Subgraph

L = OperandLifeTime


def _subgraph_operands(model: Model) -> list[tuple[int, int]]:
    """(graph, operand) of every SUBGRAPH reference operand."""
    return [
        (g, k)
        for g, graph in enumerate(graphs(model))
        for k, o in enumerate(graph.operands)
        if int(o.lifetime) == L.SUBGRAPH and int(o.type) == OperandType.SUBGRAPH
    ]


def _reference(offset: int) -> Operand:
    return Operand(OperandType.SUBGRAPH, lifetime=L.SUBGRAPH, location=DataLocation(0, offset, 0))


def _out_of_range(model: Model, source: Source) -> int:
    n = len(model.referenced)
    return source.choice([n, n + source.integer(1, 100), UINT32_MAX])


@mutation(
    "subgraph_reference_out_of_range",
    "V25",
    "model",
    "a SUBGRAPH operand names a referenced subgraph that does not exist",
)
def _reference_out_of_range(model: Model, source: Source) -> Model:
    g, k = pick(source, _subgraph_operands(model), "SUBGRAPH operand")
    mutated = copy_model(model)
    graphs(mutated)[g].operands[k].location.offset = _out_of_range(model, source)
    return mutated


@mutation(
    "dangling_subgraph_operand_added",
    "V25",
    "model",
    "an unused SUBGRAPH operand naming a referenced subgraph that does not exist is added",
)
def _dangling_reference(model: Model, source: Source) -> Model:
    mutated = copy_model(model)
    source.choice(graphs(mutated)).operands.append(_reference(_out_of_range(model, source)))
    return mutated


@mutation(
    "subgraph_location_malformed",
    "V25",
    "model",
    "a SUBGRAPH operand's location has a non-zero pool index or length",
)
def _location_malformed(model: Model, source: Source) -> Model:
    g, k = pick(source, _subgraph_operands(model), "SUBGRAPH operand")
    mutated = copy_model(model)
    loc = graphs(mutated)[g].operands[k].location
    if source.boolean():
        loc.pool_index = source.integer(1, 8)
    else:
        loc.length = source.integer(1, 64)
    return mutated


def _reaches(model: Model, start: int, goal: int) -> bool:
    """True when referenced subgraph `goal` is `start` or reachable from it through SUBGRAPH operands."""
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node in seen or not 0 <= node < len(model.referenced):
            continue
        seen.add(node)
        todo += [o.location.offset for o in model.referenced[node].operands if int(o.lifetime) == L.SUBGRAPH]
    return False


@mutation(
    "subgraph_reference_cycle",
    "V25",
    "model",
    "a referenced subgraph names itself or a subgraph that leads back to it",
)
def _reference_cycle(model: Model, source: Source) -> Model:
    r = pick(source, range(len(model.referenced)), "referenced subgraph")
    # The subgraphs from which r can be reached; naming one of them from r closes a cycle.
    ancestors = [a for a in range(len(model.referenced)) if _reaches(model, a, r)]
    target = source.choice(ancestors)
    mutated = copy_model(model)
    graph = mutated.referenced[r]
    own = [k for k, o in enumerate(graph.operands) if int(o.lifetime) == L.SUBGRAPH]
    if own and source.boolean():
        graph.operands[source.choice(own)].location.offset = target
    else:
        graph.operands.append(_reference(target))
    return mutated


def _types(graph: Subgraph, indexes: list[int]) -> tuple[int, ...]:
    return tuple(int(graph.operands[i].type) for i in indexes)


def _fits(graph: Subgraph, op: Operation, role: int, sub: Subgraph) -> bool:
    """Whether `sub` could be subgraph `role` (0 or 1: then/else of an IF, condition/body of a WHILE) of `op`,
    judging by operand counts and types only (failing this, no dimensions or quantization could make it fit)."""
    ins, outs = _types(sub, sub.input_indexes), _types(sub, sub.output_indexes)
    outer_out = _types(graph, op.outputs)
    if int(op.type) == OperationType.IF:
        return ins == _types(graph, op.inputs[3:]) and outs == outer_out
    if ins != _types(graph, op.inputs[2:]):
        return False
    if role == 0:  # WHILE condition: one TENSOR_BOOL8
        return outs == (int(OperandType.TENSOR_BOOL8),)
    # WHILE body: gives back a prefix of its inputs, at least the operation's outputs.
    return len(outer_out) <= len(outs) <= len(ins) and outs == ins[: len(outs)] and outs[: len(outer_out)] == outer_out


@mutation(
    "control_flow_subgraph_mismatch",
    "V25",
    "model",
    "an IF/WHILE operation names a referenced subgraph whose inputs or outputs do not fit the operation",
)
def _subgraph_mismatch(model: Model, source: Source) -> Model:
    options = []
    for g, graph in enumerate(graphs(model)):
        for op in graph.operations:
            if int(op.type) not in CONTROL_FLOW:
                continue
            # IF(cond, then, else, ...) names its branches at inputs 1-2, WHILE(cond, body, ...) at inputs 0-1.
            first = 1 if int(op.type) == OperationType.IF else 0
            for role, k in enumerate(op.inputs[first : first + 2]):
                options += [(g, k, t) for t, sub in enumerate(model.referenced) if not _fits(graph, op, role, sub)]
    g, k, t = pick(source, options, "IF/WHILE subgraph operand with an unfitting alternative")
    mutated = copy_model(model)
    graphs(mutated)[g].operands[k].location.offset = t
    return mutated
