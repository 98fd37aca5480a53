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


# Quantized operations with a TENSOR_INT32 bias: input scale 0.5, weights scale 0.25, so the bias scale is 0.125.
INPUT_SCALE, WEIGHTS_SCALE = 0.5, 0.25
BIAS_SCALE = INPUT_SCALE * WEIGHTS_SCALE


def quantized_fully_connected_model(bias_scale: float = BIAS_SCALE, bias_zero_point: int = 0) -> Model:
    """out[1,2] = FULLY_CONNECTED(in[1,2], weights[2,2], bias[2], NONE), all QUANT8_ASYMM but the INT32 bias."""
    # Weights [[0.5, 0], [0, 1]], bias [1, -1] (ints 8, -8 at scale 0.125), no activation.
    values = struct.pack("<4B2i1i", 130, 128, 128, 132, 8, -8, 0)
    operands = [
        tensor([1, 2], LT.SUBGRAPH_INPUT, 1, T.TENSOR_QUANT8_ASYMM, scale=INPUT_SCALE, zero_point=128),
        copy_constant(T.TENSOR_QUANT8_ASYMM, [2, 2], 0, 4, scale=WEIGHTS_SCALE, zero_point=128),
        copy_constant(T.TENSOR_INT32, [2], 4, 8, scale=bias_scale, zero_point=bias_zero_point),
        copy_constant(T.INT32, [], 12, 4),
        tensor([1, 2], LT.SUBGRAPH_OUTPUT, 0, T.TENSOR_QUANT8_ASYMM, scale=1.0, zero_point=128),
    ]
    main = Subgraph(operands, [Operation(OP.FULLY_CONNECTED, list(range(4)), [4])], [0], [4])
    return Model(main=main, operand_values=values)


def quantized_conv_model(op: OperationType, bias_scale: float = BIAS_SCALE) -> Model:
    """A 1x1 convolution of in[1,2,2,1] into one channel, QUANT8_ASYMM_SIGNED with an INT32 bias.

    Implicit padding (VALID), stride 1, no activation; DEPTHWISE_CONV_2D takes a multiplier of 1 and
    GROUPED_CONV_2D one group (and an NHWC flag), TRANSPOSE_CONV_2D an output shape and an NHWC flag.
    """
    q8s = T.TENSOR_QUANT8_ASYMM_SIGNED
    # filter (int8 + 3 bytes of padding), bias, then the scalars of the operation's form from offset 8.
    scalars = {
        OP.CONV_2D: (2, 1, 1, 0),
        OP.DEPTHWISE_CONV_2D: (2, 1, 1, 1, 0),
        OP.GROUPED_CONV_2D: (2, 1, 1, 1, 0),
        OP.TRANSPOSE_CONV_2D: (2, 1, 1, 0),
    }[op]
    values = struct.pack("<b3xi", 3, 5)
    operands = [
        tensor([1, 2, 2, 1], LT.SUBGRAPH_INPUT, 1, q8s, scale=INPUT_SCALE, zero_point=-1),
        copy_constant(q8s, [1, 1, 1, 1], 0, 1, scale=WEIGHTS_SCALE),
        copy_constant(T.TENSOR_INT32, [1], 4, 4, scale=bias_scale),
    ]
    if op == OP.TRANSPOSE_CONV_2D:
        operands.append(copy_constant(T.TENSOR_INT32, [4], len(values), 16))
        values += struct.pack("<4i", 1, 2, 2, 1)
    for value in scalars:
        operands.append(copy_constant(T.INT32, [], len(values), 4))
        values += struct.pack("<i", value)
    if op in (OP.GROUPED_CONV_2D, OP.TRANSPOSE_CONV_2D):
        operands.append(copy_constant(T.BOOL, [], len(values), 1))
        values += b"\0"
    operands.append(tensor([1, 2, 2, 1], LT.SUBGRAPH_OUTPUT, 0, q8s, scale=1.0, zero_point=0))
    n = len(operands) - 1
    main = Subgraph(operands, [Operation(op, list(range(n)), [n])], [0], [n])
    return Model(main=main, operand_values=values)


Q16_BIAS_SCALE = 2.0**-13  # QUANTIZED_16BIT_LSTM's input scale 1/128 * weights scale 1/64


def quantized_16bit_lstm_model(bias_scales: tuple[float, ...] = (Q16_BIAS_SCALE,) * 4) -> Model:
    """QUANTIZED_16BIT_LSTM of one batch, input size 1, output size 1; every input is a model input.

    The input and output state have the fixed scale 1/128 and zero point 128, the cell state scale 2^-11; the
    eight weights share scale 1/64, so the four gate biases (inputs 9-12) have scale 1/128 * 1/64 = 2^-13.
    """
    q8, q16s = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT16_SYMM
    operands = [tensor([1, 1], LT.SUBGRAPH_INPUT, 1, q8, scale=1 / 128, zero_point=128)]
    operands += [tensor([1, 1], LT.SUBGRAPH_INPUT, 1, q8, scale=1 / 64, zero_point=128) for _ in range(8)]
    operands += [tensor([1], LT.SUBGRAPH_INPUT, 1, T.TENSOR_INT32, scale=s) for s in bias_scales]
    operands.append(tensor([1, 1], LT.SUBGRAPH_INPUT, 1, q16s, scale=2.0**-11))
    operands.append(tensor([1, 1], LT.SUBGRAPH_INPUT, 1, q8, scale=1 / 128, zero_point=128))
    operands.append(tensor([1, 1], LT.SUBGRAPH_OUTPUT, 0, q16s, scale=2.0**-11))
    operands.append(tensor([1, 1], LT.SUBGRAPH_OUTPUT, 0, q8, scale=1 / 128, zero_point=128))
    operation = Operation(OP.QUANTIZED_16BIT_LSTM, list(range(15)), [15, 16])
    return Model(main=Subgraph(operands, [operation], list(range(15)), [15, 16]))
