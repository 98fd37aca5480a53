"""An execution on ONNX Runtime stops at its time limits: a WHILE that runs past the loop timeout at the loop budget
(MISSED_DEADLINE_PERSISTENT), any run at the execution's deadline (MISSED_DEADLINE_TRANSIENT); a loop that ends
in time gives its result."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.driver.backends.onnxruntime.cases import require_onnxruntime

require_onnxruntime()

from driver_under_test.backends import RunSettings  # noqa: E402
from driver_under_test.backends.onnxruntime import OptLevel  # noqa: E402
from driver_under_test.backends.onnxruntime.backend import create_backend  # noqa: E402
from driver_under_test.errors import DriverError  # noqa: E402
from driver_under_test.faults import FaultSet  # noqa: E402
from harness.hal import (  # noqa: E402
    DataLocation,
    ErrorStatus,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    Subgraph,
)
from harness.hal import OperationType as O  # noqa: E402

L, T = OperandLifeTime, OperandType
MS = 1_000_000
# Iterations of a loop that outlasts every limit here by far (seconds on ONNX Runtime) yet ends, so that a backend
# that does not stop it fails the test instead of hanging it; exact in float32 (below 2^24).
LONG = 5e6


def counting_loop() -> Model:
    """main: out = WHILE(x < limit) x = x + 1, over a float32 [1] x and limit (both model inputs)."""

    def value(lifetime=L.SUBGRAPH_INPUT) -> Operand:
        return Operand(T.TENSOR_FLOAT32, [1], 1, lifetime=lifetime)

    condition = Subgraph(
        [value(), value(), Operand(T.TENSOR_BOOL8, [1], 0, lifetime=L.SUBGRAPH_OUTPUT)],
        [Operation(O.LESS, [0, 1], [2])],
        [0, 1],
        [2],
    )
    one = Operand(T.TENSOR_FLOAT32, [1], 1, lifetime=L.CONSTANT_COPY, location=DataLocation(0, 0, 4))
    activation = Operand(T.INT32, [], 1, lifetime=L.CONSTANT_COPY, location=DataLocation(0, 4, 4))
    body = Subgraph(
        [value(), value(), one, activation, value(L.SUBGRAPH_OUTPUT)],
        [Operation(O.ADD, [0, 2, 3], [4])],
        [0, 1],
        [4],
    )
    main = Subgraph(
        [
            Operand(T.SUBGRAPH, [], 1, lifetime=L.SUBGRAPH, location=DataLocation(0, 0, 0)),
            Operand(T.SUBGRAPH, [], 1, lifetime=L.SUBGRAPH, location=DataLocation(0, 1, 0)),
            value(),
            value(),
            value(L.SUBGRAPH_OUTPUT),
        ],
        [Operation(O.WHILE, [0, 1, 2, 3], [4])],
        [2, 3],
        [4],
    )
    values = np.float32(1).tobytes() + np.int32(0).tobytes()
    return Model(main=main, referenced=[condition, body], operand_values=values)


def _program(level: OptLevel):
    constants = {(2, 2): np.ones(1, np.float32), (2, 3): np.zeros((), np.int32)}  # the body's one and activation
    return create_backend(level).compile(counting_loop(), constants)


def _settings(loop_timeout_ns: int, deadline_ns: int | None = None) -> RunSettings:
    return RunSettings(relaxed=False, faults=FaultSet(), deadline_ns=deadline_ns, loop_timeout_ns=loop_timeout_ns)


def _inputs(limit: float) -> list[np.ndarray]:
    return [np.zeros(1, np.float32), np.full(1, limit, np.float32)]


@pytest.mark.parametrize("level", [OptLevel.DISABLED, OptLevel.ALL])
def test_a_loop_that_ends_in_time_gives_its_result(level: OptLevel) -> None:
    executed = _program(level).execute(_inputs(5), _settings(2_000 * MS))
    np.testing.assert_array_equal(executed.outputs[0], np.full(1, 5, np.float32))


@pytest.mark.parametrize("level", [OptLevel.DISABLED, OptLevel.ALL])
def test_a_loop_past_the_loop_timeout_stops_there(level: OptLevel) -> None:
    program = _program(level)
    started = time.monotonic_ns()
    with pytest.raises(DriverError) as raised:
        program.execute(_inputs(LONG), _settings(100 * MS))
    assert raised.value.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT
    assert 100 * MS <= time.monotonic_ns() - started < 2_000 * MS


@pytest.mark.parametrize("level", [OptLevel.DISABLED, OptLevel.ALL])
def test_a_run_stops_at_the_deadline_before_the_loop_timeout(level: OptLevel) -> None:
    program = _program(level)
    started = time.monotonic_ns()
    with pytest.raises(DriverError) as raised:
        program.execute(_inputs(LONG), _settings(10_000 * MS, started + 100 * MS))
    assert raised.value.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert time.monotonic_ns() - started < 2_000 * MS


def test_the_session_serves_executions_after_a_stopped_one() -> None:
    program = _program(OptLevel.ALL)
    with pytest.raises(DriverError):
        program.execute(_inputs(LONG), _settings(50 * MS))
    executed = program.execute(_inputs(3), _settings(50 * MS))
    np.testing.assert_array_equal(executed.outputs[0], np.full(1, 3, np.float32))
