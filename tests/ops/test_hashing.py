"""LSH_PROJECTION: FarmHash fingerprints against values computed by an independent FarmHash implementation,
and laws of the projection types."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.ops.hashing import fingerprint64
from tests.ops._vectors_b import OMITTED, given_scalar, given_tensor, output, run_op

FAST = settings(max_examples=20, deadline=None)

# Fingerprint64 of bytes((7 * i + 3) % 256 for i in range(n)), from the pyfarmhash bindings of Google's FarmHash;
# the lengths cover every code path (0-16, 17-32, 33-64 bytes and the 64-byte block loop).
KNOWN = [
    (0, 11160318154034397263),
    (3, 4662423180930907492),
    (7, 5759834791111993764),
    (12, 567769801253413308),
    (20, 9055401396212531348),
    (40, 12941229458084698938),
    (64, 389040666157116578),
    (65, 8638051931306504420),
    (130, 17332912388148689509),
    (300, 16122021424968347411),
]


@pytest.mark.parametrize(("length", "expected"), KNOWN)
def test_fingerprint64_matches_farmhash(length, expected):
    assert fingerprint64(bytes((7 * i + 3) % 256 for i in range(length))) == expected


def lsh(hashes, data, weights, kind: int) -> np.ndarray:
    weight = OMITTED if weights is None else given_tensor(T.TENSOR_FLOAT32, weights)
    inputs = [given_tensor(T.TENSOR_FLOAT32, hashes), given_tensor(T.TENSOR_INT32, data), weight,
              given_scalar(T.INT32, kind)]
    return run_op(Op.LSH_PROJECTION, inputs, [output(T.TENSOR_INT32)])[0]


SEEDS = arrays(np.float32, (3, 4), elements=st.floats(-10, 10, width=32))
DATA = arrays(np.int32, (2, 3))


@FAST
@given(hashes=SEEDS, data=DATA)
def test_sparse_projection_adds_the_hash_function_offset(hashes, data):
    legacy, offset = lsh(hashes, data, None, 1), lsh(hashes, data, None, 3)
    np.testing.assert_array_equal(offset - legacy, np.arange(3) << 4)
    assert np.all((legacy >= 0) & (legacy < 16))


@FAST
@given(hashes=SEEDS, data=DATA, scale=st.floats(0.5, 4.0))
def test_dense_bits_are_the_sparse_signature_bits_and_ignore_positive_weight_scaling(hashes, data, scale):
    dense = lsh(hashes, data, np.array([1.0, 2.0]), 2)
    assert set(dense.tolist()) <= {0, 1}
    sparse = lsh(hashes, data, np.array([1.0, 2.0]), 1)
    packed = [int("".join(str(b) for b in dense[4 * i:4 * i + 4]), 2) for i in range(3)]
    assert sparse.tolist() == packed
    np.testing.assert_array_equal(lsh(hashes, data, np.array([scale, 2 * scale]), 2), dense)
