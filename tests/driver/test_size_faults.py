"""Faults in how the driver refuses huge run-time sizes (D26)."""

from __future__ import annotations

from driver_under_test import create_device
from harness.gen.huge import HUGE_MODELS
from harness.hal import DataLocation, ErrorStatus, MeasureTiming, Request, RequestArgument
from harness.hal.memory import create_ashmem
from tests.driver.fault_models import prepare


def _fill(device) -> ErrorStatus:
    """FILL with a run-time shape of (2**31 - 1)**2 elements into a 64-byte output."""
    huge = HUGE_MODELS["fill_shape"]((2**31 - 1, 2**31 - 1), True)
    _, _, prepared = prepare(device, huge.model)
    pool = create_ashmem(72)
    try:
        pool.write(0, huge.inputs[0].tobytes())
        request = Request(
            inputs=[RequestArgument(location=DataLocation(0, 0, 8))],
            outputs=[RequestArgument(location=DataLocation(0, 8, 64))],
            pools=[pool],
        )
        return prepared.execute_synchronously(request, MeasureTiming.NO, None, None)[0]
    finally:
        pool.close()


def test_fill_size_unchecked() -> None:
    assert _fill(create_device(faults=[])) == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT
    # The faulty FILL asks numpy for 2**64 bytes, which fails at once: no status of its own, a kernel failure.
    assert _fill(create_device(faults=["fill_size_unchecked"])) == ErrorStatus.GENERAL_FAILURE
