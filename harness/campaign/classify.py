"""Classifying a finding on a driver over a third-party engine, by differential re-runs of its reduced case.

The reduced case is replayed, isolated, on every variant the driver declares (`harness.drivers.variants`: the other
kernel sets of the engine, the driver's own kernels) and run bare on the engine, outside the HAL plumbing, on each
kernel set (`harness.engines.bare_runs`, with the engine model the device built for it). From those outcomes:

- divergence: the finding matches a registered known divergence (harness.oracle.divergences). A differential
  finding (engines.disagree, on any driver) is one when the engines standing apart each show a registered
  divergence (classify_disagreement); it is not re-run on the variants, since it compares them already.
- plumbing: the driver's own kernels fail it the same way (the HAL layer every backend shares), or the engine alone
  computes what the HAL prescribes on the model the device built. Variants over another engine (LiteRT for an ONNX
  Runtime finding) are replayed as evidence but decide nothing: they have code of their own below the HAL layer.
- engine: the engine alone gets it wrong on some of its kernel sets and right on others, or crashes, or hangs.
- translation: the engine alone gets it wrong on every kernel set, the same way: three implementations agree on
  something else than the HAL model says, so the model the device built says something else, or the kernel sets
  share the code that is wrong (LiteRT's fixed-point requantization serves them all): the evidence cannot tell
  these apart, and the reason says so.
- unclassified: the evidence does not decide (no engine model, a format no adapter of harness.engines runs, a
  replay that did not run); the evidence is kept.

A classified finding's signature is made of what the reduced case shows: the outcome, the class, the operation at the
failing output, its operand types and the kernel sets that show it; so distinct engine bugs are distinct findings
and one bug hit by many graphs is one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harness.case import Case, CaseFormatError
from harness.drivers import create_device, variants
from harness.engines import BareRun, BareRuns, NotExportable, RunOutcome, UnknownFormat, bare_runs, engine_model_of
from harness.hal import EngineExport, OperandType
from harness.oracle.divergences import DIVERGENCES, label
from harness.oracle.engines import ENGINES_DISAGREE
from harness.oracle.verdict import Outcome, Verdict
from harness.reference import operation_name

CLASSES = ("engine", "translation", "plumbing", "divergence", "unclassified")
# How a variant's replay of the reduced case ended, in the evidence.
FAILS, PASSES, UNSUPPORTED, NOT_RUN = "fails", "passes", "unsupported", "not run"

# One replay: (driver spec, case JSON) -> the verdict, or None when it could not run.
Replay = Callable[[str, dict], Verdict | None]


@dataclass
class Classification:
    """What the differential re-runs say of a finding on an engine variant."""

    cls: str  # one of CLASSES
    reason: str  # why, in a sentence
    variant: str  # the variant the finding was found on, e.g. "litert-optimized"
    engine: str  # the engine and its version
    kernel_sets: list[str] = field(default_factory=list)  # the engine's kernel sets that show it
    divergence: str | None = None  # the registered divergence it matches
    operation: str = ""  # the operation writing the failing output of the reduced case
    operand_types: list[str] = field(default_factory=list)  # that operation's operand types
    replays: dict[str, str] = field(default_factory=dict)  # variant -> how its replay ended
    bare: dict[str, str] = field(default_factory=dict)  # kernel set -> how the engine alone ended

    def signature(self, outcome: str) -> str:
        """The finding's signature: outcome, class, operation, operand types and the kernel sets that show it."""
        parts = [outcome, self.cls, self.divergence or self.operation, ",".join(self.operand_types)]
        parts.append(",".join(sorted(self.kernel_sets)))
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return {
            "class": self.cls,
            "reason": self.reason,
            "variant": self.variant,
            "engine": self.engine,
            "kernel_sets": list(self.kernel_sets),
            "divergence": self.divergence,
            "operation": self.operation,
            "operand_types": list(self.operand_types),
            "replays": dict(self.replays),
            "bare": dict(self.bare),
        }

    @classmethod
    def from_json(cls, d: Mapping) -> Classification:
        """The Classification a to_json dict describes."""
        return cls(
            cls=str(d["class"]),
            reason=str(d.get("reason", "")),
            variant=str(d.get("variant", "")),
            engine=str(d.get("engine", "")),
            kernel_sets=list(d.get("kernel_sets", [])),
            divergence=d.get("divergence"),
            operation=str(d.get("operation", "")),
            operand_types=list(d.get("operand_types", [])),
            replays=dict(d.get("replays", {})),
            bare=dict(d.get("bare", {})),
        )


def classify_disagreement(verdict: Verdict) -> Classification | None:
    """The class of a differential finding (engines.disagree): a divergence when the engines standing apart each show
    a registered one (the target marks the verdict with it), else None: a new disagreement, kept as it is."""
    ids = verdict.extras.get("divergence") if verdict.rule == ENGINES_DISAGREE else None
    if not ids:
        return None
    entries = [DIVERGENCES[name.strip()] for name in str(ids).split(",")]
    return Classification(
        "divergence",
        "the engines standing apart show known divergences: "
        + "; ".join(f"{e.id} of {e.engine} ({e.condition})" for e in entries),
        "differential",
        ", ".join(sorted({e.engine for e in entries})),
        kernel_sets=sorted({k for e in entries for k in e.kernel_sets}),
        divergence=", ".join(e.id for e in entries),
        operation=(verdict.locus or "").split(" (")[0],
    )


def classify(case_json: dict, verdict: Verdict, driver: str, replay: Replay) -> Classification | None:
    """The class of a finding (its reduced case and verdict) on `driver`; None when the driver is not a variant over
    a third-party engine (its findings are the driver's own) or the finding is a disagreement between engines."""
    if verdict.rule == ENGINES_DISAGREE:
        return None  # the differential target's finding compares the engines already: re-running it tells nothing
    declared = variants(driver)
    own = next((name for name, spec in declared.items() if spec == driver), None)
    device = create_device(driver)
    identity = device.engine_identity() if isinstance(device, EngineExport) else None
    if own is None or identity is None:
        return None
    engine, kernel_set = identity
    try:
        case = Case.from_json(case_json)
        model = case.executed_model()  # loads the live objects: a case that does not load fails here
    except (CaseFormatError, ValueError, KeyError):
        return Classification("unclassified", "the reduced case does not load", own, engine)
    operation, types = _failing_operation(case, verdict)
    found = Classification("unclassified", "", own, engine, operation=operation, operand_types=types)
    try:
        labelled = label(verdict, model, identity)
        if "divergence" in labelled.extras:
            entry = DIVERGENCES[labelled.extras["divergence"]]
            found.cls, found.divergence = "divergence", entry.id
            found.kernel_sets = sorted(entry.kernel_sets)
            found.reason = f"a known divergence of {entry.engine}: {entry.condition}"
            return found
        engines: dict[str, str] = {}  # kernel set -> variant name, for the engine's variants
        others: list[str] = []  # variants without a third-party engine (the driver's own kernels)
        for name, spec in declared.items():
            found.replays[name] = _replayed(replay(spec, case_json), verdict)
            other = create_device(spec)
            other_identity = other.engine_identity() if isinstance(other, EngineExport) else None
            if other_identity is None:
                others.append(name)
            elif other_identity[0] == engine:
                engines[other_identity[1]] = name
        failing = [name for name in others if found.replays[name] == FAILS]
        if failing:
            found.cls = "plumbing"
            found.reason = f"{', '.join(failing)}, without the engine, fails it the same way: the HAL layer every " \
                "backend shares (or the oracle)"  # fmt: skip
            found.kernel_sets = sorted(k for k, name in engines.items() if found.replays[name] == FAILS)
            return found
        hal_showing = sorted(k for k, name in engines.items() if found.replays.get(name) == FAILS) or [kernel_set]
        try:
            runs = bare_runs(case, engine_model_of(case, device))
        except NotExportable as e:
            found.kernel_sets = hal_showing
            found.reason = f"no engine model to run bare ({e}); replays: {found.replays}"
            return found
        except UnknownFormat as e:  # a driver over an engine harness.engines has no adapter for
            found.kernel_sets = hal_showing
            found.reason = f"the engine cannot be run bare: {e}; replays: {found.replays}"
            return found
        found.bare = {k: run.describe() for k, run in runs.runs.items()}
        showing = list(runs.showing())
        found.kernel_sets = sorted(set(showing) | set(hal_showing)) if showing else hal_showing
        found.cls, found.reason = _decide(runs, showing, verdict)
        return found
    finally:
        case.close()


def _decide(runs: BareRuns, showing: list[str], verdict: Verdict) -> tuple[str, str]:
    """(class, reason) from the bare runs."""
    all_sets = list(runs.runs)
    if not showing:
        return "plumbing", "the engine alone computes what the HAL prescribes on the model the device built"
    crashed = [k for k in showing if runs.runs[k].outcome in (RunOutcome.CRASH, RunOutcome.HANG)]
    if crashed:
        return "engine", f"the engine alone crashes or hangs on the model the device built ({', '.join(crashed)})"
    if len(showing) < len(all_sets):
        right = [k for k in all_sets if k not in showing]
        return "engine", f"the engine alone is wrong on {', '.join(showing)} and right on {', '.join(right)}"
    if _same_answer([runs.runs[k] for k in showing]):
        return "translation", "every kernel set computes the same wrong answer: the model the device built says " \
            "something else than the HAL model, or code the kernel sets share is wrong"  # fmt: skip
    return "engine", "every kernel set is wrong, each differently"


def _same_answer(runs: list[BareRun]) -> bool:
    """True when the runs ended the same way with equal outputs (or the same error)."""
    first = runs[0]
    for run in runs[1:]:
        if run.outcome != first.outcome or run.error != first.error or len(run.outputs) != len(first.outputs):
            return False
        if any(a.shape != b.shape or not (a == b).all() for a, b in zip(run.outputs, first.outputs)):
            return False
    return True


def _replayed(verdict: Verdict | None, original: Verdict) -> str:
    """How a variant's replay ended, against the finding's own verdict."""
    if verdict is None:
        return NOT_RUN
    if verdict.extras.get("unsupported"):
        return UNSUPPORTED
    if verdict.outcome == Outcome.SUCCESS:
        return PASSES
    same = verdict.outcome == original.outcome and verdict.rule == original.rule
    return FAILS if same else f"fails otherwise: [{verdict.rule}] {verdict.title}"


def _failing_operation(case: Case, verdict: Verdict) -> tuple[str, list[str]]:
    """The operation named by the verdict (the one writing the failing output), else main's last, and its operand
    types."""
    main = case.materialized().model.main
    if not main.operations:
        return "", []
    name = verdict.locus
    op = next((o for o in reversed(main.operations) if operation_name(o.type) == name), main.operations[-1])
    types = [_type_name(main.operands[i].type) for i in (*op.inputs, *op.outputs) if 0 <= i < len(main.operands)]
    return operation_name(op.type), types


def _type_name(t: int) -> str:
    try:
        return OperandType(t).name
    except ValueError:
        return str(t)
