"""The life cycle of driver-managed buffers as a state machine (REQUIREMENTS D15-D19).

Buffers are allocated for out = ADD(a, b) (inputs 0 and 1, output 0, all TENSOR_FLOAT32 [2, 2]), filled by
copyFrom or by executions that write them, read by executions and copyTo, misused and dropped. The machine follows
every buffer with the oracle's buffer model (harness.oracle.buffers.BufferModel: initialized, uninitialized and
why, or either where the HAL leaves it open; its content, computed here by hand as a + b); its rules say by hand
what each call must answer, and the invariant reads every buffer back after each step and compares. The machine
must fail on a driver with a catalogued memory-domain fault. A separate property reads one buffer from several
threads at once, and the memory_domain target's generated cases (roles on generated models, step sequences) must
all pass.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from driver_under_test import create_device
from harness.hal import (
    BufferDesc,
    BufferRole,
    DataLocation,
    Device,
    DriverBufferToken,
    ErrorStatus,
    OperandType,
    PreparedModel,
    Request,
    RequestArgument,
    merge_dimensions,
)
from harness.hal.memory import Memory, create_ashmem, create_hardware_buffer_blob, create_mmap_fd
from harness.oracle.buffers import FAILED_COPY, FAILED_EXECUTION, INITIALIZED, UNSURE, BufferModel, Content
from harness.paths import PATHS, ExecutionArgs
from harness.targets import prepare
from harness.targets.memory_domain import TARGET
from tests.driver.models import add_model
from tests.properties.support import judge
from tests.verdicts import assert_passes

SHAPE = (2, 2)
NBYTES = 16
MISSED = {ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT}
MEMORIES = (create_ashmem, create_mmap_fd, create_hardware_buffer_blob)
# (input io indexes, output io indexes) a buffer may be allocated with.
ROLE_SETS = (((0,), ()), ((1,), ()), ((0, 1), ()), ((), (0,)), ((0,), (0,)), ((0, 1), (0,)), ((1,), (0,)))
DESCS = ([], [2, 2], [0, 2], [2, 0], [0, 0])
VALUES = arrays(np.float32, SHAPE, elements=st.floats(-100, 100, width=32))


@dataclass
class Tracked:
    """A live buffer, its roles and the oracle's model of it."""

    buffer: object
    token: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    model: BufferModel

    @property
    def initialized(self) -> bool:
        return self.model.state == INITIALIZED

    @property
    def content(self) -> np.ndarray:
        """What an initialized buffer holds."""
        assert self.model.content is not None and self.model.content.value is not None
        return self.model.content.value

    def written(self, value: np.ndarray) -> None:
        self.model.write(Content(SHAPE, value, exact=True))


def _memory(kind: int, size: int = NBYTES) -> Memory:
    return MEMORIES[kind](size)


def _regular(value: np.ndarray) -> Memory:
    memory = create_ashmem(NBYTES)
    memory.write(0, value.tobytes())
    return memory


def execute(
    pm: PreparedModel, args: list[np.ndarray | int], out: int | None, path: str, deadline: int | None = None
) -> tuple[ErrorStatus, np.ndarray | None]:
    """Run ADD with each input a value (regular memory) or a token, and the output a token or regular memory."""
    pools: list = []
    memories: list[Memory] = []

    def argument(arg: np.ndarray | int | None) -> RequestArgument:
        if isinstance(arg, int):
            pools.append(DriverBufferToken(arg))
            return RequestArgument(False, DataLocation(len(pools) - 1, 0, 0), [])
        memory = _regular(arg) if arg is not None else create_ashmem(NBYTES)
        memories.append(memory)
        pools.append(memory)
        return RequestArgument(False, DataLocation(len(pools) - 1, 0, NBYTES), list(SHAPE))

    try:
        inputs = [argument(a) for a in args]
        output = argument(out)
        outcome = PATHS[path](pm, Request(inputs, [output], pools), ExecutionArgs(deadline=deadline, timeout_s=10))
        value = None
        if out is None and outcome.status == ErrorStatus.NONE:
            raw = pools[output.location.pool_index].read(0, NBYTES)
            value = np.frombuffer(raw, np.float32).reshape(SHAPE).copy()
        return outcome.status, value
    finally:
        for memory in memories:
            memory.close()


def _draw_one(data: st.DataObject, items: list):
    """One of the items, drawn by its position."""
    return items[data.draw(st.integers(0, len(items) - 1))]


def copy_from(buffer: object, value: np.ndarray, kind: int, dims: list[int]) -> ErrorStatus:
    with _memory(kind, value.nbytes) as memory:
        memory.write(0, value.tobytes())
        return ErrorStatus(buffer.copy_from(memory, dims))  # type: ignore[attr-defined]


def copy_to(buffer: object, kind: int = 0, size: int = NBYTES) -> tuple[ErrorStatus, np.ndarray | None]:
    with _memory(kind, size) as memory:
        status = ErrorStatus(buffer.copy_to(memory))  # type: ignore[attr-defined]
        value = np.frombuffer(memory.read(0, NBYTES), np.float32).reshape(SHAPE).copy() if size == NBYTES else None
    return status, value


class BufferLifeCycle(RuleBasedStateMachine):
    """allocate, copyFrom, execute writing, execute reading, copyTo, illegal uses and drop, on live buffers."""

    device: Device
    prepared: PreparedModel

    def __init__(self) -> None:
        super().__init__()
        self.live: list[Tracked] = []
        self.dropped: list[int] = []

    # -- picking buffers, by position: Hypothesis keeps what is drawn (to print a failing example), and a drawn
    # buffer would stay alive after the machine drops it
    def _pick(self, data: st.DataObject, where=lambda t: True) -> Tracked:
        return _draw_one(data, [t for t in self.live if where(t)])

    def _has(self, where) -> bool:
        return any(where(t) for t in self.live)

    # -- rules
    @precondition(lambda self: len(self.live) < 3)
    @rule(roles=st.sampled_from(ROLE_SETS), desc=st.sampled_from(DESCS))
    def allocate(self, roles, desc) -> None:
        inputs, outputs = roles
        status, buffer, token = self.device.allocate(
            BufferDesc(list(desc)),
            [self.prepared],
            [BufferRole(0, i, 1.0) for i in inputs],
            [BufferRole(0, o, 1.0) for o in outputs],
        )
        assert status == ErrorStatus.NONE and buffer is not None
        assert 0 < token < 1 << 32
        assert token not in {t.token for t in self.live}, "two live buffers share a token"
        allocated = merge_dimensions(list(desc), list(SHAPE))
        assert allocated is not None
        self.live.append(Tracked(buffer, token, inputs, outputs, BufferModel(allocated, OperandType.TENSOR_FLOAT32)))

    @precondition(lambda self: self.live)
    @rule(data=st.data(), value=VALUES, kind=st.integers(0, 2), give_dims=st.booleans())
    def copy_from(self, data, value, kind, give_dims) -> None:
        t = self._pick(data)
        assert copy_from(t.buffer, value, kind, list(SHAPE) if give_dims else []) == ErrorStatus.NONE
        t.written(value)

    @precondition(lambda self: self.live)
    @rule(data=st.data(), kind=st.integers(0, 2), size=st.sampled_from((0, 4, 12, 20, 32)))
    def copy_from_wrong_size(self, data, kind, size) -> None:
        t = self._pick(data)
        with _memory(kind, size) as memory:
            assert ErrorStatus(t.buffer.copy_from(memory, list(SHAPE))) == ErrorStatus.INVALID_ARGUMENT
        t.model.fail(FAILED_COPY)  # a failed copyFrom uninitializes (D17)

    @precondition(lambda self: self._has(lambda t: t.outputs))
    @rule(data=st.data(), a=VALUES, b=VALUES, path=st.sampled_from(sorted(PATHS)))
    def execute_writing(self, data, a, b, path) -> None:
        t = self._pick(data, lambda t: t.outputs)
        status, _ = execute(self.prepared, [a, b], t.token, path)
        assert status == ErrorStatus.NONE
        t.written(a + b)

    @precondition(lambda self: self._has(lambda t: t.outputs))
    @rule(data=st.data(), a=VALUES, b=VALUES, path=st.sampled_from(sorted(PATHS)))
    def execute_writing_fails(self, data, a, b, path) -> None:
        t = self._pick(data, lambda t: t.outputs)
        status, _ = execute(self.prepared, [a, b], t.token, path, deadline=time.monotonic_ns() - 1)
        assert status in MISSED
        t.model.fail(FAILED_EXECUTION)  # a failed execution uninitializes (D17)

    @precondition(lambda self: self._has(lambda t: t.inputs and t.model.state != UNSURE))
    @rule(data=st.data(), other=VALUES, path=st.sampled_from(sorted(PATHS)))
    def execute_reading(self, data, other, path) -> None:
        t = self._pick(data, lambda t: t.inputs and t.model.state != UNSURE)
        io = data.draw(st.sampled_from(t.inputs))
        args: list = [other, other]
        args[io] = t.token
        if len(t.inputs) == 2 and data.draw(st.booleans()):
            args = [t.token, t.token]  # the same buffer as two inputs is fine (D16)
        status, value = execute(self.prepared, args, None, path)
        if not t.initialized:
            assert status == ErrorStatus.GENERAL_FAILURE
            return
        assert status == ErrorStatus.NONE
        expected = sum(t.content if isinstance(a, int) else a for a in args)
        np.testing.assert_array_equal(value, expected)

    def _pairs(self) -> list[tuple[Tracked, Tracked]]:
        return [(s, t) for s in self.live for t in self.live if s is not t and s.inputs and s.initialized and t.outputs]

    @precondition(lambda self: self._pairs())
    @rule(data=st.data(), other=VALUES)
    def execute_buffer_to_buffer(self, data, other) -> None:
        source, target = _draw_one(data, self._pairs())
        args: list = [other, other]
        args[source.inputs[0]] = source.token
        status, _ = execute(self.prepared, args, target.token, "sync")
        assert status == ErrorStatus.NONE
        target.written(source.content + other)

    @precondition(lambda self: self._has(lambda t: len(t.inputs) < 2 or not t.outputs))
    @rule(data=st.data(), other=VALUES, path=st.sampled_from(sorted(PATHS)))
    def use_outside_its_roles(self, data, other, path) -> None:
        t = self._pick(data, lambda t: len(t.inputs) < 2 or not t.outputs)
        missing = [("in", i) for i in (0, 1) if i not in t.inputs] + ([("out", 0)] if not t.outputs else [])
        direction, io = data.draw(st.sampled_from(missing))
        if direction == "in":
            args: list = [other, other]
            args[io] = t.token
            status, _ = execute(self.prepared, args, None, path)
        else:
            status, _ = execute(self.prepared, [other, other], t.token, path)
        # Reading an uninitialized buffer is GENERAL_FAILURE: which check comes first is the driver's choice.
        reads_nothing = direction == "in" and not t.initialized
        assert status in {ErrorStatus.INVALID_ARGUMENT} | ({ErrorStatus.GENERAL_FAILURE} if reads_nothing else set())
        if direction == "out":
            t.model.unsure()  # whether a refused request counts as a failed execution (D17) is left open

    @precondition(lambda self: self._has(lambda t: t.inputs and t.outputs))
    @rule(data=st.data(), path=st.sampled_from(sorted(PATHS)))
    def same_buffer_as_input_and_output(self, data, path) -> None:
        t = self._pick(data, lambda t: t.inputs and t.outputs)
        args: list = [np.zeros(SHAPE, np.float32)] * 2
        args[t.inputs[0]] = t.token
        status, _ = execute(self.prepared, args, t.token, path)
        allowed = {ErrorStatus.INVALID_ARGUMENT} | (set() if t.initialized else {ErrorStatus.GENERAL_FAILURE})
        assert status in allowed
        t.model.unsure()

    @precondition(lambda self: self.live)
    @rule(data=st.data(), size=st.sampled_from((0, 4, 12, 20)))
    def copy_to_wrong_size(self, data, size) -> None:
        t = self._pick(data)
        status, _ = copy_to(t.buffer, 0, size)
        allowed = {ErrorStatus.INVALID_ARGUMENT} | ({ErrorStatus.GENERAL_FAILURE} if not t.initialized else set())
        assert status in allowed

    @precondition(lambda self: self.live)
    @rule(data=st.data(), path=st.sampled_from(sorted(PATHS)))
    def drop(self, data, path) -> None:
        t = self._pick(data)
        self.live.remove(t)
        token = t.token
        del t
        gc.collect()
        args: list = [token, np.zeros(SHAPE, np.float32)]
        status, _ = execute(self.prepared, args, None, path)
        assert status == ErrorStatus.INVALID_ARGUMENT, "a dropped buffer's token still names a buffer"

    @precondition(lambda self: self._has(lambda t: t.initialized))
    @rule(data=st.data(), threads=st.integers(4, 8))
    def concurrent_copy_to(self, data, threads) -> None:
        t = self._pick(data, lambda t: t.initialized)
        results = read_concurrently(t.buffer, threads)
        assert all(status == ErrorStatus.NONE for status, _ in results)
        for _, value in results:
            np.testing.assert_array_equal(value, t.content)

    # -- the invariant: each buffer's state and content are what the machine says
    @invariant()
    def buffers_match_the_model(self) -> None:
        for t in self.live:
            status, value = copy_to(t.buffer)
            if t.model.state == UNSURE:  # a read settles what the HAL left open
                assert status in (ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE)
                t.model.resolve(status == ErrorStatus.NONE)
            if t.initialized:
                assert status == ErrorStatus.NONE
                np.testing.assert_array_equal(value, t.content)
            else:
                assert status == ErrorStatus.GENERAL_FAILURE


def read_concurrently(buffer: object, threads: int) -> list[tuple[ErrorStatus, np.ndarray | None]]:
    """copyTo from `threads` threads released at once, each into a memory of its own."""
    barrier = threading.Barrier(threads)
    results: list = [None] * threads

    def read(i: int) -> None:
        barrier.wait(timeout=10)
        for _ in range(5):
            results[i] = copy_to(buffer, i % len(MEMORIES))

    workers = [threading.Thread(target=read, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=30)
    assert not any(w.is_alive() for w in workers), "a concurrent copyTo never returned"
    return results


@pytest.fixture(scope="module")
def add_prepared(device) -> PreparedModel:
    p = prepare(device, add_model())
    assert p.status == ErrorStatus.NONE and p.prepared is not None
    return p.prepared


def test_buffer_states_and_contents_follow_the_model(device, add_prepared) -> None:
    BufferLifeCycle.device = device
    BufferLifeCycle.prepared = add_prepared
    base = settings()
    run_state_machine_as_test(
        BufferLifeCycle,
        settings=settings(base, max_examples=max(10, base.max_examples // 4), stateful_step_count=20),
    )


# Catalogued faults of driver_under_test the machine must catch: that it does guards the strength of its property.
MACHINE_FAULTS = ("buffer_stays_initialized_after_failure", "copy_from_skips_size_check", "role_check_ignores_io_index")


@pytest.mark.parametrize("fault", MACHINE_FAULTS)
def test_the_machine_fails_on_a_driver_with_a_memory_domain_fault(fault) -> None:
    faulty = create_device(faults=[fault])
    p = prepare(faulty, add_model())
    assert p.status == ErrorStatus.NONE and p.prepared is not None

    class OnFaultyDriver(BufferLifeCycle):
        device = faulty
        prepared = p.prepared

    quick = settings(
        max_examples=100,
        stateful_step_count=20,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    with pytest.raises(AssertionError):
        run_state_machine_as_test(OnFaultyDriver, settings=quick)


@given(value=VALUES, threads=st.integers(4, 8))
@settings(max_examples=20)
def test_threads_copying_one_buffer_out_see_identical_data(device, add_prepared, value, threads) -> None:
    status, buffer, _ = device.allocate(BufferDesc([]), [add_prepared], [BufferRole(0, 0, 1.0)], [])
    assert status == ErrorStatus.NONE
    assert copy_from(buffer, value, 0, list(SHAPE)) == ErrorStatus.NONE
    results = read_concurrently(buffer, threads)
    assert {s for s, _ in results} == {ErrorStatus.NONE}
    for _, got in results:
        np.testing.assert_array_equal(got, value)


@given(st.data())
def test_generated_allocations_and_buffer_steps_follow_d15_to_d18(device, data) -> None:
    verdict, case = judge(TARGET, data, device)
    assert_passes(verdict, case)
