"""Pieces several rules share: operand type sets, fused activations, requantization, NCHW layouts, padding."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# The rules import the fused activation helpers from here.
from driver_under_test.backends._operation import activation, check_activation  # noqa: F401
from driver_under_test.backends.litert._graph import Op, TensorSpec
from harness.hal import OperandType

A = OperandType
F32 = A.TENSOR_FLOAT32
F16 = A.TENSOR_FLOAT16
I32 = A.TENSOR_INT32
Q8 = A.TENSOR_QUANT8_ASYMM
QS8 = A.TENSOR_QUANT8_ASYMM_SIGNED
Q8_SYMM = A.TENSOR_QUANT8_SYMM
Q8_PC = A.TENSOR_QUANT8_SYMM_PER_CHANNEL
Q16_SYMM = A.TENSOR_QUANT16_SYMM
Q16_ASYMM = A.TENSOR_QUANT16_ASYMM
BOOL8 = A.TENSOR_BOOL8

FLOAT = frozenset({F32})
QUANT = frozenset({Q8, QS8})
FLOAT_QUANT = FLOAT | QUANT

# HAL fused activation codes (NONE 0, RELU 1, RELU1 2, RELU6 3) equal TFLite's ActivationFunctionType numbers;
# every builtin the rules emit with an activation has a fused_activation_function, so none needs a separate one.


def same_quant(a: TensorSpec, b: TensorSpec) -> bool:
    """True when two specs carry the same quantization (scale and zero point)."""
    return a.scales == b.scales and a.zero_points == b.zero_points


def requantize(op: Op, tensor: int, spec: TensorSpec, target: TensorSpec) -> int:
    """`tensor` (of `spec`) requantized to `target`'s scale and zero point through QUANTIZE (a copy if equal)."""
    if same_quant(spec, target):
        return tensor
    out = op.temp(TensorSpec(spec.type, spec.shape, target.scales, target.zero_points))
    op.emit("QUANTIZE", [tensor], [out])
    return out


# ---- layouts ----

NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)


def permuted(shape: tuple[int, ...] | None, perm: Sequence[int]) -> tuple[int, ...] | None:
    """A shape permuted (None stays None)."""
    return None if shape is None else tuple(shape[p] for p in perm)


def transpose(op: Op, tensor: int, spec: TensorSpec, perm: Sequence[int], target: int | None = None) -> int:
    """TRANSPOSE(tensor, perm) into `target` or a new tensor; the result's index."""
    if target is None:
        target = op.temp(spec.with_shape(permuted(spec.shape, perm)))
    op.emit("TRANSPOSE", [tensor, op.const(np.asarray(perm, dtype=np.int32))], [target])
    return target


def layout_nchw(op: Op, i: int) -> bool:
    """The value of the optional BOOL layout input i (False when absent: NHWC)."""
    return bool(op.scalar(i, False))


def nhwc_input(op: Op, i: int, nchw: bool) -> tuple[int, TensorSpec]:
    """Input i as an NHWC tensor: itself, or its transpose when the layout is NCHW."""
    tensor, spec = op.input(i), op.spec(i)
    if not nchw:
        return tensor, spec
    out = transpose(op, tensor, spec, NCHW_TO_NHWC)
    return out, spec.with_shape(permuted(spec.shape, NCHW_TO_NHWC))


def nhwc_output(op: Op, k: int, nchw: bool, spec: TensorSpec | None = None) -> tuple[int, Callable[[], None]]:
    """A tensor to write output k's NHWC value into, and the function that then writes output k (a transpose
    back to NCHW, and a requantization when `spec` differs from the output's quantization)."""
    out_spec = op.out_spec(k)
    compute = spec if spec is not None else out_spec
    requant = not (same_quant(compute, out_spec) and compute.type == out_spec.type)
    if not nchw and not requant:
        return op.output(k), lambda: None
    shape = permuted(out_spec.shape, NCHW_TO_NHWC) if nchw else out_spec.shape
    temp = op.temp(compute.with_shape(shape))

    def finish() -> None:
        current, current_spec = temp, compute.with_shape(shape)
        if requant:
            target = out_spec.with_shape(shape) if nchw else out_spec
            out = op.temp(target) if nchw else op.output(k)
            op.emit("QUANTIZE", [current], [out])
            current, current_spec = out, target
        if nchw:
            transpose(op, current, current_spec, NHWC_TO_NCHW, op.output(k))

    return temp, finish


def check_rank4(op: Op, i: int = 0) -> str | None:
    """Support check: input i has a known rank of 4."""
    if op.rank(i) != 4:
        return f"{op.name}: input {i} must have a known rank of 4 (got {op.rank(i)})"
    return None


# ---- padding ----

PADDING_SAME, PADDING_VALID = 1, 2  # the HAL's implicit padding schemes


def same_padding(size: int, filter_size: int, stride: int, dilation: int) -> tuple[int, int]:
    """(head, tail) of the HAL's implicit SAME padding along one axis (also TFLite's SAME)."""
    effective = (filter_size - 1) * dilation + 1
    out = (size + stride - 1) // stride
    needed = max(0, (out - 1) * stride + effective - size)
    return needed // 2, needed - needed // 2
