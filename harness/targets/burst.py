"""The burst target: sessions of valid and mutated request packets over a real burst, judged against
executeSynchronously (REQUIREMENTS D20-D22).

A case is a generated model with a valid request and inputs, and a burst session (harness.gen.burst_packets):
valid requests, packets broken the way the HAL conformance suite breaks them (datums removed, inserted or
replaced by bad datums, wrong counts, unknown slots), memories freed and replaced so that the burst reuses their
slots, unknown slots freed, a result channel too small for the result, and a release. The oracle is the same
request run synchronously on the same prepared model: a valid request over the burst gives its status, shapes
and outputs; a malformed packet gives an error status with no shapes and no timing, and the listener keeps
serving (the next valid request succeeds); a result that does not fit the result channel is an error; result
padding is zero; a released burst serves nothing and does not leave the client waiting.

Prepared models, their requests and their synchronous results are kept per device across cases, and so are the
bursts of cases that allow it (`case.extras["reuse"]`). A case that fails on a kept burst is run again on a new
one; the verdict says when only the kept burst fails (`extras["history"]`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.case import Case
from harness.gen.burst_packets import (
    BurstSessionConfig,
    apply_mutation,
    generate_session,
    judge_packet,
)
from harness.gen.model import ModelConfig
from harness.gen.requests import RequestConfig
from harness.gen.source import GenerationRejected, Source
from harness.hal import (
    Device,
    MeasureTiming,
)
from harness.oracle.rules import (
    Breach,
    verdict_of,
)
from harness.oracle.verdict import Verdict
from harness.paths.burst_client import BurstBroken, BurstClient
from harness.targets._common import (
    DEFAULT_TIMEOUT_S,
    call,
    guarded,
    prepared_invalid_model,
)
from harness.targets.base import register_target
from harness.targets.burst_session import (
    DEFAULT_CHANNEL,
    LISTENER_KEEPS_SERVING,
    MATCHES_SYNCHRONOUS,
    MAX_RETIRED,
    RELEASE_ENDS_LISTENER,
    RELEASE_WAIT_S,
    BurstModel,
    BurstStates,
    SessionStop,
    exchange,
    judge_packet_result,
    open_client,
    run_valid,
)
from harness.targets.reuse import ModelPool, confirmed_on_fresh_state, draw_case

BURST_MODELS = ModelConfig(max_operations=2, control_flow=False, max_elements=64)
BURST_REQUESTS = RequestConfig(too_small_probability=0.1, omit_known_dims_probability=0.25, output_dims_probability=0.7)


@dataclass
class BurstTarget:
    """Fuzz target for burst sessions (configureExecutionBurst, request and result channels, freeMemory)."""

    name: str = "burst"
    model_config: ModelConfig = field(default_factory=lambda: BURST_MODELS)
    request_config: RequestConfig = field(default_factory=lambda: BURST_REQUESTS)
    session_config: BurstSessionConfig = field(default_factory=BurstSessionConfig)
    pool_size: int = 16  # models a case draws from (each prepared once per device)
    fresh_probability: float = 0.25  # how often a case draws a new model from the source instead
    reuse_probability: float = 0.75  # how often a case may run on a burst an earlier case used
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        self._pool = ModelPool(0xB0257, self.model_config, self.request_config)
        self._states = BurstStates(limit=32)

    def decode(self, source: Source) -> Case:
        """A pooled (or fresh) model and request, and a burst session."""
        if self.fresh_probability > 0 and source.integer(0, 999) < self.fresh_probability * 1000:
            mine = draw_case(source, self.model_config, self.request_config)
            if mine is None:
                raise GenerationRejected("the fresh model's reference result is not NONE")
        else:
            mine = self._pool.get(source.integer(0, self.pool_size - 1))
        session = generate_session(source, self.session_config)
        reuse = source.integer(0, 999) < self.reuse_probability * 1000
        return mine.case(
            self.name,
            execution={"paths": ["burst"]},
            expect={"steps": [s["do"] for s in session["steps"]]},
            extras={"burst": session, "reuse": reuse},
        )

    def run(self, case: Case, device: Device) -> Verdict:
        """The session's steps on one burst, each judged; the first finding ends it."""
        reuse = bool(case.extras.get("reuse"))
        verdict = guarded(self.name, lambda: self._run(case, device, reuse))
        fresh = lambda: guarded(self.name, lambda: self._run(case, device, False, fresh=True))  # noqa: E731
        return confirmed_on_fresh_state(verdict, fresh)

    def _run(self, case: Case, device: Device, reuse: bool, fresh: bool = False) -> Verdict:
        state = self._states.get(case, device, self.timeout_s, fresh)
        if state is None:
            return verdict_of([], self.name, unsupported=True)
        if isinstance(state, Breach):
            return verdict_of([state], self.name)
        # The driver prepared the model: a failure on a model it should have refused is charged as that.
        verdict = self._session(case, state, reuse)
        return prepared_invalid_model(verdict, state.model, self.name)

    def _session(self, case: Case, state: BurstModel, reuse: bool) -> Verdict:
        session = case.extras.get("burst", {})
        capacity = int(session.get("resultChannel") or DEFAULT_CHANNEL)
        client = state.clients.pop(capacity, None) if reuse else None
        kept = client is not None
        if client is None:
            try:
                client = open_client(state, capacity, self.timeout_s)
            except SessionStop as stop:
                return verdict_of([stop.finding], self.name)
        keep = reuse
        try:
            step_no = -1
            for step_no, step in enumerate(session.get("steps", ())):
                keep = self._step(state, client, capacity, step, step_no, session["steps"]) and keep
        except SessionStop as stop:
            keep = False
            return verdict_of([stop.finding], self.name, step=step_no, kept=kept)
        finally:
            if keep and not client.closed:
                state.clients[capacity] = client
            else:
                client.close()
                state.forget(client)
            if len(state.retired) > MAX_RETIRED:
                state.close_clients()
        return verdict_of([], self.name, kept=kept)

    def _step(
        self, state: BurstModel, client: BurstClient, capacity: int, step: dict, no: int, steps: Sequence[dict]
    ) -> bool:
        """Run one step; False if the burst must not be kept afterwards. A finding raises SessionStop."""
        kind = step.get("do")
        after_packet = no > 0 and steps[no - 1].get("do") == "packet"
        if kind == "run":
            rule = LISTENER_KEEPS_SERVING if after_packet else MATCHES_SYNCHRONOUS
            after = "after a malformed packet" if after_packet else f"at step {no}"
            run_valid(state, client, capacity, bool(step.get("measure")), after, rule)
        elif kind == "packet":
            state.refresh()
            valid, parsed = state.packet(client, bool(step.get("measure")))
            raw = apply_mutation(valid, step["mutation"])
            judgement = judge_packet(raw, parsed, state.known_slots(client))
            result = exchange(client, raw, "after a mutated packet")
            finding = judge_packet_result(state, judgement, result, capacity, client.last_elapsed_ns)
            if finding is not None:
                raise SessionStop(
                    Breach(finding.rule, finding.title, f"{finding.details}\npacket: {raw.hex()}".strip(), "burst")
                )
        elif kind == "renew":
            state.renew(step.get("which", "all"), bool(step.get("free")), client)
        elif kind == "free_unknown":
            call("freeMemory", client.context.free_memory, int(step.get("slot", -1)))
        elif kind == "release":
            self._release(state, client)
            return False
        else:
            raise ValueError(f"unknown burst step {kind!r}")
        return True

    def _release(self, state: BurstModel, client: BurstClient) -> None:
        """Release the burst, then send a request: it must be neither served nor left waiting."""
        call("release", client.context.release)
        client.timeout_s = min(self.timeout_s, RELEASE_WAIT_S)
        state.refresh()
        packet = client.packet_for(state.request, MeasureTiming.NO)
        try:
            result = client.exchange(packet)
        except BurstBroken:
            return
        except Exception as e:  # a timeout: the listener neither served nor ended
            raise SessionStop(Breach(RELEASE_ENDS_LISTENER, f"after release a request got no answer: {e}")) from None
        raise SessionStop(Breach(RELEASE_ENDS_LISTENER, f"a released burst served a request ({result.status.name})"))


TARGET = register_target(BurstTarget())
