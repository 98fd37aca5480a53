"""D24 time-of-check/time-of-use: cache files overwritten with another model's while the driver uses them.

As in the HAL's conformance tests, model A is a chain of 20 ADDs of 1.0 (input 1 -> output 21) and model B a
chain of 20 MULs by 1.0 (input 1 -> output 1). While A is saved, or prepared from cache, another thread copies
B's cache files over A's. Preparation may fail or succeed, but a model prepared under A's token must compute
A's output, never B's.
"""

from __future__ import annotations

import os
import threading

import pytest

from driver_under_test import _cache_files
from harness.hal import ErrorStatus, OperationType
from tests.driver.cache.support import (
    OTHER_TOKEN,
    TOKEN,
    CacheFiles,
    Handles,
    chain_model,
    f32,
    load,
    load_with,
    run,
    save,
)

ITERATIONS = 100
MODEL_A = chain_model(OperationType.ADD, 20)
MODEL_B = chain_model(OperationType.MUL, 20)
A_OUTPUT, B_OUTPUT = 21.0, 1.0


def _copy_over(source: tuple[bytes, bytes], target: CacheFiles) -> None:
    """Overwrite the target files in place (no truncation), in small writes as a racing client would."""
    for content, path in zip(source, target.paths):
        fd = os.open(path, os.O_WRONLY)
        try:
            for at in range(0, len(content), 64):
                os.pwrite(fd, content[at : at + 64], at)
        finally:
            os.close(fd)


def _copy_until(stop: threading.Event, source: tuple[bytes, bytes], target: CacheFiles) -> None:
    """Copy over and over (at most 1000 times) until told to stop, so the copies overlap the driver's writes."""
    for _ in range(1000):
        _copy_over(source, target)
        if stop.is_set():
            return


def _output_of(prepared) -> float:
    return float(run(prepared, MODEL_A, [f32([1])])[0][0])


@pytest.fixture
def files(dev, cache_files):
    """(A's files, B's cache bytes): B saved under OTHER_TOKEN, A's files empty."""
    b_files = cache_files("b")
    save(dev, MODEL_B, b_files, OTHER_TOKEN)
    return cache_files("a"), b_files.read()


def test_overwriting_during_save_never_prepares_the_other_model(dev, files) -> None:
    a_files, b_cache = files
    outputs = []
    for _ in range(ITERATIONS):
        stop = threading.Event()
        attacker = threading.Thread(target=_copy_until, args=(stop, b_cache, a_files))
        attacker.start()
        save(dev, MODEL_A, a_files, TOKEN)
        stop.set()
        attacker.join()
        status, prepared = load(dev, a_files, TOKEN)
        if status == ErrorStatus.NONE:
            outputs.append(_output_of(prepared))
        else:
            assert status == ErrorStatus.GENERAL_FAILURE
    assert B_OUTPUT not in outputs
    assert set(outputs) <= {A_OUTPUT}


def test_overwriting_during_retrieval_never_prepares_the_other_model(dev, files) -> None:
    a_files, b_cache = files
    outputs = []
    for _ in range(ITERATIONS):
        save(dev, MODEL_A, a_files, TOKEN)
        attacker = threading.Thread(target=_copy_over, args=(b_cache, a_files))
        with Handles.of(a_files) as h:
            attacker.start()
            launch, status, prepared = load_with(dev, h.model_cache, h.data_cache, TOKEN)
            attacker.join()
        assert launch == ErrorStatus.NONE
        if status == ErrorStatus.NONE:
            outputs.append(_output_of(prepared))
        else:
            assert status == ErrorStatus.GENERAL_FAILURE and prepared is None
    assert set(outputs) <= {A_OUTPUT}


def swap_after_first_model_read(monkeypatch, target: CacheFiles, replacement: tuple[bytes, bytes]) -> list[str]:
    """Make both cache files change to `replacement` right after the driver's first read of the model cache.

    The deterministic form of the race: whatever the driver reads from the model cache after its first read
    (a second read, a re-check) sees the other model. Returns the list of reads made, for the assertions.
    """
    reads: list[str] = []
    real = _cache_files.read_all

    def read_then_swap(file, limit, what):
        content = real(file, limit, what)
        reads.append(what)
        if what == "model cache" and reads.count("model cache") == 1:
            target.write(*replacement)
        return content

    monkeypatch.setattr(_cache_files, "read_all", read_then_swap)
    return reads


def test_the_model_cache_is_read_once_and_the_bytes_checked_are_the_bytes_used(dev, files, monkeypatch) -> None:
    a_files, b_cache = files
    save(dev, MODEL_A, a_files, TOKEN)
    assert a_files.read()[1] == b_cache[1]  # the two chains' constants are the same: only the structure differs
    reads = swap_after_first_model_read(monkeypatch, a_files, b_cache)
    status, prepared = load(dev, a_files, TOKEN)
    assert reads.count("model cache") == 1
    assert a_files.read() == b_cache
    # The driver prepared what it read and checked before the swap: model A.
    assert status == ErrorStatus.NONE and _output_of(prepared) == A_OUTPUT
