"""The operation catalogue's registry: one OpSpec per HAL operation, registered by a decorator-like call.

An OpSpec states, declaratively, what the oracle and the generators need to know about an operation:
its typed signatures (inputs/outputs, optional trailing inputs, constant-only inputs, rank limits), a shape
function, a reference kernel and generation hints. A duplicate registration is an error at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.hal import Operand, OperandType, OperationType


@dataclass(frozen=True)
class Arg:
    """One input or output position of a signature."""

    name: str
    types: tuple[OperandType, ...]  # accepted operand types at this position
    optional: bool = False  # may be NO_VALUE (and, if trailing, omitted)
    constant: bool = False  # must be CONSTANT_COPY/CONSTANT_REFERENCE
    rank: tuple[int, int] | None = None  # inclusive (min, max) rank for tensors; None = any
    repeated: bool = False  # this position may repeat one or more times (e.g. CONCATENATION inputs)


@dataclass(frozen=True)
class Signature:
    """One concrete typing of an operation: positions, how many leading inputs are required, HAL version."""

    inputs: tuple[Arg, ...]
    outputs: tuple[Arg, ...]
    min_inputs: int | None = None  # required leading inputs; None = all inputs are required
    version: str = "V1_0"  # HAL version that introduced this typing
    # Extra constraint on operand parameters (scale relations, matching shapes...). Returns violations.
    check: Callable[[ShapeContext], list[str]] | None = None

    @property
    def required_inputs(self) -> int:
        """Number of inputs that must be present."""
        return len(self.inputs) if self.min_inputs is None else self.min_inputs


@dataclass
class ShapeContext:
    """What a shape function or signature check sees: input operands, their shapes and constant values."""

    operands: Sequence[Operand | None]  # input operands (None for omitted/NO_VALUE inputs)
    shapes: Sequence[tuple[int, ...] | None]
    values: Sequence[np.ndarray | None]  # constant values where known, else None
    outputs: Sequence[Operand]

    def scalar(self, i: int, default: Any = None) -> Any:
        """Python value of constant scalar input i, or `default` if absent or not constant."""
        values = self.values
        if i >= len(values) or values[i] is None:
            return default
        v = values[i]
        # item(0) is reshape(-1)[0].item() in one call (an empty array still raises the reshape's IndexError).
        return v.item(0) if type(v) is np.ndarray and v.size else v.reshape(-1)[0].item()


@dataclass
class KernelContext:
    """What a reference kernel sees: input values in stored form and the operand descriptions."""

    inputs: Sequence[np.ndarray | None]  # stored-form values (quantized ints stay ints); None = no value
    input_operands: Sequence[Operand | None]
    output_operands: Sequence[Operand]
    relaxed: bool = False
    # For IF/WHILE: run referenced subgraph k on input arrays, returning its output arrays.
    run_subgraph: Callable[[int, list[np.ndarray]], list[np.ndarray]] | None = None
    # For WHILE: absolute monotonic-ns deadline for the loop, None = unlimited.
    loop_deadline_ns: int | None = None

    def scalar(self, i: int, default: Any = None) -> Any:
        """Python value of scalar input i, or `default` if absent."""
        inputs = self.inputs
        if i >= len(inputs) or inputs[i] is None:
            return default
        v = inputs[i]
        # item(0) is reshape(-1)[0].item() in one call (an empty array still raises the reshape's IndexError).
        return v.item(0) if type(v) is np.ndarray and v.size else v.reshape(-1)[0].item()

    def has(self, i: int) -> bool:
        """True if input i is present and has a value."""
        return i < len(self.inputs) and self.inputs[i] is not None


class LoopTimeoutError(Exception):
    """A WHILE loop ran past its loop timeout (the HAL prescribes MISSED_DEADLINE_*)."""


ShapeFn = Callable[[ShapeContext], list[tuple[int, ...]]]
KernelFn = Callable[[KernelContext], list[np.ndarray]]


@dataclass
class OpSpec:
    """Everything the harness knows about one HAL operation."""

    op: OperationType
    family: str
    signatures: list[Signature]
    shape: ShapeFn | None = None
    kernel: KernelFn | None = None
    # Generation hints: free-form, documented per key in harness/ops/HINTS.md
    # (e.g. "input_range": (lo, hi) keeping results finite; "params": per-input value ranges).
    hints: dict[str, Any] = field(default_factory=dict)


_REGISTRY: dict[OperationType, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    """Add an operation to the catalogue; a second spec for the same operation is an error."""
    if spec.op in _REGISTRY:
        raise RuntimeError(f"operation {spec.op.name} registered twice ({_REGISTRY[spec.op].family}, {spec.family})")
    _REGISTRY[spec.op] = spec
    return spec


def get(op: int) -> OpSpec | None:
    """The spec of an operation, or None if it is not catalogued."""
    try:
        # The keys are OperationType members, which hash and compare as their values: an int finds its spec
        # without the (much slower) enum lookup.
        return _REGISTRY.get(op)
    except TypeError:  # unhashable: the enum lookup compares it with every value
        pass
    try:
        return _REGISTRY.get(OperationType(op))
    except ValueError:
        return None


def all_specs() -> list[OpSpec]:
    """Every catalogued operation, in HAL order."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]
