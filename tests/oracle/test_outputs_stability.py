"""The reference's stability check (reference_is_stable): a graph that amplifies a one-step difference correct
fixed-point rounding may make is an edge, not a finding; a single rounding near a tie is still judged."""

from __future__ import annotations

import numpy as np

from harness.hal import Operand, OperandLifeTime
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.oracle.outputs import reference_is_stable
from harness.reference import run_model
from tests.driver.fault_models import GraphBuilder

Q8 = T.TENSOR_QUANT8_ASYMM
# Scales of a case a campaign found: FULLY_CONNECTED (RELU6) gives 127.49999 steps for an input of 66 in row 2,
# within a quarter step of a tie; the HAL's double rounding (to 1/16 step, then to a step) gives 128 there.
_IN_SCALE, _W_SCALE, _FC_SCALE = 0.0201509241014719, 0.01568627543747425, 0.008126688189804554


def _fully_connected(square: bool):
    """FULLY_CONNECTED of a [4, 1] input by 4 units, then (when `square`) MUL of its result by itself."""
    g = GraphBuilder()
    x = g.input(Q8, [4, 1], _IN_SCALE, 128)
    weights = g.tensor(Q8, np.array([[80], [0], [0], [0]]))
    g.operands[weights].scale, g.operands[weights].zero_point = _W_SCALE, 128
    bias = g.tensor(T.TENSOR_INT32, np.array([302, 0, 0, 0]))
    g.operands[bias].scale = float(np.float32(_IN_SCALE) * np.float32(_W_SCALE))
    relu6 = g.scalar(T.INT32, 3)
    if not square:
        out = g.output(Q8, [4, 4], _FC_SCALE, 64)
        g.op(Op.FULLY_CONNECTED, [x, weights, bias, relu6], [out])
        return g.model()
    fc = g._add(Operand(Q8, [4, 4], 0, _FC_SCALE, 64, OperandLifeTime.TEMPORARY_VARIABLE))
    g.op(Op.FULLY_CONNECTED, [x, weights, bias, relu6], [fc])
    out = g.output(Q8, [4, 4], 0.0078125, 0)
    g.op(Op.MUL, [fc, fc, g.scalar(T.INT32, 0)], [out])
    return g.model()


def _inputs(row_2: int) -> list[np.ndarray]:
    return [np.array([[0], [0], [row_2], [0]], np.uint8)]


def test_a_product_amplifying_a_legitimate_rounding_difference_is_an_edge() -> None:
    model = _fully_connected(square=True)
    near_tie, far = _inputs(66), _inputs(70)
    assert not reference_is_stable(model, near_tie, run_model(model, near_tie))
    assert reference_is_stable(model, far, run_model(model, far))


def test_a_single_rounding_near_a_tie_stays_judged() -> None:
    # One quantized operation: leaning its rounding moves a result by one step at most, within its tolerance.
    model = _fully_connected(square=False)
    near_tie = _inputs(66)
    assert reference_is_stable(model, near_tie, run_model(model, near_tie))
