"""Pooling: AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D over NHWC or NCHW inputs.

Padding never counts: averages divide by the number of real input elements under the window, and max pooling
ignores padded positions. Quantized outputs share the input's scale and zero point, so no requantization occurs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from driver_under_test.kernels._conv_common import (
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
from driver_under_test.kernels._im2col import windows
from driver_under_test.kernels.common import float_activation, quantized_activation_range, quiet
from driver_under_test.kernels.registry import OpCall, Tensor, kernel
from harness.hal import OperationType, numpy_dtype

_POOL_SIG = WindowSignature(first=1, kernel_size=True)

PoolFn = Callable[[np.ndarray, Geometry, Tensor], np.ndarray]


def _counts(g: Geometry, in_h: int, in_w: int) -> np.ndarray:
    """[1, OH, OW, 1] number of real (unpadded) input elements under each window."""
    ones = np.ones((1, in_h, in_w, 1), dtype=np.int32)
    return windows(ones, g, 0).sum(axis=(3, 4))


def _average_float(x: np.ndarray, g: Geometry, inp: Tensor) -> np.ndarray:
    total = windows(x.astype(np.float32, copy=False), g, 0.0).sum(axis=(3, 4), dtype=np.float32)
    counts = _counts(g, x.shape[1], x.shape[2]).astype(np.float32)
    return total / np.maximum(counts, 1)


def _average_quant(x: np.ndarray, g: Geometry, inp: Tensor) -> np.ndarray:
    total = windows(x.astype(np.int32), g, 0).sum(axis=(3, 4), dtype=np.int32)
    counts = np.maximum(_counts(g, x.shape[1], x.shape[2]), 1)
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
