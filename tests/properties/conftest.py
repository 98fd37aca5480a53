"""The property suite's device: one fault-free device per driver variant and test module.

Every property runs on the bundled driver with its own kernels and with LiteRT behind the same HAL plumbing;
NNFUZZ_PROPERTY_DRIVERS (comma-separated `module:factory` specs) runs the suite on other drivers instead.
"""

from __future__ import annotations

import os

import pytest

from harness.drivers import create_device

DRIVERS = ("driver_under_test:create_device", "driver_under_test:create_litert_device")


def _drivers() -> list[str]:
    chosen = os.environ.get("NNFUZZ_PROPERTY_DRIVERS", "")
    return [d.strip() for d in chosen.split(",") if d.strip()] or list(DRIVERS)


@pytest.fixture(scope="module", params=_drivers())
def device(request: pytest.FixtureRequest):
    """A fault-free device of one driver variant, shared by a module's examples."""
    return create_device(request.param, faults=[])
