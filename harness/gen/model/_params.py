"""Parameter values from the catalogue's "params" hints (harness/ops/HINTS.md): lists, ranges and structural
kinds computed from the operation's data input (input 0 unless a recipe decides otherwise).

`param_value` returns a Python value or array for the position, or OMIT for an optional parameter left out. It
reads the operation being drawn through `Drawing`, the part of OpDraw it needs: OpDraw's module imports this one,
and this one imports nothing of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from harness.gen.source import permutation
from harness.hal import OperandType

if TYPE_CHECKING:
    from harness.gen.model._config import ModelConfig
    from harness.gen.model._graph import Gen, GenOperand
    from harness.gen.source import Source
    from harness.ops import Arg

T = OperandType
_FLOAT_WIDTH = {T.FLOAT32: 32, T.FLOAT16: 16, T.TENSOR_FLOAT32: 32, T.TENSOR_FLOAT16: 16}
# Enum members as module constants (an attribute of an Enum class is several times slower).
_BOOL = T.BOOL
_TENSOR_INT32 = T.TENSOR_INT32


class Drawing(Protocol):
    """What a parameter kind reads of the operation being drawn (an OpDraw): the generation state, its source
    and configuration, the Arg of each input position, and the operands set so far."""

    gen: Gen
    src: Source
    cfg: ModelConfig
    args: Sequence[Arg]

    def get(self, i: int) -> GenOperand | None:
        """The operand at input position i (None when omitted or unset)."""
        ...

    def value(self, i: int) -> np.ndarray | None:
        """The actual value at input position i."""
        ...


class _Omit:
    """Marker: an optional input without a value."""

    def __repr__(self) -> str:
        return "OMIT"


# What param_value returns to leave an optional parameter out, and what OpDraw keeps in an omitted input's slot.
OMIT = _Omit()


def data_shape(d: Drawing, i: int = 0) -> tuple[int, ...]:
    """The actual shape of data input i (() if it is not set)."""
    v = d.value(i)
    return () if v is None else tuple(v.shape)


def _scalar_from_range(d: Drawing, i: int, lo: float, hi: float) -> Any:
    t = int(d.args[i].types[0])
    if t in _FLOAT_WIDTH:
        return d.src.floats(float(lo), float(hi), width=_FLOAT_WIDTH[t])
    if t == _BOOL:
        return bool(d.src.integer(int(lo), int(hi)))
    return d.src.integer(math.ceil(lo), math.floor(hi))


def _fused_activation(d: Drawing, i: int) -> Any:
    first = d.get(0)
    if first is not None and first.type == _TENSOR_INT32:
        return 0
    return d.src.integer(0, 3)


def _axis(d: Drawing, i: int) -> Any:
    r = len(data_shape(d))
    return d.src.integer(-r, r - 1) if r else 0


def _dim_index(d: Drawing, i: int) -> Any:
    return d.src.integer(0, max(len(data_shape(d)) - 1, 0))


def _axis_expand(d: Drawing, i: int) -> Any:
    r = len(data_shape(d))
    return d.src.integer(-(r + 1), r)


def _axes(d: Drawing, i: int) -> Any:
    r = len(data_shape(d))
    count = d.src.integer(1, max(r, 1))
    return np.array([d.src.integer(-r, r - 1) for _ in range(count)], dtype=np.int32)


def _squeeze_axes(d: Drawing, i: int) -> Any:
    dims = data_shape(d)
    ones = [k for k, n in enumerate(dims) if n == 1]
    if not ones or d.src.boolean():
        return OMIT
    chosen = [k for k in ones if d.src.boolean()] or ones[:1]
    return np.array([k - len(dims) if d.src.boolean() else k for k in chosen], dtype=np.int32)


def _bool(d: Drawing, i: int) -> Any:
    return d.src.boolean()


def _layout(d: Drawing, i: int) -> Any:
    return d.src.boolean()


def factorize(d: Drawing, count: int, rank: int) -> list[int]:
    """A shape of the given rank holding `count` elements (prime factors spread at random)."""
    factors, n, p = [], count, 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    dims = [1] * rank
    for f in factors:
        dims[d.src.integer(0, rank - 1)] *= f
    return dims


def _reshape(d: Drawing, i: int) -> Any:
    count = math.prod(data_shape(d))
    rank = d.src.integer(1, d.cfg.max_rank)
    dims = factorize(d, count, rank)
    if d.src.boolean():
        dims[d.src.integer(0, rank - 1)] = -1
    return np.array(dims, dtype=np.int32)


def _permutation(d: Drawing, i: int) -> Any:
    r = len(data_shape(d))
    if d.args[i].optional and d.gen.chance(0.3):
        return OMIT
    return np.array(permutation(d.src, r), dtype=np.int32)


def _paddings(d: Drawing, i: int) -> Any:
    r = len(data_shape(d))
    return np.array([[d.src.integer(0, 2), d.src.integer(0, 2)] for _ in range(r)], dtype=np.int32).reshape(r, 2)


def _multiples(d: Drawing, i: int) -> Any:
    size = math.prod(data_shape(d))
    out = []
    for _ in data_shape(d):
        m = d.src.integer(1, 3)
        if size * m > d.gen.max_elements:
            m = 1  # keep the tiled tensor within the size limit
        size *= m
        out.append(m)
    return np.array(out, dtype=np.int32)


def _num_splits(d: Drawing, i: int) -> Any:
    dims = data_shape(d)
    axis = d.value(1)
    size = dims[int(axis) % len(dims)] if axis is not None and dims else 1
    return d.src.choice([k for k in range(1, size + 1) if size % k == 0])


def _slice_begin(d: Drawing, i: int) -> Any:
    return np.array([d.src.integer(0, max(n - 1, 0)) for n in data_shape(d)], dtype=np.int32)


def _slice_size(d: Drawing, i: int) -> Any:
    begin = d.value(1)
    out = []
    for n, b in zip(data_shape(d), begin if begin is not None else [0] * len(data_shape(d))):
        out.append(-1 if d.src.integer(0, 3) == 0 else d.src.integer(1, max(n - int(b), 1)))
    return np.array(out, dtype=np.int32)


def _indices(d: Drawing, i: int) -> Any:
    dims = data_shape(d)
    axis = d.value(1)
    size = dims[int(axis) % len(dims)] if axis is not None and dims else 1
    rank = d.src.integer(1, 2)
    shape = tuple(d.src.integer(1, 3) for _ in range(rank))
    return np.array([d.src.integer(0, size - 1) for _ in range(math.prod(shape))], dtype=np.int32).reshape(shape)


def _k(d: Drawing, i: int) -> Any:
    dims = data_shape(d)
    return d.src.integer(1, dims[-1] if dims else 1)


KINDS: dict[str, Callable[[Drawing, int], Any]] = {
    "fused_activation": _fused_activation,
    "axis": _axis,
    "dim_index": _dim_index,
    "axis_expand": _axis_expand,
    "axes": _axes,
    "squeeze_axes": _squeeze_axes,
    "bool": _bool,
    "layout": _layout,
    "reshape": _reshape,
    "permutation": _permutation,
    "paddings": _paddings,
    "multiples": _multiples,
    "num_splits": _num_splits,
    "slice_begin": _slice_begin,
    "slice_size": _slice_size,
    "indices": _indices,
    "k": _k,
}


def _default(d: Drawing, i: int) -> Any:
    """A parameter without a hint: a small neutral value of its type."""
    t = int(d.args[i].types[0])
    if t == _BOOL:
        return d.src.boolean()
    if t in _FLOAT_WIDTH:
        return d.src.floats(0.5, 2.0, width=_FLOAT_WIDTH[t])
    return 0


def param_value(d: Drawing, i: int, kind: Any) -> Any:
    """A value for parameter position i from its hint (or a neutral default); OMIT to leave it out."""
    if kind is None:
        value = _default(d, i)
    elif isinstance(kind, list):
        value = d.src.choice(kind)
        if int(d.args[i].types[0]) == _BOOL:
            value = bool(value)
    elif isinstance(kind, tuple):
        value = _scalar_from_range(d, i, *kind)
    elif kind in KINDS:
        value = KINDS[kind](d, i)
    else:
        raise KeyError(f"no generator for parameter kind {kind!r}")
    return value
