"""The caching faults: each lets through exactly the cache its description says, and only when it is active.

A is a chain of 20 ADDs of 1.0 (input 1 -> 21), B a chain of 20 MULs by 1.0 (input 1 -> 1), saved under
different tokens; the same scenario is run on a clean device and on one started with the fault.
"""

from __future__ import annotations

import os

import pytest

from driver_under_test import CATALOGUE
from harness.hal import CacheHandle, ErrorStatus, OperationType
from tests.driver.cache.support import OTHER_TOKEN, TOKEN, chain_model, f32, load, load_with, prepare, run, save
from tests.driver.cache.test_toctou import swap_after_first_model_read
from tests.driver.models import add_model

HASH_CHECKS_PREFIX = "cache_hash_checks_prefix"
CHECKED_ON_FILE = "cache_checked_on_file"
TOKEN_IGNORED = "cache_token_ignored"
MODEL_A = chain_model(OperationType.ADD, 20)
MODEL_B = chain_model(OperationType.MUL, 20)
A_OUTPUT, B_OUTPUT = 21.0, 1.0


def _outcome(status, prepared) -> str | float:
    """The callback status name, or the output the prepared model computes for input 1."""
    if status != ErrorStatus.NONE:
        return status.name
    return float(run(prepared, MODEL_A, [f32([1])])[0][0])


def _saved_pair(device, cache_files):
    a_files, b_files = cache_files("a"), cache_files("b")
    save(device, MODEL_A, a_files, TOKEN)
    save(device, MODEL_B, b_files, OTHER_TOKEN)
    return a_files, b_files


def test_the_cache_faults_are_catalogued_under_cache() -> None:
    for name in (HASH_CHECKS_PREFIX, CHECKED_ON_FILE, TOKEN_IGNORED):
        assert CATALOGUE[name].area == "cache"


@pytest.mark.parametrize("fault", [HASH_CHECKS_PREFIX, TOKEN_IGNORED])
def test_cache_hash_checks_prefix_and_cache_token_ignored_accept_another_models_cache(
    make_device, cache_files, fault
) -> None:
    results = {}
    for faults in ([], [fault]):
        device = make_device(faults)
        a_files, b_files = _saved_pair(device, cache_files)
        a_files.copy_from(b_files)
        results[bool(faults)] = _outcome(*load(device, a_files, TOKEN))
    assert results == {False: "GENERAL_FAILURE", True: B_OUTPUT}


def test_cache_token_ignored(make_device, cache_files) -> None:
    # The right files under another model's token.
    results = {}
    for faults in ([], [TOKEN_IGNORED]):
        device = make_device(faults)
        a_files, _ = _saved_pair(device, cache_files)
        results[bool(faults)] = _outcome(*load(device, a_files, OTHER_TOKEN))
    assert results == {False: "GENERAL_FAILURE", True: A_OUTPUT}


def test_cache_checked_on_file(make_device, cache_files, monkeypatch) -> None:
    # Both files change right after the driver's first read of the model cache.
    results = {}
    for faults in ([], [CHECKED_ON_FILE]):
        device = make_device(faults)
        a_files, b_files = _saved_pair(device, cache_files)
        with monkeypatch.context() as m:
            swap_after_first_model_read(m, a_files, b_files.read())
            results[bool(faults)] = _outcome(*load(device, a_files, TOKEN))
    assert results == {False: A_OUTPUT, True: B_OUTPUT}


def test_cache_hash_checks_prefix(make_device) -> None:
    # Without the fault no flip is accepted (test_corruption tries every bit); with it, one soon is.
    device = make_device([HASH_CHECKS_PREFIX])
    model_fd, data_fd = os.memfd_create("model-cache"), os.memfd_create("data-cache")
    try:
        model_cache, data_cache = [CacheHandle((model_fd,))], [CacheHandle((data_fd,))]
        assert prepare(device, add_model(), model_cache, data_cache)[1] == ErrorStatus.NONE
        original = os.pread(model_fd, os.fstat(model_fd).st_size, 0)
        first_accepted = None
        for position in range(len(original) * 8):
            offset, bit = divmod(position, 8)
            os.pwrite(model_fd, bytes([original[offset] ^ (1 << bit)]), offset)
            if load_with(device, model_cache, data_cache)[1] == ErrorStatus.NONE:
                first_accepted = position
                break
            os.pwrite(model_fd, original[offset : offset + 1], offset)
    finally:
        os.close(model_fd)
        os.close(data_fd)
    assert first_accepted is not None
