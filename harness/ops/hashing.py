"""Locality-sensitive hashing: LSH_PROJECTION.

Each projected bit is the sign of a weighted sum, over the input's rows, of a 64-bit fingerprint of
(seed as float32 bytes + the row's stored bytes), where the seed is one entry of the hash tensor. The
fingerprint is FarmHash's Fingerprint64 (the function the HAL's reference uses), written out below from its
published definition; the fingerprint is read as a signed 64-bit integer.
"""

from __future__ import annotations

import struct

import numpy as np

from harness.hal import OperandType, OperationType
from harness.ops._nn_util import F16, F32, I32, Q8, Inputs, define_single_form, dim, scalars, tensor
from harness.ops.common import RANK_FROM_1, to_real
from harness.ops.registry import KernelContext, ShapeContext, Signature

SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3

# --------------------------------------------------------------------------------------------------------------
# FarmHash Fingerprint64 (farmhashna::Hash64)

_MASK = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _fetch64(s: bytes, i: int) -> int:
    return struct.unpack_from("<Q", s, i)[0]


def _fetch32(s: bytes, i: int) -> int:
    return struct.unpack_from("<I", s, i)[0]


def _rotate(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _MASK


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _hash_len_0_to_16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _MASK
        b = _fetch64(s, n - 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        a = _fetch32(s, 0)
        return _hash_len16((n + (a << 3)) & _MASK, _fetch32(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _MASK) * _K2) & _MASK
    return _K2


def _hash_len_17_to_32(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * _K2) & _MASK
    return _hash_len16(
        (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK,
        (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK,
        mul,
    )


def _hash_len_33_to_64(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _MASK
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _MASK
    d = (_fetch64(s, n - 16) * _K2) & _MASK
    y = (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK
    z = _hash_len16(y, (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_fetch64(s, 16) * mul) & _MASK
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _MASK
    h = ((z + _fetch64(s, n - 24)) * mul) & _MASK
    return _hash_len16(
        (_rotate((e + f) & _MASK, 43) + _rotate(g, 30) + h) & _MASK,
        (e + _rotate((f + a) & _MASK, 18) + g) & _MASK,
        mul,
    )


def _weak_hash_len32_with_seeds(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = (_fetch64(s, i + k) for k in (0, 8, 16, 24))
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def fingerprint64(s: bytes) -> int:
    """FarmHash Fingerprint64 of a byte string, as an unsigned 64-bit integer."""
    n = len(s)
    if n <= 16:
        return _hash_len_0_to_16(s)
    if n <= 32:
        return _hash_len_17_to_32(s)
    if n <= 64:
        return _hash_len_33_to_64(s)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    v = (0, 0)
    w = (0, 0)
    x = (x * _K2 + _fetch64(s, 0)) & _MASK
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    pos = 0
    while True:
        x = (_rotate((x + y + v[0] + _fetch64(s, pos + 8)) & _MASK, 37) * _K1) & _MASK
        y = (_rotate((y + v[1] + _fetch64(s, pos + 48)) & _MASK, 42) * _K1) & _MASK
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, pos + 40)) & _MASK
        z = (_rotate((z + w[0]) & _MASK, 33) * _K1) & _MASK
        v = _weak_hash_len32_with_seeds(s, pos, (v[1] * _K1) & _MASK, (x + w[0]) & _MASK)
        w = _weak_hash_len32_with_seeds(s, pos + 32, (z + w[1]) & _MASK, (y + _fetch64(s, pos + 16)) & _MASK)
        z, x = x, z
        pos += 64
        if pos == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    pos = last64
    w = ((w[0] + ((n - 1) & 63)) & _MASK, w[1])
    v = ((v[0] + w[0]) & _MASK, v[1])
    w = ((w[0] + v[0]) & _MASK, w[1])
    x = (_rotate((x + y + v[0] + _fetch64(s, pos + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotate((y + v[1] + _fetch64(s, pos + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w[1] * 9) & _MASK
    y = (y + v[0] * 9 + _fetch64(s, pos + 40)) & _MASK
    z = (_rotate((z + w[0]) & _MASK, 33) * mul) & _MASK
    v = _weak_hash_len32_with_seeds(s, pos, (v[1] * mul) & _MASK, (x + w[0]) & _MASK)
    w = _weak_hash_len32_with_seeds(s, pos + 32, (z + w[1]) & _MASK, (y + _fetch64(s, pos + 16)) & _MASK)
    z, x = x, z
    return _hash_len16(
        (_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _MASK,
        (_hash_len16(v[1], w[1], mul) + x) & _MASK,
        mul,
    )


def signed64(v: int) -> int:
    """An unsigned 64-bit value read as two's complement."""
    return v - (1 << 64) if v >= 1 << 63 else v


# --------------------------------------------------------------------------------------------------------------
# LSH_PROJECTION


def running_sign_bit(rows: list[bytes], weights: np.ndarray | None, seed: float) -> int:
    """1 if the (weighted) sum of the rows' seeded fingerprints is positive, else 0."""
    key_seed = struct.pack("<f", seed)
    score = 0.0
    for k, row in enumerate(rows):
        value = float(signed64(fingerprint64(key_seed + row)))
        score += value if weights is None else float(weights[k]) * value
    return 1 if score > 0 else 0


def lsh_projection_kernel(ctx: KernelContext) -> list[np.ndarray]:
    """Sparse: per hash function, its bits packed into one int32 (plus k << num_bits for type SPARSE);
    dense: every bit as one int32."""
    seeds = to_real(ctx.inputs[0], ctx.input_operands[0])
    data = np.ascontiguousarray(ctx.inputs[1])
    weights = None if not ctx.has(2) else to_real(ctx.inputs[2], ctx.input_operands[2])
    kind = int(ctx.scalar(3))
    num_hash, num_bits = seeds.shape
    raw = data.tobytes()
    row_bytes = len(raw) // data.shape[0] if data.shape[0] else 0
    rows = [raw[k * row_bytes : (k + 1) * row_bytes] for k in range(data.shape[0])]
    if kind == DENSE:
        bits = [running_sign_bit(rows, weights, float(seeds[i, j])) for i in range(num_hash) for j in range(num_bits)]
        return [np.array(bits, dtype=np.int32)]
    out = []
    for i in range(num_hash):
        signature = 0
        for j in range(num_bits):
            signature = (signature << 1) | running_sign_bit(rows, weights, float(seeds[i, j]))
        if kind == SPARSE:
            signature += i << num_bits
        out.append(signature)
    return [np.array(out, dtype=np.int32)]


def lsh_shape(ctx: ShapeContext) -> list[tuple[int, ...]]:
    """[num_hash] (sparse) or [num_hash * num_bits] (dense)."""
    inputs = Inputs(ctx)
    num_hash, num_bits = dim(inputs.shape(0), 0), dim(inputs.shape(0), 1)
    kind = inputs.scalar(3)
    if kind is None:
        return [(0,)]
    return [(num_hash * num_bits,) if kind == DENSE else (num_hash,)]


def _check(ctx: ShapeContext) -> list[str]:
    inputs = Inputs(ctx)
    problems = []
    kind = inputs.scalar(3)
    if kind is not None and kind not in (SPARSE_DEPRECATED, DENSE, SPARSE):
        problems.append("type must be 1 (sparse, deprecated), 2 (dense) or 3 (sparse)")
    num_hash, num_bits = dim(inputs.shape(0), 0), dim(inputs.shape(0), 1)
    if kind in (SPARSE_DEPRECATED, SPARSE) and num_hash and num_bits > 32 - int(np.ceil(np.log2(num_hash))):
        problems.append("sparse projection needs num_bits + ceil(log2(num_hash)) <= 32")
    w, x = inputs.shape(2), inputs.shape(1)
    if w and x and w[0] and x[0] and w[0] != x[0]:
        problems.append("weight length must equal the input's first dimension")
    return problems


def _check_v10(ctx: ShapeContext) -> list[str]:
    # Type SPARSE (3) arrived with HAL 1.2.
    kind = Inputs(ctx).scalar(3)
    return _check(ctx) + (["type 3 (sparse) needs HAL 1.2"] if kind == SPARSE else [])


# The HAL puts "no restriction on DataType" on the input: any tensor type, each from the version that added it.
_INPUT_TYPES_SINCE = {
    F32: "V1_0",
    I32: "V1_0",
    Q8: "V1_0",
    F16: "V1_2",
    OperandType.TENSOR_BOOL8: "V1_2",
    OperandType.TENSOR_QUANT16_SYMM: "V1_2",
    OperandType.TENSOR_QUANT16_ASYMM: "V1_2",
    OperandType.TENSOR_QUANT8_SYMM: "V1_2",
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: "V1_3",
}


def _signatures() -> list[Signature]:
    """Float32 hashes since HAL 1.0 (type 3 needs 1.2), float16 hashes since HAL 1.2; any input tensor type."""
    sigs = []
    for hash_t in (F32, F16):
        for data_t, since in _INPUT_TYPES_SINCE.items():
            ins = (tensor("hash", hash_t, 2), tensor("input", data_t, RANK_FROM_1),
                   tensor("weight", hash_t, 1, optional=True), *scalars("type"))
            out = (tensor("output", I32, 1),)
            if hash_t == F32 and since == "V1_0":
                sigs.append(Signature(ins, out, None, "V1_0", _check_v10))
            sigs.append(Signature(ins, out, None, "V1_3" if since == "V1_3" else "V1_2", _check))
    return sigs


define_single_form(
    OperationType.LSH_PROJECTION,
    "hashing",
    _signatures(),
    lsh_shape,
    lsh_projection_kernel,
    {
        "input_range": (-10.0, 10.0),
        "params": {"type": [SPARSE_DEPRECATED, DENSE, SPARSE]},
        "note": "hash [num_hash, num_bits] with num_bits <= 16 keeps sparse signatures in range",
    },
)
