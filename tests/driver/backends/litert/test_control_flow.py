"""IF and WHILE: generated models whose main runs referenced subgraphs, translated into TFLite IF/WHILE over
translated subgraphs, against the reference on each kernel set; and the recursive support check."""

from __future__ import annotations

import functools

import pytest

from driver_under_test.backends.litert import KernelSet, translate, unsupported_reason
from harness.gen import GenerationRejected, ModelConfig, RandomSource, generate_model
from harness.hal import (
    DataLocation,
    ErrorStatus,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    Subgraph,
)
from harness.hal import OperationType as O
from harness.reference import run_model
from tests.driver.backends.litert.build import builtins_of, check_against_reference
from tests.driver.backends.litert.cases import constant_reader, model_reason

DATA = (O.ADD, O.MUL, O.SUB, O.RELU, O.CONCATENATION, O.RESHAPE, O.MAXIMUM, O.LESS, O.CAST, O.CONV_2D, O.SOFTMAX)
CASES_PER_OPERATION = 6
L = OperandLifeTime
T = OperandType


def config(op: O) -> ModelConfig:
    return ModelConfig(
        operations=frozenset({int(op), *map(int, DATA)}), max_operations=2, control_flow_probability=0.9
    )


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


@pytest.mark.parametrize("kernel_set", list(KernelSet))
@pytest.mark.parametrize(("op", "seed"), [(op, s) for op in (O.IF, O.WHILE) for s in seeds(op)])
def test_control_flow_matches_reference(op: O, seed: int, kernel_set: KernelSet) -> None:
    generated = generate(op, seed)
    check_against_reference(generated.model, generated.inputs, (kernel_set,))
    assert op.name in builtins_of(translate(generated.model, constant_reader(generated.model)))


@pytest.mark.parametrize("op", [O.IF, O.WHILE])
def test_generated_control_flow_cases_exist(op: O) -> None:
    assert len(seeds(op)) == CASES_PER_OPERATION


def test_an_unsupported_operation_inside_a_branch_makes_the_if_unsupported() -> None:
    # main: out = IF(cond, then, else, x, act); both branches: ADD(x, x, act) with act a subgraph input, which
    # LiteRT would need as a constant.
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
