"""Shared helpers of the neural-network operation families (convolution, pooling, normalization, resize,
recurrent, hashing, detection): uniform access to shape/kernel contexts, data layouts, padding arithmetic,
window parameters of the explicit and implicit padding forms, and signature builders.

Generation hints used by these families (``OpSpec.hints``):

- ``"input_range": (lo, hi)``: a real-valued range for the data inputs (tensors that are neither weights nor
  parameters) that keeps results finite and meaningful.
- ``"params"``: how to choose scalar parameters, as harness/ops/HINTS.md describes (``{input_index: spec}`` with a
  list of allowed values, an inclusive ``(lo, hi)`` range or a structural kind). Operations with two input forms
  (explicit or implicit padding: the convolutions and poolings; size or scale: the resizes) put different
  parameters at the same position, so their table is keyed by ``Arg.name`` instead; ``param_hints(spec,
  signature)`` gives ``{input_index: spec}`` for one signature in either case.
- ``"unspecified_outputs": [i, ...]``: output positions whose values the HAL leaves to the implementation
  (LSTM's scratch buffer); only their shape is comparable.
- ``"note"``: free text on what the generator must respect beyond the above (shape relations between inputs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.hal import Operand, OperandType, SymmPerChannelQuantParams
from harness.ops.common import define
from harness.ops.registry import Arg, KernelContext, KernelFn, OpSpec, ShapeContext, ShapeFn, Signature

T = OperandType
F32, F16, I32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32
Q8, Q8S, PC = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM_PER_CHANNEL
Q16A, Q16S, Q8SYMM = T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT8_SYMM
INT, FLOAT, HALF, BOOL = T.INT32, T.FLOAT32, T.FLOAT16, T.BOOL

# Implicit padding schemes (the HAL's PaddingCode); 0 ("none") computes like VALID.
PADDING_SAME = 1
PADDING_VALID = 2

LAYOUTS = [False, True]  # NHWC, NCHW


# --------------------------------------------------------------------------------------------------------------
# Uniform access to ShapeContext and KernelContext


class Inputs:
    """Read-only view of an operation's inputs that works for shape contexts and kernel contexts alike."""

    def __init__(self, ctx: ShapeContext | KernelContext) -> None:
        self._ctx = ctx
        # A kernel's input shapes are those of its values, read when asked for (the recurrent operations have
        # dozens of inputs and look at a few).
        self._kernel = isinstance(ctx, KernelContext)
        if self._kernel:
            self.operands: Sequence[Operand | None] = ctx.input_operands
            self._values: Sequence[np.ndarray | None] = ctx.inputs
        else:
            self.operands = ctx.operands
            self._values = ctx.values
            self._shapes = ctx.shapes

    @property
    def count(self) -> int:
        """Number of input positions given to the operation (omitted trailing inputs excluded)."""
        return len(self.operands)

    def type(self, i: int) -> int | None:
        """Operand type of input i, or None if absent."""
        if i >= len(self.operands) or self.operands[i] is None:
            return None
        return int(self.operands[i].type)

    def present(self, i: int) -> bool:
        """True if input i exists and is not NO_VALUE."""
        if i >= len(self.operands) or self.operands[i] is None:
            return False
        if self._kernel:
            return self._values[i] is not None
        return True

    def shape(self, i: int) -> tuple[int, ...] | None:
        """Shape of input i (None if unknown or absent)."""
        if self._kernel:
            values = self._values
            if i >= len(values):
                return None
            v = values[i]
            return None if v is None else tuple(v.shape)
        if i >= len(self._shapes):
            return None
        return self._shapes[i]

    def value(self, i: int) -> np.ndarray | None:
        """Stored value of input i if known (always in a kernel, constants only in a shape context)."""
        if i >= len(self._values):
            return None
        return self._values[i]

    def scalar(self, i: int, default: Any = None) -> Any:
        """Python value of scalar input i, or `default` when absent or unknown."""
        values = self._values
        if i >= len(values):
            return default
        v = values[i]
        if v is None or v.size == 0:
            return default
        # item(0) is the first element in C order, what reshape(-1)[0].item() gives, in one call.
        return v.item(0) if type(v) is np.ndarray else v.reshape(-1)[0].item()


def dim(shape: tuple[int, ...] | None, axis: int) -> int:
    """One dimension of a possibly unknown shape (0 = unknown)."""
    if shape is None or len(shape) <= axis:
        return 0
    return int(shape[axis])


# --------------------------------------------------------------------------------------------------------------
# Layouts


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    """View a 4-D tensor as NHWC."""
    return np.transpose(x, (0, 2, 3, 1)) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    """Return an NHWC tensor in the requested layout."""
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)) if nchw else x)


def nhwc_shape(shape: tuple[int, ...] | None, nchw: bool) -> tuple[int, int, int, int]:
    """(N, H, W, C) of a 4-D shape in either layout; unknown parts are 0."""
    if shape is None or len(shape) != 4:
        return (0, 0, 0, 0)
    n, a, b, c = shape
    return (n, b, c, a) if nchw else (n, a, b, c)


def layout_shape(n: int, h: int, w: int, c: int, nchw: bool) -> tuple[int, int, int, int]:
    """A 4-D shape in the requested layout."""
    return (n, c, h, w) if nchw else (n, h, w, c)


# --------------------------------------------------------------------------------------------------------------
# Padding arithmetic (the HAL's definitions of SAME and VALID)


def implicit_padding(in_size: int, stride: int, filter_size: int, dilation: int, scheme: int) -> tuple[int, int]:
    """(head, tail) padding of one spatial dimension for an implicit padding scheme."""
    if scheme != PADDING_SAME or stride <= 0:
        return (0, 0)
    effective = (filter_size - 1) * dilation + 1
    out_size = (in_size + stride - 1) // stride
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return (total // 2, total - total // 2)


def conv_out_size(in_size: int, filter_size: int, stride: int, dilation: int, head: int, tail: int) -> int:
    """Output size of a convolution or pooling window along one dimension."""
    effective = (filter_size - 1) * dilation + 1
    if stride <= 0:
        return 0
    return (in_size + head + tail - effective) // stride + 1


@dataclass
class Window:
    """Spatial parameters of a windowed operation, resolved to explicit padding."""

    pad_top: int = 0
    pad_bottom: int = 0
    pad_left: int = 0
    pad_right: int = 0
    stride_h: int = 1
    stride_w: int = 1
    dilation_h: int = 1
    dilation_w: int = 1
    filter_h: int = 1
    filter_w: int = 1
    activation: int = 0
    nchw: bool = False
    known: bool = True  # False when a parameter needed for the shape is not a known constant

    def out_hw(self, h: int, w: int) -> tuple[int, int]:
        """Output height and width for an input of height h and width w (0 when unknown)."""
        if not self.known or h == 0 or w == 0:
            return (0, 0)
        oh = conv_out_size(h, self.filter_h, self.stride_h, self.dilation_h, self.pad_top, self.pad_bottom)
        ow = conv_out_size(w, self.filter_w, self.stride_w, self.dilation_w, self.pad_left, self.pad_right)
        return (oh, ow)


def read_window(
    inputs: Inputs,
    positions: dict[str, int],
    filter_hw: tuple[int, int] | None,
    in_hw: tuple[int, int],
) -> Window:
    """Read the window parameters of one input form; `positions` maps parameter names to input indexes.

    Names: pad_left/right/top/bottom (explicit form) or padding_scheme (implicit form), stride_w/h, filter_w/h
    (pooling), activation, nchw, dilation_w/h. The filter size comes from `filter_hw` when the filter is a tensor.
    """
    win = Window()

    def get(name: str, default: Any) -> Any:
        if name not in positions:
            return default
        value = inputs.scalar(positions[name], None)
        if value is None:
            if inputs.present(positions[name]):
                win.known = False
            return default
        return value

    win.stride_w, win.stride_h = int(get("stride_w", 1)), int(get("stride_h", 1))
    win.dilation_w, win.dilation_h = int(get("dilation_w", 1)), int(get("dilation_h", 1))
    win.activation = int(get("activation", 0))
    win.nchw = bool(get("nchw", False))
    if filter_hw is not None:
        win.filter_h, win.filter_w = filter_hw
    else:
        win.filter_w, win.filter_h = int(get("filter_w", 1)), int(get("filter_h", 1))
    if "padding_scheme" in positions:
        scheme = int(get("padding_scheme", PADDING_VALID))
        h, w = in_hw
        win.pad_top, win.pad_bottom = implicit_padding(h, win.stride_h, win.filter_h, win.dilation_h, scheme)
        win.pad_left, win.pad_right = implicit_padding(w, win.stride_w, win.filter_w, win.dilation_w, scheme)
    else:
        win.pad_left, win.pad_right = int(get("pad_left", 0)), int(get("pad_right", 0))
        win.pad_top, win.pad_bottom = int(get("pad_top", 0)), int(get("pad_bottom", 0))
    return win


def resolve_window(inputs: Inputs, form: dict[str, int], filter_hw: tuple[int, int] | None = None) -> Window:
    """The window of a 4-D windowed operation whose data input is input 0, layout flag read first."""
    nchw = bool(inputs.scalar(form["nchw"], False)) if "nchw" in form else False
    _, h, w, _ = nhwc_shape(inputs.shape(0), nchw)
    return read_window(inputs, form, filter_hw, (h, w))


def pad_nhwc(x: np.ndarray, win: Window, value: float = 0.0) -> np.ndarray:
    """Pad the spatial dimensions of an NHWC tensor with a constant."""
    top, bottom, left, right = win.pad_top, win.pad_bottom, win.pad_left, win.pad_right
    if x.ndim != 4 or min(top, bottom, left, right) < 0:  # np.pad raises its errors for these
        widths = ((0, 0), (top, bottom), (left, right), (0, 0))
        return np.pad(x, widths, mode="constant", constant_values=value)
    # The array np.pad builds (same memory order, the input surrounded by the value), without its generality,
    # which costs several times the copy on the small tensors kernels see.
    n, h, w, c = x.shape
    padded = np.empty((n, top + h + bottom, left + w + right, c), dtype=x.dtype, order="F" if x.flags.fnc else "C")
    padded[...] = value
    padded[:, top : top + h, left : left + w, :] = x
    return padded


def window_taps(win: Window, out_h: int, out_w: int) -> Iterable[tuple[int, int, slice, slice]]:
    """For each filter tap (ky, kx): the strided slices of the padded input that the tap reads for every
    output position."""
    for ky in range(win.filter_h):
        for kx in range(win.filter_w):
            y0, x0 = ky * win.dilation_h, kx * win.dilation_w
            rows = slice(y0, y0 + (out_h - 1) * win.stride_h + 1, win.stride_h)
            cols = slice(x0, x0 + (out_w - 1) * win.stride_w + 1, win.stride_w)
            yield ky, kx, rows, cols


# --------------------------------------------------------------------------------------------------------------
# Signature building and checks


def arg(name: str, *types: int, optional: bool = False, constant: bool = False, rank: int | None = None) -> Arg:
    """An Arg accepting the given types; `rank` fixes an exact tensor rank."""
    return Arg(name, tuple(OperandType(t) for t in types), optional, constant, None if rank is None else (rank, rank))


def tensor(name: str, t: int, rank: int | tuple[int, int] | None = None, optional: bool = False) -> Arg:
    """A tensor Arg of one type, with an exact rank or an inclusive (min, max) rank range."""
    ranks = (rank, rank) if isinstance(rank, int) else rank
    return Arg(name, (OperandType(t),), optional, False, ranks)


def scalars(*names: str, t: int = INT, optional: bool = False) -> list[Arg]:
    """Scalar Args of one type."""
    return [Arg(n, (OperandType(t),), optional) for n in names]


def param_hints(spec: OpSpec, signature: Signature) -> dict[int, Any]:
    """The spec's "params" hints keyed by input index for one signature (keys may be indexes or Arg names)."""
    table = spec.hints.get("params", {})
    n = len(signature.inputs)
    out = {k % n: v for k, v in table.items() if isinstance(k, int) and -n <= k < n}
    out.update({i: table[a.name] for i, a in enumerate(signature.inputs) if a.name in table})
    return out


def index_params(signature: Signature, named: dict[str, Any]) -> dict[int, Any]:
    """A "params" table keyed by input index, written by Arg name (for operations with one input form)."""
    positions = {a.name: i for i, a in enumerate(signature.inputs)}
    missing = set(named) - set(positions)
    if missing:
        raise KeyError(f"no input named {sorted(missing)}")
    return {positions[name]: spec for name, spec in named.items()}


def define_single_form(
    op: int, family: str, signatures: list[Signature], shape: ShapeFn, kernel: KernelFn | None, hints: dict[str, Any]
) -> OpSpec:
    """Register an operation with one input form; its "params" hints, written by Arg name, are stored by index."""
    params = hints.get("params")
    if params:
        longest = max(signatures, key=lambda sig: len(sig.inputs))
        table = index_params(longest, params)
        for sig in signatures:
            for index in table:
                if index < len(sig.inputs) and sig.inputs[index].name != longest.inputs[index].name:
                    raise ValueError(f"{sig.inputs[index].name} moves between signatures")
        hints = {**hints, "params": table}
    return define(op, family, signatures, shape, kernel, hints)


def close_scale(a: float, b: float) -> bool:
    """Scale equality as the HAL's reference validation checks it (relative 1e-6)."""
    return abs(a - b) <= 1e-6 * min(abs(a), abs(b))


def bias_check(ctx: ShapeContext, input_i: int = 0, filter_i: int = 1, bias_i: int = 2) -> list[str]:
    """Violations of the quantized bias rules: zero point 0 and, for a per-tensor filter,
    bias scale == input scale * filter scale; for a per-channel filter, the channel dimension rules."""
    ops = ctx.operands
    inp, flt, bias = ops[input_i], ops[filter_i], ops[bias_i] if bias_i < len(ops) else None
    if inp is None or flt is None or bias is None or bias.type != I32:
        return []
    problems = []
    if bias.zero_point != 0:
        problems.append("bias zero point must be 0")
    if flt.type != PC and not close_scale(bias.scale, inp.scale * flt.scale):
        problems.append(f"bias scale {bias.scale} must equal input scale * filter scale {inp.scale * flt.scale}")
    return problems


def per_channel_check(ctx: ShapeContext, filter_i: int, channel_dim: int) -> list[str]:
    """Violations of a per-channel filter's quantization parameters."""
    flt = ctx.operands[filter_i]
    if flt is None or flt.type != PC:
        return []
    params = flt.extra_params
    if not isinstance(params, SymmPerChannelQuantParams):
        return ["per-channel filter needs SymmPerChannelQuantParams"]
    problems = []
    if params.channel_dim != channel_dim:
        problems.append(f"per-channel filter channelDim must be {channel_dim}")
    shape = ctx.shapes[filter_i]
    if (
        shape is not None
        and len(shape) > params.channel_dim
        and shape[params.channel_dim]
        not in (
            0,
            len(params.scales),
        )
    ):
        problems.append("per-channel filter needs one scale per channel")
    if any(s <= 0 for s in params.scales):
        problems.append("per-channel scales must be positive")
    return problems


def dims_agree(*pairs: tuple[int, int, int, int]) -> Any:
    """A check: for each (i, a, j, b), dimension a of input i equals dimension b of input j (when both are
    known, present and of sufficient rank)."""

    def check(ctx: ShapeContext) -> list[str]:
        problems = []
        for i, a, j, b in pairs:
            si = ctx.shapes[i] if i < len(ctx.shapes) else None
            sj = ctx.shapes[j] if j < len(ctx.shapes) else None
            if si is None or sj is None or len(si) <= a or len(sj) <= b or 0 in (si[a], sj[b]):
                continue
            if si[a] != sj[b]:
                problems.append(f"input {i} dimension {a} ({si[a]}) must equal input {j} dimension {b} ({sj[b]})")
        return problems

    return check


def positive_spatial_output(shape: ShapeFn) -> Any:
    """A check: the shape function's 4-D output has a positive height and width (a window that does not fit
    into the padded input has no valid output)."""

    def check(ctx: ShapeContext) -> list[str]:
        out = shape(ctx)[0]
        scalars_known = all(
            v is not None for op, v in zip(ctx.operands, ctx.values) if op is not None and op.type in (INT, BOOL)
        )
        known_input = bool(ctx.shapes[0]) and 0 not in ctx.shapes[0]
        if len(out) == 4 and (any(d < 0 for d in out) or (scalars_known and known_input and 0 in out)):
            return [f"output shape {out} is empty: the window does not fit the padded input"]
        return []

    return check


def combine(*checks: Any) -> Any:
    """A signature check running several checks and concatenating their violations."""

    def run(ctx: ShapeContext) -> list[str]:
        problems: list[str] = []
        for check in checks:
            problems.extend(check(ctx))
        return problems

    return run


def scalar_type_for(t: int) -> int:
    """The float scalar type that goes with a float tensor type (FLOAT16 for TENSOR_FLOAT16, else FLOAT32)."""
    return HALF if t == F16 else FLOAT


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function."""
    return 1.0 / (1.0 + np.exp(-x))


# Activation codes of the recurrent operations (ActivationFn): 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid.
RECURRENT_ACTIVATIONS = [0, 1, 3, 4, 6]


def recurrent_activation(x: np.ndarray, code: int) -> np.ndarray:
    """The cell activation g of LSTM-style operations."""
    table = {
        0: lambda v: v,
        1: lambda v: np.maximum(v, 0.0),
        2: lambda v: np.clip(v, -1.0, 1.0),
        3: lambda v: np.clip(v, 0.0, 6.0),
        4: np.tanh,
        6: sigmoid,
    }
    if code not in table:
        raise ValueError(f"unsupported activation code {code}")
    return table[code](x)
