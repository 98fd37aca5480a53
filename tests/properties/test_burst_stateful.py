"""Burst sessions as a state machine (REQUIREMENTS D20-D22): bursts configured on one prepared model, run,
broken by malformed packets, their memories freed and replaced (so that slots are reused), unknown slots freed,
and released, in any order and interleaved.

Invariants: every valid request over a live burst gives what executeSynchronously gives (status, shapes, outputs,
no timing unless measured), also right after a malformed packet; a malformed packet gets an error result; a
released burst refuses silently nothing: a request sent to it is neither served nor left waiting.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, rule

from driver_under_test import create_device
from harness.gen.burst_packets import apply_mutation
from harness.gen.sources import RandomSource
from harness.hal import MeasureTiming
from harness.paths.burst_client import BurstBroken, BurstClient
from harness.targets.burst import BurstTarget
from harness.targets.burst_session import (
    MALFORMED_PACKET_REJECTED,
    MATCHES_SYNCHRONOUS,
    BurstModel,
    SessionStop,
    exchange,
    judge_error_result,
    open_client,
    run_valid,
)

TIMEOUT_S = 10.0
RELEASE_WAIT_S = 2.0
_DEVICE = None
_CASES = []


def device():
    """One fault-free device for the module (the machine cannot take fixtures)."""
    global _DEVICE
    if _DEVICE is None:
        _DEVICE = create_device(faults=[])
    return _DEVICE


def cases():
    """A few pooled models with requests, decoded once."""
    if not _CASES:
        target = BurstTarget(fresh_probability=0.0)
        _CASES.extend(target.decode(RandomSource(seed)) for seed in range(4))
    return _CASES


def no_finding(call, *args) -> None:
    try:
        call(*args)
    except SessionStop as stop:
        raise AssertionError(f"[{stop.finding.rule}] {stop.finding.title}\n{stop.finding.details}") from None


class BurstSessions(RuleBasedStateMachine):
    """Several bursts on one prepared model, used and released in any order."""

    bursts = Bundle("bursts")

    def __init__(self) -> None:
        super().__init__()
        self.state: BurstModel | None = None
        self.clients: list[BurstClient] = []

    @initialize(case=st.integers(0, 3))
    def prepare(self, case: int) -> None:
        built = BurstModel.build(cases()[case], device(), TIMEOUT_S)
        assert isinstance(built, BurstModel), built
        self.state = built

    @rule(target=bursts, small=st.booleans())
    def configure(self, small: bool):
        capacity = 4 if small else 1024
        client = open_client(self.state, capacity, TIMEOUT_S)
        self.clients.append(client)
        return client, capacity

    @rule(burst=bursts, measure=st.booleans())
    def run(self, burst, measure: bool) -> None:
        client, capacity = burst
        no_finding(run_valid, self.state, client, capacity, measure, "", MATCHES_SYNCHRONOUS)

    @rule(burst=bursts, index=st.integers(0, 63))
    def malformed(self, burst, index: int) -> None:
        client, _ = burst
        self.state.refresh()
        packet = client.packet_for(self.state.request, MeasureTiming.NO)
        broken = apply_mutation(packet, {"op": "remove", "index": index})

        def send() -> None:
            result = exchange(client, broken, "after a malformed packet")
            finding = judge_error_result(result, MALFORMED_PACKET_REJECTED, "a packet missing a datum")
            if finding is not None:
                raise SessionStop(finding)

        no_finding(send)

    @rule(burst=bursts, which=st.sampled_from(["outputs", "all"]))
    def reuse_slots(self, burst, which: str) -> None:
        # freeMemory of the pools' memories, then new memories: the client hands them the freed slots, and the
        # burst must reach the new memories through them.
        client, capacity = burst
        self.state.renew(which, True, client)
        no_finding(run_valid, self.state, client, capacity, False, "after its slots were reused", MATCHES_SYNCHRONOUS)

    @rule(burst=bursts, which=st.sampled_from(["outputs", "all"]))
    def new_memories(self, burst, which: str) -> None:
        # New memories without freeing the old ones: they get new slots, the old ones stay cached.
        client, _ = burst
        self.state.renew(which, False, client)

    @rule(burst=bursts, slot=st.integers(-2, 40))
    def free_slot(self, burst, slot: int) -> None:
        client, _ = burst
        client.context.free_memory(slot)  # known or not: the next request fetches what it needs again

    @rule(burst=consumes(bursts))
    def release(self, burst) -> None:
        client, _ = burst
        client.context.release()
        client.timeout_s = RELEASE_WAIT_S
        self.state.refresh()
        packet = client.packet_for(self.state.request, MeasureTiming.NO)
        try:
            result = client.exchange(packet)
        except BurstBroken:
            pass
        else:
            raise AssertionError(f"a released burst served a request ({result.status.name})")
        finally:
            client.close()

    def teardown(self) -> None:
        for client in self.clients:
            client.close()
        if self.state is not None:
            self.state.close()


BurstSessions.TestCase.settings = settings(BurstSessions.TestCase.settings, stateful_step_count=12)
test_burst_sessions_match_synchronous_execution_and_release_refuses = BurstSessions.TestCase
