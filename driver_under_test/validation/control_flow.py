"""IF and WHILE against the subgraphs they reference: operand counts and compatible operands (types.hal 1.3).

Runs after the operation's signature check, so its SUBGRAPH inputs are valid references and every index is in
range. Two operands are compatible when they have the same type, scale, zero point and extra parameters and
dimensions that agree wherever both are known.
"""

from __future__ import annotations

from collections.abc import Sequence

from driver_under_test.errors import DriverError, invalid
from driver_under_test.validation.operands import type_name
from harness.hal import Model, Operand, OperandType, Operation, OperationType, Subgraph

# A plain int: reading an enum member off its class costs more than the comparison it is used in.
_TENSOR_BOOL8 = int(OperandType.TENSOR_BOOL8)
_INPUT_COUNT, _OUTPUT_COUNT = "V17.control_flow_input_count", "V18.control_flow_output_count"


def incompatibility(a: Operand, b: Operand) -> str | None:
    """Why operands a and b are not interchangeable, or None if they are."""
    if a.type != b.type:
        return f"type {type_name(a.type)} vs {type_name(b.type)}"
    # Equal dimensions agree everywhere: only others need a look, position by position.
    if a.dimensions and b.dimensions and a.dimensions != b.dimensions:
        if len(a.dimensions) != len(b.dimensions) or any(
            x and y and x != y for x, y in zip(a.dimensions, b.dimensions)
        ):
            return f"dimensions {list(a.dimensions)} vs {list(b.dimensions)}"
    if a.scale != b.scale:
        return f"scale {a.scale} vs {b.scale}"
    if a.zero_point != b.zero_point:
        return f"zero point {a.zero_point} vs {b.zero_point}"
    if a.extra_params != b.extra_params:
        return "extra parameters differ"
    return None


def _pairwise(inner: Sequence[Operand], outer: Sequence[Operand], what: object, part: str) -> None:
    for k, (a, b) in enumerate(zip(inner, outer)):
        reason = incompatibility(a, b)
        if reason is not None:
            raise invalid(f"{what}{part} {k} does not match: {reason}", "V10.control_flow_operand_mismatch")


def _check_condition(operand: Operand, what: object, part: str) -> None:
    dims = list(operand.dimensions)
    # Exactly [1]: a condition of unknown rank or size ([] or [0]) is not "a TENSOR_BOOL8 of shape [1]", whatever
    # value it turns out to hold.
    if operand.type != _TENSOR_BOOL8 or dims != [1]:
        raise invalid(
            f"{what}{part} must be a TENSOR_BOOL8 of shape [1], got {type_name(operand.type)} {dims}",
            "V10.control_flow_condition",
        )


def _io(subgraph: Subgraph) -> tuple[list[Operand], list[Operand]]:
    operand = subgraph.operands.__getitem__
    return list(map(operand, subgraph.input_indexes)), list(map(operand, subgraph.output_indexes))


def _count_mismatch(actual: int, expected: object, what: object, part: str, rule: str) -> DriverError:
    return invalid(f"{what}{part}: the referenced subgraph has {actual}, the operation needs {expected}", rule)


# The messages' words for each branch of an IF, after the operation's name.
_BRANCHES = (
    (1, " then branch inputs", " then branch outputs", " then branch input", " then branch output"),
    (2, " else branch inputs", " else branch outputs", " else branch input", " else branch output"),
)


def check_if(model: Model, subgraph: Subgraph, op: Operation, what: object) -> None:
    """IF: both branches take the operation's inputs 3.. and produce its outputs.

    `what` names the operation in messages (anything that formats as text); it is formatted only for a message.
    """
    operands = subgraph.operands
    _check_condition(operands[op.inputs[0]], what, " condition")
    outer_in = [operands[i] for i in op.inputs[3:]]
    outer_out = [operands[i] for i in op.outputs]
    for position, inputs, outputs, input_k, output_k in _BRANCHES:
        branch = model.referenced[operands[op.inputs[position]].location.offset]
        b_in, b_out = _io(branch)
        if len(b_in) != len(outer_in):
            raise _count_mismatch(len(b_in), len(outer_in), what, inputs, _INPUT_COUNT)
        if len(b_out) != len(outer_out):
            raise _count_mismatch(len(b_out), len(outer_out), what, outputs, _OUTPUT_COUNT)
        _pairwise(b_in, outer_in, what, input_k)
        _pairwise(b_out, outer_out, what, output_k)


def check_while(model: Model, subgraph: Subgraph, op: Operation, what: object) -> None:
    """WHILE: condition and body take the loop operands; the body yields input-output then state operands.

    `what` names the operation in messages (anything that formats as text); it is formatted only for a message.
    """
    operands = subgraph.operands
    outer_in = [operands[i] for i in op.inputs[2:]]
    outer_out = [operands[i] for i in op.outputs]
    cond = model.referenced[operands[op.inputs[0]].location.offset]
    body = model.referenced[operands[op.inputs[1]].location.offset]

    c_in, c_out = _io(cond)
    if len(c_in) != len(outer_in):
        raise _count_mismatch(len(c_in), len(outer_in), what, " condition subgraph inputs", _INPUT_COUNT)
    if len(c_out) != 1:
        raise _count_mismatch(len(c_out), 1, what, " condition subgraph outputs", _OUTPUT_COUNT)
    _pairwise(c_in, outer_in, what, " condition subgraph input")
    _check_condition(c_out[0], what, " condition subgraph output")

    b_in, b_out = _io(body)
    m = len(outer_out)
    if len(b_in) != len(outer_in):
        raise _count_mismatch(len(b_in), len(outer_in), what, " body subgraph inputs", _INPUT_COUNT)
    # m input-output operands, then k >= 0 state operands; the remaining inputs are input-only.
    if not m <= len(b_out) <= len(b_in):
        raise _count_mismatch(len(b_out), f"{m}..{len(b_in)}", what, " body subgraph outputs", _OUTPUT_COUNT)
    _pairwise(b_in, outer_in, what, " body subgraph input")
    _pairwise(b_out[:m], outer_out, what, " body subgraph output")
    _pairwise(b_out, b_in[: len(b_out)], what, " body subgraph output (against its input)")


CONTROL_FLOW_CHECKS = {OperationType.IF: check_if, OperationType.WHILE: check_while}
