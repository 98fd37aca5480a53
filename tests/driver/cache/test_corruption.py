"""D24: no single-bit change of a model cache prepares, and a damaged data cache never crashes the driver.

The bit-flip test covers every bit of the model cache of a tiny model (an ADD of two 2x2 inputs, a few hundred
bytes: the whole file, not a sample).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from harness.hal import CacheHandle, ErrorStatus, OperationType
from tests.driver.cache.support import chain_model, f32, load, load_with, prepare, run, save
from tests.driver.models import add_model

A = f32([[1, 2], [3, 4]])
B = f32([[10, 20], [30, 40]])


@pytest.fixture
def memfd_cache(dev):
    """(model fd, data fd, model cache handles, data cache handles) holding add_model's cache."""
    model_fd, data_fd = os.memfd_create("model-cache"), os.memfd_create("data-cache")
    model_cache, data_cache = [CacheHandle((model_fd,))], [CacheHandle((data_fd,))]
    assert prepare(dev, add_model(), model_cache, data_cache)[1] == ErrorStatus.NONE
    yield model_fd, data_fd, model_cache, data_cache
    os.close(model_fd)
    os.close(data_fd)


def test_no_single_bit_flip_of_the_model_cache_is_accepted(dev, memfd_cache) -> None:
    model_fd, _, model_cache, data_cache = memfd_cache
    size = os.fstat(model_fd).st_size
    assert 0 < size <= 4096  # small enough to try every bit
    original = os.pread(model_fd, size, 0)
    accepted = []
    for offset in range(size):
        for bit in range(8):
            os.pwrite(model_fd, bytes([original[offset] ^ (1 << bit)]), offset)
            launch, status, prepared = load_with(dev, model_cache, data_cache)
            if status != ErrorStatus.GENERAL_FAILURE or prepared is not None or launch != ErrorStatus.NONE:
                accepted.append((offset, bit, status))
        os.pwrite(model_fd, original[offset : offset + 1], offset)
    assert accepted == []
    assert load_with(dev, model_cache, data_cache)[1] == ErrorStatus.NONE  # the restored cache still works


def _outcome_of_damaged_data(dev, model_cache, data_cache) -> ErrorStatus:
    """Prepare from a damaged data cache: no exception may escape, and a prepared model must still execute."""
    launch, status, prepared = load_with(dev, model_cache, data_cache)
    assert status in (ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE)
    assert launch in (ErrorStatus.NONE, status) and (prepared is None) == (status != ErrorStatus.NONE)
    if prepared is not None:
        run(prepared, add_model(), [A, B])  # wrong values are allowed, a crash is not
    return status


def test_every_single_bit_flip_of_the_data_cache_is_survived(dev, memfd_cache) -> None:
    _, data_fd, model_cache, data_cache = memfd_cache
    size = os.fstat(data_fd).st_size
    original = os.pread(data_fd, size, 0)
    statuses = set()
    for offset in range(size):
        for bit in range(8):
            os.pwrite(data_fd, bytes([original[offset] ^ (1 << bit)]), offset)
            statuses.add(_outcome_of_damaged_data(dev, model_cache, data_cache))
        os.pwrite(data_fd, original[offset : offset + 1], offset)
    # This driver verifies the data cache through the hash its model cache records: each flip is refused.
    assert statuses == {ErrorStatus.GENERAL_FAILURE}


@pytest.mark.parametrize("seed", range(20))
def test_random_data_caches_are_survived(dev, memfd_cache, seed) -> None:
    _, data_fd, model_cache, data_cache = memfd_cache
    rng = np.random.default_rng(seed)
    size = os.fstat(data_fd).st_size
    original = os.pread(data_fd, size, 0)
    length = int(rng.integers(0, 2 * size + 2))
    damaged = rng.integers(0, 256, length, dtype=np.uint8).tobytes()
    if seed % 2:  # keep the real header, randomize what follows
        damaged = original[:16] + damaged
    os.ftruncate(data_fd, 0)
    os.pwrite(data_fd, damaged, 0)
    assert _outcome_of_damaged_data(dev, model_cache, data_cache) == ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("keep", [0, 1, 8, 15, 16, 17, -1])
def test_truncated_and_extended_data_caches_are_survived(dev, memfd_cache, keep) -> None:
    _, data_fd, model_cache, data_cache = memfd_cache
    size = os.fstat(data_fd).st_size
    original = os.pread(data_fd, size, 0)
    os.ftruncate(data_fd, 0)
    os.pwrite(data_fd, original[:keep] if keep >= 0 else original + b"\x00" * 7, 0)
    assert _outcome_of_damaged_data(dev, model_cache, data_cache) == ErrorStatus.GENERAL_FAILURE


def test_a_data_cache_from_another_model_with_the_same_layout_is_refused(dev, cache_files) -> None:
    # Two models of the same structure and constant sizes: only the verified data hash tells their data apart.
    ones_files, twos_files = cache_files("ones"), cache_files("twos")
    save(dev, chain_model(OperationType.ADD, 4), ones_files)
    twos = chain_model(OperationType.ADD, 4)
    twos.operand_values = twos.operand_values[:4] + np.full(4, 2.0, np.float32).tobytes()  # every 1.0 -> 2.0
    save(dev, twos, twos_files, bytes(32))
    ones_files.write(data=twos_files.read()[1])
    assert load(dev, ones_files) == (ErrorStatus.GENERAL_FAILURE, None)
