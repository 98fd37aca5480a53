"""The memory-domain faults: the fault-free device keeps the rule, the faulty one breaks it as documented."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test import CATALOGUE, create_device
from harness.hal import ErrorStatus, MeasureTiming
from tests.driver.conftest import prepared
from tests.driver.memory_domain.helpers import A, B, Buf, Out, allocated, copy_in, copy_out, memory_with, mixed_request
from tests.driver.models import add_model, add_then_mul_model

FAULTS = ["role_check_ignores_io_index", "buffer_stays_initialized_after_failure", "copy_from_skips_size_check"]


@pytest.mark.parametrize("name", FAULTS)
def test_the_memory_domain_faults_are_catalogued(name: str) -> None:
    assert CATALOGUE[name].area == "memory_domain"


def _sync(pm, inputs, outputs):
    with mixed_request(inputs, outputs) as mr:
        status, shapes, _ = pm.execute_synchronously(mr.request, MeasureTiming.NO, None, None)
        if status != ErrorStatus.NONE:
            return status, {}
        return status, {j: mr.output(j, [2, 2]).copy() for j in mr.output_memories}


def _input_zero_buffer_used_as_input_one(faults: list[str]):
    device = create_device(faults=faults)
    pm = prepared(device, add_model())
    buffer, token = allocated(device, [pm], inputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    return _sync(pm, [B, Buf(token)], [Out(A.nbytes)])


def test_role_check_ignores_io_index() -> None:
    assert _input_zero_buffer_used_as_input_one([])[0] == ErrorStatus.INVALID_ARGUMENT
    status, outputs = _input_zero_buffer_used_as_input_one(["role_check_ignores_io_index"])
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(outputs[0], A + B)


def _read_after_failed_execution(faults: list[str]) -> tuple[ErrorStatus, bytes]:
    device = create_device(faults=faults)
    pm = prepared(device, add_then_mul_model())
    buffer, token = allocated(device, [pm], outputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    status, _ = _sync(pm, [A, B], [Buf(token), Out(8, [2, 2])])  # output 1 needs 16 bytes
    assert status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    return copy_out(buffer, A.nbytes)


def test_buffer_stays_initialized_after_failure() -> None:
    assert _read_after_failed_execution([])[0] == ErrorStatus.GENERAL_FAILURE
    assert _read_after_failed_execution(["buffer_stays_initialized_after_failure"]) == (ErrorStatus.NONE, A.tobytes())


@pytest.mark.parametrize("size", [8, 24])
def test_copy_from_skips_size_check(size: int) -> None:
    data = bytes(range(1, size + 1))
    for faults in ([], ["copy_from_skips_size_check"]):
        device = create_device(faults=faults)
        buffer, _ = allocated(device, [prepared(device, add_model())], inputs=[(0, 0)])
        with memory_with(data) as memory:
            status = buffer.copy_from(memory, [2, 2])
        if not faults:
            assert status == ErrorStatus.INVALID_ARGUMENT
            continue
        assert status == ErrorStatus.NONE
        # The first min(size, 16) bytes are copied, the rest of the 16-byte buffer is zero.
        expected = data[:16] + bytes(max(0, 16 - size))
        assert copy_out(buffer, 16) == (ErrorStatus.NONE, expected)
