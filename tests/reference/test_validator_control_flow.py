"""IF/WHILE and referenced subgraphs: which subgraph shapes fit the operation using them, and reference cycles.

The WHILE model counts i up to a limit: cond(i) = LESS(i, [3]); body(i) = ADD(i, [1]). With m = 1 input-output
operand and no state-only or input-only ones, cond takes 1 input and gives 1 TENSOR_BOOL8 [1]; body takes 1 input
and gives 1 output (types.hal, WHILE).
"""

from __future__ import annotations

import copy

import pytest

from harness.hal import DataLocation, Model, Operation, Subgraph
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.reference import validate_model
from tests.reference.conftest import Values, if_model, operand, recount

I32 = T.TENSOR_INT32


def while_model() -> Model:
    """out = WHILE(cond=referenced[0], body=referenced[1], i)."""
    values = Values()
    cond = Subgraph(
        [
            operand(I32, (1,), L.SUBGRAPH_INPUT),
            values.const(I32, (1,), [3]),
            operand(T.TENSOR_BOOL8, (1,), L.SUBGRAPH_OUTPUT),
        ],
        [Operation(Op.LESS, [0, 1], [2])],
        [0],
        [2],
    )
    body = Subgraph(
        [
            operand(I32, (1,), L.SUBGRAPH_INPUT),
            values.const(I32, (1,), [1]),
            values.const(T.INT32, (), [0]),
            operand(I32, (1,), L.SUBGRAPH_OUTPUT),
        ],
        [Operation(Op.ADD, [0, 1, 2], [3])],
        [0],
        [3],
    )
    main = Subgraph(
        [
            operand(T.SUBGRAPH, (), L.SUBGRAPH, location=DataLocation(0, 0, 0)),
            operand(T.SUBGRAPH, (), L.SUBGRAPH, location=DataLocation(0, 1, 0)),
            operand(I32, (1,), L.SUBGRAPH_INPUT),
            operand(I32, (1,), L.SUBGRAPH_OUTPUT),
        ],
        [Operation(Op.WHILE, [0, 1, 2], [3])],
        [2],
        [3],
    )
    return recount(Model(main=main, referenced=[cond, body], operand_values=bytes(values.blob)))


def rules(model: Model) -> set[str]:
    return {v.rule for v in validate_model(model)}


def messages(model: Model, rule: str) -> list[str]:
    return [v.message for v in validate_model(model) if v.rule == rule]


def test_the_base_models_are_valid() -> None:
    assert validate_model(while_model()) == []
    assert validate_model(if_model()) == []


def test_a_condition_taking_more_inputs_than_the_loop_passes_is_refused() -> None:
    model = while_model()
    cond = model.referenced[0]
    cond.operands.append(operand(I32, (1,), L.SUBGRAPH_INPUT))
    cond.input_indexes.append(len(cond.operands) - 1)
    assert "model.subgraph.control_flow" in rules(model)
    assert any("condition takes 2 inputs" in m for m in messages(model, "model.subgraph.control_flow"))


def test_a_condition_must_give_one_boolean_of_shape_one() -> None:
    model = while_model()
    model.referenced[0].operands[2].dimensions = [0]  # unknown: not the required [1]
    assert any("condition output" in m for m in messages(model, "model.subgraph.control_flow"))


def test_a_body_output_must_match_the_loop_output() -> None:
    model = while_model()
    model.main.operands[3].dimensions = [2]
    found = messages(model, "model.subgraph.control_flow")
    assert any("body output 0: dimensions [1] vs [2]" in m for m in found), found


def test_a_body_giving_more_outputs_than_it_takes_inputs_is_refused() -> None:
    model = while_model()
    body = model.referenced[1]
    body.operands.append(operand(I32, (1,), L.SUBGRAPH_OUTPUT))
    body.operations.append(Operation(Op.ADD, [0, 1, 2], [4]))
    body.output_indexes.append(4)
    recount(model)
    assert any("body takes 1 inputs and gives 2 outputs" in m for m in messages(model, "model.subgraph.control_flow"))


def test_a_body_state_output_must_match_its_own_input() -> None:
    # m = 1, k = 1: body(i, s) -> (i', s'); s' must match s.
    model = while_model()
    body, cond, main = model.referenced[1], model.referenced[0], model.main
    body.operands.append(operand(I32, (1,), L.SUBGRAPH_INPUT))  # s, operand 4
    body.operands.append(operand(T.TENSOR_FLOAT32, (1,), L.SUBGRAPH_OUTPUT))  # s' of the wrong type, operand 5
    body.operations.append(Operation(Op.FLOOR, [6], [5]))
    body.operands.append(operand(T.TENSOR_FLOAT32, (1,), L.SUBGRAPH_INPUT))  # input-only f, operand 6
    body.input_indexes += [4, 6]
    body.output_indexes.append(5)
    cond.operands += [operand(I32, (1,), L.SUBGRAPH_INPUT), operand(T.TENSOR_FLOAT32, (1,), L.SUBGRAPH_INPUT)]
    cond.input_indexes += [3, 4]
    main.operands += [operand(I32, (1,), L.SUBGRAPH_INPUT), operand(T.TENSOR_FLOAT32, (1,), L.SUBGRAPH_INPUT)]
    main.input_indexes += [4, 5]
    main.operations[0].inputs += [4, 5]
    recount(model)
    found = messages(model, "model.subgraph.control_flow")
    assert found and all("body output (vs body input) 1" in m for m in found), found
    body.operands[5].type = I32
    body.operations[-1] = Operation(Op.ADD, [4, 1, 2], [5])
    recount(model)
    assert validate_model(model) == []


def test_a_loop_body_that_is_not_a_subgraph_reference_is_refused() -> None:
    model = while_model()
    model.main.operations[0].inputs[1] = 2  # the loop variable where the body reference belongs
    recount(model)
    found = rules(model)
    assert found & {"model.subgraph.control_flow", "model.operation.signature"}


def test_an_if_condition_must_be_a_single_boolean() -> None:
    model = if_model()
    model.main.operands[0].dimensions = [2]
    found = messages(model, "model.subgraph.control_flow")
    assert any("condition is TENSOR_BOOL8 [2]" in m for m in found), found


def test_if_branches_must_take_what_the_operation_passes() -> None:
    model = if_model()
    leaf = model.referenced[0]
    leaf.operands[0].type = T.TENSOR_FLOAT16
    leaf.operands[2].type = T.TENSOR_FLOAT16
    found = messages(model, "model.subgraph.control_flow")
    assert any("else branch input 0: type TENSOR_FLOAT16 vs TENSOR_FLOAT32" in m for m in found), found


@pytest.mark.parametrize(
    ("edges", "cycle"),
    [
        ({1: 1}, "referenced[1] -> referenced[1]"),
        ({1: 2, 2: 1}, "referenced[1] -> referenced[2] -> referenced[1]"),
    ],
)
def test_reference_cycles_are_reported_with_their_path(edges: dict[int, int], cycle: str) -> None:
    model = if_model()
    model.referenced.append(copy.deepcopy(model.referenced[1]))  # referenced[2]: another IF over referenced[0]
    for source, target in edges.items():
        model.referenced[source].operands[2].location = DataLocation(0, target, 0)  # its then-branch
    recount(model)
    found = messages(model, "model.subgraph.cycle")
    assert found == [f"subgraph reference cycle {cycle}"]


def test_a_referenced_subgraph_nobody_uses_is_still_validated() -> None:
    model = if_model()
    model.referenced.append(Subgraph([operand(I32, (1,), L.SUBGRAPH_INPUT)], [], [0], []))
    assert rules(model) == {"model.subgraph.empty"}


def test_an_if_passing_no_data_to_its_branches_is_valid() -> None:
    # types.hal: IF's inputs 3 ~ (m + 2) go to the branch; m may be 0: the condition and the branches suffice.
    values = Values()
    f32 = T.TENSOR_FLOAT32

    def branch(x: list[float]) -> Subgraph:
        ins = [values.const(f32, (2,), x), values.const(T.INT32, (), [0]), operand(f32, (2,), L.SUBGRAPH_OUTPUT)]
        return Subgraph(ins, [Operation(Op.ADD, [0, 0, 1], [2])], [], [2])

    main = Subgraph(
        [
            operand(T.TENSOR_BOOL8, (1,), L.SUBGRAPH_INPUT),
            operand(T.SUBGRAPH, (), L.SUBGRAPH, location=DataLocation(0, 0, 0)),
            operand(T.SUBGRAPH, (), L.SUBGRAPH, location=DataLocation(0, 1, 0)),
            operand(f32, (2,), L.SUBGRAPH_OUTPUT),
        ],
        [Operation(Op.IF, [0, 1, 2], [3])],
        [0],
        [3],
    )
    referenced = [branch([1.0, 2.0]), branch([3.0, 4.0])]
    model = recount(Model(main=main, referenced=referenced, operand_values=bytes(values.blob)))
    assert rules(model) == set()
