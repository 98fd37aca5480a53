"""Convolutions and the fully connected layer: CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D,
FULLY_CONNECTED.

Kernels work on real values in float64 and NHWC; quantized results are requantized at the end, so they may differ
by one unit from the HAL's integer fixed-point reference (which the oracle accepts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.hal import OperationType
from harness.ops._nn_util import (
    BOOL,
    F16,
    F32,
    I32,
    INT,
    LAYOUTS,
    PADDING_SAME,
    PADDING_VALID,
    PC,
    Q8,
    Q8S,
    Inputs,
    Window,
    bias_check,
    combine,
    define_single_form,
    dim,
    dims_agree,
    from_nhwc,
    implicit_padding,
    layout_shape,
    nhwc_shape,
    pad_nhwc,
    per_channel_check,
    positive_spatial_output,
    read_window,
    resolve_window,
    scalars,
    tensor,
    to_nhwc,
    window_taps,
)
from harness.ops.common import UnspecifiedResult, apply_activation, define, from_real, fused_activation, to_real
from harness.ops.parameters import WINDOW_DOMAINS, domain_problems, refuse_outside
from harness.ops.registry import Arg, KernelContext, ShapeContext, Signature

# --------------------------------------------------------------------------------------------------------------
# Input forms: parameter name -> input position. Names double as the Arg names of the signatures.

_PADS = {"pad_left": 3, "pad_right": 4, "pad_top": 5, "pad_bottom": 6}

CONV_EXPLICIT = {**_PADS, "stride_w": 7, "stride_h": 8, "activation": 9, "nchw": 10, "dilation_w": 11, "dilation_h": 12}
CONV_IMPLICIT = {
    "padding_scheme": 3,
    "stride_w": 4,
    "stride_h": 5,
    "activation": 6,
    "nchw": 7,
    "dilation_w": 8,
    "dilation_h": 9,
}
DEPTHWISE_EXPLICIT = {
    **_PADS,
    "stride_w": 7,
    "stride_h": 8,
    "multiplier": 9,
    "activation": 10,
    "nchw": 11,
    "dilation_w": 12,
    "dilation_h": 13,
}
DEPTHWISE_IMPLICIT = {
    "padding_scheme": 3,
    "stride_w": 4,
    "stride_h": 5,
    "multiplier": 6,
    "activation": 7,
    "nchw": 8,
    "dilation_w": 9,
    "dilation_h": 10,
}
GROUPED_EXPLICIT = {**_PADS, "stride_w": 7, "stride_h": 8, "groups": 9, "activation": 10, "nchw": 11}
GROUPED_IMPLICIT = {"padding_scheme": 3, "stride_w": 4, "stride_h": 5, "groups": 6, "activation": 7, "nchw": 8}
TRANSPOSE_EXPLICIT = {**_PADS, "stride_w": 7, "stride_h": 8, "activation": 9, "nchw": 10}
TRANSPOSE_IMPLICIT = {"output_shape": 3, "padding_scheme": 4, "stride_w": 5, "stride_h": 6, "activation": 7, "nchw": 8}


def conv_form(inputs: Inputs) -> dict[str, int]:
    """CONV_2D: implicit padding has 7 inputs, or a BOOL layout flag at position 7."""
    implicit = inputs.count == 7 or (inputs.count >= 8 and inputs.type(7) == BOOL)
    return CONV_IMPLICIT if implicit else CONV_EXPLICIT


def depthwise_form(inputs: Inputs) -> dict[str, int]:
    """DEPTHWISE_CONV_2D: implicit padding has 8 inputs, or a BOOL layout flag at position 8."""
    implicit = inputs.count == 8 or (inputs.count >= 9 and inputs.type(8) == BOOL)
    return DEPTHWISE_IMPLICIT if implicit else DEPTHWISE_EXPLICIT


def grouped_form(inputs: Inputs) -> dict[str, int]:
    """GROUPED_CONV_2D: 9 inputs for implicit padding, 12 for explicit."""
    return GROUPED_IMPLICIT if inputs.count == 9 else GROUPED_EXPLICIT


def transpose_form(inputs: Inputs) -> dict[str, int]:
    """TRANSPOSE_CONV_2D: the implicit form has the output shape tensor at position 3."""
    return TRANSPOSE_IMPLICIT if inputs.type(3) == I32 else TRANSPOSE_EXPLICIT


# --------------------------------------------------------------------------------------------------------------
# Typings


@dataclass(frozen=True)
class ConvTyping:
    """One operand-type configuration of a convolution: input/output, filter and bias types."""

    data: int
    filter: int
    bias: int
    version: str


CONV_TYPINGS = [
    ConvTyping(F32, F32, F32, "V1_0"),
    ConvTyping(Q8, Q8, I32, "V1_0"),
    ConvTyping(F16, F16, F16, "V1_2"),
    ConvTyping(Q8, PC, I32, "V1_2"),
    ConvTyping(Q8S, Q8S, I32, "V1_3"),
    ConvTyping(Q8S, PC, I32, "V1_3"),
]
# GROUPED_CONV_2D and TRANSPOSE_CONV_2D appeared in HAL 1.2 with every typing except the signed ones.
LATE_TYPINGS = [ConvTyping(t.data, t.filter, t.bias, "V1_3" if t.data == Q8S else "V1_2") for t in CONV_TYPINGS]

_SCALAR_TYPES = {"nchw": BOOL}
_OPTIONAL_TAIL = ("nchw", "dilation_w", "dilation_h")


def _param_args(form: dict[str, int], first: int, optional_tail: tuple[str, ...] = ()) -> list[Arg]:
    """Scalar Args of a form from position `first` on, in position order."""
    names = sorted((p, n) for n, p in form.items() if p >= first)
    args = []
    for _, name in names:
        t = _SCALAR_TYPES.get(name, INT)
        args += scalars(name, t=t, optional=name in optional_tail)
    return args


def _conv_signatures(
    forms: list[dict[str, int]],
    typings: list[ConvTyping],
    check: Callable[[ShapeContext], list[str]],
    leading: Callable[[ConvTyping], list[Arg]],
    optional_from_v12: bool,
) -> list[Signature]:
    """Signatures of a windowed convolution for every form and typing.

    With `optional_from_v12`, HAL 1.0 typings get a 1.0 signature without the trailing layout/dilation inputs
    and a 1.2 signature with them (optional); later typings get the latter only.
    """
    sigs = []
    for form in forms:
        first_param = min(p for n, p in form.items() if n != "output_shape")
        for ty in typings:
            ins = leading(ty)
            if "output_shape" in form:
                ins.append(tensor("output_shape", I32, 1))
            out = (tensor("output", ty.data, 4),)
            if optional_from_v12:
                tail = [n for n in _OPTIONAL_TAIL if n in form]
                base = [a for a in _param_args(form, first_param) if a.name not in tail]
                required = len(ins) + len(base)
                if ty.version == "V1_0":
                    sigs.append(Signature(tuple(ins + base), out, None, "V1_0", check))
                full = _param_args(form, first_param, tuple(tail))
                sigs.append(Signature(tuple(ins + full), out, required, max(ty.version, "V1_2"), check))
            else:
                sigs.append(Signature(tuple(ins + _param_args(form, first_param)), out, None, ty.version, check))
    return sigs


def _conv_leading(ty: ConvTyping) -> list[Arg]:
    return [tensor("input", ty.data, 4), tensor("filter", ty.filter, 4), tensor("bias", ty.bias, 1)]


# --------------------------------------------------------------------------------------------------------------
# Shared kernel pieces


def bias_real(ctx: KernelContext, input_i: int = 0, filter_i: int = 1, bias_i: int = 2) -> np.ndarray:
    """Real values of a bias: float biases as they are, int32 biases times input scale * filter scale(s)."""
    bias, op = ctx.inputs[bias_i], ctx.input_operands[bias_i]
    if op.type != I32:
        return to_real(bias, op)
    flt = ctx.input_operands[filter_i]
    in_scale = ctx.input_operands[input_i].scale
    if flt.type == PC:
        scales = np.asarray(flt.extra_params.scales, dtype=np.float64)
        return bias.astype(np.float64) * in_scale * scales
    return bias.astype(np.float64) * in_scale * flt.scale


def _named_values(inputs: Inputs, form: dict[str, int]) -> list[tuple[str, object]]:
    """(name, value) of every scalar parameter of the form that is given (None when its value is unknown)."""
    return [(name, inputs.scalar(pos) if pos < inputs.count else None) for name, pos in form.items()]


def _window(inputs: Inputs, form: dict[str, int], filter_hw: tuple[int, int]) -> Window:
    return resolve_window(inputs, form, filter_hw)


def _refuse_outside(inputs: Inputs, form: dict[str, int]) -> None:
    """A kernel's check of its parameters: values given at run time may lie outside their domains (the
    validator refused constants that do)."""
    refuse_outside(WINDOW_DOMAINS, _named_values(inputs, form))


def _finish(real_nhwc: np.ndarray, win: Window, ctx: KernelContext) -> list[np.ndarray]:
    out = apply_activation(real_nhwc, win.activation)
    return [from_real(from_nhwc(out, win.nchw), ctx.output_operands[0])]


def _grouped_conv_nhwc(x: np.ndarray, w: np.ndarray, b: np.ndarray, win: Window, groups: int) -> np.ndarray:
    """Grouped 2-D convolution on NHWC reals: filter [Cout, KH, KW, Cin/groups]."""
    n, h, wd, _ = x.shape
    cout, _, _, cg = w.shape
    oh, ow = win.out_hw(h, wd)
    xp = pad_nhwc(x, win)
    out = np.zeros((n, oh, ow, cout)) + b
    per_group = cout // groups
    for g in range(groups):
        xs = xp[..., g * cg : (g + 1) * cg]
        ws = w[g * per_group : (g + 1) * per_group]
        for ky, kx, rows, cols in window_taps(win, oh, ow):
            out[..., g * per_group : (g + 1) * per_group] += xs[:, rows, cols, :] @ ws[:, ky, kx, :].T
    return out


# --------------------------------------------------------------------------------------------------------------
# CONV_2D and GROUPED_CONV_2D


def _conv_shape_for(form_of: Callable[[Inputs], dict[str, int]]) -> Callable[[ShapeContext], list[tuple[int, ...]]]:
    def shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
        inputs = Inputs(ctx)
        form = form_of(inputs)
        fshape = inputs.shape(1)
        win = _window(inputs, form, (dim(fshape, 1), dim(fshape, 2)))
        n, h, w, _ = nhwc_shape(inputs.shape(0), win.nchw)
        oh, ow = win.out_hw(h, w) if fshape else (0, 0)
        return [layout_shape(n, oh, ow, dim(fshape, 0), win.nchw)]

    return shape


def conv2d_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """CONV_2D: output = activation(sum over window and input channels of input * filter + bias)."""
    inputs = Inputs(ctx)
    w = to_real(ctx.inputs[1], ctx.input_operands[1])
    _refuse_outside(inputs, conv_form(inputs))
    win = _window(inputs, conv_form(inputs), w.shape[1:3])
    x = to_nhwc(to_real(ctx.inputs[0], ctx.input_operands[0]), win.nchw)
    return _finish(_grouped_conv_nhwc(x, w, bias_real(ctx), win, 1), win, ctx)


def grouped_conv2d_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """GROUPED_CONV_2D: each group of filters convolves its own group of input channels."""
    inputs = Inputs(ctx)
    form = grouped_form(inputs)
    _refuse_outside(inputs, form)
    w = to_real(ctx.inputs[1], ctx.input_operands[1])
    win = _window(inputs, form, w.shape[1:3])
    x = to_nhwc(to_real(ctx.inputs[0], ctx.input_operands[0]), win.nchw)
    groups = int(ctx.scalar(form["groups"]))
    return _finish(_grouped_conv_nhwc(x, w, bias_real(ctx), win, groups), win, ctx)


def _window_params_check(form_of: Callable[[Inputs], dict[str, int]]) -> Callable[[ShapeContext], list[str]]:
    """Strides and dilations must be positive and explicit paddings non-negative (where known)."""

    def check(ctx: ShapeContext) -> list[str]:
        inputs = Inputs(ctx)
        form = form_of(inputs)
        problems = domain_problems(WINDOW_DOMAINS, _named_values(inputs, form))
        for name, pos in form.items():
            value = inputs.scalar(pos) if pos < inputs.count else None
            if value is not None and name in ("multiplier", "groups") and value < 1:
                problems.append(f"{name} must be positive")
        if "dilation_w" in form and inputs.count == form["dilation_w"] + 1:
            problems.append("dilation_w and dilation_h must be given together")
        return problems

    return check


def _conv_check(
    filter_channel_dim: int, form_of: Callable[[Inputs], dict[str, int]]
) -> Callable[[ShapeContext], list[str]]:
    """Checks shared by the convolutions: bias rules, per-channel rules, parameter ranges, bias length."""

    def bias_length(ctx: ShapeContext) -> list[str]:
        flt, bias = ctx.shapes[1], ctx.shapes[2]
        if flt and bias and len(flt) == 4 and len(bias) == 1 and 0 not in (flt[filter_channel_dim], bias[0]):
            if bias[0] != flt[filter_channel_dim]:
                return ["bias length must equal the number of output channels"]
        return []

    return combine(
        bias_check,
        lambda c: per_channel_check(c, 1, filter_channel_dim),
        _window_params_check(form_of),
        bias_length,
    )


def _grouped_check(ctx: ShapeContext) -> list[str]:
    """depth_in = groups * filter depth, and depth_out divisible by groups."""
    inputs = Inputs(ctx)
    form = grouped_form(inputs)
    groups = inputs.scalar(form["groups"])
    flt = ctx.shapes[1]
    nchw = bool(inputs.scalar(form["nchw"], False)) if form["nchw"] < inputs.count else False
    depth_in = nhwc_shape(inputs.shape(0), nchw)[3]
    if not groups or groups < 1 or not flt or len(flt) != 4:
        return []
    problems = []
    if depth_in and flt[3] and depth_in != groups * flt[3]:
        problems.append("input depth must equal groups * filter depth")
    if flt[0] and flt[0] % groups:
        problems.append("output depth must be divisible by groups")
    return problems


def _input_depth(ctx: ShapeContext, form_of: Callable[[Inputs], dict[str, int]]) -> int:
    inputs = Inputs(ctx)
    form = form_of(inputs)
    nchw = bool(inputs.scalar(form["nchw"], False)) if form["nchw"] < inputs.count else False
    return nhwc_shape(inputs.shape(0), nchw)[3]


def _conv_depth_check(ctx: ShapeContext) -> list[str]:
    """CONV_2D: the filter's depth is the input's depth."""
    flt, depth = ctx.shapes[1], _input_depth(ctx, conv_form)
    if flt and len(flt) == 4 and depth and flt[3] and flt[3] != depth:
        return ["filter depth must equal input depth"]
    return []


def _transpose_depth_check(ctx: ShapeContext) -> list[str]:
    """TRANSPOSE_CONV_2D: the filter's depth is the input's depth."""
    flt, depth = ctx.shapes[1], _input_depth(ctx, transpose_form)
    if flt and len(flt) == 4 and depth and flt[3] and flt[3] != depth:
        return ["filter depth must equal input depth"]
    return []


# --------------------------------------------------------------------------------------------------------------
# DEPTHWISE_CONV_2D


def depthwise_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """Output [N, OH, OW, depth_out] with depth_out taken from the filter's last dimension."""
    inputs = Inputs(ctx)
    form = depthwise_form(inputs)
    fshape = inputs.shape(1)
    win = _window(inputs, form, (dim(fshape, 1), dim(fshape, 2)))
    n, h, w, _ = nhwc_shape(inputs.shape(0), win.nchw)
    oh, ow = win.out_hw(h, w) if fshape else (0, 0)
    return [layout_shape(n, oh, ow, dim(fshape, 3), win.nchw)]


def depthwise_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """DEPTHWISE_CONV_2D: output channel k*m+q filters input channel k with filter channel k*m+q."""
    inputs = Inputs(ctx)
    form = depthwise_form(inputs)
    _refuse_outside(inputs, form)
    w = to_real(ctx.inputs[1], ctx.input_operands[1])[0]  # [KH, KW, Cout]
    win = _window(inputs, form, w.shape[0:2])
    x = to_nhwc(to_real(ctx.inputs[0], ctx.input_operands[0]), win.nchw)
    multiplier = int(ctx.scalar(form["multiplier"]))
    # Channel c of the repeated input is input channel c // multiplier, as the formula requires.
    xr = np.repeat(x, multiplier, axis=3)
    n, h, wd, _ = x.shape
    oh, ow = win.out_hw(h, wd)
    xp = pad_nhwc(xr, win)
    out = np.zeros((n, oh, ow, w.shape[2])) + bias_real(ctx)
    for ky, kx, rows, cols in window_taps(win, oh, ow):
        out += xp[:, rows, cols, :] * w[ky, kx, :]
    return _finish(out, win, ctx)


def _depthwise_check(ctx: ShapeContext) -> list[str]:
    problems = []
    inputs = Inputs(ctx)
    form = depthwise_form(inputs)
    flt = ctx.shapes[1]
    nchw = bool(inputs.scalar(form["nchw"], False)) if form["nchw"] < inputs.count else False
    c = nhwc_shape(inputs.shape(0), nchw)[3]
    m = inputs.scalar(form["multiplier"])
    if flt and len(flt) == 4 and flt[0] not in (0, 1):
        problems.append("depthwise filter's first dimension must be 1")
    if flt and len(flt) == 4 and m is not None and c and flt[3] and flt[3] != c * m:
        problems.append("depth_out must equal depth_in * depth multiplier")
    return problems


# --------------------------------------------------------------------------------------------------------------
# TRANSPOSE_CONV_2D


def _transpose_geometry(inputs: Inputs) -> tuple[Window, tuple[int, int] | None]:
    """The window (explicit padding resolved) and the output (H, W) if known."""
    form = transpose_form(inputs)
    fshape = inputs.shape(1)
    kh, kw = dim(fshape, 1), dim(fshape, 2)
    nchw = bool(inputs.scalar(form["nchw"], False))
    _, h, w, _ = nhwc_shape(inputs.shape(0), nchw)
    win = read_window(inputs, {k: v for k, v in form.items() if k != "padding_scheme"}, (kh, kw), (h, w))
    if "output_shape" in form:
        shape_value = inputs.value(form["output_shape"])
        if shape_value is None or shape_value.size != 4:
            return win, None
        _, oh, ow, _ = nhwc_shape(tuple(int(v) for v in shape_value.reshape(-1)), nchw)
        scheme = inputs.scalar(form["padding_scheme"], PADDING_VALID)
        # The padding that a forward convolution from the output size back to the input size would use.
        win.pad_top, win.pad_bottom = implicit_padding(oh, win.stride_h, kh, 1, scheme)
        win.pad_left, win.pad_right = implicit_padding(ow, win.stride_w, kw, 1, scheme)
        return win, (oh, ow)
    if not win.known or 0 in (h, w, kh, kw):
        return win, None
    oh = win.stride_h * (h - 1) + kh - win.pad_top - win.pad_bottom
    ow = win.stride_w * (w - 1) + kw - win.pad_left - win.pad_right
    return win, (oh, ow)


def transpose_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """Output [N, OH, OW, depth_out]: from the output shape tensor (implicit) or stride*(in-1)+filter-pads."""
    inputs = Inputs(ctx)
    win, out_hw = _transpose_geometry(inputs)
    n = nhwc_shape(inputs.shape(0), win.nchw)[0]
    oh, ow = out_hw if out_hw else (0, 0)
    return [layout_shape(n, oh, ow, dim(inputs.shape(1), 0), win.nchw)]


def transpose_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """TRANSPOSE_CONV_2D: every input pixel scatters input * filter into the output window it maps to."""
    inputs = Inputs(ctx)
    _refuse_outside(inputs, transpose_form(inputs))
    win, out_hw = _transpose_geometry(inputs)
    assert out_hw is not None
    oh, ow = out_hw
    w = to_real(ctx.inputs[1], ctx.input_operands[1])  # [Cout, KH, KW, Cin]
    x = to_nhwc(to_real(ctx.inputs[0], ctx.input_operands[0]), win.nchw)
    n, h, wd, _ = x.shape
    cout, kh, kw, _ = w.shape
    form = transpose_form(inputs)
    if "output_shape" in form and inputs.scalar(form["padding_scheme"], PADDING_VALID) == PADDING_SAME:
        if (oh, ow) != (h * win.stride_h, wd * win.stride_w):
            # SAME makes the output the input times the stride; of an output shape that says otherwise (strides
            # given at run time, say) types.hal defines no padding: implementations crop as they see fit.
            raise UnspecifiedResult("TRANSPOSE_CONV_2D with SAME padding and an output shape other than input * stride")
    # Accumulate into a canvas large enough for every tap, then crop the padding away.
    full_h = max((h - 1) * win.stride_h + kh, win.pad_top + oh)
    full_w = max((wd - 1) * win.stride_w + kw, win.pad_left + ow)
    canvas = np.zeros((n, full_h, full_w, cout))
    for ky in range(kh):
        for kx in range(kw):
            rows = slice(ky, ky + (h - 1) * win.stride_h + 1, win.stride_h)
            cols = slice(kx, kx + (wd - 1) * win.stride_w + 1, win.stride_w)
            canvas[:, rows, cols, :] += x @ w[:, ky, kx, :].T
    out = canvas[:, win.pad_top : win.pad_top + oh, win.pad_left : win.pad_left + ow, :] + bias_real(ctx)
    return _finish(out, win, ctx)


# --------------------------------------------------------------------------------------------------------------
# FULLY_CONNECTED


def fc_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """Output [batch_size, num_units], batch_size = elements of the input / input_size."""
    inp, wts = ctx.shapes[0], ctx.shapes[1]
    units = dim(wts, 0)
    input_size = dim(wts, 1)
    if inp is None or 0 in inp or input_size == 0:
        return [(0, units)]
    return [(int(np.prod(inp)) // input_size, units)]


def fc_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """FULLY_CONNECTED: activation(input (flattened to [batch, input_size]) @ weights^T + bias)."""
    w = to_real(ctx.inputs[1], ctx.input_operands[1])
    x = to_real(ctx.inputs[0], ctx.input_operands[0]).reshape(-1, w.shape[1])
    out = apply_activation(x @ w.T + bias_real(ctx), int(ctx.scalar(3)))
    return [from_real(out, ctx.output_operands[0])]


def _fc_check(ctx: ShapeContext) -> list[str]:
    problems = bias_check(ctx) + dims_agree((1, 0, 2, 0))(ctx) + _FC_ACTIVATION(ctx)
    inp, wts = ctx.shapes[0], ctx.shapes[1]
    if inp and wts and len(wts) == 2 and wts[1] and 0 not in inp and int(np.prod(inp)) % wts[1]:
        problems.append("input elements must be a multiple of input_size")
    return problems


_FC_ACTIVATION = fused_activation(3)

FC_TYPINGS = [
    ConvTyping(F32, F32, F32, "V1_0"),
    ConvTyping(Q8, Q8, I32, "V1_0"),
    ConvTyping(F16, F16, F16, "V1_2"),
    ConvTyping(Q8S, Q8S, I32, "V1_3"),
]

# --------------------------------------------------------------------------------------------------------------
# Registration

_INPUT_RANGE = (-2.0, 2.0)
_WINDOW_PARAMS = {
    "pad_left": (0, 2),
    "pad_right": (0, 2),
    "pad_top": (0, 2),
    "pad_bottom": (0, 2),
    "padding_scheme": [PADDING_SAME, PADDING_VALID],
    "stride_w": (1, 3),
    "stride_h": (1, 3),
    "dilation_w": (1, 2),
    "dilation_h": (1, 2),
    "activation": "fused_activation",
    "nchw": LAYOUTS,
}
_NO_DILATION = {k: v for k, v in _WINDOW_PARAMS.items() if not k.startswith("dilation")}

define(
    OperationType.CONV_2D,
    "convolution",
    _conv_signatures(
        [CONV_EXPLICIT, CONV_IMPLICIT],
        CONV_TYPINGS,
        combine(_conv_check(0, conv_form), positive_spatial_output(_conv_shape_for(conv_form)), _conv_depth_check),
        _conv_leading,
        True,
    ),
    _conv_shape_for(conv_form),
    conv2d_kernel,
    {
        "input_range": _INPUT_RANGE,
        "params": _WINDOW_PARAMS,
        "note": "filter [depth_out, fh, fw, depth_in]; bias [depth_out]; dilation_w and dilation_h together",
    },
)

define(
    OperationType.DEPTHWISE_CONV_2D,
    "convolution",
    _conv_signatures(
        [DEPTHWISE_EXPLICIT, DEPTHWISE_IMPLICIT],
        CONV_TYPINGS,
        combine(_conv_check(3, depthwise_form), _depthwise_check, positive_spatial_output(depthwise_shape)),
        _conv_leading,
        True,
    ),
    depthwise_shape,
    depthwise_kernel,
    {
        "input_range": _INPUT_RANGE,
        "params": {**_WINDOW_PARAMS, "multiplier": (1, 3)},
        "note": "filter [1, fh, fw, depth_in * multiplier]; per-channel filters use channelDim 3",
    },
)

define(
    OperationType.GROUPED_CONV_2D,
    "convolution",
    _conv_signatures(
        [GROUPED_EXPLICIT, GROUPED_IMPLICIT],
        LATE_TYPINGS,
        combine(_conv_check(0, grouped_form), _grouped_check, positive_spatial_output(_conv_shape_for(grouped_form))),
        _conv_leading,
        False,
    ),
    _conv_shape_for(grouped_form),
    grouped_conv2d_kernel,
    {
        "input_range": _INPUT_RANGE,
        "params": {**_NO_DILATION, "groups": (1, 3)},
        "note": "depth_in = groups * filter depth; depth_out divisible by groups",
    },
)

define(
    OperationType.TRANSPOSE_CONV_2D,
    "convolution",
    _conv_signatures(
        [TRANSPOSE_EXPLICIT, TRANSPOSE_IMPLICIT],
        LATE_TYPINGS,
        combine(_conv_check(0, transpose_form), positive_spatial_output(transpose_shape), _transpose_depth_check),
        _conv_leading,
        False,
    ),
    transpose_shape,
    transpose_kernel,
    {
        "input_range": _INPUT_RANGE,
        "params": _NO_DILATION,
        "note": "implicit form: output_shape is the output's 4-D shape in the operation's layout",
    },
)

define_single_form(
    OperationType.FULLY_CONNECTED,
    "convolution",
    [
        Signature(
            (
                tensor("input", t.data, (2, 4)),
                tensor("weights", t.filter, 2),
                tensor("bias", t.bias, 1),
                *scalars("activation"),
            ),
            (tensor("output", t.data, 2),),
            None,
            t.version,
            _fc_check,
        )
        for t in FC_TYPINGS
    ],
    fc_shape,
    fc_kernel,
    {"input_range": _INPUT_RANGE, "params": {"activation": "fused_activation"}},
)
