"""The driver's kernel table: which operations it executes, for which operand types, and how.

A kernel receives an OpCall (runtime tensors with their quantization parameters) and returns the output
arrays in stored form (quantized values stay integers, float16 stays float16). The executor derives the
actual output shapes from the returned arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.hal import OperandType, OperationType


@dataclass
class Tensor:
    """A runtime operand: type, quantization parameters and (for inputs) its value."""

    type: int
    shape: tuple[int, ...]
    scale: float = 0.0
    zero_point: int = 0
    channel_scales: np.ndarray | None = None  # per-channel quant scales
    channel_dim: int = 0
    data: np.ndarray | None = None

    def item(self) -> Any:
        """The Python value of a scalar tensor."""
        assert self.data is not None
        return self.data.reshape(-1)[0].item()


@dataclass
class OpCall:
    """One operation invocation as a kernel sees it."""

    inputs: Sequence[Tensor | None]  # None for an omitted or NO_VALUE optional input
    outputs: Sequence[Tensor]  # declared output metadata (shape may contain 0 = unknown)
    relaxed: bool = False
    # For IF/WHILE: run referenced subgraph k on input tensors, returning its output tensors.
    run_subgraph: Callable[[int, list[Tensor]], list[Tensor]] | None = None
    loop_deadline_ns: int | None = None
    options: dict[str, Any] = field(default_factory=dict)  # device options and enabled faults

    def scalar(self, i: int, default: Any = None) -> Any:
        """Value of scalar input i, or `default` when absent."""
        if i >= len(self.inputs) or self.inputs[i] is None or self.inputs[i].data is None:
            return default
        return self.inputs[i].item()


KernelFn = Callable[[OpCall], list[np.ndarray]]


@dataclass(frozen=True)
class KernelEntry:
    """A kernel and the primary operand types (type of input 0) it handles."""

    op: OperationType
    fn: KernelFn
    types: frozenset[int]


_KERNELS: dict[OperationType, KernelEntry] = {}


def kernel(op: OperationType, types: Sequence[OperandType]) -> Callable[[KernelFn], KernelFn]:
    """Register `fn` as the driver's kernel for `op` on these primary types; duplicates are an error."""

    def wrap(fn: KernelFn) -> KernelFn:
        if op in _KERNELS:
            raise RuntimeError(f"driver kernel for {op.name} registered twice")
        _KERNELS[op] = KernelEntry(op, fn, frozenset(int(t) for t in types))
        return fn

    return wrap


def lookup(op: int) -> KernelEntry | None:
    """The kernel entry for an operation, or None if the driver does not implement it."""
    if op.__class__ is OperationType or op.__class__ is int:
        return _KERNELS.get(op)  # the keys are OperationType members, equal to (and hashed as) their ints
    try:
        return _KERNELS.get(OperationType(op))
    except ValueError:
        return None


def implemented() -> dict[OperationType, KernelEntry]:
    """All registered kernels."""
    return dict(_KERNELS)
