"""Accuracy criteria for output values (REQUIREMENTS O2): per-type tolerances and element-wise comparison.

An element passes when `|actual - expected| <= atol + rtol * |expected|`. Float expectations that are NaN,
infinite or larger than 1e3 in magnitude are skipped, as the public conformance suites do: such values say
more about the reference's own rounding than about the driver. Outputs the HAL defines exactly (indices, counts,
hash bits, integer arithmetic: harness.oracle.exactness) are compared with atol = rtol = 0, under their own rule
`accuracy.exact`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.hal import OperandType

_FLOAT32_ULP = 1.1920928955078125e-7
_FLOAT16_ULP = 0.0009765625
# Float expectations above this magnitude are not compared (REQUIREMENTS O2).
SKIP_ABOVE = 1e3

# Accuracy class of each operand type: the name used in rule identifiers ("accuracy.<class>").
_CLASS: dict[int, str] = {
    OperandType.FLOAT32: "float32",
    OperandType.TENSOR_FLOAT32: "float32",
    OperandType.FLOAT16: "float16",
    OperandType.TENSOR_FLOAT16: "float16",
    OperandType.INT32: "int32",
    OperandType.UINT32: "int32",
    OperandType.TENSOR_INT32: "int32",
    OperandType.TENSOR_QUANT8_ASYMM: "quant8",
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: "quant8",
    OperandType.TENSOR_QUANT8_SYMM: "quant8",
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: "quant8",
    OperandType.TENSOR_QUANT16_ASYMM: "quant16",
    OperandType.TENSOR_QUANT16_SYMM: "quant16",
    OperandType.BOOL: "bool",
    OperandType.TENSOR_BOOL8: "bool",
}

# (atol, rtol) per accuracy class; "relaxed_float32" is float32 computed with float16 range and precision.
_TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 5 * _FLOAT32_ULP),
    "relaxed_float32": (5 * _FLOAT16_ULP, 5 * _FLOAT16_ULP),
    "float16": (5 * _FLOAT16_ULP, 5 * _FLOAT16_ULP),
    "int32": (1.0, 0.0),
    "quant8": (1.0, 0.0),
    "quant16": (1.0, 0.0),
    "bool": (0.0, 0.0),
}

_FLOAT_CLASSES = frozenset({"float32", "float16"})
_QUANT_CLASSES = frozenset({"quant8", "quant16"})
# Random-graph criterion (O2 allows wider, documented criteria per graph size): every quantized operation rounds
# once, and a driver computing in fixed point and a reference computing in float64 may round the same tie in
# opposite directions, so the roundings along a chain add up. Quantized outputs of a graph with k quantized
# operations get an absolute tolerance of k units, at least 1 (the single-operation O2 value) and at most this cap.
RANDOM_GRAPH_QUANT_ATOL_CAP = 3


def accuracy_class(operand_type: int) -> str:
    """The accuracy class of an operand type (float32, float16, int32, quant8, quant16, bool)."""
    try:
        return _CLASS[operand_type]
    except KeyError:
        raise ValueError(f"no accuracy criterion for operand type {operand_type}") from None


def tolerance_for(operand_type: int, relaxed: bool = False, quantized_operations: int = 1) -> tuple[float, float]:
    """(atol, rtol) for values of this operand type; `relaxed` widens float32 to float16 precision, and
    quantized outputs of graphs with several quantized operations get the random-graph criterion."""
    cls = accuracy_class(operand_type)
    if relaxed and cls == "float32":
        cls = "relaxed_float32"
    atol, rtol = _TOLERANCES[cls]
    if cls in _QUANT_CLASSES:
        atol = float(min(max(quantized_operations, 1), RANDOM_GRAPH_QUANT_ATOL_CAP))
    return atol, rtol


@dataclass(frozen=True)
class WorstElement:
    """The element furthest beyond (or closest to) its allowed error."""

    index: tuple[int, ...]
    expected: Any
    actual: Any
    allowed: float
    error: float

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite floats as strings)."""
        return {
            "index": list(self.index),
            "expected": _json_number(self.expected),
            "actual": _json_number(self.actual),
            "allowed": _json_number(self.allowed),
            "error": _json_number(self.error),
        }

    def describe(self) -> str:
        """One line: where, expected, actual, error against allowed."""
        relation = "<=" if self.error <= self.allowed else ">"
        return (
            f"worst at {list(self.index)}: expected {_fmt(self.expected)}, actual {_fmt(self.actual)}, "
            f"error {_fmt(self.error)} {relation} allowed {_fmt(self.allowed)}"
        )


@dataclass(frozen=True)
class Comparison:
    """Result of comparing one output: verdict, counts and the worst element."""

    ok: bool
    accuracy_class: str
    relaxed: bool = False
    checked: int = 0
    skipped: int = 0
    mismatched: int = 0
    worst: WorstElement | None = None
    ignored: bool = False
    shape_message: str = ""  # non-empty when the shapes differ (then nothing was compared)
    exact: bool = False  # compared with no tolerance (an output the HAL defines exactly)

    @property
    def rule(self) -> str:
        """The rule a failed comparison breaks: accuracy.<class> (accuracy.exact), or shape.mismatch."""
        if self.shape_message:
            return "shape.mismatch"
        return "accuracy.exact" if self.exact else f"accuracy.{self.accuracy_class}"

    def describe(self) -> str:
        """A one-line human summary."""
        label = ("relaxed " if self.relaxed and self.accuracy_class == "float32" else "") + self.accuracy_class
        if self.exact:
            label = f"exact {label}"
        if self.shape_message:
            return f"{label}: {self.shape_message}"
        if self.ignored:
            return f"{label}: ignored ({self.skipped} elements not compared)"
        if self.ok:
            head = f"{label}: {self.checked} elements within tolerance ({self.skipped} skipped)"
        else:
            head = f"{label}: {self.mismatched} of {self.checked} elements out of tolerance ({self.skipped} skipped)"
        return f"{head}; {self.worst.describe()}" if self.worst is not None else head


def compare(
    expected: np.ndarray,
    actual: np.ndarray,
    operand_type: int,
    relaxed: bool = False,
    ignore: bool = False,
    quantized_operations: int = 1,
    exact: bool = False,
) -> Comparison:
    """Compare an output against its expected values under the O2 criterion of its operand type (and, for a
    graph with several quantized operations, the random-graph criterion of `tolerance_for`); `exact` for an
    output the HAL defines exactly."""
    cls = accuracy_class(operand_type)
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if ignore:
        return Comparison(ok=True, accuracy_class=cls, relaxed=relaxed, skipped=int(expected.size), ignored=True)
    if expected.shape != actual.shape:
        message = f"shape mismatch: expected {list(expected.shape)}, got {list(actual.shape)}"
        return Comparison(ok=False, accuracy_class=cls, relaxed=relaxed, shape_message=message, exact=exact)

    atol, rtol = (0.0, 0.0) if exact else tolerance_for(operand_type, relaxed, quantized_operations)
    measure = _measure_few if expected.size <= SMALL_OUTPUT else _measure_many
    checked, skipped, mismatched, worst = measure(expected, actual, cls, atol, rtol)
    return Comparison(
        ok=mismatched == 0,
        accuracy_class=cls,
        relaxed=relaxed,
        checked=checked,
        skipped=skipped,
        mismatched=mismatched,
        worst=worst,
        exact=exact,
    )


def within_tolerance(
    expected: np.ndarray,
    actual: np.ndarray,
    operand_type: int,
    relaxed: bool = False,
    ignore: bool = False,
    quantized_operations: int = 1,
    exact: bool = False,
) -> bool:
    """compare(...).ok alone, without counting or locating anything (a failure's report is compare's)."""
    cls = accuracy_class(operand_type)
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if ignore:
        return True
    if expected.shape != actual.shape:
        return False
    if exact and cls != "bool":
        return bool(np.array_equal(expected, actual))
    atol, rtol = (0.0, 0.0) if exact else tolerance_for(operand_type, relaxed, quantized_operations)
    skips_large = cls in _FLOAT_CLASSES
    if expected.size > SMALL_OUTPUT:
        e, a = _as_float64(expected, cls), _as_float64(actual, cls)
        with np.errstate(all="ignore"):
            magnitude = np.abs(e)
            passed = np.abs(a - e) <= atol + rtol * magnitude
            if skips_large:
                passed |= ~(magnitude <= SKIP_ABOVE)  # NaN, infinite or above the limit: skipped
        return bool(passed.all())
    for e, a in zip(_floats(expected, cls), _floats(actual, cls)):
        if not abs(a - e) <= atol + rtol * abs(e) and not (skips_large and not abs(e) <= SKIP_ABOVE):
            return False
    return True


# Outputs of at most this many elements are measured element by element in Python floats: for the few values
# most outputs hold, that costs a fraction of the twenty-odd numpy calls the array form needs. Both forms
# compute the same float64 operations in the same order, so they agree exactly (tests/oracle pins it).
SMALL_OUTPUT = 48

_Measured = tuple[int, int, int, "WorstElement | None"]  # checked, skipped, mismatched, worst


def _measure_many(expected: np.ndarray, actual: np.ndarray, cls: str, atol: float, rtol: float) -> _Measured:
    """The criterion over whole arrays (same shapes)."""
    e, a = _as_float64(expected, cls), _as_float64(actual, cls)
    with np.errstate(all="ignore"):  # inf - inf and NaN are expected inputs here, not accidents
        if cls in _FLOAT_CLASSES:
            skip = ~np.isfinite(e) | (np.abs(e) > SKIP_ABOVE)
        else:
            skip = np.zeros(e.shape, dtype=bool)
        allowed = atol + rtol * np.abs(e)
        error = np.abs(a - e)
        within = error <= allowed  # False where the error is NaN (e.g. a NaN actual)
        bad = ~within & ~skip
        excess = np.where(np.isnan(error), np.inf, error - allowed)
    excess = np.where(skip, -np.inf, excess)

    skipped = int(np.count_nonzero(skip))
    checked = int(e.size - skipped)
    worst = None
    if checked:
        flat = int(np.argmax(excess))
        index = tuple(int(i) for i in np.unravel_index(flat, e.shape))
        worst = WorstElement(
            index=index,
            expected=expected[index].item(),
            actual=actual[index].item(),
            allowed=float(allowed[index]),
            error=float(error[index]),
        )
    return checked, skipped, int(np.count_nonzero(bad)), worst


def _measure_few(expected: np.ndarray, actual: np.ndarray, cls: str, atol: float, rtol: float) -> _Measured:
    """The criterion element by element, in the same float64 arithmetic as `_measure_many` (same shapes)."""
    skips_large = cls in _FLOAT_CLASSES
    skipped = mismatched = 0
    excesses: list[float] = []
    errors: list[float] = []
    alloweds: list[float] = []
    for e, a in zip(_floats(expected, cls), _floats(actual, cls)):
        error = abs(a - e)
        allowed = atol + rtol * abs(e)
        errors.append(error)
        alloweds.append(allowed)
        if skips_large and not abs(e) <= SKIP_ABOVE:  # NaN, infinite or above the limit
            skipped += 1
            excesses.append(-math.inf)
            continue
        if not error <= allowed:  # NaN errors fail too
            mismatched += 1
        excesses.append(error - allowed if error == error else math.inf)
    checked = len(excesses) - skipped
    if not checked:
        return checked, skipped, mismatched, None
    # np.argmax: the first NaN if there is one (an excess of inf - inf), else the first maximum.
    flat = next((k for k, x in enumerate(excesses) if x != x), None)
    if flat is None:
        flat = excesses.index(max(excesses))
    index = _unravel(flat, expected.shape)
    worst = WorstElement(
        index=index,
        expected=expected[index].item(),
        actual=actual[index].item(),
        allowed=alloweds[flat],
        error=errors[flat],
    )
    return checked, skipped, mismatched, worst


def _floats(values: np.ndarray, cls: str) -> list[float]:
    """The elements of `_as_float64(values, cls)` as Python floats, flat in C order."""
    if cls != "bool" and values.dtype.kind == "f" and values.dtype.itemsize <= 8:
        return values.reshape(-1).tolist()  # float16/32/64 elements are already exact Python floats
    return _as_float64(values, cls).reshape(-1).tolist()


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """np.unravel_index for one C-order flat index, as Python ints."""
    index = []
    for size in reversed(shape):
        flat, position = divmod(flat, size)
        index.append(position)
    return tuple(reversed(index))


def _as_float64(values: np.ndarray, cls: str) -> np.ndarray:
    # Booleans compare by truth value: a stored byte 2 and a stored byte 1 both mean true.
    if cls == "bool":
        return (values.astype(np.float64) != 0).astype(np.float64)
    return values.astype(np.float64)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.9g}"
    return str(value)


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    return value
