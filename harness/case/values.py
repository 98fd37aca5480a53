"""Operand values in the case format: JSON lists <-> little-endian bytes (harness.hal.values unpacks bytes)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.hal import numpy_dtype
from harness.hal.values import unpack

# JSON has no non-finite numbers: the case format spells them as strings.
_NON_FINITE_FROM_JSON = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
# Element types that need no conversion before numpy reads a list as float64.
_PLAIN_NUMBERS = frozenset({int, float})


# (min, max) of each integer storage dtype, as np.iinfo gives them.
_INT_BOUNDS = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in map(np.dtype, "u1 i1 <i2 <u2 <i4 <u4".split())}


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
    dtype = numpy_dtype(operand_type)
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
    lo, hi = _INT_BOUNDS[dtype]
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
    dtype = numpy_dtype(operand_type)
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


