"""Recipes of the element-wise, activation, comparison, conversion, reduction, data-movement and selection
operations (the ones that do not need window or recurrent geometry)."""

from __future__ import annotations

import math

import numpy as np

from harness.gen.model._graph import GenOperand, OpRejected
from harness.gen.model._operation import OpDraw
from harness.gen.model._values import QUANTIZED, broadcastable
from harness.gen.model.recipes._registry import FREE_QUANT, O, T, recipe
from harness.gen.source import Weights

_PARTNER_MODES = Weights([("same", 4), ("ones", 2), ("suffix", 1), ("expand", 1)])


def broadcast_partner(d: OpDraw, s: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with s: the same, with ones, a suffix, or expanded where s has ones."""
    r = len(s)
    mode = _PARTNER_MODES.pick(d.src)
    if mode == "ones":
        return tuple(1 if d.src.boolean() else n for n in s)
    if mode == "suffix" and r > 1:
        return s[d.src.integer(1, r - 1) :]
    if mode == "expand":
        out = [d.src.integer(1, d.cfg.max_dim) if n == 1 else n for n in s]
        if r < d.cfg.max_rank and d.src.boolean():
            out.insert(0, d.src.integer(1, d.cfg.max_dim))
        return tuple(out)
    return s


def _binary(d: OpDraw) -> None:
    x = d.data(0)
    d.data(1, fits=lambda s: broadcastable(x.shape, s), new_shape=broadcast_partner(d, x.shape))


@recipe(O.ADD, O.SUB, O.DIV, O.MAXIMUM, O.MINIMUM, O.POW, O.PRELU, free_quant=True)
def _arith(d: OpDraw) -> None:
    _binary(d)


@recipe(O.MUL, free_quant=True)
def _mul(d: OpDraw) -> None:
    _binary(d)
    a, b = d.get(0), d.get(1)
    if a is not None and b is not None and a.type in QUANTIZED:
        d.scale_floor[0] = float(np.float32(a.op.scale)) * float(np.float32(b.op.scale))


@recipe(O.EQUAL, O.NOT_EQUAL, O.GREATER, O.GREATER_EQUAL, O.LESS, O.LESS_EQUAL, O.LOGICAL_AND, O.LOGICAL_OR)
def _compare(d: OpDraw) -> None:
    _binary(d)


FREE_QUANT.update({int(O.HARD_SWISH), int(O.SELECT), int(O.QUANTIZE), int(O.CAST)})


@recipe(O.ARGMAX, O.ARGMIN)
def _arg(d: OpDraw) -> None:
    # A rank-1 input would give a rank-0 output, which the HAL does not describe.
    d.data(0, rank=(2, d.cfg.max_rank))


@recipe(O.REDUCE_ALL, O.REDUCE_ANY, O.REDUCE_MAX, O.REDUCE_MIN, O.REDUCE_PROD, O.REDUCE_SUM, O.MEAN)
def _reduce(d: OpDraw) -> None:
    x = d.data(0)
    r = len(x.shape)
    keep = d.src.boolean()
    chosen = sorted({d.src.integer(0, r - 1) for _ in range(d.src.integer(1, r))})
    if not keep and len(chosen) == r:
        # Reducing every dimension without keeping them has an output shape the HAL gives as [1]; stay clear.
        keep = True
    axes = [a - r if d.src.boolean() else a for a in chosen]
    if d.src.integer(0, 3) == 0:
        axes.append(axes[0])  # a repeated axis reduces once
    d.param(1, np.array(axes, dtype=np.int32))
    d.param(2, keep if int(d.args[2].types[0]) == T.BOOL else int(keep))


@recipe(O.SQUEEZE)
def _squeeze(d: OpDraw) -> None:
    r = d.src.integer(2, d.cfg.max_rank)
    shape = tuple(1 if d.src.boolean() else d.src.integer(2, max(d.cfg.max_dim, 2)) for _ in range(r))
    if 1 not in shape or all(n == 1 for n in shape):
        shape = (1, *shape[1:]) if shape[0] != 1 else (1, max(2, d.cfg.max_dim), *shape[2:])
    x = d.data(0, fits=lambda s: 1 in s and any(n > 1 for n in s), new_shape=shape)
    s = x.shape
    ones = [k for k, n in enumerate(s) if n == 1]
    if not any(n > 1 for n in s):
        raise OpRejected("squeezing every dimension")
    if not ones or d.maybe_omit(1):
        return
    chosen = [k for k in ones if d.src.boolean()] or ones[:1]
    d.param(1, np.array([k - len(s) if d.src.boolean() else k for k in chosen], dtype=np.int32))


@recipe(O.EXPAND_DIMS)
def _expand_dims(d: OpDraw) -> None:
    d.data(0, rank=(1, d.cfg.max_rank - 1))


@recipe(O.CONCATENATION, free_quant=True)
def _concatenation(d: OpDraw) -> None:
    n = d.src.integer(1, 3)
    d.set_input_count(n + 1)
    x = d.data(0)
    s = x.shape
    axis = d.src.integer(0, len(s) - 1)

    def same_but_axis(t: tuple[int, ...]) -> bool:
        return len(t) == len(s) and all(a == b for k, (a, b) in enumerate(zip(s, t)) if k != axis)

    for i in range(1, n):
        new = tuple(d.src.integer(1, d.cfg.max_dim) if k == axis else m for k, m in enumerate(s))
        d.data(i, fits=same_but_axis, new_shape=new)
    d.param(n, axis)


@recipe(O.SPLIT)
def _split(d: OpDraw) -> None:
    x = d.data(0)
    s = x.shape
    axis = d.src.integer(-len(s), len(s) - 1)
    size = s[axis]
    splits = d.src.choice([k for k in range(1, size + 1) if size % k == 0])
    d.set_output_count(splits)
    d.param(1, axis)
    d.param(2, splits)


@recipe(O.PAD, O.PAD_V2)
def _pad(d: OpDraw) -> None:
    x = d.data(0)
    r = len(x.shape)
    dims = list(x.shape)
    pads = []
    for k in range(r):
        before, after = d.src.integer(0, 2), d.src.integer(0, 2)
        grown = dims[k] + before + after
        if math.prod(dims[:k] + [grown] + dims[k + 1 :]) > d.gen.max_elements:
            before = after = 0
        dims[k] += before + after
        pads.append([before, after])
    d.param(1, np.array(pads, dtype=np.int32).reshape(r, 2))
    if len(d.args) > 2:
        if x.type in QUANTIZED:
            lo, hi = (0, 255) if x.type == T.TENSOR_QUANT8_ASYMM else (-128, 127)
            d.param(2, d.src.integer(lo, hi))
        else:
            d.param(2)


def _layout(d: OpDraw, i: int) -> bool:
    """Draw the optional layout flag at position i; True for NCHW."""
    if d.args[i].optional and d.maybe_omit(i):
        return False
    nchw = d.src.boolean()
    # The catalogue's shape checks read only CONSTANT_COPY values and assume NHWC otherwise.
    d.param(i, nchw, copy=nchw)
    return nchw


def _nchw(nhwc: tuple[int, int, int, int], nchw: bool) -> tuple[int, ...]:
    n, h, w, c = nhwc
    return (n, c, h, w) if nchw else (n, h, w, c)


def _nhwc(shape: tuple[int, ...], nchw: bool) -> tuple[int, int, int, int]:
    n, a, b, c = shape
    return (n, b, c, a) if nchw else (n, a, b, c)


@recipe(O.DEPTH_TO_SPACE)
def _depth_to_space(d: OpDraw) -> None:
    nchw = _layout(d, 2)
    block = d.src.integer(1, 2)
    depth = block * block * d.src.integer(1, 2)
    shape = _nchw((d.src.integer(1, 2), d.src.integer(1, 3), d.src.integer(1, 3), depth), nchw)
    d.data(0, fits=lambda s: _nhwc(s, nchw)[3] % (block * block) == 0, new_shape=shape)
    d.param(1, block)


@recipe(O.SPACE_TO_DEPTH)
def _space_to_depth(d: OpDraw) -> None:
    nchw = _layout(d, 2)
    block = d.src.integer(1, 2)
    shape = _nchw(
        (d.src.integer(1, 2), block * d.src.integer(1, 2), block * d.src.integer(1, 2), d.src.integer(1, 3)), nchw
    )
    d.data(0, fits=lambda s: _nhwc(s, nchw)[1] % block == 0 and _nhwc(s, nchw)[2] % block == 0, new_shape=shape)
    d.param(1, block)


@recipe(O.BATCH_TO_SPACE_ND)
def _batch_to_space(d: OpDraw) -> None:
    nchw = _layout(d, 2)
    bh, bw = d.src.integer(1, 2), d.src.integer(1, 2)
    shape = _nchw((bh * bw * d.src.integer(1, 2), d.src.integer(1, 3), d.src.integer(1, 3), d.src.integer(1, 3)), nchw)
    d.data(0, fits=lambda s: _nhwc(s, nchw)[0] % (bh * bw) == 0, new_shape=shape)
    d.param(1, np.array([bh, bw], dtype=np.int32))


@recipe(O.SPACE_TO_BATCH_ND)
def _space_to_batch(d: OpDraw) -> None:
    nchw = _layout(d, 3)
    x = d.data(0, rank=4)
    n, h, w, c = _nhwc(x.shape, nchw)
    block = [d.src.integer(1, 2), d.src.integer(1, 2)]
    pads = []
    for size, b in ((h, block[0]), (w, block[1])):
        before = d.src.integer(0, 2)
        after = (-(size + before)) % b + b * d.src.integer(0, 1)
        pads += [before, after]
    if n * c * (h + pads[0] + pads[1]) * (w + pads[2] + pads[3]) > d.gen.max_elements:
        block, pads = [1, 1], [0, 0, 0, 0]  # the padded tensor would be too large
    d.param(1, np.array(block, dtype=np.int32))
    d.param(2, np.array(pads, dtype=np.int32).reshape(2, 2))


@recipe(O.CHANNEL_SHUFFLE)
def _channel_shuffle(d: OpDraw) -> None:
    x = d.data(0)
    s = x.shape
    axis = d.src.integer(-len(s), len(s) - 1)
    size = s[axis]
    d.param(1, d.src.choice([k for k in range(1, size + 1) if size % k == 0]))
    d.param(2, axis)


@recipe(O.STRIDED_SLICE)
def _strided_slice(d: OpDraw) -> None:
    x = d.data(0)
    s = x.shape
    r = len(s)
    begin, end, strides = [], [], []
    begin_mask = end_mask = shrink = 0
    for k, n in enumerate(s):
        stride = d.src.choice([1, 1, 2, -1])
        if d.src.integer(0, 4) == 0 and r > 1 and shrink.bit_count() < r - 1:
            # Shrink: exactly one element along this axis.
            b = d.src.integer(0, n - 1)
            begin.append(b - n if d.src.boolean() else b)
            end.append(b + 1)
            strides.append(1)
            shrink |= 1 << k
            continue
        if stride > 0:
            b = d.src.integer(0, n - 1)
            e = d.src.integer(b + 1, n + 1)
        else:
            b = d.src.integer(0, n - 1)
            e = d.src.integer(-n - 1, b - n - 1) if d.src.boolean() else -n - 1
        begin.append(b)
        end.append(e)
        strides.append(stride)
        if d.src.integer(0, 4) == 0:
            begin_mask |= 1 << k
        if d.src.integer(0, 4) == 0:
            end_mask |= 1 << k
    d.param(1, np.array(begin, dtype=np.int32))
    d.param(2, np.array(end, dtype=np.int32))
    d.param(3, np.array(strides, dtype=np.int32))
    d.param(4, begin_mask)
    d.param(5, end_mask)
    d.param(6, shrink)


@recipe(O.GATHER)
def _gather(d: OpDraw) -> None:
    x = d.data(0, rank=(1, d.cfg.max_rank - 1))
    s = x.shape
    axis = d.src.integer(-len(s), len(s) - 1)
    d.param(1, axis)
    shape = (d.src.integer(1, 3),) if len(s) > 2 or d.src.boolean() else (d.src.integer(1, 2), d.src.integer(1, 2))
    d.data(2, shape=shape, ints=(0, s[axis] - 1), reuse=False, constant=None if d.src.boolean() else True)


@recipe(O.FILL)
def _fill(d: OpDraw) -> None:
    dims = [d.src.integer(1, d.cfg.max_dim) for _ in range(d.src.integer(1, d.cfg.max_rank))]
    d.param(0, np.array(dims, dtype=np.int32))
    d.param(1)


def _same_quant_out(d: OpDraw, source: GenOperand, out: int = 0) -> None:
    """Output `out` keeps the quantization of `source` (the HAL requires it of selections)."""
    if source.type in QUANTIZED:
        d.out_quant[out] = (float(source.op.scale), int(source.op.zero_point))


@recipe(O.EMBEDDING_LOOKUP)
def _embedding_lookup(d: OpDraw) -> None:
    values = d.data(1, rank=(2, d.cfg.max_rank))
    _same_quant_out(d, values)
    rows = values.shape[0]
    d.data(0, shape=(d.src.integer(1, 3),), ints=(0, rows - 1), reuse=False)


@recipe(O.HASHTABLE_LOOKUP)
def _hashtable_lookup(d: OpDraw) -> None:
    values = d.data(2, rank=(2, d.cfg.max_rank))
    _same_quant_out(d, values)
    rows = values.shape[0]
    keys = sorted({d.src.integer(-5, 20) for _ in range(rows * 2)})
    while len(keys) < rows:
        keys.append(keys[-1] + 1 if keys else 0)
    keys = sorted(keys[:rows])
    d.const(1, np.array(keys, dtype=np.int32))
    n = d.src.integer(1, 4)
    lookups = [keys[d.src.integer(0, rows - 1)] if d.src.boolean() else d.src.integer(-5, 25) for _ in range(n)]
    d.data(0, value=np.array(lookups, dtype=np.int32), reuse=False)
