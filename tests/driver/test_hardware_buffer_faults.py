"""Faults in how the driver decodes hardware-buffer descriptors of execution pools."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test import create_device
from harness.hal import DataLocation, ErrorStatus, MeasureTiming, Request, RequestArgument
from harness.hal.memory import create_hardware_buffer_blob
from tests.driver.fault_models import prepare
from tests.driver.models import add_model

A = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
B = np.array([[10.0, 20.0], [30.0, 40.0]], np.float32)


def _execute_over(device, header: dict) -> ErrorStatus:
    """ADD of A and B with every argument in one BLOB hardware buffer whose header carries `header`."""
    _, _, prepared = prepare(device, add_model())
    pool = create_hardware_buffer_blob(48, header=header)
    try:
        pool.write(0, A.tobytes() + B.tobytes())
        request = Request(
            inputs=[RequestArgument(location=DataLocation(0, offset, 16)) for offset in (0, 16)],
            outputs=[RequestArgument(location=DataLocation(0, 32, 16))],
            pools=[pool],
        )
        return prepared.execute_synchronously(request, MeasureTiming.NO, None, None)[0]
    finally:
        pool.close()


@pytest.mark.parametrize("header", [{"magic": b"BWHA"}, {"version": 2}])
def test_hardware_buffer_header_unchecked(header: dict) -> None:
    assert _execute_over(create_device(faults=[]), header) == ErrorStatus.GENERAL_FAILURE
    assert _execute_over(create_device(faults=["hardware_buffer_header_unchecked"]), header) == ErrorStatus.NONE


def test_the_fault_leaves_format_and_size_checked() -> None:
    device = create_device(faults=["hardware_buffer_header_unchecked"])
    assert _execute_over(device, {"format": 0x7FFF}) == ErrorStatus.GENERAL_FAILURE
    assert _execute_over(device, {"width": 49}) == ErrorStatus.GENERAL_FAILURE
