"""Control flow: IF and WHILE over the HAL's referenced subgraphs (a SUBGRAPH operand's location.offset indexes
Model.referenced; HAL subgraph number k + 1 is referenced k).

IF becomes an ONNX If whose two branches are the translated subgraphs; WHILE an ONNX Loop whose body runs the
HAL body and then the HAL condition on the body's results, the first condition being evaluated before the Loop
(inlined). ONNX subgraphs take no explicit inputs but see the outer graph's tensors, so a HAL subgraph's inputs
are bound to the outer tensors they receive. Support is recursive: an IF or WHILE is supported only when every
operation of the subgraphs it runs is.

What an ONNX Loop cannot express: the HAL's loop timeout (a WHILE that runs past it must end with
MISSED_DEADLINE_*). A Loop has no time limit, only a trip count; the backend enforces the timeout instead, by
terminating a run that outlasts its loop budget (backend.py).
"""

from __future__ import annotations

from driver_under_test.backends.onnxruntime._graph import Body, GraphBuilder, Op
from driver_under_test.backends.onnxruntime._registry import rule
from harness.hal import OperandType
from harness.hal import OperationType as O


def _subgraph_reason(op: Op, role: str, number: int) -> str | None:
    """The first unsupported operation of HAL subgraph `number`, recursively."""
    from driver_under_test.backends.onnxruntime._translate import unsupported_reason  # it imports the rules

    graph = op.model.referenced[number - 1]
    for index in range(len(graph.operations)):
        reason = unsupported_reason(op.model, number, index, op.constants)
        if reason is not None:
            return f"{op.name}: {role} subgraph (referenced {number - 1}), operation {index}: {reason}"
    return None


def _check(roles: tuple[tuple[str, int], ...]):
    def check(op: Op) -> str | None:
        for role, i in roles:
            reason = _subgraph_reason(op, role, op.referenced(i))
            if reason:
                return reason
        return None

    return check


def _build(
    op: Op, parent: GraphBuilder, number: int, inputs: list[str], inline: bool = False
) -> tuple[GraphBuilder, list[str]]:
    """HAL subgraph `number` translated with its inputs bound to `inputs`, as a nested graph of `parent` or
    (`inline`) among its nodes: the subgraph's builder and its output tensors."""
    from driver_under_test.backends.onnxruntime._translate import emit_operations  # it imports the rules

    graph = op.model.referenced[number - 1]
    built = parent.child(graph, number, inline)
    for index, name in zip(graph.input_indexes, inputs):
        built.bind(index, name)
    emit_operations(op.model, built)
    return built, [built.hal_tensor(i) for i in graph.output_indexes]


def _body_outputs(op: Op, built: GraphBuilder, number: int, results: list[str]) -> list[tuple[str, object]]:
    """A nested graph's outputs: each result copied into a tensor of its own (an output of a nested graph must be
    produced inside it and named once, where a HAL output may be an input or repeat another)."""
    graph = op.model.referenced[number - 1]
    outputs = []
    for index, result in zip(graph.output_indexes, results):
        name = built.fresh("result")
        built.nodes.append(("Identity", [result], [name], {}))
        outputs.append((name, graph.operands[index]))
    return outputs


@rule(O.IF, types={OperandType.TENSOR_BOOL8}, runtime_from=3, check=_check((("then", 1), ("else", 2))))
def if_(op: Op) -> None:
    """HAL IF: 0 condition (TENSOR_BOOL8 [1]), 1 then subgraph, 2 else subgraph (SUBGRAPH operands), 3.. the
    branch inputs (any type, given at run time or not); outputs: the chosen branch's outputs. ONNX If with the
    two subgraphs as then_branch / else_branch, their inputs bound to the IF's inputs (outer-scope tensors)."""
    inputs = [op.input(i) for i in range(3, op.n_inputs)]
    branches = {}
    for attribute, i in (("then_branch", 1), ("else_branch", 2)):
        number = op.referenced(i)
        built, results = _build(op, op.b, number, inputs)
        branches[attribute] = Body(built, (), tuple(_body_outputs(op, built, number, results)))
    outputs = [op.output(k) for k in range(len(op.operation.outputs))]
    op.node("If", [op.input(0)], outputs, **branches)


def _scalar_flag(op: Op, builder: GraphBuilder, flag: str) -> str:
    """A HAL condition (TENSOR_BOOL8 [1]) as the boolean scalar ONNX Loop's condition is."""
    name = builder.fresh("flag")
    builder.nodes.append(("Reshape", [flag, op.ints([])], [name], {}))
    return name


@rule(O.WHILE, types={OperandType.SUBGRAPH}, runtime_from=2, check=_check((("condition", 0), ("body", 1))))
def while_(op: Op) -> None:
    """HAL WHILE: 0 condition subgraph, 1 body subgraph (SUBGRAPH operands), 2.. the loop inputs: m input-output
    operands (m = the WHILE's outputs), then k state-only ones (k = the body's outputs - m), then input-only ones;
    outputs: the m input-output operands' final values. The condition subgraph takes every loop operand and gives
    a TENSOR_BOOL8 [1]; the body takes every loop operand and gives the m + k new values. ONNX Loop (no trip
    count) carrying the m + k values: the condition on the initial values is inlined before it; the Loop body
    runs the HAL body, then the HAL condition on the new values (with the unchanged input-only ones, outer-scope
    tensors the body sees) and gives both. The loop timeout is enforced by the backend (see the module's docstring)."""
    condition, body = op.referenced(0), op.referenced(1)
    values = [op.input(i) for i in range(2, op.n_inputs)]
    carried = len(op.model.referenced[body - 1].output_indexes)
    _, (first,) = _build(op, op.b, condition, values, inline=True)
    # The Loop body's own inputs: the iteration number, the incoming condition, the carried values.
    b = op.b
    graph = op.model.referenced[body - 1]
    inner = [b.fresh("carried") for _ in range(carried)]
    built, results = _build(op, b, body, inner + values[carried:])
    _, (again,) = _build(op, built, condition, results + values[carried:], inline=True)
    outputs = [(_scalar_flag(op, built, again), "BOOL")] + _body_outputs(op, built, body, results)
    inputs = [(b.fresh("iteration"), "INT64"), (b.fresh("condition"), "BOOL")]
    inputs += [(name, graph.operands[index]) for name, index in zip(inner, graph.input_indexes)]
    finals = [op.output(k) for k in range(len(op.operation.outputs))]
    finals += [b.fresh("state") for _ in range(carried - len(finals))]
    loop_body = Body(built, tuple(inputs), tuple(outputs))
    op.node("Loop", ["", _scalar_flag(op, b, first), *values[:carried]], finals, body=loop_body)
