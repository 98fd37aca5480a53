"""The request target: V30-V37 mutations of valid requests, which every execution path must reject.

A case is a generated model, its inputs and a valid request broken by one request mutation (invalid on every path)
or one fenced-request mutation (invalid on the fenced path only; the other paths must still execute it correctly).
Rejection means INVALID_ARGUMENT with no output shapes and no timing. As in the validation target, the reference
validator has the last word when the driver disagrees with how the case was built.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from harness.case import Case, Live, build_request, request_to_json
from harness.gen.handles import change_pool
from harness.gen.huge import generate_huge
from harness.gen.model import GeneratedModel, ModelConfig, generate_model
from harness.gen.mutations import Mutation, apply_random
from harness.gen.requests import RequestConfig, generate_request
from harness.gen.source import GenerationRejected, Source
from harness.hal import Device, Model, Request
from harness.hal.memory import Memory
from harness.oracle.verdict import Verdict
from harness.paths import PATHS
from harness.targets._common import DEFAULT_TIMEOUT_S
from harness.targets._limits import judge_huge_case
from harness.targets.base import register_target
from harness.targets.execute import Plan, execute_case

# How often (out of 7) decode breaks the request for every path, for the fenced path only, puts one pool in an
# unusual or malformed memory handle (harness.gen.handles) or runs a model of a huge size (harness.gen.huge, D26).
DEFAULT_KINDS = ("request", "request", "request", "request", "fenced_request", "handle", "huge")


@dataclass
class RequestTarget:
    """Fuzz target for request validation on every execution path."""

    name: str = "request"
    model_config: ModelConfig = field(default_factory=ModelConfig)
    request_config: RequestConfig = field(default_factory=RequestConfig)
    timeout_s: float = DEFAULT_TIMEOUT_S
    paths: tuple[str, ...] | None = None  # execution paths to run (None: every path of harness.paths.PATHS)
    kinds: tuple[str, ...] = DEFAULT_KINDS  # "request" or "fenced_request", drawn uniformly (repeat to weigh)

    def decode(self, source: Source) -> Case:
        """A generated model and inputs with a valid request broken by one mutation, or with one pool in an unusual
        or malformed memory handle."""
        kind = source.choice(self.kinds)
        if kind == "huge":
            return self._huge_case(source)
        generated = generate_model(source, self.model_config)
        if kind == "handle":
            return self._handle_case(source, generated)
        try:
            generated_request = generate_request(source, generated, self.request_config)
            # The mutations work on a live request; the case keeps the JSON of the broken one.
            valid = build_request(generated_request.request_json, generated.model, generated.inputs)
            owned = list(valid.memories)
            try:
                kind, mutation, mutated = self._mutate(source, kind, generated.model, valid.request)
                # Pools a mutation created (a shrunk pool) are ours to close; the model's own pools are not.
                owned += [
                    p for p in mutated.pools if isinstance(p, Memory) and all(p is not q for q in generated.model.pools)
                ]
                request_json = request_to_json(mutated, generated.model)
            finally:
                for memory in owned:
                    memory.close()
            execution = {"measure": source.boolean(), "deadlineNs": None, "loopTimeoutNs": None}
        except BaseException:
            generated.close()
            raise
        return Case(
            self.name,
            request=request_json,
            execution=execution,
            expect={"valid": False, "kind": kind, "mutation": mutation.name, "rule": mutation.v},
            live=Live(generated.model, generated.inputs, reference=generated_request.expected),
        )

    def _huge_case(self, source: Source) -> Case:
        """A small model with one huge size (constant or run-time), with a request giving its output a small buffer."""
        huge = generate_huge(source)
        expect = {"valid": True, "kind": "huge", "mutation": huge.name, "rule": "D26", "parameter": huge.parameter,
                  "atRunTime": huge.at_run_time, "outputShape": huge.output_shape}  # fmt: skip
        execution = {"measure": False, "deadlineNs": None, "loopTimeoutNs": None}
        return Case(self.name, request=huge.request_json, execution=execution, expect=expect,
                    live=Live(huge.model, list(huge.inputs)))  # fmt: skip

    def _handle_case(self, source: Source, generated: GeneratedModel) -> Case:
        """A valid request with one of its own pools changed by a drawn HandleChange."""
        try:
            generated_request = generate_request(source, generated, self.request_config)
            request_json = copy.deepcopy(generated_request.request_json)
            own = [i for i, d in enumerate(request_json["pools"]) if "modelPool" not in d]
            if not own:
                raise GenerationRejected("the request has no pool of its own")
            index = source.choice(own)
            change, request_json["pools"][index] = change_pool(request_json["pools"][index], source)
            execution = {"measure": source.boolean(), "deadlineNs": None, "loopTimeoutNs": None}
        except BaseException:
            generated.close()
            raise
        expect = {"valid": change.in_request != "refused", "kind": "handle", "mutation": change.name,
                  "rule": change.rule, "memory": change.in_request}  # fmt: skip
        return Case(self.name, request=request_json, execution=execution, expect=expect,
                    live=Live(generated.model, generated.inputs, reference=generated_request.expected))  # fmt: skip

    def _mutate(self, source: Source, kind: str, model: Model, request: Request) -> tuple[str, Mutation, Request]:
        try:
            mutation, mutated = apply_random(kind, (model, request), source)
        except GenerationRejected:
            # A model with fully specified outputs offers no fenced-only mutation: break the request everywhere.
            if kind != "fenced_request" or "request" not in self.kinds:
                raise
            kind = "request"
            mutation, mutated = apply_random(kind, (model, request), source)
        return kind, mutation, mutated

    def run(self, case: Case, device: Device) -> Verdict:
        """Every path must reject a broken request; a fenced-only breakage is executed normally elsewhere."""
        kind = case.expect.get("kind", "request")
        if kind == "huge":
            return judge_huge_case(self.name, case, device, self.timeout_s)
        if kind == "handle":
            plan = Plan(paths=self.paths, timeout_s=self.timeout_s, memory=case.expect.get("memory", "usable"))
            return execute_case(self.name, case, device, plan)
        invalid_on = frozenset(PATHS) if kind == "request" else frozenset({"fenced"})
        plan = Plan(invalid_on=invalid_on, paths=self.paths, timeout_s=self.timeout_s)
        return execute_case(self.name, case, device, plan)


TARGET = register_target(RequestTarget())
