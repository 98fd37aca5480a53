"""D17/D18: a buffer's state and shape over its life: uninitialized, initialized by copyFrom or by an execution,
uninitialized again by a failed execution or copyFrom, and an output shape that changes between executions.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from harness.hal import ErrorStatus, OutputShape
from harness.paths import PATHS, ExecutionArgs
from tests.driver.conftest import prepared
from tests.driver.memory_domain.helpers import A, B, Buf, Out, allocated, copy_in, copy_out, mixed_request, read_f32
from tests.driver.models import add_model, add_then_mul_model
from tests.driver.test_execution_contract import assert_failed_cleanly

SIZE = A.nbytes


def run(path, pm, inputs, outputs, args: ExecutionArgs | None = None):
    """The Outcome of one mixed request on one path."""
    _, runner = path
    with mixed_request(inputs, outputs) as mr:
        return runner(pm, mr.request, args or ExecutionArgs())


def assert_uninitialized(buffer, pm, path, token: int, outputs: int = 1) -> None:
    """Reading the buffer fails with GENERAL_FAILURE, by copyTo and as input 0 of an execution."""
    assert copy_out(buffer, SIZE)[0] == ErrorStatus.GENERAL_FAILURE
    outcome = run(path, pm, [Buf(token), B], [Out(SIZE, [2, 2]) for _ in range(outputs)])
    assert_failed_cleanly(outcome, ErrorStatus.GENERAL_FAILURE)


def test_a_new_buffer_is_uninitialized(device, path) -> None:
    pm = prepared(device, add_model())
    buffer, token = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])
    assert_uninitialized(buffer, pm, path, token)


def test_copy_from_initializes(device) -> None:
    pm = prepared(device, add_model())
    buffer, _ = allocated(device, [pm], inputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    np.testing.assert_array_equal(read_f32(buffer, [2, 2]), A)


def test_a_failed_copy_from_uninitializes(device) -> None:
    pm = prepared(device, add_model())
    buffer, _ = allocated(device, [pm], inputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    assert copy_in(buffer, A[:1]) == ErrorStatus.INVALID_ARGUMENT  # 8 bytes for a 16-byte buffer
    assert copy_out(buffer, SIZE)[0] == ErrorStatus.GENERAL_FAILURE


def test_an_execution_writing_it_initializes(device, path) -> None:
    pm = prepared(device, add_model())
    buffer, token = allocated(device, [pm], outputs=[(0, 0)])
    assert run(path, pm, [A, B], [Buf(token)]).status == ErrorStatus.NONE
    np.testing.assert_array_equal(read_f32(buffer, [2, 2]), A + B)


def test_an_output_insufficient_size_failure_uninitializes(device, path) -> None:
    pm = prepared(device, add_then_mul_model())  # out0 = a + b, out1 = (a + b) * b
    buffer, token = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    outcome = run(path, pm, [A, B], [Buf(token), Out(8, [2, 2])])  # output 1 needs 16 bytes
    # getExecutionInfo cannot answer OUTPUT_INSUFFICIENT_SIZE (1.3/IFencedExecutionCallback.hal).
    fenced = path[0] == "fenced"
    assert outcome.status == (ErrorStatus.GENERAL_FAILURE if fenced else ErrorStatus.OUTPUT_INSUFFICIENT_SIZE)
    if not fenced:
        assert outcome.output_shapes == [OutputShape([2, 2], True), OutputShape([2, 2], False)]
    assert_uninitialized(buffer, pm, path, token, outputs=2)


def test_a_missed_deadline_uninitializes(device, path) -> None:
    pm = prepared(device, add_model())
    buffer, token = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    outcome = run(path, pm, [A, B], [Buf(token)], ExecutionArgs(deadline=time.monotonic_ns() - 1))
    assert outcome.status in (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)
    assert_uninitialized(buffer, pm, path, token)


def test_a_refused_request_leaves_the_buffer_alone(device, path) -> None:
    pm = prepared(device, add_model())
    buffer, token = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    # Illegal: input 1 is not a role of this buffer. The execution never starts, the content stays.
    assert_failed_cleanly(run(path, pm, [A, Buf(token)], [Buf(token)]), ErrorStatus.INVALID_ARGUMENT)
    np.testing.assert_array_equal(read_f32(buffer, [2, 2]), A)


# Fenced executions need fully specified outputs (V37): test_execution.py covers them with dynamic buffers.
@pytest.mark.parametrize("name", sorted(set(PATHS) - {"fenced"}))
def test_a_dynamic_output_takes_each_executions_shape(device, name: str) -> None:
    path = (name, PATHS[name])
    pm = prepared(device, add_model(dims=[0, 0], out_dims=[0, 0]))
    reader = prepared(device, add_model(dims=[0, 0], out_dims=[0, 0]))
    buffer, token = allocated(device, [pm, reader], outputs=[(0, 0)], inputs=[(1, 0)])
    row = np.array([[1, 2, 3]], dtype=np.float32)
    for a, b, shape in ((A, B, [2, 2]), (row, row, [1, 3]), (A.T, A, [2, 2])):
        outcome = run(path, pm, [a, b], [Buf(token)])
        assert outcome.status == ErrorStatus.NONE
        assert outcome.output_shapes == [OutputShape(shape, True)]
        np.testing.assert_array_equal(read_f32(buffer, shape), a + b)
        wrong = 12 if shape == [2, 2] else 16
        assert copy_out(buffer, wrong)[0] == ErrorStatus.INVALID_ARGUMENT
        # The buffer, read as an input, has the shape the last execution gave it.
        _, runner = path
        with mixed_request([Buf(token), np.ones(shape, np.float32)], [Out(4 * int(np.prod(shape)))]) as mr:
            outcome = runner(reader, mr.request, ExecutionArgs())
            assert outcome.status == ErrorStatus.NONE and outcome.output_shapes == [OutputShape(shape, True)]
            np.testing.assert_array_equal(mr.output(0, shape), a + b + 1)
