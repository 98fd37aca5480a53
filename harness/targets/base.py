"""Target: the shape every fuzz target has, and the registry of targets.

A target turns a Source into a Case (`decode`, harness.case.Case) and judges a driver on it (`run`). The same target
object backs the Atheris script, the Hypothesis property test and `nnfuzz repro`. Registering two targets of one name
is an error.
"""

from __future__ import annotations

from typing import Protocol

from harness.case import Case
from harness.gen.source import Source
from harness.hal import Device
from harness.oracle.verdict import Verdict


class Target(Protocol):
    """A fuzz target."""

    name: str

    def decode(self, source: Source) -> Case:
        """Draw one case from the source (GenerationRejected if the choices cannot make one)."""
        ...

    def run(self, case: Case, device: Device) -> Verdict:
        """Drive the device with the case through the HAL interface and judge it with the oracle."""
        ...


TARGETS: dict[str, Target] = {}


def register_target(target: Target) -> Target:
    """Add a target to the registry; a duplicate name is an error."""
    if target.name in TARGETS:
        raise RuntimeError(f"target {target.name!r} registered twice")
    TARGETS[target.name] = target
    return target
