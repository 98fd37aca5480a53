"""The differential target: one generated execution run on every engine a driver runs on, the engines judged against
each other (harness.oracle.engines: `engines.disagree`), also where the reference does not judge.

A case is decoded as the execution target decodes one (a generated model, its inputs, a valid request), without
deliberately too-small outputs, deadlines or timing measurement: what differs between engines is then their
computation. The engines are the variants the driver's module declares (harness.drivers.variants: for the bundled
driver numpy, LiteRT's kernel sets and ONNX Runtime's optimization levels), created once per process; those whose
engine is not installed are left out. NNFUZZ_ENGINES (comma-separated variant names) picks a subset, and
NNFUZZ_DRIVER names the driver whose variants they are (the bundled one by default).

The device the target is given takes the place of the variant it is (the same engine and kernel set), so faults
planted on it are in play; a device that is none of them joins as "device". Each engine is asked which operations
it runs: one that does not run them all is left out, as is one that fails to prepare the model (the execution
target judges that). Each of the others runs the request on the synchronous path; their statuses and outputs are
compared, the first difference is the finding, naming which engines gave which values. A difference whose engines
standing apart each show a registered divergence of theirs is marked with it (`extras["divergence"]`), as the other
targets' findings on an engine are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from harness.case import Case, Live, LiveRequest
from harness.drivers import DEFAULT_DRIVER, DriverSpecError, create_device, variants
from harness.gen.model import ModelConfig, generate_model
from harness.gen.requests import RequestConfig, generate_request
from harness.gen.source import Source
from harness.hal import Device, EngineExport, ErrorStatus, MeasureTiming, Model
from harness.oracle.divergences import label_apart
from harness.oracle.engines import EngineAnswer, Outputs, disagreement, explained_by
from harness.oracle.outputs import output_producer, probe_results, quantized_operations, unspecified_outputs
from harness.oracle.rules import verdict_of
from harness.oracle.verdict import Verdict
from harness.paths import PATHS, ExecutionArgs
from harness.reference import validate_model
from harness.targets._common import DEFAULT_TIMEOUT_S, call, guarded, prepare, supported_operations
from harness.targets.base import register_target

ENGINES_ENV, DRIVER_ENV = "NNFUZZ_ENGINES", "NNFUZZ_DRIVER"
DEVICE = "device"  # the name of a given device that is none of the driver's variants
_PATH = "sync"  # one path suffices: the execution target compares the paths with each other


def engine_specs(driver: str | None = None, chosen: str | None = None) -> dict[str, str]:
    """The engines to compare, by variant name: the variants `driver` declares (NNFUZZ_DRIVER, else the bundled
    driver), only those `chosen` names (comma-separated; NNFUZZ_ENGINES by default; empty: all)."""
    driver = driver or os.environ.get(DRIVER_ENV) or DEFAULT_DRIVER
    declared = variants(driver)
    chosen = os.environ.get(ENGINES_ENV, "") if chosen is None else chosen
    names = [name.strip() for name in chosen.split(",") if name.strip()]
    unknown = [name for name in names if name not in declared]
    if unknown:
        known = ", ".join(declared) or "none"
        raise ValueError(f"no engine {', '.join(unknown)} among the variants of {driver} (known: {known})")
    return {name: spec for name, spec in declared.items() if not names or name in names}


@dataclass
class DifferentialTarget:
    """Fuzz target comparing the engines of a driver on one execution."""

    name: str = "differential"
    model_config: ModelConfig = field(default_factory=ModelConfig)
    request_config: RequestConfig = field(default_factory=lambda: RequestConfig(too_small_probability=0.0))
    timeout_s: float = DEFAULT_TIMEOUT_S
    engines: dict[str, str] | None = None  # name -> driver spec (None: engine_specs() when first needed)
    _devices: dict[str, Device] | None = field(default=None, repr=False)
    _missing: dict[str, str] = field(default_factory=dict, repr=False)  # engines that could not be created

    def decode(self, source: Source) -> Case:
        """A generated model, inputs and a valid request whose outputs all fit their buffers."""
        generated = generate_model(source, self.model_config)
        try:
            request = generate_request(source, generated, self.request_config)
        except BaseException:
            generated.close()
            raise
        execution = {"measure": False, "deadlineNs": None, "loopTimeoutNs": request.loop_timeout_ns}
        return Case(
            self.name,
            request=request.request_json,
            execution=execution,
            expect={"valid": True, "insufficient": sorted(request.insufficient)},
            live=Live(generated.model, generated.inputs, reference=request.expected),
        )

    def run(self, case: Case, device: Device) -> Verdict:
        """The case on every engine (the given device in its variant's place), the answers compared."""
        live = case.materialized()
        violations = validate_model(live.model)
        if violations:
            # Engines are compared on valid models only: whether a driver refuses an invalid one is the validation
            # target's question, and a reduction must not turn a disagreement into one over a model nobody may run.
            return verdict_of([], self.name, unsupported=True, invalid=violations[0].message)
        answers: dict[str, EngineAnswer] = {}
        participants = self.participants(device)
        left_out = dict(self._missing)
        for name, engine in participants.items():
            verdict = guarded(self.name, lambda n=name, e=engine: self._answer(n, e, case, live, answers, left_out))
            if not verdict.ok:  # a driver that raised or hung: the execution target's finding, named by engine
                verdict.title = f"{name}: {verdict.title}"
                verdict.extras["engine"] = name
                return verdict
        extras = {"engines": list(answers), "left_out": left_out}
        if len(answers) < 2:
            return verdict_of([], self.name, unsupported=True, **extras)
        identities = {name: _identity(engine) for name, engine in participants.items()}
        families = {name: identity[0] if identity else name for name, identity in identities.items()}
        found = disagreement(answers, _outputs(case, live.model), families)
        if found is None:
            return verdict_of([], self.name, **extras)
        if found.breach.output is not None and _within_the_probes_span(case, live, answers, found.breach.output):
            # Values a one-step difference of correct rounding (or an ULP) moves beyond the tolerance: an engine whose
            # answer lies in the span of the reference's results under its stability probes rounds another way,
            # rightly; one beyond it is still judged.
            return verdict_of([], self.name, ill_conditioned=found.breach.title, **extras)
        verdict = verdict_of([found.breach], self.name, **extras)
        return label_apart(verdict, live.model, found.apart, identities, found.producer)

    def participants(self, device: Device) -> dict[str, Device]:
        """The engines by name, the given device in the place of the variant it is (or added as "device")."""
        if self._devices is None:
            self._devices = {}
            for name, spec in (self.engines if self.engines is not None else engine_specs()).items():
                try:
                    self._devices[name] = create_device(spec)
                except DriverSpecError as exc:  # the engine is not installed here
                    self._missing[name] = f"not available: {exc}"
        engines = dict(self._devices)
        same = next((name for name, d in engines.items() if _same_engine(d, device)), None)
        if same is None:
            return {DEVICE: device, **engines}
        engines[same] = device
        return engines

    def _answer(self, name: str, device: Device, case: Case, live: Live, answers: dict, left_out: dict) -> Verdict:
        """Run the case on one engine: its answer into `answers`, or why it was left out into `left_out`."""
        model = live.model
        status, flags = supported_operations(device, model)
        if status != ErrorStatus.NONE or not all(flags):
            left_out[name] = f"does not run every operation ({ErrorStatus(status).name}, {flags.count(False)} refused)"
            return verdict_of([], self.name)
        prepared = prepare(device, model, timeout_s=self.timeout_s)
        if prepared.status != ErrorStatus.NONE or prepared.prepared is None:
            left_out[name] = f"did not prepare the model ({ErrorStatus(prepared.status).name})"
            return verdict_of([], self.name)
        built = live.request
        assert built is not None, "an executed case has a request"
        built.rewind()
        args = ExecutionArgs(
            measure=MeasureTiming.NO,
            loop_timeout=case.execution.get("loopTimeoutNs"),
            timeout_s=self.timeout_s,
        )
        outcome = call(f"{_PATH} execution", PATHS[_PATH], prepared.prepared, built.request, args)
        if outcome.status != ErrorStatus.NONE:
            answers[name] = EngineAnswer(ErrorStatus(outcome.status))
        else:
            answers[name] = EngineAnswer(ErrorStatus.NONE, _read(built, outcome.output_shapes))
        return verdict_of([], self.name)


def _within_the_probes_span(case: Case, live: Live, answers: dict[str, EngineAnswer], position: int) -> bool:
    """Every engine's value of the output lies in the span of the reference's, plain and under its stability
    probes."""
    reference = case.reference()
    if reference.status != ErrorStatus.NONE or reference.unspecified:
        return False
    probed = probe_results(live.model, live.inputs, case.execution.get("loopTimeoutNs"))
    runs = [r.outputs for r in (reference, *probed) if r.status == ErrorStatus.NONE and not r.unspecified]
    return explained_by(runs, answers, position, _outputs(case, live.model))


def _same_engine(candidate: Device, device: Device) -> bool:
    """True when two devices run the same engine and kernel set (of one device class)."""
    if type(candidate) is not type(device):
        return False
    return _identity(candidate) == _identity(device)


def _identity(device: Device) -> tuple[str, str] | None:
    return device.engine_identity() if isinstance(device, EngineExport) else None


def _read(built: LiveRequest, shapes: list) -> tuple[np.ndarray | None, ...]:
    """Main's outputs of the dimensions the engine reported (None where it reported none that can be read)."""
    outputs: list[np.ndarray | None] = []
    for k in range(len(built.request.outputs)):
        try:
            outputs.append(built.read_output(k, list(shapes[k].dimensions)))
        except (IndexError, ValueError, TypeError, AttributeError):  # a shape the driver got wrong: nothing to read
            outputs.append(None)
    return tuple(outputs)


def _outputs(case: Case, model: Model) -> Outputs:
    """What judging main's outputs needs: types, producers, criterion, the reference's values where it has some."""
    main = model.main
    reference = case.reference()
    prescribed: list[np.ndarray | None] = [None] * len(main.output_indexes)
    unspecified = unspecified_outputs(model)
    if reference.status == ErrorStatus.NONE and not reference.unspecified:
        prescribed = [None if k in unspecified else v for k, v in enumerate(reference.outputs)]
    return Outputs(
        operand_types=[main.operands[i].type for i in main.output_indexes],
        producers=[output_producer(model, k) for k in range(len(main.output_indexes))],
        relaxed=model.relax_computation_float32_to_float16,
        quantized_operations=quantized_operations(model),
        reference=prescribed,
        implementation_defined=frozenset(unspecified),
    )


TARGET = register_target(DifferentialTarget())
