"""Reductions along axes (MEAN, REDUCE_*) and along one axis (ARGMAX, ARGMIN).

Axes are constants, normalized to [0, rank) and deduplicated at translation time (the HAL allows an axis twice,
ONNX does not); ONNX takes them as an int64 input.
"""

from __future__ import annotations

from driver_under_test.backends.onnxruntime._graph import Op
from driver_under_test.backends.onnxruntime._registry import rule
from driver_under_test.backends.onnxruntime.rules._common import BOOL8, FLOAT, FLOAT_QUANT, I32, NUMERIC
from harness.hal import OperationType as O


def _axes(op: Op) -> list[int]:
    rank = op.rank(0)
    assert rank is not None
    return sorted({int(a) % rank for a in op.value(1).reshape(-1).tolist()})


def _check_axes(op: Op) -> str | None:
    if op.rank(0) is None:
        return f"{op.name}: the input's rank must be known (its axes are normalized at translation)"
    if not op.value(1).size:
        return f"{op.name}: no axes to reduce"
    return None


_REDUCE = {
    O.MEAN: "ReduceMean",
    O.REDUCE_SUM: "ReduceSum",
    O.REDUCE_PROD: "ReduceProd",
    O.REDUCE_MAX: "ReduceMax",
    O.REDUCE_MIN: "ReduceMin",
}


@rule(O.MEAN, types=FLOAT_QUANT, params={1: "axes", 2: "keep_dims"}, check=_check_axes)
@rule([O.REDUCE_SUM, O.REDUCE_PROD], types=FLOAT, params={1: "axes", 2: "keep_dims"}, check=_check_axes)
@rule([O.REDUCE_MAX, O.REDUCE_MIN], types=FLOAT_QUANT, params={1: "axes", 2: "keep_dims"}, check=_check_axes)
def reduce(op: Op) -> None:
    """HAL MEAN/REDUCE_SUM/REDUCE_PROD/REDUCE_MAX/REDUCE_MIN: 0 input, 1 axes (TENSOR_INT32 constant), 2
    keep_dims (INT32 for MEAN, BOOL otherwise); output 0. ONNX ReduceMean/Sum/Prod/Max/Min over real values."""
    keep = 1 if op.scalar(2) else 0
    op.node(_REDUCE[op.type], [op.x(0), op.ints(_axes(op))], [op.y()], keepdims=keep)


@rule([O.REDUCE_ANY, O.REDUCE_ALL], types={BOOL8}, params={1: "axes", 2: "keep_dims"}, check=_check_axes)
def reduce_logical(op: Op) -> None:
    """HAL REDUCE_ANY/REDUCE_ALL: 0 input (TENSOR_BOOL8), 1 axes, 2 keep_dims (BOOL); output 0. ONNX reduces no
    booleans: ReduceMax (any) / ReduceMin (all) of the input as int32, cast back."""
    wide = op.node("Cast", [op.input(0)], to="INT32")
    name = "ReduceMax" if op.type == O.REDUCE_ANY else "ReduceMin"
    reduced = op.node(name, [wide, op.ints(_axes(op))], keepdims=1 if op.scalar(2) else 0)
    op.node("Cast", [reduced], [op.output()], to="BOOL")


@rule([O.ARGMAX, O.ARGMIN], types=NUMERIC, params={1: "axis"})
def arg_max_min(op: Op) -> None:
    """HAL ARGMAX/ARGMIN: 0 input, 1 axis (INT32 constant); output 0 (TENSOR_INT32, the axis removed). ONNX
    ArgMax/ArgMin (the first index among equal values, as the HAL) over real values, whose order dequantization
    keeps; its int64 result cast to int32."""
    x = op.x(0) if op.in_type(0) != I32 else op.input(0)
    index = op.node("ArgMax" if op.type == O.ARGMAX else "ArgMin", [x], axis=int(op.scalar(1)), keepdims=0)
    op.node("Cast", [index], [op.output()], to="INT32")
