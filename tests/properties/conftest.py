"""The property suite's device: one fault-free driver_under_test device per test module."""

from __future__ import annotations

import pytest

from driver_under_test import create_device


@pytest.fixture(scope="module")
def device():
    """A fault-free driver with default options, shared by a module's examples."""
    return create_device(faults=[])
