"""Recurrent layers: LSTM fixed points with zero weights (Hypothesis), sequence ops equal unrolled cells,
hand-computed RNN and SVDF steps."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from tests.ops._vectors_b import OMITTED, given_scalar, given_tensor, output, run_op, shape_of

FAST = settings(max_examples=25, deadline=None)
SMALL = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-4, max_value=4)
F32 = T.TENSOR_FLOAT32
TANH = 4


def lstm_inputs(x, h, c, *, cifg=False, peephole=False, cell_clip=0.0) -> list:
    """LSTM inputs with all weights and biases zero."""
    batch, n_in = x.shape
    units, n_out = c.shape[1], h.shape[1]
    zeros = lambda *shape: given_tensor(F32, np.zeros(shape))  # noqa: E731
    inputs = [given_tensor(F32, x)]
    inputs += [OMITTED if cifg else zeros(units, n_in)] + [zeros(units, n_in) for _ in range(3)]
    inputs += [OMITTED if cifg else zeros(units, n_out)] + [zeros(units, n_out) for _ in range(3)]
    inputs += [OMITTED if cifg or not peephole else zeros(units)]
    inputs += [zeros(units) if peephole else OMITTED for _ in range(2)]
    inputs += [OMITTED if cifg else zeros(units)] + [zeros(units) for _ in range(3)]
    inputs += [OMITTED, OMITTED, given_tensor(F32, h), given_tensor(F32, c)]
    inputs += [given_scalar(T.INT32, TANH), given_scalar(T.FLOAT32, cell_clip), given_scalar(T.FLOAT32, 0.0)]
    return inputs


LSTM_OUTPUTS = [output(F32) for _ in range(4)]


@FAST
@given(c=arrays(np.float32, (2, 3), elements=SMALL), cifg=st.booleans(), peephole=st.booleans())
def test_lstm_with_zero_weights_halves_the_cell_state(c, cifg, peephole):
    # Every gate sees 0: forget = input = output = sigmoid(0) = 1/2 (CIFG: 1 - 1/2), g = tanh(0) = 0.
    x = np.ones((2, 2), dtype=np.float32)
    h = np.zeros((2, 3), dtype=np.float32)
    _, h_new, c_new, out = run_op(Op.LSTM, lstm_inputs(x, h, c, cifg=cifg, peephole=peephole), LSTM_OUTPUTS)
    np.testing.assert_allclose(c_new, 0.5 * c, rtol=1e-6)
    np.testing.assert_allclose(h_new, 0.5 * np.tanh(0.5 * c.astype(np.float64)), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(out, h_new)


def test_lstm_clips_the_cell_state_and_sizes_the_scratch_buffer():
    c = np.full((1, 2), 10.0, dtype=np.float32)
    inputs = lstm_inputs(np.ones((1, 1), np.float32), np.zeros((1, 2), np.float32), c, cell_clip=1.0)
    scratch, _, c_new, _ = run_op(Op.LSTM, inputs, LSTM_OUTPUTS)
    np.testing.assert_array_equal(c_new, [[1.0, 1.0]])
    assert scratch.shape == (1, 8)
    cifg = lstm_inputs(np.ones((1, 1), np.float32), np.zeros((1, 2), np.float32), c, cifg=True)
    assert shape_of(Op.LSTM, cifg, LSTM_OUTPUTS)[0] == (1, 6)


def rnn_inputs(x, w, r, b, h, act: int) -> list:
    return [given_tensor(F32, v) for v in (x, w, r, b, h)] + [given_scalar(T.INT32, act)]


def test_rnn_step_by_hand():
    # relu(1 * 2 + 1 * 3 + 1) = 6 and relu(-(2 + 3 + 1) ...) clamps to 0 for the second unit.
    inputs = rnn_inputs([[1.0]], [[2.0], [-2.0]], [[3.0, 0.0], [0.0, -3.0]], [1.0, -1.0], [[1.0, 1.0]], 1)
    state, out = run_op(Op.RNN, inputs, [output(F32), output(F32)])
    np.testing.assert_array_equal(state, [[6.0, 0.0]])
    np.testing.assert_array_equal(out, state)


@FAST
@given(
    xs=arrays(np.float32, (3, 2, 2), elements=SMALL),
    w=arrays(np.float32, (3, 2), elements=SMALL),
    r=arrays(np.float32, (3, 3), elements=st.floats(-0.5, 0.5, width=32)),
    time_major=st.booleans(),
)
def test_unidirectional_rnn_equals_the_unrolled_cell(xs, w, r, time_major):
    b = np.zeros(3, dtype=np.float32)
    h = np.zeros((2, 3), dtype=np.float32)
    steps = []
    for t in range(xs.shape[0]):
        h = run_op(Op.RNN, rnn_inputs(xs[t], w, r, b, h, 0), [output(F32), output(F32)])[0]
        steps.append(h)
    seq = xs if time_major else np.swapaxes(xs, 0, 1)
    inputs = rnn_inputs(seq, w, r, b, np.zeros((2, 3)), 0) + [given_scalar(T.INT32, int(time_major))]
    (ys,) = run_op(Op.UNIDIRECTIONAL_SEQUENCE_RNN, inputs, [output(F32)])
    expected = np.stack(steps) if time_major else np.swapaxes(np.stack(steps), 0, 1)
    np.testing.assert_allclose(ys, expected, rtol=1e-5, atol=1e-5)


def bidi_rnn_inputs(xs, merge: bool) -> list:
    w = np.array([[0.5, -0.25], [0.1, 0.2]], dtype=np.float32)
    r = np.array([[0.3, 0.0], [0.1, -0.2]], dtype=np.float32)
    b, h = np.array([0.1, -0.1], dtype=np.float32), np.zeros((xs.shape[1], 2), dtype=np.float32)
    tensors = [given_tensor(F32, v) for v in (xs, w, r, b, h, -w, r.T, b, h)]
    return tensors + [
        OMITTED,
        OMITTED,
        OMITTED,
        given_scalar(T.INT32, 0),
        given_scalar(T.BOOL, True),
        given_scalar(T.BOOL, merge),
    ]


def test_bidirectional_rnn_merged_output_is_the_concatenation_of_both_directions():
    xs = np.arange(12, dtype=np.float32).reshape(3, 2, 2) / 10
    fw, bw = run_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, bidi_rnn_inputs(xs, False), [output(F32), output(F32)])
    (merged,) = run_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, bidi_rnn_inputs(xs, True), [output(F32)])
    np.testing.assert_array_equal(merged, np.concatenate([fw, bw], axis=2))
    # The backward direction starts from the last time step: its last output depends on x[-1] only.
    only_last = run_op(Op.BIDIRECTIONAL_SEQUENCE_RNN, bidi_rnn_inputs(xs[-1:], False), [output(F32), output(F32)])
    np.testing.assert_allclose(bw[-1], only_last[1][0], rtol=1e-6)


def test_svdf_pushes_the_feature_into_memory_and_weighs_it_over_time():
    # One filter, memory 2, state [s0, s1]: the newest slot takes x * w_feature, the output is
    # w_time . [s0, x * w_feature] and the state shifts left with a zero appended.
    inputs = [
        given_tensor(F32, [[3.0]]),
        given_tensor(F32, [[2.0]]),
        given_tensor(F32, [[10.0, 100.0]]),
        given_tensor(F32, [0.5]),
        given_tensor(F32, [[1.0, 7.0]]),
        given_scalar(T.INT32, 1),
        given_scalar(T.INT32, 0),
    ]
    state, out = run_op(Op.SVDF, inputs, [output(F32), output(F32)])
    np.testing.assert_array_equal(out, [[10 * 1.0 + 100 * 6.0 + 0.5]])
    np.testing.assert_array_equal(state, [[6.0, 0.0]])


Q8S, Q8SYMM, Q16S, I32T = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM, T.TENSOR_INT32
X_SCALE, W_SCALE, CELL_SCALE, H_SCALE = 1 / 64, 1 / 128, 2.0**-12, 1 / 128


def quantized_lstm_inputs(c, *, forget_bias: int = 0, projection: bool = False, hidden_scale=H_SCALE) -> list:
    """QUANTIZED_LSTM inputs (batch 1, input 1, as many units as c has) with zero weights, the forget gate's bias
    as given and, with a projection, the identity as projection weights."""
    units = c.shape[1]
    zeros = lambda t, *shape, scale=W_SCALE: given_tensor(t, np.zeros(shape), scale)  # noqa: E731
    inputs = [given_tensor(Q8S, [[64]], X_SCALE)]
    inputs += [zeros(Q8SYMM, units, 1) for _ in range(4)] + [zeros(Q8SYMM, units, units) for _ in range(4)]
    inputs += [OMITTED] * 3
    biases = [np.zeros(units), np.full(units, forget_bias), np.zeros(units), np.zeros(units)]
    inputs += [given_tensor(I32T, b, X_SCALE * W_SCALE) for b in biases]
    if projection:
        inputs += [given_tensor(Q8SYMM, np.eye(units) * 127, 1 / 127), OMITTED]
    else:
        inputs += [OMITTED, OMITTED]
    inputs += [given_tensor(Q8S, np.zeros((1, units)), H_SCALE), given_tensor(Q16S, c, CELL_SCALE)]
    inputs += [OMITTED] * 6
    inputs += [given_scalar(T.FLOAT32, 2.0**-12) for _ in range(4)]
    return inputs + [given_scalar(T.INT32, 0), given_scalar(T.FLOAT32, hidden_scale)]


Q_LSTM_OUTPUTS = [output(Q8S, H_SCALE), output(Q16S, CELL_SCALE), output(Q8S, H_SCALE)]


def test_quantized_lstm_with_zero_weights_halves_the_cell_state():
    # Every gate sees 0: forget = input = output = 1/2, g = tanh(0) = 0; c = 1 (4096 * 2^-12) becomes 1/2 and the
    # output 1/2 * tanh(1/2) = 0.2311 is 29.58 units of 1/128.
    c = np.array([[4096, -4096]])
    out_state, c_new, out = run_op(Op.QUANTIZED_LSTM, quantized_lstm_inputs(c), Q_LSTM_OUTPUTS)
    np.testing.assert_array_equal(c_new, [[2048, -2048]])
    np.testing.assert_array_equal(out, [[30, -30]])
    np.testing.assert_array_equal(out_state, out)


def test_quantized_lstm_reads_the_gate_biases_at_input_scale_times_weights_scale():
    # A forget bias of 2 (2 / (1/64 * 1/128) = 16384 stored) makes the forget gate sigmoid(2) = 0.8808:
    # c = 1 becomes 0.8808 = 3607.7 units of 2^-12.
    c = np.array([[4096, 4096]])
    _, c_new, _ = run_op(Op.QUANTIZED_LSTM, quantized_lstm_inputs(c, forget_bias=16384), Q_LSTM_OUTPUTS)
    np.testing.assert_array_equal(c_new, [[3608, 3608]])


def test_quantized_lstm_projects_the_hidden_state_stored_in_its_quantization():
    # The hidden state 1/2 * tanh(1/2) = 0.2311 is stored at the hidden state's scale 1/4 as 1 (0.25) before the
    # identity projection: the output is 0.25 = 32 units of 1/128 (the unstored value would give 30).
    c = np.array([[4096, -4096]])
    inputs = quantized_lstm_inputs(c, projection=True, hidden_scale=0.25)
    out_state, _, out = run_op(Op.QUANTIZED_LSTM, inputs, Q_LSTM_OUTPUTS)
    np.testing.assert_array_equal(out_state, [[32, -32]])
    np.testing.assert_array_equal(out, out_state)


Q8 = T.TENSOR_QUANT8_ASYMM
Q16_W_SCALE = 0.003921670373529196  # the weights' scale of the case below; the biases' is that / 128


def q16_lstm_inputs(c: int) -> list:
    """QUANTIZED_16BIT_LSTM inputs of one step (1 unit, input size 3) found by a differential campaign."""
    input_weights = [[92, 198, 143], [17, 44, 34], [202, 199, 84], [186, 29, 204]]  # gates i, f, g, o
    recurrent_weights = [[195], [155], [211], [254]]
    biases = [-15086, -15010, -5827, -12547]
    inputs = [given_tensor(Q8, [[8, 133, 23]], 1 / 128, 128)]
    inputs += [given_tensor(Q8, [w], Q16_W_SCALE, 128) for w in input_weights + recurrent_weights]
    inputs += [given_tensor(I32T, [b], Q16_W_SCALE / 128) for b in biases]
    return inputs + [given_tensor(Q16S, [[c]], 2.0**-11), given_tensor(Q8, [[235]], 1 / 128, 128)]


Q16_LSTM_OUTPUTS = [output(Q16S, 2.0**-11), output(Q8, 1 / 128, 128)]


def test_quantized_16bit_lstm_computes_the_hal_reference_fixed_point_step():
    # The HAL's reference: pre-activations (Q3.12) i -3646, f -2515, g -3461, o -1111; its fixed-point logistic
    # and tanh (Q0.15) give i 9539, f 11503, g -22564, o 14171, a few steps off the real functions rounded
    # (9538, 11506, -22559, 14176). c' = round(round(9539 * -22564 / 2^15) / 16) + round(11503 * 2294 / 2^15)
    # = -411 + 805 = 394; h = round(round(14171 * 6228 / 2^15) / 256) + 128 = 139, 6228 being its tanh of
    # 788 / 4096 (c' with 3 integer bits). The real-valued gates give 396, which a campaign saw a driver answer.
    state, out = run_op(Op.QUANTIZED_16BIT_LSTM, q16_lstm_inputs(2294), Q16_LSTM_OUTPUTS)
    np.testing.assert_array_equal(state, [[394]])
    np.testing.assert_array_equal(out, [[139]])


def test_quantized_16bit_lstm_keeps_the_fixed_point_forget_gate_on_a_large_cell_state():
    # The same step from c = 32000 / 2^11 (near 16): f * c = round(11503 * 32000 / 2^15) = 11233 with the
    # reference's forget gate, 11236 with the real one rounded: three steps, beyond any tolerance of one.
    state, _ = run_op(Op.QUANTIZED_16BIT_LSTM, q16_lstm_inputs(32000), Q16_LSTM_OUTPUTS)
    np.testing.assert_array_equal(state, [[-411 + 11233]])
