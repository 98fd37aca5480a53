"""Source: where generators get their choices. One generator serves Atheris, Hypothesis and benchmarks.

Every implementation answers every call, even when its underlying choices have run out: then it returns the
smallest answer (lo, False, the first element, lo, b"") so that generation always terminates and stays small.

The helpers below draw on any Source: biased coins, weighted choices, permutations. Each maps the minimal
answers to the simplest outcome: a coin with probability p < 1 comes up False, a weighted choice picks its first
entry, a permutation is the identity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")


class GenerationRejected(Exception):
    """The choices drawn cannot make a case of this kind (retry with other choices; never a finding)."""


class Source(Protocol):
    """The choice interface every generator is written against."""

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi] (inclusive)."""
        ...

    def boolean(self) -> bool:
        """True or False."""
        ...

    def choice(self, seq: Sequence[T]) -> T:
        """One element of a non-empty sequence."""
        ...

    def floats(self, lo: float, hi: float, *, width: int = 32) -> float:
        """A finite float in [lo, hi], representable at `width` bits (16, 32 or 64)."""
        ...

    def bytes(self, n: int) -> bytes:
        """Up to n bytes (fewer only when choices run out)."""
        ...

    @property
    def exhausted(self) -> bool:
        """True once the underlying choices have run out (answers are then minimal)."""
        ...


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


def permutation(src: Source, n: int) -> list[int]:
    """A permutation of range(n) (the identity for minimal answers)."""
    rest = list(range(n))
    out = []
    while rest:
        out.append(rest.pop(src.integer(0, len(rest) - 1)))
    return out
