"""The driver's LSH_PROJECTION kernel and its FarmHash fingerprint."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import lookup
from driver_under_test.backends.numpy.kernels._farmhash import fingerprint64
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels._vectors_b import call_of, case_params, output, run_and_check, scalar, tensor

T = OperandType


@pytest.mark.parametrize("case", case_params(["LSH_PROJECTION"]))
def test_conformance_vector(case) -> None:
    run_and_check(case)


# Fingerprints produced by Google's C++ FarmHash (Fingerprint64), one per length class of the algorithm.
_KNOWN_FINGERPRINTS = [
    (b"", 0x9AE16A3B2F90404F),
    (b"abc", 0x24A5B3A074E7F369),
    (b"hello world!", 0x3F87E91E111FCF64),
    (bytes(range(20)), 0x8DD7E7F1BF16A0E9),
    (bytes(range(40)), 0x08F45B937B49468C),
    (bytes(range(100)), 0x3CFF0F886D8D6195),
    (bytes(range(200)), 0x074C7FCC26D66FB3),
]


@pytest.mark.parametrize("data,expected", _KNOWN_FINGERPRINTS, ids=[str(len(d)) for d, _ in _KNOWN_FINGERPRINTS])
def test_fingerprint_matches_the_reference_farmhash(data: bytes, expected: int) -> None:
    assert fingerprint64(data) == expected


def _lsh(kind: int, weights=None) -> np.ndarray:
    hashes = tensor([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    values = tensor([[1, 2], [3, 4]], T.TENSOR_INT32)
    return lookup(OperationType.LSH_PROJECTION).fn(
        call_of([hashes, values, weights, scalar(kind)], [output(T.TENSOR_INT32)]))[0]


def test_sparse_signatures_are_the_dense_bits_read_as_binary_numbers() -> None:
    dense = _lsh(2).reshape(3, 2)
    assert set(dense.reshape(-1).tolist()) <= {0, 1}
    legacy = _lsh(1)
    assert legacy.tolist() == [int(2 * a + b) for a, b in dense.tolist()]
    # The current sparse type offsets hash function k by k * 2^bits.
    assert _lsh(3).tolist() == [v + 4 * k for k, v in enumerate(legacy.tolist())]


def test_unit_weights_equal_no_weights() -> None:
    np.testing.assert_array_equal(_lsh(2, tensor([1.0, 1.0])), _lsh(2))


def test_unknown_projection_type_is_invalid() -> None:
    with pytest.raises(DriverError) as err:
        _lsh(4)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT
