"""driver_under_test: an NN HAL 1.3-style driver, the system nnfuzz hunts bugs in.

It imports nothing of the harness but `harness.hal`. Start it with `create_device(faults=[...], **options)`.
"""

from __future__ import annotations

from collections.abc import Iterable

# Every module that defines faults is imported here, so the catalogue is complete whatever is used first (the
# numpy backend's kernels plant faults too).
from driver_under_test import burst, cache, memory_domain  # noqa: F401
from driver_under_test.backends import numpy  # noqa: F401
from driver_under_test.device import DriverDevice
from driver_under_test.faults import CATALOGUE, resolve
from driver_under_test.options import build_options


def create_device(faults: Iterable[str] | None = None, **options: object) -> DriverDevice:
    """A new device; `faults` names catalogued faults (default: NNFUZZ_FAULTS), `options` set DeviceOptions."""
    return DriverDevice(build_options(**options), resolve(faults))


__all__ = ["CATALOGUE", "DriverDevice", "create_device"]
