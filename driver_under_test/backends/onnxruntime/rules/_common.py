"""Pieces several rules share: operand type sets, fused activations, layouts, windows and padding."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The rules import the fused activation helpers from here.
from driver_under_test.backends._operation import activation, check_activation  # noqa: F401
from driver_under_test.backends.onnxruntime._graph import Op, quant_params
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
INT32 = A.INT32

FLOAT = frozenset({F32, F16})
QUANT = frozenset({Q8, QS8})
FLOAT_QUANT = FLOAT | QUANT
NUMERIC = FLOAT_QUANT | {I32}

# ---- fused activations (HAL codes NONE 0, RELU 1, RELU1 2, RELU6 3) ----

_CLIPS = {2: (-1.0, 1.0), 3: (0.0, 6.0)}


def activate(op: Op, tensor: str, code: int, target: str) -> None:
    """Write `tensor` with the fused activation `code` applied into `target`: its own node (Relu, Clip), since
    ONNX operators carry no fused activation."""
    if code == 0:
        op.node("Identity", [tensor], [target])
    elif code == 1:
        op.node("Relu", [tensor], [target])
    else:
        low, high = _CLIPS[code]
        op.node("Clip", [tensor, op.const(np.float32(low)), op.const(np.float32(high))], [target])


# ---- moving data without computing ----


def same_storage(op: Op, i: int = 0, k: int = 0) -> bool:
    """True when input i and output k store values alike (type, scale and zero point), so that rules moving data
    can move the stored values themselves."""
    a, b = op.operand(i), op.out(k)
    if a is None or a.type != b.type:
        return False
    if a.type not in (Q8, QS8, Q8_SYMM, Q8_PC, Q16_SYMM, Q16_ASYMM):
        return True
    sa, za, xa = quant_params(a)
    sb, zb, xb = quant_params(b)
    return xa == xb and np.array_equal(sa, sb) and np.array_equal(za, zb)


def moved(op: Op, inputs: tuple[int, ...] = (0,), k: int = 0) -> tuple[list[str], str]:
    """(source tensors, target) for a rule that only moves data: the stored values when every input in `inputs`
    stores them as output k does, else real values, requantized into the output on the way."""
    if all(same_storage(op, i, k) for i in inputs):
        return [op.input(i) for i in inputs], op.output(k)
    return [op.x(i) for i in inputs], op.y(k)


# ---- layouts ----

NHWC_TO_NCHW = (0, 3, 1, 2)
NCHW_TO_NHWC = (0, 2, 3, 1)


def layout_nchw(op: Op, i: int) -> bool:
    """The value of the optional BOOL layout input i (False when absent: NHWC)."""
    return bool(op.scalar(i, False))


def to_nchw(op: Op, tensor: str, nchw: bool) -> str:
    """A 4-D tensor of the HAL's layout as NCHW, the layout of ONNX's convolutions and pools."""
    return tensor if nchw else op.node("Transpose", [tensor], perm=list(NHWC_TO_NCHW))


def from_nchw(op: Op, tensor: str, nchw: bool) -> str:
    """An NCHW result back in the HAL's layout."""
    return tensor if nchw else op.node("Transpose", [tensor], perm=list(NCHW_TO_NHWC))


def to_nhwc(op: Op, tensor: str, nchw: bool) -> str:
    """A 4-D tensor of the HAL's layout as NHWC, the layout compositions over pixels are written in."""
    return op.node("Transpose", [tensor], perm=list(NCHW_TO_NHWC)) if nchw else tensor


def from_nhwc(op: Op, tensor: str, nchw: bool) -> str:
    """An NHWC result back in the HAL's layout."""
    return op.node("Transpose", [tensor], perm=list(NHWC_TO_NCHW)) if nchw else tensor


def check_rank4(op: Op, i: int = 0) -> str | None:
    """Support check: input i has a known rank of 4."""
    if op.rank(i) != 4:
        return f"{op.name}: input {i} must have a known rank of 4 (got {op.rank(i)})"
    return None


# ---- windows (convolutions and pools) ----

PADDING_SAME, PADDING_VALID = 1, 2  # the HAL's implicit padding schemes


@dataclass(frozen=True)
class Window:
    """The window parameters of one convolution or pool in the HAL's terms."""

    pads: tuple[int, int, int, int] | None  # left, right, top, bottom (explicit form)
    scheme: int | None  # implicit form
    stride: tuple[int, int]  # (w, h)
    dilation: tuple[int, int]  # (w, h)
    extra: tuple[int, ...]  # parameters between the strides and the activation (multiplier, groups, filter size)
    activation: int  # input position
    nchw: bool


def read_window(op: Op, first: int, n_extra: int, explicit: bool, dilations: bool = True) -> Window:
    """A window whose padding starts at input `first`; `n_extra` parameters sit between the strides and the
    activation; the layout follows the activation, then (when `dilations`) the two dilation factors."""
    if explicit:
        pads = tuple(int(op.scalar(first + k)) for k in range(4))
        scheme, stride_at = None, first + 4
    else:
        pads, scheme, stride_at = None, int(op.scalar(first)), first + 1
    stride = (int(op.scalar(stride_at)), int(op.scalar(stride_at + 1)))
    extra = tuple(int(op.scalar(stride_at + 2 + k)) for k in range(n_extra))
    act = stride_at + 2 + n_extra
    dilation = (int(op.scalar(act + 2, 1)), int(op.scalar(act + 3, 1))) if dilations else (1, 1)
    return Window(pads, scheme, stride, dilation, extra, act, layout_nchw(op, act + 1))  # type: ignore[arg-type]


def explicit_form(op: Op, probe: int) -> bool:
    """The HAL tells a window's two forms apart by the type of input `probe`: INT32 in the explicit form (a
    stride or a padding), BOOL in the implicit one (the layout); absent in the shorter implicit form."""
    operand = op.operand(probe)
    return operand is not None and operand.type == INT32


def same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """(head, tail) of the HAL's implicit SAME padding along one axis: the extra element goes at the tail."""
    effective = (kernel - 1) * dilation + 1
    out = (size + stride - 1) // stride
    needed = max(0, (out - 1) * stride + effective - size)
    return needed // 2, needed - needed // 2


def spatial(op: Op, i: int, nchw: bool) -> tuple[int, int]:
    """(height, width) of 4-D input i in its layout (0 when unknown)."""
    dims = op.dims(i)
    if len(dims) != 4:
        return 0, 0
    return (dims[2], dims[3]) if nchw else (dims[1], dims[2])


def window_attrs(op: Op, win: Window, kernel_hw: tuple[int, int]) -> dict:
    """ONNX attributes of a window: strides, dilations and the padding. Explicit padding and an implicit scheme
    over a known input size become explicit pads [top, left, bottom, right]; SAME over an unknown size becomes
    auto_pad SAME_UPPER, which pads as the HAL does (the extra element at the end)."""
    (sw, sh), (dw, dh) = win.stride, win.dilation
    attrs: dict = {"strides": [sh, sw]}
    if win.pads is not None:
        left, right, top, bottom = win.pads
        attrs["pads"] = [top, left, bottom, right]
    elif win.scheme == PADDING_VALID:
        attrs["pads"] = [0, 0, 0, 0]
    else:
        h, w = spatial(op, 0, win.nchw)
        if h and w:
            top, bottom = same_padding(h, kernel_hw[0], sh, dh)
            left, right = same_padding(w, kernel_hw[1], sw, dw)
            attrs["pads"] = [top, left, bottom, right]
        else:
            attrs["auto_pad"] = "SAME_UPPER"
    return attrs
