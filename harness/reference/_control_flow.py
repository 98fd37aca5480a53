"""Referenced-subgraph rules: no reference cycles, and IF/WHILE subgraphs that fit the operation using them.

IF(cond, then, else, x...) -> y...: cond is a TENSOR_BOOL8 of shape [1]; each branch takes the x operands and
gives the y operands. WHILE(cond, body, x...) -> y...: with m = len(y) input-output, k state-only and n
input-only operands, x has m + k + n operands; the condition subgraph takes them all and gives one TENSOR_BOOL8 of
shape [1]; the body takes them all and gives m + k, each body output matching the body input at the same position.
"Matching" operands share type, scale, zero point and extra params and have compatible dimensions.
"""

from __future__ import annotations

from harness.hal import Model, Operand, OperandLifeTime, OperandType, Operation, OperationType, Subgraph
from harness.reference._names import operation_name, type_name
from harness.reference._rules import Violation, violation

L = OperandLifeTime


def referenced_indexes(model: Model, subgraph: Subgraph) -> list[int]:
    """Indexes into model.referenced that a subgraph's SUBGRAPH operands name (valid ones only)."""
    return [
        o.location.offset
        for o in subgraph.operands
        if int(o.lifetime) == L.SUBGRAPH and 0 <= o.location.offset < len(model.referenced)
    ]


def check_cycles(model: Model) -> list[Violation]:
    """Every reference cycle among main and the referenced subgraphs, each reported once."""
    found: list[Violation] = []
    # Node -1 is main; colours: 0 unvisited, 1 on the current path, 2 done.
    colour = dict.fromkeys(range(-1, len(model.referenced)), 0)

    def graph(node: int) -> Subgraph:
        return model.main if node < 0 else model.referenced[node]

    def visit(node: int, path: list[int]) -> None:
        colour[node] = 1
        path.append(node)
        for target in referenced_indexes(model, graph(node)):
            if colour[target] == 1:
                cycle = path[path.index(target) :] + [target]
                names = " -> ".join("main" if n < 0 else f"referenced[{n}]" for n in cycle)
                found.append(violation("model.subgraph.cycle", f"subgraph reference cycle {names}"))
            elif colour[target] == 0:
                visit(target, path)
        path.pop()
        colour[node] = 2

    for node in colour:
        if colour[node] == 0:
            visit(node, [])
    return found


def check_control_flow(
    model: Model, subgraph: Subgraph, operation: Operation, label: str, *, catalogued: bool
) -> list[Violation]:
    """IF/WHILE: the named subgraphs exist and their inputs and outputs fit the operation's operands."""
    checker = _CHECKERS.get(int(operation.type))
    if checker is None:
        return []
    name = operation_name(operation.type)
    if len(operation.inputs) < 3 or not operation.outputs:
        if catalogued:
            return []  # the signature check reports operand counts
        problems = [f"needs at least 3 inputs and 1 output, has {len(operation.inputs)} and {len(operation.outputs)}"]
    else:
        problems = checker(model, subgraph, operation)
    return [violation("model.subgraph.control_flow", f"{label} ({name}): {p}") for p in problems]


def _branch(model: Model, subgraph: Subgraph, index: int, role: str, problems: list[str]) -> Subgraph | None:
    operand = subgraph.operands[index]
    if int(operand.type) != OperandType.SUBGRAPH or int(operand.lifetime) != L.SUBGRAPH:
        problems.append(f"{role} operand {index} is not a SUBGRAPH reference")
        return None
    if not 0 <= operand.location.offset < len(model.referenced):
        return None  # reported as model.subgraph.reference
    return model.referenced[operand.location.offset]


def _io(graph: Subgraph, which: str) -> list[Operand] | None:
    indexes = graph.input_indexes if which == "inputs" else graph.output_indexes
    if any(not 0 <= i < len(graph.operands) for i in indexes):
        return None  # that subgraph's own index check reports it
    return [graph.operands[i] for i in indexes]


def _condition_problems(operand: Operand, what: str) -> list[str]:
    if int(operand.type) != OperandType.TENSOR_BOOL8 or list(operand.dimensions) != [1]:
        return [f"{what} is {type_name(operand.type)} {list(operand.dimensions)}, expected TENSOR_BOOL8 [1]"]
    return []


def _compatible(a: Operand, b: Operand) -> str | None:
    """Why two operands cannot stand for each other across a subgraph boundary, or None if they can."""
    if int(a.type) != int(b.type):
        return f"type {type_name(a.type)} vs {type_name(b.type)}"
    if a.dimensions and b.dimensions:
        if len(a.dimensions) != len(b.dimensions) or any(
            x and y and x != y for x, y in zip(a.dimensions, b.dimensions)
        ):
            return f"dimensions {list(a.dimensions)} vs {list(b.dimensions)}"
    if a.scale != b.scale or a.zero_point != b.zero_point:
        return f"quantization ({a.scale}, {a.zero_point}) vs ({b.scale}, {b.zero_point})"
    if a.extra_params != b.extra_params:
        return "extra params differ"
    return None


def _match(inner: list[Operand], outer: list[Operand], what: str) -> list[str]:
    problems = []
    for i, (a, b) in enumerate(zip(inner, outer)):
        why = _compatible(a, b)
        if why is not None:
            problems.append(f"{what} {i}: {why}")
    return problems


def _if_problems(model: Model, subgraph: Subgraph, operation: Operation) -> list[str]:
    problems = _condition_problems(subgraph.operands[operation.inputs[0]], "condition")
    outer_in = [subgraph.operands[k] for k in operation.inputs[3:]]
    outer_out = [subgraph.operands[k] for k in operation.outputs]
    for role, k in (("then", operation.inputs[1]), ("else", operation.inputs[2])):
        branch = _branch(model, subgraph, k, role, problems)
        if branch is None:
            continue
        inner_in, inner_out = _io(branch, "inputs"), _io(branch, "outputs")
        if inner_in is None or inner_out is None:
            continue
        if len(inner_in) != len(outer_in) or len(inner_out) != len(outer_out):
            problems.append(
                f"{role} branch takes {len(inner_in)} inputs and gives {len(inner_out)} outputs, the operation "
                f"passes {len(outer_in)} and expects {len(outer_out)}"
            )
            continue
        problems += _match(inner_in, outer_in, f"{role} branch input")
        problems += _match(inner_out, outer_out, f"{role} branch output")
    return problems


def _while_problems(model: Model, subgraph: Subgraph, operation: Operation) -> list[str]:
    problems: list[str] = []
    outer_in = [subgraph.operands[k] for k in operation.inputs[2:]]
    outer_out = [subgraph.operands[k] for k in operation.outputs]
    cond = _branch(model, subgraph, operation.inputs[0], "condition", problems)
    body = _branch(model, subgraph, operation.inputs[1], "body", problems)
    if cond is not None and (ios := (_io(cond, "inputs"), _io(cond, "outputs")))[0] is not None and ios[1] is not None:
        cond_in, cond_out = ios
        if len(cond_in) != len(outer_in) or len(cond_out) != 1:
            problems.append(
                f"condition takes {len(cond_in)} inputs and gives {len(cond_out)} outputs, expected "
                f"{len(outer_in)} and 1"
            )
        else:
            problems += _match(cond_in, outer_in, "condition input")
            problems += _condition_problems(cond_out[0], "condition output")
    if body is not None and (ios := (_io(body, "inputs"), _io(body, "outputs")))[0] is not None and ios[1] is not None:
        body_in, body_out = ios
        if not len(outer_out) <= len(body_out) <= len(body_in) == len(outer_in):
            problems.append(
                f"body takes {len(body_in)} inputs and gives {len(body_out)} outputs; expected {len(outer_in)} "
                f"inputs and between {len(outer_out)} and {len(outer_in)} outputs"
            )
        else:
            problems += _match(body_in, outer_in, "body input")
            problems += _match(body_out[: len(outer_out)], outer_out, "body output")
            problems += _match(body_out, body_in[: len(body_out)], "body output (vs body input)")
    return problems


_CHECKERS = {
    int(OperationType.IF): _if_problems,
    int(OperationType.WHILE): _while_problems,
}
