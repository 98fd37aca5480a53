"""Preparation mutations: prepareModel's execution preference (V21) or priority (V22) outside its enumeration."""

from __future__ import annotations

from harness.gen.mutations._registry import mutation
from harness.gen.source import Source
from harness.hal import ExecutionPreference, Priority

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _outside(enum: type[ExecutionPreference] | type[Priority], source: Source) -> int:
    """A value just below, just above or far outside the enumeration's range."""
    lo, hi = min(enum), max(enum)
    return source.choice([lo - 1, hi + 1, hi + source.integer(2, 1000), _INT32_MAX, _INT32_MIN])


@mutation(
    "preference_out_of_range", "V21", "preparation", "the execution preference is outside LOW_POWER..SUSTAINED_SPEED"
)
def _preference(source: Source) -> tuple[int, int]:
    return _outside(ExecutionPreference, source), int(source.choice(list(Priority)))


@mutation("priority_out_of_range", "V22", "preparation", "the priority is outside LOW..HIGH")
def _priority(source: Source) -> tuple[int, int]:
    return int(source.choice(list(ExecutionPreference))), _outside(Priority, source)
