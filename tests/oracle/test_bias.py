"""The rounding-bias rule: a quantized output biased beyond what rounding to nearest can produce is a finding."""

from __future__ import annotations

import numpy as np

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.oracle.bias import LEAN_STEPS, find_bias, judge_bias
from harness.reference import run_model
from tests.driver.fault_models import GraphBuilder

Q8 = T.TENSOR_QUANT8_ASYMM
N = 64


def quantize_model(n: int = N):
    """QUANTIZE of n float32 values to TENSOR_QUANT8_ASYMM with scale 1: the exact result is the value itself."""
    g = GraphBuilder()
    x = g.input(T.TENSOR_FLOAT32, [n])
    out = g.output(Q8, [n], 1.0, 0)
    g.op(Op.QUANTIZE, [x], [out])
    return g.model()


def spread(fraction_start: float = 0.0) -> np.ndarray:
    """N values 10 + k with fractional parts spread evenly over [fraction_start, 1)."""
    k = np.arange(N)
    return (10 + k + fraction_start + (1 - fraction_start) * (k % 16) / 16).astype(np.float32)


def _bias(x: np.ndarray, actual: np.ndarray):
    model = quantize_model(x.size)
    expected = run_model(model, [x]).outputs
    return find_bias(model, [x], expected, [actual.astype(np.uint8)])


def test_truncation_instead_of_rounding_is_a_bias() -> None:
    x = spread()
    bias = _bias(x, np.floor(x))
    assert bias is not None and bias.below > 0 and bias.above == 0
    assert bias.mean_error < 0


def test_rounding_to_nearest_is_no_bias() -> None:
    x = spread()
    assert _bias(x, np.floor(x + 0.5)) is None


def test_ties_may_all_go_one_way() -> None:
    # Every value on a tie: rounding all of them down (or up) is correct rounding, however many there are.
    x = (10 + np.arange(N) + 0.5).astype(np.float32)
    assert _bias(x, np.floor(x)) is None
    assert _bias(x, np.ceil(x)) is None


def test_the_double_rounding_of_the_hal_arithmetic_is_no_bias() -> None:
    # A first rounding to half a step (multipliers in [1/4, 1/2)) sends values a quarter step or more above an
    # integer up: allowed, it leans no more than LEAN_STEPS.
    x = spread()
    assert _bias(x, np.floor(np.round(x * 2) / 2 + 0.5)) is None
    assert LEAN_STEPS >= 0.25


def test_a_few_one_sided_errors_are_not_significant() -> None:
    x = spread()
    actual = np.floor(x + 0.5)
    wrong = np.nonzero((x - np.floor(x)) < 0.2)[0][:4]
    actual[wrong] += 1
    assert _bias(x, actual) is None


def test_the_breach_names_the_rule_and_the_operation() -> None:
    x = spread()
    model = quantize_model()
    expected = run_model(model, [x]).outputs
    breach = judge_bias("sync", model, [x], expected, [np.floor(x).astype(np.uint8)])
    assert breach is not None and breach.rule == "accuracy.rounding_bias" and breach.locus == "QUANTIZE"
