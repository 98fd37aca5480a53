"""The burst_packets target: raw bytes fed into a configured burst's request channel as datums, then a valid
request (REQUIREMENTS D21, D22).

A case is a small pooled model with a valid request and one packet of raw bytes: either the fuzzer's bytes as
they come ("raw") or the request's own valid packet with a few byte ranges overwritten by the fuzzer's bytes
("splice", which gets past the first datum far more often). The packet is sent on a burst that has already run
the valid request once (so its slots 0..n-1 name the request's pools), then the valid request is sent again.
The result of the packet must be well formed with zero padding: an error with no shapes and no timing for a
malformed packet or an unknown slot, the synchronous result for a packet that is the valid request, any
well-formed result for another valid request. The listener must never hang or die and must then serve the valid
request as executeSynchronously does.

The prepared model, its request memories and its burst are kept per device across cases (`extras["reuse"]`); a
case that fails on a kept burst is run again on a new one, and the verdict says when only the kept one fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.case import Case
from harness.gen.burst_packets import judge_packet
from harness.gen.model import ModelConfig
from harness.gen.requests import RequestConfig
from harness.gen.source import Source
from harness.hal import DataLocation, Device, MeasureTiming, RequestArgument
from harness.hal.burst_wire import DATUM_SIZE, RequestPacket, serialize_request
from harness.oracle.rules import Breach, verdict_of
from harness.oracle.verdict import Verdict
from harness.paths.burst_client import BurstClient
from harness.targets._common import DEFAULT_TIMEOUT_S, guarded
from harness.targets.base import register_target
from harness.targets.burst_session import (
    DEFAULT_CHANNEL,
    LISTENER_KEEPS_SERVING,
    MATCHES_SYNCHRONOUS,
    BurstModel,
    BurstStates,
    SessionStop,
    exchange,
    judge_packet_result,
    open_client,
    run_valid,
)
from harness.targets.reuse import ModelPool, confirmed_on_fresh_state

TINY_MODELS = ModelConfig(max_operations=1, control_flow=False, max_elements=16)
TINY_REQUESTS = RequestConfig(too_small_probability=0.0, max_pools=2)
REUSE_NOTE = "the prepared model, its request memories and its burst are kept per device across cases"


def template_packet(request_json: dict, measure: MeasureTiming = MeasureTiming.NO) -> bytes:
    """The valid packet of a case-format request whose pools hold slots 0..n-1 in order."""

    def argument(d: dict) -> RequestArgument:
        location = DataLocation(int(d.get("poolIndex", 0)), int(d.get("offset", 0)), int(d.get("length", 0)))
        return RequestArgument(bool(d.get("hasNoValue")), location, [int(x) for x in d.get("dimensions", [])])

    packet = RequestPacket(
        [argument(d) for d in request_json["inputs"]],
        [argument(d) for d in request_json["outputs"]],
        list(range(len(request_json["pools"]))),
        measure,
    )
    return serialize_request(packet)


@dataclass
class BurstPacketsTarget:
    """Fuzz target feeding raw bytes into a burst's request channel."""

    name: str = "burst_packets"
    model_config: ModelConfig = field(default_factory=lambda: TINY_MODELS)
    request_config: RequestConfig = field(default_factory=lambda: TINY_REQUESTS)
    pool_size: int = 8
    max_datums: int = 48  # datums of a raw packet
    modes: tuple[str, ...] = ("raw", "splice", "splice")
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        self._pool = ModelPool(0xB0258, self.model_config, self.request_config)
        self._states = BurstStates(limit=16)

    def decode(self, source: Source) -> Case:
        """A pooled model and request, and one packet of raw or spliced bytes."""
        mine = self._pool.get(source.integer(0, self.pool_size - 1))
        mode = source.choice(self.modes)
        if mode == "raw":
            n = source.integer(1, self.max_datums) * DATUM_SIZE
            data = source.bytes(n)
            packet = data + bytes(n - len(data))
        else:
            packet = bytearray(template_packet(mine.request))
            for _ in range(source.integer(1, 4)):
                at = source.integer(0, len(packet) - 1)
                chunk = source.bytes(source.integer(1, 8))
                packet[at : at + len(chunk)] = chunk[: len(packet) - at]
            packet = bytes(packet)
        return mine.case(
            self.name,
            execution={"paths": ["burst"]},
            expect={"mode": mode},
            extras={"packet": packet.hex(), "mode": mode, "reuse": REUSE_NOTE},
        )

    def run(self, case: Case, device: Device) -> Verdict:
        """The packet, then the valid request, on a burst that already served the valid request."""
        verdict = guarded(self.name, lambda: self._run(case, device, fresh=False))
        fresh = lambda: guarded(self.name, lambda: self._run(case, device, fresh=True))  # noqa: E731
        return confirmed_on_fresh_state(verdict, fresh)

    def _run(self, case: Case, device: Device, fresh: bool) -> Verdict:
        state = self._states.get(case, device, self.timeout_s)
        if state is None:
            return verdict_of([], self.name, unsupported=True)
        if isinstance(state, Breach):
            return verdict_of([state], self.name)
        capacity = DEFAULT_CHANNEL
        client = None if fresh else state.clients.pop(capacity, None)
        kept = client is not None
        keep = False
        raw = bytes.fromhex(case.extras.get("packet", ""))
        try:
            if client is None:
                client = open_client(state, capacity, self.timeout_s)
                # The first request gives the pools their slots, 0..n-1 in pool order, as the packets assume.
                run_valid(state, client, capacity, False, "on a new burst", MATCHES_SYNCHRONOUS)
            if raw:
                state.refresh()
                _, parsed = state.packet(client, False)
                judgement = judge_packet(raw, parsed, state.known_slots(client))
                result = exchange(client, raw, "after a raw packet")
                finding = judge_packet_result(state, judgement, result, capacity, client.last_elapsed_ns)
                if finding is not None:
                    raise SessionStop(finding)
            run_valid(state, client, capacity, False, "after a raw packet", LISTENER_KEEPS_SERVING)
            keep = True
        except SessionStop as stop:
            return verdict_of([stop.finding], self.name, kept=kept)
        finally:
            if client is not None:
                if keep:
                    _keep(state, capacity, client)
                else:
                    client.close()
                    state.forget(client)
        return verdict_of([], self.name, kept=kept)


def _keep(state: BurstModel, capacity: int, client: BurstClient) -> None:
    old = state.clients.pop(capacity, None)
    if old is not None and old is not client:
        old.close()
        state.forget(old)
    state.clients[capacity] = client


TARGET = register_target(BurstPacketsTarget())
