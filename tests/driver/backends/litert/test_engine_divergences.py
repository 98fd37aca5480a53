"""LiteRT's own divergences from the HAL met while building the backend, pinned as strict xfails: each test
states what the HAL asks, and fails (as expected) while LiteRT does otherwise. A fix in LiteRT turns it into an
unexpected pass, which strict xfail reports."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.litert import KernelSet
from driver_under_test.backends.litert._engine import flatbuffers, make_interpreter, schema
from harness.hal import OperationType as O
from tests.driver.backends.litert.build import Build, T, check_against_reference


def _elu_model():
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [2, 3])
    out = b.output(T.TENSOR_FLOAT32, [2, 3])
    b.op(O.ELU, [x, b.const(T.FLOAT32, 1.0)], [out])
    return b.model()


@pytest.mark.parametrize(
    "kernel_set",
    [
        KernelSet.OPTIMIZED,
        KernelSet.XNNPACK,
        pytest.param(
            KernelSet.REFERENCE,
            marks=pytest.mark.xfail(
                strict=True,
                raises=ValueError,
                reason="LiteRT gap: the reference op resolver (BUILTIN_REF) registers no ELU kernel: 'Didn't find op "
                "for builtin opcode ELU'; ELU with alpha 1 maps to that builtin (other alphas are composed)",
            ),
        ),
    ],
)
def test_elu_with_alpha_one_uses_the_builtin(kernel_set: KernelSet) -> None:
    check_against_reference(_elu_model(), [np.linspace(-3, 2, 6, dtype=np.float32).reshape(2, 3)], (kernel_set,))


def _raw_comparison(builtin: str, scale: float) -> bytes:
    """A TFLite model comparing two uint8 inputs of the same scale and zero point 0, built without the backend."""
    s, fb = schema(), flatbuffers()
    model = s.ModelT()
    model.version = 3
    model.buffers = [s.BufferT()]
    code = s.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = getattr(s.BuiltinOperator, builtin)
    code.version = 1
    model.operatorCodes = [code]
    graph = s.SubGraphT()
    graph.tensors = []
    for k in range(3):
        tensor = s.TensorT()
        tensor.shape, tensor.buffer, tensor.name = [2], 0, f"t{k}"
        tensor.type = s.TensorType.BOOL if k == 2 else s.TensorType.UINT8
        if k < 2:
            tensor.quantization = s.QuantizationParametersT()
            tensor.quantization.scale, tensor.quantization.zeroPoint = [scale], [0]
        graph.tensors.append(tensor)
    graph.inputs, graph.outputs = [0, 1], [2]
    op = s.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, [0, 1], [2]
    graph.operators = [op]
    model.subgraphs = [graph]
    builder = fb.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


@pytest.mark.xfail(
    strict=True,
    reason="LiteRT divergence: quantized comparisons rescale both inputs to 1/256 of a real unit before comparing, "
    "so with scale 0.001 the stored values 10 and 11 (0.010 and 0.011) compare equal; the HAL compares the real "
    "values. The backend dequantizes quantized comparison inputs to float32 to keep the HAL's answer",
)
@pytest.mark.parametrize("kernel_set", list(KernelSet))
def test_litert_compares_quantized_values_at_their_real_values(kernel_set: KernelSet) -> None:
    interpreter = make_interpreter(_raw_comparison("EQUAL", 0.001), kernel_set, 1)
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([10, 200], dtype=np.uint8))
    interpreter.set_tensor(1, np.array([11, 201], dtype=np.uint8))
    interpreter.invoke()
    assert not interpreter.get_tensor(2).any()



def _linked_rnn(time_major: bool, cross: bool):
    """BIDIRECTIONAL_SEQUENCE_RNN over 3 steps of input size 1 with an auxiliary input: cross-linked (size 2, with
    aux weights) or parallel (size 1, read by the backward cell instead of the input); no activation."""
    rng = np.random.default_rng(5)
    b = Build()

    def shape(n: int) -> list[int]:
        return [3, 1, n] if time_major else [1, 3, n]

    def weights(*dims: int) -> int:
        return b.const(T.TENSOR_FLOAT32, rng.uniform(-0.8, 0.8, dims))

    aux_size = 2 if cross else 1
    x = b.input(T.TENSOR_FLOAT32, shape(1))
    cells = []
    for _ in range(2):
        cells += [weights(2, 1), weights(2, 2), weights(2), b.const(T.TENSOR_FLOAT32, np.zeros((1, 2)))]
    aux = b.input(T.TENSOR_FLOAT32, shape(aux_size))
    if cross:
        aux_weights = [weights(2, aux_size), weights(2, aux_size)]
    else:
        aux_weights = [b.absent(T.TENSOR_FLOAT32), b.absent(T.TENSOR_FLOAT32)]
    params = [b.i32(0), b.const(T.BOOL, time_major), b.const(T.BOOL, False)]
    outputs = [b.output(T.TENSOR_FLOAT32, shape(2)), b.output(T.TENSOR_FLOAT32, shape(2))]
    b.op(O.BIDIRECTIONAL_SEQUENCE_RNN, [x, *cells, aux, *aux_weights, *params], outputs)
    values = [rng.uniform(-1, 1, shape(1)).astype(np.float32), rng.uniform(-1, 1, shape(aux_size)).astype(np.float32)]
    return b.model(), values


@pytest.mark.parametrize("kernel_set", list(KernelSet))
@pytest.mark.parametrize(
    ("time_major", "cross"),
    [
        (True, False),
        (False, True),
        pytest.param(
            True,
            True,
            marks=pytest.mark.xfail(
                strict=True,
                reason="LiteRT bug: time-major BIDIRECTIONAL_SEQUENCE_RNN steps through a cross-linked auxiliary "
                "input with the input's size (s * input_size * batch) instead of its own, so an auxiliary input "
                "wider than the input is read at the wrong offsets after the first step (the batch-major path "
                "uses the auxiliary size)",
            ),
        ),
        pytest.param(
            False,
            False,
            marks=pytest.mark.xfail(
                strict=True,
                reason="LiteRT bug: batch-major BIDIRECTIONAL_SEQUENCE_RNN with an auxiliary input and no auxiliary "
                "weights (the HAL's parallel linking: the backward cell reads the auxiliary input) feeds the "
                "backward cell the input instead (the time-major path reads the auxiliary input)",
            ),
        ),
    ],
    ids=["time_major-parallel", "batch_major-cross", "time_major-cross", "batch_major-parallel"],
)
def test_bidirectional_rnn_reads_the_auxiliary_input(time_major: bool, cross: bool, kernel_set: KernelSet) -> None:
    check_against_reference(*_linked_rnn(time_major, cross), (kernel_set,))
