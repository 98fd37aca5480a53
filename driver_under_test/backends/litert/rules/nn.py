"""Neural-network operations: convolutions (plain, depthwise, grouped, transposed), FULLY_CONNECTED, pools,
softmaxes, normalizations, resizes, CHANNEL_SHUFFLE and the lookups (EMBEDDING_LOOKUP, HASHTABLE_LOOKUP,
LSH_PROJECTION).

Windows (convolutions and pools) come in the HAL's two forms: explicit padding (left, right, top, bottom) and an
implicit scheme (SAME 1, VALID 2). TFLite has only SAME and VALID, computed as the HAL computes its implicit
ones, so an implicit scheme maps directly; explicit padding maps to VALID when it is zero, to SAME when it equals
what SAME gives for the (known) input size, and otherwise to a PAD operator (PADV2 with the lowest value for
MAX_POOL_2D) before a VALID window. Average and L2 pools count only real elements, which a PAD cannot express:
those with other explicit padding are unsupported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from driver_under_test.backends.litert._graph import Op, TensorSpec, UnsupportedModel
from driver_under_test.backends.litert._registry import rule
from driver_under_test.backends.litert.rules._common import (
    F16,
    FLOAT,
    FLOAT_QUANT,
    I32,
    PADDING_SAME,
    Q8,
    Q8_PC,
    QS8,
    QUANT,
    activation,
    check_activation,
    layout_nchw,
    nhwc_input,
    nhwc_output,
    permuted,
    same_padding,
    transpose,
)
from driver_under_test.backends.litert.rules._limits import Kernel, refusal
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType
from harness.hal import OperationType as O

INT32 = OperandType.INT32

# ---- windows ----


@dataclass
class Window:
    """The window parameters of one convolution or pool, in the HAL's terms, with their input positions."""

    explicit: bool
    pads: tuple[int, int, int, int] | None  # left, right, top, bottom (explicit form)
    scheme: int | None  # implicit form
    stride: tuple[int, int]  # (w, h)
    dilation: tuple[int, int]  # (w, h)
    activation_input: int
    layout_input: int
    nchw: bool


def _window(op: Op, first: int, extra: int, explicit: bool) -> Window:
    """Read a window whose padding starts at input `first`; `extra` parameters (depth multiplier, groups,
    filter size...) sit between the strides and the activation."""
    if explicit:
        pads = tuple(int(op.scalar(first + k)) for k in range(4))
        stride_at = first + 4
        scheme = None
    else:
        pads = None
        scheme = int(op.scalar(first))
        stride_at = first + 1
    stride = (int(op.scalar(stride_at)), int(op.scalar(stride_at + 1)))
    act = stride_at + 2 + extra
    layout = act + 1
    dilation = (int(op.scalar(layout + 1, 1)), int(op.scalar(layout + 2, 1)))
    return Window(explicit, pads, scheme, stride, dilation, act, layout, layout_nchw(op, layout))


def _is_explicit(op: Op, probe: int, explicit_count: int) -> bool:
    """The HAL tells the forms apart by the type of one input: INT32 in the explicit form (a stride), BOOL in
    the implicit one (the layout); past the shorter form's inputs only the explicit form remains."""
    operand = op.operand(probe)
    if probe >= op.n_inputs:
        return op.n_inputs >= explicit_count
    return operand is None or operand.type == INT32


def _spatial(op: Op, i: int, nchw: bool) -> tuple[int, int]:
    """(height, width) of 4-D input i in its layout (0 when unknown)."""
    dims = op.dims(i)
    if len(dims) != 4:
        return 0, 0
    return (dims[2], dims[3]) if nchw else (dims[1], dims[2])


def _resolve(
    op: Op, win: Window, filter_hw: tuple[int, int], input_index: int = 0
) -> tuple[str, tuple[int, int, int, int] | None]:
    """("SAME" | "VALID", explicit pads to apply first or None)."""
    if not win.explicit:
        return ("SAME" if win.scheme == PADDING_SAME else "VALID"), None
    left, right, top, bottom = win.pads
    if (left, right, top, bottom) == (0, 0, 0, 0):
        return "VALID", None
    h, w = _spatial(op, input_index, win.nchw)
    if h and w:
        (sw, sh), (dw, dh) = win.stride, win.dilation
        if same_padding(h, filter_hw[0], sh, dh) == (top, bottom) and same_padding(w, filter_hw[1], sw, dw) == (
            left,
            right,
        ):
            return "SAME", None
    return "VALID", (left, right, top, bottom)


def _pad_nhwc(op: Op, x: int, spec: TensorSpec, pads: tuple[int, int, int, int], value=None) -> tuple[int, TensorSpec]:
    """x padded spatially (NHWC) by (left, right, top, bottom): PAD with zeros (the zero point when quantized),
    or PADV2 with `value` (a stored value of x's type)."""
    left, right, top, bottom = pads
    paddings = op.const(np.asarray([[0, 0], [top, bottom], [left, right], [0, 0]], dtype=np.int32))
    shape = None
    if spec.shape is not None:
        n, h, w, c = spec.shape
        shape = (n, h + top + bottom if h >= 0 else -1, w + left + right if w >= 0 else -1, c)
    out_spec = spec.with_shape(shape)
    out = op.temp(out_spec)
    if value is None:
        op.emit("PAD", [x, paddings], [out])
    else:
        op.emit("PADV2", [x, paddings, op.const(np.asarray([value]), spec)], [out])
    return out, out_spec


def _padding_code(op: Op, name: str) -> int:
    return getattr(op.b.model.schema.Padding, name)


def _filter_hw(op: Op, i: int = 1) -> tuple[int, int]:
    dims = op.dims(i)
    return int(dims[1]), int(dims[2])


def _check_window(op: Op, win: Window, filter_hw: tuple[int, int] | None) -> str | None:
    if op.rank(0) != 4:
        return f"{op.name}: input must have a known rank of 4"
    reason = check_activation(op, win.activation_input)
    if reason:
        return reason
    if filter_hw is not None and 0 in filter_hw:
        return f"{op.name}: the filter's spatial dimensions must be known"
    return None


def _window_roles(first: int, extra: tuple[str, ...], explicit: bool) -> dict[int, str]:
    """Input roles of a window whose padding starts at input `first`."""
    names = ["pad_left", "pad_right", "pad_top", "pad_bottom"] if explicit else ["padding_scheme"]
    names += ["stride_w", "stride_h", *extra, "activation", "layout", "dilation_w", "dilation_h"]
    return {first + k: name for k, name in enumerate(names)}


def _conv_roles(op: Op) -> dict[int, str]:
    if op.type == O.DEPTHWISE_CONV_2D:
        return _window_roles(3, ("depth_multiplier",), _is_explicit(op, 8, 11))
    return _window_roles(3, (), _is_explicit(op, 7, 10))


def _pool_roles(op: Op) -> dict[int, str]:
    return _window_roles(1, ("filter_w", "filter_h"), op.n_inputs >= 10)


def _grouped_roles(op: Op) -> dict[int, str]:
    return _window_roles(3, ("groups",), op.n_inputs == 12)


def _transpose_conv_roles(op: Op) -> dict[int, str]:
    if op.n_inputs == 11:
        return _window_roles(3, (), True)
    return {3: "output_shape", **_window_roles(4, (), False)}


# ---- convolutions ----

QUANT_FILTERS = {Q8: {Q8, Q8_PC}, QS8: {QS8, Q8_PC}}


def _conv_window(op: Op) -> Window:
    if op.type == O.DEPTHWISE_CONV_2D:
        return _window(op, 3, 1, _is_explicit(op, 8, 11))
    return _window(op, 3, 0, _is_explicit(op, 7, 10))


def _check_conv(op: Op) -> str | None:
    win = _conv_window(op)
    reason = _check_conv_common(op, win)
    if reason:
        return reason
    channel_dim = 3 if op.type == O.DEPTHWISE_CONV_2D else 0
    if op.in_type(1) == Q8_PC and op.spec(1).quantized_dimension != channel_dim:
        return f"{op.name}: per-channel quantization must be along the output channels (dimension {channel_dim})"
    builtin = "DEPTHWISE_CONV_2D" if op.type == O.DEPTHWISE_CONV_2D else "CONV_2D"
    return refusal(_conv_kernel(op, builtin, win.activation_input, _xnnpack_takes_conv(op, win)))


def _conv_kernel(op: Op, builtin: str, activation_input: int, xnnpack: bool) -> Kernel:
    """The convolution builtin a rule emits, for LiteRT's limits: input and output as the builtin gets them (their
    int8 twins on the per-channel path, see _via_int8), filter, bias, activation, and whether the XNNPACK delegate
    takes it."""
    x, out = op.spec(0), op.out_spec()
    if _per_channel_uint8(op):
        x, out = _int8_twin(x), _int8_twin(out)
    return Kernel(
        op=op.name,
        builtin=builtin,
        input=x,
        output=out,
        activation=activation(op, activation_input),
        filter=op.spec(1),
        bias=op.spec(2) if op.has(2) else None,
        xnnpack=xnnpack,
    )


def _per_channel_uint8(op: Op) -> bool:
    """True for a uint8 input with a per-channel filter (convolved through int8, see _via_int8)."""
    return op.in_type(0) == Q8 and op.in_type(1) == Q8_PC


def _int8_twin(spec: TensorSpec) -> TensorSpec:
    """The int8 tensor holding the same real values as a uint8 one (zero point - 128)."""
    return TensorSpec("INT8", spec.shape, spec.scales, tuple(z - 128 for z in spec.zero_points))


def _via_int8(op: Op, x: int, x_spec: TensorSpec) -> tuple[int, TensorSpec, TensorSpec]:
    """(input, its spec, the spec to compute the NHWC output in): LiteRT has no kernel for a uint8 input with a
    per-channel int8 filter, so such an input is requantized to its int8 twin (exact) and the output computed as
    int8, to be requantized to uint8 afterwards (exact too); other inputs pass unchanged."""
    out_spec = op.out_spec()
    if not _per_channel_uint8(op):
        return x, x_spec, out_spec
    twin = _int8_twin(x_spec)
    converted = op.temp(twin)
    op.emit("QUANTIZE", [x], [converted])
    return converted, twin, _int8_twin(out_spec)


@rule([O.CONV_2D, O.DEPTHWISE_CONV_2D], types=FLOAT_QUANT, check=_check_conv, roles=_conv_roles, half=True)
def conv(op: Op) -> None:
    """HAL CONV_2D: inputs 0 input [N, H, W, C_in], 1 filter [C_out, FH, FW, C_in], 2 bias [C_out] (TENSOR_INT32
    with scale input * filter when quantized), then explicit 3-6 pad left/right/top/bottom, 7 stride w, 8
    stride h, 9 activation, or implicit 3 padding scheme, 4 stride w, 5 stride h, 6 activation; then optional
    layout (BOOL, true = NCHW), dilation w, dilation h. DEPTHWISE_CONV_2D: filter [1, FH, FW, C_out] and a depth
    multiplier before the activation. TFLite CONV_2D / DEPTHWISE_CONV_2D (same filter layouts) with padding,
    strides, dilations and the activation as options; explicit padding as described in the module; NCHW through
    transposes. A uint8 input with a per-channel int8 filter has no LiteRT kernel: the input is requantized to
    int8 (same scale, zero point - 128, exact), convolved in int8 and the result requantized to uint8."""
    win = _conv_window(op)
    padding, pads = _resolve(op, win, _filter_hw(op))
    x, x_spec = nhwc_input(op, 0, win.nchw)
    x, x_spec, compute = _via_int8(op, x, x_spec)
    if pads is not None:
        x, x_spec = _pad_nhwc(op, x, x_spec, pads)
    out, finish = nhwc_output(op, 0, win.nchw, compute)
    (sw, sh), (dw, dh) = win.stride, win.dilation
    fields = dict(
        padding=_padding_code(op, padding),
        strideW=sw,
        strideH=sh,
        dilationWFactor=dw,
        dilationHFactor=dh,
        fusedActivationFunction=activation(op, win.activation_input),
    )
    inputs = [x, op.input(1), op.input(2)]
    if op.type == O.CONV_2D:
        op.emit("CONV_2D", inputs, [out], "Conv2DOptions", **fields)
    else:
        multiplier = int(op.scalar(win.activation_input - 1))
        op.emit("DEPTHWISE_CONV_2D", inputs, [out], "DepthwiseConv2DOptions", depthMultiplier=multiplier, **fields)
    finish()


# ---- which convolutions the XNNPACK delegate takes ----
# The delegate decides when tensors are first allocated, from the operator's tensors as the flatbuffer declares
# them, main's inputs resized to the run's shapes; an operator it does not take runs on the builtin kernel.


def _xnnpack_weights(op: Op) -> bool:
    """Whether the XNNPACK delegate takes a quantized convolution's weights: a constant filter (the translation
    keeps it constant, or cuts it into constant slices) and a constant bias quantized per tensor; the bias of a
    per-channel filter has scale 0 in the HAL and no quantization in the translation, which it does not take."""
    return op.is_const(1) and op.is_const(2) and bool(op.spec(2).scales)


def _xnnpack_input(op: Op, win: Window, direct: bool) -> tuple[int, int, int]:
    """(height, width, channels) of the convolution builtin's input as the delegate sees them: the declared sizes;
    0 (the run's size) for an unknown one of main's model input when the builtin reads it `direct`ly (no layout
    transpose, padding or requantization before it); 1, the placeholder the flatbuffer declares, for any other."""
    dims = op.dims(0)
    sizes = (dims[2], dims[3], dims[1]) if win.nchw else (dims[1], dims[2], dims[3])
    operand = op.operand(0)
    from_run = direct and op.subgraph == 0 and operand is not None and operand.lifetime == L.SUBGRAPH_INPUT
    height, width, channels = (size if size or from_run else 1 for size in sizes)
    return height, width, channels


def _xnnpack_takes_conv(op: Op, win: Window) -> bool:
    """CONV_2D and DEPTHWISE_CONV_2D: weights it takes and a declared output rank (the builtin's output tensor then
    has one); for CONV_2D also an input with at least the filter's input channels (it makes groups of them, and a
    placeholder channel count of 1 makes none)."""
    if not (_xnnpack_weights(op) and op.out_rank() is not None):
        return False
    if op.type == O.DEPTHWISE_CONV_2D:
        return True
    _, pads = _resolve(op, win, _filter_hw(op))
    direct = not win.nchw and pads is None and not _per_channel_uint8(op)
    channels = _xnnpack_input(op, win, direct)[2]
    return channels == 0 or channels >= op.dims(1)[3]


def _check_grouped(op: Op) -> str | None:
    reason = _check_conv_common(op, _grouped_window(op))
    if reason:
        return reason
    groups = int(op.scalar(_grouped_window(op).activation_input - 1))
    dims = op.dims(0)
    channels = dims[1] if _grouped_window(op).nchw else dims[3]
    if not channels or groups <= 0 or channels % groups:
        return f"{op.name}: the input's channel count must be known and divisible by the groups"
    if op.in_type(1) == Q8_PC and not op.dims(1)[0]:
        return f"{op.name}: a per-channel filter's output channels must be known (its scales are cut per group)"
    # Each group is a CONV_2D with the operation's quantization; constant weights are cut into constant slices.
    # Its input, a SPLIT of the channels, has a channel count the flatbuffer leaves unknown (1 to the delegate).
    xnnpack = _xnnpack_weights(op) and op.out_rank() is not None and op.dims(1)[3] == 1
    return refusal(_conv_kernel(op, "CONV_2D", _grouped_window(op).activation_input, xnnpack))


def _check_conv_common(op: Op, win: Window) -> str | None:
    if op.rank(1) != 4:
        return f"{op.name}: filter must have a known rank of 4"
    reason = _check_window(op, win, _filter_hw(op))
    if reason:
        return reason
    t = op.in_type(0)
    if t in QUANT and op.in_type(1) not in QUANT_FILTERS[t]:
        return f"{op.name}: filter type {op.in_type(1)} with input type {t}"
    return None


def _grouped_window(op: Op) -> Window:
    return _window(op, 3, 1, op.n_inputs == 12)


@rule(O.GROUPED_CONV_2D, types=FLOAT_QUANT, check=_check_grouped, roles=_grouped_roles, half=True)
def grouped_conv(op: Op) -> None:
    """HAL GROUPED_CONV_2D: inputs 0 input [N, H, W, C_in], 1 filter [C_out, FH, FW, C_in / groups], 2 bias
    [C_out], then explicit 3-6 pads, 7-8 strides, 9 groups, 10 activation, 11 layout, or implicit 3 padding
    scheme, 4-5 strides, 6 groups, 7 activation, 8 layout; output 0. Composition: SPLIT the input's channels into
    the groups, one CONV_2D per group with its slice of the filter and bias (constant slices are cut at
    translation time, others with SPLIT), CONCATENATION of the results along the channels."""
    win = _grouped_window(op)
    groups = int(op.scalar(win.activation_input - 1))
    padding, pads = _resolve(op, win, _filter_hw(op))
    x, x_spec = nhwc_input(op, 0, win.nchw)
    x, x_spec, compute = _via_int8(op, x, x_spec)
    if pads is not None:
        x, x_spec = _pad_nhwc(op, x, x_spec, pads)
    out, finish = nhwc_output(op, 0, win.nchw, compute)
    out_spec = compute
    group_spec = x_spec.with_shape(None if x_spec.shape is None else (*x_spec.shape[:3], -1))
    parts = [op.temp(group_spec) for _ in range(groups)]
    op.emit("SPLIT", [op.const(np.asarray(3, dtype=np.int32)), x], parts, "SplitOptions", numSplits=groups)
    filters = _group_slices(op, 1, groups)
    biases = _group_slices(op, 2, groups)
    (sw, sh), (dw, dh) = win.stride, win.dilation
    act = activation(op, win.activation_input)
    nhwc_out_shape = permuted(op.out_spec().shape, (0, 2, 3, 1)) if win.nchw and out_spec.shape else out_spec.shape
    results = []
    for g in range(groups):
        result = op.temp(out_spec.with_shape(None if nhwc_out_shape is None else (*nhwc_out_shape[:3], -1)))
        op.emit(
            "CONV_2D",
            [parts[g], filters[g], biases[g]],
            [result],
            "Conv2DOptions",
            padding=_padding_code(op, padding),
            strideW=sw,
            strideH=sh,
            dilationWFactor=dw,
            dilationHFactor=dh,
            fusedActivationFunction=act,
        )
        results.append(result)
    op.emit("CONCATENATION", results, [out], "ConcatenationOptions", axis=3)
    finish()


def _group_slices(op: Op, i: int, groups: int) -> list[int]:
    """Input i (filter or bias) cut into `groups` equal parts along dimension 0 (per-channel scales cut too)."""
    spec = op.spec(i)

    def part(g: int, size: int) -> TensorSpec:
        if spec.quantized_dimension == 0 and len(spec.scales) > 1:
            return TensorSpec(spec.type, None, spec.scales[g * size : (g + 1) * size], (0,) * size, 0)
        return spec

    if op.is_const(i):
        value = op.value(i)
        size = value.shape[0] // groups
        return [op.const(value[g * size : (g + 1) * size], part(g, size)) for g in range(groups)]
    size = op.dims(i)[0] // groups if op.dims(i) and op.dims(i)[0] else 0
    shape = None if spec.shape is None else (size or -1, *spec.shape[1:])
    parts = [op.temp(part(g, size).with_shape(shape)) for g in range(groups)]
    op.emit("SPLIT", [op.const(np.asarray(0, dtype=np.int32)), op.input(i)], parts, "SplitOptions", numSplits=groups)
    return parts


def _transpose_conv_explicit(op: Op) -> bool:
    return op.n_inputs == 11


def _check_transpose_conv(op: Op) -> str | None:
    explicit = _transpose_conv_explicit(op)
    win = _window(op, 3, 0, True) if explicit else _window(op, 4, 0, False)
    reason = _check_conv_common(op, win)
    if reason:
        return reason
    if not explicit and not op.is_const(3):
        return f"{op.name}: input 3 (output_shape) is given at run time; the translation needs it constant"
    if explicit and 0 in _spatial(op, 0, win.nchw):
        return f"{op.name}: explicit padding needs the input's spatial size"
    if explicit and op.dims(0)[0] == 0:
        return f"{op.name}: explicit padding needs the input's batch size"
    return refusal(_conv_kernel(op, "TRANSPOSE_CONV", win.activation_input, _xnnpack_takes_transpose_conv(op, win)))


def _xnnpack_takes_transpose_conv(op: Op, win: Window) -> bool:
    """TRANSPOSE_CONV: weights it takes, a declared output rank (the explicit form with padding writes a 4-D
    temporary), an input with the filter's input channels, and the padding geometry it supports (VALID: the
    filter fits in the output; SAME: the input is the output divided by the stride, rounded up, and the filter is
    no smaller than the stride; the explicit form is VALID with the full output)."""
    if not _xnnpack_weights(op):
        return False
    height, width, channels = _xnnpack_input(op, win, not win.nchw and not _per_channel_uint8(op))
    if channels not in (0, op.dims(1)[3]):
        return False
    if win.explicit:
        return any(win.pads) or op.out_rank() is not None
    if op.out_rank() is None:
        return False
    shape = [int(v) for v in op.value(3).reshape(-1)]
    out_hw = (shape[2], shape[3]) if win.nchw else (shape[1], shape[2])
    filter_hw = _filter_hw(op)
    strides = (win.stride[1], win.stride[0])
    if win.scheme != PADDING_SAME:
        return all(f <= o for f, o in zip(filter_hw, out_hw))
    implied = tuple(-(-o // s) for o, s in zip(out_hw, strides))
    # A size only the run knows (0) is taken as the one the output implies.
    matches = all(size in (0, m) for size, m in zip((height, width), implied))
    return matches and all(f >= s for f, s in zip(filter_hw, strides))


@rule(O.TRANSPOSE_CONV_2D, types=FLOAT_QUANT, check=_check_transpose_conv, roles=_transpose_conv_roles, half=True)
def transpose_conv(op: Op) -> None:
    """HAL TRANSPOSE_CONV_2D: inputs 0 input [N, H, W, C_in], 1 filter [C_out, FH, FW, C_in], 2 bias [C_out],
    then explicit 3-6 pad left/right/top/bottom, 7-8 strides, 9 activation, 10 layout, or implicit 3 output shape
    (TENSOR_INT32 [4], constant), 4 padding scheme, 5-6 strides, 7 activation, 8 layout; output 0. TFLite
    TRANSPOSE_CONV (inputs: output shape, filter, input, bias) whose padding is the forward convolution's from
    the output size back to the input size, which is how the HAL defines the implicit form: it maps directly.
    Explicit padding: the full output (VALID, size (in - 1) * stride + filter) is computed and the HAL's
    window cut out of it with SLICE (none when the padding is zero)."""
    explicit = _transpose_conv_explicit(op)
    win = _window(op, 3, 0, True) if explicit else _window(op, 4, 0, False)
    x, x_spec = nhwc_input(op, 0, win.nchw)
    x, x_spec, compute = _via_int8(op, x, x_spec)
    filter_dims = op.dims(1)
    (sw, sh) = win.stride
    act = activation(op, win.activation_input)
    if not explicit:
        shape = [int(v) for v in op.value(3).reshape(-1)]
        if win.nchw:
            shape = [shape[0], shape[2], shape[3], shape[1]]
        padding = "SAME" if win.scheme == PADDING_SAME else "VALID"
        out, finish = nhwc_output(op, 0, win.nchw, compute)
        _emit_transpose_conv(op, shape, x, padding, (sw, sh), act, out)
        finish()
        return
    n = op.dims(0)[0]
    h, w = _spatial(op, 0, win.nchw)
    left, right, top, bottom = win.pads
    full = [n, (h - 1) * sh + filter_dims[1], (w - 1) * sw + filter_dims[2], filter_dims[0]]
    out, finish = nhwc_output(op, 0, win.nchw, compute)
    if (left, right, top, bottom) == (0, 0, 0, 0):
        _emit_transpose_conv(op, full, x, "VALID", (sw, sh), act, out)
    else:
        whole = op.temp(compute.with_shape(tuple(full)))
        _emit_transpose_conv(op, full, x, "VALID", (sw, sh), act, whole)
        size = [n, full[1] - top - bottom, full[2] - left - right, full[3]]
        begin = op.const(np.asarray([0, top, left, 0], dtype=np.int32))
        op.emit("SLICE", [whole, begin, op.const(np.asarray(size, dtype=np.int32))], [out])
    finish()


def _emit_transpose_conv(op: Op, shape: list[int], x: int, padding: str, stride, act: int, out: int) -> None:
    op.emit(
        "TRANSPOSE_CONV",
        [op.const(np.asarray(shape, dtype=np.int32)), op.input(1), x, op.input(2)],
        [out],
        "TransposeConvOptions",
        padding=_padding_code(op, padding),
        strideW=stride[0],
        strideH=stride[1],
        fusedActivationFunction=act,
    )


# ---- fully connected ----


def _check_fc(op: Op) -> str | None:
    if op.rank(1) != 2:
        return f"{op.name}: weights must have a known rank of 2"
    return check_activation(op, 3) or refusal(_fc_kernel(op))


def _fc_kernel(op: Op) -> Kernel:
    """The FULLY_CONNECTED builtin, for LiteRT's limits. The XNNPACK delegate takes it with constant weights and
    bias (or none) unless an int8 filter has a zero point other than 0, which it leaves to the builtin kernel."""
    weights = op.spec(1)
    symmetric = weights.type != "INT8" or not any(weights.zero_points)
    return Kernel(
        op=op.name,
        builtin="FULLY_CONNECTED",
        input=op.spec(0),
        output=op.out_spec(),
        activation=activation(op, 3),
        filter=weights,
        bias=op.spec(2) if op.has(2) else None,
        xnnpack=op.is_const(1) and (op.is_const(2) or not op.has(2)) and symmetric,
    )


@rule(O.FULLY_CONNECTED, types=FLOAT_QUANT, params={3: "activation"}, check=_check_fc, half=True)
def fully_connected(op: Op) -> None:
    """HAL FULLY_CONNECTED: inputs 0 input (rank >= 2, read as [batch, input_size]), 1 weights [num_units,
    input_size], 2 bias [num_units] (TENSOR_INT32 with scale input * weights when quantized), 3 activation;
    output 0 [batch, num_units]. TFLite FULLY_CONNECTED (default weights format, keepNumDims false: the same
    flattening) with the activation fused."""
    op.emit(
        "FULLY_CONNECTED",
        [op.input(0), op.input(1), op.input(2)],
        [op.output()],
        "FullyConnectedOptions",
        fusedActivationFunction=activation(op, 3),
        keepNumDims=False,
    )


# ---- pools ----

_POOLS = {O.AVERAGE_POOL_2D: "AVERAGE_POOL_2D", O.MAX_POOL_2D: "MAX_POOL_2D", O.L2_POOL_2D: "L2_POOL_2D"}


def _pool_window(op: Op) -> Window:
    return _window(op, 1, 2, op.n_inputs >= 10)


def _pool_filter(op: Op, win: Window) -> tuple[int, int]:
    at = win.activation_input
    return int(op.scalar(at - 1)), int(op.scalar(at - 2))  # (h, w)


def _check_pool(op: Op) -> str | None:
    win = _pool_window(op)
    reason = _check_window(op, win, None)
    if reason:
        return reason
    _, pads = _resolve(op, win, _pool_filter(op, win))
    if pads is not None and op.type != O.MAX_POOL_2D and op.in_type(0) in QUANT:
        return (
            f"{op.name}: explicit padding {win.pads} is neither VALID nor SAME for this input size; LiteRT's pool "
            "counts only real elements, and a quantized composition dividing by the real count would round twice"
        )
    act = activation(op, win.activation_input)
    return refusal(Kernel(op=op.name, builtin=_POOLS[op.type], input=op.spec(0), output=op.out_spec(), activation=act))


@rule(list(_POOLS), types=FLOAT_QUANT, check=_check_pool, roles=_pool_roles, half=True)
def pool(op: Op) -> None:
    """HAL AVERAGE_POOL_2D/MAX_POOL_2D/L2_POOL_2D: input 0 [N, H, W, C], then explicit 1-4 pad left/right/top/
    bottom, 5 stride w, 6 stride h, 7 filter w, 8 filter h, 9 activation, or implicit 1 padding scheme, 2-3
    strides, 4 filter w, 5 filter h, 6 activation; then optional layout; output 0. Windows count only the input's
    real elements. TFLite pool of the same name with the window and activation as options. Explicit padding
    beyond SAME/VALID: MAX_POOL pads with the type's lowest value (PADV2) first; float AVERAGE/L2 pools, whose
    divisor must stay the count of real elements, are composed (see _padded_mean_pool)."""
    win = _pool_window(op)
    fh, fw = _pool_filter(op, win)
    padding, pads = _resolve(op, win, (fh, fw))
    x, x_spec = nhwc_input(op, 0, win.nchw)
    out, finish = nhwc_output(op, 0, win.nchw)
    act = activation(op, win.activation_input)
    if pads is not None and op.type != O.MAX_POOL_2D:
        _padded_mean_pool(op, x, x_spec, pads, win, (fh, fw), act, out)
        finish()
        return
    if pads is not None:
        lowest = {"FLOAT32": np.float32(-np.inf), "UINT8": np.uint8(0), "INT8": np.int8(-128)}[x_spec.type]
        x, x_spec = _pad_nhwc(op, x, x_spec, pads, lowest)
    _emit_pool(op, _POOLS[op.type], x, out, padding, win, (fh, fw), act)
    finish()


def _emit_pool(op: Op, builtin: str, x: int, out: int, padding: str, win: Window, filter_hw, act: int) -> None:
    (sw, sh), (fh, fw) = win.stride, filter_hw
    op.emit(
        builtin,
        [x],
        [out],
        "Pool2DOptions",
        padding=_padding_code(op, padding),
        strideW=sw,
        strideH=sh,
        filterWidth=fw,
        filterHeight=fh,
        fusedActivationFunction=act,
    )


_ACTIVATION_BUILTINS = {1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6"}


def _padded_mean_pool(op: Op, x: int, spec: TensorSpec, pads, win: Window, filter_hw, act: int, out: int) -> None:
    """Float AVERAGE/L2 pool over explicitly padded input with the HAL's divisor (the real elements in each
    window): AVERAGE_POOL over the zero-padded input gives sum / area, over a padded tensor of ones count / area;
    their quotient (DIV, with the activation fused) is sum / count (0 where a window holds no real element). L2:
    the same over x * x, then SQRT (and the activation as its own operator)."""
    free = spec.with_shape(None)
    source = x
    if op.type == O.L2_POOL_2D:
        source = op.temp(spec)
        op.emit("MUL", [x, x], [source], "MulOptions")
    shape = op.temp(TensorSpec("INT32", (4,)))
    op.emit("SHAPE", [x], [shape], "ShapeOptions", outType=op.b.model.schema.TensorType.INT32)
    ones = op.temp(spec)
    op.emit("FILL", [shape, op.const(np.float32(1))], [ones])
    sums, counts = op.temp(free), op.temp(free)
    padded, _ = _pad_nhwc(op, source, spec, pads)
    _emit_pool(op, "AVERAGE_POOL_2D", padded, sums, "VALID", win, filter_hw, 0)
    padded_ones, _ = _pad_nhwc(op, ones, spec, pads)
    _emit_pool(op, "AVERAGE_POOL_2D", padded_ones, counts, "VALID", win, filter_hw, 0)
    # A window over padding only has sum 0 and count 0: 0/0, which the HAL leaves undefined; we give 0, as the
    # numpy backend does. Any positive floor below the smallest real count (1 / area) leaves the other windows'
    # divisor untouched.
    floored = op.temp(free)
    floor = np.float32(0.5 / (filter_hw[0] * filter_hw[1]))
    op.emit("MAXIMUM", [counts, op.const(floor)], [floored])
    counts = floored
    if op.type == O.AVERAGE_POOL_2D:
        op.emit("DIV", [sums, counts], [out], "DivOptions", fusedActivationFunction=act)
        return
    mean_square, root = op.temp(free), (op.temp(free) if act else out)
    op.emit("DIV", [sums, counts], [mean_square], "DivOptions")
    op.emit("SQRT", [mean_square], [root])
    if act:
        op.emit(_ACTIVATION_BUILTINS[act], [root], [out])


# ---- along one axis: softmaxes and normalizations ----


def _axis(op: Op, i: int, default: int = -1) -> int:
    """Constant axis input i normalized to [0, rank) (the input's rank must be known)."""
    rank = op.rank(0)
    axis = int(op.scalar(i, default))
    return axis + rank if axis < 0 else axis


def _check_axis(i: int) -> Callable[[Op], str | None]:
    def check(op: Op) -> str | None:
        if op.rank(0) is None:
            return f"{op.name}: input rank must be known (the axis is moved last)"
        return None

    return check


def _along_last(op: Op, axis: int, body: Callable[[int, int], None], compute: TensorSpec | None = None) -> None:
    """Run body(x, out) with `axis` moved last (TFLite's softmaxes and normalizations work on the last axis)."""
    rank = op.rank(0)
    x, spec = op.input(0), op.spec(0)
    out_spec = op.out_spec()
    if axis == rank - 1:
        body(x, op.output())
        return
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = transpose(op, x, spec, perm)
    result = op.temp((compute or out_spec).with_shape(permuted(out_spec.shape, perm)))
    body(moved, result)
    transpose(op, result, out_spec.with_shape(permuted(out_spec.shape, perm)), perm, op.output())


@rule(O.SOFTMAX, types=FLOAT_QUANT | {F16}, params={1: "beta", 2: "axis"}, check=_check_axis(2))
def softmax(op: Op) -> None:
    """HAL SOFTMAX: inputs 0 input, 1 beta (FLOAT32), 2 axis (optional INT32, default -1); output 0 (quantized:
    scale 1/256, zero point 0 or -128, as LiteRT's kernels expect). TFLite SOFTMAX with beta as an option, along
    the last axis: another axis is moved last by TRANSPOSE and back."""
    beta = float(op.scalar(1))
    _along_last(op, _axis(op, 2), lambda x, out: op.emit("SOFTMAX", [x], [out], "SoftmaxOptions", beta=beta))


@rule(O.LOG_SOFTMAX, types=FLOAT, params={1: "beta", 2: "axis"}, check=_check_axis(2), half=True)
def log_softmax(op: Op) -> None:
    """HAL LOG_SOFTMAX: inputs 0 input, 1 beta (FLOAT32), 2 axis (INT32); output 0 = beta * x - log(sum(exp(beta
    * x))) along the axis. TFLite LOG_SOFTMAX has no beta: MUL by beta first (none when beta is 1); the axis is
    moved last by TRANSPOSE."""
    beta = float(op.scalar(1))

    def body(x: int, out: int) -> None:
        if beta != 1.0:
            scaled = op.temp(op.spec(0).with_shape(None))
            op.emit("MUL", [x, op.const(np.float32(beta))], [scaled], "MulOptions")
            x = scaled
        op.emit("LOG_SOFTMAX", [x], [out])

    _along_last(op, _axis(op, 2), body)


def _check_fixed_l2(op: Op) -> str | None:
    reason = _check_axis(1)(op)
    if reason or op.in_type(0) not in QUANT:
        return reason
    out = op.out()
    expected = (1 / 128, 128) if op.in_type(0) == Q8 else (1 / 128, 0)
    if (np.float32(out.scale), out.zero_point) != (np.float32(expected[0]), expected[1]):
        return f"{op.name}: quantized output must have scale 1/128 and zero point {expected[1]}"
    return None


@rule(O.L2_NORMALIZATION, types=FLOAT_QUANT, params={1: "axis"}, check=_check_fixed_l2, half=True)
def l2_normalization(op: Op) -> None:
    """HAL L2_NORMALIZATION: inputs 0 input, 1 axis (optional INT32, default -1); output 0 = x / sqrt(sum(x^2))
    along the axis (quantized: scale 1/128, zero point 128 or 0). TFLite L2_NORMALIZATION along the last axis;
    another axis is moved last by TRANSPOSE."""
    _along_last(op, _axis(op, 1), lambda x, out: op.emit("L2_NORMALIZATION", [x], [out], "L2NormOptions"))


@rule(
    O.LOCAL_RESPONSE_NORMALIZATION,
    types=FLOAT,
    params={1: "radius", 2: "bias", 3: "alpha", 4: "beta", 5: "axis"},
    check=_check_axis(5),
    half=True,
)
def local_response_normalization(op: Op) -> None:
    """HAL LOCAL_RESPONSE_NORMALIZATION: inputs 0 input (rank 1-4), 1 radius (INT32), 2 bias, 3 alpha, 4 beta
    (FLOAT32), 5 axis (optional INT32, default -1); output 0 = x / (bias + alpha * sum of squares over
    [c - radius, c + radius]) ^ beta. TFLite LOCAL_RESPONSE_NORMALIZATION (same definition, last axis of a 4-D
    tensor): another axis is moved last by TRANSPOSE, a lower rank gets leading size-1 dimensions (EXPAND_DIMS)
    removed afterwards (SQUEEZE)."""
    fields = dict(
        radius=int(op.scalar(1)), bias=float(op.scalar(2)), alpha=float(op.scalar(3)), beta=float(op.scalar(4))
    )
    missing = 4 - op.rank(0)
    free = op.spec(0).with_shape(None)

    def body(x: int, out: int) -> None:
        for _ in range(missing):
            wider = op.temp(free)
            op.emit("EXPAND_DIMS", [x, op.const(np.asarray(0, dtype=np.int32))], [wider])
            x = wider
        result = op.temp(free) if missing else out
        op.emit("LOCAL_RESPONSE_NORMALIZATION", [x], [result], "LocalResponseNormalizationOptions", **fields)
        if missing:
            op.emit("SQUEEZE", [result], [out], "SqueezeOptions", squeezeDims=list(range(missing)))

    _along_last(op, _axis(op, 5), body)


# ---- resize ----


def _resize_size(op: Op, nchw: bool) -> tuple[int, int]:
    """(new_height, new_width) from the size (INT32) or scale (FLOAT32) inputs."""
    if op.in_type(1) == INT32:
        return int(op.scalar(2)), int(op.scalar(1))
    h, w = _spatial(op, 0, nchw)
    if not h or not w:
        raise UnsupportedModel(f"{op.name}: a scale needs the input's spatial size")
    return int(np.float32(h) * np.float32(op.scalar(2))), int(np.float32(w) * np.float32(op.scalar(1)))


def _check_resize(op: Op) -> str | None:
    if op.rank(0) != 4:
        return f"{op.name}: input must have a known rank of 4"
    _resize_size(op, layout_nchw(op, 3))
    return None


@rule(
    [O.RESIZE_BILINEAR, O.RESIZE_NEAREST_NEIGHBOR],
    types=FLOAT_QUANT,
    params={1: "width", 2: "height", 3: "layout", 4: "align_corners", 5: "half_pixel_centers"},
    check=_check_resize,
    half=True,
)
def resize(op: Op) -> None:
    """HAL RESIZE_BILINEAR/RESIZE_NEAREST_NEIGHBOR: inputs 0 input [N, H, W, C], 1 new width and 2 new height
    (INT32) or 1 width scale and 2 height scale (FLOAT32: size = floor(in * scale)), 3 layout, 4 align_corners,
    5 half_pixel_centers (optional BOOLs); output 0. TFLite RESIZE_BILINEAR/RESIZE_NEAREST_NEIGHBOR with the size
    as a constant [height, width] tensor and the two flags as options; NCHW through transposes."""
    nchw = layout_nchw(op, 3)
    h, w = _resize_size(op, nchw)
    align, half = bool(op.scalar(4, False)), bool(op.scalar(5, False))
    x, _ = nhwc_input(op, 0, nchw)
    out, finish = nhwc_output(op, 0, nchw)
    size = op.const(np.asarray([h, w], dtype=np.int32))
    if op.type == O.RESIZE_BILINEAR:
        op.emit("RESIZE_BILINEAR", [x, size], [out], "ResizeBilinearOptions", alignCorners=align, halfPixelCenters=half)
    else:
        op.emit(
            "RESIZE_NEAREST_NEIGHBOR",
            [x, size],
            [out],
            "ResizeNearestNeighborOptions",
            alignCorners=align,
            halfPixelCenters=half,
        )
    finish()


# ---- compositions over known shapes ----


def _check_instance_norm(op: Op) -> str | None:
    if op.rank(0) != 4:
        return f"{op.name}: input must have a known rank of 4"
    return None


@rule(
    O.INSTANCE_NORMALIZATION,
    types=FLOAT,
    params={1: "gamma", 2: "beta", 3: "epsilon", 4: "layout"},
    check=_check_instance_norm,
    half=True,
)
def instance_normalization(op: Op) -> None:
    """HAL INSTANCE_NORMALIZATION: inputs 0 input [N, H, W, C], 1 gamma, 2 beta, 3 epsilon (FLOAT32), 4 layout
    (BOOL); output 0 = (x - mean) * gamma / sqrt(variance + epsilon) + beta, mean and variance over H and W per
    batch and channel. Composition: MEAN over the spatial axes (kept), SUB, MUL (square), MEAN, ADD epsilon,
    RSQRT, MUL, MUL gamma, ADD beta; no transpose is needed for NCHW (the spatial axes are 2 and 3 there)."""
    nchw = layout_nchw(op, 4)
    axes = op.const(np.asarray([2, 3] if nchw else [1, 2], dtype=np.int32))
    x, spec = op.input(0), op.spec(0)
    free = spec.with_shape(None)
    mean, centered, square, variance, shifted, inv, normed, scaled = (op.temp(free) for _ in range(8))
    op.emit("MEAN", [x, axes], [mean], "ReducerOptions", keepDims=True)
    op.emit("SUB", [x, mean], [centered], "SubOptions")
    op.emit("MUL", [centered, centered], [square], "MulOptions")
    op.emit("MEAN", [square, axes], [variance], "ReducerOptions", keepDims=True)
    op.emit("ADD", [variance, op.const(np.float32(op.scalar(3)))], [shifted], "AddOptions")
    op.emit("RSQRT", [shifted], [inv])
    op.emit("MUL", [centered, inv], [normed], "MulOptions")
    op.emit("MUL", [normed, op.const(np.float32(op.scalar(1)))], [scaled], "MulOptions")
    op.emit("ADD", [scaled, op.const(np.float32(op.scalar(2)))], [op.output()], "AddOptions")


def _check_channel_shuffle(op: Op) -> str | None:
    dims = op.dims(0)
    if not dims or 0 in dims:
        return f"{op.name}: the input's shape must be fully known (the shuffle reshapes it)"
    return None


@rule(O.CHANNEL_SHUFFLE, types=FLOAT_QUANT | {F16}, params={1: "num_groups", 2: "axis"}, check=_check_channel_shuffle)
def channel_shuffle(op: Op) -> None:
    """HAL CHANNEL_SHUFFLE: inputs 0 input, 1 num_groups (INT32), 2 axis (INT32, negative from the end); output
    0: the channels along the axis, seen as [groups, C / groups], transposed to [C / groups, groups].
    Composition: RESHAPE [outer, groups, C / groups, inner], TRANSPOSE [0, 2, 1, 3], RESHAPE back."""
    dims = op.dims(0)
    groups = int(op.scalar(1))
    axis = int(op.scalar(2)) % len(dims)
    outer = int(np.prod(dims[:axis], dtype=np.int64))
    inner = int(np.prod(dims[axis + 1 :], dtype=np.int64))
    split = (outer, groups, dims[axis] // groups, inner)
    spec = op.spec(0)
    folded = op.temp(spec.with_shape(split))
    op.emit("RESHAPE", [op.input(0), op.const(np.asarray(split, dtype=np.int32))], [folded])
    swapped = transpose(op, folded, spec.with_shape(split), (0, 2, 1, 3))
    op.emit("RESHAPE", [swapped, op.const(np.asarray(dims, dtype=np.int32))], [op.output()])


# ---- lookups and hashing ----


@rule(O.EMBEDDING_LOOKUP, types=FLOAT_QUANT | {I32, F16}, type_input=1)
def embedding_lookup(op: Op) -> None:
    """HAL EMBEDDING_LOOKUP: inputs 0 lookups (TENSOR_INT32 1-D), 1 values [rows, ...]; output 0 = the rows named
    by the lookups. TFLite EMBEDDING_LOOKUP (inputs: lookups, values)."""
    op.emit("EMBEDDING_LOOKUP", [op.input(0), op.input(1)], [op.output()])


@rule(O.HASHTABLE_LOOKUP, types=FLOAT_QUANT | {I32}, type_input=2, half=True)
def hashtable_lookup(op: Op) -> None:
    """HAL HASHTABLE_LOOKUP: inputs 0 lookups (TENSOR_INT32 1-D), 1 keys (TENSOR_INT32 1-D, ascending), 2 values
    [keys, ...]; outputs 0 the rows of the matching keys (zeros where none matches), 1 hits (TENSOR_QUANT8_ASYMM,
    1 or 0). TFLite HASHTABLE_LOOKUP (same inputs and outputs)."""
    op.emit("HASHTABLE_LOOKUP", [op.input(0), op.input(1), op.input(2)], [op.output(0), op.output(1)])


_LSH_SPARSE_DEPRECATED, _LSH_DENSE, _LSH_SPARSE = 1, 2, 3


def _check_lsh(op: Op) -> str | None:
    if int(op.scalar(3)) == _LSH_SPARSE_DEPRECATED and (op.rank(0) != 2 or 0 in op.dims(0)):
        return f"{op.name}: the deprecated sparse type needs the hash tensor's shape (its offsets are subtracted)"
    return None


@rule(O.LSH_PROJECTION, params={3: "type"}, check=_check_lsh)
def lsh_projection(op: Op) -> None:
    """HAL LSH_PROJECTION: inputs 0 hash [num_hash, num_bits] (FLOAT32), 1 input (any type, rank >= 1), 2 weight
    (optional FLOAT32 [input's dim 0]), 3 type (1 sparse deprecated, 2 dense, 3 sparse); output 0 TENSOR_INT32.
    TFLite LSH_PROJECTION with type SPARSE (1, which adds k << num_bits to hash function k's signature, the HAL's
    type 3) or DENSE (2). The HAL's deprecated sparse type 1 lacks the offset: TFLite's sparse result minus a
    constant [k << num_bits]. Both hash the seed as float32 bytes: float16 hash functions and weights are
    converted to float32 (exactly); the input keeps its type, since its stored bytes are what is hashed."""
    kind = int(op.scalar(3))
    lsh_type = op.b.model.schema.LSHProjectionType
    def seeds(i: int) -> int:
        return op.float32_input(i) if op.in_type(i) == F16 else op.input(i)

    inputs = [seeds(0), op.input(1)] + ([seeds(2)] if op.has(2) else [])
    if kind == _LSH_DENSE:
        op.emit("LSH_PROJECTION", inputs, [op.output()], "LSHProjectionOptions", type=lsh_type.DENSE)
        return
    if kind == _LSH_SPARSE:
        op.emit("LSH_PROJECTION", inputs, [op.output()], "LSHProjectionOptions", type=lsh_type.SPARSE)
        return
    num_hash, num_bits = op.dims(0)
    sparse = op.temp(op.out_spec())
    op.emit("LSH_PROJECTION", inputs, [sparse], "LSHProjectionOptions", type=lsh_type.SPARSE)
    offsets = op.const(np.arange(num_hash, dtype=np.int32) << num_bits)
    op.emit("SUB", [sparse, offsets], [op.output()], "SubOptions")

