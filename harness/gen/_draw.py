"""Small drawing helpers on top of a Source: biased coins, weighted choices, shapes, raw bytes for arrays.

Every helper maps the minimal answer of a source (0, False, the first element) to the simplest outcome: a coin
with probability p < 1 comes up False, a weighted choice picks its first entry, a shape has its lowest rank and
dimensions of 1, raw bytes are zeros.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

from harness.gen.source import Source

T = TypeVar("T")

# Arrays up to this many bytes read their bytes from the source; larger ones expand a 4-byte seed, so a fuzzer's
# input is not spent on tensor contents.
DIRECT_BYTES = 64


def chance(src: Source, p: float) -> bool:
    """True with probability p (False for the minimal answer whenever p < 1)."""
    if p <= 0.0:
        return False
    if p >= 1.0:
        return True
    return src.integer(0, 999) >= 1000 - round(p * 1000)


def weighted(src: Source, table: Sequence[tuple[T, float]]) -> T:
    """One item of [(item, weight), ...] with probability proportional to its weight (the first when minimal)."""
    live = [(item, w) for item, w in table if w > 0]
    if len(live) == 1:
        return live[0][0]
    total = sum(w for _, w in live)
    scale = 1000.0 / total
    pick = src.integer(0, 999)
    acc = 0.0
    for item, w in live:
        acc += w * scale
        if pick < acc:
            return item
    return live[-1][0]


class Weights:
    """A fixed weighted() table with its running totals worked out once: `pick` draws exactly what weighted()
    draws from the same table (the same float sums, in the same order)."""

    __slots__ = ("_items", "_bounds")

    def __init__(self, table: Sequence[tuple[T, float]]) -> None:
        live = [(item, w) for item, w in table if w > 0]
        self._items = tuple(item for item, _ in live)
        bounds = []
        if len(live) > 1:
            scale = 1000.0 / sum(w for _, w in live)
            acc = 0.0
            for _, w in live:
                acc += w * scale
                bounds.append(acc)
        self._bounds = tuple(bounds)

    def pick(self, src: Source) -> T:
        """One item, as weighted(src, table) would choose it."""
        items = self._items
        if len(items) == 1:
            return items[0]
        pick = src.integer(0, 999)
        for item, bound in zip(items, self._bounds):
            if pick < bound:
                return item
        return items[-1]


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


def shape(src: Source, rank: int, max_dim: int, min_dim: int = 1) -> tuple[int, ...]:
    """A shape of the given rank with every dimension in [min_dim, max_dim]."""
    hi = max(min_dim, max_dim)
    integer = src.integer
    return tuple([integer(min_dim, hi) for _ in range(rank)])


def permutation(src: Source, n: int) -> list[int]:
    """A permutation of range(n) (the identity for minimal answers)."""
    rest = list(range(n))
    out = []
    while rest:
        out.append(rest.pop(src.integer(0, len(rest) - 1)))
    return out
