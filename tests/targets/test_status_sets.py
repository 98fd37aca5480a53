"""status.in_method_set: every status a target receives is checked against the statuses its HAL method may give.

A planted driver answers, on one method at a time, a status outside that method's set (harness.oracle.status_sets);
the target that calls the method must end the case as a FAILURE of status.in_method_set naming that method. Every
method of the table whose set is not every ErrorStatus is planted in turn (execute_1_3, executeSynchronously_1_3
and IExecutionCallback::notify_1_3 may answer any status, so nothing can be planted on them); getMemories is the
client's own answer, and the getCapabilities family is not called by any target.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from driver_under_test import create_device
from harness.gen.source import GenerationRejected
from harness.gen.sources import RandomSource
from harness.hal import Device, ErrorStatus, PreparedModel
from harness.hal.burst_wire import DATUM_SIZE, ResultDatum, decode_result_datums, encode_result_datum
from harness.hal.fmq import READER, WRITER, FastMessageQueue
from harness.hal.interfaces import Buffer, FencedExecutionCallback, PreparedModelCallback
from harness.oracle.status_sets import STATUS_IN_METHOD_SET, STATUS_SETS, statuses_of
from harness.paths import Outcome
from harness.targets import TARGETS
from harness.targets._common import CALL_METHODS, NO_STATUS_CALLS, answers_of
from tests.targets.fakes import Delegating, DelegatingPreparedModel

ROOT = Path(__file__).resolve().parents[2]
UNCALLED = {
    "IDevice::getCapabilities_1_3",
    "IDevice::getVersionString",
    "IDevice::getType",
    "IDevice::getSupportedExtensions",
    "IBurstCallback::getMemories",
}


def outside(method: str) -> ErrorStatus:
    """A status the method may not answer (the first in HAL order)."""
    return next(s for s in ErrorStatus if s not in statuses_of(method))


class _Callback(PreparedModelCallback):
    """Passes a preparation's result on with the planted status (the prepared model kept)."""

    def __init__(self, inner: PreparedModelCallback, status: ErrorStatus) -> None:
        self.inner, self.status = inner, status

    def notify(self, status, prepared_model) -> None:
        self.inner.notify(self.status, prepared_model)


class _Buffer(Buffer):
    def __init__(self, inner: Buffer, method: str, status: ErrorStatus) -> None:
        self.inner, self.method, self.status = inner, method, status

    def copy_to(self, dst):
        answer = self.inner.copy_to(dst)
        return self.status if self.method == "IBuffer::copyTo" else answer

    def copy_from(self, src, dimensions):
        answer = self.inner.copy_from(src, dimensions)
        return self.status if self.method == "IBuffer::copyFrom" else answer


class _FencedCallback(FencedExecutionCallback):
    def __init__(self, inner: FencedExecutionCallback, status: ErrorStatus) -> None:
        self.inner, self.status = inner, status

    def get_execution_info(self):
        _, launched, fenced = self.inner.get_execution_info()
        return self.status, launched, fenced


def _relay_results(inner: FastMessageQueue, client: FastMessageQueue, status: ErrorStatus, stop: threading.Event):
    """Copy the driver's result packets to the client's channel with `status` in their packet information."""
    inner.claim(READER)
    client.claim(WRITER)
    while not stop.is_set():
        raw = inner.read_all(blocking=True, timeout=0.1)
        if raw is None:
            continue
        size, _, operands = decode_result_datums(raw[:DATUM_SIZE])[0].fields
        patched = encode_result_datum(ResultDatum.PACKET_INFORMATION, size, int(status), operands) + raw[DATUM_SIZE:]
        client.write(patched, blocking=True, timeout=5.0)


class _Context:
    """A burst context that stops the relay with it."""

    def __init__(self, inner, stop: threading.Event, queues: list[FastMessageQueue]) -> None:
        self.inner, self.stop, self.queues = inner, stop, queues

    def free_memory(self, slot):
        return self.inner.free_memory(slot)

    def release(self):
        self.stop.set()
        self.inner.release()


class _PreparedModel(DelegatingPreparedModel):
    def __init__(self, inner: PreparedModel, method: str, status: ErrorStatus) -> None:
        super().__init__(inner)
        self.method, self.status = method, status

    def execute_fenced(self, request, wait_for, measure, deadline, loop_timeout_duration, timeout_after_fence):
        status, fence, callback = super().execute_fenced(
            request, wait_for, measure, deadline, loop_timeout_duration, timeout_after_fence
        )
        if self.method == "IPreparedModel::executeFenced":
            if fence is not None:
                fence.wait(10.0)
                fence.close()
            return self.status, None, None
        if self.method == "IFencedExecutionCallback::getExecutionInfo" and callback is not None:
            return status, fence, _FencedCallback(callback, self.status)
        return status, fence, callback

    def configure_execution_burst(self, callback, request_channel, result_channel):
        if self.method == "IPreparedModel::configureExecutionBurst":
            return self.status, None
        if self.method != "FmqResultDatum::packetInformation":
            return super().configure_execution_burst(callback, request_channel, result_channel)
        client = FastMessageQueue.from_descriptor(result_channel)
        inner = FastMessageQueue.create(result_channel.capacity, result_channel.element_size)
        status, context = self.inner.configure_execution_burst(callback, request_channel, inner.descriptor())
        if context is None:
            return status, None
        stop = threading.Event()
        threading.Thread(target=_relay_results, args=(inner, client, self.status, stop), daemon=True).start()
        return status, _Context(context, stop, [inner, client])


class PlantedStatus(Delegating):
    """The bundled driver, except that `method` answers `status` (outside its HAL set)."""

    def __init__(self, inner: Device, method: str, status: ErrorStatus) -> None:
        super().__init__(inner)
        self.method, self.status = method, status

    def _is(self, method: str) -> bool:
        return self.method == method

    def get_supported_operations(self, model):
        status, flags = self.inner.get_supported_operations(model)
        return (self.status, []) if self._is("IDevice::getSupportedOperations_1_3") else (status, flags)

    def get_number_of_cache_files_needed(self):
        status, n_model, n_data = self.inner.get_number_of_cache_files_needed()
        return (self.status if self._is("IDevice::getNumberOfCacheFilesNeeded") else status), n_model, n_data

    def _prepared(self, callback: PreparedModelCallback) -> PreparedModelCallback:
        wraps = self.method.startswith(("IPreparedModel", "IFenced", "FmqResultDatum"))
        if self._is("IPreparedModelCallback::notify_1_3"):
            return _Callback(callback, self.status)
        if not wraps:
            return callback
        method, status = self.method, self.status

        class Wrapping(PreparedModelCallback):
            def notify(self, s, prepared_model) -> None:
                pm = None if prepared_model is None else _PreparedModel(prepared_model, method, status)
                callback.notify(s, pm)

        return Wrapping()

    def prepare_model(self, model, preference, priority, deadline, model_cache, data_cache, token, callback):
        launch = self.inner.prepare_model(
            model, preference, priority, deadline, model_cache, data_cache, token, self._prepared(callback)
        )
        return self.status if self._is("IDevice::prepareModel_1_3") else launch

    def prepare_model_from_cache(self, deadline, model_cache, data_cache, token, callback):
        launch = self.inner.prepare_model_from_cache(deadline, model_cache, data_cache, token, self._prepared(callback))
        return self.status if self._is("IDevice::prepareModelFromCache_1_3") else launch

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        inner_models = [p.inner if isinstance(p, _PreparedModel) else p for p in prepared_models]
        status, buffer, token = self.inner.allocate(desc, inner_models, input_roles, output_roles)
        if self._is("IDevice::allocate"):
            return self.status, buffer, token
        if buffer is not None and self.method.startswith("IBuffer::"):
            buffer = _Buffer(buffer, self.method, self.status)
        return status, buffer, token


# The target that calls each method, and how many seeds it may take to reach it.
PLANTED: dict[str, tuple[str, int]] = {
    "IDevice::getSupportedOperations_1_3": ("validation", 20),
    "IDevice::getNumberOfCacheFilesNeeded": ("cache", 20),
    "IDevice::prepareModel_1_3": ("validation", 20),
    "IPreparedModelCallback::notify_1_3": ("validation", 20),
    "IDevice::prepareModelFromCache_1_3": ("cache", 60),
    "IDevice::allocate": ("memory_domain", 40),
    "IBuffer::copyTo": ("memory_domain", 200),
    "IBuffer::copyFrom": ("memory_domain", 200),
    "IPreparedModel::executeFenced": ("execution", 60),
    "IFencedExecutionCallback::getExecutionInfo": ("execution", 60),
    "IPreparedModel::configureExecutionBurst": ("burst", 40),
    "FmqResultDatum::packetInformation": ("burst", 40),
}


def test_every_method_with_a_narrower_set_than_every_status_is_planted() -> None:
    narrow = {m for m, e in STATUS_SETS.items() if e.statuses != frozenset(ErrorStatus)}
    assert narrow - UNCALLED == set(PLANTED)


def _verdicts(target, device: Device, seeds: int) -> Iterator:
    """The verdicts of the target's cases of seeds 0..seeds-1 on the device."""
    for seed in range(seeds):
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        try:
            yield target.run(case, device)
        finally:
            case.close()


@pytest.mark.parametrize("method", sorted(PLANTED))
def test_a_status_outside_the_methods_set_is_a_finding_of_the_status_set_rule(method: str) -> None:
    target_name, seeds = PLANTED[method]
    target = TARGETS[target_name]
    status = outside(method)
    device = PlantedStatus(create_device(), method, status)
    seen = []
    for verdict in _verdicts(target, device, seeds):
        seen.append(verdict.rule)
        if verdict.rule == STATUS_IN_METHOD_SET:
            assert verdict.locus == method and status.name in verdict.title, verdict.title
            return
    pytest.fail(f"{target_name} never reported {method} answering {status.name}; rules seen: {sorted(set(seen))}")


def test_the_fault_free_driver_answers_within_every_set_on_a_few_cases_of_each_target() -> None:
    device = create_device()
    for name, target in TARGETS.items():
        for verdict in _verdicts(target, device, 15):
            assert verdict.rule != STATUS_IN_METHOD_SET, (name, verdict.title)


def test_answers_come_from_an_outcome_or_from_the_calls_method() -> None:
    outcome = Outcome("fenced", ErrorStatus.NONE, answers=[("IPreparedModel::executeFenced", ErrorStatus.NONE)])
    assert answers_of("fenced execution", outcome) == outcome.answers
    assert answers_of("allocate", (ErrorStatus.GENERAL_FAILURE, None, 0)) == [
        ("IDevice::allocate", ErrorStatus.GENERAL_FAILURE)
    ]
    assert answers_of("copyTo", 2) == [("IBuffer::copyTo", ErrorStatus.GENERAL_FAILURE)]
    assert answers_of("copyTo", 42) == []  # not an ErrorStatus: driver.returns_hal_values, judged elsewhere
    assert answers_of("freeMemory", None) == []


def _call_names(path: Path) -> set[str]:
    """The names given to `call(...)` in a module (string constants; f-strings as their constant text)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "call" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant):
                names.add(first.value)
            elif isinstance(first, ast.JoinedStr):
                names.add("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in first.values))
    return names


def test_every_call_a_target_makes_is_mapped_to_its_method_or_answers_through_an_outcome() -> None:
    names = set().union(*(_call_names(p) for p in (ROOT / "harness" / "targets").glob("*.py")))
    assert names, "no calls found"
    unmapped = {n for n in names if n not in CALL_METHODS and n not in NO_STATUS_CALLS and n != "{} execution"}
    assert unmapped == set()
    assert set(CALL_METHODS.values()) <= set(STATUS_SETS)
