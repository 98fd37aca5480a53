"""D16: a driver buffer is used only in its declared roles, with its prepared models, on its device; every illegal
use fails at once with INVALID_ARGUMENT (an uninitialized input with GENERAL_FAILURE), no shapes, no timing,
on every execution path. The cases follow the public conformance suite's memory-domain execution tests.
"""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test import create_device
from harness.hal import ErrorStatus, OutputShape
from harness.paths import ExecutionArgs
from tests.driver.conftest import prepared
from tests.driver.memory_domain.helpers import (
    A,
    B,
    Buf,
    Out,
    allocated,
    copy_in,
    mixed_request,
    read_f32,
    two_adds_model,
)
from tests.driver.models import add_model
from tests.driver.test_execution_contract import assert_failed_cleanly

SUM = np.array([[11, 22], [33, 44]], dtype=np.float32)  # A + B by hand
SIZE = A.nbytes


def run(path, pm, inputs, outputs):
    """Execute a mixed request on one path; the Outcome (memories closed afterwards) and the shared outputs."""
    _, runner = path
    with mixed_request(inputs, outputs) as mr:
        outcome = runner(pm, mr.request, ExecutionArgs())
        shared = {j: mr.output(j, [2, 2]).copy() for j in mr.output_memories}
    return outcome, shared


def assert_succeeded(outcome, path, shapes: list[list[int]]) -> None:
    """NONE, with these output shapes where the path reports shapes."""
    assert outcome.status == ErrorStatus.NONE, outcome
    if path[0] != "fenced":
        assert outcome.output_shapes == [OutputShape(s, True) for s in shapes]


@pytest.fixture
def pm(device):
    """A prepared ADD [2, 2]: two inputs, one output."""
    return prepared(device, add_model())


# --- legal uses --------------------------------------------------------------------------------------------


def test_a_buffer_written_as_output_is_read_back_as_input(device, pm, path) -> None:
    buffer, token = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])
    outcome, _ = run(path, pm, [A, B], [Buf(token)])
    assert_succeeded(outcome, path, [[2, 2]])
    np.testing.assert_array_equal(read_f32(buffer, [2, 2]), SUM)
    outcome, shared = run(path, pm, [Buf(token), B], [Out(SIZE)])
    assert_succeeded(outcome, path, [[2, 2]])
    np.testing.assert_array_equal(shared[0], SUM + B)


def test_one_buffer_may_feed_two_inputs(device, pm, path) -> None:
    buffer, token = allocated(device, [pm], inputs=[(0, 0), (0, 1)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    outcome, shared = run(path, pm, [Buf(token), Buf(token)], [Out(SIZE)])
    assert_succeeded(outcome, path, [[2, 2]])
    np.testing.assert_array_equal(shared[0], A + A)


def test_a_buffer_may_serve_two_prepared_models(device, pm, path) -> None:
    other = prepared(device, add_model())
    buffer, token = allocated(device, [pm, other], outputs=[(0, 0)], inputs=[(1, 1)])
    assert_succeeded(run(path, pm, [A, B], [Buf(token)])[0], path, [[2, 2]])
    outcome, shared = run(path, other, [A, Buf(token)], [Out(SIZE)])
    assert_succeeded(outcome, path, [[2, 2]])
    np.testing.assert_array_equal(shared[0], A + SUM)


# --- tokens ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [0, 100, -1])
def test_an_invalid_or_unknown_token_is_refused(pm, path, token: int) -> None:
    assert_failed_cleanly(run(path, pm, [Buf(token), B], [Out(SIZE)])[0], ErrorStatus.INVALID_ARGUMENT)
    assert_failed_cleanly(run(path, pm, [A, B], [Buf(token)])[0], ErrorStatus.INVALID_ARGUMENT)


def test_a_token_of_another_device_is_unknown(device, path) -> None:
    other_device = create_device(faults=[])
    other_pm = prepared(other_device, add_model())
    buffer, token = allocated(other_device, [other_pm], inputs=[(0, 0)], outputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    pm = prepared(device, add_model())
    # Give this device a live buffer too, so the token table is not simply empty.
    allocated(device, [pm], inputs=[(0, 1)])
    assert_failed_cleanly(run(path, pm, [Buf(token), B], [Out(SIZE)])[0], ErrorStatus.INVALID_ARGUMENT)
    assert_failed_cleanly(run(path, pm, [A, B], [Buf(token)])[0], ErrorStatus.INVALID_ARGUMENT)
    assert run(path, other_pm, [Buf(token), B], [Out(SIZE)])[0].status == ErrorStatus.NONE


# --- roles -------------------------------------------------------------------------------------------------


def test_a_prepared_model_the_buffer_was_not_allocated_for_is_refused(device, pm, path) -> None:
    buffer, token = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    same_model_other_compilation = prepared(device, add_model())
    for inputs, outputs in (([Buf(token), B], [Out(SIZE)]), ([A, B], [Buf(token)])):
        outcome, _ = run(path, same_model_other_compilation, inputs, outputs)
        assert_failed_cleanly(outcome, ErrorStatus.INVALID_ARGUMENT)


def test_an_io_index_the_buffer_was_not_allocated_for_is_refused(device, path) -> None:
    pm = prepared(device, two_adds_model())
    in_buffer, in_token = allocated(device, [pm], inputs=[(0, 0)])
    out_buffer, out_token = allocated(device, [pm], outputs=[(0, 0)])
    assert copy_in(in_buffer, A) == ErrorStatus.NONE
    outcome, _ = run(path, pm, [A, Buf(in_token), A, B], [Out(SIZE), Out(SIZE)])
    assert_failed_cleanly(outcome, ErrorStatus.INVALID_ARGUMENT)
    outcome, _ = run(path, pm, [A, B, A, B], [Out(SIZE), Buf(out_token)])
    assert_failed_cleanly(outcome, ErrorStatus.INVALID_ARGUMENT)
    # The declared roles work.
    outcome, _ = run(path, pm, [Buf(in_token), B, A, B], [Buf(out_token), Out(SIZE)])
    assert_succeeded(outcome, path, [[2, 2], [2, 2]])


def test_an_input_buffer_used_as_output_and_the_reverse_are_refused(device, pm, path) -> None:
    in_buffer, in_token = allocated(device, [pm], inputs=[(0, 0)])
    out_buffer, out_token = allocated(device, [pm], outputs=[(0, 0)])
    assert_failed_cleanly(run(path, pm, [A, B], [Buf(in_token)])[0], ErrorStatus.INVALID_ARGUMENT)
    assert copy_in(out_buffer, A) == ErrorStatus.NONE
    assert_failed_cleanly(run(path, pm, [Buf(out_token), B], [Out(SIZE)])[0], ErrorStatus.INVALID_ARGUMENT)


def test_an_uninitialized_input_fails_until_an_execution_writes_it(device, pm, path) -> None:
    buffer, token = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])
    assert_failed_cleanly(run(path, pm, [Buf(token), B], [Out(SIZE)])[0], ErrorStatus.GENERAL_FAILURE)
    assert_succeeded(run(path, pm, [A, B], [Buf(token)])[0], path, [[2, 2]])
    outcome, shared = run(path, pm, [Buf(token), B], [Out(SIZE)])
    assert_succeeded(outcome, path, [[2, 2]])
    np.testing.assert_array_equal(shared[0], SUM + B)


def test_one_buffer_as_input_and_output_or_as_two_outputs_is_refused(device, path) -> None:
    pm = prepared(device, two_adds_model())
    buffer, token = allocated(device, [pm], inputs=[(0, 0), (0, 1)], outputs=[(0, 0), (0, 1)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    outcome, _ = run(path, pm, [Buf(token), B, A, B], [Buf(token), Out(SIZE)])
    assert_failed_cleanly(outcome, ErrorStatus.INVALID_ARGUMENT)
    outcome, _ = run(path, pm, [A, B, A, B], [Buf(token), Buf(token)])
    assert_failed_cleanly(outcome, ErrorStatus.INVALID_ARGUMENT)
    outcome, _ = run(path, pm, [Buf(token), Buf(token), A, B], [Out(SIZE), Out(SIZE)])
    assert_succeeded(outcome, path, [[2, 2], [2, 2]])
    # The refusals left the buffer as it was.
    np.testing.assert_array_equal(read_f32(buffer, [2, 2]), A)


# --- dimensions --------------------------------------------------------------------------------------------


@pytest.fixture
def flexible(device):
    """ADD on [0, 2] inputs and output, and a buffer for input 0 and output 0 allocated as [2, 2]."""
    pm = prepared(device, add_model(dims=[0, 2], out_dims=[0, 2]))
    buffer, token = allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)], dims=[2, 2])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    return pm, buffer, token


def test_request_dimensions_that_conflict_with_the_buffer_are_refused(flexible, path) -> None:
    pm, _, token = flexible
    big = np.zeros((4, 2), dtype=np.float32)
    assert_failed_cleanly(run(path, pm, [Buf(token, [4, 2]), big], [Out(32)])[0], ErrorStatus.INVALID_ARGUMENT)
    assert_failed_cleanly(run(path, pm, [big, big], [Buf(token, [4, 2])])[0], ErrorStatus.INVALID_ARGUMENT)


def test_an_output_shape_the_buffer_cannot_hold_fails(flexible, path) -> None:
    pm, buffer, token = flexible
    big = np.zeros((4, 2), dtype=np.float32)
    # Valid against the model ([0, 2]); the computed [4, 2] conflicts with the buffer's [2, 2] only at run time.
    assert_failed_cleanly(run(path, pm, [big, big], [Buf(token)])[0], ErrorStatus.GENERAL_FAILURE)


def test_matching_request_dimensions_are_accepted(flexible, path) -> None:
    pm, buffer, token = flexible
    outcome, shared = run(path, pm, [Buf(token, [2, 2]), B], [Out(SIZE, [2, 2])])
    assert_succeeded(outcome, path, [[2, 2]])
    np.testing.assert_array_equal(shared[0], A + B)
    assert_succeeded(run(path, pm, [A, B], [Buf(token, [2, 2])])[0], path, [[2, 2]])


def test_a_driver_buffer_fixes_an_inputs_unknown_dimensions(device, path) -> None:
    pm = prepared(device, add_model(dims=[0, 2], out_dims=[0, 2]))
    buffer, token = allocated(device, [pm], inputs=[(0, 0)])  # shape [0, 2]: flexible
    three = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert copy_in(buffer, three) == ErrorStatus.NONE
    ones = np.ones((3, 2), dtype=np.float32)
    _, runner = path
    with mixed_request([Buf(token), ones], [Out(24, [3, 2])]) as mr:
        outcome = runner(pm, mr.request, ExecutionArgs())
        assert_succeeded(outcome, path, [[3, 2]])
        np.testing.assert_array_equal(mr.output(0, [3, 2]), three + 1)


def test_a_fenced_execution_cannot_write_a_buffer_of_unknown_shape(device) -> None:
    from harness.paths import PATHS

    pm = prepared(device, add_model(dims=[2, 2], out_dims=[0, 0]))
    _, token = allocated(device, [pm], outputs=[(0, 0)])
    assert_failed_cleanly(run(("fenced", PATHS["fenced"]), pm, [A, B], [Buf(token)])[0], ErrorStatus.INVALID_ARGUMENT)
    assert run(("fenced", PATHS["fenced"]), pm, [A, B], [Buf(token, [2, 2])])[0].status == ErrorStatus.NONE
    for name in sorted(set(PATHS) - {"fenced"}):
        assert run((name, PATHS[name]), pm, [A, B], [Buf(token)])[0].status == ErrorStatus.NONE


def test_an_argument_naming_a_buffer_with_an_offset_is_refused(device, pm, path) -> None:
    buffer, token = allocated(device, [pm], inputs=[(0, 0)])
    assert copy_in(buffer, A) == ErrorStatus.NONE
    _, runner = path
    with mixed_request([Buf(token), B], [Out(SIZE)]) as mr:
        mr.request.inputs[0].location.length = SIZE
        assert_failed_cleanly(runner(pm, mr.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)
