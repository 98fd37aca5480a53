"""Small hand-built models and requests for the reference validator's tests (valid unless a test mutates them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.hal import (
    DataLocation,
    Model,
    Operand,
    Operation,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
    numpy_dtype,
)
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.hal.memory import create_ashmem


def operand(
    t: int,
    dims: Sequence[int] = (),
    lifetime: int = L.TEMPORARY_VARIABLE,
    *,
    scale: float = 0.0,
    zero_point: int = 0,
    location: DataLocation | None = None,
    extra: Any = None,
) -> Operand:
    """An operand; numberOfConsumers is filled in by recount()."""
    return Operand(
        type=t,
        dimensions=list(dims),
        scale=scale,
        zero_point=zero_point,
        lifetime=lifetime,
        location=location or DataLocation(),
        extra_params=extra,
    )


class Values:
    """Collects CONSTANT_COPY values into one operandValues blob, each 4-byte aligned."""

    def __init__(self) -> None:
        self.blob = bytearray()

    def const(self, t: int, dims: Sequence[int], values: Sequence[Any], **kw: Any) -> Operand:
        data = np.asarray(values, dtype=numpy_dtype(t)).tobytes()
        self.blob.extend(bytes(-len(self.blob) % 4))
        location = DataLocation(0, len(self.blob), len(data))
        self.blob.extend(data)
        return operand(t, dims, L.CONSTANT_COPY, location=location, **kw)


def recount(model: Model) -> Model:
    """Set every numberOfConsumers to the number of operation input slots naming the operand."""
    for graph in [model.main, *model.referenced]:
        for k, o in enumerate(graph.operands):
            o.number_of_consumers = sum(op.inputs.count(k) for op in graph.operations)
    return model


def add_model(
    t: int = T.TENSOR_FLOAT32, a_dims: Sequence[int] = (2,), out_dims: Sequence[int] = (2,), **q: Any
) -> Model:
    """out = ADD(a, b, act=NONE), a and b model inputs."""
    values = Values()
    out_q = q.pop("out", q)
    operands = [
        operand(t, a_dims, L.SUBGRAPH_INPUT, **q),
        operand(t, (2,), L.SUBGRAPH_INPUT, **q),
        values.const(T.INT32, (), [0]),
        operand(t, out_dims, L.SUBGRAPH_OUTPUT, **out_q),
    ]
    main = Subgraph(operands, [Operation(Op.ADD, [0, 1, 2], [3])], [0, 1], [3])
    return recount(Model(main=main, operand_values=bytes(values.blob)))


def quant_add_model() -> Model:
    """ADD on TENSOR_QUANT8_ASYMM tensors."""
    return add_model(T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=10, out={"scale": 1.0, "zero_point": 0})


def chain_model() -> Model:
    """t = ADD(a, b, act); out = ADD(t, b, act)."""
    model = add_model()
    main = model.main
    main.operands.insert(3, operand(T.TENSOR_FLOAT32, (2,)))  # t, operand 3; out becomes 4
    main.operations = [Operation(Op.ADD, [0, 1, 2], [3]), Operation(Op.ADD, [3, 1, 2], [4])]
    main.output_indexes = [4]
    return recount(model)


def pool_model() -> Model:
    """ADD(a, b, act) with b a CONSTANT_REFERENCE in pool 0."""
    model = add_model()
    b = model.main.operands[1]
    b.lifetime = L.CONSTANT_REFERENCE
    b.location = DataLocation(0, 0, 8)
    model.main.input_indexes = [0]
    model.pools = [create_ashmem(8)]
    return model


def per_channel_conv_model() -> Model:
    """CONV_2D (implicit SAME padding) of a quant8 input with a per-channel filter of two output channels."""
    values = Values()
    operands = [
        operand(T.TENSOR_QUANT8_ASYMM, (1, 3, 3, 1), L.SUBGRAPH_INPUT, scale=0.5),
        values.const(
            T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
            (2, 1, 1, 1),
            [1, 2],
            extra=SymmPerChannelQuantParams(scales=[0.5, 0.25], channel_dim=0),
        ),
        values.const(T.TENSOR_INT32, (2,), [0, 0]),
        values.const(T.INT32, (), [1]),  # padding scheme SAME
        values.const(T.INT32, (), [1]),
        values.const(T.INT32, (), [1]),
        values.const(T.INT32, (), [0]),
        operand(T.TENSOR_QUANT8_ASYMM, (1, 3, 3, 2), L.SUBGRAPH_OUTPUT, scale=1.0),
    ]
    main = Subgraph(operands, [Operation(Op.CONV_2D, list(range(7)), [7])], [0], [7])
    return recount(Model(main=main, operand_values=bytes(values.blob)))


def if_model() -> Model:
    """main: IF(cond, then=referenced[1], else=referenced[0], x); referenced[1] is itself an IF over referenced[0]
    with a constant condition; referenced[0] computes ADD(x, x)."""
    values = Values()
    f32 = T.TENSOR_FLOAT32
    leaf = Subgraph(
        [operand(f32, (2,), L.SUBGRAPH_INPUT), values.const(T.INT32, (), [0]), operand(f32, (2,), L.SUBGRAPH_OUTPUT)],
        [Operation(Op.ADD, [0, 0, 1], [2])],
        [0],
        [2],
    )
    inner = Subgraph(
        [
            operand(f32, (2,), L.SUBGRAPH_INPUT),
            values.const(T.TENSOR_BOOL8, (1,), [True]),
            operand(T.SUBGRAPH, (), L.SUBGRAPH, location=DataLocation(0, 0, 0)),
            operand(T.SUBGRAPH, (), L.SUBGRAPH, location=DataLocation(0, 0, 0)),
            operand(f32, (2,), L.SUBGRAPH_OUTPUT),
        ],
        [Operation(Op.IF, [1, 2, 3, 0], [4])],
        [0],
        [4],
    )
    main = Subgraph(
        [
            operand(T.TENSOR_BOOL8, (1,), L.SUBGRAPH_INPUT),
            operand(f32, (2,), L.SUBGRAPH_INPUT),
            operand(T.SUBGRAPH, (), L.SUBGRAPH, location=DataLocation(0, 1, 0)),
            operand(T.SUBGRAPH, (), L.SUBGRAPH, location=DataLocation(0, 0, 0)),
            operand(f32, (2,), L.SUBGRAPH_OUTPUT),
        ],
        [Operation(Op.IF, [0, 2, 3, 1], [4])],
        [0, 1],
        [4],
    )
    return recount(Model(main=main, referenced=[leaf, inner], operand_values=bytes(values.blob)))


def add_request(model: Model | None = None) -> tuple[Model, Request]:
    """A request for add_model: a at [0, 8), b at [8, 16), out at [16, 24) of one 24-byte pool."""
    model = model or add_model()
    request = Request(
        inputs=[
            RequestArgument(location=DataLocation(0, 0, 8), dimensions=[2]),
            RequestArgument(location=DataLocation(0, 8, 8)),
        ],
        outputs=[RequestArgument(location=DataLocation(0, 16, 8), dimensions=[2])],
        pools=[create_ashmem(24)],
    )
    return model, request
