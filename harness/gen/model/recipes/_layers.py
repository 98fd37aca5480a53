"""Recipes of the windowed and dense neural-network operations: convolutions, fully connected, pooling, resizing
and LSH projection. They pick spatial sizes, filters, paddings and strides whose output is never empty, and
quantized filters and biases whose parameters follow the HAL's rules (bias scale = input scale * filter scale,
zero point 0; per-channel filters carry one scale per output channel). Channel counts and units are small, or
now and then around a vector width (OpDraw.size)."""

from __future__ import annotations

import math

import numpy as np

from harness.gen.model import _values as V
from harness.gen.model._graph import GenOperand, OpRejected
from harness.gen.model._operation import OpDraw
from harness.gen.model._params import OMIT
from harness.gen.model.recipes._general import _layout, _nchw, _nhwc
from harness.gen.model.recipes._registry import O, T, recipe
from harness.hal import element_size

# The HAL's implicit padding codes.
PADDING_SAME, PADDING_VALID = 1, 2
# LSH_PROJECTION hashes each input row as a key of a 4-byte seed and the row's stored bytes, and FarmHash takes a
# different path for keys of 0 to 16, 17 to 32 and 33 to 64 bytes: most short draws pick one of these bands of
# key lengths with even odds, so each path is met about as often as the long keys' block loop (the others take
# rows of one element or an earlier small result, which keeps the graph connected).
_LSH_SEED_BYTES = 4
_KEY_BANDS = ((_LSH_SEED_BYTES + 1, 16), (17, 32), (33, 64))
_KEY_BAND_PROBABILITY = 0.85
# Elements per row in a long draw: with the seed, 65 to 84 bytes of 8-bit types, 126 to 164 of float16, 248 to
# 324 of float32 or int32 (one to five of FarmHash's 64-byte blocks). A handful of rows hash in microseconds and
# LSH_PROJECTION is one operation among a hundred: long keys are drawn several times as often as other long sizes.
_LONG_KEY_ELEMENTS = (61, 80)
_LONG_KEY_WEIGHT = 6.0
# A projected bit is the sign of a weighted sum of fingerprints (signed 64-bit, |value| <= 2**63): weights of at
# most 2**-63 in magnitude (or 0) put each term within [-1, 1], where a test of the sign against a threshold other
# than 0 (score > 1, score >= 0) goes wrong. LSH_PROJECTION is one operation among a hundred: float32 weight
# tensors get such weights most of the time; float16 ones less often, as that small they are all 0.
_TINY_WEIGHT_PROBABILITY = {T.TENSOR_FLOAT32: 0.75, T.TENSOR_FLOAT16: 0.25}
_TINY_WEIGHT_SCALE = 2.0**-63
_WEIGHT_RANGE = (-1.0, 1.0)
_BIAS_RANGE = (-1.0, 1.0)


def _names(d: OpDraw) -> dict[str, int]:
    return {a.name: i for i, a in enumerate(d.args)}


def _image(d: OpDraw, nchw: bool, channels: int | None = None) -> GenOperand:
    """A 4-D data input in the given layout (with exactly `channels` channels when given)."""

    def fits(s: tuple[int, ...]) -> bool:
        return len(s) == 4 and (channels is None or _nhwc(s, nchw)[3] == channels) and _nhwc(s, nchw)[3] <= 4

    c = channels if channels is not None else d.size(1, 3)
    new = _nchw((d.src.integer(1, 2), d.src.integer(1, d.cfg.max_dim), d.src.integer(1, d.cfg.max_dim), c), nchw)
    return d.data(0, fits=fits, new_shape=new)


def _tail(d: OpDraw, names: dict[str, int], dilation: bool = True) -> tuple[bool, int, int]:
    """The optional layout flag and dilation factors: omitted, layout only, or layout and both dilations."""
    nchw, dh, dw = False, 1, 1
    if "nchw" not in names:
        return nchw, dh, dw
    i = names["nchw"]
    optional = d.args[i].optional
    if optional and d.maybe_omit(i):
        if dilation and "dilation_w" in names:
            d.omit(names["dilation_w"])
            d.omit(names["dilation_h"])
        return nchw, dh, dw
    nchw = d.src.boolean()
    d.param(i, nchw, copy=nchw)
    if dilation and "dilation_w" in names:
        if d.args[names["dilation_w"]].optional and d.gen.chance(0.5):
            d.omit(names["dilation_w"])
            d.omit(names["dilation_h"])
        else:
            dw, dh = d.src.integer(1, 2), d.src.integer(1, 2)
            d.param(names["dilation_w"], dw)
            d.param(names["dilation_h"], dh)
    return nchw, dh, dw


def _padding(d: OpDraw, names: dict[str, int], size_hw: tuple[int, int], kernel_hw: tuple[int, int]) -> None:
    """Explicit paddings or an implicit scheme under which every output size is at least 1."""
    if "padding_scheme" in names:
        fits_valid = all(s >= k for s, k in zip(size_hw, kernel_hw))
        scheme = PADDING_VALID if fits_valid and d.src.boolean() else PADDING_SAME
        d.param(names["padding_scheme"], scheme)
        return
    for (a, b), size, k in zip((("pad_top", "pad_bottom"), ("pad_left", "pad_right")), size_hw, kernel_hw):
        before = d.src.integer(0, min(2, k - 1))
        after = d.src.integer(0, min(2, k - 1))
        if size + before + after < k:
            after = k - size - before
        d.param(names[a], before)
        d.param(names[b], after)


def _strides(d: OpDraw, names: dict[str, int]) -> None:
    d.param(names["stride_w"], d.src.integer(1, 2))
    d.param(names["stride_h"], d.src.integer(1, 2))


def _filter(d: OpDraw, i: int, shape: tuple[int, ...], channel_dim: int) -> GenOperand:
    t = int(d.args[i].types[0])
    return d.weight(
        i,
        shape,
        real=_WEIGHT_RANGE,
        channel_dim=channel_dim if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL else None,
        extremes=True,  # the range is a magnitude, not a domain
    )


def _bias(d: OpDraw, i: int, units: int, x: GenOperand, w: GenOperand) -> GenOperand:
    t = int(d.args[i].types[0])
    if t != T.TENSOR_INT32:
        return d.weight(i, (units,), real=_BIAS_RANGE)
    if w.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        scales = w.op.extra_params.scales  # type: ignore[union-attr]
        scale, effective, widest = 0.0, float(x.op.scale) * min(scales), float(x.op.scale) * max(scales)
    else:
        scale = V.f32(float(x.op.scale) * float(w.op.scale))
        effective = widest = scale
    if not (V.usable_scale(effective) and V.usable_scale(widest)):
        raise OpRejected(f"bias scales {effective}..{widest} out of range")
    bound = int(min(max(round(_BIAS_RANGE[1] / effective), 1), 1 << 20))
    return d.weight(i, (units,), ints=(-bound, bound), quant=(scale, 0) if scale else None)


def _conv_like(d: OpDraw, kind: str) -> None:
    names = _names(d)
    nchw, dh, dw = _tail(d, names, dilation=kind in ("conv", "depthwise"))
    x = _image(d, nchw)
    n, h, w, c = _nhwc(x.shape, nchw)
    kh, kw = d.src.integer(1, 3), d.src.integer(1, 3)
    if kind == "conv":
        cout = d.size(1, 3)
        flt = _filter(d, 1, (cout, kh, kw, c), 0)
    elif kind == "depthwise":
        m = d.src.integer(1, 2)
        cout = c * m
        flt = _filter(d, 1, (1, kh, kw, cout), 3)
        d.param(names["multiplier"], m)
    else:  # grouped
        groups = d.src.choice([g for g in range(1, c + 1) if c % g == 0])
        cout = groups * d.src.integer(1, 2)
        flt = _filter(d, 1, (cout, kh, kw, c // groups), 0)
        d.param(names["groups"], groups)
    _bias(d, 2, cout, x, flt)
    _padding(d, names, (h, w), ((kh - 1) * dh + 1, (kw - 1) * dw + 1))
    _strides(d, names)


@recipe(O.CONV_2D, free_quant=True)
def _conv(d: OpDraw) -> None:
    _conv_like(d, "conv")


@recipe(O.DEPTHWISE_CONV_2D, free_quant=True)
def _depthwise(d: OpDraw) -> None:
    _conv_like(d, "depthwise")


@recipe(O.GROUPED_CONV_2D, free_quant=True)
def _grouped(d: OpDraw) -> None:
    _conv_like(d, "grouped")


@recipe(O.TRANSPOSE_CONV_2D, free_quant=True)
def _transpose_conv(d: OpDraw) -> None:
    names = _names(d)
    nchw, _, _ = _tail(d, names, dilation=False)
    x = _image(d, nchw)
    n, h, w, c = _nhwc(x.shape, nchw)
    kh, kw = d.src.integer(1, 3), d.src.integer(1, 3)
    cout = d.size(1, 3)
    flt = _filter(d, 1, (cout, kh, kw, c), 0)
    _bias(d, 2, cout, x, flt)
    # Strides up to 3: with an implicit scheme, SAME's cropping depends on how the stride divides the input (a
    # stride of 2 or 3 over an input it does not divide is where a forward convolution's formula goes wrong).
    sh, sw = d.src.integer(1, 3), d.src.integer(1, 3)
    d.param(names["stride_w"], sw)
    d.param(names["stride_h"], sh)
    if "output_shape" in names:
        scheme = d.src.choice([PADDING_SAME, PADDING_VALID])
        if scheme == PADDING_SAME:
            oh, ow = h * sh, w * sw
        else:
            oh, ow = (h - 1) * sh + kh, (w - 1) * sw + kw
        d.param(names["padding_scheme"], scheme)
        # A CONSTANT_COPY: the validator's output-size check reads only those.
        d.param(names["output_shape"], np.array(_nchw((n, oh, ow, cout), nchw), dtype=np.int32), copy=True)
        return
    for (a, b), size, k, s in ((("pad_top", "pad_bottom"), h, kh, sh), (("pad_left", "pad_right"), w, kw, sw)):
        room = s * (size - 1) + k - 1  # paddings may remove at most this much and leave one output row
        before = min(d.src.integer(0, 2), room)
        after = min(d.src.integer(0, 2), room - before)
        d.param(names[a], before)
        d.param(names[b], after)


@recipe(O.FULLY_CONNECTED, free_quant=True)
def _fully_connected(d: OpDraw) -> None:
    x = d.data(0, rank=(2, 4))
    count = math.prod(x.shape)
    last = x.shape[-1]
    sizes = [k for k in range(1, count + 1) if count % k == 0 and k <= 16]
    size = last if d.src.boolean() or not sizes else d.src.choice(sizes)
    units = d.size(1, 4)
    w = d.weight(1, (units, size), real=_WEIGHT_RANGE, extremes=True)
    _bias(d, 2, units, x, w)


@recipe(O.AVERAGE_POOL_2D, O.MAX_POOL_2D, O.L2_POOL_2D)
def _pool(d: OpDraw) -> None:
    names = _names(d)
    nchw = _layout(d, names["nchw"]) if "nchw" in names else False
    x = _image(d, nchw)
    _, h, w, _ = _nhwc(x.shape, nchw)
    fh, fw = d.src.integer(1, 3), d.src.integer(1, 3)
    d.param(names["filter_w"], fw)
    d.param(names["filter_h"], fh)
    _padding(d, names, (h, w), (fh, fw))
    _strides(d, names)


def _resize_size(d: OpDraw, size: int, by_scale: bool, width: int) -> float | int:
    if not by_scale:
        return d.src.integer(1, 6)
    lo = max(0.5, 1.0 / size)
    for _ in range(3):
        scale = d.src.floats(lo, 2.5, width=width)
        if int(np.float32(size) * np.float32(scale)) >= 1:
            return scale
    return 1.0


@recipe(O.RESIZE_BILINEAR, O.RESIZE_NEAREST_NEIGHBOR)
def _resize(d: OpDraw) -> None:
    names = _names(d)
    nchw = _layout(d, names["nchw"]) if "nchw" in names else False
    layout_omitted = "nchw" in names and d.inputs[names["nchw"]] is OMIT
    x = _image(d, nchw)
    _, h, w, _ = _nhwc(x.shape, nchw)
    first = names.get("width", names.get("width_scale"))
    by_scale = int(d.args[first].types[0]) != T.INT32
    width = 16 if int(d.args[first].types[0]) == T.FLOAT16 else 32
    d.param(first, _resize_size(d, w, by_scale, width))
    d.param(first + 1, _resize_size(d, h, by_scale, width))
    if "align_corners" in names:
        i = names["align_corners"]
        if layout_omitted or d.maybe_omit(i):
            d.omit(i)
            d.omit(i + 1)
            return
        align = d.src.boolean()
        d.param(i, align)
        d.param(i + 1, False if align else d.src.boolean())


def _key_elements(d: OpDraw, itemsize: int) -> int:
    """Elements per LSH_PROJECTION row for a key (seed and row) in one of FarmHash's length bands."""
    lo, hi = d.src.choice(_KEY_BANDS)
    return d.src.integer(-(-(lo - _LSH_SEED_BYTES) // itemsize), (hi - _LSH_SEED_BYTES) // itemsize)


def _tiny_weights(d: OpDraw, rows: int) -> np.ndarray:
    """Weights of at most 2**-63 in magnitude, some of them 0: weighted sums of fingerprints near 0."""
    return np.array(
        [0.0 if d.src.integer(0, 3) == 0 else d.src.floats(-1.0, 1.0) * _TINY_WEIGHT_SCALE for _ in range(rows)]
    )


@recipe(O.LSH_PROJECTION)
def _lsh(d: OpDraw) -> None:
    num_hash, num_bits = d.src.integer(1, 2), d.src.integer(1, 4)
    d.data(0, shape=(num_hash, num_bits), reuse=False)
    rows = d.src.integer(1, 3)
    itemsize = element_size(int(d.args[1].types[0]))
    width = d.long(0, 0, *_LONG_KEY_ELEMENTS, weight=_LONG_KEY_WEIGHT)
    if width:
        # Long keys: past 64 bytes, FarmHash's loop over 64-byte blocks.
        x = d.data(1, shape=(rows, width), reuse=False)
    elif d.gen.chance(_KEY_BAND_PROBABILITY):
        x = d.data(1, shape=(rows, _key_elements(d, itemsize)), reuse=False)
    else:
        x = d.data(1, fits=lambda s: 1 <= len(s) <= 2 and s[0] <= 3 and math.prod(s) <= 6, new_shape=(rows,))
    if not d.maybe_omit(2):
        # Not in a relaxed model: float16 precision may hold such weights as 0.
        if not d.gen.relaxed and d.gen.chance(_TINY_WEIGHT_PROBABILITY[int(d.args[2].types[0])]):
            d.data(2, value=_tiny_weights(d, x.shape[0]), reuse=False)
        else:
            d.data(2, shape=(x.shape[0],), reuse=False)
    kinds = [1, 2, 3] if d.sig.version != "V1_0" else [1, 2]
    d.param(3, d.src.choice(kinds))
