"""Small hand-built models for the driver's tests; expected results are computed by hand in the tests."""

from __future__ import annotations

import struct

import numpy as np

from harness.hal import (
    DataLocation,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
)
from harness.hal.memory import Memory

F32 = OperandType.TENSOR_FLOAT32
LT = OperandLifeTime


def tensor(dims: list[int], lifetime: LT, consumers: int = 0, type_: OperandType = F32) -> Operand:
    """A tensor operand with no location."""
    return Operand(type=type_, dimensions=list(dims), number_of_consumers=consumers, lifetime=lifetime)


def int32_constant(value: int, offset: int, consumers: int = 1) -> Operand:
    """An INT32 CONSTANT_COPY scalar at `offset` in operandValues."""
    return Operand(
        type=OperandType.INT32,
        number_of_consumers=consumers,
        lifetime=LT.CONSTANT_COPY,
        location=DataLocation(0, offset, 4),
    )


def add_model(
    dims: list[int] = (2, 2), out_dims: list[int] | None = None, activation: int = 0, relaxed: bool = False
) -> Model:
    """out = ADD(a, b) with a fused activation; a and b are model inputs."""
    dims = list(dims)
    operands = [
        tensor(dims, LT.SUBGRAPH_INPUT, 1),
        tensor(dims, LT.SUBGRAPH_INPUT, 1),
        int32_constant(activation, 0),
        tensor(dims if out_dims is None else list(out_dims), LT.SUBGRAPH_OUTPUT),
    ]
    main = Subgraph(operands, [Operation(OperationType.ADD, [0, 1, 2], [3])], [0, 1], [3])
    return Model(main=main, operand_values=struct.pack("<i", activation), relax_computation_float32_to_float16=relaxed)


def add_then_mul_model(dims: list[int] = (2, 2)) -> Model:
    """out1 = a + b (through a temporary t = a + b, with t also an output), out2 = t * b."""
    dims = list(dims)
    operands = [
        tensor(dims, LT.SUBGRAPH_INPUT, 1),
        tensor(dims, LT.SUBGRAPH_INPUT, 2),
        int32_constant(0, 0, consumers=2),
        tensor(dims, LT.SUBGRAPH_OUTPUT, 1),
        tensor([0] * len(dims), LT.SUBGRAPH_OUTPUT),
    ]
    ops = [Operation(OperationType.ADD, [0, 1, 2], [3]), Operation(OperationType.MUL, [3, 1, 2], [4])]
    return Model(main=Subgraph(operands, ops, [0, 1], [3, 4]), operand_values=struct.pack("<i", 0))


def add_constant_model(pool: Memory, offset: int, constant: np.ndarray) -> Model:
    """out = a + C where C is a CONSTANT_REFERENCE in `pool` at `offset` (the caller writes nothing: we do)."""
    data = np.ascontiguousarray(constant, dtype=np.float32)
    pool.write(offset, data.tobytes())
    dims = list(data.shape)
    operands = [
        tensor(dims, LT.SUBGRAPH_INPUT, 1),
        Operand(F32, dims, 1, lifetime=LT.CONSTANT_REFERENCE, location=DataLocation(0, offset, data.nbytes)),
        int32_constant(0, 0),
        tensor(dims, LT.SUBGRAPH_OUTPUT),
    ]
    main = Subgraph(operands, [Operation(OperationType.ADD, [0, 1, 2], [3])], [0], [3])
    return Model(main=main, operand_values=struct.pack("<i", 0), pools=[pool])


def counting_while_model() -> Model:
    """WHILE i < n: i = i + 1, on TENSOR_FLOAT32 [1]; outputs the final i.

    i is an input-output operand and n a state-only one: the condition (referenced 0) computes LESS(i, n), the
    body (referenced 1) outputs (i + 1, n + 0).
    """
    values = struct.pack("<i", 0) + struct.pack("<f", 1.0) + struct.pack("<f", 0.0)
    one = Operand(F32, [1], 1, lifetime=LT.CONSTANT_COPY, location=DataLocation(0, 4, 4))
    zero = Operand(F32, [1], 1, lifetime=LT.CONSTANT_COPY, location=DataLocation(0, 8, 4))
    cond = Subgraph(
        [
            tensor([1], LT.SUBGRAPH_INPUT, 1),
            tensor([1], LT.SUBGRAPH_INPUT, 1),
            tensor([1], LT.SUBGRAPH_OUTPUT, 0, OperandType.TENSOR_BOOL8),
        ],
        [Operation(OperationType.LESS, [0, 1], [2])],
        [0, 1],
        [2],
    )
    body = Subgraph(
        [
            tensor([1], LT.SUBGRAPH_INPUT, 1),
            tensor([1], LT.SUBGRAPH_INPUT, 1),
            one,
            zero,
            int32_constant(0, 0, consumers=2),
            tensor([1], LT.SUBGRAPH_OUTPUT),
            tensor([1], LT.SUBGRAPH_OUTPUT),
        ],
        [Operation(OperationType.ADD, [0, 2, 4], [5]), Operation(OperationType.ADD, [1, 3, 4], [6])],
        [0, 1],
        [5, 6],
    )
    main = Subgraph(
        [
            Operand(OperandType.SUBGRAPH, [], 1, lifetime=LT.SUBGRAPH, location=DataLocation(0, 0, 0)),
            Operand(OperandType.SUBGRAPH, [], 1, lifetime=LT.SUBGRAPH, location=DataLocation(0, 1, 0)),
            tensor([1], LT.SUBGRAPH_INPUT, 1),
            tensor([1], LT.SUBGRAPH_INPUT, 1),
            tensor([1], LT.SUBGRAPH_OUTPUT),
        ],
        [Operation(OperationType.WHILE, [0, 1, 2, 3], [4])],
        [2, 3],
        [4],
    )
    return Model(main=main, referenced=[cond, body], operand_values=values)
