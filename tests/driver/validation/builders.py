"""Small valid models built by hand for the validation tests; each test breaks exactly one rule of one of them."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

from driver_under_test.errors import DriverError
from harness.hal import (
    DataLocation,
    ErrorStatus,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
    SymmPerChannelQuantParams,
)
from harness.hal.memory import Memory

T = OperandType
LT = OperandLifeTime
OP = OperationType


def rejects(call: Callable[[], object], rule: str, status: ErrorStatus = ErrorStatus.INVALID_ARGUMENT) -> DriverError:
    """Run `call` and check it raises a DriverError with this status and rule id."""
    with pytest.raises(DriverError) as info:
        call()
    assert (info.value.status, info.value.rule) == (status, rule), str(info.value)
    return info.value


def tensor(dims: list[int], lifetime: LT, consumers: int = 0, type_: T = T.TENSOR_FLOAT32, **kw: object) -> Operand:
    """A tensor operand with an empty location."""
    return Operand(type=type_, dimensions=list(dims), number_of_consumers=consumers, lifetime=lifetime, **kw)


def copy_constant(type_: T, dims: list[int], offset: int, length: int, consumers: int = 1, **kw: object) -> Operand:
    """A CONSTANT_COPY operand at operandValues[offset:offset + length]."""
    return Operand(
        type=type_,
        dimensions=list(dims),
        number_of_consumers=consumers,
        lifetime=LT.CONSTANT_COPY,
        location=DataLocation(0, offset, length),
        **kw,
    )


def add_model() -> Model:
    """out[2,2] = ADD(a[2,2], b[2,2], activation) with the INT32 activation 0 in operandValues."""
    operands = [
        tensor([2, 2], LT.SUBGRAPH_INPUT, 1),
        tensor([2, 2], LT.SUBGRAPH_INPUT, 1),
        copy_constant(T.INT32, [], 0, 4),
        tensor([2, 2], LT.SUBGRAPH_OUTPUT),
    ]
    main = Subgraph(operands, [Operation(OP.ADD, [0, 1, 2], [3])], [0, 1], [3])
    return Model(main=main, operand_values=struct.pack("<i", 0))


def two_output_model() -> Model:
    """o1 = ADD(a, b) and o2 = SUB(a, b): two outputs sharing both inputs and the activation."""
    operands = [
        tensor([2, 2], LT.SUBGRAPH_INPUT, 2),
        tensor([2, 2], LT.SUBGRAPH_INPUT, 2),
        copy_constant(T.INT32, [], 0, 4, consumers=2),
        tensor([2, 2], LT.SUBGRAPH_OUTPUT),
        tensor([2, 2], LT.SUBGRAPH_OUTPUT),
    ]
    ops = [Operation(OP.ADD, [0, 1, 2], [3]), Operation(OP.SUB, [0, 1, 2], [4])]
    return Model(main=Subgraph(operands, ops, [0, 1], [3, 4]), operand_values=struct.pack("<i", 0))


def chain_model() -> Model:
    """t = ADD(a, b); out = MUL(t, b): the second operation reads a temporary the first writes."""
    operands = [
        tensor([2, 2], LT.SUBGRAPH_INPUT, 1),
        tensor([2, 2], LT.SUBGRAPH_INPUT, 2),
        copy_constant(T.INT32, [], 0, 4, consumers=2),
        tensor([2, 2], LT.TEMPORARY_VARIABLE, 1),
        tensor([2, 2], LT.SUBGRAPH_OUTPUT),
    ]
    ops = [Operation(OP.ADD, [0, 1, 2], [3]), Operation(OP.MUL, [3, 1, 2], [4])]
    return Model(main=Subgraph(operands, ops, [0, 1], [4]), operand_values=struct.pack("<i", 0))


# CONV_2D with implicit padding: input, filter, bias, padding scheme, stride w, stride h, activation.
CONV_FILTER_BYTES = 16  # TENSOR_FLOAT32 [1, 2, 2, 1]
CONV_POOL_FILTER_OFFSET = 8  # the filter sits in the middle of a 32-byte pool


def conv_model(pool: Memory) -> Model:
    """out[1,2,2,1] = CONV_2D(in[1,3,3,1], filter[1,2,2,1] in `pool`, bias[1], VALID, 1, 1, NONE).

    `pool` (at least 24 bytes) holds the filter at bytes 8..24 as a CONSTANT_REFERENCE; the bias and the four
    INT32 scalars are CONSTANT_COPY values.
    """
    values = struct.pack("<f4i", 0.0, 2, 1, 1, 0)  # bias, VALID, stride w, stride h, activation
    operands = [
        tensor([1, 3, 3, 1], LT.SUBGRAPH_INPUT, 1),
        Operand(
            type=T.TENSOR_FLOAT32,
            dimensions=[1, 2, 2, 1],
            number_of_consumers=1,
            lifetime=LT.CONSTANT_REFERENCE,
            location=DataLocation(0, CONV_POOL_FILTER_OFFSET, CONV_FILTER_BYTES),
        ),
        copy_constant(T.TENSOR_FLOAT32, [1], 0, 4),
        copy_constant(T.INT32, [], 4, 4),
        copy_constant(T.INT32, [], 8, 4),
        copy_constant(T.INT32, [], 12, 4),
        copy_constant(T.INT32, [], 16, 4),
        tensor([1, 2, 2, 1], LT.SUBGRAPH_OUTPUT),
    ]
    main = Subgraph(operands, [Operation(OP.CONV_2D, list(range(7)), [7])], [0], [7])
    return Model(main=main, operand_values=values, pools=[pool])


def per_channel_conv_model() -> Model:
    """CONV_2D on QUANT8_ASYMM input [1,2,2,1] with a per-channel filter [2,1,1,1] (channelDim 0, 2 scales)."""
    values = struct.pack("<2b2x2i4i", 1, 2, 0, 0, 2, 1, 1, 0)  # filter, padding, bias, VALID, strides, activation
    operands = [
        tensor([1, 2, 2, 1], LT.SUBGRAPH_INPUT, 1, T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=128),
        copy_constant(
            T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
            [2, 1, 1, 1],
            0,
            2,
            extra_params=SymmPerChannelQuantParams(scales=[0.5, 0.25], channel_dim=0),
        ),
        copy_constant(T.TENSOR_INT32, [2], 4, 8),
        copy_constant(T.INT32, [], 12, 4),
        copy_constant(T.INT32, [], 16, 4),
        copy_constant(T.INT32, [], 20, 4),
        copy_constant(T.INT32, [], 24, 4),
        tensor([1, 2, 2, 2], LT.SUBGRAPH_OUTPUT, 0, T.TENSOR_QUANT8_ASYMM, scale=1.0, zero_point=0),
    ]
    main = Subgraph(operands, [Operation(OP.CONV_2D, list(range(7)), [7])], [0], [7])
    return Model(main=main, operand_values=values)


def subgraph_ref(index: int, consumers: int = 1) -> Operand:
    """A SUBGRAPH operand referencing model.referenced[index]."""
    return Operand(
        type=T.SUBGRAPH, number_of_consumers=consumers, lifetime=LT.SUBGRAPH, location=DataLocation(0, index, 0)
    )


def _unary_subgraph(op: OP) -> Subgraph:
    operands = [tensor([2], LT.SUBGRAPH_INPUT, 1), tensor([2], LT.SUBGRAPH_OUTPUT)]
    return Subgraph(operands, [Operation(op, [0], [1])], [0], [1])


def if_model() -> Model:
    """out[2] = IF(cond[1], then: RELU, else: FLOOR, x[2])."""
    operands = [
        tensor([1], LT.SUBGRAPH_INPUT, 1, T.TENSOR_BOOL8),
        subgraph_ref(0),
        subgraph_ref(1),
        tensor([2], LT.SUBGRAPH_INPUT, 1),
        tensor([2], LT.SUBGRAPH_OUTPUT),
    ]
    main = Subgraph(operands, [Operation(OP.IF, [0, 1, 2, 3], [4])], [0, 3], [4])
    return Model(main=main, referenced=[_unary_subgraph(OP.RELU), _unary_subgraph(OP.FLOOR)])


def while_model() -> Model:
    """out[1] = WHILE(cond: x < 10, body: x + 1, x[1]); 10 and 1 are float constants, 0 the activation."""
    values = struct.pack("<ffi", 10.0, 1.0, 0)
    cond = Subgraph(
        [
            tensor([1], LT.SUBGRAPH_INPUT, 1),
            copy_constant(T.TENSOR_FLOAT32, [1], 0, 4),
            tensor([1], LT.SUBGRAPH_OUTPUT, 0, T.TENSOR_BOOL8),
        ],
        [Operation(OP.LESS, [0, 1], [2])],
        [0],
        [2],
    )
    body = Subgraph(
        [
            tensor([1], LT.SUBGRAPH_INPUT, 1),
            copy_constant(T.TENSOR_FLOAT32, [1], 4, 4),
            copy_constant(T.INT32, [], 8, 4),
            tensor([1], LT.SUBGRAPH_OUTPUT),
        ],
        [Operation(OP.ADD, [0, 1, 2], [3])],
        [0],
        [3],
    )
    operands = [subgraph_ref(0), subgraph_ref(1), tensor([1], LT.SUBGRAPH_INPUT, 1), tensor([1], LT.SUBGRAPH_OUTPUT)]
    main = Subgraph(operands, [Operation(OP.WHILE, [0, 1, 2], [3])], [2], [3])
    return Model(main=main, referenced=[cond, body], operand_values=values)
