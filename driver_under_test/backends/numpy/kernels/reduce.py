"""Reductions: REDUCE_ALL, REDUCE_ANY, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_SUM, MEAN, ARGMAX, ARGMIN.

Axes may repeat and may be negative; an empty axis list reduces nothing. A reduction that removes every
dimension reports shape [1] (a tensor output cannot have rank 0). Quantized MAX/MIN work on stored codes
(the output shares the input's parameters); quantized MEAN sums codes in int64 and divides with rounding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from driver_under_test.backends.numpy.kernels.common import (
    BOOL8,
    FLOAT_TYPES,
    FLOATS,
    I32,
    QUANT8,
    QUANT8_TYPES,
    at_least_1d,
    compute_float,
    fault_active,
    int_vector,
    normalize_axis,
    quant_limits,
    quiet,
    requantize,
    required,
    rounding_divide,
    store,
)
from driver_under_test.backends.numpy.kernels.registry import OpCall, kernel
from driver_under_test.errors import invalid
from driver_under_test.faults import define
from harness.hal import OperationType

ARG_INDEX_SECOND_HALF_OFF_BY_ONE = define(
    "arg_index_second_half_off_by_one",
    "execution",
    "ARGMAX and ARGMIN scan an axis of even length (at least 4) in two halves and add the second half's offset "
    "once too often: an extreme found in the second half is reported one position too far (breaks ARGMAX/ARGMIN, "
    "whose index the HAL defines exactly; every wrong index is one off, inside the old int32 tolerance of 1).",
).name


def _axes(call: OpCall, rank: int) -> tuple[int, ...]:
    """The reduction axes of input 1, normalized and de-duplicated."""
    return tuple(sorted({normalize_axis(a, rank) for a in int_vector(call.inputs[1], "reduction axes")}))


def _reduce(call: OpCall, fn: Callable[..., np.ndarray], keep_dims: bool, **kwargs: object) -> np.ndarray:
    x = required(call, 0)
    axes = _axes(call, x.data.ndim)
    return at_least_1d(fn(x.data, axis=axes, keepdims=keep_dims, **kwargs))


def _extreme_identity(want_max: bool, type_: int) -> object:
    """The identity of max/min for a dtype, used when a reduced axis is empty."""
    if type_ in QUANT8_TYPES:
        lo, hi = quant_limits(type_)
        return lo if want_max else hi
    return -np.inf if want_max else np.inf


def _make_extreme(want_max: bool) -> Callable[[OpCall], list[np.ndarray]]:
    fn = np.max if want_max else np.min

    @quiet
    def run(call: OpCall) -> list[np.ndarray]:
        x, out = required(call, 0), call.outputs[0]
        initial = _extreme_identity(want_max, x.type)
        result = _reduce(call, fn, bool(call.scalar(2, False)), initial=initial)
        if x.type in QUANT8_TYPES:
            return [requantize(result, x.scale, x.zero_point, out)]
        return [store(result, out)]

    return run


kernel(OperationType.REDUCE_MAX, (*FLOATS, *QUANT8))(_make_extreme(True))
kernel(OperationType.REDUCE_MIN, (*FLOATS, *QUANT8))(_make_extreme(False))


def _make_arithmetic(fn: Callable[..., np.ndarray]) -> Callable[[OpCall], list[np.ndarray]]:
    @quiet
    def run(call: OpCall) -> list[np.ndarray]:
        x = required(call, 0)
        axes = _axes(call, x.data.ndim)
        result = fn(compute_float(x.data), axis=axes, keepdims=bool(call.scalar(2, False)))
        return [store(at_least_1d(np.asarray(result, dtype=np.float32)), call.outputs[0])]

    return run


kernel(OperationType.REDUCE_SUM, FLOATS)(_make_arithmetic(np.sum))
kernel(OperationType.REDUCE_PROD, FLOATS)(_make_arithmetic(np.prod))


def _make_logical(fn: Callable[..., np.ndarray]) -> Callable[[OpCall], list[np.ndarray]]:
    def run(call: OpCall) -> list[np.ndarray]:
        x = required(call, 0)
        axes = _axes(call, x.data.ndim)
        return [at_least_1d(fn(x.data.astype(np.bool_, copy=False), axis=axes, keepdims=bool(call.scalar(2, False))))]

    return run


kernel(OperationType.REDUCE_ALL, (BOOL8,))(_make_logical(np.all))
kernel(OperationType.REDUCE_ANY, (BOOL8,))(_make_logical(np.any))


@kernel(OperationType.MEAN, (*FLOATS, *QUANT8))
@quiet
def mean_kernel(call: OpCall) -> list[np.ndarray]:
    """Mean over the given axes; keep_dims is an INT32 (positive = keep)."""
    x, out = required(call, 0), call.outputs[0]
    axes = _axes(call, x.data.ndim)
    keep = int(call.scalar(2, 0)) > 0
    if x.type in FLOAT_TYPES:
        result = np.mean(compute_float(x.data), axis=axes, keepdims=keep, dtype=np.float32)
        return [store(at_least_1d(np.asarray(result, dtype=np.float32)), out)]
    count = int(np.prod([x.data.shape[a] for a in axes], dtype=np.int64))
    total = np.sum(x.data.astype(np.int64) - x.zero_point, axis=axes, keepdims=keep)
    centred = rounding_divide(total, count) if count else np.zeros_like(total)
    return [at_least_1d(requantize(centred + x.zero_point, x.scale, x.zero_point, out))]


def _make_arg(fn: Callable[..., np.ndarray]) -> Callable[[OpCall], list[np.ndarray]]:
    def run(call: OpCall) -> list[np.ndarray]:
        x = required(call, 0)
        axis = normalize_axis(int(call.scalar(1, 0)), x.data.ndim)
        if x.data.shape[axis] == 0:
            raise invalid("the reduced axis of ARGMAX/ARGMIN must be non-empty", "exec.empty_input")
        # Ties resolve to the first index, as a sequential scan with a strict comparison would.
        index = fn(x.data, axis=axis).astype(np.int32)
        length = x.data.shape[axis]
        if fault_active(call, ARG_INDEX_SECOND_HALF_OFF_BY_ONE) and length >= 4 and length % 2 == 0:
            index = index + (index >= length // 2).astype(np.int32)
        return [at_least_1d(index)]

    return run


kernel(OperationType.ARGMAX, (*FLOATS, I32, *QUANT8))(_make_arg(np.argmax))
kernel(OperationType.ARGMIN, (*FLOATS, I32, *QUANT8))(_make_arg(np.argmin))
