"""Operand shapes, values and quantization parameters drawn from a Source.

Values are stored-form numpy arrays (quantized types hold their integers). Real ranges come from the operation
catalogue's hints; a quantized operand gets a scale and zero point that make its hinted real range representable.
The minimal answers of a source give the simplest draws: a shape of dimensions min_dim, raw bytes of zeros.
"""

from __future__ import annotations

import hashlib
import math
import struct

import numpy as np

from harness.gen.source import Source
from harness.hal import OperandType, SymmPerChannelQuantParams, numpy_dtype

T = OperandType

FLOAT_TENSORS = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16})
FLOAT_SCALARS = frozenset({T.FLOAT32, T.FLOAT16})
QUANT_ASYMM = frozenset({T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_ASYMM})
QUANT_SYMM = frozenset({T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL})
QUANTIZED = QUANT_ASYMM | QUANT_SYMM
_BOOLS = frozenset({T.TENSOR_BOOL8, T.BOOL})
_UINT32 = T.UINT32  # (an attribute of an Enum class is several times slower than a global)
# Integer range of each quantized type's stored values (the symmetric 8-bit types avoid -128).
STORED_RANGE: dict[int, tuple[int, int]] = {
    T.TENSOR_QUANT8_ASYMM: (0, 255),
    T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    T.TENSOR_QUANT16_ASYMM: (0, 65535),
    T.TENSOR_QUANT8_SYMM: (-127, 127),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
    T.TENSOR_QUANT16_SYMM: (-32767, 32767),
}
_U2 = np.dtype("<u2")
_U4 = np.dtype("<u4")
DEFAULT_RANGE = (-10.0, 10.0)
DEFAULT_INT_RANGE = (-10, 10)
# Arrays up to this many bytes read their bytes from the source; larger ones expand a 4-byte seed, so a fuzzer's
# input is not spent on tensor contents.
DIRECT_BYTES = 64


def draw_shape(src: Source, rank: int, max_dim: int, min_dim: int = 1) -> tuple[int, ...]:
    """A shape of the given rank with every dimension in [min_dim, max_dim]."""
    hi = max(min_dim, max_dim)
    integer = src.integer
    return tuple([integer(min_dim, hi) for _ in range(rank)])


def broadcastable(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """NumPy broadcast compatibility of two actual shapes."""
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            return False
    return True


def raw_bytes(src: Source, n: int) -> bytes:
    """n bytes for array contents: from the source when small, else expanded from a 4-byte seed (zeros for 0)."""
    if n <= 0:
        return b""
    if n <= DIRECT_BYTES:
        data = src.bytes(n)
        return data if len(data) == n else data + bytes(n - len(data))
    seed = src.bytes(4)
    if not any(seed):
        return bytes(n)
    return hashlib.shake_128(seed).digest(n)


_F32 = struct.Struct("<f")


def f32(x: float) -> float:
    """x as the float32 the HAL stores (scales are float32)."""
    try:
        # The same rounding as np.float32(x) (a C cast), for a fraction of the cost.
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:  # beyond float32: what numpy does then (inf, with its warning)
        return float(np.float32(x))


def quant_params(src: Source, operand_type: int, lo: float, hi: float) -> tuple[float, int]:
    """(scale, zero point) under which [lo, hi] is representable, the scale widened by a drawn factor in [1, 2]."""
    qmin, qmax = STORED_RANGE[operand_type]
    factor = src.floats(1.0, 2.0, width=32)
    if operand_type in QUANT_SYMM:
        magnitude = max(abs(lo), abs(hi), 1e-3)
        return f32(magnitude / qmax * factor), 0
    span = max(hi - lo, 1e-3) * factor
    scale = f32(span / (qmax - qmin))
    centre = (lo + hi) / 2.0
    zero_point = round((qmin + qmax) / 2.0 - centre / scale)
    return scale, int(min(max(zero_point, qmin), qmax))


def channel_params(src: Source, channels: int, channel_dim: int, lo: float, hi: float) -> SymmPerChannelQuantParams:
    """Per-channel symmetric scales (one per channel) covering [lo, hi]."""
    magnitude = max(abs(lo), abs(hi), 1e-3)
    scales = [f32(magnitude / 127 * src.floats(1.0, 3.0, width=32)) for _ in range(channels)]
    return SymmPerChannelQuantParams(scales=scales, channel_dim=channel_dim)


# Extreme quantization parameters (ModelConfig.extreme_quant_probability), as base-10 exponents of a log-uniform
# draw. Tiny scales stay positive normal float32 values, and so do products of two (a bias scale is input scale *
# filter scale); huge ones stay far below the float32 maximum, and so do products of two (MUL's output scale must
# exceed the product of its input scales).
TINY_SCALE_EXPONENTS = (-12.0, -6.0)
TINY_SCALE = 10.0 ** TINY_SCALE_EXPONENTS[1]
HUGE_SCALE_EXPONENTS = (3.0, 8.0)
# The rescale factor input scale / output scale of an output quantized off its fit: 10 ** e for e drawn here.
OFF_FIT_EXPONENTS = (-8.0, 8.0)
# How far each per-channel scale moves from the usual one (channels then differ by up to six orders of magnitude).
CHANNEL_SPREAD_EXPONENTS = (-3.0, 3.0)
# Scales moved off their fit stay within these (positive normal float32, with room for products).
_SCALE_FLOOR, _SCALE_CEILING = 1e-18, 1e16
# Any scale generation gives: positive normal float32 values (the smallest is about 1.2e-38) with room to spare,
# finite, far below the float32 maximum (about 3.4e38).
_USABLE_SCALES = (1e-36, 1e32)


def usable_scale(scale: float) -> bool:
    """True for a scale generation may give an operand (a product of scales, a widened fit may fall outside)."""
    return _USABLE_SCALES[0] <= scale <= _USABLE_SCALES[1]


# Saturated float values reach 10 ** e times ModelConfig.judged_abs_value, e drawn here.
SATURATED_FLOAT_EXPONENTS = (-1.5, 0.0)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Sizes around the vector widths of optimized kernels (4, 8, 16, 32 and 64 lanes): a full vector, one short of
# it and one past it (ModelConfig.vector_width_probability).
VECTOR_WIDTH_BANDS = ((1, 4), (7, 9), (15, 17), (31, 33), (63, 65))


def vector_width(src: Source) -> tuple[int, str]:
    """A size from one of the vector-width bands, and the band's feature name."""
    lo, hi = src.choice(VECTOR_WIDTH_BANDS)
    return src.integer(lo, hi), f"vector_width:{lo}-{hi}"


def log_uniform(src: Source, exponents: tuple[float, float]) -> float:
    """10 ** e for e drawn in [lo, hi] (the minimal answer is 10 ** lo)."""
    return 10.0 ** src.floats(exponents[0], exponents[1], width=64)


def extreme_quant_params(src: Source, operand_type: int, lo: float, hi: float) -> tuple[float, int, str]:
    """(scale, zero point, what) of an extreme quantization for a new operand: a tiny or huge scale, or (asymmetric
    types) a zero point at a bound of the type, or both; `what` names the extreme drawn."""
    qmin, qmax = STORED_RANGE[operand_type]
    scale, zero_point = quant_params(src, operand_type, lo, hi)
    asymmetric = operand_type in QUANT_ASYMM
    kind = src.integer(0, 3 if asymmetric else 1)
    if kind == 0 or kind == 3:
        scale, what = f32(log_uniform(src, TINY_SCALE_EXPONENTS)), "tiny_scale"
    elif kind == 1:
        scale, what = f32(log_uniform(src, HUGE_SCALE_EXPONENTS)), "huge_scale"
    else:
        what = "zero_point_bound"
    if kind >= 2:
        zero_point = qmax if src.boolean() else qmin
    return scale, zero_point, what


def off_fit_quant(
    src: Source, operand_type: int, scale: float, zero_point: int, input_scale: float | None, coarser: bool = False
) -> tuple[float, int, str]:
    """An extreme variant of a fitted output quantization (scale, zero point): (asymmetric types) its zero point at
    a bound of the type, or its scale moved off the fit so that input_scale / output scale is 10 ** e for e in
    OFF_FIT_EXPONENTS (the fitted scale moved by that factor when no input_scale is given); with `coarser`, only
    ever to a larger scale than the fit (a rescale factor no larger than the fitted one). `what` names the extreme
    drawn."""
    if operand_type in QUANT_ASYMM and src.integer(0, 2) == 0:
        qmin, qmax = STORED_RANGE[operand_type]
        return scale, qmax if src.boolean() else qmin, "zero_point_bound"
    exponents = (0.0, OFF_FIT_EXPONENTS[1]) if coarser else OFF_FIT_EXPONENTS
    factor = log_uniform(src, exponents)
    moved = input_scale / factor if input_scale and not coarser else scale * factor
    return f32(min(max(moved, _SCALE_FLOOR), _SCALE_CEILING)), zero_point, "off_fit_scale"


def spread_channel_params(
    src: Source, channels: int, channel_dim: int, lo: float, hi: float
) -> SymmPerChannelQuantParams:
    """Per-channel symmetric scales that differ by orders of magnitude between channels."""
    magnitude = max(abs(lo), abs(hi), 1e-3) / 127
    scales = [f32(magnitude * log_uniform(src, CHANNEL_SPREAD_EXPONENTS)) for _ in range(channels)]
    return SymmPerChannelQuantParams(scales=scales, channel_dim=channel_dim)


def pile_on_bounds(src: Source, value: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """A copy of an integer array with about half of its elements moved to lo or hi (a quarter each)."""
    count = value.size
    if count == 0:
        return value
    picks = np.frombuffer(raw_bytes(src, count), dtype=np.uint8).reshape(value.shape) & 3
    out = np.where(picks == 0, lo, value)
    out = np.where(picks == 1, hi, out)
    return out.astype(value.dtype)


def stored_bounds(operand_type: int, scale: float, zero_point: int, lo: float, hi: float) -> tuple[int, int]:
    """The stored integers that represent reals in [lo, hi] (clipped to the type)."""
    qmin, qmax = STORED_RANGE[operand_type]
    a = math.ceil(lo / scale + zero_point)
    b = math.floor(hi / scale + zero_point)
    a, b = max(qmin, min(a, qmax)), max(qmin, min(b, qmax))
    if a > b:
        a = b = max(qmin, min(zero_point, qmax))
    return a, b


# Per (float dtype, lo, hi): every value float_array can give, indexed by its 16 bits (see _float_table).
_FLOAT_TABLES: dict[tuple, np.ndarray] = {}
# How often each range without a table was asked for: a table pays once a range comes back a few times.
_FLOAT_USES: dict[tuple, int] = {}
_TABLE_AFTER = 4
_MAX_TABLES = 64
_PLAIN = (float, int)
# Up to this many values, int_array and bool_array compute in plain Python.
_PLAIN_INTS = DIRECT_BYTES // 4
_U32S = [struct.Struct(f"<{n}I") for n in range(_PLAIN_INTS + 1)]  # n little-endian uint32 values
# (min, max) of each integer storage dtype.
_INT_BOUNDS = {
    d: (int(np.iinfo(d).min), int(np.iinfo(d).max))
    for d in (numpy_dtype(t) for t in (T.TENSOR_INT32, T.INT32, T.UINT32, *STORED_RANGE))
}


def _float_values(u16: np.ndarray, dtype: np.dtype, lo: float, hi: float) -> np.ndarray:
    """The float of each 16-bit draw (as float_array defines them), as a flat array of `dtype`."""
    span = hi - lo
    u = u16 * (1.0 / 65536.0)
    if lo < 0.0 < hi:
        u += -lo / span  # shift so that zero bytes land on 0.0
        u %= 1.0
    # u * span + lo, in place (the same two roundings).
    u *= span
    u += lo
    out = u.astype(dtype)
    # Rounding to a narrow type may step just past an end of the range; clip in that type (the method np.clip
    # dispatches to, without the dispatch).
    out.clip(dtype.type(lo), dtype.type(hi), out=out)
    return out


def _float_table(dtype: np.dtype, lo: float, hi: float) -> np.ndarray:
    """All 65536 values of a range, computed as float_array computes them (element-wise, so each entry is what
    float_array gives for those 16 bits at any position of any array)."""
    return _float_values(np.arange(65536, dtype=_U2), dtype, lo, hi)


def _table_key(dtype: np.dtype, lo: float, hi: float) -> tuple | None:
    """The key of a range's table; None for bounds whose equal keys could give different values (numpy scalars
    compute in their own precision)."""
    if type(lo) not in _PLAIN or type(hi) not in _PLAIN:
        return None
    if lo and hi:
        return (dtype, lo, hi)
    # -0.0 == 0.0, but the clip can keep the sign of the bound.
    return (dtype, lo, hi, math.copysign(1.0, lo), math.copysign(1.0, hi))


def float_array(src: Source, dtype: np.dtype, shape: tuple[int, ...], lo: float, hi: float) -> np.ndarray:
    """Floats in [lo, hi] of a float dtype; zero bytes give 0.0 when the range holds it, else lo."""
    u16 = np.frombuffer(raw_bytes(src, 2 * math.prod(shape)), _U2)  # (dtype by position: a keyword costs more)
    key = _table_key(dtype, lo, hi)
    table = _FLOAT_TABLES.get(key) if key is not None else None
    if table is None:
        uses = _FLOAT_USES.get(key, 0) + 1 if key is not None else 0
        if uses < _TABLE_AFTER:
            if key is not None:
                if len(_FLOAT_USES) > 4 * _MAX_TABLES:
                    _FLOAT_USES.clear()
                _FLOAT_USES[key] = uses
            return _float_values(u16, dtype, lo, hi).reshape(shape)
        if len(_FLOAT_TABLES) >= _MAX_TABLES:
            _FLOAT_TABLES.clear()
        table = _FLOAT_TABLES[key] = _float_table(dtype, lo, hi)
    # A lookup per value instead of eight array operations on a handful of values.
    return table.take(u16).reshape(shape)


def int_array(src: Source, dtype: np.dtype, shape: tuple[int, ...], lo: int, hi: int) -> np.ndarray:
    """Integers in [lo, hi]; zero bytes give 0 when the range holds it, else lo."""
    count = math.prod(shape)
    if hi <= lo:
        return np.full(shape, lo, dtype=dtype)
    raw = raw_bytes(src, 4 * count)
    span = hi - lo + 1
    shift = -lo if lo < 0 <= hi else 0
    if count <= _PLAIN_INTS:
        bounds = _INT_BOUNDS.get(dtype)
        if bounds is not None and bounds[0] <= lo and hi <= bounds[1]:
            # What the array arithmetic below gives, element by element in Python: on a few values that is
            # several times cheaper than five array operations (every value fits the dtype, as astype keeps it).
            values = [lo + (u + shift) % span for u in _U32S[count].unpack(raw)]
            return np.array(values, dtype=dtype).reshape(shape)
    u = np.frombuffer(raw, dtype=_U4).astype(np.int64)
    # lo + (u + shift) % span, in place.
    if shift:
        u += shift
    u %= span
    if lo:
        u += lo
    return u.astype(dtype).reshape(shape)


def bool_array(src: Source, shape: tuple[int, ...]) -> np.ndarray:
    """Booleans, one byte each (its lowest bit)."""
    raw = raw_bytes(src, math.prod(shape))
    if len(raw) <= _PLAIN_INTS:
        return np.array([b & 1 for b in raw], dtype=np.bool_).reshape(shape)
    return (np.frombuffer(raw, dtype=np.uint8) & 1).astype(np.bool_).reshape(shape)


def tensor_value(
    src: Source,
    operand_type: int,
    shape: tuple[int, ...],
    real_range: tuple[float, float] | None,
    int_range: tuple[int, int] | None = None,
    scale: float = 0.0,
    zero_point: int = 0,
    channel: SymmPerChannelQuantParams | None = None,
) -> np.ndarray:
    """A stored value for an operand of this type and shape (scalars have shape ())."""
    dtype = numpy_dtype(operand_type)
    lo, hi = real_range or DEFAULT_RANGE
    if operand_type in _BOOLS:
        return bool_array(src, shape)
    if operand_type in FLOAT_TENSORS or operand_type in FLOAT_SCALARS:
        return float_array(src, dtype, shape, lo, hi)
    if operand_type in QUANTIZED:
        if channel is not None:
            # Per-channel: draw the stored range of the narrowest channel so every channel stays within [lo, hi].
            smallest = min(channel.scales)
            a, b = stored_bounds(operand_type, smallest, 0, lo, hi)
            return int_array(src, dtype, shape, a, b)
        a, b = stored_bounds(operand_type, scale, zero_point, lo, hi)
        return int_array(src, dtype, shape, a, b)
    ilo, ihi = int_range if int_range is not None else (math.ceil(lo), math.floor(hi))
    if ilo > ihi:
        ilo = ihi = int(math.ceil(lo))
    if operand_type == _UINT32:
        ilo = max(ilo, 0)
    return int_array(src, dtype, shape, int(ilo), int(ihi))


def real_extent(value: np.ndarray, operand_type: int, scale: float, zero_point: int) -> tuple[float, float]:
    """(min, max) of the real values a stored array represents ((0, 0) when empty)."""
    if value.size == 0:
        return (0.0, 0.0)
    lo, hi = float(value.min()), float(value.max())
    if operand_type in QUANT_ASYMM or operand_type in QUANT_SYMM:
        return ((lo - zero_point) * scale, (hi - zero_point) * scale)
    return (lo, hi)
