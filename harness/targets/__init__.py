"""Fuzz targets: decode a Source into a Case, drive a driver through the HAL interface, judge with the oracle.

Importing this package registers every target in TARGETS. `run_atheris_one` is what the fuzz scripts call.
`prepare` is the targets' way of preparing a model, for benchmarks and tests that drive a driver as a target does.
"""

from __future__ import annotations

from harness.gen.source import GenerationRejected
from harness.gen.sources import BytesSource
from harness.hal import Device
from harness.oracle.verdict import RuleViolation
from harness.targets import (  # noqa: F401  (each registers its target)
    burst,
    burst_packets,
    cache,
    differential,
    execution,
    memory_domain,
    request,
    validation,
)
from harness.targets._common import prepare
from harness.targets.base import TARGETS, Target, register_target


def get_target(name: str) -> Target:
    """The registered target of this name (KeyError naming the known ones)."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"no target {name!r}; known: {', '.join(sorted(TARGETS))}") from None


def run_atheris_one(target: Target, data: bytes, device: Device) -> None:
    """One fuzzer input: decode, run; returns on SUCCESS or a rejected draw, raises RuleViolation otherwise."""
    try:
        case = target.decode(BytesSource(data))
    except GenerationRejected:
        return
    try:
        verdict = target.run(case, device)
    finally:
        case.close()
    if not verdict.ok:
        raise RuleViolation(verdict)


__all__ = [
    "TARGETS",
    "Target",
    "get_target",
    "prepare",
    "register_target",
    "run_atheris_one",
]
