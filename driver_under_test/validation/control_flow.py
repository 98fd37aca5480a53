"""IF and WHILE against the subgraphs they reference: operand counts and compatible operands (types.hal 1.3).

Runs after the operation's signature check, so its SUBGRAPH inputs are valid references and every index is in
range. Two operands are compatible when they have the same type, scale, zero point and extra parameters and
dimensions that agree wherever both are known.
"""

from __future__ import annotations

from collections.abc import Sequence

from driver_under_test.errors import invalid
from driver_under_test.validation.operands import type_name
from harness.hal import Model, Operand, OperandType, Operation, OperationType, Subgraph


def incompatibility(a: Operand, b: Operand) -> str | None:
    """Why operands a and b are not interchangeable, or None if they are."""
    if a.type != b.type:
        return f"type {type_name(a.type)} vs {type_name(b.type)}"
    if a.dimensions and b.dimensions:
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


def _pairwise(inner: Sequence[Operand], outer: Sequence[Operand], what: str) -> None:
    for k, (a, b) in enumerate(zip(inner, outer)):
        reason = incompatibility(a, b)
        if reason is not None:
            raise invalid(f"{what} {k} does not match: {reason}", "V10.control_flow_operand_mismatch")


def _check_condition(operand: Operand, what: str) -> None:
    dims = list(operand.dimensions)
    # Exactly [1]: a condition of unknown rank or size ([] or [0]) is not "a TENSOR_BOOL8 of shape [1]", whatever
    # value it turns out to hold.
    if operand.type != OperandType.TENSOR_BOOL8 or dims != [1]:
        raise invalid(
            f"{what} must be a TENSOR_BOOL8 of shape [1], got {type_name(operand.type)} {dims}",
            "V10.control_flow_condition",
        )


def _io(subgraph: Subgraph) -> tuple[list[Operand], list[Operand]]:
    return (
        [subgraph.operands[i] for i in subgraph.input_indexes],
        [subgraph.operands[i] for i in subgraph.output_indexes],
    )


def _count(actual: int, expected: str, ok: bool, what: str, rule: str) -> None:
    if not ok:
        raise invalid(f"{what}: the referenced subgraph has {actual}, the operation needs {expected}", rule)


def check_if(model: Model, subgraph: Subgraph, op: Operation, what: str) -> None:
    """IF: both branches take the operation's inputs 3.. and produce its outputs."""
    operands = subgraph.operands
    _check_condition(operands[op.inputs[0]], f"{what} condition")
    outer_in = [operands[i] for i in op.inputs[3:]]
    outer_out = [operands[i] for i in op.outputs]
    for position, name in ((1, "then"), (2, "else")):
        branch = model.referenced[operands[op.inputs[position]].location.offset]
        b_in, b_out = _io(branch)
        where = f"{what} {name} branch"
        _count(len(b_in), str(len(outer_in)), len(b_in) == len(outer_in), f"{where} inputs",
               "V17.control_flow_input_count")  # fmt: skip
        _count(len(b_out), str(len(outer_out)), len(b_out) == len(outer_out), f"{where} outputs",
               "V18.control_flow_output_count")  # fmt: skip
        _pairwise(b_in, outer_in, f"{where} input")
        _pairwise(b_out, outer_out, f"{where} output")


def check_while(model: Model, subgraph: Subgraph, op: Operation, what: str) -> None:
    """WHILE: condition and body take the loop operands; the body yields input-output then state operands."""
    operands = subgraph.operands
    outer_in = [operands[i] for i in op.inputs[2:]]
    outer_out = [operands[i] for i in op.outputs]
    cond = model.referenced[operands[op.inputs[0]].location.offset]
    body = model.referenced[operands[op.inputs[1]].location.offset]

    c_in, c_out = _io(cond)
    where = f"{what} condition subgraph"
    _count(len(c_in), str(len(outer_in)), len(c_in) == len(outer_in), f"{where} inputs",
           "V17.control_flow_input_count")  # fmt: skip
    _count(len(c_out), "1", len(c_out) == 1, f"{where} outputs", "V18.control_flow_output_count")
    _pairwise(c_in, outer_in, f"{where} input")
    _check_condition(c_out[0], f"{where} output")

    b_in, b_out = _io(body)
    where = f"{what} body subgraph"
    m = len(outer_out)
    _count(len(b_in), str(len(outer_in)), len(b_in) == len(outer_in), f"{where} inputs",
           "V17.control_flow_input_count")  # fmt: skip
    # m input-output operands, then k >= 0 state operands; the remaining inputs are input-only.
    _count(len(b_out), f"{m}..{len(b_in)}", m <= len(b_out) <= len(b_in), f"{where} outputs",
           "V18.control_flow_output_count")  # fmt: skip
    _pairwise(b_in, outer_in, f"{where} input")
    _pairwise(b_out[:m], outer_out, f"{where} output")
    _pairwise(b_out, b_in[: len(b_out)], f"{where} output (against its input)")


CONTROL_FLOW_CHECKS = {OperationType.IF: check_if, OperationType.WHILE: check_while}
