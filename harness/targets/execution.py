"""The execution target: valid models and requests run on every execution path and judged against the reference.

A case is a generated model, its input values and a valid request (pool layout, memory kinds, unknown output
dimensions, deliberately too-small outputs), executed with or without timing measurement, maybe with a deadline
(already passed, or far away) and the loop timeout the request was generated for. The reference result (computed
once per case: by generation, which travels with the case, or on first need for a case read from JSON) prescribes
the status, the output shapes and the values (harness.targets.execute runs and judges the paths).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.case import Case, Live
from harness.gen.model import ModelConfig, generate_model
from harness.gen.requests import BOUNDARY_LOOP_TIMEOUTS, RequestConfig, generate_request
from harness.gen.source import Source
from harness.hal import Device
from harness.oracle.verdict import Verdict
from harness.targets._common import DEFAULT_TIMEOUT_S
from harness.targets.base import register_target
from harness.targets.execute import FAR_DEADLINE_NS, Plan, execute_case

# No deadline mostly; now and then one already passed (MISSED_DEADLINE_*) or one far away (like none).
DEFAULT_DEADLINES: tuple[int | None, ...] = (None, None, None, None, None, None, -1, 6 * FAR_DEADLINE_NS)


@dataclass
class ExecutionTarget:
    """Fuzz target for executions of valid requests."""

    name: str = "execution"
    model_config: ModelConfig = field(default_factory=ModelConfig)
    request_config: RequestConfig = field(default_factory=lambda: RequestConfig(loop_timeouts=BOUNDARY_LOOP_TIMEOUTS))
    timeout_s: float = DEFAULT_TIMEOUT_S
    paths: tuple[str, ...] | None = None  # execution paths to run (None: every path of harness.paths.PATHS)
    # Execution deadlines to draw from, relative to the call in nanoseconds (None: no deadline; <= 0: passed).
    deadlines: tuple[int | None, ...] = DEFAULT_DEADLINES

    def decode(self, source: Source) -> Case:
        """A generated model, inputs and a valid request, with timing measured or not and maybe a deadline."""
        generated = generate_model(source, self.model_config)
        try:
            request = generate_request(source, generated, self.request_config)
            execution = {
                "measure": source.boolean(),
                "deadlineNs": source.choice(self.deadlines),
                "loopTimeoutNs": request.loop_timeout_ns,
            }
        except BaseException:
            generated.close()
            raise
        return Case(
            self.name,
            request=request.request_json,
            execution=execution,
            expect={"valid": True, "insufficient": sorted(request.insufficient)},
            live=Live(generated.model, generated.inputs, reference=request.expected),
        )

    def run(self, case: Case, device: Device) -> Verdict:
        """Every applicable path (fenced only for fully specified outputs), judged against the reference."""
        return execute_case(self.name, case, device, Plan(paths=self.paths, timeout_s=self.timeout_s))


TARGET = register_target(ExecutionTarget())
