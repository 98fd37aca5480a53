"""Helpers shared by the recurrent kernels (RNN, LSTM, SVDF families): optional inputs, activations, layouts."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from driver_under_test.backends.numpy.kernels.registry import OpCall, Tensor
from driver_under_test.errors import invalid
from harness.hal import numpy_dtype


def present(t: Tensor | None) -> bool:
    """True when an optional input carries a value (omitted inputs are None or zero-sized)."""
    return t is not None and t.data is not None and t.data.size > 0


def optional_f32(call: OpCall, i: int) -> np.ndarray | None:
    """float32 value of optional input i, or None when omitted."""
    t = call.inputs[i] if i < len(call.inputs) else None
    return t.data.astype(np.float32) if present(t) else None


def required_f32(call: OpCall, i: int, ndim: int, name: str) -> np.ndarray:
    """float32 value of required input i, which must have rank `ndim`."""
    t = call.inputs[i] if i < len(call.inputs) else None
    if not present(t):
        raise invalid(f"required input {i} ({name}) is missing", "inputs.missing")
    if t.data.ndim != ndim:
        raise invalid(f"{name} must have rank {ndim}, got {t.data.ndim}", "shape.rank")
    return t.data.astype(np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # Split by sign so exp never overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(np.float32)


_ACTIVATIONS: dict[int, Callable[[np.ndarray], np.ndarray]] = {
    0: lambda x: x,
    1: lambda x: np.maximum(x, np.float32(0)),
    2: lambda x: np.clip(x, np.float32(-1), np.float32(1)),
    3: lambda x: np.clip(x, np.float32(0), np.float32(6)),
    4: np.tanh,
    6: _sigmoid,
}


def activation_fn(code: int) -> Callable[[np.ndarray], np.ndarray]:
    """The activation function with this code (fused activations 0-3, plus tanh 4 and sigmoid 6)."""
    try:
        return _ACTIVATIONS[int(code)]
    except KeyError:
        raise invalid(f"unsupported activation {code}", "param.activation") from None


sigmoid = _sigmoid


def time_major(x: np.ndarray, is_time_major: bool) -> np.ndarray:
    """[time, batch, ...] view of a sequence tensor."""
    if x.ndim != 3:
        raise invalid(f"sequence input must have rank 3, got {x.ndim}", "shape.rank")
    return x if is_time_major else x.transpose(1, 0, 2)


def from_time_major(x: np.ndarray, is_time_major: bool) -> np.ndarray:
    """Back to the caller's sequence layout, contiguous."""
    return np.ascontiguousarray(x if is_time_major else x.transpose(1, 0, 2))


def store(values: np.ndarray, out: Tensor) -> np.ndarray:
    """float32 results in the output's float storage type."""
    return np.ascontiguousarray(values.astype(numpy_dtype(out.type)))


def check_shape(a: np.ndarray, shape: tuple[int, ...], name: str) -> None:
    """INVALID_ARGUMENT unless `a` has exactly this shape."""
    if a.shape != shape:
        raise invalid(f"{name} has shape {a.shape}, expected {shape}", "shape.operand")
