"""Device options: what a driver instance accepts and its resource limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from driver_under_test.pools import ALL_KINDS
from driver_under_test.validation import Limits
from harness.hal import OperandType

VERSION = "nnfuzz-dut-1.0"


@dataclass(frozen=True)
class DeviceOptions:
    """Configuration of one device instance."""

    name: str = "nnfuzz-dut"
    version: str = VERSION
    # Memory kinds accepted for constants (model pools) and for execution arguments.
    constant_memory_kinds: tuple[str, ...] = ("ashmem", "mmap_fd", "hardware_buffer_blob")
    execution_memory_kinds: tuple[str, ...] = ALL_KINDS
    # Operand types the device computes on; an operation touching any other type is unsupported.
    operand_types: frozenset[int] = field(
        default_factory=lambda: frozenset(
            t for t in OperandType if t not in (OperandType.OEM, OperandType.TENSOR_OEM_BYTE)
        )
    )
    limits: Limits = field(default_factory=Limits)
    # How long a fenced execution waits for its fences before giving up (seconds).
    fence_wait_limit_s: float = 60.0
    # Compilation caching (D23, D24): off makes the device report no cache files and refuse prepareModelFromCache.
    caching: bool = True
    # Folder of the persistent {token -> model cache hash} store; None picks a per-user default.
    cache_dir: str | None = None
    # What runs prepared models (driver_under_test.backends): its name and its own options.
    backend: str = "numpy"
    backend_options: Mapping[str, object] = field(default_factory=dict)


def build_options(**overrides: object) -> DeviceOptions:
    """DeviceOptions from keyword overrides; unknown names are an error, not silently ignored."""
    known = set(DeviceOptions.__dataclass_fields__)
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise TypeError(f"unknown device option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if "operand_types" in overrides:
        overrides["operand_types"] = frozenset(int(t) for t in overrides["operand_types"])  # type: ignore[union-attr]
    for key in ("constant_memory_kinds", "execution_memory_kinds"):
        if key in overrides:
            kinds = tuple(overrides[key])  # type: ignore[arg-type]
            bad = [k for k in kinds if k not in ALL_KINDS]
            if bad:
                raise ValueError(f"{key}: unknown memory kind(s) {bad}; known: {list(ALL_KINDS)}")
            overrides[key] = kinds
    return DeviceOptions(**overrides)  # type: ignore[arg-type]
