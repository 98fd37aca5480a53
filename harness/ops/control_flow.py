"""Control flow: IF and WHILE run referenced subgraphs (a SUBGRAPH operand's location.offset indexes
Model.referenced) through the kernel context's `run_subgraph`.

WHILE follows the HAL's split of the loop operands: the first m (= number of WHILE outputs) are
input-output operands, the next k (= body outputs - m) state-only, the rest input-only. The loop deadline
is checked before every evaluation of the condition.
"""

from __future__ import annotations

import time

import numpy as np

from harness.hal import OperationType
from harness.ops.common import (
    BOOL8,
    DATA_TYPES,
    RANK_1,
    SUBGRAPH,
    V1_3,
    ExecutionError,
    define,
    known_rank,
    output_dtype,
    tensor,
)
from harness.ops.registry import Arg, KernelContext, LoopTimeoutError, ShapeContext, Signature

FAMILY = "control_flow"

_ANY_INPUTS = Arg("input", DATA_TYPES, repeated=True)
_ANY_OUTPUTS = Arg("output", DATA_TYPES, repeated=True)


def _declared_shapes(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """Output shapes are only known by running a subgraph: report what the outputs declare."""
    return [tuple(o.dimensions) for o in ctx.outputs]


def _flag(value: np.ndarray) -> bool:
    """The truth value of a TENSOR_BOOL8 [1]."""
    flat = np.asarray(value).reshape(-1)
    if flat.size != 1:
        raise ExecutionError(f"a condition must hold one boolean, got {flat.size} values")
    return bool(flat[0])


def _subgraph_index(ctx: KernelContext, i: int) -> int:
    return ctx.input_operands[i].location.offset


def _as_outputs(ctx: KernelContext, values: list[np.ndarray]) -> list[np.ndarray]:
    if len(values) != len(ctx.output_operands):
        raise ExecutionError(f"subgraph produced {len(values)} values for {len(ctx.output_operands)} outputs")
    return [np.asarray(v).astype(output_dtype(ctx, k)) for k, v in enumerate(values)]


def _condition_shape_check(ctx: ShapeContext) -> list[str]:
    dims = ctx.shapes[0]
    if known_rank(dims) and tuple(dims) not in ((1,), (0,)):
        return [f"IF condition must have shape [1], got {list(dims)}"]
    return []


def _if_kernel(ctx: KernelContext) -> list[np.ndarray]:
    branch = _subgraph_index(ctx, 1 if _flag(ctx.inputs[0]) else 2)
    return _as_outputs(ctx, list(ctx.run_subgraph(branch, list(ctx.inputs[3:]))))


define(
    OperationType.IF,
    FAMILY,
    [
        Signature(
            inputs=(
                tensor("condition", BOOL8, RANK_1),
                Arg("then_branch", (SUBGRAPH,)),
                Arg("else_branch", (SUBGRAPH,)),
                _ANY_INPUTS,
            ),
            outputs=(_ANY_OUTPUTS,),
            # The condition and both branches are all an IF needs: the branches may take no data at all.
            min_inputs=3,
            version=V1_3,
            check=_condition_shape_check,
        )
    ],
    shape=_declared_shapes,
    kernel=_if_kernel,
)


def _while_kernel(ctx: KernelContext) -> list[np.ndarray]:
    condition, body = _subgraph_index(ctx, 0), _subgraph_index(ctx, 1)
    values = list(ctx.inputs[2:])
    m = len(ctx.output_operands)
    while True:
        if ctx.loop_deadline_ns is not None and time.monotonic_ns() > ctx.loop_deadline_ns:
            raise LoopTimeoutError("WHILE ran past its loop timeout")
        (flag,) = ctx.run_subgraph(condition, values)
        if not _flag(flag):
            break
        produced = list(ctx.run_subgraph(body, values))
        if not m <= len(produced) <= len(values):
            raise ExecutionError(f"body produced {len(produced)} values for {m} outputs and {len(values)} inputs")
        # Input-output and state-only operands take the body's values; input-only ones stay.
        values = produced + values[len(produced) :]
    return _as_outputs(ctx, values[:m])


define(
    OperationType.WHILE,
    FAMILY,
    [
        Signature(
            inputs=(Arg("condition", (SUBGRAPH,)), Arg("body", (SUBGRAPH,)), _ANY_INPUTS),
            outputs=(_ANY_OUTPUTS,),
            version=V1_3,
        )
    ],
    shape=_declared_shapes,
    kernel=_while_kernel,
)
