"""Values placed in shared memory that share bytes of a pool: they must agree there, or the memory holds other
values than the case says (the driver would compute with what the oracle was not given)."""

from __future__ import annotations

from collections.abc import Iterable

# One value in place: (whose it is, pool index, offset, bytes).
Placed = tuple[int, int, int, bytes]


def disagreement(placed: Iterable[Placed], pool: int, offset: int, raw: bytes) -> tuple[int, int, int] | None:
    """(whose, first byte, end) of the first placed value that shares bytes with `raw` at (pool, offset) and holds
    others there; None when every overlap agrees."""
    for who, other_pool, start, value in placed:
        lo, hi = max(offset, start), min(offset + len(raw), start + len(value))
        if other_pool == pool and lo < hi and raw[lo - offset : hi - offset] != value[lo - start : hi - start]:
            return who, lo, hi
    return None
