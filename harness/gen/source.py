"""Source: where generators get their choices. One generator serves Atheris, Hypothesis and benchmarks.

Every implementation answers every call, even when its underlying choices have run out: then it returns the
smallest answer (lo, False, the first element, lo, b"") so that generation always terminates and stays small.
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
