"""HAL constants and limits."""

from __future__ import annotations

BYTE_SIZE_OF_CACHE_TOKEN = 32
MAX_NUMBER_OF_CACHE_FILES = 32

# Loop timeouts for WHILE, in nanoseconds (types.hal LoopTimeoutDurationNs).
LOOP_TIMEOUT_DEFAULT_NS = 2_000_000_000
LOOP_TIMEOUT_MAXIMUM_NS = 15_000_000_000

# Timing value meaning "not available" (UINT64_MAX).
NO_TIMING = 2**64 - 1

# Extension operand/operation types are (prefix << EXTENSION_TYPE_HIGH_BITS_SHIFT) | low bits.
EXTENSION_TYPE_LOW_BITS = 16
EXTENSION_TYPE_LOW_MASK = (1 << EXTENSION_TYPE_LOW_BITS) - 1
