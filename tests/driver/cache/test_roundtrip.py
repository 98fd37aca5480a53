"""D23: a model saved with prepareModel and rebuilt by prepareModelFromCache computes what it computed before.

Expected outputs are computed by hand in each test; the cached model must also agree with the freshly prepared
one on the same inputs.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from harness.case import simple_request
from harness.hal import CacheHandle, ErrorStatus, OperationType
from harness.hal.memory import create_ashmem
from harness.paths import ExecutionArgs
from tests.driver.cache.support import (
    TOKEN,
    Handles,
    chain_model,
    f32,
    load,
    load_with,
    prepare,
    run,
    save,
)
from tests.driver.models import add_constant_model, add_model, add_then_mul_model, counting_while_model

A = f32([[1, -2], [3, 4]])
B = f32([[0.5, -1], [-5, 2]])


def _roundtrip(dev, files, model, inputs, expected) -> None:
    fresh = save(dev, model, files)
    status, cached = load(dev, files)
    assert status == ErrorStatus.NONE and cached is not None
    got = run(cached, model, inputs)
    for out, want, again in zip(got, expected, run(fresh, model, inputs)):
        np.testing.assert_array_equal(out, want)
        np.testing.assert_array_equal(out, again)


def test_the_device_asks_for_one_model_and_one_data_cache_file(dev) -> None:
    assert dev.get_number_of_cache_files_needed() == (ErrorStatus.NONE, 1, 1)


def test_add_with_relu_survives_the_cache(dev, cache_files) -> None:
    # RELU(a + b) by hand: [[1.5, -3], [-2, 6]] -> [[1.5, 0], [0, 6]]
    _roundtrip(dev, cache_files(), add_model(activation=1), [A, B], [f32([[1.5, 0], [0, 6]])])


def test_two_outputs_and_an_unknown_output_shape_survive_the_cache(dev, cache_files) -> None:
    b = f32([[2, 2], [2, 2]])
    a = f32([[1, 2], [3, 4]])
    # out1 = a + b, out2 = (a + b) * b
    _roundtrip(dev, cache_files(), add_then_mul_model(), [a, b], [f32([[3, 4], [5, 6]]), f32([[6, 8], [10, 12]])])


def test_control_flow_with_referenced_subgraphs_survives_the_cache(dev, cache_files) -> None:
    # WHILE i < n: i += 1, from i = 0 with n = 5 ends at 5
    _roundtrip(dev, cache_files(), counting_while_model(), [f32([0]), f32([5])], [f32([5])])


@pytest.mark.parametrize(("op", "expected"), [(OperationType.ADD, 21.0), (OperationType.MUL, 1.0)])
def test_a_chain_of_twenty_operations_survives_the_cache(dev, cache_files, op, expected) -> None:
    # 1 + 20 * 1.0 = 21; 1 * 1.0^20 = 1
    _roundtrip(dev, cache_files(), chain_model(op, 20), [f32([1])], [f32([expected])])


def test_a_model_prepared_from_cache_keeps_constants_that_lived_in_client_memory(dev, cache_files) -> None:
    pool = create_ashmem(64)
    model = add_constant_model(pool, 8, f32([[10, 20], [30, 40]]))
    files = cache_files()
    save(dev, model, files)
    # The client reuses its memory after preparation: the cache holds the values compiled, not the pool.
    pool.write(8, bytes(16))
    pool.close()
    status, cached = load(dev, files)
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(run(cached, model, [f32([[1, 2], [3, 4]])])[0], f32([[11, 22], [33, 44]]))


def test_a_model_prepared_from_cache_no_longer_needs_the_files(dev, cache_files) -> None:
    files = cache_files()
    model = add_model()
    save(dev, model, files)
    status, cached = load(dev, files)
    files.write(b"", b"")
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(run(cached, model, [A, B])[0], A + B)


def test_a_model_prepared_from_cache_runs_on_every_execution_path(dev, cache_files, path) -> None:
    _, run_path = path
    files = cache_files()
    model = add_model()
    save(dev, model, files)
    _, cached = load(dev, files)
    with simple_request(model, [A, B], [16]) as rb:
        outcome = run_path(cached, rb.request, ExecutionArgs())
        assert outcome.status == ErrorStatus.NONE
        np.testing.assert_array_equal(rb.read_output(0, [2, 2]), f32([[1.5, -3], [-2, 6]]))


def test_cache_files_may_start_at_a_non_zero_offset(dev, cache_files) -> None:
    files = cache_files()
    files.write(b"\x00\x07", b"\x00\x07")  # what the client keeps before the cache
    model = add_model()
    with Handles.of(files, offset=2) as h:
        assert prepare(dev, model, h.model_cache, h.data_cache)[1] == ErrorStatus.NONE
    model_bytes, data_bytes = files.read()
    assert model_bytes[:2] == b"\x00\x07" and data_bytes[:2] == b"\x00\x07" and len(model_bytes) > 2
    status, cached = load(dev, files, offset=2)
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(run(cached, model, [A, B])[0], A + B)
    # Read from offset 0, the same files are another (unknown) cache.
    assert load(dev, files, offset=0)[0] == ErrorStatus.GENERAL_FAILURE


def test_memfd_handles_with_offsets_work_like_files(dev) -> None:
    model_fd, data_fd = os.memfd_create("model-cache"), os.memfd_create("data-cache")
    try:
        os.write(model_fd, b"0123")
        model_cache, data_cache = [CacheHandle((model_fd,), 4)], [CacheHandle((data_fd,), 0)]
        assert prepare(dev, add_model(), model_cache, data_cache)[1] == ErrorStatus.NONE
        assert os.pread(model_fd, 4, 0) == b"0123"
        launch, status, cached = load_with(dev, model_cache, data_cache)
        assert (launch, status) == (ErrorStatus.NONE, ErrorStatus.NONE)
        np.testing.assert_array_equal(run(cached, add_model(), [A, B])[0], A + B)
    finally:
        os.close(model_fd)
        os.close(data_fd)


def test_saving_again_under_the_same_token_replaces_the_cache(dev, cache_files) -> None:
    files = cache_files()
    save(dev, chain_model(OperationType.ADD, 3), files)
    save(dev, chain_model(OperationType.MUL, 3), files)
    status, cached = load(dev, files)
    assert status == ErrorStatus.NONE
    # 1 * 1 * 1 * 1 = 1 (the MUL chain), not 1 + 3 = 4 (the ADD chain)
    assert run(cached, chain_model(OperationType.MUL, 3), [f32([1])])[0][0] == 1.0


def test_a_passed_deadline_is_missed_without_a_model(dev, cache_files) -> None:
    files = cache_files()
    save(dev, add_model(), files)
    with Handles.of(files) as h:
        launch, status, cached = load_with(dev, h.model_cache, h.data_cache, deadline=time.monotonic_ns() - 1)
    assert launch in (ErrorStatus.NONE, status)
    assert status in (ErrorStatus.MISSED_DEADLINE_PERSISTENT, ErrorStatus.MISSED_DEADLINE_TRANSIENT)
    assert cached is None


def test_caching_off_needs_no_files_and_prepares_nothing_from_cache(make_device, cache_files) -> None:
    dev = make_device(caching=False)
    assert dev.get_number_of_cache_files_needed() == (ErrorStatus.NONE, 0, 0)
    files = cache_files()
    with Handles([], []) as h:
        assert prepare(dev, add_model(), h.model_cache, h.data_cache)[1] == ErrorStatus.NONE
        launch, status, cached = load_with(dev, h.model_cache, h.data_cache)
    assert (launch, status, cached) == (ErrorStatus.GENERAL_FAILURE, ErrorStatus.GENERAL_FAILURE, None)
    # Handles a caching device would use are left untouched.
    save(dev, add_model(), files)
    assert files.read() == (b"", b"")
    assert load(make_device(), files, TOKEN)[0] == ErrorStatus.GENERAL_FAILURE
