"""Neural-network operations: convolutions (plain, depthwise, grouped), pools, FULLY_CONNECTED, the softmaxes,
the normalizations, CHANNEL_SHUFFLE, DEPTH_TO_SPACE, SPACE_TO_DEPTH and EMBEDDING_LOOKUP.

HAL windows are NHWC unless their layout input says NCHW; ONNX's Conv and pools are NCHW, so an NHWC input is
transposed in and the result transposed back. HAL filters are [out, h, w, in] (depthwise: [1, h, w, out]); ONNX's
are [out, in / groups, h, w]. Quantized convolutions dequantize input, filter (per channel along the filter's
channel dimension) and bias, convolve in float32 and quantize the result (the QDQ form ONNX Runtime fuses into
its integer convolution at the extended and all levels).
"""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.onnxruntime._graph import Op, UnsupportedModel, quant_params
from driver_under_test.backends.onnxruntime._registry import rule
from driver_under_test.backends.onnxruntime.rules._common import (
    FLOAT,
    FLOAT_QUANT,
    I32,
    INT32,
    PADDING_SAME,
    Q8_PC,
    Window,
    activate,
    activation,
    check_rank4,
    explicit_form,
    from_nchw,
    layout_nchw,
    moved,
    read_window,
    same_padding,
    spatial,
    to_nchw,
    window_attrs,
)
from harness.hal import OperationType as O

# ---- convolutions ----


def _bias(op: Op, i: int = 2, x: int = 0, w: int = 1) -> str:
    """The real value of bias input i. A quantized convolution's int32 bias has the scale input scale x filter
    scale (per channel for a per-channel filter, where the HAL leaves the bias operand's own scale 0): it goes
    through DequantizeLinear with that scale, the bias form of ONNX Runtime's QDQ convolution groups."""
    if not op.quantized(x):
        return op.x(i)
    in_scale = np.float64(np.float32(op.operand(x).scale))
    filter_scale, _, axis = quant_params(op.operand(w))
    scale = (in_scale * filter_scale.astype(np.float64)).astype(np.float32)
    zero = np.zeros(scale.shape, dtype=np.int32)
    attrs = {} if axis is None else {"axis": 0}
    return op.node("DequantizeLinear", [op.input(i), op.const(scale), op.const(zero)], **attrs)


def _filter_oihw(op: Op, perm: tuple[int, ...]) -> str:
    """The filter's real value transposed to ONNX's [out, in / groups, h, w]."""
    return op.node("Transpose", [op.x(1)], perm=list(perm))


def _check_filter(op: Op, channel_dim: int) -> str | None:
    """The filter's rank is 4 with known dimensions, and a per-channel filter is quantized along `channel_dim`."""
    dims = op.dims(1)
    if len(dims) != 4 or 0 in dims:
        return f"{op.name}: the filter must have 4 known dimensions (got {dims})"
    if op.in_type(1) == Q8_PC and quant_params(op.operand(1))[2] != channel_dim:
        return f"{op.name}: a per-channel filter must be quantized along dimension {channel_dim}"
    return check_rank4(op)


def _conv(op: Op, win: Window, weights: str, group: int, kernel_hw: tuple[int, int]) -> None:
    x = to_nchw(op, op.x(0), win.nchw)
    attrs = window_attrs(op, win, kernel_hw)
    attrs["dilations"] = [win.dilation[1], win.dilation[0]]
    inputs = [x, weights] + ([_bias(op)] if op.has(2) else [])
    result = op.node("Conv", inputs, group=group, **attrs)
    activated = op.b.fresh("activated")
    activate(op, result, activation(op, win.activation), activated)
    op.node("Identity", [from_nchw(op, activated, win.nchw)], [op.y()])


def _conv_window(op: Op) -> Window:
    # Explicit: 3-6 pads, 7-8 strides, 9 activation; implicit: 3 scheme, 4-5 strides, 6 activation.
    return read_window(op, 3, 0, explicit_form(op, 7))


def _check_conv(op: Op) -> str | None:
    return _check_filter(op, 0) or _check_window_activation(op, _conv_window(op))


def _check_window_activation(op: Op, win: Window) -> str | None:
    code = int(op.scalar(win.activation, 0))
    if code not in (0, 1, 2, 3):
        return f"{op.name}: fused activation code {code} is not one of NONE, RELU, RELU1, RELU6"
    return None


@rule(O.CONV_2D, types=FLOAT_QUANT, check=_check_conv)
def conv_2d(op: Op) -> None:
    """HAL CONV_2D: 0 input [n, h, w, c_in], 1 filter [c_out, fh, fw, c_in], 2 bias [c_out]; explicit form: 3-6
    padding left, right, top, bottom, 7 stride_w, 8 stride_h, 9 activation, [10 layout, 11 dilation_w, 12
    dilation_h]; implicit form: 3 padding scheme, 4 stride_w, 5 stride_h, 6 activation, [7 layout, 8-9
    dilations]. ONNX Conv (group 1) on NCHW with the filter transposed to [c_out, c_in, fh, fw]."""
    win = _conv_window(op)
    _, fh, fw, _ = op.dims(1)
    _conv(op, win, _filter_oihw(op, (0, 3, 1, 2)), 1, (fh, fw))


def _depthwise_window(op: Op) -> Window:
    # Explicit: 3-6 pads, 7-8 strides, 9 multiplier, 10 activation; implicit: 3 scheme, 4-5 strides, 6 multiplier,
    # 7 activation.
    return read_window(op, 3, 1, explicit_form(op, 8))


def _check_depthwise(op: Op) -> str | None:
    reason = _check_filter(op, 3) or _check_window_activation(op, _depthwise_window(op))
    if reason is not None:
        return reason
    multiplier = _depthwise_window(op).extra[0]
    if multiplier <= 0 or op.dims(1)[3] % multiplier:
        return f"{op.name}: depth multiplier {multiplier} does not divide the filter's depth {op.dims(1)[3]}"
    return None


@rule(O.DEPTHWISE_CONV_2D, types=FLOAT_QUANT, check=_check_depthwise)
def depthwise_conv_2d(op: Op) -> None:
    """HAL DEPTHWISE_CONV_2D: 0 input [n, h, w, c_in], 1 filter [1, fh, fw, c_out], 2 bias [c_out]; explicit form:
    3-6 padding left, right, top, bottom, 7 stride_w, 8 stride_h, 9 depth multiplier, 10 activation, [11 layout,
    12-13 dilations]; implicit form: 3 scheme, 4 stride_w, 5 stride_h, 6 multiplier, 7 activation, [8 layout, 9-10
    dilations]. ONNX Conv with group c_in = c_out / multiplier and the filter transposed to [c_out, 1, fh, fw]:
    output channel k reads input channel k // multiplier in both."""
    win = _depthwise_window(op)
    _, fh, fw, c_out = op.dims(1)
    _conv(op, win, _filter_oihw(op, (3, 0, 1, 2)), c_out // win.extra[0], (fh, fw))


def _grouped_window(op: Op) -> Window:
    # Explicit: 3-6 pads, 7-8 strides, 9 groups, 10 activation, 11 layout; implicit: 3 scheme, 4-5 strides,
    # 6 groups, 7 activation, 8 layout. No dilations.
    return read_window(op, 3, 1, op.n_inputs >= 12, dilations=False)


def _check_grouped(op: Op) -> str | None:
    return _check_filter(op, 0) or _check_window_activation(op, _grouped_window(op))


@rule(O.GROUPED_CONV_2D, types=FLOAT_QUANT, check=_check_grouped)
def grouped_conv_2d(op: Op) -> None:
    """HAL GROUPED_CONV_2D: 0 input [n, h, w, c_in], 1 filter [c_out, fh, fw, c_in / groups], 2 bias [c_out];
    explicit form: 3-6 padding left, right, top, bottom, 7 stride_w, 8 stride_h, 9 groups, 10 activation, 11
    layout; implicit form: 3 scheme, 4-5 strides, 6 groups, 7 activation, 8 layout. ONNX Conv with the group
    attribute and the filter transposed to [c_out, c_in / groups, fh, fw]."""
    win = _grouped_window(op)
    _, fh, fw, _ = op.dims(1)
    _conv(op, win, _filter_oihw(op, (0, 3, 1, 2)), win.extra[0], (fh, fw))


# ---- TRANSPOSE_CONV_2D ----


def _transpose_conv_window(op: Op) -> Window:
    # Explicit (11 inputs): 3-6 pads, 7-8 strides, 9 activation, 10 layout; implicit: 3 output shape, 4 scheme,
    # 5-6 strides, 7 activation, 8 layout. No dilations.
    explicit = op.n_inputs == 11
    return read_window(op, 3 if explicit else 4, 0, explicit, dilations=False)


def _check_transpose_conv(op: Op) -> str | None:
    reason = _check_filter(op, 0)
    if reason is not None:
        return reason
    win = _transpose_conv_window(op)
    if win.pads is None:
        if not op.is_const(3):
            return f"{op.name}: input 3 (output shape) is given at run time; the translation needs it as a constant"
        if 0 in spatial(op, 0, win.nchw):
            return f"{op.name}: the implicit form needs the input's height and width (they set the padding)"
    return _check_window_activation(op, win)


def _transpose_pads(op: Op, win: Window) -> tuple[list[int], list[int]]:
    """(ONNX pads [top, left, bottom, right], output_padding [h, w]) of the HAL's window. The implicit form pads
    as a forward convolution from the output size back to the input size would, and the output keeps the size
    the output shape gives: what the full result (in - 1) * stride + filter lacks at the end is output padding
    (bias only, as in the HAL)."""
    if win.pads is not None:
        left, right, top, bottom = win.pads
        return [top, left, bottom, right], [0, 0]
    _, fh, fw, _ = op.dims(1)
    shape = [int(v) for v in op.value(3).reshape(-1)]
    out_hw = (shape[2], shape[3]) if win.nchw else (shape[1], shape[2])
    (sw, sh), in_hw = win.stride, spatial(op, 0, win.nchw)
    heads, tails, extra = [], [], []
    for size, stride, kernel, in_size in zip(out_hw, (sh, sw), (fh, fw), in_hw):
        head = same_padding(size, kernel, stride, 1)[0] if win.scheme == PADDING_SAME else 0
        tail = (in_size - 1) * stride + kernel - head - size
        heads.append(head)
        tails.append(max(tail, 0))
        extra.append(max(-tail, 0))
    return heads + tails, extra


@rule(O.TRANSPOSE_CONV_2D, types=FLOAT_QUANT, check=_check_transpose_conv)
def transpose_conv_2d(op: Op) -> None:
    """HAL TRANSPOSE_CONV_2D: 0 input [n, h, w, c_in], 1 filter [c_out, fh, fw, c_in] (per-channel along 0), 2
    bias [c_out]; explicit form: 3-6 padding left, right, top, bottom, 7 stride_w, 8 stride_h, 9 activation, 10
    layout; implicit form: 3 output shape (TENSOR_INT32 [4] constant, in the layout), 4 padding scheme, 5
    stride_w, 6 stride_h, 7 activation, 8 layout. ONNX ConvTranspose on NCHW with the filter transposed to
    [c_in, c_out, fh, fw], explicit pads and output padding (see _transpose_pads), then the activation."""
    win = _transpose_conv_window(op)
    _, fh, fw, _ = op.dims(1)
    pads, output_padding = _transpose_pads(op, win)
    x = to_nchw(op, op.x(0), win.nchw)
    inputs = [x, _filter_oihw(op, (3, 0, 1, 2)), _bias(op)]
    attrs = {"kernel_shape": [fh, fw], "strides": [win.stride[1], win.stride[0]], "pads": pads}
    if any(output_padding):
        attrs["output_padding"] = output_padding
    result = op.node("ConvTranspose", inputs, **attrs)
    activated = op.b.fresh("activated")
    activate(op, result, activation(op, win.activation), activated)
    op.node("Identity", [from_nchw(op, activated, win.nchw)], [op.y()])


# ---- pools ----


def _pool_window(op: Op) -> Window:
    # Explicit: 1-4 pads, 5-6 strides, 7 filter_w, 8 filter_h, 9 activation, [10 layout]; implicit: 1 scheme,
    # 2-3 strides, 4-5 filter size, 6 activation, [7 layout].
    return read_window(op, 1, 2, op.n_inputs >= 10, dilations=False)


def _check_pool(op: Op) -> str | None:
    reason = check_rank4(op)
    if reason is not None:
        return reason
    win = _pool_window(op)
    reason = _check_window_activation(op, win)
    if reason is None and win.pads is not None:
        fw, fh = win.extra
        left, right, top, bottom = win.pads
        if max(left, right) >= fw or max(top, bottom) >= fh:
            return (
                f"{op.name}: explicit padding {win.pads} as large as the filter ({fw}x{fh}); ONNX Runtime's pool "
                "kernels refuse padding that is not smaller than the kernel"
            )
    return reason


@rule([O.AVERAGE_POOL_2D, O.MAX_POOL_2D, O.L2_POOL_2D], types=FLOAT_QUANT, check=_check_pool)
def pool_2d(op: Op) -> None:
    """HAL AVERAGE_POOL_2D/MAX_POOL_2D/L2_POOL_2D: 0 input [n, h, w, c]; explicit form: 1-4 padding left, right,
    top, bottom, 5 stride_w, 6 stride_h, 7 filter_w, 8 filter_h, 9 activation, [10 layout]; implicit form: 1
    scheme, 2-3 strides, 4 filter_w, 5 filter_h, 6 activation, [7 layout]. ONNX AveragePool (padding not counted,
    as the HAL averages over the window's elements inside the input), MaxPool (padding never the maximum), and
    for L2 the square root of the AveragePool of the squares (ONNX's LpPool sums without averaging)."""
    win = _pool_window(op)
    fw, fh = win.extra
    x = to_nchw(op, op.x(0), win.nchw)
    attrs = {"kernel_shape": [fh, fw], **window_attrs(op, win, (fh, fw))}
    if op.type == O.MAX_POOL_2D:
        result = op.node("MaxPool", [x], **attrs)
    elif op.type == O.AVERAGE_POOL_2D:
        result = op.node("AveragePool", [x], count_include_pad=0, **attrs)
    else:
        squares = op.node("Mul", [x, x])
        result = op.node("Sqrt", [op.node("AveragePool", [squares], count_include_pad=0, **attrs)])
    activated = op.b.fresh("activated")
    activate(op, result, activation(op, win.activation), activated)
    op.node("Identity", [from_nchw(op, activated, win.nchw)], [op.y()])


# ---- FULLY_CONNECTED ----


def _check_fully_connected(op: Op) -> str | None:
    dims = op.dims(1)
    if len(dims) != 2 or not dims[1]:
        return f"{op.name}: the weights must have a known input size (got {dims})"
    if op.in_type(1) == Q8_PC:
        return f"{op.name}: per-channel weights are not a FULLY_CONNECTED typing of the HAL"
    return _check_window_activation_at(op, 3)


def _check_window_activation_at(op: Op, i: int) -> str | None:
    code = int(op.scalar(i, 0))
    if code not in (0, 1, 2, 3):
        return f"{op.name}: fused activation code {code} is not one of NONE, RELU, RELU1, RELU6"
    return None


@rule(O.FULLY_CONNECTED, types=FLOAT_QUANT, params={3: "activation"}, check=_check_fully_connected)
def fully_connected(op: Op) -> None:
    """HAL FULLY_CONNECTED: 0 input (rank >= 2, flattened to [batch, input_size]), 1 weights [units, input_size],
    2 bias [units] (may be omitted), 3 activation; output 0 [batch, units]. ONNX Reshape to [-1, input_size],
    then Gemm with the weights transposed and the bias as C, then the activation."""
    input_size = op.dims(1)[1]
    flat = op.node("Reshape", [op.x(0), op.ints([-1, input_size])])
    inputs = [flat, op.x(1)] + ([_bias(op)] if op.has(2) else [])
    result = op.node("Gemm", inputs, transB=1)
    activate(op, result, activation(op, 3), op.y())


# ---- softmaxes and normalizations ----


def _axis_input(op: Op, i: int) -> int:
    return int(op.scalar(i, -1))


@rule([O.SOFTMAX, O.LOG_SOFTMAX], types=FLOAT_QUANT, params={1: "beta", 2: "axis"})
def softmax(op: Op) -> None:
    """HAL SOFTMAX: 0 input, 1 beta (float scalar), [2 axis, default -1]; LOG_SOFTMAX: 0 input, 1 beta, 2 axis.
    Output 0 (quantized SOFTMAX: the fixed scale 1/256). ONNX Softmax/LogSoftmax along the axis of the input
    scaled by beta."""
    scaled = op.node("Mul", [op.x(0), op.const(np.float32(op.scalar(1)))])
    op.node("Softmax" if op.type == O.SOFTMAX else "LogSoftmax", [scaled], [op.y()], axis=_axis_input(op, 2))


@rule(O.L2_NORMALIZATION, types=FLOAT_QUANT, params={1: "axis"})
def l2_normalization(op: Op) -> None:
    """HAL L2_NORMALIZATION: 0 input, [1 axis, default -1]; output 0 (quantized: scale 1/128). The input divided
    by the square root of ReduceSumSquare along the axis (ONNX's LpNormalization divides by the norm as well,
    but its CPU kernel takes only a fixed rank), kept from zero so that an all-zero slice normalizes to zero."""
    x = op.x(0)
    total = op.node("ReduceSumSquare", [x, op.ints([_axis_input(op, 1)])], keepdims=1)
    norm = op.node("Max", [op.node("Sqrt", [total]), op.const(_l2_floor(op))])
    op.node("Div", [x, norm], [op.y()])


# The HAL's reference divides an L2 slice by max(norm, 1e-6), so an all-zero slice gives zeros (0 / 0 is NaN).
_L2_EPSILON = 1e-6


def _l2_floor(op: Op) -> np.float32:
    """The least norm L2_NORMALIZATION divides by: the HAL's epsilon for floats; for a quantized input half its
    scale, since x / |x| of centred integers does not depend on the scale and every slice not all zero points has
    a norm of at least one scale (an epsilon in real values would change those of a tiny scale)."""
    if not op.quantized(0):
        return np.float32(_L2_EPSILON)
    scale, _, _ = quant_params(op.operand(0))
    return np.float32(float(scale) / 2)


def _moved_axis(op: Op, i: int) -> tuple[int, list[int]]:
    """(rank, permutation moving axis input i to the end) of input 0."""
    rank = op.rank(0)
    if rank is None:
        raise UnsupportedModel(f"{op.name}: the input's rank must be known")
    axis = _axis_input(op, i) % rank
    return rank, [d for d in range(rank) if d != axis] + [axis]


def _check_lrn(op: Op) -> str | None:
    if op.rank(0) is None:
        return f"{op.name}: the input's rank must be known"
    # The HAL puts no bound on alpha or beta; ONNX Runtime's LRN kernel (lrn.h) refuses alpha <= 0 or beta <= 0
    # when the session is created, so such a model would fail every execution.
    alpha = np.float32(float(op.scalar(3)) * (2 * int(op.scalar(1)) + 1))
    beta = np.float32(op.scalar(4))
    if not (alpha > 0 and beta > 0):
        return (
            f"{op.name}: ONNX Runtime's LRN kernel refuses alpha <= 0 or beta <= 0 when it creates the session "
            f"(here alpha * size {float(alpha):g}, beta {float(beta):g}); the HAL allows them"
        )
    return None


@rule(
    O.LOCAL_RESPONSE_NORMALIZATION,
    types=FLOAT,
    params={1: "radius", 2: "bias", 3: "alpha", 4: "beta", 5: "axis"},
    check=_check_lrn,
)
def local_response_normalization(op: Op) -> None:
    """HAL LOCAL_RESPONSE_NORMALIZATION: 0 input, 1 radius, 2 bias, 3 alpha, 4 beta, [5 axis, default -1];
    output 0: x / (bias + alpha * sum of x^2 over [c - radius, c + radius]) ^ beta. ONNX LRN over channel axis 1
    of a 4-D tensor with size 2 * radius + 1 and alpha scaled by the size (ONNX divides alpha by it): the axis is
    moved last, the rest flattened into [rows, channels, 1, 1], then shaped back."""
    rank, perm = _moved_axis(op, 5)
    x = op.x(0)
    moved_x = op.node("Transpose", [x], perm=perm) if perm != list(range(rank)) else x
    flat = op.node("Flatten", [moved_x], axis=rank - 1)
    four = op.node("Unsqueeze", [flat, op.ints([2, 3])])
    size = 2 * int(op.scalar(1)) + 1
    attrs = {
        "size": size,
        "bias": float(op.scalar(2)),
        "alpha": float(op.scalar(3)) * size,
        "beta": float(op.scalar(4)),
    }
    normalized = op.node("LRN", [four], **attrs)
    back = op.node("Reshape", [op.node("Squeeze", [normalized, op.ints([2, 3])]), op.node("Shape", [moved_x])])
    if perm != list(range(rank)):
        inverse = [perm.index(d) for d in range(rank)]
        back = op.node("Transpose", [back], perm=inverse)
    op.node("Identity", [back], [op.y()])


@rule(O.INSTANCE_NORMALIZATION, types=FLOAT, params={1: "gamma", 2: "beta", 3: "epsilon", 4: "layout"})
def instance_normalization(op: Op) -> None:
    """HAL INSTANCE_NORMALIZATION: 0 input [n, h, w, c], 1 gamma, 2 beta, 3 epsilon (scalars of the input's
    float type), 4 layout; output 0: (x - mean) / sqrt(variance + epsilon) * gamma + beta per batch and channel,
    over h and w. Composed of ReduceMean nodes (ONNX's InstanceNormalization wants per-channel scale tensors of a
    channel count the model may not know)."""
    axes = op.ints([2, 3] if bool(op.scalar(4)) else [1, 2])
    x = op.x(0)
    centred = op.node("Sub", [x, op.node("ReduceMean", [x, axes], keepdims=1)])
    variance = op.node("ReduceMean", [op.node("Mul", [centred, centred]), axes], keepdims=1)
    deviation = op.node("Sqrt", [op.node("Add", [variance, op.const(np.float32(op.scalar(3)))])])
    scaled = op.node("Mul", [op.node("Div", [centred, deviation]), op.const(np.float32(op.scalar(1)))])
    op.node("Add", [scaled, op.const(np.float32(op.scalar(2)))], [op.y()])


# ---- rearrangements ----


def _check_known_dims(op: Op) -> str | None:
    dims = op.dims(0)
    if not dims or 0 in dims:
        return f"{op.name}: the input's dimensions must be known (got {dims})"
    return None


@rule(O.CHANNEL_SHUFFLE, types=FLOAT_QUANT, params={1: "groups", 2: "axis"}, check=_check_known_dims)
def channel_shuffle(op: Op) -> None:
    """HAL CHANNEL_SHUFFLE: 0 input, 1 num_groups, 2 axis; output 0. The axis of size groups * k is reshaped into
    [groups, k], the two swapped (Transpose) and reshaped back, so that channel g * k + j moves to j * groups + g."""
    dims = op.dims(0)
    groups, axis = int(op.scalar(1)), int(op.scalar(2)) % len(dims)
    split = dims[:axis] + [groups, dims[axis] // groups] + dims[axis + 1 :]
    perm = list(range(len(split)))
    perm[axis], perm[axis + 1] = axis + 1, axis
    (source,), target = moved(op)
    shuffled = op.node("Transpose", [op.node("Reshape", [source, op.ints(split)])], perm=perm)
    op.node("Reshape", [shuffled, op.ints(dims)], [target])


_SPACE_DEPTH = {O.DEPTH_TO_SPACE: "DepthToSpace", O.SPACE_TO_DEPTH: "SpaceToDepth"}


@rule(list(_SPACE_DEPTH), types=FLOAT_QUANT, params={1: "block size", 2: "layout"}, check=check_rank4)
def space_depth(op: Op) -> None:
    """HAL DEPTH_TO_SPACE/SPACE_TO_DEPTH: 0 input [n, h, w, c], 1 block size, [2 layout]; output 0. ONNX
    DepthToSpace (mode DCR, the HAL's order: depth index (by * block + bx) * c_out + c)/SpaceToDepth on NCHW."""
    nchw = bool(op.scalar(2, False))
    (source,), target = moved(op)
    attrs = {"blocksize": int(op.scalar(1))}
    if op.type == O.DEPTH_TO_SPACE:
        attrs["mode"] = "DCR"
    result = op.node(_SPACE_DEPTH[op.type], [to_nchw(op, source, nchw)], **attrs)
    op.node("Identity", [from_nchw(op, result, nchw)], [target])


@rule(O.EMBEDDING_LOOKUP, types={I32})
def embedding_lookup(op: Op) -> None:
    """HAL EMBEDDING_LOOKUP: 0 lookups (TENSOR_INT32 [k]), 1 values [n, ...]; output 0 [k, ...]: rows of values.
    ONNX Gather along axis 0 (values moved as stored when the output stores them alike)."""
    (values,), target = moved(op, (1,))
    op.node("Gather", [values, op.input(0)], [target], axis=0)


# ---- resizing ----

# (mode, align_corners, half_pixel_centers) -> ONNX Resize attributes giving the HAL's source coordinates.
# Bilinear: src = out * in / out_size (asymmetric), out * (in - 1) / (out_size - 1) (align_corners), or
# (out + 0.5) * in / out_size - 0.5 clamped into the input (half_pixel, whose linear kernel clamps likewise).
# Nearest: floor(out * in / out_size); round-half-up of out * (in - 1) / (out_size - 1); floor((out + 0.5) *
# in / out_size), which is half_pixel's (out + 0.5) * in / out_size - 0.5 rounded half up.
_RESIZE_MODES: dict[tuple[str, bool, bool], dict[str, str]] = {
    ("linear", False, False): {"coordinate_transformation_mode": "asymmetric"},
    ("linear", True, False): {"coordinate_transformation_mode": "align_corners"},
    ("linear", False, True): {"coordinate_transformation_mode": "half_pixel"},
    ("nearest", False, False): {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
    ("nearest", True, False): {"coordinate_transformation_mode": "align_corners", "nearest_mode": "round_prefer_ceil"},
    ("nearest", False, True): {"coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_ceil"},
}
_RESIZE_KINDS = {O.RESIZE_BILINEAR: "linear", O.RESIZE_NEAREST_NEIGHBOR: "nearest"}


def _resize_flags(op: Op) -> tuple[bool, bool]:
    return bool(op.scalar(4, False)), bool(op.scalar(5, False))


def _check_resize(op: Op) -> str | None:
    align, half = _resize_flags(op)
    if align and half:
        return f"{op.name}: align_corners and half_pixel_centers both set (the HAL forbids it)"
    return check_rank4(op)


def _resize_sizes(op: Op, x: str, axes: list[int]) -> str:
    """The output's [height, width] as int64: the sizes (INT32 form), or floor(in * scale) in float32 (the HAL's
    size of the scale form). Computed now when the parameters (and for scales the input's spatial size) are
    constants, else at run time. The scale form goes through sizes too: with scales, ONNX would map coordinates by
    the given scale, where the HAL maps them by the ratio of the sizes."""
    by_size = op.in_type(1) == INT32
    if op.is_const(1) and op.is_const(2):
        if by_size:
            return op.ints([int(op.scalar(2)), int(op.scalar(1))])
        scales = np.asarray([op.scalar(2), op.scalar(1)], dtype=np.float32)
        dims = [op.dims(0)[a] for a in axes]
        if all(dims):
            return op.ints([int(np.float32(d) * s) for d, s in zip(dims, scales)])
        pair = op.const(scales)
    else:
        parts = [op.node("Reshape", [op.input(i), op.ints([1])]) for i in (2, 1)]
        pair = op.node("Concat", parts, axis=0)
        if by_size:
            return op.node("Cast", [pair], to="INT64")
        pair = op.node("Cast", [pair], to="FLOAT")
    spatial_dims = op.node("Cast", [op.node("Gather", [op.node("Shape", [x]), op.ints(axes)])], to="FLOAT")
    return op.node("Cast", [op.node("Floor", [op.node("Mul", [spatial_dims, pair])])], to="INT64")


@rule(
    [O.RESIZE_BILINEAR, O.RESIZE_NEAREST_NEIGHBOR],
    types=FLOAT_QUANT,
    params={3: "layout", 4: "align_corners", 5: "half_pixel_centers"},
    runtime_scalars={1, 2},
    check=_check_resize,
)
def resize(op: Op) -> None:
    """HAL RESIZE_BILINEAR/RESIZE_NEAREST_NEIGHBOR: 0 input [n, h, w, c], 1 new width and 2 new height (INT32),
    or 1 width scale and 2 height scale (FLOAT32/FLOAT16: new size floor(size * scale)), constants or given at
    run time, [3 layout, 4 align_corners, 5 half_pixel_centers (BOOLs)]; output 0 (quantized: the input's scale
    and zero point). ONNX Resize over the two spatial axes of the HAL's layout (the axes attribute, no
    transposes) with output sizes, the coordinate mode and nearest rounding of the flags (table above). Nearest
    moves stored values; bilinear interpolates real values."""
    nchw = layout_nchw(op, 3)
    axes = [2, 3] if nchw else [1, 2]
    kind = _RESIZE_KINDS[op.type]
    if kind == "nearest":
        (source,), target = moved(op)
    else:
        source, target = op.x(0), op.y()
    attrs = {"mode": kind, "axes": axes, **_RESIZE_MODES[(kind, *_resize_flags(op))]}
    op.node("Resize", [source, "", "", _resize_sizes(op, source, axes)], [target], **attrs)
