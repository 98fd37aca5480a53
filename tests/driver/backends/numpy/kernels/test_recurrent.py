"""The driver's recurrent kernels (RNN, LSTM and SVDF families): conformance vectors, hand-computed steps and
consistency laws between the single-step and sequence forms."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import lookup
from driver_under_test.backends.numpy.kernels.lstm import _high_mul16, _round_shift
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType
from tests.driver.backends.numpy.kernels._vectors_b import call_of, case_params, output, run_and_check, scalar, tensor

T = OperandType
RECURRENT_OPS = (
    "RNN",
    "UNIDIRECTIONAL_SEQUENCE_RNN",
    "BIDIRECTIONAL_SEQUENCE_RNN",
    "LSTM",
    "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "BIDIRECTIONAL_SEQUENCE_LSTM",
    "SVDF",
    "QUANTIZED_16BIT_LSTM",
)


@pytest.mark.parametrize("case", case_params(RECURRENT_OPS))
def test_conformance_vector(case) -> None:
    run_and_check(case)


def _run(op: OperationType, inputs, outputs: int) -> list[np.ndarray]:
    return lookup(op).fn(call_of(inputs, [output() for _ in range(outputs)]))


def test_rnn_step_hand_computed() -> None:
    # state = relu(x W' + h R' + b) with W = [[1, 1], [1, -1]], R = I, b = [0, 1].
    x, h = [[2.0, 1.0]], [[0.5, -5.0]]
    state, out = _run(OperationType.RNN, [tensor(x), tensor([[1.0, 1.0], [1.0, -1.0]]), tensor(np.eye(2)),
                                          tensor([0.0, 1.0]), tensor(h), scalar(1)], 2)
    assert state.tolist() == [[3.5, 0.0]]
    np.testing.assert_array_equal(out, state)


def test_sequence_rnn_equals_repeated_single_steps() -> None:
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((3, 2, 4)).astype(np.float32)  # batch-major: [batch, time, input]
    w, r = rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((5, 5)).astype(np.float32) * 0.3
    b, h = rng.standard_normal(5).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    (seq,) = _run(OperationType.UNIDIRECTIONAL_SEQUENCE_RNN, [tensor(xs), tensor(w), tensor(r), tensor(b),
                                                              tensor(h), scalar(2), scalar(0)], 1)
    state = h
    for t in range(2):
        state, _ = _run(OperationType.RNN, [tensor(xs[:, t]), tensor(w), tensor(r), tensor(b), tensor(state),
                                            scalar(2)], 2)
        np.testing.assert_allclose(seq[:, t], state, rtol=1e-6, atol=1e-6)


def _lstm_inputs(units: int = 2, batch: int = 1, input_size: int = 1, **overrides) -> list:
    """LSTM inputs with all-zero weights and biases, no peephole, projection or layer normalization."""
    zeros_in = tensor(np.zeros((units, input_size)))
    zeros_rec = tensor(np.zeros((units, units)))
    zeros_u = tensor(np.zeros(units))
    inputs = [tensor(np.ones((batch, input_size))), zeros_in, zeros_in, zeros_in, zeros_in,
              zeros_rec, zeros_rec, zeros_rec, zeros_rec, None, None, None, zeros_u, zeros_u, zeros_u, zeros_u,
              None, None, tensor(np.zeros((batch, units))), tensor(np.full((batch, units), 2.0)), scalar(4),
              scalar(0.0, T.FLOAT32), scalar(0.0, T.FLOAT32)]
    for index, value in overrides.items():
        inputs[int(index.lstrip("i"))] = value
    return inputs


def test_lstm_with_zero_weights_halves_the_cell_state() -> None:
    # Every gate sees 0: sigmoid gives 0.5, the candidate tanh(0) = 0, so c = 0.5 * 2 and h = 0.5 * tanh(1).
    scratch, h, c, out = _run(OperationType.LSTM, _lstm_inputs(), 4)
    np.testing.assert_allclose(c, [[1.0, 1.0]], rtol=1e-6)
    np.testing.assert_allclose(h, np.full((1, 2), 0.5 * np.tanh(1.0)), rtol=1e-6)
    np.testing.assert_array_equal(out, h)
    assert scratch.shape == (1, 8)


def test_lstm_cifg_couples_input_gate_to_forget_gate() -> None:
    # CIFG with forget bias ln(3): f = 0.75, i = 1 - f = 0.25; candidate bias atanh(0.8) -> g = 0.8.
    inputs = _lstm_inputs(i1=None, i5=None, i12=None, i13=tensor(np.full(2, np.log(3.0))),
                          i14=tensor(np.full(2, np.arctanh(0.8))))
    scratch, _, c, _ = _run(OperationType.LSTM, inputs, 4)
    np.testing.assert_allclose(c, np.full((1, 2), 0.75 * 2 + 0.25 * 0.8), rtol=1e-5)
    assert scratch.shape == (1, 6)


def test_lstm_cell_clip_bounds_the_cell_state() -> None:
    inputs = _lstm_inputs(i19=tensor(np.full((1, 2), 10.0)), i21=scalar(3.0, T.FLOAT32))
    _, _, c, _ = _run(OperationType.LSTM, inputs, 4)
    np.testing.assert_allclose(c, np.full((1, 2), 3.0))


def test_lstm_partial_cifg_is_invalid() -> None:
    with pytest.raises(DriverError) as err:
        _run(OperationType.LSTM, _lstm_inputs(i1=None), 4)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_svdf_pushes_the_feature_activation_and_shifts_the_memory() -> None:
    # One filter, memory 3, rank 1: state [a, b, ignored] becomes [a, b, x.w] for the time filter, then slides.
    state = [[1.0, 2.0, 99.0]]
    new_state, out = _run(OperationType.SVDF, [tensor([[2.0, 3.0]]), tensor([[1.0, 1.0]]),
                                               tensor([[1.0, 10.0, 100.0]]), None, tensor(state), scalar(1),
                                               scalar(0)], 2)
    assert out.tolist() == [[1.0 + 20.0 + 500.0]]
    assert new_state.tolist() == [[2.0, 5.0, 0.0]]


def test_svdf_rank_must_divide_the_filters() -> None:
    with pytest.raises(DriverError) as err:
        _run(OperationType.SVDF, [tensor([[1.0]]), tensor(np.ones((3, 1))), tensor(np.ones((3, 2))), None,
                                  tensor(np.zeros((1, 6))), scalar(2), scalar(0)], 2)
    assert err.value.status == ErrorStatus.INVALID_ARGUMENT


def test_int16_fixed_point_product_and_rounding_shift() -> None:
    # 0.5 * 0.5 = 0.25 in Q15; -1 * -1 saturates to the largest Q15 value; 24 / 16 = 1.5 rounds to 2.
    assert _high_mul16(np.array([16384, -32768]), np.array([16384, -32768])).tolist() == [8192, 32767]
    assert _round_shift(np.array([24, -24, 23]), 4).tolist() == [2, -2, 1]
