"""Drivers built to misbehave, as `module:factory` specs for the runner's tests.

`crashing_device` aborts the process in prepare_model; `hanging_device` never returns from it; `toy_device` is
well-behaved unless started with one of its faults (the toy catalogue below), which plant those same bugs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from harness.hal import Capabilities, Device, DeviceType, ErrorStatus
from harness.hal.interfaces import PreparedModelCallback


@dataclass(frozen=True)
class ToyFault:
    """A toy catalogue entry (the shape of a driver's fault catalogue)."""

    name: str
    area: str
    description: str


CATALOGUE = {
    f.name: f
    for f in (
        ToyFault("abort_in_prepare", "robustness", "prepare_model aborts the process"),
        ToyFault("hang_in_prepare", "robustness", "prepare_model never returns"),
        ToyFault("reject_everything", "validation", "get_supported_operations refuses every model"),
    )
}


def _abort() -> None:
    os.abort()


def _spin() -> None:
    n = 0
    while True:  # the bug: a loop that never ends
        n += 1


class StubDevice(Device):
    """A device that answers every call with a plausible, empty result."""

    def __init__(self, faults: Iterable[str] = ()) -> None:
        self.faults = frozenset(faults or ())
        unknown = self.faults - set(CATALOGUE)
        if unknown:
            raise ValueError(f"unknown toy faults {sorted(unknown)}")

    def get_capabilities(self):
        return ErrorStatus.NONE, Capabilities()

    def get_version_string(self):
        return ErrorStatus.NONE, "stub"

    def get_type(self):
        return ErrorStatus.NONE, DeviceType.CPU

    def get_supported_extensions(self):
        return ErrorStatus.NONE, []

    def get_supported_operations(self, model):
        if "reject_everything" in self.faults:
            return ErrorStatus.INVALID_ARGUMENT, []
        return ErrorStatus.NONE, [True] * len(model.main.operations)

    def get_number_of_cache_files_needed(self):
        return ErrorStatus.NONE, 0, 0

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        if "abort_in_prepare" in self.faults:
            _abort()
        if "hang_in_prepare" in self.faults:
            _spin()
        callback.notify(ErrorStatus.GENERAL_FAILURE, None)
        return ErrorStatus.GENERAL_FAILURE

    def prepare_model_from_cache(self, deadline, model_cache, data_cache, token, callback: PreparedModelCallback):
        callback.notify(ErrorStatus.GENERAL_FAILURE, None)
        return ErrorStatus.GENERAL_FAILURE

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        return ErrorStatus.GENERAL_FAILURE, None, 0


def toy_device(faults: Iterable[str] | None = None) -> Device:
    """A stub device with toy faults."""
    return StubDevice(faults or ())


def crashing_device(faults: Iterable[str] | None = None) -> Device:
    """A device whose prepare_model calls os.abort()."""
    return StubDevice(["abort_in_prepare"])


def hanging_device(faults: Iterable[str] | None = None) -> Device:
    """A device whose prepare_model loops forever."""
    return StubDevice(["hang_in_prepare"])


def failing_factory(faults: Iterable[str] | None = None) -> Device:
    """A factory that cannot make a device."""
    raise RuntimeError("no such hardware")
