"""Operand values: JSON lists <-> little-endian bytes <-> numpy arrays, and reading a model's constants."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.hal import Model, OperandLifeTime, OperandType, Subgraph, numpy_dtype, operand_byte_size
from harness.hal.memory import MemoryBoundsError, MemoryMapError

# JSON has no non-finite numbers: the case format spells them as strings.
_NON_FINITE_FROM_JSON = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
# Element types that need no conversion before numpy reads a list as float64.
_PLAIN_NUMBERS = frozenset({int, float})


def _storage_dtypes() -> dict[int, np.dtype]:
    out = {}
    for t in OperandType:
        try:
            out[int(t)] = numpy_dtype(t)
        except ValueError:
            pass
    return out


# numpy_dtype builds a new dtype object per call; values are packed and unpacked per operand.
STORAGE_DTYPES: dict[int, np.dtype] = _storage_dtypes()  # per operand type that has element storage
# (min, max) of each integer dtype, as np.iinfo gives them.
_INT_BOUNDS = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in STORAGE_DTYPES.values() if d.kind in "iu"}


def storage_dtype(operand_type: int) -> np.dtype:
    """numpy_dtype(operand_type), without building a new dtype object for the HAL's types."""
    dtype = STORAGE_DTYPES.get(operand_type)
    return dtype if dtype is not None else numpy_dtype(operand_type)


def _float_from_json(x: object) -> float:
    if isinstance(x, str):
        try:
            return _NON_FINITE_FROM_JSON[x.lower()]
        except KeyError:
            raise ValueError(f"not a number: {x!r} (only 'nan', 'inf' and '-inf' are allowed)") from None
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise ValueError(f"not a number: {x!r}")
    return float(x)


def float_from_json(x: object) -> float:
    """A JSON number, or one of the strings "nan"/"inf"/"-inf", as a Python float."""
    if type(x) is float:
        return x
    return _float_from_json(x)


def float_to_json(x: float) -> float | str:
    """A Python float as JSON: the number itself, or "nan"/"inf"/"-inf"."""
    x = float(x)
    if math.isfinite(x):
        return x
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def pack(values: Sequence | np.ndarray, operand_type: int) -> bytes:
    """Flat values of an operand type as the little-endian bytes the HAL stores."""
    dtype = storage_dtype(operand_type)
    flat = values.ravel().tolist() if isinstance(values, np.ndarray) else list(values)
    if dtype.kind == "f":
        if not _PLAIN_NUMBERS.issuperset(map(type, flat)) and any(isinstance(x, str | bool) or x is None for x in flat):
            flat = [_float_from_json(x) for x in flat]
        doubles = np.array(flat, dtype=np.float64)
        # Values beyond the type's range round to infinity, as a float cast in C would.
        with np.errstate(over="ignore"):
            return doubles.astype(dtype).tobytes()
    array = np.array(flat)
    if array.size == 0:
        return b""
    kind = array.dtype.kind
    if dtype.kind == "b":
        # Membership in {0, 1} by equality (what np.isin does, at a fraction of its cost on small arrays).
        if kind not in "biuf" or not ((array == 0) | (array == 1)).all():
            raise ValueError(f"not booleans: {_first_offender(flat, lambda x: x in (0, 1))!r}")
        return array.astype(np.bool_).tobytes()
    lo, hi = _INT_BOUNDS[dtype] if dtype in _INT_BOUNDS else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    if kind in "biu":
        ok = True
    elif kind == "f":
        with np.errstate(invalid="ignore"):
            ok = bool(np.all(np.mod(array, 1) == 0))
    else:
        ok = False
    if not ok or array.min() < lo or array.max() > hi:
        bad = _first_offender(flat, lambda x: _is_integral(x) and lo <= x <= hi)
        raise ValueError(f"value {bad!r} does not fit operand type {operand_type} ({dtype.name})")
    return array.astype(dtype).tobytes()


def _is_integral(x: object) -> bool:
    return isinstance(x, int | np.integer) or (isinstance(x, float) and x.is_integer())


def _first_offender(flat: list, ok: object) -> object:
    for x in flat:
        try:
            if not ok(x):  # type: ignore[operator]
                return x
        except TypeError:
            return x
    return None


def unpack(
    raw: bytes | bytearray | memoryview, operand_type: int, dimensions: Sequence[int] | None = None
) -> np.ndarray:
    """Bytes of an operand type as a new array in its stored dtype, shaped by `dimensions` (flat if None)."""
    dtype = storage_dtype(operand_type)
    if len(raw) % dtype.itemsize:
        raise ValueError(f"{len(raw)} bytes is not a whole number of {dtype.itemsize}-byte elements")
    array = np.frombuffer(bytes(raw), dtype=dtype).copy()
    if dimensions is None:
        return array
    if math.prod(dimensions) != array.size:
        raise ValueError(f"{array.size} elements do not fill dimensions {list(dimensions)}")
    return array.reshape(tuple(dimensions))


def to_json_values(array: np.ndarray) -> list:
    """A flat JSON list of an array's values; floats in the shortest form that reads back to the same value."""
    array = np.asarray(array).ravel()
    if array.dtype.kind == "f":
        if array.dtype.itemsize == 8:
            return [x if math.isfinite(x) else float_to_json(x) for x in array.tolist()]
        # str() of a numpy float32/float16 scalar is the shortest decimal that rounds back to it.
        if np.isfinite(array).all():
            return [float(str(x)) for x in array]
        out: list = []
        for x in array:
            out.append(float(str(x)) if np.isfinite(x) else float_to_json(float(x)))
        return out
    if array.dtype.kind == "b":
        return [bool(x) for x in array.tolist()]
    return [int(x) for x in array.tolist()]


def normalize_values(values: Sequence, operand_type: int) -> list:
    """JSON values as they read back after storage in an operand of this type (rounded to its precision)."""
    return to_json_values(unpack(pack(values, operand_type), operand_type))


def json_values_round_trip(raw: bytes, operand_type: int) -> bool:
    """True when unpack -> to_json_values -> pack gives these exact bytes back (no NaN payloads, no odd bools)."""
    dtype = storage_dtype(operand_type)
    if len(raw) % dtype.itemsize:
        return False
    if dtype.kind == "f":
        array = np.frombuffer(raw, dtype=dtype)
        if not np.isnan(array).any():
            return True
    elif dtype.kind == "b":
        return not bytes(raw).translate(None, b"\x00\x01")  # every byte is 0 or 1
    else:
        return True
    return pack(to_json_values(unpack(raw, operand_type)), operand_type) == raw


def constant_bytes(model: Model, operand_lifetime: int, location: object) -> bytes | None:
    """The bytes a constant's location points at in operandValues or a pool, or None if it points nowhere."""
    pool_index, offset, length = location.pool_index, location.offset, location.length  # type: ignore[attr-defined]
    if offset < 0 or length < 0:
        return None
    if operand_lifetime == OperandLifeTime.CONSTANT_COPY:
        if pool_index != 0 or offset + length > len(model.operand_values):
            return None
        return bytes(model.operand_values[offset : offset + length])
    if operand_lifetime == OperandLifeTime.CONSTANT_REFERENCE:
        if not 0 <= pool_index < len(model.pools):
            return None
        try:
            return model.pools[pool_index].read(offset, length)
        except (MemoryBoundsError, MemoryMapError, AttributeError):
            return None
    return None


def constant_value(model: Model, subgraph: Subgraph, operand_index: int) -> np.ndarray | None:
    """A constant operand's value shaped by its dimensions, or None if it is not a readable constant."""
    if not 0 <= operand_index < len(subgraph.operands):
        return None
    operand = subgraph.operands[operand_index]
    try:
        expected = operand_byte_size(operand.type, operand.dimensions)
        storage_dtype(operand.type)
    except ValueError:
        return None
    if expected == 0 and math.prod(operand.dimensions) != 0:
        return None  # unknown dimensions: a constant must be fully specified
    raw = constant_bytes(model, operand.lifetime, operand.location)
    if raw is None or len(raw) != expected:
        return None
    return unpack(raw, operand.type, operand.dimensions)
