"""Control flow: IF and WHILE over TFLite subgraphs built from the HAL's referenced subgraphs.

A SUBGRAPH operand's location.offset indexes Model.referenced; HAL subgraph k + 1 becomes one TFLite subgraph
(one more for each other shape it is needed in, see Translation.subgraph). Support is recursive: an IF or WHILE
is supported only when every operation of the subgraphs it runs is.

What LiteRT cannot express: the HAL's loop timeout. A WHILE that runs past the loop timeout must end with
MISSED_DEADLINE_*; LiteRT's WHILE has no timeout, so enforcing it (interrupting or abandoning the run) is the
driver's job, not the translation's.
"""

from __future__ import annotations

from driver_under_test.backends.litert._graph import Op
from driver_under_test.backends.litert._registry import TABLE, rule
from harness.hal import OperandType
from harness.hal import OperationType as O


def _subgraph_reason(op: Op, role: str, number: int) -> str | None:
    """The first unsupported operation of HAL subgraph `number`, recursively."""
    graph = op.model.referenced[number - 1]
    for index, operation in enumerate(graph.operations):
        reason = TABLE.reason(Op(op.model, number, graph, operation, op.constants))
        if reason is not None:
            return f"{op.name}: {role} subgraph (referenced {number - 1}), operation {index}: {reason}"
    return None


def _check_if(op: Op) -> str | None:
    for role, i in (("then", 1), ("else", 2)):
        reason = _subgraph_reason(op, role, op.referenced(i))
        if reason:
            return reason
    return None


@rule(O.IF, type_input=0, types={OperandType.TENSOR_BOOL8}, check=_check_if)
def if_(op: Op) -> None:
    """HAL IF: inputs 0 condition (TENSOR_BOOL8 [1]), 1 then subgraph, 2 else subgraph (SUBGRAPH operands), 3..
    the branch inputs; outputs: the chosen branch's outputs. TFLite IF (inputs: condition, then the branch
    inputs) with the two translated subgraphs as thenSubgraphIndex / elseSubgraphIndex."""
    translation = op.b.translation
    then_index = translation.subgraph(op.referenced(1))
    else_index = translation.subgraph(op.referenced(2))
    inputs = [op.input(0)] + [op.input(i) for i in range(3, op.n_inputs)]
    outputs = [op.output(k) for k in range(len(op.operation.outputs))]
    op.emit("IF", inputs, outputs, "IfOptions", thenSubgraphIndex=then_index, elseSubgraphIndex=else_index)


def _check_while(op: Op) -> str | None:
    for role, i in (("condition", 0), ("body", 1)):
        reason = _subgraph_reason(op, role, op.referenced(i))
        if reason:
            return reason
    return None


@rule(O.WHILE, type_input=0, types={OperandType.SUBGRAPH}, check=_check_while)
def while_(op: Op) -> None:
    """HAL WHILE: inputs 0 condition subgraph, 1 body subgraph, then m input-output operands, k state-only
    operands and n input-only operands (m = the WHILE's outputs, m + k = the body's outputs); outputs 0..m-1 the
    final input-output values. The condition takes all m + k + n and returns TENSOR_BOOL8 [1]; the body takes all
    and returns m + k. TFLite WHILE carries every loop variable, so the body is translated with its n input-only
    inputs passed through as extra outputs; the WHILE's last k + n outputs are temporaries. No loop timeout (see
    the module)."""
    translation = op.b.translation
    body_number = op.referenced(1)
    carried = len(op.model.referenced[body_number - 1].output_indexes)
    inputs = [op.input(i) for i in range(2, op.n_inputs)]
    pass_through = len(inputs) - carried
    cond_index = translation.subgraph(op.referenced(0))
    body_index = translation.subgraph(body_number, pass_through)
    m = len(op.operation.outputs)
    outputs = [op.output(k) for k in range(m)]
    outputs += [op.temp(op.spec(2 + j)) for j in range(m, len(inputs))]
    op.emit("WHILE", inputs, outputs, "WhileOptions", condSubgraphIndex=cond_index, bodySubgraphIndex=body_index)
