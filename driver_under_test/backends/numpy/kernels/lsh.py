"""LSH_PROJECTION: project input rows to bits through seeded FarmHash fingerprints (locality-sensitive hashing)."""

from __future__ import annotations

import numpy as np

from driver_under_test.backends.numpy.kernels._farmhash import fingerprint64
from driver_under_test.backends.numpy.kernels._recurrent import present
from driver_under_test.backends.numpy.kernels.common import fault_active, quiet
from driver_under_test.backends.numpy.kernels.registry import OpCall, kernel
from driver_under_test.errors import invalid
from driver_under_test.faults import define
from harness.hal import OperandType, OperationType

FARMHASH_BLOCK_OVERLAP = define(
    "farmhash_block_overlap",
    "execution",
    "The FarmHash fingerprint LSH_PROJECTION hashes each input row with reads the second 32-byte half of every "
    "64-byte block of its main loop from offset 24 instead of 32 (overlapping the first half): keys of up to 64 "
    "bytes hash correctly, longer ones (a 4-byte seed and a row of more than 60 bytes) get other fingerprints, so "
    "the projected bits differ from the HAL's (which are defined exactly).",
).name

_SPARSE_DEPRECATED = 1
_DENSE = 2
_SPARSE = 3


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _sign_bit(seed: np.float32, rows: list[bytes], weights: np.ndarray | None, overlap: bool = False) -> int:
    """1 when the (weighted) sum of the signed fingerprints of seed+row over all rows is positive."""
    prefix = np.float32(seed).tobytes()
    score = 0.0
    for k, row in enumerate(rows):
        value = float(_signed(fingerprint64(prefix + row, overlap)))
        score += value if weights is None else float(weights[k]) * value
    return 1 if score > 0 else 0


@kernel(OperationType.LSH_PROJECTION, (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16))
@quiet
def lsh_projection(call: OpCall) -> list[np.ndarray]:
    """Sparse (one int32 signature per hash function) or dense (one bit per seed) projection."""
    hashes, inp, weight = call.inputs[0], call.inputs[1], call.inputs[2]
    kind = int(call.scalar(3))
    if hashes.data.ndim != 2:
        raise invalid("hash tensor must have rank 2", "shape.rank")
    num_hash, num_bits = hashes.data.shape
    if inp is None or inp.data is None or inp.data.ndim < 1:
        raise invalid("input must have rank 1 or more", "shape.rank")
    if kind not in (_SPARSE_DEPRECATED, _DENSE, _SPARSE):
        raise invalid(f"unknown projection type {kind}", "param.lsh_type")
    if kind != _DENSE and num_bits > 32:
        raise invalid(f"sparse projection needs at most 32 bits per hash, got {num_bits}", "shape.hash")
    weights = None
    if present(weight):
        if weight.data.shape != (inp.data.shape[0],):
            raise invalid(f"weight shape {weight.data.shape} does not match input rows", "shape.weight")
        weights = weight.data.astype(np.float64)
    # Each input row is hashed as its raw stored bytes.
    stored = np.ascontiguousarray(inp.data)
    rows = [stored[k].tobytes() for k in range(stored.shape[0])]
    seeds = hashes.data.astype(np.float32)
    overlap = fault_active(call, FARMHASH_BLOCK_OVERLAP)
    bits = np.array([[_sign_bit(seeds[i, j], rows, weights, overlap) for j in range(num_bits)]
                     for i in range(num_hash)], dtype=np.int64).reshape(num_hash, num_bits)
    if kind == _DENSE:
        return [bits.reshape(-1).astype(np.int32)]
    signatures = np.zeros(num_hash, dtype=np.int64)
    for j in range(num_bits):
        signatures = (signatures << 1) | bits[:, j]
    if kind == _SPARSE:
        # Offsets keep different hash functions' signatures apart.
        signatures = signatures + np.arange(num_hash, dtype=np.int64) * (1 << num_bits)
    return [signatures.astype(np.int32)]
