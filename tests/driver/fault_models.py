"""Hand-built models, a request runner and a child-process probe for the tests of the fault catalogue.

Only harness.hal is used to talk to the device, so the tests exercise the driver exactly as any client would.
Expected values are computed by hand in the tests.
"""

from __future__ import annotations

import multiprocessing
import resource
import signal
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

import numpy as np

from driver_under_test import create_device
from harness.hal import (
    DataLocation,
    ErrorStatus,
    ExecutionPreference,
    MeasureTiming,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    OutputShape,
    Priority,
    Request,
    RequestArgument,
    Subgraph,
    numpy_dtype,
)
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.hal.memory import create_ashmem

LT = OperandLifeTime
T = OperandType
OP = OperationType
F32 = T.TENSOR_FLOAT32
Q8 = T.TENSOR_QUANT8_ASYMM

_SCALAR_FORMATS = {T.INT32: "<i", T.FLOAT32: "<f", T.BOOL: "<?"}


@dataclass
class GraphBuilder:
    """Builds a single-subgraph model; consumer counts are derived from the operations."""

    operands: list[Operand] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    values: bytearray = field(default_factory=bytearray)

    def _add(self, operand: Operand) -> int:
        self.operands.append(operand)
        return len(self.operands) - 1

    def input(self, type_: T, dims: Sequence[int], scale: float = 0.0, zero_point: int = 0) -> int:
        """A model input tensor."""
        self.inputs.append(self._add(Operand(type_, list(dims), 0, scale, zero_point, LT.SUBGRAPH_INPUT)))
        return self.inputs[-1]

    def output(self, type_: T, dims: Sequence[int], scale: float = 0.0, zero_point: int = 0) -> int:
        """A model output tensor."""
        self.outputs.append(self._add(Operand(type_, list(dims), 0, scale, zero_point, LT.SUBGRAPH_OUTPUT)))
        return self.outputs[-1]

    def _constant(self, type_: T, dims: Sequence[int], raw: bytes) -> int:
        while len(self.values) % 4:
            self.values.append(0)
        location = DataLocation(0, len(self.values), len(raw))
        self.values += raw
        return self._add(Operand(type_, list(dims), 0, lifetime=LT.CONSTANT_COPY, location=location))

    def scalar(self, type_: T, value: object) -> int:
        """A CONSTANT_COPY scalar."""
        return self._constant(type_, [], struct.pack(_SCALAR_FORMATS[type_], value))

    def tensor(self, type_: T, values: np.ndarray) -> int:
        """A CONSTANT_COPY tensor with the shape of `values`."""
        data = np.ascontiguousarray(values, dtype=numpy_dtype(type_))
        return self._constant(type_, list(data.shape), data.tobytes())

    def op(self, type_: OP, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        """Append an operation."""
        self.operations.append(Operation(type_, list(inputs), list(outputs)))

    def model(self) -> Model:
        """The model, with numberOfConsumers filled in."""
        for k, operand in enumerate(self.operands):
            operand.number_of_consumers = sum(op.inputs.count(k) for op in self.operations)
        main = Subgraph(self.operands, self.operations, self.inputs, self.outputs)
        return Model(main=main, operand_values=bytes(self.values))


def binary_model(
    op: OP, a_dims: Sequence[int], b_dims: Sequence[int], out_dims: Sequence[int], type_: T = F32,
    quant: Sequence[tuple[float, int]] = ((0.0, 0), (0.0, 0), (0.0, 0)),
) -> Model:  # fmt: skip
    """out = op(a, b) with no fused activation; `quant` gives (scale, zero point) of a, b and out."""
    g = GraphBuilder()
    a = g.input(type_, a_dims, *quant[0])
    b = g.input(type_, b_dims, *quant[1])
    act = g.scalar(T.INT32, 0)
    out = g.output(type_, out_dims, *quant[2])
    g.op(op, [a, b, act], [out])
    return g.model()


def average_pool_model(dims: Sequence[int], window: int, stride: int, scheme: int) -> Model:
    """AVERAGE_POOL_2D (implicit padding, NHWC) of a float input; the output shape is left unknown."""
    g = GraphBuilder()
    x = g.input(F32, dims)
    params = [g.scalar(T.INT32, v) for v in (scheme, stride, stride, window, window, 0)]
    out = g.output(F32, [0, 0, 0, 0])
    g.op(OP.AVERAGE_POOL_2D, [x, *params], [out])
    return g.model()


def pool_stride_input_model(dims: Sequence[int]) -> Model:
    """AVERAGE_POOL_2D (implicit VALID padding, 1x1 window) whose horizontal stride is a model input (input 1)."""
    g = GraphBuilder()
    x = g.input(F32, dims)
    stride_w = g.input(T.INT32, [])
    scheme, stride_h, window, activation = (g.scalar(T.INT32, v) for v in (2, 1, 1, 0))
    out = g.output(F32, [0, 0, 0, 0])
    g.op(OP.AVERAGE_POOL_2D, [x, scheme, stride_w, stride_h, window, window, activation], [out])
    return g.model()


def lsh_dense_model(seeds: np.ndarray, row_elements: int) -> Model:
    """LSH_PROJECTION (dense) of one float32 row of `row_elements` (the key: a 4-byte seed and the row's bytes)."""
    g = GraphBuilder()
    hashes = g.tensor(F32, seeds)
    x = g.input(F32, [1, row_elements])
    weight = g.tensor(F32, np.ones(1))
    kind = g.scalar(T.INT32, 2)
    out = g.output(T.TENSOR_INT32, [seeds.size])
    g.op(OP.LSH_PROJECTION, [hashes, x, weight, kind], [out])
    return g.model()


def conv_model(dims: Sequence[int], weight: float, bias: float, nchw: bool) -> Model:
    """CONV_2D of a one-channel float input with a 1x1 filter `weight`, bias `bias`, VALID padding, stride 1."""
    g = GraphBuilder()
    x = g.input(F32, dims)
    filt = g.tensor(F32, np.full((1, 1, 1, 1), weight))
    b = g.tensor(F32, np.array([bias]))
    params = [g.scalar(T.INT32, v) for v in (2, 1, 1, 0)]
    layout = g.scalar(T.BOOL, nchw)
    out = g.output(F32, dims)
    g.op(OP.CONV_2D, [x, filt, b, *params, layout], [out])
    return g.model()


def softmax_model(dims: Sequence[int], beta: float) -> Model:
    """SOFTMAX of a float input along the last axis."""
    g = GraphBuilder()
    x = g.input(F32, dims)
    b = g.scalar(T.FLOAT32, beta)
    out = g.output(F32, dims)
    g.op(OP.SOFTMAX, [x, b], [out])
    return g.model()


# --- preparing and running -------------------------------------------------------------------------------------

TOKEN = bytes(32)


def prepare(device, model: Model) -> tuple[ErrorStatus, ErrorStatus, object]:
    """(launch status, callback status, prepared model) of prepareModel."""
    callback = WaitablePreparedModelCallback()
    launch = device.prepare_model(
        model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM, None, [], [], TOKEN, callback
    )
    status, prepared = callback.result(timeout=30)
    return launch, status, prepared


@dataclass
class Layout:
    """Where each argument sits in the single request pool: (offset, length) per input and output."""

    inputs: list[tuple[int, int]]
    outputs: list[tuple[int, int]]
    size: int

    @classmethod
    def packed(cls, input_bytes: Sequence[int], output_bytes: Sequence[int]) -> Layout:
        """Inputs then outputs, back to back."""
        offsets, cursor = [], 0
        for n in (*input_bytes, *output_bytes):
            offsets.append((cursor, n))
            cursor += n
        return cls(offsets[: len(input_bytes)], offsets[len(input_bytes) :], cursor)


@dataclass
class Execution:
    """What one synchronous execution reported, with the output values read back."""

    status: ErrorStatus
    shapes: list[OutputShape]
    outputs: list[np.ndarray]


def execute(
    device, model: Model, inputs: Sequence[np.ndarray], output_bytes: Sequence[int], layout: Layout | None = None
) -> Execution:
    """Prepare `model`, run it once synchronously on `inputs` and read the outputs back in their reported shapes."""
    launch, status, prepared = prepare(device, model)
    assert (launch, status) == (ErrorStatus.NONE, ErrorStatus.NONE), (launch, status)
    main = model.main
    dtypes = [numpy_dtype(main.operands[i].type) for i in main.input_indexes]
    arrays = [np.ascontiguousarray(x, dtype=dtype) for x, dtype in zip(inputs, dtypes)]
    if layout is None:
        layout = Layout.packed([a.nbytes for a in arrays], output_bytes)
    pool = create_ashmem(layout.size)
    try:
        for array, (offset, _) in zip(arrays, layout.inputs):
            # An argument placed (on purpose) past the pool's end gets only the bytes that fit.
            pool.write(offset, array.tobytes()[: max(layout.size - offset, 0)])
        request = Request(
            inputs=[RequestArgument(location=DataLocation(0, o, n)) for o, n in layout.inputs],
            outputs=[RequestArgument(location=DataLocation(0, o, n)) for o, n in layout.outputs],
            pools=[pool],
        )
        status, shapes, _ = prepared.execute_synchronously(request, MeasureTiming.NO, None, None)
        outputs = []
        if status == ErrorStatus.NONE:
            for shape, (offset, _), i in zip(shapes, layout.outputs, main.output_indexes):
                dtype = numpy_dtype(main.operands[i].type)
                count = int(np.prod(shape.dimensions))
                raw = pool.read(offset, count * np.dtype(dtype).itemsize)
                outputs.append(np.frombuffer(raw, dtype=dtype).reshape(shape.dimensions).copy())
        return Execution(status, shapes, outputs)
    finally:
        pool.close()


# --- probing faults that kill or hang the process ----------------------------------------------------------------


def _scenario_unknown_operand_type(device) -> object:
    from tests.driver.models import add_model

    model = add_model()
    model.main.operands[0].type = 16
    return device.get_supported_operations(model)[0]


def _scenario_while_loop(device) -> object:
    from tests.driver.models import counting_while_model

    result = execute(device, counting_while_model(), [np.array([0.0]), np.array([3.0])], [4])
    return result.status, [o.tolist() for o in result.outputs]


def _scenario_pool_stride_over_window(device) -> object:
    model = average_pool_model([1, 2, 2, 1], window=1, stride=2, scheme=2)
    result = execute(device, model, [np.array([1.0, 2.0, 3.0, 4.0]).reshape(1, 2, 2, 1)], [4])
    return result.status, [o.tolist() for o in result.outputs]


SCENARIOS = {
    "unknown_operand_type": _scenario_unknown_operand_type,
    "while_loop": _scenario_while_loop,
    "pool_stride_over_window": _scenario_pool_stride_over_window,
}


def _child(scenario: str, faults: list[str], conn: Connection) -> None:
    """Child-process entry: run one scenario on a device with `faults`, reporting before and after the call."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an expected abort must not leave a core file behind
    device = create_device(faults=faults)
    conn.send("started")  # a pipe write is synchronous: the parent sees it even if the next call kills us
    conn.send(("returned", SCENARIOS[scenario](device)))


@dataclass
class ChildOutcome:
    """How a scenario ended in a child process: 'returned' (with its value), 'aborted', 'hung' or 'died'."""

    kind: str
    value: object = None
    exitcode: int | None = None


def _receive(conn: Connection, timeout: float) -> object:
    """The next message, or None on timeout or when the child closed its end (it died)."""
    if not conn.poll(timeout):
        return None
    try:
        return conn.recv()
    except EOFError:
        return None


def run_in_child(scenario: str, faults: list[str], answer_within: float) -> ChildOutcome:
    """Run a scenario in a spawned child; a child that gives no answer within `answer_within` s is killed."""
    ctx = multiprocessing.get_context("spawn")
    reader, writer = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(scenario, faults, writer), daemon=True)
    child.start()
    writer.close()  # only the child writes: EOF on our end then means the child is gone
    try:
        started = _receive(reader, 120) == "started"
        message = _receive(reader, answer_within) if started else None
        if isinstance(message, tuple):
            return ChildOutcome(message[0], message[1])
        child.join(1.0)
        if child.is_alive():
            return ChildOutcome("hung")
        if started and child.exitcode == -signal.SIGABRT:
            return ChildOutcome("aborted", exitcode=child.exitcode)
        return ChildOutcome("died", exitcode=child.exitcode)
    finally:
        if child.is_alive():
            child.kill()
        child.join(10)
        reader.close()
