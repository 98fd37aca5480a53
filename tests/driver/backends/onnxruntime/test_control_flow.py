"""IF and WHILE: generated models whose main runs referenced subgraphs, translated into ONNX If/Loop over nested
graphs, against the reference at each optimization level; and the recursive support check."""

from __future__ import annotations

import functools

import pytest

from tests.driver.backends.onnxruntime.cases import model_reason, require_onnxruntime, run_translated

require_onnxruntime()

from driver_under_test.backends.onnxruntime import OptLevel, translate, unsupported_reason  # noqa: E402
from harness.gen import GenerationRejected, ModelConfig, RandomSource, generate_model  # noqa: E402
from harness.hal import (  # noqa: E402
    DataLocation,
    ErrorStatus,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    Subgraph,
)
from harness.hal import OperationType as O  # noqa: E402
from harness.reference import run_model  # noqa: E402
from tests.driver.backends.litert.cases import constant_reader, mismatches  # noqa: E402

DATA = (O.ADD, O.MUL, O.SUB, O.RELU, O.CONCATENATION, O.RESHAPE, O.MAXIMUM, O.LESS, O.CAST, O.CONV_2D, O.SOFTMAX)
CASES_PER_OPERATION = 6
L = OperandLifeTime
T = OperandType
ONNX_OPERATORS = {O.IF: "If", O.WHILE: "Loop"}


def config(op: O) -> ModelConfig:
    return ModelConfig(operations=frozenset({int(op), *map(int, DATA)}), max_operations=2, control_flow_probability=0.9)


def generate(op: O, seed: int):
    try:
        return generate_model(RandomSource(seed), config(op))
    except GenerationRejected:
        return None


@functools.cache
def seeds(op: O) -> tuple[int, ...]:
    """The first seeds whose model runs `op` in main, is supported and has a specified reference result."""
    found = []
    for seed in range(100):
        generated = generate(op, seed)
        if generated is None or not any(o.type == op for o in generated.model.main.operations):
            continue
        if model_reason(generated.model) is not None:
            continue
        result = run_model(generated.model, generated.inputs)
        if result.status == ErrorStatus.NONE and not result.unspecified:
            found.append(seed)
        if len(found) == CASES_PER_OPERATION:
            break
    return tuple(found)


@pytest.mark.parametrize("level", list(OptLevel))
@pytest.mark.parametrize(("op", "seed"), [(op, s) for op in (O.IF, O.WHILE) for s in seeds(op)])
def test_control_flow_matches_reference(op: O, seed: int, level: OptLevel) -> None:
    import onnx

    generated = generate(op, seed)
    model, inputs = generated.model, generated.inputs
    expected = run_model(model, inputs)
    assert mismatches(model, inputs, expected.outputs, run_translated(model, inputs, level)) == []
    absent = [k for k, value in enumerate(inputs) if value is None]
    graph = onnx.load_from_string(translate(model, constant_reader(model), absent)).graph
    assert ONNX_OPERATORS[op] in [n.op_type for n in graph.node]


@pytest.mark.parametrize("op", [O.IF, O.WHILE])
def test_generated_control_flow_cases_exist(op: O) -> None:
    assert len(seeds(op)) == CASES_PER_OPERATION


def test_an_unsupported_operation_inside_a_branch_makes_the_if_unsupported() -> None:
    # main: out = IF(cond, then, else, x, act); both branches: ADD(x, x, act) with act a subgraph input, which
    # the translation needs as a constant (a node's activation).
    def branch() -> Subgraph:
        operands = [
            Operand(T.TENSOR_FLOAT32, [2], 1, lifetime=L.SUBGRAPH_INPUT),
            Operand(T.INT32, [], 1, lifetime=L.SUBGRAPH_INPUT),
            Operand(T.TENSOR_FLOAT32, [2], 0, lifetime=L.SUBGRAPH_OUTPUT),
        ]
        return Subgraph(operands, [Operation(O.ADD, [0, 0, 1], [2])], [0, 1], [2])

    operands = [
        Operand(T.TENSOR_BOOL8, [1], 1, lifetime=L.SUBGRAPH_INPUT),
        Operand(T.SUBGRAPH, [], 1, lifetime=L.SUBGRAPH, location=DataLocation(0, 0, 0)),
        Operand(T.SUBGRAPH, [], 1, lifetime=L.SUBGRAPH, location=DataLocation(0, 1, 0)),
        Operand(T.TENSOR_FLOAT32, [2], 1, lifetime=L.SUBGRAPH_INPUT),
        Operand(T.INT32, [], 1, lifetime=L.CONSTANT_COPY, location=DataLocation(0, 0, 4)),
        Operand(T.TENSOR_FLOAT32, [2], 0, lifetime=L.SUBGRAPH_OUTPUT),
    ]
    main = Subgraph(operands, [Operation(O.IF, [0, 1, 2, 3, 4], [5])], [0, 3], [5])
    model = Model(main=main, referenced=[branch(), branch()], operand_values=bytes(4))
    reason = unsupported_reason(model, 0, 0, constant_reader(model))
    assert reason is not None
    assert reason.startswith("IF: then subgraph (referenced 0), operation 0: ADD: input 2 (activation)")
