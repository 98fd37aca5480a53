"""What the burst targets share: a prepared model with a renewable request kept per device, its synchronous result,
the bursts kept for it, talking to a burst, and judging its results against executeSynchronously (D20-D22).

The oracle of a burst is the same request run synchronously on the same prepared model: a valid request over the
burst gives its status, shapes and outputs; a malformed packet gives an error status with no shapes and no timing;
a result that does not fit the result channel is an error; result padding is zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.case import Case, LiveRequest
from harness.gen.burst_packets import (
    MALFORMED,
    SAME,
    UNKNOWN_SLOT,
    PacketJudgement,
)
from harness.hal import (
    NO_TIMING,
    Device,
    ErrorStatus,
    MeasureTiming,
    Model,
    OutputShape,
    PreparedModel,
    Request,
    is_tensor_type,
    merge_dimensions,
)
from harness.hal.burst_wire import (
    MIN_RESULT_DATUMS,
    BurstPacketError,
    RequestPacket,
    ResultPacket,
    deserialize_request,
    result_length,
)
from harness.hal.memory import Memory
from harness.oracle.exactness import exact_outputs
from harness.oracle.outputs import unspecified_outputs
from harness.oracle.rules import (
    Breach,
    judge_outputs,
    judge_supported_operations,
    judge_timing,
    judge_valid_preparation,
)
from harness.oracle.status_sets import carried
from harness.oracle.verdict import define_rule
from harness.paths import BURST_RESULT
from harness.paths import Outcome as PathOutcome
from harness.paths.burst_client import BurstBroken, BurstClient, BurstUnavailable
from harness.targets._common import (
    DriverRaised,
    call,
    prepare,
    status_of,
    supported_operations,
)
from harness.targets.reuse import CaseKeys, DeviceStates, owned_copy

CONFIGURED = define_rule(
    "burst.configured", "configureExecutionBurst with valid channels on a prepared model gives NONE and a burst"
)
MATCHES_SYNCHRONOUS = define_rule(
    "burst.matches_synchronous",
    "a valid request over a burst gives the status, output shapes and outputs executeSynchronously gives, and "
    "timing only when measured",
)
MALFORMED_PACKET_REJECTED = define_rule(
    "burst.malformed_packet_rejected",
    "a malformed request packet (missing, extra or wrong datums, wrong counts, unknown slots) gives an error "
    "status with no output shapes and no timing",
)
OVERSIZED_RESULT_REJECTED = define_rule(
    "burst.oversized_result_rejected",
    "a result larger than the result channel gives an error status with no output shapes and no timing",
)
LISTENER_KEEPS_SERVING = define_rule(
    "burst.listener_keeps_serving",
    "the burst's listener keeps serving after any packet: the next valid request gets its result",
)
RESULT_WELL_FORMED = define_rule("burst.result_well_formed", "every result packet follows the wire format")
RESULT_PADDING_ZEROED = define_rule("burst.result_padding_zeroed", "padding bytes of result datums are zero")
RELEASE_ENDS_LISTENER = define_rule(
    "burst.release_ends_listener",
    "a released burst serves no request and ends its listener, so a client waiting on it is let go",
)

_SHAPED = frozenset({ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE})
REQUEST_CHANNEL = 1024
DEFAULT_CHANNEL = 1024
RELEASE_WAIT_S = 2.0  # how long a request after release may wait before the client calls the burst stuck
MAX_RETIRED = 32  # memories replaced without freeing their slots, kept alive until the burst is closed


@dataclass
class SyncResult:
    """What executeSynchronously answered for the request."""

    status: ErrorStatus
    shapes: list[OutputShape]
    outputs: list[np.ndarray]  # empty unless NONE


@dataclass
class BurstModel:
    """A prepared model, a request over shared memory that can be renewed, its synchronous result, and the
    bursts kept for it (by result channel length). It owns its case (harness.targets.reuse.owned_copy)."""

    case: Case
    live_request: LiveRequest  # the case's request over shared memory
    prepared: PreparedModel
    sync: SyncResult
    fully_specified: list[OutputShape] | None  # the outputs' shapes when model and request fix them all
    ignore: set[int]
    clients: dict[int, BurstClient] = field(default_factory=dict)
    retired: list[Memory] = field(default_factory=list)
    # The valid packet per (burst, measure) and its parse: fixed while the memories and their slots are.
    packets: dict[tuple[BurstClient, bool], tuple[bytes, RequestPacket]] = field(default_factory=dict)

    @property
    def model(self) -> Model:
        """The hal.Model."""
        return self.case.materialized().model

    @property
    def request(self) -> Request:
        """The hal.Request."""
        return self.live_request.request

    @classmethod
    def build(cls, case: Case, device: Device, timeout_s: float) -> BurstModel | Breach | None:
        """The state of a case's model and request; a finding if the driver fails a valid model, None if it does
        not support it."""
        own = owned_copy(case)
        try:
            model = own.materialized().model
            status, flags = supported_operations(device, model)
            finding = judge_supported_operations(status, flags, len(model.main.operations))
            if finding is not None:
                own.close()
                return finding
            p = prepare(device, model, timeout_s=timeout_s)
            finding, unsupported = judge_valid_preparation(p.launch, p.status, p.prepared, all(flags))
            if finding is not None or unsupported or p.prepared is None:
                own.close()
                return finding
        except BaseException:
            own.close()
            raise
        request = own.materialized().request
        assert request is not None, "a burst case has a request"
        shapes = _fully_specified(model, request.request)
        state = cls(own, request, p.prepared, SyncResult(ErrorStatus.NONE, [], []), shapes, unspecified_outputs(model))
        try:
            state.refresh()
            status, shapes, _ = call("executeSynchronously", lambda: _sync(state.prepared, state.request))
        except BaseException:
            state.close()
            raise
        outputs = state.read_outputs([s.dimensions for s in shapes] or _known_dims(state)) if status == 0 else []
        state.sync = SyncResult(status, shapes, outputs)
        return state

    def refresh(self) -> None:
        """Write the inputs again and clear the outputs (a packet may have written anywhere in the pools)."""
        self.live_request.restore()

    def read_outputs(self, dims: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """The outputs' values with these dimensions, from the current memories (empty arrays if they do not fit)."""
        live = self.live_request
        values = []
        for k, (arg, d) in enumerate(zip(live.request.outputs, dims)):
            value = None if arg.has_no_value else live.read_output(k, d)
            values.append(np.zeros(0, live.output_dtypes[k]) if value is None else value)
        return values

    def renew(self, which: str, free: bool, client: BurstClient | None) -> None:
        """New memories for the pools holding outputs ("outputs") or for every pool ("all")."""
        live = self.live_request
        pools = range(len(live.request.pools))
        if which == "outputs":
            pools = sorted({a.location.pool_index for a in live.request.outputs if not a.has_no_value})
        for p in pools:
            old = live.renew(p)
            self.packets.clear()
            if free and client is not None:
                call("freeMemory", client.free_memory, old)
                old.close()
            else:
                self.retired.append(old)

    def packet(self, client: BurstClient, measure: bool) -> tuple[bytes, RequestPacket]:
        """The request's valid packet on this burst (its pools given slots), and the packet as parsed."""
        key = (client, measure)
        if key not in self.packets:
            raw = client.packet_for(self.request, MeasureTiming.YES if measure else MeasureTiming.NO)
            self.packets[key] = (raw, deserialize_request(raw))
        return self.packets[key]

    def forget(self, client: BurstClient) -> None:
        """Drop what is kept about a burst that is closed."""
        for key in [k for k in self.packets if k[0] is client]:
            del self.packets[key]

    def known_slots(self, client: BurstClient) -> list[int]:
        """The slots the client's callback answers getMemories for: this case's memories and any an earlier case on
        the same kept burst left there (a packet naming one of those is one the driver can serve)."""
        return sorted(client.callback.slots())

    def close_clients(self) -> None:
        """Close every kept burst and the memories only they still referred to."""
        for client in self.clients.values():
            client.close()
        self.clients.clear()
        self.packets.clear()
        for memory in self.retired:
            memory.close()
        self.retired.clear()

    def close(self) -> None:
        """Release everything."""
        self.close_clients()
        self.case.close()


class BurstStates:
    """The BurstModel of each case's model and request, kept per device."""

    def __init__(self, limit: int) -> None:
        self._states: DeviceStates[BurstModel] = DeviceStates(limit=limit)
        self._keys = CaseKeys()

    def get(self, case: Case, device: Device, timeout_s: float, fresh: bool = False) -> BurstModel | Breach | None:
        """The kept state of the case's model and request on this device (built when missing or asked fresh)."""
        key = self._keys.key(case.model, case.request, case.inputs)
        state = None if fresh else self._states.get(device, key)
        if state is None:
            built = BurstModel.build(case, device, timeout_s)
            if not isinstance(built, BurstModel):
                return built
            state = self._states.put(device, key, built)
        return state


def _sync(prepared: PreparedModel, request: Request) -> tuple[ErrorStatus, list[OutputShape], object]:
    status, shapes, timing = prepared.execute_synchronously(request, MeasureTiming.NO, None, None)
    return status_of(status), list(shapes), timing


def _known_dims(state: BurstModel) -> list[list[int]]:
    return [list(s.dimensions) for s in state.fully_specified or []]


def _fully_specified(model: Model, request: Request) -> list[OutputShape] | None:
    """Each output's shape when the model and request fix every one of them, else None."""
    main = model.main
    shapes = []
    for arg, index in zip(request.outputs, main.output_indexes):
        operand = main.operands[index]
        dims = merge_dimensions(operand.dimensions, arg.dimensions) if is_tensor_type(operand.type) else []
        if dims is None or any(d == 0 for d in dims) or (is_tensor_type(operand.type) and not dims):
            return None
        shapes.append(OutputShape(list(dims), True))
    return shapes


# --- judging results ------------------------------------------------------------------------------------------


def _no_timing(result: ResultPacket) -> bool:
    return result.timing.time_on_device == NO_TIMING and result.timing.time_in_driver == NO_TIMING


def judge_error_result(result: ResultPacket, rule: str, what: str) -> Breach | None:
    """An error result: a status other than NONE, no output shapes, no timing."""
    if result.status == ErrorStatus.NONE:
        return Breach(rule, f"{what}: the burst answered NONE")
    if result.output_shapes:
        return Breach(rule, f"{what}: {len(result.output_shapes)} output shapes with {result.status.name}")
    if not _no_timing(result):
        return Breach(rule, f"{what}: timing reported with {result.status.name}")
    return None


def _shapes_text(shapes: Sequence[OutputShape]) -> str:
    return str([(list(s.dimensions), bool(s.is_sufficient)) for s in shapes])


def judge_like_sync(
    state: BurstModel, result: ResultPacket, measure: bool, rule: str, elapsed_ns: int | None = None
) -> Breach | None:
    """A valid request over the burst: the synchronous status, shapes and outputs; timing only when measured.

    `elapsed_ns` is the wall time of the exchange that brought the result (BurstClient.last_elapsed_ns).
    """
    sync = state.sync
    # A result packet carries a 1.0 status: what 1.3 added to ErrorStatus is GENERAL_FAILURE over a burst.
    expected = carried(BURST_RESULT, sync.status)
    if result.status != expected:
        over = f" ({expected.name} over a burst)" if expected != sync.status else ""
        return Breach(rule, f"the burst answered {result.status.name}, executeSynchronously {sync.status.name}{over}")
    shapes = list(result.output_shapes)
    same = [(list(s.dimensions), bool(s.is_sufficient)) for s in shapes]
    allowed = [[(list(s.dimensions), bool(s.is_sufficient)) for s in sync.shapes]]
    if result.status == ErrorStatus.NONE and state.fully_specified is not None:
        # With every output's shape known beforehand, reporting them is optional.
        allowed += [[], [(list(s.dimensions), True) for s in state.fully_specified]]
    if same not in allowed:
        return Breach(
            rule,
            f"the burst reported output shapes {_shapes_text(shapes)}",
            f"executeSynchronously reported {_shapes_text(sync.shapes)}",
        )
    timing = judge_timing(PathOutcome("burst", result.status, shapes, result.timing, elapsed_ns=elapsed_ns), measure)
    if timing is not None:
        return timing
    if result.status != ErrorStatus.NONE:
        return None
    actual = state.read_outputs([np.shape(o) for o in sync.outputs])
    types = [state.model.main.operands[i].type for i in state.model.main.output_indexes]
    relaxed = state.model.relax_computation_float32_to_float16
    exact = exact_outputs(state.model)
    finding = judge_outputs("burst", actual, sync.outputs, types, relaxed, ignore=state.ignore, exact=exact)
    if finding is None:
        return None
    return Breach(rule, f"outputs differ from executeSynchronously's ({finding.title})", finding.details, "burst")


def result_sizes(state: BurstModel) -> tuple[int, int]:
    """(fewest, most) result datums the burst may need for the request: shapes are optional when all known."""
    sync = state.sync
    most = result_length(sync.shapes) if sync.status in _SHAPED else MIN_RESULT_DATUMS
    fewest = MIN_RESULT_DATUMS if sync.status == ErrorStatus.NONE and state.fully_specified is not None else most
    return min(fewest, most), most


def judge_valid_result(
    state: BurstModel, result: ResultPacket, measure: bool, capacity: int, rule: str, elapsed_ns: int | None = None
) -> Breach | None:
    """A valid request's result on a burst whose result channel holds `capacity` datums."""
    fewest, most = result_sizes(state)
    if capacity < fewest:
        return judge_error_result(
            result, OVERSIZED_RESULT_REJECTED, f"a result of at least {fewest} datums for a channel of {capacity}"
        )
    if capacity < most and judge_error_result(result, OVERSIZED_RESULT_REJECTED, "") is None:
        return None  # the result may or may not have fitted, depending on whether shapes are reported
    return judge_like_sync(state, result, measure, rule, elapsed_ns)


def judge_other_result(result: ResultPacket, measure: bool, elapsed_ns: int | None = None) -> Breach | None:
    """A well-formed packet of some other request: any status, shapes only with NONE or OUTPUT_INSUFFICIENT_SIZE."""
    if result.output_shapes and result.status not in _SHAPED:
        return Breach(
            MALFORMED_PACKET_REJECTED,
            f"{len(result.output_shapes)} output shapes with {result.status.name}",
        )
    shapes = list(result.output_shapes)
    return judge_timing(PathOutcome("burst", result.status, shapes, result.timing, elapsed_ns=elapsed_ns), measure)


def judge_packet_result(
    state: BurstModel, judgement: PacketJudgement, result: ResultPacket, capacity: int, elapsed_ns: int | None = None
) -> Breach | None:
    """The result of a (possibly mutated) packet, as judge_packet classified it."""
    if judgement.expect in (MALFORMED, UNKNOWN_SLOT):
        return judge_error_result(
            result, MALFORMED_PACKET_REJECTED, f"a packet that must be refused ({judgement.reason})"
        )
    if judgement.dirty and judge_error_result(result, MALFORMED_PACKET_REJECTED, "") is None:
        return None  # refused for its non-zero padding: a strict reading of the wire format
    measure = judgement.parsed is not None and judgement.parsed.measure == MeasureTiming.YES
    if judgement.expect == SAME:
        return judge_valid_result(state, result, measure, capacity, MATCHES_SYNCHRONOUS, elapsed_ns)
    return judge_other_result(result, measure, elapsed_ns)


# --- talking to the burst -------------------------------------------------------------------------------------


class SessionStop(Exception):
    """A finding that ends the session."""

    def __init__(self, finding: Breach) -> None:
        super().__init__(finding.title)
        self.finding = finding


def exchange(client: BurstClient, raw: bytes, after: str) -> ResultPacket:
    """Send a packet and read its result; a broken listener or malformed result ends the session (SessionStop)."""
    try:
        result = call("burst exchange", client.exchange, raw)
    except DriverRaised as e:
        if isinstance(e.error, BurstBroken):
            raise SessionStop(
                Breach(LISTENER_KEEPS_SERVING, f"the burst's listener went away {after}", str(e.error))
            ) from None
        if isinstance(e.error, BurstPacketError):
            details = f"{e.error}\nresult bytes: {client.last_result.hex()}"
            raise SessionStop(Breach(RESULT_WELL_FORMED, f"a malformed result packet {after}", details)) from None
        raise
    if client.last_notes:
        raise SessionStop(
            Breach(RESULT_PADDING_ZEROED, client.last_notes[0], f"result bytes: {client.last_result.hex()}")
        )
    return result


def open_client(state: BurstModel, capacity: int, timeout_s: float) -> BurstClient:
    """A new burst on the state's prepared model (a finding ends the session if the driver refuses one)."""
    try:
        return call(
            "configureExecutionBurst",
            lambda: BurstClient(
                state.prepared, request_length=REQUEST_CHANNEL, result_length=capacity, timeout_s=timeout_s
            ),
        )
    except DriverRaised as e:
        if isinstance(e.error, BurstUnavailable):
            raise SessionStop(Breach(CONFIGURED, str(e.error))) from None
        raise


def run_valid(state: BurstModel, client: BurstClient, capacity: int, measure: bool, after: str, rule: str) -> None:
    """A valid request over the burst, judged against the synchronous result."""
    state.refresh()
    packet, _ = state.packet(client, measure)
    result = exchange(client, packet, after)
    finding = judge_valid_result(state, result, measure, capacity, rule, client.last_elapsed_ns)
    if finding is not None:
        raise SessionStop(finding)
