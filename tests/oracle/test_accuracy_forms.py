"""The accuracy criterion's two forms (element by element for small outputs, whole arrays for large ones) and the
verdict-only `within_tolerance` agree exactly with each other and with `compare`, whatever the values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.hal import OperandType
from harness.oracle import accuracy
from harness.oracle.accuracy import SMALL_OUTPUT, compare, tolerance_for, within_tolerance

T = OperandType
# One operand type per accuracy class, with the dtype its values are stored in.
TYPES = [
    (T.TENSOR_FLOAT32, np.float32),
    (T.TENSOR_FLOAT16, np.float16),
    (T.TENSOR_INT32, np.int32),
    (T.TENSOR_QUANT8_ASYMM, np.uint8),
    (T.TENSOR_QUANT8_ASYMM_SIGNED, np.int8),
    (T.TENSOR_QUANT16_SYMM, np.int16),
    (T.TENSOR_BOOL8, np.bool_),
]
# Values around every edge of the criterion: skipped magnitudes, NaN, infinities, ties with the tolerance.
EDGES = [0.0, -0.0, 1.0, -1.0, 1e-5, 2.5, 999.0, 1000.0, 1000.5, -5000.0, np.inf, -np.inf, np.nan, 127.0, 255.0]


def _forms(expected: np.ndarray, actual: np.ndarray, operand_type: int, relaxed: bool, steps: int) -> tuple:
    atol, rtol = tolerance_for(operand_type, relaxed, steps)
    cls = accuracy.accuracy_class(operand_type)
    return (
        accuracy._measure_few(expected, actual, cls, atol, rtol),
        accuracy._measure_many(expected, actual, cls, atol, rtol),
    )


def _same(a: tuple, b: tuple) -> bool:
    # repr compares NaN errors as equal, and tells 1 from 1.0 and True from 1.
    return repr(a) == repr(b)


@st.composite
def value_pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, bool, int]:
    operand_type, dtype = draw(st.sampled_from(TYPES))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    if np.dtype(dtype).kind == "f":
        elements = st.one_of(st.sampled_from(EDGES), st.floats(-2000, 2000, width=16))
    elif dtype is np.bool_:
        elements = st.booleans()
    else:
        info = np.iinfo(dtype)
        elements = st.integers(int(info.min), int(info.max))
    expected = draw(hnp.arrays(dtype, shape, elements=elements))
    if draw(st.booleans()):
        actual = expected.copy()
        # Nudge a few elements by about the tolerance.
        for _ in range(draw(st.integers(0, 3))):
            if actual.size and dtype is not np.bool_:
                k = draw(st.integers(0, actual.size - 1))
                step = draw(st.sampled_from([1, -1, 2, 3]))
                flat = actual.reshape(-1)
                with np.errstate(all="ignore"):
                    if np.dtype(dtype).kind == "f":
                        flat[k] = flat[k] + dtype(step * 2**-8)
                    else:
                        flat[k] = np.clip(int(flat[k]) + step, np.iinfo(dtype).min, np.iinfo(dtype).max)
    else:
        actual = draw(hnp.arrays(dtype, shape, elements=elements))
    return expected, actual, operand_type, draw(st.booleans()), draw(st.integers(1, 4))


@given(value_pairs())
def test_both_forms_measure_the_same(case: tuple) -> None:
    expected, actual, operand_type, relaxed, steps = case
    few, many = _forms(expected, actual, operand_type, relaxed, steps)
    assert _same(few, many)


@given(value_pairs())
def test_within_tolerance_is_the_verdict_of_compare(case: tuple) -> None:
    expected, actual, operand_type, relaxed, steps = case
    verdict = compare(expected, actual, operand_type, relaxed, quantized_operations=steps).ok
    assert within_tolerance(expected, actual, operand_type, relaxed, quantized_operations=steps) == verdict


def _edge_values(dtype: type) -> np.ndarray:
    if dtype is np.bool_:
        return np.frombuffer(bytes([0, 1, 2, 255]), dtype=np.bool_)  # stored bytes 2 and 255 also mean true
    if np.dtype(dtype).kind == "f":
        with np.errstate(all="ignore"):
            return np.array(EDGES, dtype=dtype)
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, -1 if info.min else 1, 0, 1, 2, info.max - 1, info.max], dtype)


# Arrays of another dtype than the operand type stores (compare takes any arrays): float values, with NaN and
# infinities, judged by integer and boolean criteria.
FOREIGN = [(T.TENSOR_INT32, np.float64), (T.TENSOR_QUANT8_ASYMM, np.float32), (T.TENSOR_BOOL8, np.float64)]


@pytest.mark.parametrize(("operand_type", "dtype"), TYPES + FOREIGN)
def test_forms_agree_on_every_edge_value_pair(operand_type: int, dtype: type) -> None:
    values = _edge_values(dtype)
    for relaxed in (False, True):
        for e in values:
            for a in values:
                # The pair alone (element form) and repeated beyond SMALL_OUTPUT (array form).
                for n in (1, 2 * SMALL_OUTPUT):
                    expected, actual = np.full(n, e, dtype=values.dtype), np.full(n, a, dtype=values.dtype)
                    few, many = _forms(expected, actual, operand_type, relaxed, 2)
                    assert _same(few, many), (e, a, n)
                    ok = compare(expected, actual, operand_type, relaxed, quantized_operations=2).ok
                    assert within_tolerance(expected, actual, operand_type, relaxed, quantized_operations=2) == ok
        # All pairs together, repeated beyond SMALL_OUTPUT: the worst element and the counts agree too.
        expected, actual = (np.tile(x.reshape(-1), 4) for x in np.meshgrid(values, values, indexing="ij"))
        few, many = _forms(expected, actual, operand_type, relaxed, 2)
        assert _same(few, many)


def test_forms_agree_on_views_that_are_not_c_contiguous() -> None:
    rng = np.random.default_rng(7)
    base = rng.standard_normal((6, 5)).astype(np.float32)
    noisy = base + rng.standard_normal((6, 5)).astype(np.float32) * np.float32(1e-5)
    for expected, actual in ((base.T, noisy.T), (base[::2, 1:], noisy[::2, 1:]), (np.asfortranarray(base), noisy)):
        few, many = _forms(expected, actual, T.TENSOR_FLOAT32, False, 1)
        assert _same(few, many)
        assert few[3] is not None and few[3].index == many[3].index


def test_a_large_output_fails_like_a_small_one() -> None:
    expected = np.zeros(SMALL_OUTPUT * 3, dtype=np.float32)
    actual = expected.copy()
    actual[100] = 2**-13  # beyond 1e-5
    result = compare(expected, actual, T.TENSOR_FLOAT32)
    assert not result.ok and result.mismatched == 1 and result.worst is not None and result.worst.index == (100,)
    assert not within_tolerance(expected, actual, T.TENSOR_FLOAT32)
    actual[100] = 2**-18  # within
    assert within_tolerance(expected, actual, T.TENSOR_FLOAT32) and compare(expected, actual, T.TENSOR_FLOAT32).ok


def test_within_tolerance_refuses_other_shapes_and_passes_ignored_outputs() -> None:
    assert not within_tolerance(np.zeros((2, 3)), np.zeros((3, 2)), T.TENSOR_FLOAT32)
    assert within_tolerance(np.zeros(4), np.full(4, 9.0), T.TENSOR_FLOAT32, ignore=True)
    with pytest.raises(ValueError):
        within_tolerance(np.zeros(1), np.zeros(1), T.SUBGRAPH)
