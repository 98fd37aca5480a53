"""Small builders for catalogue unit tests: operands with values, and running a spec's kernel, shape
function or signature checks on them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import harness.ops
from harness.hal import DataLocation, Operand, OperandLifeTime, OperandType, OperationType, numpy_dtype
from harness.hal.sizes import is_scalar_type
from harness.ops import KernelContext, ShapeContext
from harness.ops.common import signature_accepts


@dataclass
class In:
    """An operation input: its operand and stored value (None value = omitted optional input)."""

    operand: Operand | None
    value: np.ndarray | None


def tensor(t: OperandType, data: Any, scale: float = 0.0, zero_point: int = 0, **kw: Any) -> In:
    """A tensor input holding `data` (already in stored form for quantized types)."""
    value = np.asarray(data).astype(numpy_dtype(t))
    return In(Operand(type=t, dimensions=list(value.shape), scale=scale, zero_point=zero_point, **kw), value)


def scalar(t: OperandType, v: Any) -> In:
    """A scalar input."""
    return In(Operand(type=t, lifetime=OperandLifeTime.CONSTANT_COPY), np.asarray(v, dtype=numpy_dtype(t)))


def subgraph(index: int) -> In:
    """A SUBGRAPH operand referencing Model.referenced[index]."""
    operand = Operand(type=OperandType.SUBGRAPH, lifetime=OperandLifeTime.SUBGRAPH, location=DataLocation(offset=index))
    return In(operand, np.asarray(index, dtype=np.int64))


OMITTED = In(None, None)


def out(t: OperandType, dims: Sequence[int] = (), scale: float = 0.0, zero_point: int = 0) -> Operand:
    """An output operand (dims default to unknown rank)."""
    return Operand(type=t, dimensions=list(dims), scale=scale, zero_point=zero_point)


def run(op: OperationType, inputs: Sequence[In], outputs: Sequence[Operand], **kw: Any) -> list[np.ndarray]:
    """Run the operation's reference kernel."""
    ctx = KernelContext(
        inputs=[i.value for i in inputs],
        input_operands=[i.operand for i in inputs],
        output_operands=list(outputs),
        **kw,
    )
    return harness.ops.get(op).kernel(ctx)


def shape_context(inputs: Sequence[In], outputs: Sequence[Operand], known: Sequence[int] | None = None) -> ShapeContext:
    """A ShapeContext with the inputs' dims; values of every input (or only of the `known` positions)."""
    shapes = []
    for i in inputs:
        if i.operand is None:
            shapes.append(None)
        elif is_scalar_type(i.operand.type):
            shapes.append(())
        else:
            shapes.append(tuple(i.operand.dimensions) if i.operand.dimensions else None)
    values = [i.value if known is None or k in known else None for k, i in enumerate(inputs)]
    return ShapeContext(operands=[i.operand for i in inputs], shapes=shapes, values=values, outputs=list(outputs))


def shape(
    op: OperationType, inputs: Sequence[In], outputs: Sequence[Operand], known: Sequence[int] | None = None
) -> list[tuple[int, ...]]:
    """The operation's shape function on these inputs."""
    return harness.ops.get(op).shape(shape_context(inputs, outputs, known))


def violations(op: OperationType, inputs: Sequence[In], outputs: Sequence[Operand]) -> list[str]:
    """Violations reported by the signature that accepts these operand types (AssertionError if none does)."""
    spec = harness.ops.get(op)
    types = [i.operand.type if i.operand is not None else None for i in inputs]
    matching = [s for s in spec.signatures if signature_accepts(s, types, [o.type for o in outputs])]
    assert len(matching) == 1, f"{len(matching)} signatures accept {types}"
    check = matching[0].check
    return check(shape_context(inputs, outputs)) if check else []


def accepted(op: OperationType, inputs: Sequence[In], outputs: Sequence[Operand]) -> bool:
    """True if some signature accepts these operand types."""
    types = [i.operand.type if i.operand is not None else None for i in inputs]
    return any(signature_accepts(s, types, [o.type for o in outputs]) for s in harness.ops.get(op).signatures)
