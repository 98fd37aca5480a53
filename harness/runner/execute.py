"""Running one case in the current process: find the target, decode the input, run, turn what happens into a Verdict.

This is what a worker process does for each case; the benchmark and the evaluation use it directly.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, replace

from harness.case import Case
from harness.gen.source import GenerationRejected
from harness.hal import Device
from harness.oracle.verdict import Outcome, RuleViolation, Verdict, define_rule
from harness.runner.frames import python_frames, significant
from harness.targets.base import TARGETS, Target

# Targets turn whatever escapes a HAL call into a verdict themselves; anything else escaping `decode` or `run` is the
# harness's own bug (or a target that forgot to guard a call). It is reported loudly, never charged to the driver.
TARGET_RAISES_NOTHING = define_rule("harness.target_raises_nothing", "no exception escapes a target's decode or run")


class UnknownTarget(ValueError):
    """A target name that is not registered and not a `module:attribute` spec (harness misuse)."""


def registered_targets() -> dict[str, Target]:
    """Every registered target (importing harness.targets registers the built-in ones)."""
    importlib.import_module("harness.targets")
    return TARGETS


def resolve_target(ref: str) -> Target:
    """The target a reference names: a registered name, or `module:attribute` for a target defined elsewhere."""
    module_name, sep, attr = ref.partition(":")
    if sep:
        try:
            target = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise UnknownTarget(f"target {ref!r}: {exc}") from None
        return target
    targets = registered_targets()
    if ref not in targets:
        raise UnknownTarget(f"unknown target {ref!r}; registered: {', '.join(sorted(targets)) or 'none'}")
    return targets[ref]


def target_name(ref: str) -> str:
    """The name a target reference stands for, without importing anything for a registered name."""
    return resolve_target(ref).name if ":" in ref else ref


def bytes_source(data: bytes) -> object:
    """The fuzzer-bytes Source (the one the Atheris scripts decode with)."""
    from harness.gen.sources import BytesSource

    return BytesSource(data)


def random_source(seed: int) -> object:
    """The seeded random Source."""
    from harness.gen.sources import RandomSource

    return RandomSource(seed)


def decode_bytes(target: Target, data: bytes) -> Case | None:
    """The case fuzzer bytes decode to; None when the generator rejects them (the fuzzer ignores those too)."""
    try:
        return target.decode(bytes_source(data))
    except GenerationRejected:
        return None


def decode_seed(target: Target, seed: int) -> Case | None:
    """The case a random seed decodes to; None when the generator rejects it."""
    try:
        return target.decode(random_source(seed))
    except GenerationRejected:
        return None


def as_case(payload: Case | Mapping) -> Case:
    """A Case from a Case or its JSON dict."""
    return payload if isinstance(payload, Case) else Case.from_json(dict(payload))


@dataclass
class Judged:
    """A verdict and the traceback behind it ("" when there is none)."""

    verdict: Verdict
    traceback_text: str = ""


def run_case(target: Target, case: Case, device: Device) -> Judged:
    """Run a case and judge it; an exception escaping the target is a harness failure, with its traceback."""
    try:
        verdict = target.run(case, device)
    except RuleViolation as violation:
        return Judged(_named(violation.verdict, target), traceback.format_exc())
    except Exception as exc:
        return harness_error(target, exc, "run")
    return Judged(_named(verdict, target))


def harness_error(target: Target, exc: Exception, stage: str) -> Judged:
    """The verdict of an exception that escaped a target's decode or run (call inside the except block)."""
    text = traceback.format_exc()
    verdict = Verdict(
        Outcome.FAILURE,
        rule=TARGET_RAISES_NOTHING,
        title=f"{type(exc).__name__} escaped the {target.name} target's {stage} (a harness error)",
        details=str(exc)[:2000],
        target=target.name,
        frames=tuple(significant(python_frames(text))),
    )
    return Judged(verdict, text)


def _named(verdict: Verdict, target: Target) -> Verdict:
    # A copy: targets may return a shared verdict object (such as the SUCCESS constant).
    return verdict if verdict.target else replace(verdict, target=target.name)


def verdict_from_json(d: Mapping) -> Verdict:
    """The Verdict a Verdict.to_json dict describes."""
    return Verdict(
        Outcome(d["outcome"]),
        rule=d.get("rule"),
        title=d.get("title", ""),
        details=d.get("details", ""),
        target=d.get("target", ""),
        frames=tuple(d.get("frames", ())),
        extras=dict(d.get("extras") or {}),
        locus=str(d.get("locus", "")),
    )
