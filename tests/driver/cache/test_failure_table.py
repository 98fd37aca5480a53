"""D23/D24 failure table, modeled on the HAL's compilation caching conformance tests.

Saving with bad arguments never fails preparation (the model still computes correctly) and saves nothing;
preparing from cache with bad arguments or a cache that is not exactly what was saved under the token fails
with INVALID_ARGUMENT or GENERAL_FAILURE, the same at launch and through the callback, and gives no model.
"""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from driver_under_test._cache_store import STORE_FILE
from harness.hal import CacheHandle, ErrorStatus, OperationType
from tests.driver.cache.support import (
    OTHER_TOKEN,
    READ_ONLY,
    READ_WRITE,
    REJECTED,
    TOKEN,
    WRITE_ONLY,
    Handles,
    chain_model,
    f32,
    load,
    load_with,
    prepare,
    run,
    save,
)
from tests.driver.models import add_model

A = f32([[1, 2], [3, 4]])
B = f32([[10, 20], [30, 40]])
SUM = f32([[11, 22], [33, 44]])


# Handle groups (outer list: handles, inner: each handle's fds) from the model file m, the data file d and a
# spare file x, for every wrong count of handles or of descriptors in a handle.
COUNT_CASES = {
    "one model handle too many": lambda m, d, x: ([[m], [x]], [[d]]),
    "one model handle too few": lambda m, d, x: ([], [[d]]),
    "one data handle too many": lambda m, d, x: ([[m]], [[d], [x]]),
    "one data handle too few": lambda m, d, x: ([[m]], []),
    "a model handle with two fds": lambda m, d, x: ([[m, x]], [[d]]),
    "a model handle with no fd": lambda m, d, x: ([[]], [[d]]),
    "a data handle with two fds": lambda m, d, x: ([[m]], [[d, x]]),
    "a data handle with no fd": lambda m, d, x: ([[m]], [[]]),
}
CASES = sorted(COUNT_CASES)


def _groups(case, files, spare):
    return COUNT_CASES[case](files.model_path, files.data_path, spare.model_path)


@pytest.mark.parametrize("case", CASES)
def test_saving_with_wrong_handles_still_prepares_and_saves_nothing(dev, cache_files, case) -> None:
    files, spare = cache_files(), cache_files("spare")
    model_groups, data_groups = _groups(case, files, spare)
    with Handles(model_groups, data_groups) as h:
        launch, status, prepared = prepare(dev, add_model(), h.model_cache, h.data_cache)
        assert (launch, status) == (ErrorStatus.NONE, ErrorStatus.NONE)
        np.testing.assert_array_equal(run(prepared, add_model(), [A, B])[0], SUM)
        # The same handles cannot prepare from cache.
        launch, status, cached = load_with(dev, h.model_cache, h.data_cache)
        assert status in REJECTED and launch == status and cached is None
    assert files.read() == (b"", b"") and spare.read() == (b"", b"")
    assert load(dev, files)[0] == ErrorStatus.GENERAL_FAILURE  # nothing was recorded for the token either


@pytest.mark.parametrize("case", CASES)
def test_preparing_from_cache_with_wrong_handles_fails(dev, cache_files, case) -> None:
    files, spare = cache_files(), cache_files("spare")
    save(dev, add_model(), files)
    model_groups, data_groups = _groups(case, files, spare)
    with Handles(model_groups, data_groups) as h:
        launch, status, cached = load_with(dev, h.model_cache, h.data_cache)
    assert status in REJECTED and launch == status and cached is None
    assert load(dev, files)[0] == ErrorStatus.NONE  # the cache itself is fine


@pytest.mark.parametrize("which", ["model", "data"])
def test_saving_to_a_read_only_file_prepares_and_saves_nothing(dev, cache_files, which) -> None:
    files = cache_files()
    modes = {"model_mode": READ_ONLY} if which == "model" else {"data_mode": READ_ONLY}
    with Handles.of(files, **modes) as h:
        launch, status, prepared = prepare(dev, add_model(), h.model_cache, h.data_cache)
        assert (launch, status) == (ErrorStatus.NONE, ErrorStatus.NONE)
        np.testing.assert_array_equal(run(prepared, add_model(), [A, B])[0], SUM)
        # Read-only handles are fine for reading, but they hold no cache.
        launch, status, cached = load_with(dev, h.model_cache, h.data_cache)
        assert status == ErrorStatus.GENERAL_FAILURE and launch in (ErrorStatus.NONE, status) and cached is None
    assert files.read() == (b"", b"")


def test_saving_through_write_only_files_works(dev, cache_files) -> None:
    files = cache_files()
    with Handles.of(files, model_mode=WRITE_ONLY, data_mode=WRITE_ONLY) as h:
        assert prepare(dev, add_model(), h.model_cache, h.data_cache)[1] == ErrorStatus.NONE
    status, cached = load(dev, files)
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(run(cached, add_model(), [A, B])[0], SUM)


@pytest.mark.parametrize("which", ["model", "data"])
def test_preparing_from_a_write_only_file_is_a_general_failure(dev, cache_files, which) -> None:
    files = cache_files()
    save(dev, add_model(), files)
    modes = {"model_mode": WRITE_ONLY} if which == "model" else {"data_mode": WRITE_ONLY}
    with Handles.of(files, **modes) as h:
        launch, status, cached = load_with(dev, h.model_cache, h.data_cache)
    assert (launch, status, cached) == (ErrorStatus.GENERAL_FAILURE, ErrorStatus.GENERAL_FAILURE, None)


def test_preparing_from_read_only_files_works(dev, cache_files) -> None:
    files = cache_files()
    save(dev, add_model(), files)
    assert load(dev, files, model_mode=READ_ONLY, data_mode=READ_ONLY)[0] == ErrorStatus.NONE


@pytest.mark.parametrize("token", [b"", bytes(31), bytes(33), "x" * 32, None, list(range(32))])
def test_a_token_of_the_wrong_size_or_type_saves_nothing_and_is_refused(dev, cache_files, token) -> None:
    files = cache_files()
    with Handles.of(files) as h:
        assert prepare(dev, add_model(), h.model_cache, h.data_cache, token)[1] == ErrorStatus.NONE
        launch, status, cached = load_with(dev, h.model_cache, h.data_cache, token)
    assert status in REJECTED and launch == status and cached is None
    assert files.read() == (b"", b"")


def test_a_different_token_is_refused(dev, cache_files) -> None:
    files = cache_files()
    save(dev, add_model(), files)
    for byte in (0, 17, 31):
        for bit in (0, 7):
            token = bytearray(TOKEN)
            token[byte] ^= 1 << bit
            assert load(dev, files, bytes(token)) == (ErrorStatus.GENERAL_FAILURE, None)
    assert load(dev, files)[0] == ErrorStatus.NONE


def test_a_token_the_store_never_saw_is_refused(make_device, cache_files, tmp_path) -> None:
    files = cache_files()
    save(make_device(), add_model(), files)
    # The same files and token, but a device whose store never recorded them.
    assert load(make_device(cache_dir=str(tmp_path / "other-store")), files) == (ErrorStatus.GENERAL_FAILURE, None)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda b: b[:-1], id="last byte cut"),
        pytest.param(lambda b: b[: len(b) // 2], id="cut in half"),
        pytest.param(lambda b: b"", id="emptied"),
        pytest.param(lambda b: b + b"\x00", id="one zero byte appended"),
        pytest.param(lambda b: b + bytes(np.random.default_rng(1).integers(0, 256, 256, np.uint8)), id="256 appended"),
        pytest.param(lambda b: b[1:], id="first byte removed"),
    ],
)
def test_a_truncated_or_extended_model_cache_is_refused(dev, cache_files, change) -> None:
    files = cache_files()
    save(dev, add_model(), files)
    model_bytes, _ = files.read()
    files.write(model=change(model_bytes))
    assert load(dev, files) == (ErrorStatus.GENERAL_FAILURE, None)


@pytest.mark.parametrize("replace_data", [False, True], ids=["model cache replaced", "both files replaced"])
def test_a_model_cache_replaced_by_another_models_is_refused(dev, cache_files, replace_data) -> None:
    add_files, mul_files = cache_files("add"), cache_files("mul")
    save(dev, chain_model(OperationType.MUL, 20), mul_files, OTHER_TOKEN)
    save(dev, chain_model(OperationType.ADD, 20), add_files, TOKEN)
    mul_model, mul_data = mul_files.read()
    add_files.write(model=mul_model, data=mul_data if replace_data else None)
    assert load(dev, add_files, TOKEN) == (ErrorStatus.GENERAL_FAILURE, None)
    # The other model's own token still opens its own files.
    assert load(dev, mul_files, OTHER_TOKEN)[0] == ErrorStatus.NONE


def test_the_store_survives_a_restart(make_device, cache_files) -> None:
    files = cache_files()
    save(make_device(), add_model(), files)
    restarted = make_device()
    status, cached = load(restarted, files)
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(run(cached, add_model(), [A, B])[0], SUM)


def test_a_new_driver_version_forgets_every_saved_cache(make_device, cache_files) -> None:
    old_files, new_files = cache_files("old"), cache_files("new")
    save(make_device(version="nnfuzz-dut-1.0"), add_model(), old_files)
    updated = make_device(version="nnfuzz-dut-1.1")
    assert load(updated, old_files) == (ErrorStatus.GENERAL_FAILURE, None)
    # The store was re-initialized: going back to the old version does not bring the record back.
    assert load(make_device(version="nnfuzz-dut-1.0"), old_files) == (ErrorStatus.GENERAL_FAILURE, None)
    save(updated, add_model(), new_files)
    assert load(make_device(version="nnfuzz-dut-1.1"), new_files)[0] == ErrorStatus.NONE


def test_a_closed_descriptor_is_an_invalid_argument(dev, cache_files) -> None:
    files = cache_files()
    save(dev, add_model(), files)
    with Handles([], [[files.data_path]]) as h:
        fd = os.open(files.model_path, READ_WRITE)
        os.close(fd)  # a descriptor number that no longer names a file
        launch, status, cached = load_with(dev, [CacheHandle((fd,))], h.data_cache)
    assert (launch, status, cached) == (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.INVALID_ARGUMENT, None)


@pytest.mark.parametrize("bad", [CacheHandle((3,), -1), CacheHandle(("3",)), "not a handle", None])
def test_a_malformed_handle_is_an_invalid_argument(dev, cache_files, bad) -> None:
    files = cache_files()
    with Handles([], [[files.data_path]]) as h:
        launch, status, cached = load_with(dev, [bad], h.data_cache)
    assert (launch, status, cached) == (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.INVALID_ARGUMENT, None)


def test_a_pipe_is_refused_at_once_instead_of_blocking(dev, cache_files) -> None:
    files = cache_files()
    save(dev, add_model(), files)
    read_end, write_end = os.pipe()
    try:
        with Handles([], [[files.data_path]]) as h:
            launch, status, cached = load_with(dev, [CacheHandle((read_end,))], h.data_cache)
            assert status in REJECTED and launch == status and cached is None
            # Saving to a pipe is refused too, without failing preparation.
            result = prepare(dev, add_model(), [CacheHandle((write_end,))], h.data_cache)
            assert result[:2] == (ErrorStatus.NONE, ErrorStatus.NONE)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_huge_model_cache_is_refused_without_reading_it(dev, cache_files) -> None:
    files = cache_files()
    save(dev, add_model(), files)
    with open(files.model_path, "r+b") as fh:
        fh.truncate(1 << 40)  # sparse: a terabyte the driver must not try to read
    assert load(dev, files) == (ErrorStatus.GENERAL_FAILURE, None)


def test_a_damaged_store_loses_its_records_but_caching_recovers(dev, cache_files, store_dir) -> None:
    files = cache_files()
    save(dev, add_model(), files)
    for name in os.listdir(store_dir):
        (store_dir / name).write_bytes(b"this is not a database" * 100)
    assert load(dev, files) == (ErrorStatus.GENERAL_FAILURE, None)
    save(dev, add_model(), files)
    assert load(dev, files)[0] == ErrorStatus.NONE


def test_a_store_folder_others_can_write_is_not_trusted(make_device, cache_files, tmp_path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO)
    dev = make_device(cache_dir=str(shared))
    files = cache_files()
    save(dev, add_model(), files)  # preparation still succeeds
    assert load(dev, files) == (ErrorStatus.GENERAL_FAILURE, None)
    assert not (shared / STORE_FILE).exists()
