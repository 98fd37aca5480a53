"""The recurrent rules' two LSTM forms and the bidirectional links the generated cases rarely reach, on
hand-built models against the harness's reference, at every optimization level.

The generator almost always draws a cell clip, a projection or layer normalization, which ONNX's LSTM operator
cannot compute, so its cases run the Scan form; these models pin the ONNX LSTM form (CIFG included, through
its coupled input gate), the choice between the two, and the aux-input links of the bidirectional operations.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.driver.backends.onnxruntime.cases import require_onnxruntime, run_translated

require_onnxruntime()

import onnx  # noqa: E402

from driver_under_test.backends.onnxruntime import OptLevel, translate  # noqa: E402
from harness.hal import ErrorStatus, Model  # noqa: E402
from harness.hal import OperationType as O  # noqa: E402
from harness.reference import run_model  # noqa: E402
from tests.driver.backends.litert.build import Build, T  # noqa: E402
from tests.driver.backends.litert.cases import constant_reader, mismatches  # noqa: E402

BATCH, INPUT, UNITS, OUTPUT, TIME = 2, 3, 4, 4, 3
GATES = ("input", "forget", "cell", "output")


def _check(model: Model, inputs: list) -> list[str]:
    """The ONNX operators the recurrent translation chose, after checking every level against the reference."""
    expected = run_model(model, inputs)
    assert expected.status == ErrorStatus.NONE and not expected.unspecified, expected
    for level in OptLevel:
        actual = run_translated(model, inputs, level)
        assert mismatches(model, inputs, expected.outputs, actual) == [], level
    graph = onnx.load_from_string(translate(model, constant_reader(model))).graph
    return [node.op_type for node in graph.node if node.op_type in ("LSTM", "RNN", "Scan")]


def _cell(b: Build, rng, cifg: bool, peephole: bool, projection: bool, units: int = UNITS, inputs: int = INPUT):
    """The 17 cell tensors (constants; absent groups NO_VALUE) in the HAL's order."""
    output = OUTPUT if projection else units

    def tensor(present: bool, *shape: int) -> int:
        return b.const(T.TENSOR_FLOAT32, rng.uniform(-0.8, 0.8, shape)) if present else b.absent(T.TENSOR_FLOAT32)

    cell = [tensor(not cifg or g != "input", units, inputs) for g in GATES]
    cell += [tensor(not cifg or g != "input", units, output) for g in GATES]
    cell += [tensor(peephole and (not cifg or g != "input"), units) for g in ("input", "forget", "output")]
    cell += [tensor(not cifg or g != "input", units) for g in GATES]
    cell += [tensor(projection, output, units), tensor(projection, output)]
    return cell, output


def _scalars(b: Build, activation: int, cell_clip: float) -> list[int]:
    return [b.i32(activation), b.const(T.FLOAT32, cell_clip), b.const(T.FLOAT32, 0.0)]


def unidirectional_lstm(
    cifg=False, peephole=False, projection=False, activation=4, cell_clip=0.0, time_major=True, seed=0
) -> tuple[Model, list]:
    """UNIDIRECTIONAL_SEQUENCE_LSTM with the given options, its inputs and states given at run time."""
    rng = np.random.default_rng(seed)
    b = Build()
    shape = (TIME, BATCH, INPUT) if time_major else (BATCH, TIME, INPUT)
    x = b.input(T.TENSOR_FLOAT32, shape)
    cell, output = _cell(b, rng, cifg, peephole, projection)
    h, c = b.input(T.TENSOR_FLOAT32, [BATCH, output]), b.input(T.TENSOR_FLOAT32, [BATCH, UNITS])
    ins = [x, *cell, h, c, *_scalars(b, activation, cell_clip), b.const(T.BOOL, time_major)]
    out_shape = (TIME, BATCH, output) if time_major else (BATCH, TIME, output)
    outs = [b.output(T.TENSOR_FLOAT32, out_shape), b.output(T.TENSOR_FLOAT32, [BATCH, output])]
    outs.append(b.output(T.TENSOR_FLOAT32, [BATCH, UNITS]))
    b.op(O.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, outs)
    values = [rng.uniform(-1, 1, s).astype(np.float32) for s in (shape, (BATCH, output), (BATCH, UNITS))]
    return b.model(), values


@pytest.mark.parametrize("time_major", [True, False])
@pytest.mark.parametrize("activation", [0, 1, 4, 6])
@pytest.mark.parametrize(("cifg", "peephole"), [(False, False), (False, True), (True, False), (True, True)])
def test_forms_onnx_lstm_computes_run_on_it(cifg, peephole, activation, time_major) -> None:
    model, values = unidirectional_lstm(cifg, peephole, activation=activation, time_major=time_major)
    assert _check(model, values) == ["LSTM"]


@pytest.mark.parametrize(
    "options",
    [{"cell_clip": 0.3}, {"projection": True}, {"activation": 3}, {"cifg": True, "peephole": True, "cell_clip": 0.5}],
    ids=["cell_clip", "projection", "relu6", "cifg_peephole_clip"],
)
def test_forms_beyond_onnx_lstm_run_the_scan_form(options) -> None:
    model, values = unidirectional_lstm(**options)
    assert _check(model, values) == ["Scan"]


def test_lstm_step_on_onnx_lstm_gives_states_and_a_scratch_buffer_of_the_hal_shape() -> None:
    rng = np.random.default_rng(3)
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [BATCH, INPUT])
    cell, output = _cell(b, rng, cifg=True, peephole=True, projection=False)
    h, c = b.input(T.TENSOR_FLOAT32, [BATCH, output]), b.input(T.TENSOR_FLOAT32, [BATCH, UNITS])
    outs = [b.output(T.TENSOR_FLOAT32, [BATCH, UNITS * 3])]
    outs += [b.output(T.TENSOR_FLOAT32, dims) for dims in ([BATCH, output], [BATCH, UNITS], [BATCH, output])]
    b.op(O.LSTM, [x, *cell, h, c, *_scalars(b, 4, 0.0)], outs)
    model = b.model()
    values = [rng.uniform(-1, 1, s).astype(np.float32) for s in ((BATCH, INPUT), (BATCH, output), (BATCH, UNITS))]
    assert _check(model, values) == ["LSTM"]
    scratch = run_translated(model, values, OptLevel.ALL)[0]
    assert scratch.shape == (BATCH, UNITS * 3)


def bidirectional_lstm(aux: str, merge: bool, bw_units: int = UNITS, cell_clip: float = 0.0, seed=1):
    """BIDIRECTIONAL_SEQUENCE_LSTM (time-major) with the aux input absent ("none"), cross-linked ("cross") or
    parallel ("parallel"), and a backward cell of `bw_units` units."""
    rng = np.random.default_rng(seed)
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [TIME, BATCH, INPUT])
    fw, fw_out = _cell(b, rng, False, True, False)
    bw, bw_out = _cell(b, rng, False, True, False, units=bw_units)
    states = [b.input(T.TENSOR_FLOAT32, dims) for dims in ([BATCH, fw_out], [BATCH, UNITS])]
    states += [b.input(T.TENSOR_FLOAT32, dims) for dims in ([BATCH, bw_out], [BATCH, bw_units])]
    aux_size = 2 if aux == "cross" else INPUT
    aux_x = b.input(T.TENSOR_FLOAT32, [TIME, BATCH, aux_size]) if aux != "none" else b.absent(T.TENSOR_FLOAT32)
    aux_weights = [
        b.const(T.TENSOR_FLOAT32, rng.uniform(-0.8, 0.8, (units, aux_size)))
        if aux == "cross"
        else b.absent(T.TENSOR_FLOAT32)
        for units in (UNITS,) * 4 + (bw_units,) * 4
    ]
    norms = [b.absent(T.TENSOR_FLOAT32) for _ in range(8)]
    ins = [x, *fw, *bw, *states, aux_x, *aux_weights, *_scalars(b, 4, cell_clip), b.const(T.BOOL, merge)]
    ins += [b.const(T.BOOL, True), *norms]
    if merge:
        outs = [b.output(T.TENSOR_FLOAT32, [TIME, BATCH, fw_out + bw_out])]
    else:
        outs = [b.output(T.TENSOR_FLOAT32, [TIME, BATCH, fw_out]), b.output(T.TENSOR_FLOAT32, [TIME, BATCH, bw_out])]
    for dims in ([BATCH, fw_out], [BATCH, UNITS], [BATCH, bw_out], [BATCH, bw_units]):
        outs.append(b.output(T.TENSOR_FLOAT32, dims))
    b.op(O.BIDIRECTIONAL_SEQUENCE_LSTM, ins, outs)
    shapes = [(TIME, BATCH, INPUT), (BATCH, fw_out), (BATCH, UNITS), (BATCH, bw_out), (BATCH, bw_units)]
    if aux != "none":
        shapes.append((TIME, BATCH, aux_size))
    return b.model(), [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize(
    ("aux", "bw_units", "cell_clip", "nodes"),
    [
        ("none", UNITS, 0.0, ["LSTM"]),
        ("cross", UNITS, 0.0, ["LSTM"]),
        ("parallel", UNITS, 0.0, ["LSTM", "LSTM"]),
        ("none", 2, 0.0, ["LSTM", "LSTM"]),
        ("cross", UNITS, 0.4, ["Scan", "Scan"]),
    ],
    ids=["one_node", "cross_linked", "parallel", "unequal_cells", "scan"],
)
def test_bidirectional_lstm_links(aux, bw_units, cell_clip, nodes, merge) -> None:
    model, values = bidirectional_lstm(aux, merge, bw_units, cell_clip)
    assert _check(model, values) == nodes


def bidirectional_rnn(aux: str, merge: bool, activation: int, bw_units: int = UNITS, seed=2):
    """BIDIRECTIONAL_SEQUENCE_RNN (batch-major) with the aux input absent, cross-linked or parallel."""
    rng = np.random.default_rng(seed)
    b = Build()
    x = b.input(T.TENSOR_FLOAT32, [BATCH, TIME, INPUT])

    def direction(units: int) -> list[int]:
        shapes = ((units, INPUT), (units, units), (units,))
        return [b.const(T.TENSOR_FLOAT32, rng.uniform(-0.8, 0.8, s)) for s in shapes]

    fw, bw = direction(UNITS), direction(bw_units)
    fw_h, bw_h = b.input(T.TENSOR_FLOAT32, [BATCH, UNITS]), b.input(T.TENSOR_FLOAT32, [BATCH, bw_units])
    aux_size = 2 if aux == "cross" else INPUT
    aux_x = b.input(T.TENSOR_FLOAT32, [BATCH, TIME, aux_size]) if aux != "none" else b.absent(T.TENSOR_FLOAT32)
    aux_weights = [
        b.const(T.TENSOR_FLOAT32, rng.uniform(-0.8, 0.8, (units, aux_size)))
        if aux == "cross"
        else b.absent(T.TENSOR_FLOAT32)
        for units in (UNITS, bw_units)
    ]
    ins = [x, *fw, fw_h, *bw, bw_h, aux_x, *aux_weights, b.i32(activation), b.const(T.BOOL, False)]
    ins.append(b.const(T.BOOL, merge))
    if merge:
        outs = [b.output(T.TENSOR_FLOAT32, [BATCH, TIME, UNITS + bw_units])]
    else:
        outs = [b.output(T.TENSOR_FLOAT32, [BATCH, TIME, UNITS]), b.output(T.TENSOR_FLOAT32, [BATCH, TIME, bw_units])]
    outs += [b.output(T.TENSOR_FLOAT32, [BATCH, UNITS]), b.output(T.TENSOR_FLOAT32, [BATCH, bw_units])]
    b.op(O.BIDIRECTIONAL_SEQUENCE_RNN, ins, outs)
    shapes = [(BATCH, TIME, INPUT), (BATCH, UNITS), (BATCH, bw_units)]
    if aux != "none":
        shapes.append((BATCH, TIME, aux_size))
    return b.model(), [rng.uniform(-2, 2, s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("activation", [0, 1, 2, 3])
@pytest.mark.parametrize(
    ("aux", "bw_units", "nodes"),
    [
        ("none", UNITS, ["RNN"]),
        ("cross", UNITS, ["RNN"]),
        ("parallel", UNITS, ["RNN", "RNN"]),
        ("none", 2, ["RNN", "RNN"]),
    ],
    ids=["one_node", "cross_linked", "parallel", "unequal_cells"],
)
def test_bidirectional_rnn_links_and_activations(aux, bw_units, nodes, activation, merge) -> None:
    model, values = bidirectional_rnn(aux, merge, activation, bw_units)
    assert _check(model, values) == nodes
