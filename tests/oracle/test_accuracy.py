"""Accuracy criteria (REQUIREMENTS O2) on hand-made arrays: tolerances per type, skip rules, worst element."""

from __future__ import annotations

import numpy as np
import pytest

from harness.hal import OperandType
from harness.oracle.accuracy import compare, tolerance_for

T = OperandType
F32_ATOL, F32_RTOL = 1e-5, 5 * 1.1920928955078125e-7
F16_TOL = 5 * 0.0009765625

# Tolerances as REQUIREMENTS O2 states them.
EXPECTED_TOLERANCES = [
    (T.FLOAT32, False, (F32_ATOL, F32_RTOL)),
    (T.TENSOR_FLOAT32, False, (F32_ATOL, F32_RTOL)),
    (T.TENSOR_FLOAT32, True, (F16_TOL, F16_TOL)),
    (T.FLOAT16, False, (F16_TOL, F16_TOL)),
    (T.TENSOR_FLOAT16, False, (F16_TOL, F16_TOL)),
    (T.TENSOR_FLOAT16, True, (F16_TOL, F16_TOL)),
    (T.INT32, False, (1, 0)),
    (T.UINT32, False, (1, 0)),
    (T.TENSOR_INT32, True, (1, 0)),
    (T.TENSOR_QUANT8_ASYMM, False, (1, 0)),
    (T.TENSOR_QUANT8_ASYMM_SIGNED, False, (1, 0)),
    (T.TENSOR_QUANT8_SYMM, False, (1, 0)),
    (T.TENSOR_QUANT8_SYMM_PER_CHANNEL, False, (1, 0)),
    (T.TENSOR_QUANT16_ASYMM, False, (1, 0)),
    (T.TENSOR_QUANT16_SYMM, False, (1, 0)),
    (T.BOOL, False, (0, 0)),
    (T.TENSOR_BOOL8, True, (0, 0)),
]


@pytest.mark.parametrize(("operand_type", "relaxed", "expected"), EXPECTED_TOLERANCES)
def test_tolerance_matches_requirement(operand_type: OperandType, relaxed: bool, expected: tuple) -> None:
    assert tolerance_for(operand_type, relaxed) == pytest.approx(expected, abs=0, rel=1e-12)


@pytest.mark.parametrize("operand_type", [T.SUBGRAPH, T.OEM, 99])
def test_types_without_criterion_are_refused(operand_type: int) -> None:
    with pytest.raises(ValueError):
        tolerance_for(operand_type)
    with pytest.raises(ValueError):
        compare(np.zeros(1), np.zeros(1), operand_type)


# (type, dtype, expected, actual within tolerance, actual out of tolerance); the values are chosen so that the
# error is clearly inside or outside atol + rtol*|expected| when computed by hand.
CASES = [
    # float32 at 0: allowed 1e-5; 2**-17 = 7.6e-6 passes, 2**-16 = 1.5e-5 fails.
    (T.TENSOR_FLOAT32, np.float32, [0.0, 3.0], [2**-17, 3.0], [2**-16, 3.0]),
    # float16 at 2: allowed 0.0048828125 * 3 = 0.0146; +2**-7 = 0.0078 passes, +3 * 2**-7 = 0.0234 fails.
    (T.TENSOR_FLOAT16, np.float16, [2.0], [2.0 + 2**-7], [2.0 + 3 * 2**-7]),
    (T.TENSOR_INT32, np.int32, [5, -7, 100000], [6, -7, 99999], [7, -7, 100000]),
    (T.INT32, np.int32, [-3], [-2], [-1]),
    (T.UINT32, np.uint32, [4000000000], [4000000001], [4000000002]),
    (T.TENSOR_QUANT8_ASYMM, np.uint8, [0, 255], [1, 254], [2, 255]),
    (T.TENSOR_QUANT8_ASYMM_SIGNED, np.int8, [-128, 127], [-127, 126], [-128, 125]),
    (T.TENSOR_QUANT8_SYMM, np.int8, [-5, 5], [-4, 6], [-7, 5]),
    (T.TENSOR_QUANT8_SYMM_PER_CHANNEL, np.int8, [10, -10], [11, -9], [10, -12]),
    # Integers are never skipped for magnitude: 65535 and -32768 are compared.
    (T.TENSOR_QUANT16_ASYMM, np.uint16, [65535, 0], [65534, 1], [65533, 0]),
    (T.TENSOR_QUANT16_SYMM, np.int16, [-32768, 32767], [-32767, 32767], [-32766, 32767]),
    (T.TENSOR_BOOL8, np.bool_, [True, False], [True, False], [True, True]),
    (T.BOOL, np.bool_, [False], [False], [True]),
]


@pytest.mark.parametrize(("operand_type", "dtype", "expected", "good", "bad"), CASES)
def test_values_within_tolerance_pass_and_beyond_fail(operand_type, dtype, expected, good, bad) -> None:
    e = np.array(expected, dtype=dtype)
    passed = compare(e, np.array(good, dtype=dtype), operand_type)
    assert passed.ok, passed.describe()
    assert (passed.checked, passed.skipped, passed.mismatched) == (e.size, 0, 0)
    failed = compare(e, np.array(bad, dtype=dtype), operand_type)
    assert not failed.ok
    assert failed.mismatched == 1
    assert failed.rule.startswith("accuracy.")


def test_rule_names_the_accuracy_class() -> None:
    names = {
        T.TENSOR_FLOAT32: "accuracy.float32",
        T.TENSOR_FLOAT16: "accuracy.float16",
        T.TENSOR_INT32: "accuracy.int32",
        T.TENSOR_QUANT8_ASYMM: "accuracy.quant8",
        T.TENSOR_QUANT16_SYMM: "accuracy.quant16",
        T.TENSOR_BOOL8: "accuracy.bool",
    }
    for operand_type, rule in names.items():
        assert compare(np.zeros(1), np.ones(1), operand_type).rule == rule


def test_relaxed_float32_accepts_float16_precision_only_when_relaxed() -> None:
    # |error| = 2**-8 = 0.0039: within 0.0048828125 * (1 + 1) when relaxed, far outside 1e-5 + 6e-7 otherwise.
    expected = np.array([1.0], dtype=np.float32)
    actual = np.array([1.0 + 2**-8], dtype=np.float32)
    assert compare(expected, actual, T.TENSOR_FLOAT32, relaxed=True).ok
    assert not compare(expected, actual, T.TENSOR_FLOAT32, relaxed=False).ok


def test_rtol_scales_with_expected_magnitude() -> None:
    # At 512 the allowed error is 1e-5 + 5.96e-7 * 512 = 3.15e-4: one float32 ulp (6.1e-5) passes, 2**-11
    # (4.9e-4) fails although both would fail at 1.0.
    expected = np.array([512.0], dtype=np.float32)
    assert compare(expected, np.array([512.0 + 2**-14], dtype=np.float32), T.TENSOR_FLOAT32).ok
    assert not compare(expected, np.array([512.0 + 2**-11], dtype=np.float32), T.TENSOR_FLOAT32).ok


@pytest.mark.parametrize(("operand_type", "dtype"), [(T.TENSOR_FLOAT32, np.float32), (T.TENSOR_FLOAT16, np.float16)])
def test_nan_inf_and_large_expectations_are_skipped(operand_type, dtype) -> None:
    expected = np.array([np.nan, np.inf, -np.inf, 1001.0, -2000.0, 1000.0, 1.0], dtype=dtype)
    actual = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1000.0, 1.0], dtype=dtype)
    result = compare(expected, actual, operand_type)
    assert result.ok
    # 1000 itself is not above 1e3, so it is compared.
    assert (result.checked, result.skipped) == (2, 5)
    assert result.worst is not None and result.worst.index in {(5,), (6,)}


def test_all_skipped_reports_no_worst_element() -> None:
    result = compare(np.array([np.nan, 5000.0]), np.array([1.0, 2.0]), T.TENSOR_FLOAT32)
    assert result.ok and result.checked == 0 and result.skipped == 2 and result.worst is None


def test_nan_actual_against_finite_expected_fails() -> None:
    result = compare(
        np.array([1.0, 2.0], dtype=np.float32), np.array([1.0, np.nan], dtype=np.float32), T.TENSOR_FLOAT32
    )
    assert not result.ok
    assert result.worst is not None and result.worst.index == (1,)
    assert np.isnan(result.worst.error)
    assert result.worst.to_json()["actual"] == "nan"


def test_infinite_actual_against_finite_expected_fails() -> None:
    result = compare(np.array([1.0], dtype=np.float32), np.array([np.inf], dtype=np.float32), T.TENSOR_FLOAT32)
    assert not result.ok and result.worst is not None and result.worst.error == np.inf


def test_worst_element_is_the_largest_excess_with_its_index() -> None:
    expected = np.zeros((2, 2), dtype=np.float32)
    actual = np.array([[0.0, 2**-20], [2**-15, 2**-13]], dtype=np.float32)
    result = compare(expected, actual, T.TENSOR_FLOAT32)
    assert not result.ok
    # 2**-15 (3.1e-5) and 2**-13 (1.2e-4) exceed 1e-5; 2**-20 does not.
    assert (result.checked, result.mismatched) == (4, 2)
    worst = result.worst
    assert worst is not None
    assert worst.index == (1, 1)
    assert worst.expected == 0.0 and worst.actual == 2**-13
    assert worst.error == 2**-13 and worst.allowed == pytest.approx(1e-5)
    line = result.describe()
    assert "2 of 4" in line and "[1, 1]" in line and "float32" in line


def test_worst_element_is_reported_when_everything_passes() -> None:
    expected = np.array([10, 20, 30], dtype=np.uint8)
    actual = np.array([10, 21, 30], dtype=np.uint8)
    result = compare(expected, actual, T.TENSOR_QUANT8_ASYMM)
    assert result.ok and result.worst is not None
    assert result.worst.index == (1,) and result.worst.error == 1.0 and result.worst.allowed == 1.0
    assert "within tolerance" in result.describe()


def test_scalar_values_compare_with_an_empty_index() -> None:
    result = compare(np.array(3.0, dtype=np.float32), np.array(3.0, dtype=np.float32), T.FLOAT32)
    assert result.ok and result.checked == 1
    assert result.worst is not None and result.worst.index == ()


def test_shape_mismatch_is_a_failure_with_a_clear_message() -> None:
    result = compare(np.zeros((2, 3)), np.zeros((3, 2)), T.TENSOR_FLOAT32)
    assert not result.ok
    assert result.rule == "shape.mismatch"
    assert "[2, 3]" in result.describe() and "[3, 2]" in result.describe()
    assert result.checked == 0


def test_ignored_outputs_are_not_compared() -> None:
    result = compare(np.zeros(4, dtype=np.float32), np.full(4, 9.0, dtype=np.float32), T.TENSOR_FLOAT32, ignore=True)
    assert result.ok and result.ignored
    assert (result.checked, result.skipped) == (0, 4)
    assert "ignored" in result.describe()


def test_bool_compares_truth_values_exactly() -> None:
    # A stored byte 2 read as bool still means true.
    raw = np.frombuffer(bytes([2, 0]), dtype=np.bool_)
    assert compare(np.array([True, False]), raw, T.TENSOR_BOOL8).ok


def test_empty_outputs_pass_with_nothing_checked() -> None:
    result = compare(np.zeros((0, 2), dtype=np.float32), np.zeros((0, 2), dtype=np.float32), T.TENSOR_FLOAT32)
    assert result.ok and result.checked == 0 and result.worst is None
