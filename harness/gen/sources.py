"""The Source implementations: seeded random (benchmarks, corpus seeds), fuzzer bytes (Atheris) and Hypothesis.

All of them follow the protocol in harness.gen.source: every call gets an answer, and once the underlying choices
run out the answers are minimal (lo, False, the first element, lo, b""), so generation terminates and stays small.
Floats are always representable at the requested width and inside [lo, hi].
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

_WIDTH_DTYPES = {16: np.float16, 32: np.float32, 64: np.float64}


def width_bounds(lo: float, hi: float, width: int) -> tuple[float, float]:
    """[lo, hi] narrowed to the nearest values representable at `width` bits that lie inside it."""
    dtype = _WIDTH_DTYPES[width]
    if width == 64:
        return float(lo), float(hi)
    with np.errstate(over="ignore"):
        a, b = dtype(lo), dtype(hi)
    if float(a) < lo:
        a = np.nextafter(a, dtype(np.inf))
    if float(b) > hi:
        b = np.nextafter(b, dtype(-np.inf))
    if float(a) > float(b) or not (np.isfinite(a) and np.isfinite(b)):
        # No finite representable value inside [lo, hi]: fall back to the finite value nearest lo.
        top = float(np.finfo(dtype).max)
        nearest = float(dtype(min(max(lo, -top), top)))
        return (nearest, nearest) if float(a) > float(b) else (max(float(a), -top), min(float(b), top))
    return float(a), float(b)


_F32 = struct.Struct("<f")


def _at_width(x: float, lo: float, hi: float, width: int) -> float:
    """x rounded to `width` bits and kept inside [lo, hi]."""
    if width == 32:
        try:
            y = _F32.unpack(_F32.pack(x))[0]
        except OverflowError:
            y = math.copysign(math.inf, x)
    elif width == 16:
        with np.errstate(over="ignore"):
            y = float(np.float16(x))
    else:
        y = float(x)
    if not lo <= y <= hi:
        a, b = width_bounds(lo, hi, width)
        y = min(max(y, a), b)
    return y


# Per probability strictly between 0 and 1: the draw in [0, 999] from which the coin comes up True.
_THRESHOLDS: dict[float, int] = {}


def coin_threshold(p: float) -> int | bool:
    """The draw in [0, 999] from which a coin of probability p comes up True (as harness.gen.source.chance tosses
    it), or the outcome itself for p <= 0 or p >= 1, where nothing is drawn."""
    threshold = _THRESHOLDS.get(p) if type(p) is float else None
    if threshold is None:
        if p <= 0.0:
            return False
        if p >= 1.0:
            return True
        threshold = 1000 - round(p * 1000)
        if type(p) is float:
            if len(_THRESHOLDS) > 256:
                _THRESHOLDS.clear()
            _THRESHOLDS[p] = threshold
    return threshold


class RandomSource:
    """Choices from a seeded pseudo-random generator; after `budget` choices it is exhausted."""

    __slots__ = ("_rng", "_random", "_bits", "_left")

    def __init__(self, seed: int, budget: int = 10_000) -> None:
        self._rng = random.Random(seed)
        self._random = self._rng.random
        self._bits = self._rng.getrandbits
        self._left = budget

    def _spend(self) -> bool:
        self._left -= 1
        return self._left >= 0

    # The choices spend inline (as _spend does): they are called tens of times per model.

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi] (inclusive)."""
        if hi <= lo:
            return lo
        self._left -= 1
        if self._left < 0:
            return lo
        return lo + int(self._random() * (hi - lo + 1))

    def boolean(self) -> bool:
        """True or False."""
        self._left -= 1
        return self._left >= 0 and self._random() < 0.5

    def chance(self, p: float) -> bool:
        """The biased coin of harness.gen.source.chance (integer(0, 999) >= 1000 - round(p * 1000), nothing drawn
        for p <= 0 or p >= 1), in one call: generation tosses a few dozen per model."""
        threshold = coin_threshold(p)
        if threshold.__class__ is bool:
            return threshold  # type: ignore[return-value]
        # integer(0, 999), inline.
        self._left -= 1
        if self._left < 0:
            return 0 >= threshold
        # int(x) >= threshold is x >= threshold for an x >= 0 and an integer threshold: no int() needed.
        return self._random() * 1000 >= threshold

    def choice(self, seq: Sequence[T]) -> T:
        """One element of a non-empty sequence."""
        if len(seq) == 1:
            return seq[0]
        self._left -= 1
        if self._left < 0:
            return seq[0]
        return seq[int(self._random() * len(seq))]

    def floats(self, lo: float, hi: float, *, width: int = 32) -> float:
        """A finite float in [lo, hi], representable at `width` bits."""
        self._left -= 1
        if self._left < 0:
            return _at_width(lo, lo, hi, width)
        return _at_width(self._rng.uniform(lo, hi), lo, hi, width)

    def bytes(self, n: int) -> bytes:
        """n random bytes (none once exhausted)."""
        if n <= 0:
            return b""
        self._left -= 1
        if self._left < 0:
            return b""
        # Random.randbytes(n), inline (it is this one line of Python).
        return self._bits(n * 8).to_bytes(n, "little")

    @property
    def exhausted(self) -> bool:
        """True once the budget of choices is spent."""
        return self._left < 0


class BytesSource:
    """Choices read from fuzzer bytes, front to back: fast, deterministic, no Hypothesis involved.

    An integer takes as many little-endian bytes as its range needs (reduced modulo the range), a boolean one byte,
    a float two bytes (four at width 32/64) spread over [lo, hi], bytes(n) the next n bytes.
    """

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._pos = 0

    def _take(self, n: int) -> int | None:
        pos = self._pos
        if pos >= len(self._data):
            return None
        self._pos = pos + n
        return int.from_bytes(self._data[pos : pos + n], "little")

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi] (inclusive)."""
        span = hi - lo
        if span <= 0:
            return lo
        raw = self._take((span.bit_length() + 7) >> 3)
        return lo if raw is None else lo + raw % (span + 1)

    def boolean(self) -> bool:
        """True or False."""
        raw = self._take(1)
        return bool(raw & 1) if raw is not None else False

    def choice(self, seq: Sequence[T]) -> T:
        """One element of a non-empty sequence."""
        return seq[self.integer(0, len(seq) - 1)]

    def floats(self, lo: float, hi: float, *, width: int = 32) -> float:
        """A finite float in [lo, hi], representable at `width` bits."""
        n = 2 if width == 16 else 4
        raw = self._take(n)
        if raw is None or hi <= lo:
            return _at_width(lo, lo, hi, width)
        fraction = raw / float((1 << (8 * n)) - 1)
        return _at_width(lo + fraction * (hi - lo), lo, hi, width)

    def bytes(self, n: int) -> bytes:
        """The next n bytes (fewer at the end of the data)."""
        pos = self._pos
        self._pos = pos + max(n, 0)
        return self._data[pos : pos + max(n, 0)]

    @property
    def exhausted(self) -> bool:
        """True once every byte has been read."""
        return self._pos >= len(self._data)

    @property
    def consumed(self) -> int:
        """Bytes read so far (may exceed the data length when reads ran past its end)."""
        return min(self._pos, len(self._data))


class HypothesisSource:
    """Choices drawn from a Hypothesis `data` object (st.data()) or the `draw` function of an st.composite, with
    strategies that shrink towards the minimum."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self._draw = data.draw if hasattr(data, "draw") else data
        self._st = st

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi] (inclusive)."""
        if hi <= lo:
            return lo
        return self._draw(self._st.integers(lo, hi))

    def boolean(self) -> bool:
        """True or False."""
        return self._draw(self._st.booleans())

    def choice(self, seq: Sequence[T]) -> T:
        """One element of a non-empty sequence (shrinks towards the first)."""
        return seq[self.integer(0, len(seq) - 1)]

    def floats(self, lo: float, hi: float, *, width: int = 32) -> float:
        """A finite float in [lo, hi], representable at `width` bits."""
        a, b = width_bounds(lo, hi, width)
        if b <= a:
            return a
        return self._draw(self._st.floats(a, b, width=width, allow_nan=False, allow_infinity=False))

    def bytes(self, n: int) -> bytes:
        """Exactly n bytes."""
        if n <= 0:
            return b""
        return self._draw(self._st.binary(min_size=n, max_size=n))

    @property
    def exhausted(self) -> bool:
        """Never: Hypothesis itself bounds the size of an example."""
        return False


class RecordingSource:
    """Wraps another source and records every choice, for printing a case's decisions or replaying them."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[str, tuple, Any]] = []

    def _record(self, name: str, args: tuple, result: Any) -> Any:
        self.calls.append((name, args, result))
        return result

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi] (inclusive)."""
        return self._record("integer", (lo, hi), self.inner.integer(lo, hi))

    def boolean(self) -> bool:
        """True or False."""
        return self._record("boolean", (), self.inner.boolean())

    def choice(self, seq: Sequence[T]) -> T:
        """One element of a non-empty sequence."""
        return self._record("choice", (len(seq),), self.inner.choice(seq))

    def floats(self, lo: float, hi: float, *, width: int = 32) -> float:
        """A finite float in [lo, hi], representable at `width` bits."""
        return self._record("floats", (lo, hi, width), self.inner.floats(lo, hi, width=width))

    def bytes(self, n: int) -> bytes:
        """Up to n bytes."""
        return self._record("bytes", (n,), self.inner.bytes(n))

    @property
    def exhausted(self) -> bool:
        """Whether the wrapped source is exhausted."""
        return self.inner.exhausted

    def describe(self, limit: int = 200) -> str:
        """The recorded choices, one per line (at most `limit` lines)."""
        lines = []
        for name, args, result in self.calls[:limit]:
            shown = result.hex() if isinstance(result, bytes | bytearray) else repr(result)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            lines.append(f"{name}{args} -> {shown}")
        if len(self.calls) > limit:
            lines.append(f"... {len(self.calls) - limit} more")
        return "\n".join(lines)
