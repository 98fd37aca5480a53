"""Burst executions over fast message queues (D20-D22): a context whose listener serves one client.

The listener runs on one of the device's worker threads (see _workers), so configuring a burst starts no thread.

The listener waits for a request packet on the request channel (in short slices, so that it notices a release or
a client that went away), takes the packet as everything the client published with its first datum (a client
has one request in flight at a time and writes a packet atomically), resolves the pools' slots (unknown slots
through the client's callback, then cached until freeMemory or the end of the burst), executes through the
prepared model and writes the result packet to the result channel. A malformed packet, an unknown slot or a result
larger than the result channel becomes an error result with no shapes and no timing; the listener keeps serving.

The listener ends when the burst is released, when the client closes a channel or when the client's process
dies; it then frees every cached memory and closes its handles on the channels.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Protocol

from driver_under_test._workers import WorkerPool
from driver_under_test.errors import DriverError, as_driver_error, failure, invalid
from driver_under_test.faults import FaultSet, define
from harness.hal import (
    NO_TIMING_INFO,
    BurstCallback,
    BurstContext,
    Deadline,
    Duration,
    ErrorStatus,
    MeasureTiming,
    OutputShape,
    Request,
    Timing,
)
from harness.hal.burst_wire import (
    DATUM_SIZE,
    MIN_REQUEST_DATUMS,
    MIN_RESULT_DATUMS,
    BurstPacketError,
    Datum,
    RequestDatum,
    decode_request_datums,
    deserialize_request,
    encode_datums,
    padding_mask,
    serialize_result,
)
from harness.hal.fmq import READER, WRITER, FastMessageQueue, FmqDescriptor, FmqError, FmqWaker
from harness.hal.memory import Memory


class ExecutionOutcome(Protocol):
    """What one execution reports (a prepared model's run_request result)."""

    status: ErrorStatus
    output_shapes: list[OutputShape]
    timing: Timing


class BurstServed(Protocol):
    """What a burst needs of the prepared model it serves."""

    @property
    def workers(self) -> WorkerPool:
        """The threads the listener runs on."""
        ...

    @property
    def faults(self) -> FaultSet:
        """The faults the device was started with."""
        ...

    def run_request(
        self, request: Request, measure: MeasureTiming, deadline: Deadline, loop_timeout: Duration
    ) -> ExecutionOutcome:
        """Validate and execute one request; every failure is a status, never an exception."""
        ...


BURST_SLOT_CACHE_NOT_INVALIDATED = define(
    "burst_slot_cache_not_invalidated",
    "burst",
    "freeMemory(slot) keeps the slot's cached memory, so a slot the client reuses for another memory still "
    "reaches the old one (outputs land in a memory the client freed).",
).name
BURST_TRUSTS_DIMENSION_COUNT = define(
    "burst_trusts_dimension_count",
    "burst",
    "The request parser takes an operand's numberOfDimensions on trust: when fewer dimension datums follow, it "
    "reads the missing dimensions as zeros from past them instead of refusing the packet.",
).name
BURST_RESULT_PADDING_NOT_ZEROED = define(
    "burst_result_padding_not_zeroed",
    "burst",
    "Result datums are built in the buffer the request packet was read into without clearing it, so their "
    "padding bytes leak request bytes (D22 wants them zero).",
).name

# How long one wait for a request lasts before the listener looks around again (a release, a closed channel
# and a dead client wake it at once; this bounds anything else).
LISTEN_SLICE_S = 0.25
# release() waits this long for the listener to finish the execution it is in.
RELEASE_JOIN_S = 5.0
# A client that does not read its results for this long loses the result (the listener keeps serving).
RESULT_WRITE_LIMIT_S = 10.0


def configure_burst(
    prepared_model: BurstServed, callback: BurstCallback, request_channel: object, result_channel: object
) -> tuple[ErrorStatus, BurstContext | None]:
    """Start a burst listener for this prepared model; INVALID_ARGUMENT for a bad callback or channel."""
    if not isinstance(callback, BurstCallback):
        return ErrorStatus.INVALID_ARGUMENT, None
    queues: list[FastMessageQueue] = []
    try:
        for channel, minimum in ((request_channel, MIN_REQUEST_DATUMS), (result_channel, MIN_RESULT_DATUMS)):
            if not isinstance(channel, FmqDescriptor):
                raise invalid(f"a burst channel must be a queue descriptor, got {type(channel).__name__}", "burst")
            if channel.element_size != DATUM_SIZE:
                raise invalid(f"burst channel elements are {DATUM_SIZE} bytes, not {channel.element_size}", "burst")
            if not isinstance(channel.capacity, int) or channel.capacity < minimum:
                raise invalid(f"a burst channel of {channel.capacity} datums cannot hold a packet", "burst")
            queues.append(FastMessageQueue.from_descriptor(channel))
        if _same_file(queues[0].descriptor().fds[0], queues[1].descriptor().fds[0]):
            # One queue for both directions would feed the listener its own results.
            raise invalid("the request and result channels are the same queue", "burst")
        # Own the driver's ends, so that the client sees them close when the listener ends.
        queues[0].claim(READER)
        queues[1].claim(WRITER)
        context = DriverBurstContext(prepared_model, callback, queues[0], queues[1], prepared_model.faults)
    except (DriverError, FmqError) as e:
        for q in queues:
            q.close()
        status = e.status if isinstance(e, DriverError) else ErrorStatus.INVALID_ARGUMENT
        return (status if status in _CONFIGURE_STATUSES else ErrorStatus.GENERAL_FAILURE), None
    context.start()
    return ErrorStatus.NONE, context


def _same_file(fd1: int, fd2: int) -> bool:
    a, b = os.fstat(fd1), os.fstat(fd2)
    return (a.st_ino, a.st_dev) == (b.st_ino, b.st_dev)


def _adopt(memory: object) -> Memory:
    """The driver's own handle on a memory the client sent (a duplicated fd, as if it had crossed processes)."""
    if not isinstance(memory, Memory) or memory.closed:
        raise invalid("getMemories returned something that is not an open memory", "burst.memory")
    try:
        fd = os.dup(memory.fd)
    except OSError as e:
        raise invalid(f"memory descriptor unusable: {e}", "burst.memory") from None
    try:
        return Memory(memory.kind, fd, memory.offset, memory.size)
    except (TypeError, ValueError) as e:
        os.close(fd)
        raise invalid(f"memory handle unusable: {e}", "burst.memory") from None


# A result packet's status is a @1.0::ErrorStatus (1.2/types.hal FmqResultDatum): what NN HAL 1.3 added to
# ErrorStatus cannot travel over a burst and becomes GENERAL_FAILURE, as the 1.3 to 1.0 conversion does.
_WIRE_STATUSES = frozenset(
    {
        ErrorStatus.NONE,
        ErrorStatus.DEVICE_UNAVAILABLE,
        ErrorStatus.GENERAL_FAILURE,
        ErrorStatus.OUTPUT_INSUFFICIENT_SIZE,
        ErrorStatus.INVALID_ARGUMENT,
    }
)
# configureExecutionBurst may answer only these (1.2/IPreparedModel.hal).
_CONFIGURE_STATUSES = frozenset(
    {ErrorStatus.NONE, ErrorStatus.DEVICE_UNAVAILABLE, ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT}
)


def _on_wire(status: ErrorStatus) -> ErrorStatus:
    return status if status in _WIRE_STATUSES else ErrorStatus.GENERAL_FAILURE


def _error_result(status: ErrorStatus) -> bytes:
    return serialize_result(_on_wire(status), [], NO_TIMING_INFO)


def _trust_dimension_counts(raw: bytes, limit: int) -> bytes:
    """The packet as the faulty parser sees it: each operand gets numberOfDimensions dimensions, zeros past the end."""
    try:
        datums = decode_request_datums(raw)
    except BurstPacketError:
        return raw
    out: list[Datum] = []
    i = 0
    while i < len(datums):
        datum = datums[i]
        out.append(datum)
        i += 1
        if datum.kind not in (RequestDatum.INPUT_OPERAND_INFORMATION, RequestDatum.OUTPUT_OPERAND_INFORMATION):
            continue
        dim_kind = RequestDatum(datum.kind + 1)
        present = 0
        while i + present < len(datums) and datums[i + present].kind == dim_kind:
            present += 1
        claimed = datum.fields[4]
        if claimed > present:
            out.extend(datums[i : i + present])
            i += present
            # What lies past the datums is whatever the packet buffer held: zeros, up to the buffer's end.
            out.extend(Datum(dim_kind, (0,)) for _ in range(min(claimed - present, limit)))
    head = out[0]
    if head.kind == RequestDatum.PACKET_INFORMATION and head.fields[0] == len(datums):
        out[0] = Datum(head.kind, (len(out), *head.fields[1:]))
    return encode_datums(out)


def _leak_request_bytes(reply: bytes, request: bytes) -> bytes:
    """The result with its padding bytes left as the request bytes that were in the buffer before."""
    stale = (request * (len(reply) // len(request) + 1))[: len(reply)]
    out = bytearray(reply)
    for start in range(0, len(reply), DATUM_SIZE):
        mask = padding_mask(int.from_bytes(reply[start : start + 4], "little"))
        for j, is_padding in enumerate(mask):
            if is_padding:
                out[start + j] = stale[start + j]
    return bytes(out)


class DriverBurstContext(BurstContext):
    """A burst of one prepared model: the listener thread, the slot cache and the channel handles."""

    def __init__(
        self,
        prepared_model: BurstServed,
        callback: BurstCallback,
        requests: FastMessageQueue,
        results: FastMessageQueue,
        faults: FaultSet,
    ) -> None:
        self._model = prepared_model
        self._callback = callback
        self._requests = requests
        self._results = results
        self._faults = faults
        # Reentrant: a client's getMemories may call freeMemory while the listener holds the lock.
        self._lock = threading.RLock()
        self._memories: dict[int, Memory] = {}
        self._busy: set[int] = set()  # slots the running execution uses
        self._doomed: list[Memory] = []  # freed while busy: closed when that execution ends
        self._stop = threading.Event()
        self._ended = threading.Event()
        # Wakes the listener out of a blocked wait when the burst is released: it only ever waits for a request
        # (the request channel's data flag) or for room for a result (the result channel's space flag).
        self._wakers = [FmqWaker((requests.descriptor().fds[1], results.descriptor().fds[2]))]
        self._started = False
        self._listener: int | None = None  # the thread running the listener, while it runs

    def start(self) -> None:
        """Start the listener on one of the device's worker threads."""
        self._started = True
        self._model.workers.submit(self._listen)

    # --- the HAL methods ------------------------------------------------------------------------------

    def free_memory(self, slot: int) -> None:
        """IBurstContext::freeMemory: forget the slot's cached memory (unknown slots are ignored)."""
        if isinstance(slot, bool) or not isinstance(slot, int) or self._faults.active(BURST_SLOT_CACHE_NOT_INVALIDATED):
            return
        with self._lock:
            memory = self._memories.pop(slot, None)
            if memory is None:
                return
            if slot in self._busy:
                self._doomed.append(memory)
                return
        memory.close()

    def release(self) -> None:
        """End the burst: stop the listener (bounded wait) and free every cached memory. Idempotent."""
        self._stop.set()
        for waker in self._wakers:
            waker.wake()
        if threading.get_ident() != self._listener:
            self._ended.wait(RELEASE_JOIN_S)
        self._free_all()
        if self._ended.is_set():
            for waker in self._wakers:
                waker.close()

    # --- introspection for tests ----------------------------------------------------------------------

    @property
    def listening(self) -> bool:
        """True while the listener runs."""
        return self._started and not self._ended.is_set()

    def wait_ended(self, timeout: float) -> bool:
        """Wait for the listener to end and free its resources; True if it did within `timeout` seconds."""
        return self._ended.wait(timeout)

    def cached_slots(self) -> list[int]:
        """The slots whose memories the burst holds."""
        with self._lock:
            return sorted(self._memories)

    # --- the listener ---------------------------------------------------------------------------------

    def _listen(self) -> None:
        self._listener = threading.get_ident()
        try:
            while not self._stop.is_set():
                raw = self._requests.read_all(blocking=True, timeout=LISTEN_SLICE_S, cancelled=self._stop.is_set)
                if raw is None:
                    if self._requests.writer_gone() or self._results.reader_gone():
                        break
                    continue
                started = time.perf_counter_ns()
                if not self._send(self._serve(raw, started)):
                    break
        except (FmqError, OSError):
            pass  # a corrupted or vanished channel ends the burst
        finally:
            self._free_all()
            self._requests.close()
            self._results.close()
            self._listener = None
            self._ended.set()

    def _serve(self, raw: bytes, started: int) -> bytes:
        """The result packet for one request packet; never raises."""
        try:
            reply = self._execute(raw, started)
        except Exception as e:  # the HAL boundary: statuses, never exceptions
            reply = _error_result(as_driver_error(e).status)
        if len(reply) // DATUM_SIZE > self._results.capacity:
            reply = _error_result(ErrorStatus.GENERAL_FAILURE)
        if self._faults.active(BURST_RESULT_PADDING_NOT_ZEROED):
            reply = _leak_request_bytes(reply, raw)
        return reply

    def _execute(self, raw: bytes, started: int) -> bytes:
        if self._faults.active(BURST_TRUSTS_DIMENSION_COUNT):
            raw = _trust_dimension_counts(raw, self._requests.capacity)
        try:
            packet = deserialize_request(raw)
        except BurstPacketError as e:
            raise failure(f"malformed request packet: {e}", "burst.packet") from None
        try:
            pools = self._resolve(packet.slots)
            request = Request(inputs=packet.inputs, outputs=packet.outputs, pools=list(pools))
            result = self._model.run_request(request, packet.measure, None, None)
        finally:
            self._end_execution()
        timing = result.timing
        if packet.measure == MeasureTiming.YES and result.status == ErrorStatus.NONE:
            # A burst's time in the driver runs from dequeuing the request to enqueuing the result.
            in_driver = max(timing.time_in_driver, (time.perf_counter_ns() - started) // 1000)
            timing = Timing(min(timing.time_on_device, in_driver), in_driver)
        try:
            return serialize_result(_on_wire(result.status), result.output_shapes, timing)
        except BurstPacketError as e:
            raise failure(f"result cannot be sent: {e}", "burst.result") from None

    def _resolve(self, slots: list[int]) -> list[Memory]:
        """The memories of these slots: cached ones, the others fetched from the client and cached."""
        with self._lock:
            unknown = [s for s in dict.fromkeys(slots) if s not in self._memories]
            if unknown:
                self._memories.update(zip(unknown, self._fetch(unknown)))
            self._busy = set(slots)
            return [self._memories[s] for s in slots]

    def _fetch(self, slots: list[int]) -> list[Memory]:
        try:
            status, memories = self._callback.get_memories(list(slots))
            status = ErrorStatus(status)
            memories = list(memories)
        except Exception as e:
            raise failure(f"getMemories failed: {type(e).__name__}: {e}", "burst.callback") from None
        if status != ErrorStatus.NONE:
            reported = ErrorStatus.INVALID_ARGUMENT if status == ErrorStatus.INVALID_ARGUMENT else None
            raise DriverError(reported or ErrorStatus.GENERAL_FAILURE, f"getMemories{slots}: {status.name}", "burst")
        if len(memories) != len(slots):
            raise failure(f"getMemories returned {len(memories)} memories for {len(slots)} slots", "burst.callback")
        adopted: list[Memory] = []
        try:
            for memory in memories:
                adopted.append(_adopt(memory))
        except DriverError:
            for m in adopted:
                m.close()
            raise
        return adopted

    def _end_execution(self) -> None:
        with self._lock:
            self._busy = set()
            doomed, self._doomed = self._doomed, []
        for memory in doomed:
            memory.close()

    def _send(self, reply: bytes) -> bool:
        """Write a result packet; False when the burst should end (released, or the client stopped reading)."""
        give_up = time.monotonic() + RESULT_WRITE_LIMIT_S
        while not self._stop.is_set():
            if self._results.write(reply, blocking=True, timeout=LISTEN_SLICE_S, cancelled=self._stop.is_set):
                return True
            if self._results.reader_gone():
                return False
            if time.monotonic() > give_up:
                return True  # drop this result and keep serving
        return False

    def _free_all(self) -> None:
        with self._lock:
            keep = {s: m for s, m in self._memories.items() if s in self._busy}
            freed = [m for s, m in self._memories.items() if s not in keep] + self._doomed
            self._memories, self._doomed = keep, []
        for memory in freed:
            memory.close()
