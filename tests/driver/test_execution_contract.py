"""The driver's preparation and execution contracts (REQUIREMENTS D1-D14, D25, D26) on every execution path."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import numpy as np
import pytest

from driver_under_test import create_device
from harness.case import simple_request
from harness.hal import (
    NO_TIMING,
    DataLocation,
    ErrorStatus,
    MeasureTiming,
    OperandType,
    Priority,
)
from harness.hal.fence import FenceState, SyncFence
from harness.hal.memory import create_ashmem, create_hardware_buffer, create_mmap_fd
from harness.paths import ExecutionArgs
from tests.driver.conftest import f32, prepare, prepared
from tests.driver.models import add_constant_model, add_model, add_then_mul_model, counting_while_model

A = f32([[1, 2], [3, 4]])
B = f32([[10, 20], [30, 40]])
SUM = A + B  # by hand: [[11, 22], [33, 44]]
MISSED = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)


def assert_failed_cleanly(outcome, status: ErrorStatus) -> None:
    """The HAL's convention for a failed execution: that status, no shapes, no timing."""
    assert outcome.status == status, outcome
    assert outcome.output_shapes == []
    assert outcome.timing.time_on_device == NO_TIMING and outcome.timing.time_in_driver == NO_TIMING
    assert outcome.notes == []


# --- D1 ---------------------------------------------------------------------------------------------------


def test_capabilities_are_sorted_without_subgraph_and_stable(device) -> None:
    status, caps = device.get_capabilities()
    assert status == ErrorStatus.NONE
    types = [int(p.type) for p in caps.operand_performance]
    assert types == sorted(types) and int(OperandType.SUBGRAPH) not in types
    assert OperandType.TENSOR_FLOAT32 in types
    answers = [
        (device.get_version_string(), device.get_type(), device.get_number_of_cache_files_needed()) for _ in "ab"
    ]
    assert answers[0] == answers[1]


# --- D2 ---------------------------------------------------------------------------------------------------


def test_supported_operations_has_one_flag_per_operation(device) -> None:
    assert device.get_supported_operations(add_then_mul_model()) == (ErrorStatus.NONE, [True, True])


def test_supported_operations_rejects_an_invalid_model(device) -> None:
    model = add_model()
    model.main.operands[0].type = 9999
    assert device.get_supported_operations(model) == (ErrorStatus.INVALID_ARGUMENT, [])


def test_an_operand_type_the_device_excludes_makes_the_operation_unsupported() -> None:
    narrow = create_device(faults=[], operand_types=[OperandType.INT32, OperandType.TENSOR_INT32])
    assert narrow.get_supported_operations(add_model()) == (ErrorStatus.NONE, [False])
    launch, status, pm = prepare(narrow, add_model())
    assert (launch, status, pm) == (ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE, None)


def test_control_flow_is_supported_only_if_its_subgraphs_are() -> None:
    model = counting_while_model()
    assert create_device(faults=[]).get_supported_operations(model) == (ErrorStatus.NONE, [True])
    # Without BOOL8 the condition's LESS cannot run, so the WHILE is unsupported.
    no_bool = create_device(faults=[], operand_types=[t for t in OperandType if t != OperandType.TENSOR_BOOL8])
    assert no_bool.get_supported_operations(model) == (ErrorStatus.NONE, [False])


def test_a_constant_in_a_memory_the_driver_cannot_map_is_unsupported(device) -> None:
    pool = create_hardware_buffer(width=2, height=1, decodable=False)
    model = add_constant_model(pool, 0, f32([[1, 2]]))
    assert device.get_supported_operations(model) == (ErrorStatus.NONE, [False])
    pool.close()


# --- D3 ---------------------------------------------------------------------------------------------------


def test_invalid_model_is_reported_at_launch_and_through_the_callback(device) -> None:
    model = add_model()
    model.main.operands[3].lifetime = 77
    assert prepare(device, model) == (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.INVALID_ARGUMENT, None)


def test_cache_arguments_never_make_preparation_fail(device) -> None:
    from harness.hal import CacheHandle, ExecutionPreference
    from harness.hal.callbacks import WaitablePreparedModelCallback

    callback = WaitablePreparedModelCallback()
    junk = [CacheHandle(fds=(-1, 99999), offset=-5)]
    launch = device.prepare_model(
        add_model(), ExecutionPreference.LOW_POWER, Priority.LOW, None, junk, junk, b"x", callback
    )
    assert launch == ErrorStatus.NONE
    status, pm = callback.result(30)
    assert status == ErrorStatus.NONE and pm is not None


def test_a_prepared_model_dies_with_its_last_client_reference(device) -> None:
    pm = prepared(device, add_model())
    ref = weakref.ref(pm)
    del pm
    gc.collect()
    assert ref() is None


# --- D4, D6, D7 -------------------------------------------------------------------------------------------


def test_unknown_output_dimensions_are_reported(device, path) -> None:
    name, run = path
    model = add_model(out_dims=[0, 0])
    pm = prepared(device, model)
    # A fenced execution needs fully specified outputs (V37): there the request supplies them.
    with simple_request(model, [A, B], [16], output_dims=[[2, 2]] if name == "fenced" else None) as rb:
        outcome = run(pm, rb.request, ExecutionArgs())
        assert outcome.status == ErrorStatus.NONE
        if outcome.path != "fenced":
            assert [s.dimensions for s in outcome.output_shapes] == [[2, 2]]
        np.testing.assert_array_equal(rb.read_output(0, [2, 2]), SUM)


def test_outputs_are_row_major_without_padding(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb:
        assert run(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE
        raw = rb.memories[1].read(0, 16)
        assert raw == np.array([11, 22, 33, 44], dtype="<f4").tobytes()


def test_temporaries_feed_later_operations(device, path) -> None:
    _, run = path
    model = add_then_mul_model()
    pm = prepared(device, model)
    with simple_request(model, [A, B], [16, 16], output_dims=[[2, 2], [2, 2]]) as rb:
        assert run(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE
        np.testing.assert_array_equal(rb.read_output(0, [2, 2]), SUM)
        np.testing.assert_array_equal(rb.read_output(1, [2, 2]), f32([[110, 440], [990, 1760]]))


def test_several_prepared_models_live_side_by_side(device) -> None:
    m1, m2 = add_model(), add_then_mul_model()
    pm1, pm2 = prepared(device, m1), prepared(device, m2)
    with simple_request(m1, [A, B], [16]) as r1, simple_request(m2, [B, A], [16, 16]) as r2:
        assert pm1.execute_synchronously(r1.request, MeasureTiming.NO, None, None)[0] == ErrorStatus.NONE
        assert pm2.execute_synchronously(r2.request, MeasureTiming.NO, None, None)[0] == ErrorStatus.NONE
        np.testing.assert_array_equal(r1.read_output(0, [2, 2]), SUM)
        np.testing.assert_array_equal(r2.read_output(1, [2, 2]), SUM * A)
    del pm1, pm2


def test_a_too_small_output_marks_exactly_that_output(device, path) -> None:
    name, run = path
    model = add_then_mul_model()
    pm = prepared(device, model)
    with simple_request(model, [A, B], [16, 8]) as rb:
        outcome = run(pm, rb.request, ExecutionArgs())
    if name == "fenced":
        # A fenced execution needs fully specified outputs, which output 1 is not.
        assert_failed_cleanly(outcome, ErrorStatus.INVALID_ARGUMENT)
        return
    assert outcome.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [(s.dimensions, s.is_sufficient) for s in outcome.output_shapes] == [([2, 2], True), ([2, 2], False)]
    assert outcome.timing.time_in_driver == NO_TIMING


# --- D5 ---------------------------------------------------------------------------------------------------


def test_every_path_computes_the_same_result(device) -> None:
    from harness.paths import PATHS

    pm = prepared(device, add_model())
    results = {}
    for name, run in PATHS.items():
        with simple_request(add_model(), [A, B], [16]) as rb:
            assert run(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE
            results[name] = rb.read_output(0, [2, 2])
    for value in results.values():
        np.testing.assert_array_equal(value, SUM)


def test_fenced_execution_waits_for_its_fences(device) -> None:
    pm = prepared(device, add_model())
    gate = SyncFence.create()
    with simple_request(add_model(), [A, B], [16]) as rb:
        status, done, callback = pm.execute_fenced(rb.request, [gate], MeasureTiming.YES, None, None, None)
        assert status == ErrorStatus.NONE
        time.sleep(0.05)
        assert done.state() == FenceState.ACTIVE
        # D8: asking for the timing before completion is GENERAL_FAILURE.
        assert callback.get_execution_info()[0] == ErrorStatus.GENERAL_FAILURE
        threading.Timer(0.05, gate.signal).start()
        assert done.wait(10) == FenceState.SIGNALED
        info_status, launched, fenced = callback.get_execution_info()
        assert info_status == ErrorStatus.NONE
        assert launched.time_in_driver >= fenced.time_in_driver >= fenced.time_on_device
        assert launched.time_in_driver >= 50_000 > fenced.time_in_driver  # launched includes the 50 ms gate
        np.testing.assert_array_equal(rb.read_output(0, [2, 2]), SUM)
    gate.close()


def test_a_fence_in_an_error_state_is_invalid(device) -> None:
    pm = prepared(device, add_model())
    bad = SyncFence.create()
    bad.set_error()
    with simple_request(add_model(), [A, B], [16]) as rb:
        assert pm.execute_fenced(rb.request, [bad], MeasureTiming.NO, None, None, None) == (
            ErrorStatus.INVALID_ARGUMENT,
            None,
            None,
        )
    bad.close()


def test_a_fence_that_fails_while_waited_on_fails_the_execution(device) -> None:
    pm = prepared(device, add_model())
    gate = SyncFence.create()
    with simple_request(add_model(), [A, B], [16]) as rb:
        status, done, callback = pm.execute_fenced(rb.request, [gate], MeasureTiming.NO, None, None, None)
        gate.set_error()
        assert done.wait(10) == FenceState.ERROR
        assert callback.get_execution_info()[0] == ErrorStatus.GENERAL_FAILURE
    gate.close()


# --- D8 ---------------------------------------------------------------------------------------------------


def test_timing_is_reported_only_when_measured(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb:
        unmeasured = run(pm, rb.request, ExecutionArgs(measure=MeasureTiming.NO))
        measured = run(pm, rb.request, ExecutionArgs(measure=MeasureTiming.YES))
    assert unmeasured.timing.time_on_device == unmeasured.timing.time_in_driver == NO_TIMING
    assert measured.timing.time_in_driver != NO_TIMING
    assert measured.timing.time_in_driver >= measured.timing.time_on_device


# --- D9 ---------------------------------------------------------------------------------------------------


def test_while_runs_its_body_until_the_condition_fails(device, path) -> None:
    _, run = path
    model = counting_while_model()
    pm = prepared(device, model)
    with simple_request(model, [f32([0]), f32([5])], [4]) as rb:
        assert run(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE
        np.testing.assert_array_equal(rb.read_output(0, [1]), f32([5]))


def test_a_loop_past_its_timeout_misses_the_deadline(device, path) -> None:
    _, run = path
    model = counting_while_model()
    pm = prepared(device, model)
    with simple_request(model, [f32([0]), f32([1e9])], [4]) as rb:
        outcome = run(pm, rb.request, ExecutionArgs(loop_timeout=20_000_000))
    assert outcome.status in MISSED and outcome.output_shapes == []


# --- D10 --------------------------------------------------------------------------------------------------


def test_a_passed_deadline_is_missed_on_preparation(device) -> None:
    launch, status, pm = prepare(device, add_model(), deadline=time.monotonic_ns() - 1)
    assert launch == ErrorStatus.NONE and status in MISSED and pm is None


def test_a_passed_deadline_is_missed_on_execution(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb:
        outcome = run(pm, rb.request, ExecutionArgs(deadline=time.monotonic_ns() - 1))
    assert outcome.status in MISSED and outcome.output_shapes == []
    assert outcome.timing.time_in_driver == NO_TIMING


def test_an_unlimited_deadline_behaves_as_none(device, path) -> None:
    _, run = path
    launch, status, pm = prepare(device, add_model(), deadline=2**64 - 1)
    assert (launch, status) == (ErrorStatus.NONE, ErrorStatus.NONE)
    with simple_request(add_model(), [A, B], [16]) as rb:
        assert run(pm, rb.request, ExecutionArgs(deadline=2**64 - 1)).status == ErrorStatus.NONE


@pytest.mark.parametrize("priority", list(Priority))
def test_every_priority_prepares(device, priority) -> None:
    assert prepare(device, add_model(), priority=priority)[:2] == (ErrorStatus.NONE, ErrorStatus.NONE)


# --- D11 --------------------------------------------------------------------------------------------------


def test_relaxed_models_compute_within_float16_precision(device) -> None:
    model = add_model(relaxed=True)
    pm = prepared(device, model)
    a, b = f32([[1.0009765625, 2], [3, 4]]), f32([[1e-4, 0], [0, 0]])
    with simple_request(model, [a, b], [16]) as rb:
        assert pm.execute_synchronously(rb.request, MeasureTiming.NO, None, None)[0] == ErrorStatus.NONE
        np.testing.assert_allclose(rb.read_output(0, [2, 2]), a + b, rtol=5 * 0.0009765625, atol=5 * 0.0009765625)


# --- D12, D13, D14 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "factory", [create_ashmem, lambda n: create_mmap_fd(n, offset=4099)], ids=["ashmem", "mmap_fd"]
)
def test_constant_references_are_read_from_pools(device, factory) -> None:
    pool = factory(64)
    model = add_constant_model(pool, 12, B)
    pm = prepared(device, model)
    pool.write(12, bytes(16))  # a prepared model keeps the values it was compiled with
    with simple_request(model, [A], [16]) as rb:
        assert pm.execute_synchronously(rb.request, MeasureTiming.NO, None, None)[0] == ErrorStatus.NONE
        np.testing.assert_array_equal(rb.read_output(0, [2, 2]), SUM)
    pool.close()


@pytest.mark.parametrize("kind", ["ashmem", "mmap_fd", "hardware_buffer_blob"])
def test_every_required_memory_kind_works_for_execution(device, path, kind) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16], kind=kind) as rb:
        assert run(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE
        np.testing.assert_array_equal(rb.read_output(0, [2, 2]), SUM)


def _with_output_pool(rb, memory):
    rb.memories[1].close()
    rb.request.pools[1] = rb.memories[1] = memory


def test_a_decodable_hardware_buffer_works_for_execution(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb:
        _with_output_pool(rb, create_hardware_buffer(width=2, height=2))
        assert run(pm, rb.request, ExecutionArgs()).status == ErrorStatus.NONE
        np.testing.assert_array_equal(rb.read_output(0, [2, 2]), SUM)


def test_an_undecodable_hardware_buffer_fails_the_execution(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb:
        _with_output_pool(rb, create_hardware_buffer(width=2, height=2, decodable=False))
        outcome = run(pm, rb.request, ExecutionArgs())
    assert_failed_cleanly(outcome, ErrorStatus.GENERAL_FAILURE)


def test_a_memory_kind_the_device_refuses_fails_the_execution(path) -> None:
    _, run = path
    device = create_device(faults=[], execution_memory_kinds=("ashmem",))
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16], kind="mmap_fd") as rb:
        assert_failed_cleanly(run(pm, rb.request, ExecutionArgs()), ErrorStatus.GENERAL_FAILURE)


def test_a_constant_in_a_hardware_buffer_fails_preparation(device) -> None:
    pool = create_hardware_buffer(width=4, height=1)
    model = add_constant_model(pool, 0, f32([[1, 2], [3, 4]]))
    assert prepare(device, model)[1:] == (ErrorStatus.GENERAL_FAILURE, None)
    pool.close()


def test_a_location_past_the_pool_end_is_invalid(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb:
        rb.request.outputs[0].location = DataLocation(1, rb.memories[1].size - 8, 16)
        assert_failed_cleanly(run(pm, rb.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)


def test_an_output_overlapping_an_input_is_invalid(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb:
        rb.request.outputs[0].location = DataLocation(0, 8, 16)
        assert_failed_cleanly(run(pm, rb.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)


# --- D25, D26 ---------------------------------------------------------------------------------------------


def test_a_pool_claiming_more_than_its_file_holds_is_refused(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    with simple_request(add_model(), [A, B], [16]) as rb:
        rb.memories[1].size = 1 << 40  # the handle lies about its size
        assert_failed_cleanly(run(pm, rb.request, ExecutionArgs()), ErrorStatus.INVALID_ARGUMENT)


def test_a_huge_model_is_refused_with_a_clear_status(device) -> None:
    model = add_model(dims=[2**20, 2**20])
    status, flags = device.get_supported_operations(model)
    assert status == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT and flags == []
    assert prepare(device, model)[:2] == (ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT,) * 2


def test_garbage_arguments_never_escape_as_exceptions(device, path) -> None:
    _, run = path
    pm = prepared(device, add_model())
    for junk in (None, "request", 42):
        outcome = run(pm, junk, ExecutionArgs())
        assert outcome.status in (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE)
        assert outcome.output_shapes == []
