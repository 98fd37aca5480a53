"""D18: IBuffer::copyTo / copyFrom with ashmem, mmap_fd and hardware_buffer_blob: sizes, dimensions, state.

The cases follow the public conformance suite's copy tests: wrong memory sizes, dimensions of the wrong rank,
conflicting or unspecified, and copyTo of an uninitialized buffer; each for a buffer of known and of unknown shape.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.hal import ErrorStatus
from harness.hal.memory import create_hardware_buffer, create_hardware_buffer_blob, create_mmap_fd
from tests.driver.conftest import prepared
from tests.driver.memory_domain.helpers import KINDS, A, allocated, copy_in, copy_out, memory_with
from tests.driver.models import add_model

SIZE = A.nbytes  # 16: a float32 [2, 2]


@pytest.fixture
def static_buffer(device):
    """A buffer for input 0 and output 0 of a [2, 2] model: its shape is known at allocation."""
    pm = prepared(device, add_model())
    return allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])[0]


@pytest.fixture
def dynamic_buffer(device):
    """A buffer for input 0 and output 0 of a [0, 2] model: its first dimension is unknown."""
    pm = prepared(device, add_model(dims=[0, 2], out_dims=[0, 2]))
    return allocated(device, [pm], inputs=[(0, 0)], outputs=[(0, 0)])[0]


def _bytes_of_size(size: int) -> bytes:
    return bytes(range(256)) * (size // 256) + bytes(range(size % 256))


@pytest.mark.parametrize("kind", KINDS)
def test_copy_from_then_copy_to_round_trips_on_every_memory_kind(static_buffer, kind: str) -> None:
    assert copy_in(static_buffer, A, kind=kind) == ErrorStatus.NONE
    assert copy_out(static_buffer, SIZE, kind=kind) == (ErrorStatus.NONE, A.tobytes())


def test_copy_to_an_mmap_fd_with_an_offset_writes_the_pool_only(static_buffer) -> None:
    assert copy_in(static_buffer, A) == ErrorStatus.NONE
    with create_mmap_fd(SIZE, offset=5) as memory:
        assert static_buffer.copy_to(memory) == ErrorStatus.NONE
        assert memory.read(0, SIZE) == A.tobytes()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("size", [SIZE // 2, SIZE * 2, SIZE - 1])
def test_copy_from_a_memory_of_the_wrong_size_is_refused(static_buffer, kind: str, size: int) -> None:
    with memory_with(_bytes_of_size(size), kind) as memory:
        assert static_buffer.copy_from(memory, []) == ErrorStatus.INVALID_ARGUMENT
        assert static_buffer.copy_from(memory, [2, 2]) == ErrorStatus.INVALID_ARGUMENT


def test_copy_from_a_wrong_size_with_unknown_dimensions_is_refused(dynamic_buffer) -> None:
    for size in (SIZE // 2, SIZE * 2):
        with memory_with(bytes(size)) as memory:
            assert dynamic_buffer.copy_from(memory, [2, 2]) == ErrorStatus.INVALID_ARGUMENT
    with memory_with(A.tobytes()) as good:
        assert dynamic_buffer.copy_from(good, [2, 2]) == ErrorStatus.NONE
        # A 16-byte memory cannot hold [4, 2], which the buffer would otherwise accept.
        assert dynamic_buffer.copy_from(good, [4, 2]) == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("bad", [[2], [4, 2], [2, 0], [2, 2, 1], [1, 4]])
def test_copy_from_with_dimensions_that_conflict_is_refused(static_buffer, bad: list[int]) -> None:
    assert copy_in(static_buffer, A, dims=bad) == ErrorStatus.INVALID_ARGUMENT
    assert copy_in(static_buffer, A, dims=[]) == ErrorStatus.NONE
    assert copy_in(static_buffer, A, dims=[2, 2]) == ErrorStatus.NONE


@pytest.mark.parametrize("bad", [[2], [2, 4], [2, 0], [0, 2], []])
def test_copy_from_must_fix_unknown_dimensions(dynamic_buffer, bad: list[int]) -> None:
    assert copy_in(dynamic_buffer, A, dims=bad) == ErrorStatus.INVALID_ARGUMENT
    assert copy_in(dynamic_buffer, A, dims=[2, 2]) == ErrorStatus.NONE


def test_copy_from_with_malformed_dimensions_is_refused(static_buffer) -> None:
    with memory_with(A.tobytes()) as memory:
        for bad in ([-1, 2], [2**32, 2], ["2", 2], None, [2] * 1000, 2):
            assert static_buffer.copy_from(memory, bad) == ErrorStatus.INVALID_ARGUMENT  # type: ignore[arg-type]


def test_copy_to_an_uninitialized_buffer_fails(static_buffer, dynamic_buffer) -> None:
    assert copy_out(static_buffer, SIZE)[0] == ErrorStatus.GENERAL_FAILURE
    assert copy_out(dynamic_buffer, SIZE)[0] == ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("kind", KINDS)
def test_copy_to_a_memory_of_the_wrong_size_is_refused(static_buffer, dynamic_buffer, kind: str) -> None:
    for buffer in (static_buffer, dynamic_buffer):
        assert copy_in(buffer, A) == ErrorStatus.NONE
        for size in (SIZE // 2, SIZE * 2):
            assert copy_out(buffer, size, kind)[0] == ErrorStatus.INVALID_ARGUMENT
        assert copy_out(buffer, SIZE, kind) == (ErrorStatus.NONE, A.tobytes())


def test_copy_to_follows_the_dimensions_copy_from_gave(dynamic_buffer) -> None:
    three = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert copy_in(dynamic_buffer, three) == ErrorStatus.NONE
    assert copy_out(dynamic_buffer, SIZE)[0] == ErrorStatus.INVALID_ARGUMENT
    assert copy_out(dynamic_buffer, three.nbytes) == (ErrorStatus.NONE, three.tobytes())
    assert copy_in(dynamic_buffer, A) == ErrorStatus.NONE  # a flexible buffer may change shape
    assert copy_out(dynamic_buffer, SIZE) == (ErrorStatus.NONE, A.tobytes())


def test_memories_the_driver_cannot_use_fail(static_buffer) -> None:
    assert copy_in(static_buffer, A) == ErrorStatus.NONE
    # A non-BLOB hardware buffer is optional for copies and not offered (4 x 1 RGBA pixels = 16 bytes).
    with create_hardware_buffer(4, 1) as rgba:
        assert static_buffer.copy_to(rgba) == ErrorStatus.GENERAL_FAILURE
        assert static_buffer.copy_from(rgba, []) == ErrorStatus.GENERAL_FAILURE
    with create_hardware_buffer_blob(SIZE, decodable=False) as undecodable:
        assert static_buffer.copy_to(undecodable) == ErrorStatus.GENERAL_FAILURE
    assert static_buffer.copy_to(None) == ErrorStatus.INVALID_ARGUMENT  # type: ignore[arg-type]
    assert static_buffer.copy_from("memory", []) == ErrorStatus.INVALID_ARGUMENT  # type: ignore[arg-type]


def test_a_scalar_buffer_copies_without_dimensions(device) -> None:
    from tests.driver.memory_domain.helpers import typed_add_model

    pm = prepared(device, typed_add_model([2, 2], activation_input=True))
    buffer, _ = allocated(device, [pm], inputs=[(0, 2)])
    value = np.array(3, dtype=np.int32)
    assert copy_in(buffer, value, dims=[1]) == ErrorStatus.INVALID_ARGUMENT
    assert copy_in(buffer, value, dims=[]) == ErrorStatus.NONE
    assert copy_out(buffer, 4) == (ErrorStatus.NONE, value.tobytes())
