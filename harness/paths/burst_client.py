"""The client side of a burst: two fast message queues, a callback that hands out memories by slot, and a
client that serializes requests, sends them and reads the results back.

One request is in flight at a time (as with the HAL's burst controller): `execute` sends a packet and waits for
its result before it returns. Requests the 1.2 burst wire cannot carry (a pool that is a driver buffer, a value
that does not fit its field, something that is not a request) raise BurstCannotCarry, so that a caller can fall
back to another execution path as the NNAPI runtime does.
"""

from __future__ import annotations

import heapq
import threading
import time
import weakref
from collections.abc import Sequence

from harness.hal import (
    BurstCallback,
    BurstContext,
    ErrorStatus,
    MeasureTiming,
    OutputShape,
    PreparedModel,
    Request,
    Timing,
)
from harness.hal.burst_wire import (
    DATUM_SIZE,
    RESULT,
    BurstPacketError,
    RequestPacket,
    ResultPacket,
    deserialize_result,
    serialize_request,
    unclean_datums,
)
from harness.hal.callbacks import CallbackTimeout
from harness.hal.fmq import READER, WRITER, FastMessageQueue
from harness.hal.memory import Memory

# Channel lengths in datums (the HAL's conformance tests use 1024 as "large enough").
DEFAULT_CHANNEL_LENGTH = 1024
DEFAULT_TIMEOUT_S = 30.0


class BurstUnavailable(Exception):
    """configureExecutionBurst did not deliver a burst."""

    def __init__(self, status: ErrorStatus, message: str = "") -> None:
        super().__init__(message or f"configureExecutionBurst returned {ErrorStatus(status).name}")
        self.status = ErrorStatus(status)


class BurstCannotCarry(Exception):
    """The request cannot travel over the burst wire; send it another way."""


class BurstTimeout(CallbackTimeout):
    """The burst did not answer within the time allowed (the client is unusable afterwards)."""


class BurstBroken(Exception):
    """The burst's listener went away, or the client was closed, while a request needed it."""


class SlotCallback(BurstCallback):
    """Hands out slots for the client's memories and answers the driver's getMemories (IBurstCallback)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_memory: dict[int, int] = {}  # id(memory) -> slot
        self._memories: dict[int, Memory] = {}  # slot -> memory (kept alive while it has a slot)
        self._free: list[int] = []  # freed slots, reused lowest first
        self._next = 0
        self.requested: list[list[int]] = []  # the slots of every getMemories call, in order

    def slots_for(self, pools: Sequence[Memory]) -> list[int]:
        """The slot of each pool, giving new slots to memories not seen before."""
        with self._lock:
            slots = []
            for memory in pools:
                slot = self._by_memory.get(id(memory))
                if slot is None:
                    if self._free:
                        slot = heapq.heappop(self._free)
                    else:
                        slot, self._next = self._next, self._next + 1
                    self._by_memory[id(memory)] = slot
                    self._memories[slot] = memory
                slots.append(slot)
            return slots

    def slot_of(self, memory: Memory) -> int | None:
        """The memory's slot, or None if it has none."""
        with self._lock:
            return self._by_memory.get(id(memory))

    def slots(self) -> set[int]:
        """The slots that getMemories answers now (each holds a memory until it is forgotten)."""
        with self._lock:
            return set(self._memories)

    def known(self) -> set[int]:
        """The ids of the memories that have a slot."""
        with self._lock:
            return set(self._by_memory)

    def forget(self, memory: Memory) -> int | None:
        """Free the memory's slot for reuse; its slot, or None if it had none."""
        with self._lock:
            slot = self._by_memory.pop(id(memory), None)
            if slot is not None:
                del self._memories[slot]
                heapq.heappush(self._free, slot)
            return slot

    def get_memories(self, slots: Sequence[int]) -> tuple[ErrorStatus, list[Memory]]:
        """IBurstCallback::getMemories: INVALID_ARGUMENT (and no memories) if any slot is unknown."""
        with self._lock:
            self.requested.append(list(slots))
            if not all(isinstance(s, int) and s in self._memories for s in slots):
                return ErrorStatus.INVALID_ARGUMENT, []
            return ErrorStatus.NONE, [self._memories[s] for s in slots]


def _shutdown(context: BurstContext, queues: list[FastMessageQueue]) -> None:
    try:
        context.release()
    finally:
        for q in queues:
            q.close()


class BurstClient:
    """A burst on one prepared model: `execute` requests over it, `free_memory` slots, `close` it."""

    def __init__(
        self,
        prepared_model: PreparedModel,
        *,
        request_length: int = DEFAULT_CHANNEL_LENGTH,
        result_length: int = DEFAULT_CHANNEL_LENGTH,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        callback: SlotCallback | None = None,
    ) -> None:
        """Create the channels and configure the burst; BurstUnavailable if the driver refuses."""
        self.callback = callback if callback is not None else SlotCallback()
        self.timeout_s = timeout_s
        self.requests = FastMessageQueue.create(request_length, DATUM_SIZE)
        self.results = FastMessageQueue.create(result_length, DATUM_SIZE)
        # Claim both ends now, so the driver can tell if this process goes away before its first request.
        self.requests.claim(WRITER)
        self.results.claim(READER)
        try:
            status, context = prepared_model.configure_execution_burst(
                self.callback, self.requests.descriptor(), self.results.descriptor()
            )
        except BaseException:
            self.requests.close()
            self.results.close()
            raise
        if status != ErrorStatus.NONE or context is None:
            self.requests.close()
            self.results.close()
            raise BurstUnavailable(status, f"configureExecutionBurst returned {ErrorStatus(status).name}")
        self.context: BurstContext = context
        self.last_result = b""  # the raw bytes of the last result packet
        self.last_notes: list[str] = []  # wire conventions the last result broke (for the oracle)
        self.last_elapsed_ns: int | None = None  # wall time from writing the last request to reading its result
        self._broken = False
        self._in_flight = threading.Lock()  # one request at a time, even with several calling threads
        self._finalizer = weakref.finalize(self, _shutdown, context, [self.requests, self.results])

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return not self._finalizer.alive

    def packet_for(self, request: Request, measure: MeasureTiming) -> bytes:
        """The request packet, assigning slots to its pools; BurstCannotCarry if the wire cannot carry it."""
        try:
            pools = list(request.pools)
            if not all(isinstance(p, Memory) for p in pools):
                raise BurstCannotCarry("a request pool is not shared memory (driver buffers travel another way)")
            packet = RequestPacket(list(request.inputs), list(request.outputs), [], MeasureTiming(measure))
        except (AttributeError, TypeError, ValueError) as e:
            raise BurstCannotCarry(f"request cannot be serialized: {e}") from None
        known = self.callback.known()
        packet.slots = self.callback.slots_for(pools)
        try:
            raw = serialize_request(packet)
            if len(raw) // DATUM_SIZE > self.requests.capacity:
                raise BurstCannotCarry(f"a packet of {len(raw) // DATUM_SIZE} datums exceeds the request channel")
        except (BurstPacketError, BurstCannotCarry) as e:
            for memory in pools:  # hand back the slots this request took
                if id(memory) not in known:
                    self.callback.forget(memory)
            raise BurstCannotCarry(str(e)) from None
        return raw

    def execute(
        self, request: Request, measure: MeasureTiming = MeasureTiming.NO
    ) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        """Run one request over the burst: (status, output shapes, timing)."""
        result = self.exchange(self.packet_for(request, measure))
        return result.status, result.output_shapes, result.timing

    def exchange(self, packet: bytes) -> ResultPacket:
        """Send raw packet bytes (well formed or not) and parse the result packet that comes back.

        BurstTimeout if no result arrives in time, BurstBroken if the listener went away, BurstPacketError if
        the result is malformed (non-zero padding alone is tolerated and noted in last_notes).
        """
        with self._in_flight:
            return self._exchange(packet)

    def _exchange(self, packet: bytes) -> ResultPacket:
        if self.closed or self._broken:
            raise BurstBroken("the burst client is closed or broken")
        self.last_elapsed_ns = None
        started = time.perf_counter_ns()
        if not self.requests.write(packet, blocking=True, timeout=self.timeout_s):
            self._broken = True
            if self.requests.reader_gone():
                raise BurstBroken("the burst's listener stopped reading requests")
            raise BurstTimeout(f"request not accepted within {self.timeout_s} s")
        raw = self.results.read_all(blocking=True, timeout=self.timeout_s)
        if raw is None:
            self._broken = True
            if self.results.writer_gone():
                raise BurstBroken("the burst's listener ended without a result")
            raise BurstTimeout(f"no burst result within {self.timeout_s} s")
        self.last_elapsed_ns = time.perf_counter_ns() - started
        self.last_result = raw
        unclean = unclean_datums(raw, RESULT)
        self.last_notes = [f"result datums {unclean} have non-zero padding bytes"] if unclean else []
        try:
            return deserialize_result(raw, strict_padding=False)
        except BurstPacketError:
            self._broken = True
            raise

    def free_memory(self, memory: Memory) -> None:
        """Tell the driver a memory is no longer needed (IBurstContext::freeMemory of its slot)."""
        slot = self.callback.forget(memory)
        if slot is not None and not self.closed:
            self.context.free_memory(slot)

    def close(self) -> None:
        """Release the burst and close the channels. Idempotent."""
        self._finalizer()

    def __enter__(self) -> BurstClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
