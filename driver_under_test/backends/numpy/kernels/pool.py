"""Pooling: AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D over NHWC or NCHW inputs.

Padding never counts: averages divide by the number of real input elements under the window, and max pooling
ignores padded positions. Quantized outputs share the input's scale and zero point, so no requantization occurs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from driver_under_test.backends.numpy.kernels._conv_common import (
    FLOAT_TYPES,
    QUANT8_TYPES,
    Geometry,
    WindowSignature,
    from_nhwc,
    parse_window_params,
    resolve_geometry,
    storage_min,
    store_float,
    to_nhwc,
)
from driver_under_test.backends.numpy.kernels._im2col import windows
from driver_under_test.backends.numpy.kernels.common import (
    fault_active,
    float_activation,
    quantized_activation_range,
    quiet,
)
from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor, kernel
from driver_under_test.faults import define
from harness.hal import OperationType, numpy_dtype

_POOL_SIG = WindowSignature(first=1, kernel_size=True)

PoolFn = Callable[[np.ndarray, Geometry, Tensor], np.ndarray]

AVG_POOL_COUNTS_PADDING = define(
    "avg_pool_counts_padding",
    "execution",
    "AVERAGE_POOL_2D (float and quantized) divides every window's sum by the full window area, padding "
    "included, instead of by the number of real input elements under the window (breaks AVERAGE_POOL_2D "
    "semantics: border outputs shrink towards zero whenever a window overlaps explicit or SAME padding).",
).name


def _counts(g: Geometry, in_h: int, in_w: int, full_window: bool = False) -> np.ndarray:
    """[1, OH, OW, 1] number of real (unpadded) input elements under each window (the whole area if asked)."""
    if full_window:
        return np.full((1, g.out_h, g.out_w, 1), g.kernel_h * g.kernel_w, dtype=np.int32)
    ones = np.ones((1, in_h, in_w, 1), dtype=np.int32)
    return windows(ones, g, 0).sum(axis=(3, 4))


def _average_float(x: np.ndarray, g: Geometry, inp: Tensor, full_window: bool = False) -> np.ndarray:
    total = windows(x.astype(np.float32, copy=False), g, 0.0).sum(axis=(3, 4), dtype=np.float32)
    counts = _counts(g, x.shape[1], x.shape[2], full_window).astype(np.float32)
    return total / np.maximum(counts, 1)


def _average_quant(x: np.ndarray, g: Geometry, inp: Tensor, full_window: bool = False) -> np.ndarray:
    total = windows(x.astype(np.int32), g, 0).sum(axis=(3, 4), dtype=np.int32)
    counts = np.maximum(_counts(g, x.shape[1], x.shape[2], full_window), 1)
    # Integer division rounding half away from zero; the output zero point equals the input's.
    half = counts // 2
    return np.where(total >= 0, (total + half) // counts, -((-total + half) // counts))


def _max_float(x: np.ndarray, g: Geometry, inp: Tensor) -> np.ndarray:
    return windows(x.astype(np.float32, copy=False), g, -np.inf).max(axis=(3, 4))


def _max_quant(x: np.ndarray, g: Geometry, inp: Tensor) -> np.ndarray:
    return windows(x, g, storage_min(inp.type)).max(axis=(3, 4))


def _l2_float(x: np.ndarray, g: Geometry, inp: Tensor) -> np.ndarray:
    x = x.astype(np.float32, copy=False)
    total = windows(x * x, g, 0.0).sum(axis=(3, 4), dtype=np.float32)
    counts = _counts(g, x.shape[1], x.shape[2]).astype(np.float32)
    return np.sqrt(total / np.maximum(counts, 1))


def _pool(call: OpCall, float_fn: PoolFn, quant_fn: PoolFn | None) -> list[np.ndarray]:
    """Decode the shared pooling signature, run the reduction, apply activation and store."""
    params = parse_window_params(call, _POOL_SIG)
    inp, out = call.inputs[0], call.outputs[0]
    x = to_nhwc(inp.data, params.nchw)
    g = resolve_geometry(params, x.shape[1], x.shape[2], params.kernel_h, params.kernel_w)
    if inp.type in QUANT8_TYPES and quant_fn is not None:
        lo, hi = quantized_activation_range(params.activation, out.scale, out.zero_point, out.type)
        result = np.clip(quant_fn(x, g, inp), lo, hi).astype(numpy_dtype(out.type))
    else:
        result = store_float(float_activation(float_fn(x, g, inp), params.activation), out)
    return [from_nhwc(result, params.nchw)]


@kernel(OperationType.AVERAGE_POOL_2D, (*FLOAT_TYPES, *QUANT8_TYPES))
@quiet
def average_pool_2d(call: OpCall) -> list[np.ndarray]:
    """AVERAGE_POOL_2D: mean over each window's real elements."""
    if fault_active(call, AVG_POOL_COUNTS_PADDING):
        full = functools.partial(_average_float, full_window=True), functools.partial(_average_quant, full_window=True)
        return _pool(call, *full)
    return _pool(call, _average_float, _average_quant)


@kernel(OperationType.MAX_POOL_2D, (*FLOAT_TYPES, *QUANT8_TYPES))
@quiet
def max_pool_2d(call: OpCall) -> list[np.ndarray]:
    """MAX_POOL_2D: maximum over each window's real elements."""
    return _pool(call, _max_float, _max_quant)


@kernel(OperationType.L2_POOL_2D, FLOAT_TYPES)
@quiet
def l2_pool_2d(call: OpCall) -> list[np.ndarray]:
    """L2_POOL_2D: root mean square over each window's real elements."""
    return _pool(call, _l2_float, None)
