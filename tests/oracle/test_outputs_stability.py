"""The reference's stability check (reference_is_stable): a graph that amplifies a one-step difference correct
fixed-point rounding may make is an edge, not a finding; a single rounding near a tie is still judged; the native
probe computes float32 tensors at float32 precision."""

from __future__ import annotations

import numpy as np

from harness.gen import ModelConfig
from harness.hal import Operand, OperandLifeTime
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.oracle.outputs import reference_is_stable
from harness.reference import run_model
from tests.driver.fault_models import GraphBuilder
from tests.gen.model.generated import generated

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


def _sum_of_three():
    """REDUCE_SUM of a float32 [1, 3] input over its last axis."""
    g = GraphBuilder()
    x = g.input(T.TENSOR_FLOAT32, [1, 3])
    out = g.output(T.TENSOR_FLOAT32, [1])
    g.op(Op.REDUCE_SUM, [x, g.tensor(T.TENSOR_INT32, np.array([1])), g.scalar(T.BOOL, False)], [out])
    return g.model()


def test_the_native_probe_computes_float32_tensors_in_float32() -> None:
    # 1e8 + 1 is 1e8 in float32 (its spacing there is 8): the sum is 1 in float64 and 0 at float32 precision.
    model, inputs = _sum_of_three(), [np.array([[1e8, 1.0, -1e8]], np.float32)]
    assert run_model(model, inputs).outputs[0].tolist() == [1.0]
    assert run_model(model, inputs, native=True).outputs[0].tolist() == [0.0]


def test_a_sum_without_cancellation_is_stable_at_float32_precision() -> None:
    model, inputs = _sum_of_three(), [np.array([[0.5, 0.25, 2.0]], np.float32)]
    assert reference_is_stable(model, inputs, run_model(model, inputs))


def test_a_hash_of_given_float_data_is_stable_no_rounding_touches_its_bits() -> None:
    # LSH_PROJECTION hashes the bytes of its seeds and data: nudging given ones by an ULP would change every hash
    # and call each such output an edge, though every implementation reads those bytes as they are.
    config = ModelConfig(operations=frozenset({Op.LSH_PROJECTION}), max_operations=1, control_flow=False)
    judged = 0
    for _, g in generated(range(60), config):
        main = g.model.main
        (op,) = main.operations
        data = main.operands[op.inputs[1]]
        if data.type == T.TENSOR_FLOAT32 and op.inputs[1] in main.input_indexes:
            judged += 1
            assert reference_is_stable(g.model, g.inputs, run_model(g.model, g.inputs))
        g.close()
    assert judged >= 5


def _softmax_of_ties():
    """ADD of two quant8 [1, 3] inputs into a scale twice theirs (odd sums land on exact half steps), then SOFTMAX."""
    g = GraphBuilder()
    a, b = g.input(Q8, [1, 3], 1.0, 0), g.input(Q8, [1, 3], 1.0, 0)
    halved = g._add(Operand(Q8, [1, 3], 0, 2.0, 0, OperandLifeTime.TEMPORARY_VARIABLE))
    g.op(Op.ADD, [a, b, g.scalar(T.INT32, 0)], [halved])
    out = g.output(Q8, [1, 3], 1.0 / 256, 0)
    g.op(Op.SOFTMAX, [halved, g.scalar(T.FLOAT32, 0.5)], [out])
    return g.model()


def test_a_normalization_of_exact_ties_is_an_edge_though_uniform_nudges_cancel() -> None:
    # Sums 1, 3, 5 halve to 0.5, 1.5, 2.5 steps: an implementation may round each tie either way. Moving them all
    # the same way shifts every logit alike, which SOFTMAX cancels; moving them element by element does not.
    model = _softmax_of_ties()
    ties = [np.array([[1, 3, 5]], np.uint8), np.zeros((1, 3), np.uint8)]
    base = run_model(model, ties).outputs[0]
    for p in (-1, 1):
        assert np.array_equal(run_model(model, ties, perturbation=p).outputs[0], base)
    scattered = [run_model(model, ties, perturbation=p, scatter=True).outputs[0] for p in (-1, 1)]
    assert any(np.abs(s.astype(int) - base.astype(int)).max() > 2 for s in scattered)
    assert not reference_is_stable(model, ties, run_model(model, ties))
    even = [np.array([[2, 4, 6]], np.uint8), np.zeros((1, 3), np.uint8)]  # no tie: nothing to resolve
    assert reference_is_stable(model, even, run_model(model, even))
