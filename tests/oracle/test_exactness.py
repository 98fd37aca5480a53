"""The exactness table: which outputs the HAL defines exactly, and the oracle comparing those with no tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from harness import ops
from harness.hal import Operand, OperandLifeTime
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.oracle.accuracy import compare
from harness.oracle.exactness import INT32_TYPES, TABLE, exact_outputs, row_for
from harness.oracle.outputs import reference_is_stable
from harness.reference import run_model
from tests.driver.fault_models import GraphBuilder

Q8 = T.TENSOR_QUANT8_ASYMM


def _int32_outputs() -> set[Op]:
    found = set()
    for spec in ops.all_specs():
        for signature in spec.signatures:
            if any(set(arg.types) & INT32_TYPES for arg in signature.outputs):
                found.add(spec.op)
    return found


def test_every_operation_with_an_int32_output_has_a_row_with_its_reason() -> None:
    missing = sorted(op.name for op in _int32_outputs() - set(TABLE))
    assert not missing
    assert all(row.reason for rows in TABLE.values() for row in rows)


def argmax_model(input_type: T, relaxed: bool = False, through_add: bool = False):
    """ARGMAX along axis 1 of a [2, 4] input (or of input + input, a quantized ADD, when `through_add`)."""
    g = GraphBuilder()
    quant = (0.5, 0) if input_type == Q8 else (0.0, 0)
    x = g.input(input_type, [2, 4], *quant)
    if through_add:
        total = g._add(Operand(input_type, [2, 4], 0, 0.5, 0, OperandLifeTime.TEMPORARY_VARIABLE))
        g.op(Op.ADD, [x, x, g.scalar(T.INT32, 0)], [total])
        x = total
    out = g.output(T.TENSOR_INT32, [2])
    g.op(Op.ARGMAX, [x, g.scalar(T.INT32, 1)], [out])
    model = g.model()
    model.relax_computation_float32_to_float16 = relaxed
    return model


@pytest.mark.parametrize("input_type", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, Q8])
def test_argmax_of_given_values_is_exact(input_type: T) -> None:
    assert exact_outputs(argmax_model(input_type)) == {0}


def test_argmax_of_relaxed_float32_is_not_exact_because_float16_may_merge_values() -> None:
    assert exact_outputs(argmax_model(T.TENSOR_FLOAT32, relaxed=True)) == set()
    assert exact_outputs(argmax_model(T.TENSOR_FLOAT16, relaxed=True)) == {0}


def test_argmax_of_a_rounded_value_is_only_as_exact_as_that_rounding() -> None:
    assert exact_outputs(argmax_model(Q8, through_add=True)) == set()


def test_cast_is_exact_between_integers_and_keeps_the_tolerance_from_float() -> None:
    assert row_for(Op.CAST, 0, T.TENSOR_INT32, [Q8]).exact
    assert not row_for(Op.CAST, 0, T.TENSOR_INT32, [T.TENSOR_FLOAT32]).exact


def test_quantized_results_of_arithmetic_keep_their_tolerance() -> None:
    assert row_for(Op.ADD, 0, Q8, [Q8, Q8, T.INT32]) is None
    assert row_for(Op.ADD, 0, T.TENSOR_INT32, [T.TENSOR_INT32] * 2 + [T.INT32]).exact


def test_an_index_one_off_fails_only_under_the_exact_criterion() -> None:
    expected, actual = np.array([2, 0], np.int32), np.array([3, 0], np.int32)
    assert compare(expected, actual, T.TENSOR_INT32).ok
    exact = compare(expected, actual, T.TENSOR_INT32, exact=True)
    assert not exact.ok and exact.rule == "accuracy.exact"


def test_an_argmax_tie_is_an_edge_not_a_finding() -> None:
    # The HAL names no index among equal extremes: a tie makes the reference unstable under its probe.
    model = argmax_model(T.TENSOR_FLOAT32)
    tied = [np.array([[1, 5, 5, 0], [0, 1, 2, 3]], np.float32)]
    distinct = [np.array([[1, 5, 4, 0], [0, 1, 2, 3]], np.float32)]
    assert not reference_is_stable(model, tied, run_model(model, tied))
    assert reference_is_stable(model, distinct, run_model(model, distinct))
